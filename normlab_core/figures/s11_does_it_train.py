"""Section "Does it train?": the explorables of the stored training runs of `make experiments` (never a live
training), the section's two static figures, and `train(...)`, which trains one configuration in JupyterLab and
draws its loss while it trains."""

from __future__ import annotations

import dataclasses
import math
import textwrap

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .. import data
from .._threads import single_blas_thread
from ..display import static_mode
from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider
from ..training import BATCH, check_run_arguments
from .style import COLORS, NARROW_IN, blank_figure, figure_png, house_style, label, panels

CHANCE = math.log(16)
FLOAT16_MAX = 65504.0
DEPTHS = [2, 6, 12, 24]
LRS = [1e-3, 3e-3, 1e-2]
LOSS_LIM = (0.0, 4.6)      # room above chance (2.77) for the legend
STEPS = 500
SEED_STYLES = ["-", "--", ":"]
# Seeds solved, 0 to 3: grey for none, then ever darker greens (the text on the darkest cell is white).
SOLVED_COLOURS = ListedColormap(["#e6e6e6", "#c7e9c0", "#74c476", "#238b45"])
PLACEMENT_NAMES = {"post": "post-norm", "pre": "pre-norm", "peri": "Peri-LN"}
LOSS_AXIS = "loss (nats per answer token)"

# The variant studies, by the (short) label the reader picks: what select() needs, its colour and its name in words.
VARIANTS = {
    "post-norm": ({"placement": "post", "warmup": 0.0}, COLORS["post"], "post-norm"),
    "+ warm-up": ({"placement": "post", "warmup": 0.15}, COLORS["post"], "post-norm with warm-up"),
    "DeepNorm": ({"placement": "post", "deepnorm": True, "warmup": 0.0}, COLORS["post"], "post-norm with DeepNorm"),
    "RMSNorm post": ({"placement": "post", "norm": "rms_norm", "warmup": 0.0}, COLORS["rms_norm"],
                     "post-norm with RMSNorm"),
    "pre-norm": ({"placement": "pre", "warmup": 0.0}, COLORS["pre"], "pre-norm"),
    "DyT (pre)": ({"placement": "pre", "norm": "dyt", "warmup": 0.0}, COLORS["none"], "pre-norm with DyT"),
    "Peri-LN": ({"placement": "peri", "warmup": 0.0}, COLORS["layer_norm"], "Peri-LN"),
}


def stored():
    """The stored experiments (normlab_core/data/experiments.json.gz)."""
    return data.load()


def curve_steps() -> np.ndarray:
    """The training steps at which the stored loss curves were kept."""
    return np.array(stored().settings["curve_steps"])


def warmup_label(w: float) -> str:
    return "none" if w == 0 else f"{w:.0%} of the steps"


def seed_summary(runs: list) -> str:
    """'2/3 solved (1 learning)': how the seeds of one cell ended (the labels of normlab_core.outcome)."""
    if not runs:
        return "not run"
    solved = sum(r["outcome"] == "solved" for r in runs)
    words = {"learning": "learning", "stuck": "stuck", "diverged": "diverged"}
    tail = ", ".join(f"{n} {w}" for k, w in words.items() if (n := sum(r["outcome"] == k for r in runs)))
    return f"{solved}/{len(runs)} solved" + (f" ({tail})" if tail else "")


def stream_words(runs: list) -> str:
    """'RMS up to 30.9, largest |value| 113: 0.17% of float16's largest value' at the end of training."""
    top = max(max(r["resid_rms"][-1]) for r in runs)
    largest = max(max(r["resid_max"][-1]) for r in runs)
    return (f"RMS up to {number(top, 3)}, largest |value| {number(largest, 3)}: "
            f"{number(100 * largest / FLOAT16_MAX, 2)}% of float16's largest value")


def _peak(run: dict) -> float:
    return max(v for v in run["max_logit"] if v is not None)


def _loss_axes(ax, title="Loss of every seed"):
    ax.set_xlim(0, STEPS)
    ax.set_ylim(*LOSS_LIM)
    ax.axhline(CHANCE, color="0.35", lw=0.9, ls=(0, (4, 3)))
    ax.text(0.99, CHANCE + 0.06, "chance: ln 16 = 2.77", ha="right", va="bottom", color="0.3",
            transform=ax.get_yaxis_transform())      # x in axes fractions: the label stays put whatever the steps
    label(ax, "training step", LOSS_AXIS, title)


