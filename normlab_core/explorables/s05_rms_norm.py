"""Section 23.5 explorables: RMSNorm squeezes offset data toward 1 while LayerNorm keeps its spread."""

from __future__ import annotations

import math

import numpy as np

from ..controls import Preset
from ..examples import CHAPTER_SHAPE
from ..explore import Explorable, Slider
from ..norms import layer_norm, rms_norm
from ..stats import mean_var
from ..style import COLORS, label

# The reference text's vector [100, 102, 98, 101, 99, 103] is 100.5 + this shape.
SHAPE = CHAPTER_SHAPE
EPS = 1e-5
OFFSETS = np.linspace(-50.0, 200.0, 501)
STD_LIM = (1e-3, 3.0)


def output_std(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard deviation of the LayerNorm and RMSNorm outputs of offset + SHAPE, per offset (float64)."""
    rows = np.asarray(offsets, dtype=np.float64)[:, None] + SHAPE[None, :]
    ln = np.sqrt(mean_var(layer_norm(rows, eps=EPS))[1])
    rms = np.sqrt(mean_var(rms_norm(rows, eps=EPS))[1])
    return ln, rms


def _setup(fig):
    ax_y, ax_s = fig.subplots(1, 2, width_ratios=[1, 1.15])
    idx = np.arange(SHAPE.size)
    (ln,) = ax_y.plot(idx, SHAPE, "o-", color=COLORS["layer_norm"], label="LayerNorm")
    (rms,) = ax_y.plot(idx, SHAPE, "s-", color=COLORS["rms_norm"], label="RMSNorm")
    ax_y.axhline(0, color="0.6", lw=0.8)
    for level in (-1, 1):
        ax_y.axhline(level, color=COLORS["rms_norm"], lw=0.8, ls=":")
    ax_y.set_ylim(-2.6, 2.2)
    ax_y.set_xlim(-0.3, 5.3)
    ax_y.set_xticks(idx)
    ax_y.legend(loc="lower center", ncols=2)
    label(ax_y, "component index i", "output y_i  (dimensionless)", "Outputs of offset + the reference shape")
    ln_std, rms_std = output_std(OFFSETS)   # drawn once, with the figure
    ax_s.plot(OFFSETS, ln_std, color=COLORS["layer_norm"], label="LayerNorm")
    ax_s.plot(OFFSETS, rms_std, color=COLORS["rms_norm"], label="RMSNorm")
    (d_ln,) = ax_s.plot([0], [1], "o", color=COLORS["layer_norm"], ms=6, clip_on=False, in_layout=False)
    (d_rms,) = ax_s.plot([0], [1], "s", color=COLORS["rms_norm"], ms=6, clip_on=False, in_layout=False)
    vline = ax_s.axvline(0, color="0.4", ls="--", lw=1)
    ax_s.set_yscale("log")
    ax_s.set_xlim(OFFSETS[0], OFFSETS[-1])
    ax_s.set_ylim(*STD_LIM)
    ax_s.legend(loc="lower left")
    label(ax_s, "offset = mean of x  (input units)", "output standard deviation  (dimensionless)",
          "RMSNorm's std is std/sqrt(mean² + std²)")
    return {"ln": ln, "rms": rms, "d_ln": d_ln, "d_rms": d_rms, "vline": vline,
            "animated": [ln, rms, d_ln, d_rms, vline]}


def _update(art, offset):
    x = offset + SHAPE
    y_ln = layer_norm(x, eps=EPS)
    y_rms = rms_norm(x, eps=EPS)
    art["ln"].set_ydata(y_ln)
    art["rms"].set_ydata(y_rms)
    s_ln, s_rms = (math.sqrt(float(mean_var(y)[1])) for y in (y_ln, y_rms))
    art["d_ln"].set_data([offset], [s_ln])
    art["d_rms"].set_data([offset], [s_rms])
    art["vline"].set_xdata([offset, offset])
    mean, var = mean_var(x)
    ms = float(np.mean(x * x))
    share = mean * mean / ms
    return {
        "LayerNorm output": f"from {y_ln.min():+.4f} to {y_ln.max():+.4f}, std {s_ln:.4g}",
        "RMSNorm output": f"from {y_rms.min():+.4f} to {y_rms.max():+.4f}, std {s_rms:.4g}, mean {y_rms.mean():+.4f}",
        "rms² = mean² + var": f"{ms:.6g} = {mean * mean:.6g} + {var:.6g}  (the mean's share: {share:.2%})",
        "RMSNorm std / LayerNorm std": f"{s_rms / s_ln:.4g}",
    }


OFFSET_STOPS = [-50.0, -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.5, 200.0]

PRESETS = {
    "offset 100.5": Preset({"offset": 100.5}, (
        "the reference vector: RMSNorm's squares hug the dotted line at 1 while LayerNorm's circles span "
        "about ±1.46")),
    "offset 0": Preset({"offset": 0.0}, (
        "on zero-mean input the two outputs coincide, and on the right both dots sit at 1: section 23.6's "
        "identity")),
    "offset -50": Preset({"offset": -50.0}, "with a negative mean RMSNorm's output hugs -1 instead: its sign "
                         "follows the mean"),
    "offset 10": Preset({"offset": 10.0}, (
        "the mean already holds 97% of rms² and RMSNorm keeps 0.1683 of LayerNorm's spread; at 100.5 that "
        "ratio is 0.01699: ten times the mean, a tenth of the spread (it falls like 1/|mean|)")),
}


def entries() -> list:
    """The catalog entries of section 23.5."""
    return [
        Explorable(
            "rms_norm_offset",
            {"offset": Slider(-50.0, 200.0, 100.5, label="offset (mean of x)", stops=OFFSET_STOPS)},
            _setup,
            _update,
            title="Slide the offset: RMSNorm's output collapses toward ±1, LayerNorm's keeps its spread",
            alt=lambda offset: (
                f"Left: LayerNorm and RMSNorm outputs of the six values {offset:g} + [-0.5, 1.5, -2.5, 0.5, "
                "-1.5, 2.5] against component index, on a fixed axis from -2.6 to 2.2, dotted lines at -1 and +1. "
                "Right: the standard deviation of each output against the offset from -50 to 200 on a log axis; "
                "LayerNorm's is flat at 1, RMSNorm's falls as the offset grows. "
                f"Dots and a dashed line mark offset {offset:g}."),
            presets=PRESETS,
        )
    ]
