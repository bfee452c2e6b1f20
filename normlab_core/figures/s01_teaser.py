"""Section 23.1: how big the activations get in a residual stack, with and without normalization."""

from __future__ import annotations

import numpy as np

from ..examples import STACK_INPUT
from ..formatting import number
from ..interactive import Explorable, Preset, Slider, vector
from ..residual import Affine, stack_curves
from .style import COLORS, NARROW_IN, PLACEMENT_NAMES, label, panels, vector_label

MAX_DEPTH = 48
TOP = 1e16                 # the magnitude axis ends here; larger values are drawn on its top edge
PLACEMENTS = ("none", "pre", "post")   # drawn in this order


def magnitudes(x0, gain: float) -> dict:
    """{placement: |h| at depths 0..MAX_DEPTH} (depth 0 is x0 itself) for the sublayer F(v) = gain v + 0.1."""
    start = float(np.sqrt(np.sum(x0 * x0)))
    return {p: np.concatenate([[start], stack_curves(x0, MAX_DEPTH, p, sublayer=Affine(gain, 0.1))[0]])
            for p in PLACEMENTS}


def setup(fig, *, narrow, x0):
    ax_n, ax_r = panels(fig, narrow)
    depths = np.arange(MAX_DEPTH + 1)
    art = {"ax_r": ax_r}
    for p in PLACEMENTS:
        (art[f"n_{p}"],) = ax_n.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=PLACEMENT_NAMES[p])
        (art[f"r_{p}"],) = ax_r.plot(depths[1:], depths[1:] * 0 + 1.0, color=COLORS[p])
        (art[f"nm_{p}"],) = ax_n.plot([0], [1], "o", color=COLORS[p], ms=6, clip_on=False)
        (art[f"rm_{p}"],) = ax_r.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False)
    start = float(np.sqrt(np.sum(x0 * x0)))
    low = (min(start, np.sqrt(x0.size)) if start > 0 else 0.1) / 3     # x0 = 0: the first layer adds 0.1 per entry
    ax_n.set_yscale("log")
    ax_n.set_xlim(-0.5, MAX_DEPTH)
    ax_n.set_ylim(10.0 ** np.floor(np.log10(low)), TOP)
    ax_r.set_xlim(0.5, MAX_DEPTH)
    ax_r.axhline(1, color="0.6", lw=0.8)
    ax_n.legend(loc="upper left")
    art["vline_n"] = ax_n.axvline(0, color="0.5", lw=0.8, ls="--")
    art["vline_r"] = ax_r.axvline(1, color="0.5", lw=0.8, ls="--")
    label(ax_n, "depth (layers)", r"$\|h\|$ (input units, log scale)", "Magnitude after each layer")
    label(ax_r, "depth (layers)", r"$\|h_l\,\|\, /\, \|h_{l-1}\|$", "Growth factor of each layer")
    return art


def update(art, *, depth, gain, x0):
    data = magnitudes(x0, gain)
    ratios = {p: growth_factors(data[p]) for p in PLACEMENTS}
    finite = [float(np.max(r[np.isfinite(r)])) for r in ratios.values() if np.isfinite(r).any()]
    top = max([2.2] + [1.08 * v for v in finite])
    art["ax_r"].set_ylim(0.3 if top <= 2.2 else 0.0, top)
    out = {}
    for p in PLACEMENTS:
        norms, ratio, at = data[p], ratios[p], max(depth, 1)
        art[f"n_{p}"].set_ydata(np.minimum(norms, TOP))
        art[f"r_{p}"].set_ydata(ratio)
        art[f"nm_{p}"].set_data([depth], [min(norms[depth], TOP)])
        art[f"rm_{p}"].set_data([at], [ratio[at - 1]])
        layer = f"layer {depth} multiplied it by" if depth else "layer 1 multiplies it by"
        factor = (number(ratio[at - 1], 5) if np.isfinite(ratio[at - 1]) else
                  "nothing: |h| was 0 before it, so there is no growth factor")
        out[PLACEMENT_NAMES[p]] = f"|h| = {number(norms[depth])}; {layer} {factor}"
    art["vline_n"].set_xdata([depth, depth])
    art["vline_r"].set_xdata([max(depth, 1)] * 2)
    out["input |x0|"] = number(data["none"][0]) + (
        ": the stream starts at 0 and the first layer adds only the bias 0.1 to each entry; its growth factor "
        "(the ratio of two sizes, the first 0) is not defined and is not drawn" if data["none"][0] == 0 else "")
    over = data["none"][depth] > TOP
    alt = (f"Two panels against depth 0 to {MAX_DEPTH} for a residual stack with sublayer F(v) = {number(gain)} v + "
           f"0.1 on the input {vector_label(x0)}. At depth {depth} (dashed line) the magnitude is "
           f"{number(data['none'][depth], 2)} with no normalization{' (beyond the top of the axis)' if over else ''}, "
           f"{number(data['pre'][depth], 2)} with pre-norm and {number(data['post'][depth], 2)} with post-norm; "
           f"the right panel shows each layer's growth factor, {number(ratios['none'][max(depth, 1) - 1], 3)} "
           "for the unnormalized sum there.")
    return out, alt


