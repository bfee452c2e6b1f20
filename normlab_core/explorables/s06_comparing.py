"""Section 23.6 explorables: LayerNorm and RMSNorm side by side as the mean moves, and what low-precision
storage of the two outputs leaves for a learned gamma to work with."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..controls import Preset
from ..display import fmt_vector
from ..examples import CENTRED, MIXED
from ..explore import Choice, Explorable, Slider
from ..norms import layer_norm, rms_norm
from ..precision import levels_between, round_to, spacing
from ..style import COLORS, label

EPS = 1e-5
RAMP = CENTRED        # the reference text's zero-centred input
BASES = {"ramp": RAMP, "mixed": MIXED - MIXED.mean()}
BASE_NAMES = {"ramp": "ramp [-2, -1, 0, 1, 2]", "mixed": "mixed input [3, -1, 0.5, 2, -0.5] minus its mean 0.8"}


# -- the morph from centred to offset data ------------------------------------------------------
def _setup_morph(fig):
    ax_x, ax_y = fig.subplots(1, 2)
    idx = np.arange(RAMP.size)
    (x_line,) = ax_x.plot(idx, RAMP, "o-", color=COLORS["input"], label="x")
    ax_x.axhline(0, color="0.6", lw=0.8)
    ax_x.set_ylim(-14, 24)
    label(ax_x, "component index i", "x_i  (input units)", "Input: a centred shape plus an offset")
    (ln,) = ax_y.plot(idx, RAMP, "o-", color=COLORS["layer_norm"], label="LayerNorm", ms=7)
    (rms,) = ax_y.plot(idx, RAMP, "s--", color=COLORS["rms_norm"], label="RMSNorm", ms=5)
    ax_y.axhline(0, color="0.6", lw=0.8)
    ax_y.set_ylim(-2.6, 2.2)
    ax_y.legend(loc="lower center", ncols=2)
    label(ax_y, "component index i", "output y_i  (dimensionless)", "Outputs: equal at offset 0 only")
    for ax in (ax_x, ax_y):
        ax.set_xticks(idx)
        ax.set_xlim(-0.3, RAMP.size - 0.7)
    return {"x": x_line, "ln": ln, "rms": rms, "animated": [x_line, ln, rms]}


def _update_morph(art, offset, base):
    x = offset + BASES[base]
    y_ln, y_rms = layer_norm(x, eps=EPS), rms_norm(x, eps=EPS)
    art["x"].set_ydata(x)
    art["ln"].set_ydata(y_ln)
    art["rms"].set_ydata(y_rms)
    return {
        "x": "[" + ", ".join(f"{a:.1f}" for a in x) + "]",
        "LN": fmt_vector(y_ln, "+.3f"),
        "RMS": fmt_vector(y_rms, "+.3f"),
        "largest |LN - RMS|": f"{np.max(np.abs(y_ln - y_rms)):.3g}",
    }


# -- precision left after storing the outputs in 16 bits ----------------------------------------
# 41 values drawn once from a standard normal (seed 0), centred, scaled to std 1 and sorted so that the
# plot reads as a smooth rising curve.  Unevenly spaced on purpose: an evenly spaced ramp can line up
# with the format's evenly spaced levels at particular offsets and look misleadingly exact there.
_draw = np.sort(np.random.default_rng(0).standard_normal(41))
POINTS = (_draw - _draw.mean()) / _draw.std()
Z = POINTS.copy()                        # the exact standardized shape both norms should deliver
CURVE_OFFSETS = np.logspace(-2, 4, 241)
ERR_LIM = (1e-4, 2.0)
FORMATS = ["bfloat16", "float16"]


def restretch(q: np.ndarray) -> np.ndarray:
    """The best a per-token scale and shift can do with stored outputs q: (q - mean) / std, rows on the last axis.

    A row whose values all rounded to one number has no spread left; it is returned as zeros.
    """
    q = np.asarray(q, dtype=np.float64)
    c = q - q.mean(axis=-1, keepdims=True)
    s = np.sqrt(np.mean(c * c, axis=-1, keepdims=True))
    safe = np.where(s > 0, s, 1.0)
    return np.where(s > 0, c / safe, 0.0)


def stored_error(offsets, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """RMS error (in units of the output's std) after storing LN and RMS outputs of offset + POINTS in fmt
    and re-stretching them; one value per offset, for (LayerNorm, RMSNorm)."""
    rows = np.asarray(offsets, dtype=np.float64)[:, None] + POINTS[None, :]
    out = []
    for y in (layer_norm(rows, eps=EPS), rms_norm(rows, eps=EPS)):
        r = restretch(round_to(y, fmt))
        out.append(np.sqrt(np.mean((r - Z) ** 2, axis=-1)))
    return out[0], out[1]


@lru_cache(maxsize=8)
def _error_curves(fmt: str):
    return stored_error(CURVE_OFFSETS, fmt)


def _setup_precision(fig):
    ax_r, ax_e = fig.subplots(1, 2, width_ratios=[1, 1.1])
    ax_r.plot(np.arange(POINTS.size), Z, color="0.15", lw=1, label="exact")
    (ln,) = ax_r.plot(np.arange(POINTS.size), Z, ".", color=COLORS["layer_norm"], ms=5, label="LayerNorm, stored")
    (rms,) = ax_r.plot(np.arange(POINTS.size), Z, "s", color=COLORS["rms_norm"], ms=3.5,
                       label="RMSNorm, stored")
    ax_r.set_ylim(-3.2, 3.2)
    ax_r.set_xlim(-1, POINTS.size)
    ax_r.legend(loc="lower right", fontsize=7)
    note = ax_r.text(0.03, 0.96, "", transform=ax_r.transAxes, va="top", fontsize=8, color="#B00020")
    note.set_in_layout(False)
    label(ax_r, "component index i (41 inputs, sorted)", "re-stretched output  (dimensionless)",
          "Stored in 16 bits, then re-stretched")
    (c_ln,) = ax_e.plot(CURVE_OFFSETS, CURVE_OFFSETS * 0 + 1, color=COLORS["layer_norm"], label="LayerNorm")
    (c_rms,) = ax_e.plot(CURVE_OFFSETS, CURVE_OFFSETS * 0 + 1, color=COLORS["rms_norm"], label="RMSNorm")
    (d_ln,) = ax_e.plot([1], [1], "o", color=COLORS["layer_norm"], ms=6, clip_on=False, in_layout=False)
    (d_rms,) = ax_e.plot([1], [1], "s", color=COLORS["rms_norm"], ms=6, clip_on=False, in_layout=False)
    vline = ax_e.axvline(1, color="0.4", ls="--", lw=1)
    ax_e.set_xscale("log")
    ax_e.set_yscale("log")
    ax_e.set_xlim(CURVE_OFFSETS[0], CURVE_OFFSETS[-1])
    ax_e.set_ylim(*ERR_LIM)
    ax_e.legend(loc="upper left")
    label(ax_e, "offset = mean of x  (input units; input std 1)", "RMS error after re-stretch  (output stds)",
          "Error left after the best re-stretch")
    return {"ln": ln, "rms": rms, "note": note, "c_ln": c_ln, "c_rms": c_rms, "d_ln": d_ln, "d_rms": d_rms,
            "vline": vline, "animated": [ln, rms, note, c_ln, c_rms, d_ln, d_rms, vline]}


def _update_precision(art, offset, fmt):
    x = offset + POINTS
    y = {"LayerNorm": layer_norm(x, eps=EPS), "RMSNorm": rms_norm(x, eps=EPS)}
    q = {k: round_to(v, fmt) for k, v in y.items()}
    r = {k: restretch(v) for k, v in q.items()}
    err = {k: float(np.sqrt(np.mean((v - Z) ** 2))) for k, v in r.items()}
    art["ln"].set_ydata(r["LayerNorm"])
    art["rms"].set_ydata(r["RMSNorm"])
    curves = _error_curves(fmt)
    art["c_ln"].set_ydata(np.clip(curves[0], *ERR_LIM))
    art["c_rms"].set_ydata(np.clip(curves[1], *ERR_LIM))
    shown = max(offset, CURVE_OFFSETS[0])
    art["d_ln"].set_data([shown], [np.clip(err["LayerNorm"], *ERR_LIM)])
    art["d_rms"].set_data([shown], [np.clip(err["RMSNorm"], *ERR_LIM)])
    art["vline"].set_xdata([shown, shown])
    distinct = len(np.unique(q["RMSNorm"]))
    if distinct == 1:
        art["note"].set_text(f"every RMSNorm output rounds to {q['RMSNorm'][0]:g}:\nno gamma can bring the shape back")
    elif distinct < POINTS.size:
        art["note"].set_text(f"RMSNorm: only {distinct} distinct stored values for 41 inputs")
    else:
        art["note"].set_text("")
    out = {}
    for k in ("LayerNorm", "RMSNorm"):
        lo, hi = float(y[k].min()), float(y[k].max())
        out[k] = (f"output {lo:+.5f} .. {hi:+.5f}; {levels_between(lo, hi, fmt)} {fmt} levels in that range, "
                  f"{len(np.unique(q[k]))} distinct stored values of 41; error after re-stretch {err[k]:.3g}")
    step = float(spacing(1.0, fmt))
    out["format step just above 1"] = f"{fmt}: {step:.3g} (2^{int(math.log2(step))})"
    out["dots on the right"] = (f"at offset {offset:g}" if offset >= CURVE_OFFSETS[0] else
                                "at the left edge: offset 0 is off the log axis")
    return out


OFFSET_STOPS = [-10.0, -5.0, -2.0, -1.0, 0.0, 0.8, 2.0, 5.0, 10.0, 20.0]
PRECISION_STOPS = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4]

MORPH_PRESETS = {
    "offset 0": Preset({"offset": 0.0}, "one line: on zero-mean input LayerNorm and RMSNorm are the same formula"),
    "offset 10": Preset({"offset": 10.0}, (
        "the reference text's positive-offset input [8 .. 12]: LayerNorm still gives ±1.414, ±0.707 and 0, "
        "RMSNorm squeezes everything into +0.792 .. +1.188")),
    "mixed, offset 0.8": Preset({"base": "mixed", "offset": 0.8}, (
        "the reference text's mixed input [3, -1, 0.5, 2, -0.5] (mean 0.8): different numbers from the two "
        "norms, in the same order")),
    "mixed, offset 0": Preset({"base": "mixed", "offset": 0.0}, "remove its mean and the two norms agree on it too"),
    "offset -10": Preset({"offset": -10.0}, (
        "a negative mean flattens RMSNorm's output toward -1, and LayerNorm's still does not change")),
}

PRECISION_PRESETS = {
    "offset 100, bfloat16": Preset({}, (
        "the RMSNorm squares form a staircase around the exact curve: only 9 distinct stored values survive "
        "of 41, and the error after re-stretching is 0.181 (LayerNorm's: 0.00126)")),
    "offset 100, float16": Preset({"fmt": "float16"}, (
        "three more mantissa bits: 26 distinct values and an error of 0.0227; on the right RMSNorm's error "
        "curve moves right by about a factor 2³ = 8")),
    "offset 0": Preset({"offset": 0.0}, "both norms give the same output and the same error: the identity again"),
    "offset 10000": Preset({"offset": 1e4}, (
        "every RMSNorm output rounds to the same number, a re-stretch has nothing to work with, and the error "
        "is 1")),
    "offset 10000, float16": Preset({"offset": 1e4, "fmt": "float16"}, (
        "float16 cannot save RMSNorm here either (error 1.06), while LayerNorm's error is 0.000213 at every "
        "offset: centring before dividing keeps its output in the dense part of the number grid")),
}


def entries() -> list:
    """The catalog entries of section 23.6."""
    return [
        Explorable(
            "compare_offset",
            {
                "offset": Slider(-10.0, 20.0, 0.0, label="offset added to the centred data", stops=OFFSET_STOPS),
                "base": Choice(["ramp", "mixed"], "ramp", label="centred shape", labels=["ramp", "mixed"]),
            },
            _setup_morph,
            _update_morph,
            title="Add an offset to centred data: LayerNorm ignores it, RMSNorm does not",
            alt=lambda offset, base: (
                f"Left: five input values, the {BASE_NAMES[base]} plus {offset:g}, on a fixed axis from -14 to 24. "
                "Right: their LayerNorm (circles) and RMSNorm (squares) outputs on a fixed axis from -2.6 "
                "to 2.2; the two coincide only when the offset is 0."),
            presets=MORPH_PRESETS,
        ),
        Explorable(
            "compare_precision",
            {
                "offset": Slider(0.01, 1e4, 100.0, scale="log", zero=True, label="offset (mean of x)",
                                 stops=PRECISION_STOPS),
                "fmt": Choice(FORMATS, "bfloat16", label="stored as"),
            },
            _setup_precision,
            _update_precision,
            title="What 16-bit storage leaves for gamma: RMSNorm's compressed output loses its levels",
            alt=lambda offset, fmt: (
                f"Left: 41 outputs of LayerNorm and RMSNorm for 41 sorted values of standard deviation 1 plus "
                f"offset {offset:g}, rounded to {fmt} and re-stretched to zero mean and unit spread, drawn over "
                "the exact curve; RMSNorm's points form a staircase at large offsets. Right: log-log RMS error "
                "after the re-stretch against the offset, 0.01 to 10000, for both norms; LayerNorm's stays near the "
                "format's rounding error while RMSNorm's grows with the offset up to 1."),
            presets=PRECISION_PRESETS,
        ),
    ]
