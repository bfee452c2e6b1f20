"""Section 23.1 explorable: how big the activations get in a residual stack, with and without normalization."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..controls import Preset
from ..examples import STACK_INPUT
from ..explore import Explorable, Slider
from ..residual import Affine, stack_curves
from ..style import COLORS, label

X0 = STACK_INPUT  # the input of the reference program's pre/post-norm stack
MAX_DEPTH = 48
NORM_LIM = (1.0, 1e16)
RATIO_LIM = (0.3, 2.2)
PLACEMENTS = (("none", "no normalization"), ("pre", "pre-norm"), ("post", "post-norm"))


@lru_cache(maxsize=32)
def magnitudes(gain: float) -> dict:
    """{placement: |out| at depths 0..MAX_DEPTH} (depth 0 is the input), exact float64, per sublayer gain."""
    sub = Affine(gain, 0.1)
    start = np.sqrt(np.sum(X0 * X0))
    return {p: np.concatenate([[start], stack_curves(X0, MAX_DEPTH, p, sublayer=sub)[0]]) for p, _ in PLACEMENTS}


def _setup(fig):
    ax_n, ax_r = fig.subplots(1, 2)
    depths = np.arange(0, MAX_DEPTH + 1)
    art = {"animated": []}
    for p, name in PLACEMENTS:
        (art[f"n_{p}"],) = ax_n.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=name)
        (art[f"r_{p}"],) = ax_r.plot(depths[1:], depths[1:] * 0 + 1.0, color=COLORS[p], label=name)
        (art[f"nm_{p}"],) = ax_n.plot([0], [1], "o", color=COLORS[p], ms=6, clip_on=False, in_layout=False)
        (art[f"rm_{p}"],) = ax_r.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False, in_layout=False)
        art["animated"] += [art[f"n_{p}"], art[f"r_{p}"], art[f"nm_{p}"], art[f"rm_{p}"]]
    ax_n.set_yscale("log")
    ax_n.set_xlim(-0.5, MAX_DEPTH)   # room for the depth-0 markers
    ax_n.set_ylim(*NORM_LIM)
    ax_r.set_xlim(0.5, MAX_DEPTH)   # room for the depth-1 markers
    ax_r.set_ylim(*RATIO_LIM)
    ax_r.axhline(1, color="0.6", lw=0.8)
    ax_n.legend(loc="upper left")
    art["vline_n"] = ax_n.axvline(0, color="0.5", lw=0.8, ls="--")
    art["vline_r"] = ax_r.axvline(1, color="0.5", lw=0.8, ls="--")
    art["animated"] += [art["vline_n"], art["vline_r"]]
    label(ax_n, "depth (layers)", "|h| after that many layers (input units, log)",
          "Magnitude: only the unnormalized sum explodes")
    label(ax_r, "depth (layers)", "|h_l| / |h_(l-1)| (dimensionless)",
          "Growth factor of each layer")
    return art


def _update(art, depth, gain):
    data = magnitudes(float(gain))
    out = {}
    for p, name in PLACEMENTS:
        norms = data[p]
        ratio = norms[1:] / norms[:-1]
        art[f"n_{p}"].set_ydata(np.clip(norms, *NORM_LIM))
        art[f"r_{p}"].set_ydata(np.clip(ratio, *RATIO_LIM))
        art[f"nm_{p}"].set_data([depth], [np.clip(norms[depth], *NORM_LIM)])
        art[f"rm_{p}"].set_data([max(depth, 1)], [np.clip(ratio[max(depth, 1) - 1], *RATIO_LIM)])
        if depth >= 1:
            out[name] = f"|h| = {norms[depth]:.4g}; layer {depth} multiplied it by {ratio[depth - 1]:.4f}"
        else:
            out[name] = f"|h| = {norms[0]:.4g} (the input); layer 1 multiplies it by {ratio[0]:.4f}"
    art["vline_n"].set_xdata([depth, depth])
    art["vline_r"].set_xdata([max(depth, 1)] * 2)
    out["input |x0|"] = f"{data['none'][0]:.4g}"
    return out


DEPTH_STOPS = list(range(0, MAX_DEPTH + 1, 6))
GAIN_STOPS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]

PRESETS = {
    "depth 48": Preset({"depth": 48}, (
        "with no normalization the magnitude is a straight line on the log axis (every layer multiplies it by "
        "about 1.5); pre-norm's curve bends over and post-norm's stays flat at 2")),
    "gain 0.1": Preset({"gain": 0.1}, (
        "a sublayer that adds only a tenth of the stream still compounds: the unnormalized layer 24 multiplies "
        "by 1.1030, close to the 1.1 that section 23.2 starts from (the bias keeps it a little above)")),
    "gain 0.1, depth 48": Preset({"gain": 0.1, "depth": 48}, (
        "deeper down the unnormalized factor settles at 1.1003 per layer: a steady exponential")),
    "gain 1": Preset({"gain": 1.0}, (
        "the unnormalized stream doubles at every layer (factor 2.0000 at layer 24), while pre-norm's layer "
        "24 adds only 3.9% (factor 1.0392): each layer adds a bounded amount to a growing total")),
    "gain 1, depth 48": Preset({"gain": 1.0, "depth": 48}, (
        "pre-norm's factor keeps falling toward 1 (1.0202 at layer 48), so its magnitude grows only about "
        "linearly with depth")),
    "depth 0": Preset({"depth": 0}, (
        "the input has length 5.477; post-norm's first layer pulls it down to 2, a factor 0.3651 (the first "
        "point of its curve on the right), and keeps it there")),
}


def entries() -> list:
    """The catalog entries of section 23.1."""
    return [
        Explorable(
            "teaser_stack_magnitude",
            {
                "depth": Slider(0, MAX_DEPTH, 24, label="depth (layers)", stops=DEPTH_STOPS),
                "gain": Slider(0.1, 1.0, 0.5, label="sublayer gain a in F(v)=a v+0.1", stops=GAIN_STOPS),
            },
            _setup,
            _update,
            title="A residual stack without normalization, with pre-norm and with post-norm",
            alt=lambda depth, gain: (
                f"Two panels against depth 0 to {MAX_DEPTH} for a residual stack with sublayer F(v)={gain:g}v+0.1 "
                "and input [1, 2, 3, 4]. Left, log scale: the activation magnitude for no normalization, "
                "pre-norm and post-norm. Right: the growth factor of each layer. A dashed line marks depth "
                f"{depth}."),
            presets=PRESETS,
        )
    ]
