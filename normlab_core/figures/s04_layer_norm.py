"""Section 23.4: LayerNorm's input, epsilon, gamma and beta; where epsilon stops being negligible."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..examples import VECTOR_A
from ..formatting import number
from ..interactive import Explorable, Preset, Slider, scalar, vector
from ..norms import layer_norm, row_scale
from ..stats import mean_var
from .style import COLORS, NARROW_IN, index_ticks, label, panels, text_yticks, value_formatter

OUT_LIM = 5.0
# The input panel's ticks, in units of its limit: its limits stay at -1 and 1 and its tick labels are texts drawn with
# the data, so a new input spread changes data only (the panel is not drawn again in full).
TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)
WIDEST_TICK = "\N{MINUS SIGN}0.00025"   # the room kept left of the panel for them (the widest label)


def nice_limit(span: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least 1.15 * span (1 for span 0)."""
    if span <= 0:
        return 1.0
    base = 10.0 ** math.floor(math.log10(1.15 * span))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= 1.15 * span)


RAW_LIM = 250.0   # the raw panel's fixed axis, -250 to 250: it holds every offset stop with its deviations


def setup(fig, *, narrow, x, eps=None, raw=False):
    """The input's deviations and its LayerNorm; raw=True adds, first, the raw values on a fixed axis."""
    ax_raw, ax_in, ax_out = panels(fig, narrow, 3, [0.55, 1, 1]) if raw else (None, *panels(fig, narrow))
    idx = np.arange(x.size)
    (line_in,) = ax_in.plot(idx, (x - x.mean()) * 0, "o-", color=COLORS["input"])
    ax_in.axhline(0, color="0.6", lw=0.8)
    ticks = text_yticks(ax_in, TICKS, WIDEST_TICK)
    stats_in = ax_in.text(0.02, 0.96, "", transform=ax_in.transAxes, va="top")
    (line_out,) = ax_out.plot(idx, x - x.mean(), "o-", color=COLORS["layer_norm"], label="LayerNorm(x)")
    (band_hi,) = ax_out.plot([-0.3, x.size - 0.7], [1, 1], "--", color="0.45", lw=1, label=r"$\beta \pm \gamma$")
    (band_lo,) = ax_out.plot([-0.3, x.size - 0.7], [-1, -1], "--", color="0.45", lw=1)
    label(ax_in, "component index i", r"$x_i - \bar{x}$ (input units)", "Input: deviations from its mean")
    label(ax_out, "component index i", r"$y_i$", r"Output: spread $\gamma$ around $\beta$")
    ax_out.set_ylim(-OUT_LIM, OUT_LIM)
    for ax in (ax_in, ax_out):
        index_ticks(ax, x.size)
        ax.set_xlim(-0.3, x.size - 0.7)
    note = ax_out.text(0.02, 0.04, "", transform=ax_out.transAxes, fontsize=8, color=COLORS["warning"])
    raw_dots = ax_raw and raw_panel(ax_raw, x)
    return {"ax_in": ax_in, "ax_out": ax_out, "line_in": line_in, "line_out": line_out, "note": note,
            "stats_in": stats_in, "band_hi": band_hi, "band_lo": band_lo, "ticks": ticks, "raw_dots": raw_dots}


TICK_LABEL = value_formatter()   # plain numbers: no SI prefix


def raw_panel(ax, x):
    """The raw values x_i on a fixed axis through 0: the offset moves them up and down it."""
    ax.set_ylim(-RAW_LIM, RAW_LIM)
    ax.axhline(0, color="0.6", lw=0.8)
    ax.yaxis.set_major_formatter(value_formatter())
    index_ticks(ax, x.size)
    ax.set_xlim(-0.5, x.size - 0.5)
    label(ax, "index i", r"$x_i$ (input units)", "Raw input")
    (dots,) = ax.plot(np.arange(x.size), x, "o", color=COLORS["input"], ms=4)
    return dots


def affine_setup(fig, *, narrow, x, eps):
    return setup(fig, narrow=narrow, x=x, eps=eps, raw=True)


