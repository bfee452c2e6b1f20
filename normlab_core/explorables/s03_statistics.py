"""Section 23.3 explorable: one shape at any offset and scale; mean, std and the standardized values."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..controls import Preset
from ..examples import CHAPTER_SHAPE
from ..explore import Choice, Explorable, Slider
from ..moments import one_pass_var, span_in_std
from ..norms import layer_norm
from ..stats import mean_var
from ..style import COLORS, RC, label

# The reference text's vector a is 100.5 + 1 * SHAPE and its vector b is 0.0015 + 0.001 * SHAPE.
SHAPE = CHAPTER_SHAPE
Z_EXACT = SHAPE / math.sqrt(float(np.mean(SHAPE * SHAPE)))   # the standardized shape, float64
Z_LIM = (-2.2, 2.2)
DTYPES = {"float32": np.float32, "float64": np.float64}
RAW_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)   # raw panel ticks, as fractions of its current half-height


def vector(offset: float, scale: float, dtype: str) -> np.ndarray:
    """offset + scale * SHAPE, computed in float64 and then stored in `dtype` (one rounding per value)."""
    return (offset + scale * SHAPE).astype(DTYPES[dtype])


def standardize(x: np.ndarray) -> tuple[np.ndarray | None, str]:
    """(x - mean) / std in x's dtype (LayerNorm with eps=0, no gamma/beta); None and a reason if var is 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        z = layer_norm(x, eps=0.0)
    if not np.all(np.isfinite(z)):
        return None, "variance is 0: every value is the same number, so (x - mean) / std is 0/0"
    return z, ""


def _tick_label(v: float) -> str:
    return f"{v:g}".replace("-", "\u2212")  # the minus sign matplotlib's own tick labels use


def _widest_tick_labels() -> list[str]:
    """Every raw-panel tick label any state can show, widest first (they reserve the labels' space)."""
    labels = set()
    for offset in OFFSET_STOPS:
        for scale in SCALE_STOPS:
            for dtype in DTYPES:
                mean = float(mean_var(vector(offset, scale, dtype))[0])
                half = _half_range(mean, scale)
                labels.update(_tick_label(t * half) for t in RAW_TICKS)
    return sorted(labels, key=lambda t: (-len(t), t))


def _setup(fig):
    ax_x, ax_z = fig.subplots(1, 2)
    idx = np.arange(SHAPE.size)
    # The raw panel keeps the fixed limits [-1, 1] and draws the deviations divided by its half-height (a
    # power of ten times 1, 2 or 5): a limit change would force a full redraw of the figure (constrained
    # layout and every label, ~10x a blitted frame). Its tick labels are animated texts showing the real
    # values; the axis' own labels are invisible placeholders, as wide as the widest, that reserve the space.
    ax_x.set_ylim(-1.0, 1.0)
    ax_x.set_yticks(RAW_TICKS, labels=[_widest_tick_labels()[0]] * len(RAW_TICKS), color="none")
    ticks = [ax_x.text(-0.015, t, "", transform=ax_x.get_yaxis_transform(), ha="right", va="center",
                       fontsize=RC["ytick.labelsize"]) for t in RAW_TICKS]
    band = ax_x.axhspan(-1, 1, color=COLORS["input"], alpha=0.12, lw=0, label="mean ± 1 std")
    ax_x.axhline(0, color=COLORS["input"], lw=1, ls="--", label="mean")
    (raw,) = ax_x.plot(idx, SHAPE, "o-", color=COLORS["input"], label="x_i (labels: stored value)")
    last = SHAPE.size - 1
    tags = [ax_x.text(i + (0.1 if i < last else -0.1), 0, "", fontsize=6.5, va="bottom" if i < last else "top",
                      ha="left" if i < last else "right", clip_on=True) for i in idx]
    mean_txt = ax_x.text(0.98, 0.03, "", transform=ax_x.transAxes, ha="right", fontsize=8)
    ax_x.set_xlim(-0.5, SHAPE.size - 0.1)
    ax_x.legend(loc="upper left", fontsize=7)
    label(ax_x, "component index i", "x_i - mean (input units)", "Raw values, drawn around their mean")
    ax_z.axhspan(-1, 1, color=COLORS["layer_norm"], alpha=0.08, lw=0)
    ax_z.axhline(0, color="0.6", lw=0.8)
    ax_z.plot(idx, Z_EXACT, "x", color="0.2", ms=8, mew=1.5, label="exact shape (float64)", zorder=4)
    (std_pts,) = ax_z.plot(idx, Z_EXACT, "o-", color=COLORS["layer_norm"], label="(x_i - mean) / std")
    (span_bar,) = ax_z.plot([SHAPE.size - 0.35] * 2, [Z_EXACT.min(), Z_EXACT.max()], color="k", lw=1.2,
                            marker="_", ms=10)
    span_txt = ax_z.text(SHAPE.size - 0.45, 0.0, "", ha="right", va="center", fontsize=8)
    note = ax_z.text(0.02, 0.03, "", transform=ax_z.transAxes, fontsize=7.5, color="#B00020")
    ax_z.set_xlim(-0.5, SHAPE.size - 0.2)
    ax_z.set_ylim(*Z_LIM)
    ax_z.legend(loc="upper left", fontsize=7)
    label(ax_z, "component index i", "standardized value (std units, dimensionless)",
          "Standardized: the same shape every time")
    for ax in (ax_x, ax_z):
        ax.set_xticks(idx)
    for t in (*tags, *ticks, mean_txt, span_txt, note):
        t.set_in_layout(False)
    return {"ax_x": ax_x, "band": band, "raw": raw, "tags": tags, "ticks": ticks, "mean_txt": mean_txt,
            "std_pts": std_pts, "span_bar": span_bar, "span_txt": span_txt, "note": note,
            "animated": [band, raw, *tags, *ticks, mean_txt, std_pts, span_bar, span_txt, note]}


