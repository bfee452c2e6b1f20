"""Section "Does it train?" explorables: the stored training runs of `make experiments` (never a live training),
and `train(...)`, which trains one configuration in JupyterLab and draws its loss while it trains."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from .. import data
from ..controls import Preset
from ..display import static_mode
from ..explore import Choice, Explorable, Slider
from ..style import COLORS, blank_figure, figure_png, house_style, label

CHANCE = math.log(16)
FLOAT16_MAX = 65504.0
DEPTHS = [2, 6, 12, 24]
LRS = [1e-3, 3e-3, 1e-2]
LOSS_LIM = (0.0, 3.6)
STEPS = 500
SEED_STYLES = ["-", "--", ":"]
# Seeds solved, 0 to 3: grey for none, then ever darker greens (the text on the darkest cell is white).
SOLVED_COLOURS = ListedColormap(["#e6e6e6", "#c7e9c0", "#74c476", "#238b45"])
PLACEMENT_NAMES = {"post": "post-norm", "pre": "pre-norm", "peri": "Peri-LN"}

# The variant studies, by the (short) label the reader picks: what select() needs, and the colour of its curves.
VARIANTS = {
    "post-norm": ({"placement": "post", "warmup": 0.0}, COLORS["post"]),
    "+ warm-up": ({"placement": "post", "warmup": 0.15}, COLORS["post"]),
    "DeepNorm": ({"placement": "post", "deepnorm": True, "warmup": 0.0}, COLORS["post"]),
    "RMSNorm post": ({"placement": "post", "norm": "rms_norm", "warmup": 0.0}, COLORS["rms_norm"]),
    "pre-norm": ({"placement": "pre", "warmup": 0.0}, COLORS["pre"]),
    "DyT (pre)": ({"placement": "pre", "norm": "dyt", "warmup": 0.0}, COLORS["none"]),
    "Peri-LN": ({"placement": "peri", "warmup": 0.0}, COLORS["layer_norm"]),
}
VARIANT_WORDS = {
    "post-norm": "post-norm", "+ warm-up": "post-norm with warm-up", "DeepNorm": "post-norm with DeepNorm",
    "RMSNorm post": "post-norm with RMSNorm", "pre-norm": "pre-norm", "DyT (pre)": "pre-norm with DyT",
    "Peri-LN": "Peri-LN",
}


def stored():
    """The stored experiments (normlab_core/data/experiments.json.gz)."""
    return data.load()


def curve_steps() -> np.ndarray:
    """The training steps at which the stored loss curves were kept."""
    return np.array(stored().settings["curve_steps"])


def warmup_label(w: float) -> str:
    return "none" if w == 0 else f"{w:.0%} of the steps"


def nearest(value: float, stops, log: bool = True):
    """The stop nearest to value (on a log scale): a value between the stored ones shows the nearest stored run."""
    key = (lambda v: abs(math.log(v / value))) if log else (lambda v: abs(v - value))
    return min(stops, key=key)


def _snapped(value, stops, what: str) -> tuple:
    """(stop, note): the nearest stored stop to value, and '' or a note that the nearest one is shown."""
    stop = nearest(value, stops)
    return stop, ("" if stop == value else f" (nearest stored {what}: {stop:g})")


def seed_summary(runs: list) -> str:
    """'2/3 solved (1 stuck at chance)': how the seeds of one cell ended."""
    if not runs:
        return "not run"
    solved = sum(r["outcome"] == "solved" for r in runs)
    rest = {k: sum(r["outcome"] == k for r in runs) for k in ("stuck", "partial", "diverged")}
    words = {"stuck": "stuck at chance", "partial": "part-way", "diverged": "diverged"}
    tail = ", ".join(f"{n} {words[k]}" for k, n in rest.items() if n)
    return f"{solved}/{len(runs)} solved" + (f" ({tail})" if tail else "")


def _loss_axes(ax):
    ax.set_xlim(0, STEPS)
    ax.set_ylim(*LOSS_LIM)
    ax.axhline(CHANCE, color="0.35", lw=0.9, ls=(0, (4, 3)))
    ax.text(0.99, CHANCE + 0.06, "chance: ln 16 = 2.77", ha="right", va="bottom", fontsize=7.5, color="0.3",
            transform=ax.get_yaxis_transform())      # x in axes fractions: the label stays put whatever the steps


def _seed_lines(ax, art, prefix, color, with_eval=True):
    """Three seed lines (and held-out markers) whose data `update` sets."""
    for s, ls in enumerate(SEED_STYLES):
        (art[f"{prefix}{s}"],) = ax.plot([], [], ls, color=color, lw=1.4, label=f"seed {s}")
        art["animated"].append(art[f"{prefix}{s}"])
        if with_eval:
            (art[f"{prefix}e{s}"],) = ax.plot([], [], "o", color=color, ms=3.5, mfc="white", mew=1.0)
            art["animated"].append(art[f"{prefix}e{s}"])


def _show_seeds(art, prefix, runs, color, key="loss"):
    steps = curve_steps()
    for s in range(len(SEED_STYLES)):
        line = art[f"{prefix}{s}"]
        run = next((r for r in runs if r["seed"] == s), None)
        if run is None:
            line.set_data([], [])
            if f"{prefix}e{s}" in art:
                art[f"{prefix}e{s}"].set_data([], [])
            continue
        y = np.array([np.nan if v is None else v for v in run[key]], dtype=float)
        line.set_data(steps[: len(y)], y)
        line.set_color(color)
        if f"{prefix}e{s}" in art:
            art[f"{prefix}e{s}"].set_data(run["eval_steps"], run["eval_loss"])
            art[f"{prefix}e{s}"].set_color(color)


# -- (b) the outcome grid and every seed's loss curve ------------------------------------------------------------

def _grid_setup(fig):
    ax, ax_g = fig.subplots(1, 2, width_ratios=[1.55, 1])
    art = {"animated": []}
    _loss_axes(ax)
    art["warm"] = ax.axvspan(0, 0, color=COLORS["highlight"], alpha=0.35, lw=0)
    art["animated"].append(art["warm"])
    _seed_lines(ax, art, "post", COLORS["post"])
    _seed_lines(ax, art, "pre", COLORS["pre"])
    handles = [Line2D([], [], color=COLORS["post"], label="post-norm"),
               Line2D([], [], color=COLORS["pre"], label="pre-norm")]
    handles += [Line2D([], [], color="0.3", ls=ls, lw=1.2, label=f"seed {s}") for s, ls in enumerate(SEED_STYLES)]
    handles += [Line2D([], [], color="0.3", ls="none", marker="o", ms=3.5, mfc="white", label="held-out"),
                Patch(color=COLORS["highlight"], alpha=0.35, label="warm-up")]
    ax.legend(handles=handles, loc="center right", fontsize=6.5, ncol=1)
    label(ax, "training step", "loss (nats per answer token)", "Loss of every seed")
    art["img"] = ax_g.imshow(np.zeros((len(DEPTHS), len(LRS))), cmap=SOLVED_COLOURS, vmin=-0.5, vmax=3.5,
                             origin="lower", aspect="auto")
    art["animated"].append(art["img"])
    for i in range(len(DEPTHS)):
        for j in range(len(LRS)):
            art[f"t{i}{j}"] = ax_g.text(j, i, "", ha="center", va="center", fontsize=8.5, linespacing=1.25)
            art["animated"].append(art[f"t{i}{j}"])
    art["box"] = Rectangle((-0.5, -0.5), 1, 1, fill=False, lw=2.2, ec="black")
    ax_g.add_patch(art["box"])
    art["animated"].append(art["box"])
    ax_g.set_xticks(range(len(LRS)), [f"{v:g}" for v in LRS])
    ax_g.set_yticks(range(len(DEPTHS)), [str(d) for d in DEPTHS])
    ax_g.grid(False)
    art["grid_title"] = ax_g.set_title("", loc="left")
    art["animated"].append(art["grid_title"])
    ax_g.set_xlabel("peak learning rate")
    ax_g.set_ylabel("depth (layers)")
    return art


def _seed_words(runs: list) -> str:
    """'seed 0 solved (accuracy 1.000); ...' for the readouts."""
    if not runs:
        return "not run"
    return "; ".join(f"seed {r['seed']} {r['outcome']} (accuracy {_acc(r)})" for r in runs)


def _acc(run: dict) -> str:
    return "undefined: diverged" if run["accuracy"] is None else f"{run['accuracy']:.3f}"


def _grid_update(art, depth, lr, warmup):
    exp = stored()
    lr, note = _snapped(lr, LRS, "lr")
    runs = {p: exp.select(placement=p, depth=depth, lr=lr, warmup=warmup) for p in ("post", "pre")}
    for p in ("post", "pre"):
        _show_seeds(art, p, runs[p], COLORS[p])
    art["warm"].set_x(0)
    art["warm"].set_width(round(warmup * STEPS))
    counts = np.zeros((len(DEPTHS), len(LRS)))
    for i, d in enumerate(DEPTHS):
        for j, r in enumerate(LRS):
            post = exp.select(placement="post", depth=d, lr=r, warmup=warmup)
            pre = exp.select(placement="pre", depth=d, lr=r, warmup=warmup)
            solved = sum(c["outcome"] == "solved" for c in post)
            counts[i, j] = solved
            art[f"t{i}{j}"].set_text(f"post {solved}/{len(post)}\npre {sum(c['outcome'] == 'solved' for c in pre)}"
                                     f"/{len(pre)}")
            art[f"t{i}{j}"].set_color("white" if solved == 3 else "black")
    art["img"].set_data(counts)
    art["box"].set_xy((LRS.index(lr) - 0.5, DEPTHS.index(depth) - 0.5))
    art["grid_title"].set_text(f"Seeds solved, of 3\nwarm-up {'none' if warmup == 0 else f'{warmup:.0%}'} "
                               "(shade: post)")
    cell = f"depth {depth}, lr {lr:g}{note}, warm-up {warmup_label(warmup)}: "
    return {
        "post-norm": cell + seed_summary(runs["post"]),
        "pre-norm": cell + seed_summary(runs["pre"]),
        "post-norm seeds": _seed_words(runs["post"]),
        "pre-norm seeds": _seed_words(runs["pre"]),
    }


def _grid_alt(depth, lr, warmup):
    return (f"Left: training loss against step (0 to {STEPS}) for three seeds each of a {depth}-layer post-norm "
            f"and pre-norm transformer at peak learning rate {lr:g}, warm-up {warmup_label(warmup)}, held-out loss "
            "as circles and chance loss ln 16 dashed. Right: a table of depths 2, 6, 12, 24 against learning rates "
            "1e-3, 3e-3, 1e-2 giving how many of three seeds solved the task with each placement, the chosen cell "
            "outlined.")


def _grid_presets() -> dict:
    exp = stored()

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
            f"even the smallest learning rate with warm-up leaves post-norm {says('post', 24, 1e-3, 0.15)}, "
            f"while pre-norm is {says('pre', 24, 1e-3, 0.15)}")),
        "depth 24, lr 1e-2": Preset({"depth": 24, "lr": 1e-2}, (
            f"the deepest model at the largest learning rate, no warm-up: pre-norm is {says('pre', 24, 1e-2)}")),
    }


# -- (d) what each known fix does ---------------------------------------------------------------------------------

def _fix_setup(fig):
    ax, ax_r = fig.subplots(1, 2)
    art = {"animated": []}
    _loss_axes(ax)
    _seed_lines(ax, art, "s", COLORS["post"])
    ax.legend(loc="center right", fontsize=7)
    label(ax, "training step", "loss (nats per answer token)", "Loss of every seed")
    art["note"] = ax.text(0.04, 0.62, "", transform=ax.transAxes, ha="left", va="center", fontsize=8,
                          color="0.25")
    art["note"].set_in_layout(False)
    art["animated"].append(art["note"])
    for s, ls in enumerate(SEED_STYLES):
        (art[f"r{s}"],) = ax_r.plot([], [], ls, color=COLORS["post"], lw=1.4, marker="o", ms=2.5)
        art["animated"].append(art[f"r{s}"])
    (art["rmax"],) = ax_r.plot([], [], color="0.45", lw=1.0, ls=(0, (1, 1.5)), label="largest |value|, any seed")
    art["animated"].append(art["rmax"])
    ax_r.axhline(FLOAT16_MAX, color="black", lw=1.0, ls="--")
    ax_r.text(1.2, FLOAT16_MAX / 2.2, "float16's largest value, 65504", fontsize=7.5, va="top", color="0.2")
    ax_r.set_yscale("log")
    ax_r.set_ylim(0.3, 3e5)
    ax_r.set_xlim(0.5, 24.5)
    ax_r.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax_r.plot([], [], "-", color="0.45", lw=1.4, label="RMS, one line per seed")
    ax_r.legend(loc="center right", fontsize=7)
    label(ax_r, "layer", "residual stream after the layer", "The stream at the end of training")
    return art


def _fix_update(art, variant, depth, lr):
    fields, color = VARIANTS[variant]
    exp = stored()
    depth, depth_note = _snapped(depth, [6, 12, 24], "depth")
    lr, lr_note = _snapped(lr, LRS, "lr")
    runs = exp.select(depth=depth, lr=lr, **fields)
    _show_seeds(art, "s", runs, color)
    for s in range(len(SEED_STYLES)):
        run = next((r for r in runs if r["seed"] == s), None)
        if run is None:
            art[f"r{s}"].set_data([], [])
            continue
        rms = np.array(run["resid_rms"][-1], dtype=float)
        art[f"r{s}"].set_data(np.arange(1, len(rms) + 1), rms)
        art[f"r{s}"].set_color(color)
    done = sorted({(c["config"]["depth"], c["lr"]) for c in exp.select(**fields)})
    out = {"outcome": f"{VARIANT_WORDS[variant]}, depth {depth}{depth_note}, lr {lr:g}{lr_note}: "
                      f"{seed_summary(runs)}"}
    if runs:
        largest = np.max([np.array(r["resid_max"][-1], dtype=float) for r in runs], axis=0)
        art["rmax"].set_data(np.arange(1, len(largest) + 1), largest)
        art["note"].set_text("")
        out["residual stream at the end"] = stream_words(runs)
    else:
        art["rmax"].set_data([], [])
        art["note"].set_text(f"{VARIANT_WORDS[variant]} was not trained\nat depth {depth} with lr {lr:g}:\n"
                             "see the list below")
        out["residual stream at the end"] = "not trained at this depth and learning rate"
    out["plain post-norm, same cell"] = seed_summary(exp.select(depth=depth, lr=lr, placement="post", warmup=0.0))
    out["stored for this model"] = "; ".join(f"depth {d}, lr {r:g}" for d, r in done)
    return out


def stream_words(runs: list) -> str:
    """'RMS up to 30.9, largest |value| 113: 0.17% of float16's largest value' at the end of training."""
    top = max(max(r["resid_rms"][-1]) for r in runs)
    largest = max(max(r["resid_max"][-1]) for r in runs)
    return f"RMS up to {top:.3g}, largest |value| {largest:.3g}: {largest / FLOAT16_MAX:.2%} of float16's largest value"


