"""Section 23.3: one shape at any offset and scale; mean, std and the standardized values."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..examples import VECTOR_A
from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider, vector
from ..moments import one_pass_var, span_in_std
from ..norms import layer_norm
from ..stats import mean_var
from .style import COLORS, NARROW_IN, index_ticks, label, panels, text_yticks, title_tail, value_formatter, vector_label


def stored(offset: float, scale: float, dtype: str, x) -> np.ndarray:
    """offset + scale * (x - mean(x)), computed in float64 and stored in `dtype` (one rounding per value)."""
    return (offset + scale * (x - x.mean())).astype(dtype)


def standardize(x: np.ndarray) -> np.ndarray | None:
    """(x - mean) / std in x's dtype (LayerNorm with eps = 0, no gamma or beta); None when the variance is 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = layer_norm(x, eps=0.0)
    return z if np.all(np.isfinite(z)) else None


def half_height(scale: float, x) -> float:
    """Half-height of the raw panel: 1, 2 or 5 times a power of ten that holds the deviations."""
    if scale == 0:
        return 1.0     # every value is the same: nothing to show but the line at the mean
    half = 1.15 * scale * float(np.max(np.abs(x - x.mean())))
    if not half > 0:
        return 1.0     # a constant x: no deviation to hold
    decade = 10.0 ** math.floor(math.log10(half))
    return next(m * decade for m in (1, 2, 5, 10) if m * decade >= half * (1 - 1e-12))


TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)        # the deviations' ticks, in units of the panel's half-height
WIDEST_TICK = "\N{MINUS SIGN}0.00025"    # the room kept left of that panel for their labels (the widest one)
TICK_LABEL = value_formatter()            # plain numbers: no SI prefix
RAW_LIM = (-1e3, 1e6)   # the raw panel's fixed axis: every offset stop, in decades (symlog), and scale 100 at offset 0
RAW_LINEAR = 0.01        # below this size the raw axis is linear (it holds 0)


def raw_panel(ax, x):
    """The raw values x_i on a fixed axis in decades: the offset moves them up and down it."""
    ax.set_yscale("symlog", linthresh=RAW_LINEAR, linscale=0.5)
    ax.set_ylim(*RAW_LIM)
    ax.set_yticks([-1e3, 0, 1, 1e3, 1e6])
    ax.axhline(0, color="0.6", lw=0.8)
    index_ticks(ax, x.size)
    ax.set_xlim(-0.5, x.size - 0.5)
    label(ax, "index i", r"$x_i$ (input units)", "Raw values")
    (dots,) = ax.plot(np.arange(x.size), x, "o", color=COLORS["input"], ms=4, clip_on=True)
    return dots


def setup(fig, *, narrow, x):
    ax_raw, ax_x, ax_z = panels(fig, narrow, 3, [0.5, 1, 1])
    raw_dots = raw_panel(ax_raw, x)
    idx = np.arange(x.size)
    z = standardize(x)
    z = np.zeros(x.size) if z is None else z      # a constant x: 0/0, drawn at 0 (update says why)
    band = ax_x.axhspan(-1, 1, color=COLORS["input"], alpha=0.12, lw=0, label=r"mean $\pm$ 1 std")
    ax_x.axhline(0, color=COLORS["input"], lw=1, ls="--", label="mean")
    (raw,) = ax_x.plot(idx, x - x.mean(), "o-", color=COLORS["input"], label=r"$x_i - \bar{x}$")
    # the deviations are drawn in units of the panel's half-height, which follows the scale, and the tick labels are
    # texts that say so: a new scale changes data only (new limits would draw the whole figure again)
    ticks = text_yticks(ax_x, TICKS, WIDEST_TICK)
    mean_txt = ax_x.text(0.98, 0.03, "", transform=ax_x.transAxes, ha="right")
    ax_x.legend(loc="upper left", fontsize=8)
    label(ax_x, "component index i", r"$x_i - \bar{x}$ (input units)", "Deviations from the mean")
    art = {"narrow": narrow}
    lim = max(2.2, 1.15 * float(np.abs(z).max()))
    ax_z.axhspan(-1, 1, color=COLORS["layer_norm"], alpha=0.08, lw=0)
    ax_z.axhline(0, color="0.6", lw=0.8)
    ax_z.plot(idx, z, "x", color="0.2", ms=8, mew=1.5, label="exact shape (float64)", zorder=4)
    (std_pts,) = ax_z.plot(idx, z, "o-", color=COLORS["layer_norm"], label=r"$(x_i - \bar{x})\, /\, \sigma$")
    (span_bar,) = ax_z.plot([x.size - 0.35] * 2, [z.min(), z.max()], color="k", lw=1.2, marker="_", ms=10)
    span_txt = ax_z.text(x.size - 0.45, 0.0, "", ha="right", va="center")
    note = ax_z.text(0.02, 0.03, "", transform=ax_z.transAxes, fontsize=8, color=COLORS["warning"])
    ax_z.set_ylim(-lim, lim)
    ax_z.legend(loc="upper left", fontsize=8)
    label(ax_z, "component index i", "standardized value (std units)", "")
    shows = title_tail(ax_z, "Standardized:")   # what the points show follows it
    for ax in (ax_x, ax_z):
        index_ticks(ax, x.size)
        ax.set_xlim(-0.5, x.size - 0.1)
    return {**art, "ax_x": ax_x, "ax_z": ax_z, "band": band, "raw": raw, "mean_txt": mean_txt, "std_pts": std_pts,
            "span_bar": span_bar, "span_txt": span_txt, "note": note, "z": z,
            "raw_dots": raw_dots, "ticks": ticks, "shows": shows}