def _seed_lines(ax, art, prefix, color, with_eval=True):
    """Three seed lines (and held-out markers) whose data update sets."""
    for s, ls in enumerate(SEED_STYLES):
        (art[f"{prefix}{s}"],) = ax.plot([], [], ls, color=color, lw=1.4)
        if with_eval:
            (art[f"{prefix}e{s}"],) = ax.plot([], [], "o", color=color, ms=3.5, mfc="white", mew=1.0)


def _show_seeds(art, prefix, runs, color, key="loss"):
    """Each seed's stored curve (empty where the seed was not run), and its held-out losses."""
    steps = curve_steps()
    for s in range(len(SEED_STYLES)):
        run = next((r for r in runs if r["seed"] == s), None)
        y = [] if run is None else np.array([np.nan if v is None else v for v in run[key]], dtype=float)
        art[f"{prefix}{s}"].set_data(steps[: len(y)], y)
        art[f"{prefix}{s}"].set_color(color)
        if f"{prefix}e{s}" in art:
            art[f"{prefix}e{s}"].set_data(*(([], []) if run is None else (run["eval_steps"], run["eval_loss"])))
            art[f"{prefix}e{s}"].set_color(color)


def _seed_handles(runs) -> list:
    """Legend keys of the seeds' line styles, in grey (the lines' colour says the model). The explorables draw
    seeds 0 to 2; a cell with more seeds counts them all in its readouts."""
    return [Line2D([], [], color="0.3", ls=SEED_STYLES[r["seed"]], lw=1.4, label=f"seed {r['seed']}") for r in runs
            if r["seed"] < len(SEED_STYLES)]


def _seed_words(runs: list) -> str:
    """'seed 0 solved (accuracy 1); ...' for the readouts."""
    return "; ".join(f"seed {r['seed']} {r['outcome']} (accuracy "
                     f"{'undefined: diverged' if r['accuracy'] is None else number(r['accuracy'], 3)})"
                     for r in runs) or "not run"


# -- (b) the outcome grid and every seed's loss curve ------------------------------------------------------------
def grid_setup(fig, *, narrow):
    ax, ax_g = panels(fig, narrow, 2, [1.25, 1] if narrow else [1.55, 1])
    art = {"ax": ax}
    _loss_axes(ax)
    art["warm"] = ax.axvspan(0, 0, color=COLORS["highlight"], alpha=0.35, lw=0)
    _seed_lines(ax, art, "post", COLORS["post"])
    _seed_lines(ax, art, "pre", COLORS["pre"])
    art["img"] = ax_g.imshow(np.zeros((len(DEPTHS), len(LRS))), cmap=SOLVED_COLOURS, vmin=-0.5, vmax=3.5,
                             origin="lower", aspect="auto")
    for i in range(len(DEPTHS)):
        for j in range(len(LRS)):
            art[f"t{i}{j}"] = ax_g.text(j, i, "", ha="center", va="center", linespacing=1.2)
    art["box"] = ax_g.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, lw=2.2, ec="black"))
    ax_g.set_xticks(range(len(LRS)), [number(v) for v in LRS])
    ax_g.set_yticks(range(len(DEPTHS)), [str(d) for d in DEPTHS])
    ax_g.grid(False)
    art["ax_g"] = ax_g
    label(ax_g, "peak learning rate", "depth (layers)")
    return art


