"""Section 23.8: checking the LayerNorm backward pass with finite differences."""

from __future__ import annotations

from functools import partial

import numpy as np

from ..backward import layer_norm_backward
from ..examples import BACKWARD_INPUT, BACKWARD_UPSTREAM
from ..formatting import number
from ..gradcheck import numerical_gradient
from ..interactive import Choice, Explorable, Preset, Slider, scalar, vector
from ..norms import layer_norm
from .style import COLORS, NARROW_IN, blank_figure, house_style, index_ticks, label, panels, vector_label

H_LO, H_HI = 1e-10, 1e-1
REFERENCE_H = 1e-4
ERR_LIM = (1e-14, 1.0)
DTYPES = ("float32", "float64")
STYLE = {"float64": "-", "float32": "--"}
UNIT_ROUNDOFF = {dt: float(np.finfo(dt).eps) / 2 for dt in DTYPES}


def check(x, dy, eps, h: float, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(numerical gradient, |numerical - analytic| per component) for central differences with step h in dtype."""
    x, dy = x.astype(dtype), dy.astype(dtype)
    num = numerical_gradient(partial(layer_norm, eps=eps), x, dy, h=h)
    return num, np.abs(num.astype(np.float64) - layer_norm_backward(dy, x, eps=eps).astype(np.float64))


def setup(fig, *, narrow, x, dy, eps):
    ax, ax_dim = panels(fig, narrow, ratios=[2.1, 1] if not narrow else [1.3, 1])
    hs = np.logspace(np.log10(H_LO), np.log10(H_HI), 91)
    art = {"ax": ax}
    ax.plot(hs, np.clip(0.05 * hs ** 2, *ERR_LIM), color="0.6", lw=0.9, ls=":", label=r"slopes $h^2$ and $u/h$")
    for dt in DTYPES:
        ax.plot(hs, np.clip(UNIT_ROUNDOFF[dt] / hs, *ERR_LIM), color="0.6", lw=0.9, ls=":")
        worst = [check(x, dy, eps, float(h), dt)[1].max() for h in hs]
        (art[dt],) = ax.plot(hs, np.clip(worst, *ERR_LIM), STYLE[dt], color=COLORS["layer_norm"],
                             label=f"{dt}: largest error")
        art[f"best_{dt}"] = float(hs[int(np.argmin(worst))])
    ax.axvline(REFERENCE_H, color="0.45", lw=0.9, ls=":")
    ax.text(REFERENCE_H * 1.6, 0.3, "reference\nh = 1e-4", va="top", color="0.3")
    art["vline"] = ax.axvline(REFERENCE_H, color=COLORS["marker"], lw=1.0, ls="--")
    (art["dot"],) = ax.plot([REFERENCE_H], [1e-5], "o", color=COLORS["marker"], ms=6, zorder=5, clip_on=False)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(H_LO, H_HI)
    ax.set_ylim(*ERR_LIM)
    ax.legend(loc="lower left")
    label(ax, "step h (input units, log scale)" if narrow else "finite-difference step h (input units, log scale)",
          "largest |numerical - analytic|",
          "The check's error is V-shaped in h")
    dims = np.arange(x.size)
    art["bars"] = ax_dim.bar(dims, np.full(x.size, 1e-6), bottom=ERR_LIM[0], color=COLORS["layer_norm"], width=0.6)
    ax_dim.set_yscale("log")
    ax_dim.set_ylim(*ERR_LIM)
    ax_dim.set_xlim(-0.6, x.size - 0.4)
    index_ticks(ax_dim, x.size)
    ax_dim.axhline(1e-3, color="0.5", lw=0.8, ls="--")
    label(ax_dim, "component i", "|numerical - analytic|", "Per component at h" + (" (dashed: 1e-3 limit)" if narrow
                                                                                   else "\n(dashed: 1e-3 match limit)"))
    return art


def update(art, *, h, dtype, x, dy, eps):
    for dt in DTYPES:
        art[dt].set_alpha(1.0 if dt == dtype else 0.35)
        art[dt].set_linewidth(2.2 if dt == dtype else 1.2)
    num, diff = check(x, dy, eps, h, dtype)
    worst = int(np.argmax(diff))
    art["vline"].set_xdata([h, h])
    art["dot"].set_data([h], [np.clip(diff[worst], *ERR_LIM)])
    for bar, d in zip(art["bars"], diff, strict=True):
        bar.set_height(np.clip(d, *ERR_LIM) - ERR_LIM[0])
    xs, step = x.astype(dtype), np.dtype(dtype).type(h)
    up, down = (xs + step) != xs, (xs - step) != xs      # which nudges survive rounding, each way
    grad = layer_norm_backward(dy.astype(dtype), xs, eps=eps)
    n, best = x.size, art[f"best_{dtype}"]
    out = {
        "analytic": "[" + ", ".join(f"{g:+.6f}" for g in grad) + "]",
        "numerical": "[" + ", ".join(f"{g:+.6f}" for g in num) + "]",
        "largest error": f"{number(diff[worst], 3)} at component {worst}",
    }
    both, one = int(np.sum(~up & ~down)), int(np.sum(up != down))
    if both == n:
        what = (f"h = {number(h)} is below half the spacing of {dtype} numbers near every x_i: x + h and x - h both "
                "round back to x, so every difference is exactly 0 and the numerical gradient is 0")
    elif both or one:
        what = (f"x + h and x - h both round back to x for {both} of the {n} components (numerical gradient exactly "
                f"0)" if both else "no component loses both nudges")
        what += (f"; for {one} more only one of them does, so its difference spans half the step" if one else "")
    elif h < best:
        what = (f"round-off dominates: the outputs carry errors of about u = {number(UNIT_ROUNDOFF[dtype], 2)}, and "
                f"dividing by 2h amplifies them; the best step for {dtype} is near {number(best, 1)}")
    else:
        what = ("truncation dominates: a central difference is off by about h² times the third derivative; the best "
                f"step for {dtype} is near {number(best, 1)}")
    out["what happens"] = what
    alt = (f"Left: log-log plot of the largest disagreement between the analytic and the finite-difference gradient of "
           f"LayerNorm on x = {vector_label(x)} against the step h "
           f"from 1e-10 to 0.1, for float32 (dashed) and float64 (solid); both are V-shaped. At h = {number(h)} in "
           f"{dtype} (marked) it is {number(diff[worst], 2)}, largest at component {worst}. Right: the disagreement "
           "per component at that step.")
    return out, alt


H_STOPS = [float(f"{m * 10.0 ** e:.0e}") for e in range(-10, -1) for m in (1, 2, 5)] + [H_HI]   # 1, 2, 5 a decade

PRESETS = {
    "reference setting": Preset({}, (
        "h = 1e-4 in float32: the disagreement is 2.59e-4, on the round-off branch of the V, and component 2 "
        "has the largest bar, as in the reference program's output"), about_default=True),
    "float32, h 1e-2": Preset({"h": 1e-2}, (
        "near the bottom of the float32 V: 3.32e-6; larger steps pay in truncation error (like h²), smaller "
        "ones in round-off (like u/h)"), about_default=True),
    "float32, h 1e-7": Preset({"h": 1e-7}, (
        "x + h and x - h round back to x for the larger components: their numerical gradient is exactly 0, and a "
        "check would flag a correct gradient"), about_default=True),
    "float32, h 2e-8": Preset({"h": 2e-8}, "now x ± h round back to x for every component: the numerical "
                             "gradient is all zeros"),
    "float64, h 2e-5": Preset({"dtype": "float64", "h": 2e-5}, (
        "float64 has the same V, shifted down and left: its best step is near 2e-5 with a disagreement of "
        "5.01e-12; the dotted lines are the slopes h² and u/h, with u the unit round-off of each dtype"),
        about_default=True),
}


def jacobian_figure(jacobians: dict, narrow: bool = False):
    """Heat maps of LayerNorm's Jacobian, row j = d x_hat_j / dx; jacobians maps a panel title to a (D, D) array."""
    n = len(jacobians)
    fig = blank_figure(NARROW_IN, 0.3 + 3.4 * n) if narrow else blank_figure(height=3.1)
    with house_style():
        for ax, (title, jac) in zip(panels(fig, narrow, n), jacobians.items(), strict=True):
            jac = np.asarray(jac, dtype=float)
            lim = 1.3 * float(np.max(np.abs(jac))) or 1.0       # a lighter scale, so the values stay legible
            ax.imshow(jac, cmap="RdBu_r", vmin=-lim, vmax=lim)
            ax.grid(False)
            d = jac.shape[0]
            if d <= 8:
                for (j, i), v in np.ndenumerate(jac):
                    ax.text(i, j, f"{round(float(v), 2) + 0.0:+.2f}", ha="center", va="center", fontsize=8)
            index_ticks(ax, d)
            ax.set_yticks(range(d))
            label(ax, "input i", "output j", title)
    return fig


def entries() -> list:
    """The explorables of section 23.8."""
    return [Explorable(
        "backward_fd_step", title="Gradient check of LayerNorm's backward pass: how the step size decides the error",
        controls={"h": Slider(H_STOPS, REFERENCE_H, label="finite-difference step h", free=(1e-12, 1.0)),
                  "dtype": Choice(list(DTYPES), "float32", label="arithmetic")},
        inputs={"x": vector(BACKWARD_INPUT, 2, 32), "dy": vector(BACKWARD_UPSTREAM, 2, 32),
                "eps": scalar(1e-5, 0.0, 1.0)},
        setup=setup, update=update, presets=PRESETS, narrow=(NARROW_IN, 5.6))]
