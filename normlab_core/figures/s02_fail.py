"""Section 23.2: watch a residual network fail first. Stored runs of normlab_core.residual_mlp (no norm, post-norm,
pre-norm; `make experiments` trains them, the book never does): the spread of |activation| and |gradient| layer by
layer at the start and after training, and the loss of three seeds."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import numpy as np
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Polygon

from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider
from .style import COLORS, NARROW_IN, PLACEMENT_NAMES, label

PATH = Path(__file__).resolve().parent.parent / "data" / "fail_first.json.gz"
LOSS_TOP = 1e4           # losses above are drawn on the top edge: a run that got there is lost
SHORT = {"none": "no norm", "post": "post-norm", "pre": "pre-norm"}


@functools.cache
def stored() -> dict:
    """The stored study: its settings, and its runs by (depth, wiring, lr, seed) with numpy arrays."""
    with gzip.open(PATH, "rt", encoding="utf-8") as f:
        content = json.load(f)
    runs = {}
    for r in content["runs"]:
        r = dict(r, loss=np.array(r["loss"], dtype=float))
        if "bands" in r:
            r["bands"] = {w: {k: np.array(v, dtype=float) for k, v in b.items()} for w, b in r["bands"].items()}
        runs[(r["depth"], r["wiring"], r["lr"], r["seed"])] = r
    return {"settings": content["settings"], "runs": runs}


def axes() -> dict:
    return stored()["settings"]["axes"]


def _decades(values, pad: float = 1.0) -> tuple[float, float]:
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0])
    return 10.0 ** (np.floor(np.log10(v.min())) - pad + 1), 10.0 ** (np.ceil(np.log10(v.max())))


@functools.cache
def limits() -> dict:
    """One y range per panel for every state, so that moving a control never rescales what it compares."""
    runs = stored()["runs"].values()
    out = {}
    for kind in ("act", "grad"):
        vals = [x for r in runs if "bands" in r for w in ("start", "end") for x in
                np.r_[r["bands"][w][kind][0], r["bands"][w][kind][-1]]]
        out[kind] = _decades(vals)
    out["loss"] = (_decades([x for r in runs for x in r["loss"]])[0], LOSS_TOP)
    return out


def _band(ax, color, alpha):
    return ax.add_patch(Polygon(np.zeros((4, 2)), closed=True, fc=color, ec="none", alpha=alpha))


def setup(fig, *, narrow):
    gs = fig.add_gridspec(3, 1) if narrow else fig.add_gridspec(1, 3, width_ratios=[1, 1, 1.05])
    ax_a, ax_g, ax_l = (fig.add_subplot(gs[i]) for i in range(3))
    lim, art = limits(), {"axes": {"act": ax_a, "grad": ax_g}}
    for kind, ax in art["axes"].items():
        art[f"{kind}_start"] = _band(ax, "0.55", 0.35)
        (art[f"{kind}_start_mid"],) = ax.plot([0, 1], [1, 1], color="0.35", lw=1.2, ls="--", label="at the start")
        art[f"{kind}_outer"], art[f"{kind}_inner"] = _band(ax, COLORS["none"], 0.25), _band(ax, COLORS["none"], 0.45)
        (art[f"{kind}_mid"],) = ax.plot([0, 1], [1, 1], color=COLORS["none"], lw=1.8, label="at the last step")
        ax.set_yscale("log")
        ax.set_ylim(*lim[kind])
        ax.set_xlim(0, max(axes()["depth"]))      # one axis for every depth: a deeper stack reaches further
        ax.set_xticks(sorted({0, *axes()["depth"]}))
    # one legend for every state (a new legend would draw the whole figure again): the last step's handle shows
    # the colours of all three wirings, its line takes the one shown
    last = tuple(Line2D([], [], color=COLORS[w], lw=1.8) for w in axes()["wiring"])
    ax_a.legend(handles=[art["act_start_mid"], last], labels=["at the start", "at the last step"], loc="upper left",
                fontsize=8, handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})
    label(ax_a, "layer l (0 = input)", "|h_l|: 5-25-50-75-95 %", "Activations")
    label(ax_g, "layer l (0 = input)", "|dL/dh_l| (log scale)", "Gradients")
    steps = np.arange(stored()["settings"]["steps"])
    art["loss"] = [ax_l.plot(steps, steps * 0.0 + 1, color=COLORS["none"], lw=1.2, marker="o", ms=3)[0]
                   for _ in stored()["settings"]["seeds"]]
    (art["blown"],) = ax_l.plot([1], [1], "x", color=COLORS["warning"], ms=8, mew=2)
    art["loss_note"] = ax_l.text(0.97, 0.8, "", transform=ax_l.transAxes, ha="right", va="top",
                                 color=COLORS["warning"])
    ax_l.set_yscale("log")
    ax_l.set_xlim(-steps[-1] / 40, steps[-1])     # a run that blows up at step 1 shows its cross
    ax_l.set_ylim(*lim["loss"])
    label(ax_l, "step", "training loss (log scale)", f"Loss, {len(art['loss'])} seeds")
    art["ax_l"] = ax_l
    return art


def _set_band(poly, xs, lo, hi, top):
    lo, hi = np.clip(lo, 1e-300, top), np.clip(hi, 1e-300, top)
    poly.set_xy(np.column_stack([np.r_[xs, xs[::-1]], np.r_[lo, hi[::-1]]]))


def update(art, *, depth, placement, lr):
    runs = stored()["runs"]
    seeds = stored()["settings"]["seeds"]
    first = runs[(depth, placement, lr, seeds[0])]
    layers = np.arange(depth + 1)
    colour = COLORS[placement]
    out = {}
    for kind, ax in art["axes"].items():
        top = ax.get_ylim()[1]
        start, end = first["bands"]["start"][kind], first["bands"]["end"][kind]
        _set_band(art[f"{kind}_start"], layers, start[0], start[-1], top)
        art[f"{kind}_start_mid"].set_data(layers, np.clip(start[2], 0, top))
        _set_band(art[f"{kind}_outer"], layers, end[0], end[-1], top)
        _set_band(art[f"{kind}_inner"], layers, end[1], end[-2], top)
        art[f"{kind}_mid"].set_data(layers, np.clip(end[2], 0, top))
        for k in ("outer", "inner"):
            art[f"{kind}_{k}"].set_facecolor(colour)
        art[f"{kind}_mid"].set_color(colour)
    step = first["end_step"]
    blown, ends = [], []
    for line, seed in zip(art["loss"], seeds, strict=True):
        r = runs[(depth, placement, lr, seed)]
        y = np.full(len(line.get_xdata()), np.nan)
        y[:len(r["loss"])] = np.minimum(r["loss"], LOSS_TOP)
        line.set_ydata(y)
        line.set_markevery([len(r["loss"]) - 1])
        line.set_color(colour)
        ends.append(r["loss"][-1])
        if r["blown"] is not None:
            blown.append(r["blown"])
    art["blown"].set_data(blown or [0], [LOSS_TOP / 2] * max(1, len(blown)))
    art["blown"].set_visible(bool(blown))
    art["loss_note"].set_text(f"x: blew up ({len(blown)} of {len(seeds)})" if blown else "")
    act_s, act_e = first["bands"]["start"]["act"][2], first["bands"]["end"]["act"][2]
    grad_s, grad_e = first["bands"]["start"]["grad"][2], first["bands"]["end"]["grad"][2]
    out["activations |h|, median"] = (f"layer 0 {number(act_s[0], 3)}, layer {depth} {number(act_s[-1], 3)} at the "
                                      f"start; layer {depth} {number(act_e[-1], 3)} at step {step}")
    out["gradients |dL/dh|, median"] = (f"layer 0 / layer {depth}: {number(grad_s[0] / grad_s[-1], 3)} at the start "
                                        f"(layer 0 {number(grad_s[0], 3)}), {number(grad_e[0] / grad_e[-1], 3)} at "
                                        f"step {step} (layer 0 {number(grad_e[0], 3)})")
    first_loss = runs[(depth, placement, lr, seeds[0])]["loss"][0]
    if blown:
        fate = (f"blew up in {len(blown)} of {len(seeds)} seeds (loss above "
                f"{number(stored()['settings']['blown'])} or not finite) at step {', '.join(map(str, blown))}")
    else:
        fate = f"no seed blew up; last loss {', '.join(number(e, 3) for e in ends)}"
    out["loss"] = f"lr {number(lr)}: start {number(first_loss, 3)}; {fate}"
    alt = (f"A residual network of {depth} MLP layers with {PLACEMENT_NAMES[placement]}, plain gradient descent at "
           f"learning rate {number(lr)}. Left and middle, per layer on a log scale: the spread of |activation| and "
           f"|gradient| at the start (grey) and at step {step} (colour); the median activation at the top layer is "
           f"{number(act_s[-1], 3)} at the start and {number(act_e[-1], 3)} at step {step}, the median gradient "
           f"at layer 0 is {number(grad_s[0], 3)} and at step {step} {number(grad_e[0], 3)}. Right: the loss of "
           f"{len(seeds)} seeds, which {fate}.")
    return out, alt


PRESETS = {
    "no norm, depth 4": Preset({"depth": 4}, (
        "four layers without a norm train: the stream grows only from 0.667 to 1.09, and the three seeds end at "
        "losses of 0.335 to 0.367")),
    "no norm, depth 8": Preset({"depth": 8}, (
        "eight layers: at the start the gradient at layer 0 is already 4.01 times the top one, and the first "
        "steps blow the loss up in every seed (step 2)")),
    "no norm, depth 32": Preset({"depth": 32}, (
        "the bands climb a straight line on the log scale: the stream is 68.8 at the top, the loss starts "
        "at 6.44e4 and layer 0's gradient is 221 times the top one; the first step blows up")),
    "pre-norm, depth 32": Preset({"depth": 32, "placement": "pre"}, (
        "the same 32 layers with a norm before each block: the stream's median only grows to 2.28, the gradients "
        "stay within a factor 3.67 from top to bottom, and every seed trains (last loss 0.394, 0.349, 0.409)")),
    "post-norm, depth 32": Preset({"depth": 32, "placement": "post"}, (
        "post-norm keeps the activations flat, and starts with even gradients, but after training layer 0 gets "
        "0.0522 times the top layer's gradient and the loss stalls near 1.3 to 1.7")),
    "post-norm, depth 8, lr 0.1": Preset({"depth": 8, "placement": "post", "lr": 0.1}, (
        "a larger learning rate: post-norm blows up at steps 8, 7 and 9, where pre-norm at the same depth and "
        "rate trains")),
    "pre-norm, depth 32, lr 0.1": Preset({"depth": 32, "placement": "pre", "lr": 0.1}, (
        "pre-norm has a limit too: at depth 32 and rate 0.1 it blows up in 2 of 3 seeds")),
}


def entries() -> list:
    """The explorables of section 23.2 that read stored training runs."""
    a = axes()
    return [
        Explorable("fail_first", title="Watch it fail: a residual network without a norm, with post-norm and "
                   "with pre-norm", setup=setup, update=update, presets=PRESETS, size=(7.2, 3.4),
                   narrow=(NARROW_IN, 9.0),
                   controls={"depth": Slider(a["depth"], 16, label="depth (layers)"),
                             "placement": Choice(a["wiring"], "none", label="norm",
                                                 labels=[SHORT[w] for w in a["wiring"]]),
                             "lr": Slider(a["lr"], 0.03, label="learning rate")}),
    ]