def _fix_alt(variant, depth, lr):
    return (f"Left: training loss of three seeds against step for {VARIANT_WORDS[variant]} at depth {depth} and "
            f"peak learning rate {lr:g}, chance loss dashed. Right: on a log scale, the RMS of the residual stream "
            "after each layer at the end of training, one line per seed, the largest absolute value dotted, and "
            "float16's largest value 65504 as a dashed line.")


def _fix_presets() -> dict:
    exp = stored()

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

QK_LIM = (1.0, 500.0)


def _qk_setup(fig):
    ax, ax_l = fig.subplots(1, 2)
    art = {"animated": []}
    _seed_lines(ax, art, "q", COLORS["pre"], with_eval=False)
    ax.set_xlim(0, STEPS)
    ax.set_yscale("log")
    ax.set_ylim(*QK_LIM)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.legend(loc="upper left", fontsize=7)
    label(ax, "training step", "largest attention logit (log scale)", "The sharpest attention score")
    _loss_axes(ax_l)
    _seed_lines(ax_l, art, "s", COLORS["pre"])
    label(ax_l, "training step", "loss (nats per answer token)", "Loss of every seed")
    return art


def _peak(run: dict) -> float:
    return max(v for v in run["max_logit"] if v is not None)


def _qk_update(art, placement, lr, qk_norm):
    exp = stored()
    lr, note = _snapped(lr, [1e-2, 3e-2], "lr")
    runs = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=qk_norm)
    color = COLORS[placement]
    _show_seeds(art, "q", runs, color, key="max_logit")
    _show_seeds(art, "s", runs, color)
    other = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=not qk_norm)
    name = "with QK-norm" if qk_norm else "without QK-norm"
    return {
        "outcome": f"{PLACEMENT_NAMES[placement]}, depth 6, lr {lr:g}{note}, {name}: {seed_summary(runs)}",
        "largest logit over training": "; ".join(f"seed {r['seed']} {_peak(r):.3g}" for r in runs) or "not run",
        "the other way": (("without" if qk_norm else "with") + " QK-norm: " + seed_summary(other)
                          + "; largest logits " + ", ".join(f"{_peak(r):.3g}" for r in other)),
    }