def _stored(v) -> str:
    """The shortest decimal that reads back as exactly this stored number (float32 or float64)."""
    return np.format_float_positional(v, unique=True, trim="-") if abs(v) >= 1e-4 or v == 0 else f"{v:.4g}"


def _half_range(mean: float, scale: float) -> float:
    """Half-height of the raw panel: a power of ten that holds the spread (changes only per decade of scale)."""
    half = 3.0 * scale if scale > 0 else max(abs(mean), 1.0) * 1e-6
    decade = 10.0 ** math.floor(math.log10(half))
    return next(m * decade for m in (1, 2, 5, 10) if m * decade >= half * (1 - 1e-12))


def _update(art, offset, scale, dtype):
    x = vector(offset, scale, dtype)
    mean, var = (float(v) for v in mean_var(x))
    std = math.sqrt(var)
    half = _half_range(mean, float(scale))
    for text, t in zip(art["ticks"], RAW_TICKS, strict=True):
        text.set_text(_tick_label(t * half))
    dev = x.astype(np.float64) - mean
    art["raw"].set_ydata(dev / half)
    for tag, d, v in zip(art["tags"], dev, x, strict=True):
        tag.set_y(d / half)
        tag.set_text(_stored(v))
    art["mean_txt"].set_text(f"mean {mean:.7g}, std {std:.4g}")
    art["band"].set_y(-std / half)
    art["band"].set_height(2 * std / half)
    z, why = standardize(x)
    out = {
        "x as stored": f"{dtype} [" + ", ".join(_stored(v) for v in x) + "]",
        "mean, variance, std": f"{mean:.7g}, {var:.7g}, {std:.7g}",
    }
    if z is None:
        art["std_pts"].set_ydata(np.zeros(SHAPE.size))
        art["span_bar"].set_ydata([np.nan, np.nan])
        art["span_txt"].set_text("")
        art["note"].set_text("variance 0: all values are equal,\n(x - mean) / std is 0/0 (drawn at 0)")
        if scale > 0:
            why = (f"the spread {scale:g} is below the {dtype} spacing near {offset:g} "
                   f"({float(np.spacing(DTYPES[dtype](offset))):.3g}), so storing x rounds every value "
                   "to the same number")
        out["standardized"] = "undefined: " + why
        out["span (max - min) / std"] = "undefined (0/0)"
    else:
        art["std_pts"].set_ydata(np.clip(z, *Z_LIM))
        art["span_bar"].set_ydata([z.min(), z.max()])
        span = float(span_in_std(x))
        art["span_txt"].set_text(f"span\n{span:.4g} std")
        drift = float(np.max(np.abs(z - Z_EXACT)))
        art["note"].set_text("" if drift < 1e-3 else
                             f"{dtype} rounding bent the shape by up to {drift:.2g} std")
        out["standardized"] = "[" + ", ".join(f"{v:+.4f}" for v in z) + "]"
        out["span (max - min) / std"] = f"{span:.6g}"
    one = float(one_pass_var(x))
    rel = " (exact: both are 0)" if var == 0 else f" (relative error {abs(one - var) / var:.1e})"
    out["one-pass variance E[x²] - E[x]²"] = f"{one:.7g} in {dtype}{rel}"
    return out


