"""Section 23.5: RMSNorm squeezes offset data toward 1 while LayerNorm keeps its spread; and the geometry at D = 3,
where LayerNorm projects onto the plane orthogonal to 1 before scaling onto the sphere and RMSNorm only scales."""

from __future__ import annotations

import numpy as np

from ..examples import VECTOR_A
from ..formatting import number, ratio
from ..geometry import along_ones, angle_to_plane, layer_norm_radius, plane_basis, project, rms_norm_radius
from ..interactive import Choice, Explorable, Preset, Slider, scalar, vector
from ..norms import layer_norm, rms_norm
from ..stats import length, mean_var
from .style import COLORS, NARROW_IN, index_ticks, label, panels, vector_label

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
    index_ticks(ax_y, x.size)
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
        "about ±1.46"), about_default=True),
    "offset 0": Preset({"offset": 0.0}, (
        "on zero-mean input the two outputs coincide, and on the right both dots sit at 1: section 23.6's "
        "identity"), about_default=True),
    "offset -50": Preset({"offset": -50.0}, "with a negative mean RMSNorm's output hugs -1 instead: its sign "
                         "follows the mean", about_default=True),
    "offset 10": Preset({"offset": 10.0}, (
        "the mean already holds 97% of rms² and RMSNorm keeps 0.1683 of LayerNorm's spread; at 100.5 that "
        "ratio is 0.01699: ten times the mean, a tenth of the spread (it falls like 1/|mean|)"), about_default=True),
}


def entries() -> list:
    """The explorables of section 23.5."""
    return [Explorable(
        "rms_norm_offset", title="Slide the offset: RMSNorm's output collapses toward ±1, LayerNorm's keeps its "
        "spread", setup=setup, update=update, presets=PRESETS, narrow=(NARROW_IN, 5.6),
        controls={"offset": Slider([-50.0, -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0,
                                    100.5, 200.0], 100.5, label="offset (the mean of x)", free=(-1e4, 1e4))},
        inputs={"x": vector(VECTOR_A, 2, 64), "eps": scalar(1e-5, 0.0, 10.0)},
        start=lambda x, eps: {"offset": float(x.mean())}),
        Explorable(
            "norm_geometry", title="At D = 3: LayerNorm drops x onto the plane, then both scale onto the sphere of "
            "radius √3", setup=geometry_setup, update=geometry_update, presets=GEOMETRY_PRESETS,
            narrow=(NARROW_IN, 6.2),
            controls={"shape": Choice(list(SHAPES), "offset", label="input x"),
                      "offset": Slider([-1.0, 0.0, 0.5, 1.0, 3.0], 0.0, label="added along 1", free=(-100.0, 100.0)),
                      "eps": Slider([0.0, 0.01, 0.1, 1.0], 0.0, label="eps", free=(0.0, 10.0))})]


# -- the geometry at D = 3: LayerNorm projects and scales, RMSNorm only scales -----------------------------------
SHAPES = {"centred": (1.2, -0.8, -0.4), "offset": (1.8, 1.2, 0.3), "nearly flat": (1.05, 0.95, 1.0)}
BASIS = plane_basis(3)
ROOT3 = float(np.sqrt(3.0))
PLANE_LIM = 2.35
SIDE_X, SIDE_Y = (-0.25, 2.75), (-3.4, 3.4)   # distance from the line of 1, height along 1
FAR = 50.0                                     # rays are drawn this long and clipped by the axes