def _qk_alt(placement, lr, qk_norm):
    return (f"Left: the largest attention logit at every training step for three seeds of a 6-layer "
            f"{PLACEMENT_NAMES[placement]} transformer at peak learning rate {lr:g}, "
            f"{'with' if qk_norm else 'without'} QK-norm. Right: their training loss with chance dashed.")


def _qk_presets() -> dict:
    exp = stored()

    def peaks(placement, lr, qk):
        runs = exp.select(placement=placement, depth=6, lr=lr, warmup=0.0, qk_norm=qk)
        return "; ".join(f"seed {r['seed']} {_peak(r):.3g}" for r in runs)

    return {
        "pre-norm, lr 3e-2": Preset({}, f"without QK-norm the largest logits reach {peaks('pre', 3e-2, False)}"),
        "with QK-norm": Preset({"qk_norm": True}, (
            f"normalized queries and keys: the largest logits are {peaks('pre', 3e-2, True)}")),
        "post-norm, lr 1e-2, QK-norm": Preset({"placement": "post", "lr": 1e-2, "qk_norm": True}, (
            "does QK-norm rescue the post-norm cell that sticks at chance? "
            + seed_summary(exp.select(placement="post", depth=6, lr=1e-2, warmup=0.0, qk_norm=True)))),
    }