def grid_update(art, *, depth, lr, warmup):
    exp = stored()
    runs = {p: exp.select(placement=p, depth=depth, lr=lr, warmup=warmup) for p in ("post", "pre")}
    for p in runs:
        _show_seeds(art, p, runs[p], COLORS[p])
    art["warm"].set_width(round(warmup * STEPS))
    counts = np.zeros((len(DEPTHS), len(LRS)))
    for i, d in enumerate(DEPTHS):
        for j, r in enumerate(LRS):
            post, pre = (exp.select(placement=p, depth=d, lr=r, warmup=warmup) for p in ("post", "pre"))
            counts[i, j] = solved = sum(c["outcome"] == "solved" for c in post)
            art[f"t{i}{j}"].set_text(f"post {solved}/{len(post)}\npre {sum(c['outcome'] == 'solved' for c in pre)}"
                                     f"/{len(pre)}")
            art[f"t{i}{j}"].set_color("white" if solved == 3 else "black")
    art["img"].set_data(counts)
    art["box"].set_xy((LRS.index(lr) - 0.5, DEPTHS.index(depth) - 0.5))
    art["ax_g"].set_title(f"Seeds solved of 3, warm-up {'none' if warmup == 0 else f'{warmup:.0%}'}", loc="left")
    handles = [Line2D([], [], color=COLORS[p], lw=1.4, label=PLACEMENT_NAMES[p]) for p in runs]
    handles += _seed_handles(runs["post"]) + [
        Line2D([], [], color="0.3", ls="none", marker="o", ms=3.5, mfc="white", label="held-out")]
    handles += [Patch(color=COLORS["highlight"], alpha=0.35, label="warm-up")] if warmup else []
    art["ax"].legend(handles=handles, loc="upper right", ncol=3 if len(handles) > 6 else 2, columnspacing=1.0,
                     handlelength=1.6, framealpha=1)
    cell = f"depth {depth}, lr {number(lr)}, warm-up {warmup_label(warmup)}: "
    readouts = {"post-norm": cell + seed_summary(runs["post"]), "pre-norm": cell + seed_summary(runs["pre"]),
                "post-norm seeds": _seed_words(runs["post"]), "pre-norm seeds": _seed_words(runs["pre"])}
    alt = (f"Left: training loss against step (0 to {STEPS}) for three seeds each of a {depth}-layer post-norm and "
           f"pre-norm transformer at peak learning rate {number(lr)}, warm-up {warmup_label(warmup)}, chance loss "
           f"ln 16 dashed: post-norm {seed_summary(runs['post'])}, pre-norm {seed_summary(runs['pre'])}. Right: "
           "for depths 2 to 24 and learning rates 1e-3 to 1e-2, how many of three seeds solved the task with each "
           "placement, the chosen cell outlined.")
    return readouts, alt


def _grid_presets(exp) -> dict:
    def says(placement, depth, lr, warmup=0.0):
        return seed_summary(exp.select(placement=placement, depth=depth, lr=lr, warmup=warmup))

    return {
        "depth 6, lr 1e-2": Preset({"depth": 6, "lr": 1e-2}, (
            f"without warm-up post-norm is {says('post', 6, 1e-2)}, pre-norm {says('pre', 6, 1e-2)}")),
        "with warm-up": Preset({"depth": 6, "lr": 1e-2, "warmup": 0.15}, (
            f"the same cell with the learning rate ramped up over the first 75 steps (shaded): post-norm is "
            f"{says('post', 6, 1e-2, 0.15)}")),
        "depth 12, lr 3e-3": Preset({"depth": 12, "lr": 3e-3}, (
            f"post-norm is {says('post', 12, 3e-3)}; switch the warm-up on to compare "
            f"({says('post', 12, 3e-3, 0.15)})")),
        "depth 24, warm-up": Preset({"depth": 24, "lr": 1e-3, "warmup": 0.15}, (
            f"at the grid's smallest learning rate with warm-up, post-norm is {says('post', 24, 1e-3, 0.15)} "
            f"after 500 steps, while pre-norm is {says('pre', 24, 1e-3, 0.15)}")),
        "depth 24, lr 1e-2": Preset({"depth": 24, "lr": 1e-2}, (
            f"the deepest model at the largest learning rate, no warm-up: pre-norm is {says('pre', 24, 1e-2)}")),
    }


# -- (d) what each known fix does ---------------------------------------------------------------------------------
def fix_setup(fig, *, narrow):
    ax, ax_r = panels(fig, narrow)
    art = {"ax": ax, "ax_r": ax_r}
    _loss_axes(ax)
    _seed_lines(ax, art, "s", COLORS["post"])
    art["note"] = ax.text(0.04, 0.3, "", transform=ax.transAxes, ha="left", va="center", color="0.25")
    for s, ls in enumerate(SEED_STYLES):
        (art[f"r{s}"],) = ax_r.plot([], [], ls, color=COLORS["post"], lw=1.4, marker="o", ms=2.5)
    (art["rmax"],) = ax_r.plot([], [], color="0.45", lw=1.0, ls=(0, (1, 1.5)))
    ax_r.axhline(FLOAT16_MAX, color="black", lw=1.0, ls="--")
    ax_r.text(0.02, FLOAT16_MAX / 2.2, "float16's largest value, 65504", va="top", color="0.2",
              transform=ax_r.get_yaxis_transform())
    ax_r.set_yscale("log")
    ax_r.set_ylim(0.3, 3e5)
    label(ax_r, "layer", "residual stream after the layer", "The stream at the end of training")
    return art


