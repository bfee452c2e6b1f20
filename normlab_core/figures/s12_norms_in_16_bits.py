"""Norms in 16 bits (going further from 23.6): the variance of offset data computed in float32, float16 or bfloat16
by one pass, two passes or Welford's update."""

from __future__ import annotations

import numpy as np

from ..examples import UNEVEN
from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider, vector
from ..statistics_precision import to_format, var_one_pass, var_two_pass, var_welford
from .style import COLORS, NARROW_IN, label, panels

# -- the variance of offset data computed in a low-precision format --------------------------------------------
VAR_METHODS = {"one-pass": var_one_pass, "two-pass": var_two_pass, "Welford": var_welford}
VAR_STYLE = {"one-pass": dict(color=COLORS["warning"], ls="-"), "two-pass": dict(color=COLORS["layer_norm"], ls="-"),
             "Welford": dict(color=COLORS["marker"], ls="--")}
VAR_CURVE = np.logspace(-1, 4, 101)
VAR_ERR_LIM = (1e-9, 1e3)
VAR_RATIO_LIM = (-1.0, 3.5)


def shape_of(x) -> np.ndarray:
    """x centred and scaled to standard deviation 1 (a constant x gives zeros): the shape the offset moves."""
    c = x - x.mean()
    s = float(np.sqrt(np.mean(c * c)))
    return c / s if s > 0 else np.zeros_like(c)


def variance_errors(offsets, fmt: str, shape) -> dict:
    """For rows offset + shape (one per offset): the exact variance of the row as stored in fmt (float64, fsum-free
    two-pass on the stored values), and each method's result computed in fmt."""
    rows = to_format(np.asarray(offsets, dtype=np.float64)[:, None] + shape[None, :], fmt)
    c = rows - rows.mean(axis=-1, keepdims=True)
    out = {"exact": np.mean(c * c, axis=-1)}
    out.update({k: f(rows, fmt) for k, f in VAR_METHODS.items()})
    return out