def growth_factors(norms: np.ndarray) -> np.ndarray:
    """|h_l| / |h_(l-1)| for l = 1.., NaN where |h_(l-1)| is 0 (no factor takes 0 to a nonzero size)."""
    before, after = norms[:-1], norms[1:]
    out = np.full(after.shape, np.nan)
    np.divide(after, before, out=out, where=before > 0)
    return out


def _at(x0, gain: float, placement: str, depth: int) -> tuple[float, float]:
    """(|h| at `depth`, the growth factor of layer `depth`) for this input and gain."""
    norms = magnitudes(np.asarray(x0, dtype=np.float64), gain)[placement]
    return float(norms[depth]), float(growth_factors(norms)[max(depth, 1) - 1])


def _notice_depth_48(x0):
    none, pre, post = (_at(x0, 0.5, p, 48) for p in PLACEMENTS)
    return (f"with no normalization the magnitude is a straight line on the log axis (layer 48 multiplies it by "
            f"{number(none[1], 3)}); pre-norm's curve bends over and post-norm's stays flat at {number(post[0], 4)}")


def _notice_gain_01(x0):
    return (f"a sublayer that adds only a tenth of the stream still compounds: the unnormalized layer 24 multiplies "
            f"by {number(_at(x0, 0.1, 'none', 24)[1], 4)} (1.1 would be the gain alone; the bias 0.1 adds to it)")


def _notice_gain_01_48(x0):
    return (f"deeper down the unnormalized factor settles at {number(_at(x0, 0.1, 'none', 48)[1], 5)} per layer: "
            "a steady exponential")


def _notice_gain_1(x0):
    none, pre = _at(x0, 1.0, "none", 24)[1], _at(x0, 1.0, "pre", 24)[1]
    return (f"the unnormalized stream doubles at every layer (factor {number(none, 5)} at layer 24), while "
            f"pre-norm's layer 24 adds only {pre - 1:.1%} (factor {number(pre, 5)}): each layer adds a bounded "
            "amount to a growing total")


def _notice_gain_1_48(x0):
    return (f"pre-norm's factor keeps falling toward 1 ({number(_at(x0, 1.0, 'pre', 48)[1], 5)} at layer 48), so "
            "its magnitude grows only about linearly with depth")


def _notice_depth_0(x0):
    start, (post, factor) = _at(x0, 0.5, "none", 0)[0], _at(x0, 0.5, "post", 1)
    return (f"the input has length {number(start)}; post-norm's first layer takes it to {number(post, 4)}, a factor "
            f"{number(factor, 5)} (the first point of its curve on the right), and keeps it there")


PRESETS = {   # the notices are computed from the input shown (the defaults: STACK_INPUT)
    "depth 48": Preset({"depth": 48}, _notice_depth_48),
    "gain 0.1": Preset({"gain": 0.1}, _notice_gain_01),
    "gain 0.1, depth 48": Preset({"gain": 0.1, "depth": 48}, _notice_gain_01_48),
    "gain 1": Preset({"gain": 1.0}, _notice_gain_1),
    "gain 1, depth 48": Preset({"gain": 1.0, "depth": 48}, _notice_gain_1_48),
    "depth 0": Preset({"depth": 0}, _notice_depth_0),
}


def entries() -> list:
    """The explorables of section 23.1."""
    return [Explorable(
        "teaser_stack_magnitude", title="A residual stack without normalization, with pre-norm and with post-norm",
        controls={"depth": Slider(list(range(0, MAX_DEPTH + 1, 6)), 24, label="depth (layers)", free=(0, MAX_DEPTH)),
                  "gain": Slider([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], 0.5,
                                 label="sublayer gain a in F(v) = a v + 0.1", free=(0.0, 2.0))},
        inputs={"x0": vector(STACK_INPUT, 1, 64)}, setup=setup, update=update, presets=PRESETS,
        narrow=(NARROW_IN, 5.4))]
