"""Section 23.4 explorables: LayerNorm's input, epsilon, gamma and beta; where epsilon stops being negligible."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from ..controls import Preset
from ..examples import CHAPTER_SHAPE
from ..explore import Explorable, Slider
from ..norms import layer_norm
from ..stats import mean_var
from ..style import COLORS, label

# The reference text's vector [100, 102, 98, 101, 99, 103] is 100.5 + this shape.
SHAPE = CHAPTER_SHAPE
UNIT_SHAPE = SHAPE / SHAPE.std()          # the same shape with standard deviation 1
OUT_LIM = 5.0
REF_OFFSET = 100.5                       # the mean of the reference vector
DEFAULT_EPS = 1e-5
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
    for t in (*tick_texts, stats_in, note):   # texts that change never move the axes (one layout for all states)
        t.set_in_layout(False)
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
        art["note"].set_text("variance 0 and eps 0:\nevery output is 0/0 = NaN (nothing to draw)")
        out = "NaN: every component is 0/0 (zero variance and no epsilon)"
        ratio = "undefined (0/0)"
    else:
        art["line_out"].set_ydata(np.clip(y, -OUT_LIM, OUT_LIM))
        y_mean, y_var = mean_var(y)
        out = f"mean {y_mean:+.6f}, variance {y_var:.6g}"
        r = var / (var + eps)
        ratio = f"{r:.6g}  (1 would mean epsilon is negligible; epsilon's share is {eps / (var + eps):.2g})"
        if var == 0:
            art["note"].set_text("constant input: x - mean is 0,\nso every output is beta")
        elif gamma == 0:
            art["note"].set_text("gamma = 0: the scale is switched off,\nevery output is beta")
        elif r < 0.5:
            art["note"].set_text("var < eps: epsilon, not the data,\nsets the scale")
        else:
            art["note"].set_text("")
    divisor = math.sqrt(var + eps)
    return {
        "input": f"mean {mean:.6g}, variance {var:.4g}, std {math.sqrt(var):.4g}",
        "divisor sqrt(var + eps)": (f"{divisor:.4g}" if divisor > 0 else "0: the deviations (all 0) are divided by 0"),
        "var / (var + eps)": ratio,
        "output": out,
    }


def _update_eps(art, scale, eps):
    return _update(art, REF_OFFSET, scale, eps, 1.0, 0.0)


def _update_affine(art, offset, gamma, beta):
    return _update(art, offset, 1.0, DEFAULT_EPS, gamma, beta)


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
    (dot,) = ax.plot([1.0], [1.0], "o", color=COLORS["marker"], ms=6, label="current input spread", clip_on=False,
                     in_layout=False)
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
    return {
        "output std (LayerNorm, float64)": f"{out_std:.6g}",
        "formula s / sqrt(s² + eps)": f"{formula:.6g}",
        "sqrt(eps)": f"{root:.3g}" + ("  (eps = 0: any spread at all, however tiny, is blown up to std 1)"
                                       if eps == 0 else ""),
    }


EPS_STOPS = [0.0, 1e-8, 1e-5, 1e-2, 1.0]        # every third decade: the faint curves of layer_norm_spread
SCALE_STOPS = [0.0, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0]
OFFSET_STOPS = [-100.0, 0.0, 100.5, 200.0]
GAMMA_STOPS = [0.0, 0.5, 1.0, 1.5, 2.0]
BETA_STOPS = [-2.0, -1.0, 0.0, 1.0, 2.0]
SPREAD_STOPS = [1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 1.708, 10.0, 100.0]

EPS_PRESETS = {
    "scale 0, epsilon 0": Preset({"scale": 0.0, "eps": 0.0}, (
        "all six inputs are equal, so every output is 0/0: NaN, and nothing is drawn")),
    "scale 0, epsilon 1e-8": Preset({"scale": 0.0, "eps": 1e-8}, (
        "one stop of epsilon is enough: the deviations (all 0) are divided by sqrt(eps) instead of 0, and "
        "every output is beta")),
    "epsilon 1": Preset({"eps": 1.0}, (
        "at scale 1 the variance is 2.917, so var / (var + eps) drops to 0.7447 and the output shrinks inside "
        "the dashed beta ± gamma lines")),
    "scale 0.001": Preset({"scale": 1e-3}, (
        "the variance is now 2.9e-6, below the default epsilon 1e-5: the ratio falls to 0.2258 and the "
        "output's spread collapses")),
    "scale 0.001, epsilon 1e-8": Preset({"scale": 1e-3, "eps": 1e-8}, (
        "the same small input with a much smaller epsilon is normalized to full spread again: whether "
        "epsilon matters depends on the input's variance")),
}

AFFINE_PRESETS = {
    "offset -100": Preset({"offset": -100.0}, (
        "the input panel's deviations and the output are exactly as at offset 100.5; only the printed mean "
        "changed: LayerNorm cannot see an offset")),
    "offset 200": Preset({"offset": 200.0}, "the same again at the other end of the range"),
    "gamma 2": Preset({"gamma": 2.0}, (
        "the shape stays and its spread doubles: the output variance is gamma² = 4 (times a ratio that "
        "epsilon keeps a hair under 1)")),
    "gamma 0.5, beta 1": Preset({"gamma": 0.5, "beta": 1.0}, (
        "gamma sets the spread and beta the centre: the output now sits between the dashed lines at 0.5 and "
        "1.5")),
    "gamma 0": Preset({"gamma": 0.0}, "gamma 0 switches the scale off: every output is beta"),
}

SPREAD_PRESETS = {
    "epsilon 0.01": Preset({"eps": 1e-2}, (
        "the reference vector's spread (std 1.708, variance 2.917) is far above epsilon: the dot stays at "
        "0.9983")),
    "epsilon 1": Preset({"eps": 1.0}, (
        "once epsilon is comparable with the input's variance the dot leaves the plateau: 0.8630")),
    "spread 0.01": Preset({"spread": 0.01}, (
        "at the default epsilon 1e-5 the dashed line sits at sqrt(eps) = 0.00316; a spread three times "
        "larger is still close to the plateau (0.9535)")),
    "spread 0.001": Preset({"spread": 1e-3}, (
        "below the dashed line the output spread falls: 0.3015")),
    "spread 1e-5": Preset({"spread": 1e-5}, (
        "far below sqrt(eps) the curve falls with slope 1: output std 0.003162, about a hundred times less "
        "than at spread 0.001, for a hundred times less input spread")),
    "epsilon 0, spread 1e-6": Preset({"eps": 0.0, "spread": 1e-6}, (
        "without epsilon the curve is flat at 1 everywhere, so even a wobble of 1e-6 is blown up to unit "
        "spread: the amplification of noise epsilon also protects against")),
}

_ALT_IN = ("Two panels. Left: the six input values x = {offset:g} + {scale:g} * shape, drawn as deviations from "
           "their mean. Right: their LayerNorm with eps={eps:g}, gamma={gamma:g}, beta={beta:g}, on a fixed axis "
           "from -5 to 5, with dashed lines at beta plus and minus gamma.")


def entries() -> list:
    """The catalog entries of section 23.4."""
    return [
        Explorable(
            "layer_norm_eps",
            {
                "scale": Slider(1e-4, 10.0, 1.0, scale="log", zero=True, label="scale (spread of x)",
                                stops=SCALE_STOPS),
                "eps": Slider(1e-8, 1.0, DEFAULT_EPS, scale="log", zero=True, label="epsilon", stops=EPS_STOPS),
            },
            _setup,
            _update_eps,
            title="LayerNorm's epsilon: shrink the input's spread and change epsilon",
            alt=lambda scale, eps: _ALT_IN.format(offset=REF_OFFSET, scale=scale, eps=eps, gamma=1.0, beta=0.0),
            presets=EPS_PRESETS,
        ),
        Explorable(
            "layer_norm_affine",
            {
                "offset": Slider(-100.0, 200.0, REF_OFFSET, label="offset (mean of x)", stops=OFFSET_STOPS),
                "gamma": Slider(0.0, 2.0, 1.0, label="gamma", stops=GAMMA_STOPS),
                "beta": Slider(-2.0, 2.0, 0.0, label="beta", stops=BETA_STOPS),
            },
            _setup,
            _update_affine,
            title="LayerNorm ignores the offset; gamma and beta set the output's spread and centre",
            alt=lambda offset, gamma, beta: _ALT_IN.format(offset=offset, scale=1.0, eps=DEFAULT_EPS, gamma=gamma,
                                                           beta=beta),
            presets=AFFINE_PRESETS,
        ),
        Explorable(
            "layer_norm_spread",
            {
                "spread": Slider(1e-6, 100.0, 1.708, scale="log", label="input standard deviation",
                                 stops=SPREAD_STOPS),
                "eps": Slider(1e-8, 1.0, DEFAULT_EPS, scale="log", zero=True, label="epsilon", stops=EPS_STOPS),
            },
            _setup_spread,
            _update_spread,
            title="Where epsilon stops being negligible: output spread against input spread",
            alt=lambda spread, eps: (
                "Log-log plot of LayerNorm's output standard deviation against the input's standard deviation "
                "(1e-6 to 100) for epsilon 1e-8, 1e-5, 1e-2 and 1 (faint) and the current epsilon "
                f"{eps:g} (bold). Each curve is flat at 1 for large inputs and bends down near input std "
                f"sqrt(eps), marked by a dashed line. A dot marks input std {spread:g}."),
            presets=SPREAD_PRESETS,
        ),
    ]
