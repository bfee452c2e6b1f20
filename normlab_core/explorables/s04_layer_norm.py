"""Section 23.4 explorables: LayerNorm's input, epsilon, gamma and beta; where epsilon stops being negligible."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from ..examples import CHAPTER_SHAPE
from ..explore import Explorable, Slider
from ..norms import layer_norm
from ..stats import mean_var
from ..style import COLORS, label

# The chapter's vector [100, 102, 98, 101, 99, 103] is 100.5 + this shape.
SHAPE = CHAPTER_SHAPE
UNIT_SHAPE = SHAPE / SHAPE.std()          # the same shape with standard deviation 1
OUT_LIM = 5.0
IN_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)   # input panel ticks, as fractions of its current axis limit


def _nice_limit(span: float) -> float:
    """Smallest of 1, 2, 5 times a power of ten that is at least 1.15 * span (1 for span 0)."""
    if span <= 0:
        return 1.0
    target = 1.15 * span
    base = 10.0 ** math.floor(math.log10(target))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= target)


def _setup(fig):
    ax_in, ax_out = fig.subplots(1, 2)
    idx = np.arange(SHAPE.size)
    # The input panel keeps fixed limits [-1, 1] (a limit change would force a slow full redraw) and
    # draws the deviations divided by a "nice" axis limit; its tick labels are animated texts that
    # show the real values.  The real tick labels are kept as invisible placeholders that reserve space.
    ax_in.set_ylim(-1.0, 1.0)
    ax_in.set_yticks(IN_TICKS, labels=["-0.00025"] * len(IN_TICKS), color="none")
    tick_texts = [ax_in.text(-0.015, t, "", transform=ax_in.get_yaxis_transform(), ha="right", va="center",
                             fontsize=8) for t in IN_TICKS]
    (line_in,) = ax_in.plot(idx, SHAPE, "o-", color=COLORS["input"])
    ax_in.axhline(0, color="0.6", lw=0.8)
    stats_in = ax_in.text(0.02, 0.96, "", transform=ax_in.transAxes, va="top", fontsize=8)
    (line_out,) = ax_out.plot(idx, SHAPE, "o-", color=COLORS["layer_norm"], label="LayerNorm(x)")
    (band_hi,) = ax_out.plot([-0.3, 5.3], [1, 1], "--", color="0.45", lw=1, label="beta ± gamma")
    (band_lo,) = ax_out.plot([-0.3, 5.3], [-1, -1], "--", color="0.45", lw=1)
    label(ax_in, "component index i", "x_i - mean(x)  (input units)", "Input: deviations from its own mean")
    label(ax_out, "component index i", "y_i  (dimensionless)", "Output: spread gamma around beta")
    ax_out.set_ylim(-OUT_LIM, OUT_LIM)
    ax_out.legend(loc="upper right")
    for ax in (ax_in, ax_out):
        ax.set_xticks(idx)
        ax.set_xlim(-0.3, 5.3)
    note = ax_out.text(0.02, 0.04, "", transform=ax_out.transAxes, fontsize=8, color="#B00020")
    return {"line_in": line_in, "line_out": line_out, "note": note, "stats_in": stats_in,
            "band_hi": band_hi, "band_lo": band_lo, "ticks": tick_texts,
            "animated": [line_in, stats_in, line_out, band_hi, band_lo, note, *tick_texts]}


def _update(art, offset, scale, eps, gamma, beta):
    x = offset + scale * SHAPE
    mean, var = mean_var(x)
    lim = _nice_limit(float(np.max(np.abs(x - mean))))
    for text, t in zip(art["ticks"], IN_TICKS, strict=True):
        text.set_text(f"{t * lim:g}")
    art["line_in"].set_ydata((x - mean) / lim)
    art["stats_in"].set_text(f"mean(x) = {mean:.6g}\nstd(x) = {math.sqrt(var):.4g}")
    art["band_hi"].set_ydata([beta + gamma] * 2)
    art["band_lo"].set_ydata([beta - gamma] * 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = layer_norm(x, np.full(SHAPE.size, gamma), np.full(SHAPE.size, beta), eps=eps)
    if caught:  # only the 0/0 case warns
        art["line_out"].set_ydata(np.full(SHAPE.size, np.nan))
        art["note"].set_text("variance 0 and eps 0: every output is 0/0 = NaN (nothing to draw)")
        out = "NaN: every component is 0/0 (zero variance and no epsilon)"
        ratio = "undefined (0/0)"
    else:
        art["line_out"].set_ydata(np.clip(y, -OUT_LIM, OUT_LIM))
        y_mean, y_var = mean_var(y)
        out = f"mean {y_mean:+.6f}, variance {y_var:.6g}"
        r = var / (var + eps)
        ratio = f"{r:.6g}"
        if var == 0:
            art["note"].set_text("constant input: x - mean is 0, so every output is beta")
        elif gamma == 0:
            art["note"].set_text("gamma = 0: the scale is switched off, every output is beta")
        elif r < 0.5:
            art["note"].set_text("var < eps: epsilon, not the data, sets the scale")
        else:
            art["note"].set_text("")
    return {
        "input": f"mean {mean:.6g}, variance {var:.4g}, std {math.sqrt(var):.4g}",
        "output": out,
        "var / (var + eps)": f"{ratio}  (the output variance divided by gamma²; 1 means epsilon is negligible)",
    }


# -- output spread against input spread ----------------------------------------------------------
SPREADS = np.logspace(-6, 2, 161)
EPS_FAMILY = (1e-8, 1e-5, 1e-2, 1.0)
SPREAD_YLIM = (1e-7, 3.0)


@lru_cache(maxsize=64)
def spread_curve(eps: float) -> np.ndarray:
    """Output standard deviation of LayerNorm (gamma 1, beta 0) for inputs of std SPREADS, float64."""
    rows = 100.5 + SPREADS[:, None] * UNIT_SHAPE[None, :]
    return np.sqrt(mean_var(layer_norm(rows, eps=eps))[1])


def _setup_spread(fig):
    ax = fig.subplots()
    for e in EPS_FAMILY:
        ax.plot(SPREADS, spread_curve(e), color=COLORS["layer_norm"], alpha=0.25, lw=1.2)
        x0 = 1.6 * SPREADS[0]  # label each faint line near the left edge, just above it
        ax.text(x0, 2.2 * x0 / math.sqrt(e), f"eps={e:g}", fontsize=7, color="0.35", rotation=22)
    (cur,) = ax.plot(SPREADS, spread_curve(1e-5), color=COLORS["layer_norm"], lw=2.4, label="current epsilon")
    (dot,) = ax.plot([1.0], [1.0], "o", color=COLORS["marker"], ms=6, label="current input spread")
    vline = ax.axvline(1e-3, color=COLORS["rms_norm"], ls="--", lw=1, label="input std = sqrt(eps)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(SPREADS[0], SPREADS[-1])
    ax.set_ylim(*SPREAD_YLIM)
    label(ax, "input standard deviation  (input units)", "output standard deviation  (dimensionless)",
          "Output spread is 1 until the input's std falls to about sqrt(eps), then it falls with it")
    ax.legend(loc="lower right")
    return {"cur": cur, "dot": dot, "vline": vline, "animated": [cur, dot, vline]}


def _update_spread(art, spread, eps):
    art["cur"].set_ydata(np.clip(spread_curve(eps), *SPREAD_YLIM))
    x = 100.5 + spread * UNIT_SHAPE
    out_std = math.sqrt(float(mean_var(layer_norm(x, eps=eps))[1]))
    art["dot"].set_data([spread], [max(out_std, SPREAD_YLIM[0])])
    root = math.sqrt(eps)
    art["vline"].set_xdata([max(root, SPREADS[0] / 10)] * 2)
    formula = spread / math.sqrt(spread**2 + eps)
    out = {
        "output std (LayerNorm, float64)": f"{out_std:.6g}",
        "formula s / sqrt(s² + eps)": f"{formula:.6g}",
        "sqrt(eps)": f"{root:.3g}" + ("  (eps = 0: the output std is 1 for every input with any spread)"
                                       if eps == 0 else ""),
    }
    if spread < SPREADS[0] * 1.0001 and eps == 0:
        out["note"] = "with eps = 0 even this tiny spread is blown up to std 1"
    return out


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
                f"Two panels. Left: the six input values x = {offset:g} + {scale:g} * shape, drawn as "
                f"deviations from their mean. Right: their LayerNorm with eps={eps:g}, gamma={gamma:g}, "
                f"beta={beta:g}, on a fixed axis from -5 to 5, with dashed lines at beta plus and minus gamma."),
        ),
        Explorable(
            "layer_norm_spread",
            {
                "spread": Slider(1e-6, 100.0, 1.708, scale="log", label="input standard deviation", steps=9),
                "eps": Slider(1e-8, 1.0, 1e-5, scale="log", zero=True, label="epsilon", steps=9),
            },
            _setup_spread,
            _update_spread,
            title="Where epsilon stops being negligible: output spread against input spread",
            alt=lambda spread, eps: (
                "Log-log plot of LayerNorm's output standard deviation against the input's standard deviation "
                "(1e-6 to 100) for epsilon 1e-8, 1e-5, 1e-2 and 1 (faint) and the current epsilon "
                f"{eps:g} (bold). Each curve is flat at 1 for large inputs and bends down near input std "
                f"sqrt(eps), marked by a dashed line. A dot marks input std {spread:g}."),
        ),
    ]