def fix_update(art, *, variant, depth, lr):
    fields, color, words = VARIANTS[variant]
    exp = stored()
    runs = exp.select(depth=depth, lr=lr, **fields)
    _show_seeds(art, "s", runs, color)
    for s in range(len(SEED_STYLES)):
        run = next((r for r in runs if r["seed"] == s), None)
        rms = [] if run is None else np.array(run["resid_rms"][-1], dtype=float)
        art[f"r{s}"].set_data(np.arange(1, len(rms) + 1), rms)
        art[f"r{s}"].set_color(color)
    art["ax_r"].set_xlim(0.5, depth + 0.5)
    done = sorted({(c["config"]["depth"], c["lr"]) for c in exp.select(**fields)})
    out = {"outcome": f"{words}, depth {depth}, lr {number(lr)}: {seed_summary(runs)}"}
    largest = np.max([np.array(r["resid_max"][-1], dtype=float) for r in runs], axis=0) if runs else []
    art["rmax"].set_data(np.arange(1, len(largest) + 1), largest)
    art["note"].set_text("" if runs else f"{words} was not trained\nat depth {depth} with lr {number(lr)}:\n"
                         "see the readouts below")
    if runs:
        art["ax"].legend(handles=_seed_handles(runs), loc="upper right", ncol=3, columnspacing=1.0,
                         handlelength=1.6)
        rms_key = Line2D([], [], color="0.3", lw=1.4, marker="o", ms=2.5)
        art["ax_r"].legend(handles=[rms_key, art["rmax"]], labels=["RMS, one line per seed",
                                                                  "largest |value|, any seed"], loc="center right")
    for ax in ("ax", "ax_r"):
        if not runs and art[ax].get_legend():
            art[ax].get_legend().remove()
    out["residual stream at the end"] = stream_words(runs) if runs else "not trained at this depth and learning rate"
    out["plain post-norm, same cell"] = seed_summary(exp.select(depth=depth, lr=lr, placement="post", warmup=0.0))
    out["stored for this model"] = "; ".join(f"depth {d}, lr {number(r)}" for d, r in done)
    alt = (f"Left: training loss of three seeds against step for {words} at depth {depth} and peak learning rate "
           f"{number(lr)}, chance loss dashed: {seed_summary(runs)}. Right: on a log scale, the RMS of the residual "
           "stream after each layer at the end of training, one line per seed, the largest absolute value dotted "
           f"and float16's largest value 65504 dashed" + (f": {stream_words(runs)}." if runs else "."))
    return out, alt


def _fix_presets(exp) -> dict:
    def says(variant, depth, lr):
        return seed_summary(exp.select(depth=depth, lr=lr, **VARIANTS[variant][0]))

    def stream(variant, depth, lr):
        return stream_words(exp.select(depth=depth, lr=lr, **VARIANTS[variant][0])).split(":")[0]

    return {
        "DeepNorm, depth 24": Preset({"variant": "DeepNorm", "depth": 24, "lr": 1e-3}, (
            f"post-norm with DeepNorm is {says('DeepNorm', 24, 1e-3)}, where plain post-norm is "
            f"{says('post-norm', 24, 1e-3)}")),
        "Peri-LN, depth 24": Preset({"variant": "Peri-LN", "depth": 24, "lr": 1e-2}, (
            f"Peri-LN is {says('Peri-LN', 24, 1e-2)}, its stream at the end: {stream('Peri-LN', 24, 1e-2)}")),
        "pre-norm, depth 24": Preset({"variant": "pre-norm", "depth": 24, "lr": 1e-2}, (
            f"pre-norm is {says('pre-norm', 24, 1e-2)}, its stream at the end: {stream('pre-norm', 24, 1e-2)}, "
            "far below float16's limit")),
        "DyT, depth 12": Preset({"variant": "DyT (pre)", "depth": 12, "lr": 1e-2}, (
            f"DyT in place of every LayerNorm of a pre-norm model: {says('DyT (pre)', 12, 1e-2)}")),
    }