def draw(art, x, eps, gamma, beta):
    """Draw input x and its LayerNorm; the readouts and what the output shows."""
    mean, var = (float(v) for v in mean_var(x))
    lim = nice_limit(float(np.max(np.abs(x - mean))))
    art["line_in"].set_ydata((x - mean) / lim)   # the panel runs from -lim to lim: its ticks say so
    for text, t in zip(art["ticks"], TICKS, strict=True):
        text.set_text(TICK_LABEL(t * lim, None))
    art["stats_in"].set_text(f"mean(x) = {number(mean, 6)}\nstd(x) = {number(math.sqrt(var))}")
    art["band_hi"].set_ydata([beta + gamma] * 2)
    art["band_lo"].set_ydata([beta - gamma] * 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = layer_norm(x, np.full(x.size, gamma), np.full(x.size, beta), eps=eps)
    ratio = var / (var + eps) if var + eps > 0 else math.nan
    if caught:  # only the 0/0 case warns
        art["line_out"].set_ydata(np.full(x.size, np.nan))
        note, out = "variance 0 and eps 0:\nevery output is 0/0 = NaN\n(nothing to draw)", "NaN: every component is 0/0"
        shows = "every output is NaN (0/0), so nothing is drawn on the right"
    else:
        art["line_out"].set_ydata(np.clip(y, -OUT_LIM, OUT_LIM))
        y_mean, y_var = mean_var(y)
        out = f"mean {float(y_mean):+.6f}, variance {number(y_var, 6)}"
        note = ("constant input:\nx - mean is 0, so\nevery output is beta" if var == 0 else
                "gamma = 0: the scale\nis switched off, so\nevery output is beta" if gamma == 0 else
                "var < eps: epsilon,\nnot the data,\nsets the scale" if ratio < 0.5 else
                "outputs beyond ±5 are drawn on the edge" if np.abs(y).max() > OUT_LIM else "")
        shows = (f"the output has mean {number(y_mean, 3)} and standard deviation {number(math.sqrt(y_var), 3)}, "
                 f"{number(math.sqrt(ratio), 3)} of gamma" if gamma and var else f"every output is {number(beta)}")
    art["note"].set_text(note)
    drawn = [art["band_hi"]] if caught else [art["line_out"], art["band_hi"]]   # the legend lists what is drawn
    if art.get("legend") != len(drawn):   # (built again only when it changes)
        art["legend"] = len(drawn)
        art["ax_out"].legend(handles=drawn, loc="upper right")
    divisor = math.sqrt(var + eps)
    return {
        "input": f"mean {number(mean, 6)}, variance {number(var)}, std {number(math.sqrt(var))}",
        "divisor sqrt(var + eps)": number(divisor) if divisor > 0 else "0: the deviations (all 0) are divided by 0",
        "var / (var + eps)": (f"{number(ratio, 6)} (1 would mean epsilon is negligible; epsilon's share is "
                              f"{number(eps / (var + eps), 2)})") if var + eps > 0 else "undefined (0/0)",
        "output": out,
    }, shows


def _alt(x, eps, gamma, beta, shows, raw=False) -> str:
    first = (f"Three panels. Left: the {x.size} raw input values on a fixed axis from -250 to 250. Middle: the same"
             if raw else f"Two panels. Left: the {x.size}")
    return (f"{first} input values, mean {number(x.mean(), 6)} and standard deviation "
            f"{number(x.std())}, drawn as deviations from their mean. Right: their LayerNorm with epsilon "
            f"{number(eps)}, gamma {number(gamma)} and beta {number(beta)} on a fixed axis from -5 to 5, with dashed "
            f"lines at beta ± gamma: {shows}.")


def update_eps(art, *, scale, eps, x):
    v = x.mean() + scale * (x - x.mean())
    out, shows = draw(art, v, eps, 1.0, 0.0)
    return out, _alt(v, eps, 1.0, 0.0, shows)


def update_affine(art, *, offset, gamma, beta, x, eps):
    v = offset + (x - x.mean())
    out, shows = draw(art, v, eps, gamma, beta)
    art["raw_dots"].set_ydata(v)
    return out, _alt(v, eps, gamma, beta, shows, raw=True)


# -- output spread against input spread -------------------------------------------------------------------------
SPREADS = np.logspace(-6, 2, 161)
EPS_FAMILY = (1e-8, 1e-5, 1e-2, 1.0)
SPREAD_YLIM = (1e-7, 3.0)


def unit_shape(x) -> np.ndarray:
    """x's deviations from its mean scaled to standard deviation 1; a constant x has no shape of its own, so it
    gets the pattern +1, -1, +1, ... (also of std 1 for an even length, close to 1 otherwise)."""
    if not np.ptp(x) > 0:      # (not x.std(): the mean of equal numbers may round, leaving a std of 1e-16)
        return np.resize([1.0, -1.0], x.size)
    x = x / row_scale(x, 0.0)  # a power of two, 1 but for entries whose squares underflow (1e-300): exact
    return (x - x.mean()) / x.std()


def spread_curve(x, eps: float) -> np.ndarray:
    """Output standard deviation of LayerNorm (gamma 1, beta 0) for inputs shaped like x with std SPREADS."""
    shape = unit_shape(x)
    return np.sqrt(mean_var(layer_norm(x.mean() + SPREADS[:, None] * shape[None, :], eps=eps))[1])


def spread_setup(fig, *, narrow, x):
    ax = fig.subplots()
    for e in EPS_FAMILY:
        ax.plot(SPREADS, spread_curve(x, e), color=COLORS["layer_norm"], alpha=0.25, lw=1.2)
        ax.text(1.6e-6, 3.5e-6 / math.sqrt(e), rf"$\varepsilon = 10^{{{round(math.log10(e))}}}$", fontsize=8,
                color="0.35", rotation=20 if narrow else 12)
    (cur,) = ax.plot(SPREADS, SPREADS, color=COLORS["layer_norm"], lw=2.4, label="this epsilon")
    (dot,) = ax.plot([1.0], [1.0], "o", color=COLORS["marker"], ms=6, label="this input spread", clip_on=False)
    vline = ax.axvline(1e-3, color=COLORS["rms_norm"], ls="--", lw=1, label=r"input std = $\sqrt{\varepsilon}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(SPREADS[0], SPREADS[-1])
    ax.set_ylim(*SPREAD_YLIM)
    label(ax, "input standard deviation (input units)", "output standard deviation",
          r"Output std: 1 down to input std $\approx\sqrt{\varepsilon}$" if narrow else
          r"Output spread is 1 until the input's std falls to about $\sqrt{\varepsilon}$, then it falls with it")
    return {"ax": ax, "cur": cur, "dot": dot, "vline": vline, "x": x}


def spread_update(art, *, spread, eps, x):
    art["cur"].set_ydata(np.clip(spread_curve(x, eps), *SPREAD_YLIM))
    shape = unit_shape(x)
    out_std = math.sqrt(float(mean_var(layer_norm(x.mean() + spread * shape, eps=eps))[1]))
    art["dot"].set_data([spread], [max(out_std, SPREAD_YLIM[0])])
    root = math.sqrt(eps)
    art["vline"].set_xdata([root] * 2 if eps else [np.nan] * 2)
    drawn = [art["cur"], art["dot"]] + ([art["vline"]] if eps else [])   # the legend lists what is drawn
    art["ax"].legend(handles=drawn, loc="lower right")
    formula = spread / math.sqrt(spread ** 2 + eps)
    out = {
        "output std (LayerNorm, float64)": number(out_std, 6),
        "formula s / sqrt(s² + eps)": number(formula, 6),
        "sqrt(eps)": number(root, 3) + ("  (eps = 0: any spread, however tiny, is blown up to std 1)" if eps == 0
                                        else ""),
    }
    if not np.ptp(x) > 0:
        out["your x"] = ("constant: it has no spread or shape of its own, so the curves scale the pattern +1, -1, "
                         "+1, ... instead")
    where = "above" if spread > root else "below"
    alt = (f"Log-log plot of LayerNorm's output standard deviation against the input's standard deviation (1e-6 to "
           f"100) for epsilon 1e-8, 1e-5, 1e-2 and 1 (faint) and epsilon {number(eps)} (bold). At input std "
           f"{number(spread)}, {where} sqrt(eps) = {number(root, 3)}, the output std is {number(out_std, 4)}.")
    return out, alt


EPS_STOPS = [0.0, 1e-8, 1e-5, 1e-2, 1.0]        # every third decade: the faint curves of layer_norm_spread

EPS_PRESETS = {
    "scale 0, epsilon 0": Preset({"scale": 0.0, "eps": 0.0}, (
        "all six inputs are equal, so every output is 0/0: NaN, and nothing is drawn"), about_default=True),
    "scale 0, epsilon 1e-8": Preset({"scale": 0.0, "eps": 1e-8}, (
        "one stop of epsilon is enough: the deviations (all 0) are divided by sqrt(eps) instead of 0, and "
        "every output is beta"), about_default=True),
    "epsilon 1": Preset({"eps": 1.0}, (
        "at scale 1 the variance is 2.917, so var / (var + eps) drops to 0.744681 and the output shrinks inside "
        "the dashed beta ± gamma lines"), about_default=True),
    "scale 0.001": Preset({"scale": 1e-3}, (
        "the variance is now 2.917e-6, below the default epsilon 1e-5: the ratio falls to 0.225806 and the "
        "output's spread collapses"), about_default=True),
    "scale 0.001, epsilon 1e-8": Preset({"scale": 1e-3, "eps": 1e-8}, (
        "the same small input with a much smaller epsilon is normalized to full spread again: whether "
        "epsilon matters depends on the input's variance")),
}

AFFINE_PRESETS = {
    "offset -100": Preset({"offset": -100.0}, (
        "the raw input (first panel) drops below 0, yet its deviations and the output are exactly as at "
        "offset 100.5: LayerNorm cannot see an offset"), about_default=True),
    "offset 200": Preset({"offset": 200.0}, (
        "the raw input (first panel) climbs to 200; its deviations and the output do not move")),
    "gamma 2": Preset({"gamma": 2.0}, (
        "the shape stays and its spread doubles: the output variance is gamma² = 4 (times a ratio that "
        "epsilon keeps a hair under 1)"), about_default=True),
    "gamma 0.5, beta 1": Preset({"gamma": 0.5, "beta": 1.0}, (
        "gamma sets the spread and beta the centre: the output now sits between the dashed lines at 0.5 and "
        "1.5"), about_default=True),
    "gamma 0": Preset({"gamma": 0.0}, "gamma 0 switches the scale off: every output is beta", about_default=True),
}

SPREAD_PRESETS = {
    "epsilon 0.01": Preset({"eps": 1e-2}, (
        "the reference vector's spread (std 1.708, variance 2.917) is far above epsilon: the dot stays at "
        "0.99829"), about_default=True),
    "epsilon 1": Preset({"eps": 1.0}, (
        "once epsilon is comparable with the input's variance the dot leaves the plateau: 0.862971"),
        about_default=True),
    "spread 0.01": Preset({"spread": 0.01}, (
        "at the default epsilon 1e-5 the dashed line sits at sqrt(eps) = 0.00316; a spread three times "
        "larger is still close to the plateau (0.953463)"), about_default=True),
    "spread 0.001": Preset({"spread": 1e-3}, "below the dashed line the output spread falls: 0.301511",
        about_default=True),
    "spread 1e-5": Preset({"spread": 1e-5}, (
        "far below sqrt(eps) the curve falls with slope 1: output std 0.00316226, about a hundred times less "
        "than at spread 0.001, for a hundred times less input spread"), about_default=True),
    "epsilon 0, spread 1e-6": Preset({"eps": 0.0, "spread": 1e-6}, (
        "without epsilon the curve is flat at 1 everywhere, so even a wobble of 1e-6 is blown up to unit "
        "spread: the amplification of noise epsilon also protects against"), about_default=True),
}


def entries() -> list:
    """The explorables of section 23.4."""
    x = vector(VECTOR_A, 2, 64)
    eps = Slider(EPS_STOPS, 1e-5, label="epsilon", free=(0.0, 10.0))
    return [
        Explorable("layer_norm_eps", title="LayerNorm's epsilon: shrink the input's spread and change epsilon",
                   controls={"scale": Slider([0.0, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0], 1.0,
                                             label="scale (multiplies x's deviations)", free=(0.0, 100.0)),
                             "eps": eps},
                   inputs={"x": x}, setup=setup, update=update_eps, presets=EPS_PRESETS, narrow=(NARROW_IN, 5.4)),
        Explorable("layer_norm_affine", title="LayerNorm ignores the offset; gamma and beta set the output's "
                   "spread and centre",
                   controls={"offset": Slider([-100.0, 0.0, 100.5, 200.0], 100.5, label="offset (the mean of x)",
                                              free=(-1e4, 1e4)),
                             "gamma": Slider([0.0, 0.5, 1.0, 1.5, 2.0], 1.0, label="gamma", free=(-5.0, 5.0)),
                             "beta": Slider([-2.0, -1.0, 0.0, 1.0, 2.0], 0.0, label="beta", free=(-5.0, 5.0))},
                   inputs={"x": x, "eps": scalar(1e-5, 0.0, 10.0)}, start=lambda x, eps: {"offset": float(x.mean())},
                   setup=affine_setup, update=update_affine, presets=AFFINE_PRESETS, narrow=(NARROW_IN, 7.4)),
        Explorable("layer_norm_spread", title="Where epsilon stops being negligible: output spread against input "
                   "spread",
                   controls={"spread": Slider([1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 1.708, 10.0, 100.0], 1.708,
                                              label="input standard deviation", free=(1e-6, 100.0)),
                             "eps": eps},
                   inputs={"x": x}, setup=spread_setup,
                   start=lambda x: {"spread": min(max(float(x.std()), 1e-6), 100.0)},   # (a constant x: 1e-6)
                   update=spread_update, presets=SPREAD_PRESETS,
                   narrow=(NARROW_IN, 4.2)),
    ]
