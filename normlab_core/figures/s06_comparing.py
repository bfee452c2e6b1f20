"""Section 23.6: LayerNorm and RMSNorm side by side as the mean moves, and what 16-bit storage of the two outputs
leaves for a learned gamma to work with. (A norm's own arithmetic in 16 bits is s12_norms_in_16_bits.)"""

from __future__ import annotations

import math

import numpy as np

from ..examples import CENTRED, MIXED, UNEVEN
from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider, scalar, vector
from ..norms import layer_norm, rms_norm
from ..precision import levels_between, restretch, round_to, spacing, stored_error
from .style import COLORS, NARROW_IN, index_ticks, label, panels, vector_label

# -- the morph from centred to offset data ----------------------------------------------------------------------
MORPH_OUT_LIM = (-2.6, 2.2)   # the output panel's fixed axis
def morph_setup(fig, *, narrow, x, mixed, eps):
    ax_x, ax_y = panels(fig, narrow)
    n = max(x.size, mixed.size)
    (x_line,) = ax_x.plot(np.arange(x.size), x, "o-", color=COLORS["input"])
    ax_x.axhline(0, color="0.6", lw=0.8)
    wide = 1.3 * float(max(np.abs(x - x.mean()).max(), np.abs(mixed - mixed.mean()).max()))
    ax_x.set_ylim(-10 - wide, 20 + wide)
    label(ax_x, "component index i", r"$x_i$ (input units)", "Input: a centred shape plus an offset")
    (ln,) = ax_y.plot(np.arange(x.size), x, "o-", color=COLORS["layer_norm"], label="LayerNorm", ms=7)
    (rms,) = ax_y.plot(np.arange(x.size), x, "s--", color=COLORS["rms_norm"], label="RMSNorm", ms=5)
    ax_y.axhline(0, color="0.6", lw=0.8)
    ax_y.set_ylim(*MORPH_OUT_LIM)
    ax_y.legend(loc="lower center", ncols=2)
    label(ax_y, "component index i", r"output $y_i$", "")
    for ax in (ax_x, ax_y):
        index_ticks(ax, n)
        ax.set_xlim(-0.3, n - 0.7)
    return {"x": x_line, "ln": ln, "rms": rms, "ax_y": ax_y}


def morph_update(art, *, offset, base, x, mixed, eps):
    shape = x - x.mean() if base == "x" else mixed - mixed.mean()
    v = offset + shape
    y_ln, y_rms = layer_norm(v, eps=eps), rms_norm(v, eps=eps)
    for key, y in (("x", v), ("ln", y_ln), ("rms", y_rms)):
        art[key].set_data(np.arange(v.size), y)
    gap = float(np.max(np.abs(y_ln - y_rms)))
    art["ax_y"].set_title("Outputs: the same" if gap < 1e-9 else "Outputs: they differ", loc="left")
    out = {"x": vector_label(v, 3), "LN": "[" + ", ".join(f"{a:+.3f}" for a in y_ln) + "]",
           "RMS": "[" + ", ".join(f"{a:+.3f}" for a in y_rms) + "]", "largest |LN - RMS|": number(gap, 3)}
    alt = (f"Left: the input {vector_label(v, 3)}, a centred shape plus {number(offset)}. Right: its LayerNorm "
           f"(circles) and RMSNorm (squares) on a fixed axis from {number(MORPH_OUT_LIM[0])} to "
           f"{number(MORPH_OUT_LIM[1])}; "
           f"the largest difference between them is "
           f"{number(gap, 3)}{', so they coincide' if gap < 1e-9 else ''}.")
    return out, alt


# -- precision left after storing the outputs in 16 bits ---------------------------------------------------------
CURVE_OFFSETS = np.logspace(-2, 4, 241)
ERR_LIM = (1e-4, 2.0)