def update(art, *, offset, scale, dtype, x):
    v = stored(offset, scale, dtype, x)
    mean, var = (float(a) for a in mean_var(v))
    std = math.sqrt(var)
    half = half_height(scale, x)
    for text, t in zip(art["ticks"], TICKS, strict=True):   # the deviations' panel runs from -half to half
        text.set_text(TICK_LABEL(t * half))
    art["raw"].set_ydata((v.astype(np.float64) - mean) / half)
    art["raw_dots"].set_ydata(v.astype(np.float64))
    art["band"].set_y(-std / half)
    art["band"].set_height(2 * std / half)
    art["mean_txt"].set_text(f"mean {number(mean, 7)}\nstd {number(std)}")
    z = standardize(v)
    shown = vector_label(v, fmt=_stored)
    out = {"x as stored": f"{dtype} {shown}", "mean, variance, std": f"{number(mean, 7)}, {number(var, 7)}, "
           f"{number(std, 7)}"}
    if z is None:
        art["std_pts"].set_ydata(np.zeros(v.size))
        art["span_bar"].set_ydata([np.nan, np.nan])
        art["span_txt"].set_text("")
        art["note"].set_text("variance 0: all values are equal,\n(x - mean) / std is 0/0 (drawn at 0)")
        art["shows"].set_text(" undefined")   # (a space after the title)
        why = "variance is 0: every value is the same number, so (x - mean) / std is 0/0"
        if scale > 0:
            why = (f"the spread {number(scale)} is below the {dtype} spacing near {number(offset)} "
                   f"({number(float(np.spacing(np.dtype(dtype).type(offset))), 3)}), so storing x rounds every "
                   "value to the same number")
        out["standardized"] = "undefined: " + why
        out["span (max - min) / std"] = "undefined (0/0)"
        result = "all stored values are equal, so the standardized values are undefined"
    else:
        drift = float(np.max(np.abs(z - art["z"])))
        span = float(span_in_std(v))
        art["std_pts"].set_ydata(z)
        art["span_bar"].set_ydata([z.min(), z.max()])
        art["span_txt"].set_text(f"span\n{number(span)} std")
        art["note"].set_text("" if drift < 1e-3 else
                             f"{dtype} rounding bent the shape\nby up to {number(drift, 2)} std")
        art["shows"].set_text(" bent" if drift >= 1e-3 else " same shape")
        out["standardized"] = vector_label(z, fmt=lambda a: f"{a:+.4f}")
        out["span (max - min) / std"] = number(span, 6)
        result = ("the standardized values lie on the crosses of the exact shape" if drift < 1e-3 else
                  f"{dtype} rounding has moved the standardized values off the exact shape by up to "
                  f"{number(drift, 2)} std")
    one = float(one_pass_var(v))
    rel = " (exact: both are 0)" if var == 0 else f" (relative error {number(abs(one - var) / var, 2)})"
    out["one-pass variance E[x²] - E[x]²"] = f"{number(one, 7)} in {dtype}{rel}"
    alt = (f"Three panels. Left: the {v.size} values x = {number(offset)} + {number(scale)} × (the input's "
           f"deviations) stored as {dtype}, on an axis in decades from -1000 to 1000000. Middle: the same values "
           f"drawn around their mean {number(mean, 7)} with a band of one standard deviation "
           f"({number(std)}) either side. Right: their standardized values; {result}.")
    return out, alt