def entries() -> list:
    """The catalog entries of the section "Does it train?"."""
    return [
        Explorable(
            "train_outcomes",
            {
                "depth": Choice(DEPTHS, 6, label="depth", labels=[f"{d} layers" for d in DEPTHS]),
                "lr": Slider(1e-3, 1e-2, 1e-2, scale="log", label="peak learning rate", stops=LRS),
                "warmup": Choice([0.0, 0.15], 0.0, label="warm-up", labels=["none", "15 %"]),
            },
            _grid_setup,
            _grid_update,
            title="Does it train? Every seed's loss, post-norm against pre-norm, and the seeds that solved the task",
            alt=_grid_alt,
            presets=_grid_presets(),
        ),
        Explorable(
            "train_fixes",
            {
                "variant": Choice(list(VARIANTS), "DeepNorm", label="model"),
                "depth": Slider(6, 24, 24, scale="log", label="depth (layers)", stops=[6, 12, 24]),
                "lr": Slider(1e-3, 1e-2, 1e-3, scale="log", label="peak learning rate", stops=LRS),
            },
            _fix_setup,
            _fix_update,
            title="What each fix does to the tiny model: its loss, and the size of its residual stream",
            alt=_fix_alt,
            presets=_fix_presets(),
        ),
        Explorable(
            "train_qk_norm",
            {
                "placement": Choice(["pre", "post"], "pre", label="placement", labels=["pre-norm", "post-norm"]),
                "lr": Slider(1e-2, 3e-2, 3e-2, scale="log", label="peak learning rate", stops=[1e-2, 3e-2]),
                "qk_norm": Choice([False, True], False, label="QK-norm", labels=["off", "on"]),
            },
            _qk_setup,
            _qk_update,
            title="QK-norm at high learning rates: the largest attention logit, depth 6",
            alt=_qk_alt,
            presets=_qk_presets(),
        ),
    ]