def precision_setup(fig, *, narrow, x, eps):
    ax_r, ax_e = panels(fig, narrow, ratios=[1, 1.1])
    z = np.sort((x - x.mean()) / x.std())
    idx = np.arange(z.size)
    ax_r.plot(idx, z, color="0.15", lw=1, label="exact")
    (ln,) = ax_r.plot(idx, z, ".", color=COLORS["layer_norm"], ms=5, label="LayerNorm, stored")
    (rms,) = ax_r.plot(idx, z, "s", color=COLORS["rms_norm"], ms=3.5, label="RMSNorm, stored")
    ax_r.set_ylim(-3.6, 3.6)
    ax_r.set_xlim(-1, z.size)
    ax_r.legend(loc="lower right", fontsize=8)
    note = ax_r.text(0.03, 0.97, "", transform=ax_r.transAxes, va="top", fontsize=8, color=COLORS["warning"])
    label(ax_r, f"component i ({z.size} inputs, sorted)", "re-stretched output", "Stored in 16 bits, re-stretched")
    (c_ln,) = ax_e.plot(CURVE_OFFSETS, CURVE_OFFSETS * 0 + 1, color=COLORS["layer_norm"], label="LayerNorm")
    (c_rms,) = ax_e.plot(CURVE_OFFSETS, CURVE_OFFSETS * 0 + 1, color=COLORS["rms_norm"], label="RMSNorm")
    (d_ln,) = ax_e.plot([1], [1], "o", color=COLORS["layer_norm"], ms=6, clip_on=False)
    (d_rms,) = ax_e.plot([1], [1], "s", color=COLORS["rms_norm"], ms=6, clip_on=False)
    vline = ax_e.axvline(1, color="0.4", ls="--", lw=1)
    ax_e.set_xscale("log")
    ax_e.set_yscale("log")
    ax_e.set_xlim(CURVE_OFFSETS[0], CURVE_OFFSETS[-1])
    ax_e.set_ylim(*ERR_LIM)
    ax_e.legend(loc="upper left")
    label(ax_e, "offset = mean of x (input std 1)", "RMS error after re-stretch (stds)", "Error after the best "
          "re-stretch")
    return {"z": z, "ln": ln, "rms": rms, "note": note, "c_ln": c_ln, "c_rms": c_rms, "d_ln": d_ln, "d_rms": d_rms,
            "vline": vline, "curves": {}}


def precision_update(art, *, offset, fmt, x, eps):
    z = art["z"]
    v = offset + z
    y = {"LayerNorm": layer_norm(v, eps=eps), "RMSNorm": rms_norm(v, eps=eps)}
    q = {k: round_to(a, fmt) for k, a in y.items()}
    err = {k: float(np.sqrt(np.mean((restretch(a) - z) ** 2))) for k, a in q.items()}
    art["ln"].set_ydata(restretch(q["LayerNorm"]))
    art["rms"].set_ydata(restretch(q["RMSNorm"]))
    curves = stored_error(CURVE_OFFSETS, fmt, z, eps)
    art["c_ln"].set_ydata(np.clip(curves[0], *ERR_LIM))
    art["c_rms"].set_ydata(np.clip(curves[1], *ERR_LIM))
    shown = max(offset, CURVE_OFFSETS[0])
    art["d_ln"].set_data([shown], [np.clip(err["LayerNorm"], *ERR_LIM)])
    art["d_rms"].set_data([shown], [np.clip(err["RMSNorm"], *ERR_LIM)])
    art["vline"].set_xdata([shown, shown])
    distinct = len(np.unique(q["RMSNorm"]))
    art["note"].set_text(f"every RMSNorm output\nrounds to {number(q['RMSNorm'][0])}: no gamma\ncan bring the shape "
                         "back" if distinct == 1 else f"RMSNorm: only {distinct}\ndistinct stored values"
                         if distinct < z.size else "")
    out = {}
    for k in ("LayerNorm", "RMSNorm"):
        lo, hi = float(y[k].min()), float(y[k].max())
        out[k] = (f"output {lo:+.5f} .. {hi:+.5f}; {levels_between(lo, hi, fmt)} {fmt} levels in that range, "
                  f"{len(np.unique(q[k]))} distinct stored values of {z.size}; error after re-stretch "
                  f"{number(err[k], 3)}")
    step = float(spacing(1.0, fmt))
    out["format step just above 1"] = f"{fmt}: {number(step, 3)} (2^{int(math.log2(step))})"
    out["dots on the right"] = (f"at offset {number(offset)}" if offset >= CURVE_OFFSETS[0] else
                                "at the left edge: offset 0 is off the log axis")
    alt = (f"Left: the {z.size} sorted inputs of standard deviation 1 plus offset {number(offset)}, normalized, "
           f"rounded to {fmt} and re-stretched, over the exact curve: RMSNorm keeps {distinct} distinct values "
           f"and an error of {number(err['RMSNorm'], 3)}, LayerNorm an error of {number(err['LayerNorm'], 3)}. Right: "
           f"the error after re-stretching against the offset, 0.01 to 10000, log-log, for both norms.")
    return out, alt