def geometry_setup(fig, *, narrow):
    ax_p, ax_s = panels(fig, narrow, ratios=[1, 1.05] if narrow else [1.6, 1])
    t = np.linspace(0, 2 * np.pi, 241)
    ax_p.plot(ROOT3 * np.cos(t), ROOT3 * np.sin(t), color="0.55", lw=1, label=r"radius $\sqrt{3}$")
    for i in range(3):                         # the shadows of the three coordinate axes
        d = BASIS[:, i] / float(length(BASIS[:, i]))
        ax_p.plot([0, 2.1 * d[0]], [0, 2.1 * d[1]], color="0.8", lw=0.8)
        ax_p.text(2.2 * d[0], 2.2 * d[1], f"$x_{i + 1}$", ha="center", va="center", fontsize=8, color="0.4")
    (ray_p,) = ax_p.plot([0, 1], [0, 1], ":", color="0.45", lw=1)
    (px_p,) = ax_p.plot([0], [0], "o", mfc="white", mec=COLORS["input"], ms=7, mew=1.5)
    (ln_p,) = ax_p.plot([0], [0], "o", color=COLORS["layer_norm"], ms=6)
    (rms_p,) = ax_p.plot([0], [0], "s", color=COLORS["rms_norm"], ms=5)
    ax_p.set_xlim(-PLANE_LIM, PLANE_LIM)
    ax_p.set_ylim(-PLANE_LIM, PLANE_LIM)
    ax_p.set_aspect("equal")
    ax_p.set_xticks([-2, -1, 0, 1, 2])
    ax_p.set_yticks([-2, -1, 0, 1, 2])
    label(ax_p, r"$(x_1 - x_2)/\sqrt{2}$", r"$(x_1 + x_2 - 2x_3)/\sqrt{6}$", "Seen along 1: the plane Σx = 0")
    t = np.linspace(-np.pi / 2, np.pi / 2, 121)
    ax_s.plot(ROOT3 * np.cos(t), ROOT3 * np.sin(t), color="0.55", lw=1)
    ax_s.axhline(0, color="0.3", lw=1)
    ax_s.axvline(0, color="0.6", lw=0.8)
    ax_s.text(SIDE_X[1] - 0.05, 0.12, "plane", ha="right", va="bottom", fontsize=8, color="0.3")
    ax_s.text(0.08, SIDE_Y[1] - 0.1, "1", ha="left", va="top", fontsize=9, color="0.3")
    (ray_s,) = ax_s.plot([0, 1], [0, 1], ":", color=COLORS["rms_norm"], lw=1)
    (drop,) = ax_s.plot([0, 0], [0, 1], "--", color=COLORS["input"], lw=1)
    (x_s,) = ax_s.plot([0], [0], "o", color=COLORS["input"], ms=6, label="x")
    (px_s,) = ax_s.plot([0], [0], "o", mfc="white", mec=COLORS["input"], ms=7, mew=1.5, label="Px = x - mean")
    (ln_s,) = ax_s.plot([0], [0], "o", color=COLORS["layer_norm"], ms=6, label="LayerNorm y")
    (rms_s,) = ax_s.plot([0], [0], "s", color=COLORS["rms_norm"], ms=5, label="RMSNorm y")
    far = ax_s.text(0.97, 0.03, "", transform=ax_s.transAxes, ha="right", va="bottom", fontsize=8,
                    color=COLORS["input"])
    ax_s.set_xlim(*SIDE_X)
    ax_s.set_ylim(*SIDE_Y)
    ax_s.set_aspect("equal")
    ax_s.set_xticks([0, 1, 2])
    label(ax_s, "distance from the line of 1", r"height along 1: $x \cdot 1/\sqrt{3}$", "Side view")
    handles = [x_s, px_s, ln_s, rms_s, ax_p.lines[0]]
    ax_s.legend(handles=handles, loc="center left", bbox_to_anchor=(1.04, 0.5), fontsize=8)
    ax_s.set_anchor("W")                       # the legend takes the room to its right
    return {"ray_p": ray_p, "px_p": px_p, "ln_p": ln_p, "rms_p": rms_p, "ray_s": ray_s, "drop": drop, "x_s": x_s,
            "px_s": px_s, "ln_s": ln_s, "rms_s": rms_s, "far": far}


def _plain(v: float, digits: int) -> float:
    """v rounded to `digits` decimals, with -0 written as 0."""
    return round(float(v), digits) + 0.0


def _side(v) -> tuple[float, float]:
    """(distance from the line of 1, height along 1) of a 3-vector: its place in the side view."""
    return float(length(project(v))), float(along_ones(v))


