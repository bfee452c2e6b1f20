"""Section "Does it train?": the explorables of the stored training runs of `make experiments` (never a live
training). Their stops are the stored cells, read from the data file (figures/training_runs.py); the section's
static figures are there too, and the live `train(...)` is normlab_core/training_live.py."""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider
from ..interactive.explorable import KEYED
from . import training_runs
from .style import COLORS, NARROW_IN, label, panels
from .training_runs import (
    FLOAT16_MAX,
    PLACEMENT_NAMES,
    SEED_STYLES,
    curve_steps,
    loss_axes,
    seed_summary,
    stored,
    study_axes,
    warmup_label,
)

STEPS = training_runs.steps()
SEEDS = len(training_runs.seeds())
SEEDS_WORD = ("no", "one", "two", "three", "four", "five", "six")[SEEDS]   # "three seeds" in the alt texts
DEPTHS, LRS, WARMUPS = (list(v) for v in study_axes("grid", "depth", "lr", "warmup"))
FIX_DEPTHS, FIX_LRS = (list(v) for v in study_axes("deepnorm", "depth", "lr"))
(QK_DEPTH,), QK_LRS = study_axes("qk_norm", "depth", "lr")   # QK-norm was studied at one depth
QK_PLACEMENTS = sorted(study_axes("qk_norm", "placement")[0], key=["pre", "post", "peri"].index)
# Seeds solved, 0 to SEEDS (3): grey for none, then ever darker greens (the text on the darkest cell is white).
SOLVED_COLOURS = ListedColormap(["#e6e6e6", "#c7e9c0", "#74c476", "#238b45"][: SEEDS + 1])

# The variant studies, by the (short) label the reader picks: what select() needs, its colour and its name in words.
VARIANTS = {
    "post-norm": ({"placement": "post", "warmup": 0.0}, COLORS["post"], "post-norm"),
    "+ warm-up": ({"placement": "post", "warmup": WARMUPS[-1]}, COLORS["post"], "post-norm with warm-up"),
    "DeepNorm": ({"placement": "post", "deepnorm": True, "warmup": 0.0}, COLORS["post"], "post-norm with DeepNorm"),
    "RMSNorm post": ({"placement": "post", "norm": "rms_norm", "warmup": 0.0}, COLORS["rms_norm"],
                     "post-norm with RMSNorm"),
    "pre-norm": ({"placement": "pre", "warmup": 0.0}, COLORS["pre"], "pre-norm"),
    "DyT (pre)": ({"placement": "pre", "norm": "dyt", "warmup": 0.0}, COLORS["none"], "pre-norm with DyT"),
    "Peri-LN": ({"placement": "peri", "warmup": 0.0}, COLORS["layer_norm"], "Peri-LN"),
}


def stream_words(runs: list) -> str:
    """'RMS up to 30.9, largest |value| 113: 0.17% of float16's largest value' at the end of training."""
    top = max(max(r["resid_rms"][-1]) for r in runs)
    largest = max(max(r["resid_max"][-1]) for r in runs)
    return (f"RMS up to {number(top, 3)}, largest |value| {number(largest, 3)}: "
            f"{number(100 * largest / FLOAT16_MAX, 2)}% of float16's largest value")


def _peak(run: dict) -> float:
    return max(v for v in run["max_logit"] if v is not None)


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
    loss_axes(ax)
    art["warm"] = ax.axvspan(0, 0, color=COLORS["highlight"], alpha=0.35, lw=0)
    _seed_lines(ax, art, "post", COLORS["post"])
    _seed_lines(ax, art, "pre", COLORS["pre"])
    art["img"] = ax_g.imshow(np.zeros((len(DEPTHS), len(LRS))), cmap=SOLVED_COLOURS, vmin=-0.5, vmax=SEEDS + 0.5,
                             origin="lower", aspect="auto")
    for i in range(len(DEPTHS)):
        for j in range(len(LRS)):
            art[f"t{i}{j}"] = ax_g.text(j, i, "", ha="center", va="center", linespacing=1.2,
                                        gid=KEYED)   # they change with the warm-up only, as the title does
    art["box"] = ax_g.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, lw=2.2, ec="black"))
    ax_g.set_xticks(range(len(LRS)), [number(v) for v in LRS])
    ax_g.set_yticks(range(len(DEPTHS)), [str(d) for d in DEPTHS])
    ax_g.grid(False)
    art["ax_g"] = ax_g
    label(ax_g, "peak learning rate", "depth (layers)")
    return art


