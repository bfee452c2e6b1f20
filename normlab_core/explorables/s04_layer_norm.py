"""Section 23.4 explorables: LayerNorm's input, epsilon, gamma and beta."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..explore import Explorable, Slider
from ..norms import layer_norm
from ..stats import mean_var
from ..style import COLORS, label

# The chapter's vector [100, 102, 98, 101, 99, 103] is 100.5 + this shape.
SHAPE = np.array([-0.5, 1.5, -2.5, 0.5, -1.5, 2.5])


def _setup(fig):
    ax_in, ax_out = fig.subplots(1, 2)
    idx = np.arange(SHAPE.size)
    (line_in,) = ax_in.plot(idx, SHAPE, "o-", color=COLORS["input"], label="x - mean(x)")
    (line_out,) = ax_out.plot(idx, SHAPE, "o-", color=COLORS["layer_norm"], label="LayerNorm(x)")
    ax_out.axhline(0, color="0.6", lw=0.8)
    label(ax_in, "component index i", "x_i - mean(x) (input units)", "Input, centred for display")
    label(ax_out, "component index i", "y_i (dimensionless)", "Output: same shape, unit spread")
    ax_out.set_ylim(-5, 5)
    for ax in (ax_in, ax_out):
        ax.set_xticks(idx)
    note = ax_out.text(0.02, 0.04, "", transform=ax_out.transAxes, fontsize=8, color="#B00020")
    return {"ax_in": ax_in, "line_in": line_in, "line_out": line_out, "note": note,
            "animated": [line_in, line_out, note]}


def _update(art, offset, scale, eps, gamma, beta):
    x = offset + scale * SHAPE
    mean, var = mean_var(x)
    span = float(np.max(np.abs(x - mean)))
    lim = 10.0 ** math.ceil(math.log10(span)) if span > 0 else 1.0
    art["ax_in"].set_ylim(-lim, lim)
    art["line_in"].set_ydata(x - mean)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = layer_norm(x, np.full(SHAPE.size, gamma), np.full(SHAPE.size, beta), eps=eps)
    if caught:
        art["line_out"].set_ydata(np.zeros_like(y))
        art["note"].set_text("variance 0 and eps 0: output is 0/0 (NaN), drawn as 0")
        out = "NaN: every component is 0/0 (zero variance, no epsilon)"
    else:
        art["line_out"].set_ydata(np.clip(y, -5, 5))
        art["note"].set_text("")
        y_mean, y_var = mean_var(y)
        out = f"mean {y_mean:+.6f}, variance {y_var:.6f}"
    ratio = "inf (0/0)" if var + eps == 0 else f"{var / (var + eps):.6f}"
    return {
        "input": f"mean {mean:.4g}, variance {var:.4g}, std {math.sqrt(var):.4g}",
        "output": out,
        "var / (var + eps)": f"{ratio}  (1 means epsilon is negligible)",
    }


def entries() -> list:
    """The catalog entries of section 23.4."""
    return [
        Explorable(
            "layer_norm_eps",
            {
                "offset": Slider(-100.0, 200.0, 100.5, step=0.5, label="offset (mean of x)"),
                "scale": Slider(1e-4, 10.0, 1.0, scale="log", zero=True, label="scale (spread of x)"),
                "eps": Slider(1e-8, 1.0, 1e-5, scale="log", zero=True, label="epsilon"),
                "gamma": Slider(0.0, 2.0, 1.0, step=0.05, label="gamma"),
                "beta": Slider(-2.0, 2.0, 0.0, step=0.05, label="beta"),
            },
            _setup,
            _update,
            title="LayerNorm: move the input's offset and spread, epsilon, gamma and beta",
            alt=lambda offset, scale, eps, gamma, beta: (
                f"Two panels. Left: the six input values x = {offset:g} + {scale:g} * shape, centred. "
                f"Right: their LayerNorm with eps={eps:g}, gamma={gamma:g}, beta={beta:g}, on a fixed axis "
                "from -5 to 5."),
        )
    ]