def geometry_update(art, *, shape, offset, eps):
    x = np.asarray(SHAPES[shape]) + offset
    y_ln, y_rms = layer_norm(x, eps=eps), rms_norm(x, eps=eps)
    px = project(x)
    for key, v in (("px_p", px), ("ln_p", y_ln), ("rms_p", project(y_rms))):
        u = (BASIS * v).sum(axis=-1)   # numpy's own sums: the same digits on every CPU
        art[key].set_data([u[0]], [u[1]])
    d = (BASIS * px).sum(axis=-1) / max(float(length(px)), 1e-300)
    art["ray_p"].set_data([0, FAR * d[0]], [0, FAR * d[1]])
    (r, h), (r_ln, h_ln), (r_rms, h_rms) = _side(x), _side(y_ln), _side(y_rms)
    art["x_s"].set_data([r], [h])
    art["px_s"].set_data([r], [0])
    art["drop"].set_data([r, r], [h, 0])
    art["ln_s"].set_data([r_ln], [h_ln])
    art["rms_s"].set_data([r_rms], [h_rms])
    scale = FAR / max(float(np.hypot(r, h)), 1e-300)
    art["ray_s"].set_data([0, r * scale], [0, h * scale])
    inside = SIDE_X[0] <= r <= SIDE_X[1] and SIDE_Y[0] <= h <= SIDE_Y[1]
    art["far"].set_text("" if inside else f"x is off the view,\nat height {number(h, 3)}")
    n_ln, n_rms = (float(length(y)) for y in (y_ln, y_rms))
    dot_ln, dot_rms = (float(np.sum(y)) for y in (y_ln, y_rms))
    a_x, a_rms = (float(np.degrees(angle_to_plane(v))) for v in (x, y_rms))
    mean, var = (float(a) for a in mean_var(x))
    ms = float(np.mean(x * x))
    f_ln, f_rms = (float(f(x, eps)) / ROOT3 for f in (layer_norm_radius, rms_norm_radius))
    vec = vector_label(x, first=None, fmt=lambda a: number(round(float(a), 10), 4))
    out = {
        "x": f"{vec}: mean {number(round(mean, 12), 4)}, |Px| = {number(r, 4)}",
        f"|y| (sphere radius √3 = {ROOT3:.4f})": f"LayerNorm {n_ln:.4f}, RMSNorm {n_rms:.4f}",
        "y · 1": f"LayerNorm {number(round(dot_ln, 10), 4)}, RMSNorm {_plain(dot_rms, 4):.4f}",
        "angle to the plane": f"x {_plain(a_x, 1):+.1f}°, RMSNorm's y {_plain(a_rms, 1):+.1f}° (the same ray), "
                              "LayerNorm's y 0°",
        "what eps leaves of √3": f"LayerNorm √(var/(var+eps)) = {f_ln:.4f} (var {number(var, 4)}), RMSNorm "
                                 f"√(ms/(ms+eps)) = {f_rms:.4f} (ms {number(ms, 4)})",
    }
    alt = (f"Two views at D = 3 of x = {vec}, eps {number(eps)}. Seen along 1, x's projection onto the plane "
           f"x1 + x2 + x3 = 0 lies {number(r, 3)} from the centre, and LayerNorm's output in the same direction at "
           f"{n_ln:.3f}, {'on' if f_ln > 0.9995 else 'inside'} the circle of radius {ROOT3:.3f}. Side view: "
           + (f"x lies in the plane, and so does RMSNorm's output, at length {n_rms:.3f}" if abs(h) < 1e-9 else
              f"x is {number(h, 3)} along 1; RMSNorm's output keeps that side, {_plain(a_rms, 1):+.1f} degrees from "
              f"the plane at length {n_rms:.3f} with y . 1 = {_plain(dot_rms, 3):.3f}")
           + ", while LayerNorm's lies in the plane with y . 1 = 0.")
    return out, alt


GEOMETRY_PRESETS = {
    "offset": Preset({}, "RMSNorm's square sits where the ray through x meets the sphere, +60.7° from the plane "
                     "like x itself; LayerNorm's circle drops to the plane first, y · 1 = 0"),
    "centred": Preset({"shape": "centred"}, "x lies in the plane already: both norms give the same point on the "
                      f"circle, |y| = {ROOT3:.4f} and y · 1 = 0 for both"),
    "centred, offset 3": Preset({"shape": "centred", "offset": 3.0}, "far along 1 RMSNorm's output climbs toward "
                                "the pole (1, 1, 1), y · 1 = 2.8828 of at most 3, while LayerNorm's does not move"),
    "nearly flat": Preset({"shape": "nearly flat"}, "a tiny spread: LayerNorm still blows its projection up onto "
                          f"the circle (|y| = {ROOT3:.4f}), RMSNorm lands next to the pole"),
    "nearly flat, eps 0.01": Preset({"shape": "nearly flat", "eps": 0.01}, "eps against a variance of 0.001667: "
                                    "LayerNorm keeps only 0.3780 of the radius, RMSNorm 0.9950"),
    "eps 1": Preset({"eps": 1.0}, "a large eps pulls both inside the sphere, LayerNorm's more (0.5247 of √3) "
                    "than RMSNorm's (0.7835): the variance is the smaller of the two statistics"),
}