@functools.cache
def _runs(placement: str, depth: int, lr: float, warmup: float) -> tuple:
    """The stored runs of one cell (the store is read-only, so each cell is looked up once)."""
    return tuple(stored().select(placement=placement, depth=depth, lr=lr, warmup=warmup))


@functools.cache
def _grid(warmup: float) -> tuple:
    """(seeds solved by post-norm per cell, each cell's text) at this warm-up."""
    counts, texts = np.zeros((len(DEPTHS), len(LRS))), {}
    for i, d in enumerate(DEPTHS):
        for j, r in enumerate(LRS):
            post, pre = (_runs(p, d, r, warmup) for p in ("post", "pre"))
            counts[i, j] = solved = sum(c["outcome"] == "solved" for c in post)
            texts[i, j] = (f"post {solved}/{len(post)}\npre {sum(c['outcome'] == 'solved' for c in pre)}/{len(pre)}",
                           "white" if solved == SEEDS else "black")
    return counts, texts


def grid_update(art, *, depth, lr, warmup):
    runs = {p: list(_runs(p, depth, lr, warmup)) for p in ("post", "pre")}
    for p in runs:
        _show_seeds(art, p, runs[p], COLORS[p])
    art["warm"].set_width(round(warmup * STEPS))
    counts, texts = _grid(warmup)
    for (i, j), (text, colour) in texts.items():
        art[f"t{i}{j}"].set_text(text)
        art[f"t{i}{j}"].set_color(colour)
    art["img"].set_data(counts)
    art["box"].set_xy((LRS.index(lr) - 0.5, DEPTHS.index(depth) - 0.5))
    art["ax_g"].set_title(f"Seeds solved of {SEEDS}, warm-up {'none' if warmup == 0 else f'{warmup:.0%}'}", loc="left")
    if art.get("legend") != (seeds := ([r["seed"] for r in runs["post"]], bool(warmup))):   # (built when it changes)
        art["legend"] = seeds
        handles = [Line2D([], [], color=COLORS[p], lw=1.4, label=PLACEMENT_NAMES[p]) for p in runs]
        handles += _seed_handles(runs["post"]) + [
            Line2D([], [], color="0.3", ls="none", marker="o", ms=3.5, mfc="white", label="held-out")]
        handles += [Patch(color=COLORS["highlight"], alpha=0.35, label="warm-up")] if warmup else []
        art["ax"].legend(handles=handles, loc="upper right", ncol=3 if len(handles) > 6 else 2, columnspacing=1.0,
                         handlelength=1.6, framealpha=1)
    cell = f"depth {depth}, lr {number(lr)}, warm-up {warmup_label(warmup)}: "
    readouts = {"post-norm": cell + seed_summary(runs["post"]), "pre-norm": cell + seed_summary(runs["pre"]),
                "post-norm seeds": _seed_words(runs["post"]), "pre-norm seeds": _seed_words(runs["pre"])}
    alt = (f"Left: training loss against step (0 to {STEPS}) for {SEEDS_WORD} seeds each of a {depth}-layer "
           f"post-norm and pre-norm transformer at peak learning rate {number(lr)}, warm-up {warmup_label(warmup)}, "
           f"chance loss ln 16 dashed: post-norm {seed_summary(runs['post'])}, pre-norm {seed_summary(runs['pre'])}. "
           f"Right: for depths {DEPTHS[0]} to {DEPTHS[-1]} and learning rates {number(LRS[0])} to {number(LRS[-1])}, "
           f"how many of {SEEDS_WORD} seeds solved the task with each placement, the chosen cell outlined.")
    return readouts, alt


def _grid_presets(exp) -> dict:
    def says(placement, depth, lr, warmup=0.0):
        return seed_summary(exp.select(placement=placement, depth=depth, lr=lr, warmup=warmup))

    return {
        "depth 6, lr 0.01": Preset({"depth": 6, "lr": 0.01}, (
            f"without warm-up post-norm is {says('post', 6, 0.01)}, pre-norm {says('pre', 6, 0.01)}")),
        "with warm-up": Preset({"depth": 6, "lr": 0.01, "warmup": 0.15}, (
            f"the same cell with the learning rate ramped up over the first {round(0.15 * STEPS)} steps (shaded): "
            f"post-norm is {says('post', 6, 0.01, 0.15)}")),
        "depth 12, lr 0.003": Preset({"depth": 12, "lr": 0.003}, (
            f"post-norm is {says('post', 12, 0.003)}; switch the warm-up on to compare "
            f"({says('post', 12, 0.003, 0.15)})")),
        "depth 24, warm-up": Preset({"depth": 24, "lr": 0.001, "warmup": 0.15}, (
            f"at the grid's smallest learning rate with warm-up, post-norm is {says('post', 24, 0.001, 0.15)} "
            f"after {STEPS} steps, while pre-norm is {says('pre', 24, 0.001, 0.15)}")),
        "depth 24, lr 0.01": Preset({"depth": 24, "lr": 0.01}, (
            f"the deepest model at the largest learning rate, no warm-up: pre-norm is {says('pre', 24, 0.01)}")),
    }