# -- QK-norm and the largest attention logit ---------------------------------------------------------------------
def qk_setup(fig, *, narrow):
    ax, ax_l = panels(fig, narrow)
    art = {"ax": ax}
    _seed_lines(ax, art, "q", COLORS["pre"], with_eval=False)
    ax.set_xlim(0, STEPS)
    ax.set_yscale("log")
    ax.set_ylim(1.0, 500.0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    label(ax, "training step", "largest attention logit (log scale)", "The sharpest attention score")
    _loss_axes(ax_l)
    _seed_lines(ax_l, art, "s", COLORS["pre"])
    art["ax_l"] = ax_l
    return art


def qk_update(art, *, placement, lr, qk_norm):
    exp = stored()
    runs = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=qk_norm)
    other = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=not qk_norm)
    _show_seeds(art, "q", runs, COLORS[placement], key="max_logit")
    _show_seeds(art, "s", runs, COLORS[placement])
    art["ax_l"].legend(handles=_seed_handles(runs), loc="upper right", ncol=3, columnspacing=1.0,
                       handlelength=1.6)
    name = "with QK-norm" if qk_norm else "without QK-norm"
    peaks = "; ".join(f"seed {r['seed']} {number(_peak(r), 3)}" for r in runs) or "not run"
    readouts = {
        "outcome": f"{PLACEMENT_NAMES[placement]}, depth 6, lr {number(lr)}, {name}: {seed_summary(runs)}",
        "largest logit over training": peaks,
        "the other way": (("without" if qk_norm else "with") + " QK-norm: " + seed_summary(other)
                          + "; largest logits " + ", ".join(number(_peak(r), 3) for r in other)),
    }
    alt = (f"Left: the largest attention logit at every training step for three seeds of a 6-layer "
           f"{PLACEMENT_NAMES[placement]} transformer at peak learning rate {number(lr)}, {name} (largest: "
           f"{peaks}). Right: their training loss with chance dashed: {seed_summary(runs)}.")
    return readouts, alt


def _qk_presets(exp) -> dict:
    def peaks(placement, lr, qk):
        runs = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=qk)
        return "; ".join(f"seed {r['seed']} {number(_peak(r), 3)}" for r in runs)

    return {
        "pre-norm, lr 3e-2": Preset({}, f"without QK-norm the largest logits reach {peaks('pre', 3e-2, False)}"),
        "with QK-norm": Preset({"qk_norm": True}, (
            f"normalized queries and keys: the largest logits are {peaks('pre', 3e-2, True)}")),
        "post-norm, lr 1e-2, QK-norm": Preset({"placement": "post", "lr": 1e-2, "qk_norm": True}, (
            "does QK-norm rescue the post-norm cell that sticks at chance? "
            + seed_summary(exp.select(placement="post", depth=6, lr=1e-2, warmup=0.0, qk_norm=True)))),
    }


def entries() -> list:
    """The explorables of the section "Does it train?" (stored runs only: the stops are the stored cells)."""
    exp = stored()
    lr = Slider(LRS, 1e-2, label="peak learning rate")
    return [
        Explorable("train_outcomes", title="Does it train? Every seed's loss, post-norm against pre-norm, and the "
                   "seeds that solved the task", setup=grid_setup, update=grid_update, presets=_grid_presets(exp),
                   narrow=(3.3, 6.4),
                   controls={"depth": Choice(DEPTHS, 6, label="depth", labels=[f"{d} layers" for d in DEPTHS]),
                             "lr": lr,
                             "warmup": Choice([0.0, 0.15], 0.0, label="warm-up", labels=["none", "15 %"])}),
        Explorable("train_fixes", title="What each fix does to the tiny model: its loss, and the size of its "
                   "residual stream", setup=fix_setup, update=fix_update, presets=_fix_presets(exp),
                   narrow=(3.3, 6.0),
                   controls={"variant": Choice(list(VARIANTS), "DeepNorm", label="model"),
                             "depth": Slider([6, 12, 24], 24, label="depth (layers)"),
                             "lr": Slider(LRS, 1e-3, label="peak learning rate")}),
        Explorable("train_qk_norm", title="QK-norm at high learning rates: the largest attention logit, depth 6",
                   setup=qk_setup, update=qk_update, presets=_qk_presets(exp), narrow=(3.3, 6.0),
                   controls={"placement": Choice(["pre", "post"], "pre", label="placement",
                                                 labels=["pre-norm", "post-norm"]),
                             "lr": Slider([1e-2, 3e-2], 3e-2, label="peak learning rate"),
                             "qk_norm": Choice([False, True], False, label="QK-norm", labels=["off", "on"])}),
    ]