MORPH_PRESETS = {
    "offset 0": Preset({"offset": 0.0}, "one line: on zero-mean input LayerNorm and RMSNorm are the same formula"),
    "offset 10": Preset({"offset": 10.0}, (
        "the reference text's positive-offset input [8 .. 12]: LayerNorm still gives ±1.414, ±0.707 and 0, "
        "RMSNorm squeezes everything into +0.792 .. +1.188"), about_default=True),
    "mixed, offset 0.8": Preset({"base": "mixed", "offset": 0.8}, (
        "the reference text's mixed input [3, -1, 0.5, 2, -0.5] (mean 0.8): different numbers from the two "
        "norms, in the same order"), about_default=True),
    "mixed, offset 0": Preset({"base": "mixed", "offset": 0.0}, "remove its mean and the two norms agree on it too",
        about_default=True),
    "offset -10": Preset({"offset": -10.0}, (
        "a negative mean flattens RMSNorm's output toward -1, and LayerNorm's still does not change"),
        about_default=True),
}

PRECISION_PRESETS = {
    "offset 100, bfloat16": Preset({}, (
        "the RMSNorm squares form a staircase around the exact curve: only 9 distinct stored values survive "
        "of 41, and the error after re-stretching is 0.181 (LayerNorm's: 0.00126)"), about_default=True),
    "offset 100, float16": Preset({"fmt": "float16"}, (
        "three more mantissa bits: 26 distinct values and an error of 0.0227; on the right RMSNorm's error "
        "curve moves right by about a factor 2³ = 8"), about_default=True),
    "offset 0": Preset({"offset": 0.0}, "both norms give the same output and the same error: the identity again"),
    "offset 10000": Preset({"offset": 1e4}, (
        "every RMSNorm output rounds to the same number, a re-stretch has nothing to work with, and the error "
        "is 1"), about_default=True),
    "offset 10000, float16": Preset({"offset": 1e4, "fmt": "float16"}, (
        "float16 cannot save RMSNorm here either (error 1.06), while LayerNorm's error is 0.000213 at every "
        "offset: centring before dividing keeps its output in the dense part of the number grid"), about_default=True),
}


def entries() -> list:
    """The explorables of section 23.6."""
    eps = scalar(1e-5, 0.0, 10.0)
    return [
        Explorable("compare_offset", title="Add an offset to centred data: LayerNorm ignores it, RMSNorm does not",
                   controls={"offset": Slider([-10.0, -5.0, -2.0, -1.0, 0.0, 0.8, 2.0, 5.0, 10.0, 20.0], 0.0,
                                              label="offset (the mean of the input)", free=(-1e3, 1e3)),
                             "base": Choice(["x", "mixed"], "x", label="centred shape", labels=["x", "mixed"])},
                   inputs={"x": vector(CENTRED, 2, 16), "mixed": vector(MIXED, 2, 16), "eps": eps},
                   start=lambda x, mixed, eps: {"offset": float(x.mean())},
                   setup=morph_setup, update=morph_update, presets=MORPH_PRESETS, narrow=(NARROW_IN, 5.4)),
        Explorable("compare_precision", title="What 16-bit storage leaves for gamma: RMSNorm's compressed output "
                   "loses its levels",
                   controls={"offset": Slider([0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4], 100.0,
                                              label="offset (the mean of x)", free=(0.0, 1e5)),
                             "fmt": Choice(["bfloat16", "float16"], "bfloat16", label="stored as")},
                   inputs={"x": vector(UNEVEN, 2, 256), "eps": eps}, setup=precision_setup, update=precision_update,
                   presets=PRECISION_PRESETS, narrow=(NARROW_IN, 5.6)),
    ]