# -- (d) what each known fix does ---------------------------------------------------------------------------------
def fix_setup(fig, *, narrow):
    ax, ax_r = panels(fig, narrow)
    art = {"ax": ax, "ax_r": ax_r}
    loss_axes(ax)
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
    ax_r.set_xlim(0.5, max(FIX_DEPTHS) + 0.5)   # one axis for every depth: a deeper stack reaches further
    ax_r.set_xticks(sorted({1, *FIX_DEPTHS}))
    label(ax_r, "layer", "residual stream after the layer", "The stream at the end of training")
    return art


@functools.cache
def _fix_cell(variant: str, depth: int, lr: float) -> tuple:
    """(the stored runs of this variant's cell, every (depth, lr) stored for the variant, plain post-norm's runs of
    the same cell), looked up once (the store is read-only)."""
    fields, exp = VARIANTS[variant][0], stored()
    return (exp.select(depth=depth, lr=lr, **fields),
            sorted({(c["config"]["depth"], c["lr"]) for c in exp.select(**fields)}),
            exp.select(depth=depth, lr=lr, placement="post", warmup=0.0))


def fix_update(art, *, variant, depth, lr):
    fields, color, words = VARIANTS[variant]
    runs, done, plain = _fix_cell(variant, depth, lr)
    _show_seeds(art, "s", runs, color)
    for s in range(len(SEED_STYLES)):
        run = next((r for r in runs if r["seed"] == s), None)
        rms = [] if run is None else np.array(run["resid_rms"][-1], dtype=float)
        art[f"r{s}"].set_data(np.arange(1, len(rms) + 1), rms)
        art[f"r{s}"].set_color(color)
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
    out["plain post-norm, same cell"] = seed_summary(plain)
    out["stored for this model"] = "; ".join(f"depth {d}, lr {number(r)}" for d, r in done)
    alt = (f"Left: training loss of {SEEDS_WORD} seeds against step for {words} at depth {depth} and peak learning "
           f"rate {number(lr)}, chance loss dashed: {seed_summary(runs)}. Right: on a log scale, the RMS of the "
           "residual stream after each layer at the end of training, one line per seed, the largest absolute value "
           f"dotted and float16's largest value 65504 dashed" + (f": {stream_words(runs)}." if runs else "."))
    return out, alt