# -- (f) training live ---------------------------------------------------------------------------------------------
def _live_figure(color):
    fig = blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        _loss_axes(ax, "")
        (train_line,) = ax.plot([], [], color=color, lw=1.0, alpha=0.8, label="training loss")
        (eval_line,) = ax.plot([], [], "o-", color="black", ms=3.5, lw=1.0, label="held-out loss")
        ax.legend(loc="upper right")
    return fig, ax, train_line, eval_line


def _draw_run(fig, ax, train_line, eval_line, run, title):
    train_line.set_data(np.arange(len(run.loss)), run.loss)
    eval_line.set_data(run.eval_steps, run.eval_loss)
    ax.set_xlim(0, run.steps)
    ax.set_title(title, loc="left")
    png = figure_png(fig)
    # The axes, their limits and the title's two lines stay put from the first drawing on: keep that layout, so each
    # redraw is one drawing instead of constrained layout's two.
    fig.set_layout_engine("none")
    return png


@single_blas_thread
def train(cfg=None, lr: float = 3e-3, steps: int = 500, warmup: float = 0.0, seed: int = 0, *, batch: int = BATCH,
          eval_every: int | None = None, **config):
    """Train one configuration (a transformer.Config, or its fields as keywords) and draw its loss as it trains.

    In JupyterLab this shows a progress bar and the loss, redrawn at every held-out evaluation (every `eval_every`
    steps, by default 25 times per run); interrupt the kernel to stop early and keep the Run. Every argument is
    checked before anything is shown: steps at most training.MAX_STEPS, seed a whole number >= 0, keywords only
    Config's fields; `batch` sequences per step. In the static book nothing is trained: the stored runs of that
    configuration are drawn instead (if `make experiments` stored it). Returns the Run (None in the book).
    """
    from IPython.display import HTML, display

    from ..training import run as train_run
    from ..transformer import Config

    fields = [f.name for f in dataclasses.fields(Config)]
    if cfg is None:
        if unknown := sorted(set(config) - set(fields)):
            raise TypeError(f"train() takes no argument {', '.join(map(repr, unknown))}: it takes lr, steps, warmup, "
                            f"seed, batch and eval_every, and the model's Config fields {', '.join(fields)}")
        cfg = Config(**{"depth": 6, **config})
    elif config:
        raise TypeError("pass either a Config or its fields as keywords, not both")
    every = max(1, steps // 25) if eval_every is None and isinstance(steps, int) else eval_every
    check_run_arguments(cfg, lr, steps, warmup, seed, batch, every)   # before anything is shown or trained
    extras = [cfg.norm] + [k for k in ("qk_norm", "deepnorm") if getattr(cfg, k)]
    name = (f"{PLACEMENT_NAMES.get(cfg.placement, cfg.placement)}, depth {cfg.depth}, {', '.join(extras)}, "
            f"lr {number(lr)}, warm-up {warmup:.0%}, seed {seed}")
    if static_mode():
        _show_stored(cfg, lr, warmup, seed, name)
        return None
    import ipywidgets as w

    fig, ax, train_line, eval_line = _live_figure(COLORS.get(cfg.placement, COLORS["layer_norm"]))
    image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
    display(image)

    def redraw(r):
        image.value = _draw_run(fig, ax, train_line, eval_line, r,
                                f"{name}\nstep {len(r.loss)} of {steps}, held-out accuracy {number(r.accuracy, 3)}")

    result = train_run(cfg, lr, steps, warmup, seed, batch=batch, eval_every=every, progress=True, callback=redraw)
    state = ("interrupted: kept " if result.interrupted else "diverged: " if result.diverged else "finished: ")
    image.value = _draw_run(fig, ax, train_line, eval_line, result,
                            f"{name}\n{state}{len(result.loss)} steps, {result.outcome}, "
                            f"held-out accuracy {number(result.accuracy, 3)}")
    display(HTML(f"<p>{state}{len(result.loss)} steps; outcome <b>{result.outcome}</b>, held-out token "
                 f"accuracy {number(result.accuracy, 3)}.</p>"))
    return result


def _show_stored(cfg, lr, warmup, seed, name):
    """The book's face of train(): the stored runs of this configuration, or a note that there are none."""
    from .. import display

    runs = stored().select(placement=cfg.placement, depth=cfg.depth, norm=cfg.norm, qk_norm=cfg.qk_norm,
                           deepnorm=cfg.deepnorm, lr=lr, warmup=warmup)
    display.show_figure(stored_runs_figure, runs, COLORS.get(cfg.placement, COLORS["layer_norm"]), seed, name,
                        alt=(f"Training loss against step of the stored runs for {name}: " + seed_summary(runs)
                             + ", chance loss dashed."),
                        caption=f"In the book nothing trains: these are the stored runs of {name} "
                                f"({seed_summary(runs)}).")


def stored_runs_figure(runs: list, color, seed: int, name: str, narrow: bool = False):
    """The loss of every stored seed of one configuration (seed `seed` drawn thicker); narrow=True: for phones."""
    fig = blank_figure(NARROW_IN, 3.8) if narrow else blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        _loss_axes(ax, "Stored runs:\n" + (textwrap.fill(name, 34) if narrow else name))
        for r in runs:
            ax.plot(curve_steps()[: len(r["loss"])], r["loss"], SEED_STYLES[r["seed"] % len(SEED_STYLES)],
                    lw=2.0 if r["seed"] == seed else 1.0, color=color,
                    label=f"seed {r['seed']}: {r['outcome']}")
        if runs:
            ax.legend(loc="upper right")
        else:
            ax.text(0.5, 0.5, "this configuration is not among\nthe stored runs: run the notebook\nin JupyterLab "
                    "to train it", transform=ax.transAxes, ha="center", va="center")
    return fig


# -- the section's static figures ------------------------------------------------------------------------------------
def grad_norm_figure(per_layer: dict, depths, matrix: str, narrow: bool = False):
    """One log-scale panel per depth: the gradient norm of each layer's `matrix` at initialization, post and pre.
    per_layer maps (placement, depth) to an array of one value per layer; narrow=True stacks the panels."""
    fig = blank_figure(NARROW_IN, 0.5 + 2.1 * len(depths)) if narrow else blank_figure(height=3.0)
    with house_style():
        axes = np.atleast_1d(fig.subplots(len(depths), 1, sharey=True) if narrow else
                             fig.subplots(1, len(depths), sharey=True))
        for ax, d in zip(axes, depths, strict=True):
            for p in ("post", "pre"):
                ax.plot(np.arange(1, d + 1), per_layer[p, d], "o-", ms=3, color=COLORS[p], label=PLACEMENT_NAMES[p])
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # layers are whole numbers
            y = "gradient norm" if narrow else f"gradient norm of {matrix}" if ax is axes[0] else ""
            label(ax, "layer" if ax is axes[-1] or not narrow else "", y,
                  f"{d} layers" + (f": {matrix}" if narrow else ""))
        axes[0].legend(loc="lower left")
    return fig


def update_size_figure(depths, change: dict, narrow: bool = False):
    """Log-log: the RMS change of the logits after one Adam step, against depth, one line per variant (mean over
    seeds, their range shaded). change maps a variant to an array (seeds, depths); narrow=True: for phones."""
    colors = {"post": COLORS["post"], "pre": COLORS["pre"], "peri": COLORS["layer_norm"], "deepnorm": "0.3"}
    names = {"post": "post-norm", "pre": "pre-norm", "peri": "Peri-LN", "deepnorm": "DeepNorm"}
    depths = np.asarray(depths)
    fig = blank_figure(NARROW_IN, 3.8) if narrow else blank_figure(height=3.0)
    with house_style():
        ax = fig.subplots(1, 1)
        for v, rows in change.items():
            rows = np.asarray(rows, dtype=float)
            ax.plot(depths, rows.mean(axis=0), "o-", ms=3.5, color=colors.get(v, "0.5"), label=names.get(v, v))
            ax.fill_between(depths, rows.min(axis=0), rows.max(axis=0), color=colors.get(v, "0.5"), alpha=0.15, lw=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.minorticks_off()
        if narrow:   # the legend below the axes: the lines fill the plot from corner to corner
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
        else:
            ax.legend(loc="upper left")
        label(ax, "depth (layers, log scale)", "RMS change of the logits",
              "One Adam step from\ninitialization" if narrow else "One Adam step from initialization")
    return fig