def relative_error(value, exact) -> np.ndarray:
    """|value / exact - 1|, with inf for a non-finite value and NaN where the exact variance is 0."""
    value, exact = np.asarray(value, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(value / exact - 1)
    return np.where(exact == 0, np.nan, np.where(np.isfinite(value), err, np.inf))


def variance_setup(fig, *, narrow, x):
    ax_b, ax_e = panels(fig, narrow, ratios=[1, 1.3])
    names = list(VAR_METHODS)
    bars = ax_b.bar(range(3), [1, 1, 1], color=[VAR_STYLE[k]["color"] for k in names], width=0.6)
    ax_b.axhline(1, color="0.2", lw=1, ls=":")
    ax_b.axhline(0, color="0.6", lw=0.8)
    tags = [ax_b.text(i, 1, "", ha="center", va="bottom", fontsize=8) for i in range(3)]
    ax_b.set_xticks(range(3), names)
    ax_b.set_xlim(-0.6, 2.6)
    ax_b.set_ylim(*VAR_RATIO_LIM)
    label(ax_b, "method", "computed / exact variance", "What each method returns")
    curves, dots = {}, {}
    for k in names:
        (curves[k],) = ax_e.plot(VAR_CURVE, VAR_CURVE * 0 + 1, label=k, lw=1.6, **VAR_STYLE[k])
        (dots[k],) = ax_e.plot([1], [1], "o", color=VAR_STYLE[k]["color"], ms=6, clip_on=False)
    vline = ax_e.axvline(1, color="0.4", ls=":", lw=1)
    ax_e.set_xscale("log")
    ax_e.set_yscale("log")
    ax_e.set_xlim(VAR_CURVE[0], VAR_CURVE[-1])
    ax_e.set_ylim(*VAR_ERR_LIM)
    ax_e.legend(loc="upper left", bbox_to_anchor=(0.0, 0.9), fontsize=8)
    ax_e.text(0.02, 0.97, "top edge: inf or NaN", transform=ax_e.transAxes, va="top", fontsize=8, color="0.35")
    label(ax_e, "offset = mean of the row (std 1)", "relative error of the variance", "Error against the offset")
    return {"shape": shape_of(x), "bars": bars, "tags": tags, "curves": curves, "dots": dots, "vline": vline,
            "cache": {}}


def _ratio_text(r) -> str:
    if not np.isfinite(r):
        return "NaN" if r != r else ("+inf" if r > 0 else "-inf")
    return number(r, 3)


def variance_update(art, *, offset, fmt, x):
    shape = art["shape"]
    if fmt not in art["cache"]:
        art["cache"][fmt] = variance_errors(VAR_CURVE, fmt, shape)
    curve = art["cache"][fmt]
    at = {k: float(v[0]) for k, v in variance_errors([offset], fmt, shape).items()}
    exact, ratios = at["exact"], {}
    for i, k in enumerate(VAR_METHODS):
        err = relative_error(curve[k], curve["exact"])
        art["curves"][k].set_ydata(np.clip(np.nan_to_num(err, nan=VAR_ERR_LIM[1], posinf=VAR_ERR_LIM[1]), *VAR_ERR_LIM))
        e = float(relative_error(at[k], exact))
        shown = VAR_ERR_LIM[1] if not np.isfinite(e) else e
        art["dots"][k].set_data([max(offset, VAR_CURVE[0])], [np.clip(shown, *VAR_ERR_LIM)])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = at[k] / exact if exact > 0 else np.nan
        ratios[k] = ratio
        height = float(np.clip(np.nan_to_num(ratio, nan=0.0), VAR_RATIO_LIM[0] + 0.05, 3.0))
        art["bars"][i].set_height(height)
        art["tags"][i].set_position((i, max(height, 0.0) + 0.05))
        art["tags"][i].set_text(_ratio_text(ratio) if exact > 0 else "")
    art["vline"].set_xdata([max(offset, VAR_CURVE[0])] * 2)
    out = {"exact variance (row as stored)": f"{number(exact, 6)} ({fmt} row, mean {number(offset)})"}
    for k in VAR_METHODS:
        v, e = at[k], float(relative_error(at[k], exact))
        if not np.isfinite(v):
            out[k] = f"{_ratio_text(v)}: overflow on the way, so the error is undefined"
        elif exact == 0:
            out[k] = f"{number(v, 6)} (the stored row is constant: relative error undefined)"
        else:
            out[k] = f"{number(v, 6)}; relative error {number(e, 2)}" + (", negative!" if v < 0 else "")
    out["dots on the right"] = (f"at offset {number(offset)}" if offset >= VAR_CURVE[0] else
                                "at the left edge: offset 0 is off the log axis")
    words = (", ".join(f"{k} {_ratio_text(r)}" for k, r in ratios.items()) if exact > 0 else
             "undefined, since the stored row is constant")
    alt = (f"Left: the variance of {shape.size} values of standard deviation 1 around {number(offset)}, stored and "
           f"computed in {fmt} by three methods, as a fraction of the exact variance {number(exact, 6)} of the stored "
           f"row (bars cut off at 3): {words}. Right: each method's relative error against the offset, 0.1 to "
           f"10000, log-log, with inf and NaN drawn at the top edge.")
    return out, alt


VARIANCE_PRESETS = {
    "float32, offset 300": Preset({}, (
        "in float32 the one-pass formula is off by 0.0078 of the variance, the two-pass one and Welford's "
        "by less than 0.0001"), about_default=True),
    "float32, offset 10000": Preset({"offset": 1e4}, (
        "squares near 10⁸ leave the one-pass formula a negative variance; two-pass and Welford still hold "
        "three or more digits"), about_default=True),
    "float16, offset 100": Preset({"fmt": "float16", "offset": 100.0}, (
        "the float16 squares overflow: one-pass returns inf, while two-pass and Welford come out finite"),
        about_default=True),
    "float16, offset 10": Preset({"fmt": "float16", "offset": 10.0}, (
        "no overflow yet, but one-pass loses a fifth of the variance; two-pass is off by 0.00032"), about_default=True),
    "bfloat16, offset 30": Preset({"fmt": "bfloat16", "offset": 30.0}, (
        "bfloat16 keeps 8 bits: at offset 30 even the two-pass mean is rounded so much that its variance is "
        "off by 0.41"), about_default=True),
}


def entries() -> list:
    """The explorables of the page Norms in 16 bits."""
    return [
        Explorable("compare_variance", title="The variance of offset data in low precision: one pass, two "
                   "passes, or Welford's update",
                   controls={"offset": Slider([0.0, 1.0, 10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4], 300.0,
                                              label="offset (the mean of the row)", free=(0.0, 1e4)),
                             "fmt": Choice(["float32", "float16", "bfloat16"], "float32", label="computed in")},
                   inputs={"x": vector(UNEVEN, 2, 256)}, setup=variance_setup, update=variance_update,
                   presets=VARIANCE_PRESETS, narrow=(NARROW_IN, 5.6)),
    ]