OFFSET_STOPS = [0.0, 0.01, 0.1, 1.0, 10.0, 100.5, 1e3, 1e4, 1e5]
SCALE_STOPS = [0.0, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0]

PRESETS = {
    "offset 0": Preset({"offset": 0.0}, (
        "the left panel is drawn around the mean, so only its labels change; the right panel does not move "
        "and the span stays 2.928 standard deviations")),
    "offset 100000": Preset({"offset": 1e5}, (
        "the same picture at the far end of the offset range (float32 still stores these six numbers "
        "exactly), but the one-pass variance in the last readout has collapsed to 0")),
    "offset 0, scale 0.0001": Preset({"offset": 0.0, "scale": 1e-4}, (
        "the raw axis shrinks by decades while the standardized points stay on their crosses")),
    "offset 0, scale 100": Preset({"offset": 0.0, "scale": 100.0}, (
        "a million times larger than the previous state, and the standardized values are the same")),
    "scale 0": Preset({"scale": 0.0}, (
        "all six values are equal, the variance is 0 and standardizing is 0/0: the case LayerNorm's epsilon "
        "exists for (section 23.4)")),
    "offset 10000, scale 0.01": Preset({"offset": 1e4, "scale": 0.01}, (
        "float32 keeps about 7 significant digits, so the stored values land on its grid; the standardized "
        "points leave their crosses and the red note says by how much")),
    "offset 10000, scale 0.01, float64": Preset({"offset": 1e4, "scale": 0.01, "dtype": "float64"}, (
        "with about 16 significant digits the points are back on their crosses")),
    "offset 100000, scale 0.0001": Preset({"offset": 1e5, "scale": 1e-4}, (
        "in float32 all six values round to the same number and the variance is 0")),
    "offset 100000, scale 0.0001, float64": Preset({"offset": 1e5, "scale": 1e-4, "dtype": "float64"}, (
        "float64 keeps the shape, but the one-pass formula loses it completely: it returns a negative "
        "variance, -3.8e-6, where the two-pass variance is 2.9e-8")),
    "defaults (float32)": Preset({}, (
        "at offset 100.5 the float32 one-pass variance is already off from its fourth decimal on "
        "(2.916992 against 2.916667, a relative error of 1.1e-4), while the two-pass variance is right")),
}


def entries() -> list:
    """The catalog entries of section 23.3."""
    return [
        Explorable(
            "scale_offset_standardize",
            {
                "offset": Slider(0.01, 1e5, 100.5, scale="log", zero=True, label="offset (added to every x_i)",
                                 stops=OFFSET_STOPS),
                "scale": Slider(1e-4, 1e2, 1.0, scale="log", zero=True, label="scale (multiplies the shape)",
                                stops=SCALE_STOPS),
                "dtype": Choice(["float32", "float64"], "float32", label="stored as"),
            },
            _setup,
            _update,
            title="Move the offset and the scale: the standardized shape does not change",
            alt=lambda offset, scale, dtype: (
                f"Two panels. Left: the six values x = {offset:g} + {scale:g} * shape stored as {dtype}, with "
                "their mean and a band of one standard deviation either side. Right: the standardized values "
                "on a fixed axis from -2.2 to 2.2, next to crosses marking the exact standardized shape."),
            presets=PRESETS,
        )
    ]
