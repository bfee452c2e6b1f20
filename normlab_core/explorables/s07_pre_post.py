"""Section 23.7 explorables: sensitivity and output norm against depth, pre-norm vs post-norm."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.ticker import ScalarFormatter

from ..explore import Choice, Explorable, Slider
from ..residual import Affine, stack_curves
from ..style import COLORS, label

X0 = np.array([1.0, 2.0, 3.0, 4.0])  # the chapter's input
MAX_DEPTH = 256
SENS_LIM = (1e-12, 1e3)
NORM_LIM = (1.0, 1e4)


@lru_cache(maxsize=64)
def curves(gain: float, bias: float, final_norm: bool) -> dict:
    """{placement: (|out|, sensitivity)} at depths 1..MAX_DEPTH, exact float64, cached per sublayer."""
    sub = Affine(gain, bias)
    return {p: stack_curves(X0, MAX_DEPTH, p, sublayer=sub, final_norm=final_norm) for p in ("pre", "post")}


def _setup(fig):
    ax_s, ax_n = fig.subplots(1, 2)
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"animated": []}
    for p, name in (("post", "post-norm"), ("pre", "pre-norm")):
        (art[f"s_{p}"],) = ax_s.plot(depths, depths * 0 + 1, color=COLORS[p], label=name)
        (art[f"n_{p}"],) = ax_n.plot(depths, depths * 0 + 1, color=COLORS[p], label=name)
        (art[f"sm_{p}"],) = ax_s.plot([1], [1], "o", color=COLORS[p], ms=6)
        (art[f"nm_{p}"],) = ax_n.plot([1], [1], "o", color=COLORS[p], ms=6)
        art["animated"] += [art[f"s_{p}"], art[f"n_{p}"], art[f"sm_{p}"], art[f"nm_{p}"]]
    for ax, lim in ((ax_s, SENS_LIM), (ax_n, NORM_LIM)):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_yscale("log")
        ax.set_xlim(1, MAX_DEPTH)
        ax.set_ylim(*lim)
        ax.legend(loc="lower left")
    art["vline_s"] = ax_s.axvline(1, color="0.5", lw=0.8, ls="--")
    art["vline_n"] = ax_n.axvline(1, color="0.5", lw=0.8, ls="--")
    art["animated"] += [art["vline_s"], art["vline_n"]]
    label(ax_s, "depth (layers, log scale)", "||d out / d x0[0]|| (dimensionless)",
          "Sensitivity: post-norm fades with depth")
    label(ax_n, "depth (layers, log scale)", "|out| (input units)", "Output norm: post-norm is pinned")
    return art


def _update(art, depth, gain, bias, final_norm):
    data = curves(float(gain), float(bias), bool(final_norm))
    out = {}
    for p in ("post", "pre"):
        norms, sens = data[p]
        art[f"s_{p}"].set_ydata(np.clip(sens, *SENS_LIM))
        art[f"n_{p}"].set_ydata(np.clip(norms, *NORM_LIM))
        art[f"sm_{p}"].set_data([depth], [np.clip(sens[depth - 1], *SENS_LIM)])
        art[f"nm_{p}"].set_data([depth], [np.clip(norms[depth - 1], *NORM_LIM)])
        out[f"{p}-norm at depth {depth}"] = f"|out| {norms[depth - 1]:.4g}, sensitivity {sens[depth - 1]:.4g}"
    art["vline_s"].set_xdata([depth, depth])
    art["vline_n"].set_xdata([depth, depth])
    ratio = data["pre"][1][depth - 1] / data["post"][1][depth - 1]
    out["pre / post sensitivity"] = f"{ratio:.4g}"
    if min(data["post"][1].min(), data["pre"][1].min()) < SENS_LIM[0]:
        out["note"] = f"values below {SENS_LIM[0]:g} are drawn at the bottom edge; the readouts are exact"
    return out


def entries() -> list:
    """The catalog entries of section 23.7."""
    return [
        Explorable(
            "pre_post_sensitivity",
            {
                "depth": Slider(1, MAX_DEPTH, 32, label="depth (layers)", steps=9),
                "gain": Slider(0.0, 1.5, 0.5, step=0.05, label="sublayer gain a in F(v)=a v+b", steps=7),
                "bias": Slider(-0.5, 0.5, 0.1, step=0.05, label="sublayer bias b", steps=5),
                "final_norm": Choice([False, True], False, label="final RMSNorm after the stack",
                                     labels=["off", "on"]),
            },
            _setup,
            _update,
            title="Pre-norm vs post-norm: how much of the input still reaches the output",
            alt=lambda depth, gain, bias, final_norm: (
                f"Two log-log panels against depth 1 to {MAX_DEPTH}, sublayer F(v)={gain:g}v+{bias:g}, "
                f"final norm {'on' if final_norm else 'off'}. Left: sensitivity of the output to the first "
                "input component for post-norm and pre-norm. Right: output norm. A dashed line marks depth "
                f"{depth}."),
        )
    ]