def _fix_presets(exp) -> dict:
    def says(variant, depth, lr):
        return seed_summary(exp.select(depth=depth, lr=lr, **VARIANTS[variant][0]))

    def stream(variant, depth, lr):
        return stream_words(exp.select(depth=depth, lr=lr, **VARIANTS[variant][0])).split(":")[0]

    return {
        "DeepNorm, depth 24": Preset({"variant": "DeepNorm", "depth": 24, "lr": 0.001}, (
            f"post-norm with DeepNorm is {says('DeepNorm', 24, 0.001)}, where plain post-norm is "
            f"{says('post-norm', 24, 0.001)}")),
        "Peri-LN, depth 24": Preset({"variant": "Peri-LN", "depth": 24, "lr": 0.01}, (
            f"Peri-LN is {says('Peri-LN', 24, 0.01)}, its stream at the end: {stream('Peri-LN', 24, 0.01)}")),
        "pre-norm, depth 24": Preset({"variant": "pre-norm", "depth": 24, "lr": 0.01}, (
            f"pre-norm is {says('pre-norm', 24, 0.01)}, its stream at the end: {stream('pre-norm', 24, 0.01)}, "
            "far below float16's limit")),
        "DyT, depth 12": Preset({"variant": "DyT (pre)", "depth": 12, "lr": 0.01}, (
            f"DyT in place of every LayerNorm of a pre-norm model: {says('DyT (pre)', 12, 0.01)}")),
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
    loss_axes(ax_l)
    _seed_lines(ax_l, art, "s", COLORS["pre"])
    art["ax_l"] = ax_l
    return art


def qk_update(art, *, placement, lr, qk_norm):
    exp = stored()
    runs = exp.select(placement=placement, depth=QK_DEPTH, lr=lr, warmup=0.0, qk_norm=qk_norm)
    other = exp.select(placement=placement, depth=QK_DEPTH, lr=lr, warmup=0.0, qk_norm=not qk_norm)
    _show_seeds(art, "q", runs, COLORS[placement], key="max_logit")
    _show_seeds(art, "s", runs, COLORS[placement])
    art["ax_l"].legend(handles=_seed_handles(runs), loc="upper right", ncol=3, columnspacing=1.0,
                       handlelength=1.6)
    name = "with QK-norm" if qk_norm else "without QK-norm"
    peaks = "; ".join(f"seed {r['seed']} {number(_peak(r), 3)}" for r in runs) or "not run"
    readouts = {
        "outcome": f"{PLACEMENT_NAMES[placement]}, depth {QK_DEPTH}, lr {number(lr)}, {name}: {seed_summary(runs)}",
        "largest logit over training": peaks,
        "the other way": (("without" if qk_norm else "with") + " QK-norm: " + seed_summary(other)
                          + "; largest logits " + ", ".join(number(_peak(r), 3) for r in other)),
    }
    alt = (f"Left: the largest attention logit at every training step for {SEEDS_WORD} seeds of a {QK_DEPTH}-layer "
           f"{PLACEMENT_NAMES[placement]} transformer at peak learning rate {number(lr)}, {name} (largest: "
           f"{peaks}). Right: their training loss with chance dashed: {seed_summary(runs)}.")
    return readouts, alt


def _qk_presets(exp) -> dict:
    def peaks(placement, lr, qk):
        runs = exp.select(placement=placement, depth=QK_DEPTH, lr=lr, warmup=0.0, qk_norm=qk)
        return "; ".join(f"seed {r['seed']} {number(_peak(r), 3)}" for r in runs)

    return {
        "pre-norm, lr 0.03": Preset({}, f"without QK-norm the largest logits reach {peaks('pre', 0.03, False)}"),
        "with QK-norm": Preset({"qk_norm": True}, (
            f"normalized queries and keys: the largest logits are {peaks('pre', 0.03, True)}")),
        "post-norm, lr 0.01, QK-norm": Preset({"placement": "post", "lr": 0.01, "qk_norm": True}, (
            "does QK-norm rescue the post-norm cell that sticks at chance? "
            + seed_summary(exp.select(placement="post", depth=QK_DEPTH, lr=0.01, warmup=0.0, qk_norm=True)))),
    }


def entries() -> list:
    """The explorables of the section "Does it train?" (stored runs only: the stops are the stored cells)."""
    exp = stored()
    lr = Slider(LRS, 0.01, label="peak learning rate")
    return [
        Explorable("train_outcomes", title="Does it train? Every seed's loss, post-norm against pre-norm, and the "
                   "seeds that solved the task", setup=grid_setup, update=grid_update, presets=_grid_presets(exp),
                   narrow=(NARROW_IN, 6.4),
                   controls={"depth": Choice(DEPTHS, 6, label="depth", labels=[f"{d} layers" for d in DEPTHS]),
                             "lr": lr,
                             "warmup": Choice(WARMUPS, 0.0, label="warm-up",
                                               labels=[warmup_label(w, short=True) for w in WARMUPS])}),
        Explorable("train_fixes", title="What each fix does to the tiny model: its loss, and the size of its "
                   "residual stream", setup=fix_setup, update=fix_update, presets=_fix_presets(exp),
                   narrow=(NARROW_IN, 6.0),
                   controls={"variant": Choice(list(VARIANTS), "DeepNorm", label="model"),
                             "depth": Slider(FIX_DEPTHS, 24, label="depth (layers)"),
                             "lr": Slider(FIX_LRS, 0.001, label="peak learning rate")}),
        Explorable("train_qk_norm",
                   title=f"QK-norm at high learning rates: the largest attention logit, depth {QK_DEPTH}",
                   setup=qk_setup, update=qk_update, presets=_qk_presets(exp), narrow=(NARROW_IN, 6.0),
                   controls={"placement": Choice(QK_PLACEMENTS, "pre", label="placement",
                                                 labels=[PLACEMENT_NAMES[p] for p in QK_PLACEMENTS]),
                             "lr": Slider(QK_LRS, 0.03, label="peak learning rate"),
                             "qk_norm": Choice([False, True], False, label="QK-norm", labels=["off", "on"])}),
    ]