# -- (f) training live ---------------------------------------------------------------------------------------------

def _live_figure(color):
    fig = blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        _loss_axes(ax)
        (train_line,) = ax.plot([], [], color=color, lw=1.0, alpha=0.8, label="training loss")
        (eval_line,) = ax.plot([], [], "o-", color="black", ms=3.5, lw=1.0, label="held-out loss")
        ax.legend(loc="center right", fontsize=7.5)
        label(ax, "training step", "loss (nats per answer token)", "")
    return fig, ax, train_line, eval_line


def _draw_run(fig, ax, train_line, eval_line, run, title):
    steps = np.arange(len(run.loss))
    train_line.set_data(steps, run.loss)
    eval_line.set_data(run.eval_steps, run.eval_loss)
    ax.set_xlim(0, run.steps)
    ax.set_title(title, loc="left")
    return figure_png(fig)


def train(cfg=None, lr: float = 3e-3, steps: int = 500, warmup: float = 0.0, seed: int = 0, **config):
    """Train one configuration (a transformer.Config, or its fields as keywords) and draw its loss as it trains.

    In JupyterLab this shows a progress bar and the loss, redrawn at every held-out evaluation; interrupt the
    kernel to stop early and keep the Run. In the static book nothing is trained: the stored runs of that
    configuration are drawn instead (if `make experiments` stored it). Returns the Run (None in the book).
    """
    from IPython.display import HTML, display

    from ..training import run as train_run
    from ..transformer import Config

    if cfg is None:
        cfg = Config(**{"depth": 6, **config})
    elif config:
        raise TypeError("pass either a Config or its fields as keywords, not both")
    extras = [cfg.norm] + [k for k in ("qk_norm", "deepnorm") if getattr(cfg, k)]
    name = (f"{PLACEMENT_NAMES.get(cfg.placement, cfg.placement)}, depth {cfg.depth}, {', '.join(extras)}, "
            f"lr {lr:g}, warm-up {warmup:.0%}, seed {seed}")
    if static_mode():
        _show_stored(cfg, lr, warmup, seed, name)
        return None
    import ipywidgets as w

    fig, ax, train_line, eval_line = _live_figure(COLORS.get(cfg.placement, COLORS["layer_norm"]))
    image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
    display(image)

    def redraw(r):
        image.value = _draw_run(fig, ax, train_line, eval_line, r,
                                f"{name}\nstep {len(r.loss)} of {steps}, held-out accuracy {r.accuracy:.3f}")

    result = train_run(cfg, lr, steps, warmup, seed, eval_every=max(1, steps // 25), progress=True,
                       callback=redraw)
    state = ("interrupted: kept " if result.interrupted else "diverged: " if result.diverged else "finished: ")
    image.value = _draw_run(fig, ax, train_line, eval_line, result,
                            f"{name}\n{state}{len(result.loss)} steps, {result.outcome}, "
                            f"held-out accuracy {result.accuracy:.3f}")
    display(HTML(f"<p>{state}{len(result.loss)} steps; outcome <b>{result.outcome}</b>, held-out token "
                 f"accuracy {result.accuracy:.3f}.</p>"))
    return result


def _show_stored(cfg, lr, warmup, seed, name):
    """The book's face of train(): the stored runs of this configuration, or a note that there are none."""
    from ..display import show_figure

    fields = {"placement": cfg.placement, "depth": cfg.depth, "norm": cfg.norm, "qk_norm": cfg.qk_norm,
              "deepnorm": cfg.deepnorm}
    runs = stored().select(**fields, lr=lr, warmup=warmup)
    fig = blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        _loss_axes(ax)
        for r in runs:
            ls = SEED_STYLES[r["seed"] % len(SEED_STYLES)]
            lw = 2.0 if r["seed"] == seed else 1.0
            ax.plot(curve_steps()[: len(r["loss"])], r["loss"], ls, lw=lw,
                    color=COLORS.get(cfg.placement, COLORS["layer_norm"]),
                    label=f"seed {r['seed']}: {r['outcome']}")
        if runs:
            ax.legend(loc="center right", fontsize=7.5)
        else:
            ax.text(0.5, 0.5, "this configuration is not among the stored runs:\nrun the notebook in JupyterLab "
                    "to train it", transform=ax.transAxes, ha="center", va="center")
        label(ax, "training step", "loss (nats per answer token)", f"Stored runs:\n{name}")
    show_figure(fig, alt=(f"Training loss against step of the stored runs for {name}: " + seed_summary(runs)
                          + ", chance loss dashed."),
                caption=f"In the book nothing trains: these are the stored runs of {name} ({seed_summary(runs)}).")


# -- the section's static figures ------------------------------------------------------------------------------------

def grad_norm_figure(per_layer: dict, depths, matrix: str):
    """One log-scale panel per depth: the gradient norm of each layer's `matrix` at initialization, post and pre.
    per_layer maps (placement, depth) to an array of one value per layer."""
    fig = blank_figure(height=3.0)
    with house_style():
        axes = np.atleast_1d(fig.subplots(1, len(depths), sharey=True))
        for ax, d in zip(axes, depths, strict=True):
            layers = np.arange(1, d + 1)
            for p in ("post", "pre"):
                ax.plot(layers, per_layer[p, d], "o-", ms=3, color=COLORS[p], label=PLACEMENT_NAMES[p])
            ax.set_yscale("log")
            label(ax, "layer", f"gradient norm of {matrix}" if ax is axes[0] else "", f"{d} layers")
        axes[0].legend(loc="lower left", fontsize=7)
    return fig


def update_size_figure(depths, change: dict):
    """Log-log: the RMS change of the logits after one Adam step, against depth, one line per variant (mean over
    seeds, their range shaded). change maps a variant to an array (seeds, depths)."""
    colors = {"post": COLORS["post"], "pre": COLORS["pre"], "peri": COLORS["layer_norm"], "deepnorm": "0.3"}
    names = {"post": "post-norm", "pre": "pre-norm", "peri": "Peri-LN", "deepnorm": "DeepNorm"}
    depths = np.asarray(depths)
    fig = blank_figure(height=3.0)
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
        ax.legend(loc="upper left", fontsize=7.5)
        label(ax, "depth (layers, log scale)", "RMS change of the logits", "One Adam step from initialization")
    return fig