def _stored(v) -> str:
    """The shortest decimal that reads back as exactly this stored number (float32 or float64)."""
    return np.format_float_positional(v, unique=True, trim="-") if abs(v) >= 1e-4 or v == 0 else number(v)


PRESETS = {
    "offset 0": Preset({"offset": 0.0}, (
        "the raw values (first panel) drop from 100.5 to around 0, while the deviations and the standardized "
        "values do not move: the span stays 2.928 standard deviations"),
        about_default=True),
    "offset 100000": Preset({"offset": 1e5}, (
        "the raw values (first panel) climb to 100000, near the top of their axis, and the other two panels stay "
        "the same (float32 still stores these six numbers exactly), but the one-pass variance in the last "
        "readout has collapsed to 0"), about_default=True),
    "offset 0, scale 0.0001": Preset({"offset": 0.0, "scale": 1e-4}, (
        "the raw values all sit near 0 and the deviations' axis shrinks by decades, while the standardized "
        "points stay on their crosses")),
    "offset 0, scale 100": Preset({"offset": 0.0, "scale": 100.0}, (
        "a million times larger than the previous state, and the standardized values are the same"),
        about_default=True),
    "scale 0": Preset({"scale": 0.0}, (
        "all six values are equal, the variance is 0 and standardizing is 0/0: the case LayerNorm's epsilon "
        "exists for (section 23.4)"), about_default=True),
    "offset 10000, scale 0.01": Preset({"offset": 1e4, "scale": 0.01}, (
        "float32 keeps about 7 significant digits, so the stored values land on its grid; the standardized "
        "points leave their crosses and the red note says by how much"), about_default=True),
    "offset 10000, scale 0.01, float64": Preset({"offset": 1e4, "scale": 0.01, "dtype": "float64"}, (
        "with about 16 significant digits the points are back on their crosses"), about_default=True),
    "offset 100000, scale 0.0001": Preset({"offset": 1e5, "scale": 1e-4}, (
        "in float32 all six values round to the same number and the variance is 0"), about_default=True),
    "offset 100000, scale 0.0001, float64": Preset({"offset": 1e5, "scale": 1e-4, "dtype": "float64"}, (
        "float64 keeps the shape, but the one-pass formula loses it completely: it returns a negative "
        "variance, -3.8e-6, where the two-pass variance is 2.9e-8"), about_default=True),
    "defaults (float32)": Preset({}, (
        "at offset 100.5 the float32 one-pass variance is already off from its fourth decimal on "
        "(2.916992 against 2.916667, a relative error of 1.1e-4), while the two-pass variance is right"),
        about_default=True),
}


def entries() -> list:
    """The explorables of section 23.3."""
    return [Explorable(
        "scale_offset_standardize", title="Move the offset and the scale: the standardized shape does not change",
        controls={"offset": Slider([0.0, 0.01, 0.1, 1.0, 10.0, 100.5, 1e3, 1e4, 1e5], 100.5,
                                   label="offset (the mean of x)", free=(-1e6, 1e6)),
                  "scale": Slider([0.0, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0], 1.0,
                                  label="scale (multiplies x's deviations)", free=(0.0, 1e3)),
                  "dtype": Choice(["float32", "float64"], "float32", label="stored as")},
        inputs={"x": vector(VECTOR_A, 2, 64)}, start=lambda x: {"offset": float(np.mean(x))},
        setup=setup, update=update, presets=PRESETS, narrow=(NARROW_IN, 7.6))]
