"""Section 23.5: RMSNorm squeezes offset data toward 1 while LayerNorm keeps its spread."""

from __future__ import annotations

import numpy as np

from ..display import ratio
from ..examples import VECTOR_A
from ..interactive import Explorable, Preset, Slider, number, scalar, vector
from ..norms import layer_norm, rms_norm
from ..stats import mean_var
from .style import COLORS, label, panels

OFFSETS = np.linspace(-50.0, 200.0, 501)
STD_LIM = (1e-3, 3.0)


def output_std(offsets, shape, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Standard deviation of the LayerNorm and RMSNorm outputs of offset + shape, per offset (float64)."""
    rows = np.asarray(offsets, dtype=np.float64)[:, None] + shape[None, :]
    return tuple(_std(norm(rows, eps=eps)) for norm in (layer_norm, rms_norm))


def _std(y: np.ndarray) -> np.ndarray:
    """Standard deviation of each row of y (NaN for a row with NaN: a constant row normalized with eps = 0)."""
    out = np.full(y.shape[:-1], np.nan)
    rows = np.all(np.isfinite(y), axis=-1)
    if rows.any():
        out[rows] = np.sqrt(mean_var(y[rows])[1])
    return out


def setup(fig, *, narrow, x, eps):
    ax_y, ax_s = panels(fig, narrow, ratios=[1, 1.15])
    idx, shape = np.arange(x.size), x - x.mean()
    (ln,) = ax_y.plot(idx, shape, "o-", color=COLORS["layer_norm"], label="LayerNorm")
    (rms,) = ax_y.plot(idx, shape, "s-", color=COLORS["rms_norm"], label="RMSNorm")
    ax_y.axhline(0, color="0.6", lw=0.8)
    for level in (-1, 1):
        ax_y.axhline(level, color=COLORS["rms_norm"], lw=0.8, ls=":")
    std = float(shape.std())
    top = 1.2 * float(np.abs(shape / std).max()) if std > 0 else 1.2   # a constant x: its outputs are 0 or ±1
    ax_y.set_ylim(-top - 0.6, top)
    ax_y.set_xlim(-0.3, x.size - 0.7)
    ax_y.set_xticks(idx if x.size <= 12 else idx[::max(1, x.size // 8)])
    ax_y.legend(loc="lower center", ncols=2)
    label(ax_y, "component index i", r"output $y_i$", "Outputs of offset + the input's shape")
    ln_std, rms_std = output_std(OFFSETS, shape, eps)
    ax_s.plot(OFFSETS, ln_std, color=COLORS["layer_norm"], label="LayerNorm")
    ax_s.plot(OFFSETS, rms_std, color=COLORS["rms_norm"], label="RMSNorm")
    (d_ln,) = ax_s.plot([0], [1], "o", color=COLORS["layer_norm"], ms=6, clip_on=False)
    (d_rms,) = ax_s.plot([0], [1], "s", color=COLORS["rms_norm"], ms=6, clip_on=False)
    vline = ax_s.axvline(0, color="0.4", ls="--", lw=1)
    ax_s.set_yscale("log")
    ax_s.set_xlim(OFFSETS[0], OFFSETS[-1])
    ax_s.set_ylim(*STD_LIM)
    ax_s.legend(loc="lower left")
    label(ax_s, "offset = mean of x (input units)", "output standard deviation",
          r"RMSNorm's std is $\sigma / \sqrt{\mu^2 + \sigma^2}$")
    return {"ln": ln, "rms": rms, "d_ln": d_ln, "d_rms": d_rms, "vline": vline}


def update(art, *, offset, x, eps):
    v = offset + (x - x.mean())
    y_ln, y_rms = layer_norm(v, eps=eps), rms_norm(v, eps=eps)
    art["ln"].set_ydata(y_ln)
    art["rms"].set_ydata(y_rms)
    s_ln, s_rms = (float(_std(y)) for y in (y_ln, y_rms))
    shown = min(max(offset, OFFSETS[0]), OFFSETS[-1])
    art["d_ln"].set_data([shown], [s_ln])
    art["d_rms"].set_data([shown], [max(s_rms, STD_LIM[0])])
    art["vline"].set_xdata([shown, shown])
    mean, var = (float(a) for a in mean_var(v))
    ms = float(np.mean(v * v))
    out = {
        "LayerNorm output": f"from {y_ln.min():+.4f} to {y_ln.max():+.4f}, std {number(s_ln)}",
        "RMSNorm output": f"from {y_rms.min():+.4f} to {y_rms.max():+.4f}, std {number(s_rms)}, mean "
                          f"{y_rms.mean():+.4f}",
        "rms² = mean² + var": f"{number(ms, 6)} = {number(mean * mean, 6)} + {number(var, 6)} (the mean's share: "
                              f"{ratio(mean * mean, ms):.2%})",
        "RMSNorm std / LayerNorm std": number(ratio(s_rms, s_ln)),
    }
    if not var > 0:
        out["your x"] = ("constant: LayerNorm has no spread to keep (its output is 0, or 0/0 = NaN with eps = 0) and "
                         "neither has RMSNorm (every output is the same), so the ratio of their spreads is not defined")
    alt = (f"Left: LayerNorm and RMSNorm outputs of the {v.size} values {number(offset)} + the input's deviations; "
           f"LayerNorm's run from {y_ln.min():+.2f} to {y_ln.max():+.2f}, RMSNorm's from {y_rms.min():+.2f} to "
           f"{y_rms.max():+.2f}. Right: the standard deviation of each output against the offset, -50 to 200, on a "
           f"log axis; at offset {number(offset)} RMSNorm keeps {number(ratio(s_rms, s_ln), 3)} of LayerNorm's spread.")
    return out, alt


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
    """The explorables of section 23.5."""
    return [Explorable(
        "rms_norm_offset", title="Slide the offset: RMSNorm's output collapses toward ±1, LayerNorm's keeps its "
        "spread", setup=setup, update=update, presets=PRESETS, narrow=(3.3, 5.6),
        controls={"offset": Slider([-50.0, -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0,
                                    100.5, 200.0], 100.5, label="offset (the mean of x)", free=(-1e4, 1e4))},
        inputs={"x": vector(VECTOR_A, 2, 64), "eps": scalar(1e-5, 0.0, 10.0)},
        start=lambda x, eps: {"offset": float(x.mean())})]
