"""Section 23.8 explorables: checking the LayerNorm backward pass with finite differences."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..backward import layer_norm_backward
from ..controls import Preset
from ..examples import BACKWARD_INPUT, BACKWARD_UPSTREAM
from ..explore import Choice, Explorable, Slider
from ..gradcheck import numerical_gradient
from ..norms import layer_norm
from ..style import COLORS, label

H_LO, H_HI = 1e-10, 1e-1
CHAPTER_H = 1e-4
ERR_LIM = (1e-14, 1.0)
DTYPES = ("float32", "float64")
STYLE = {"float64": "-", "float32": "--"}
UNIT_ROUNDOFF = {"float32": float(np.finfo(np.float32).eps) / 2, "float64": float(np.finfo(np.float64).eps) / 2}


def _arrays(dtype: str):
    dt = np.dtype(dtype)
    return BACKWARD_INPUT.astype(dt), BACKWARD_UPSTREAM.astype(dt)


@lru_cache(maxsize=4)
def analytic(dtype: str) -> np.ndarray:
    """The closed-form gradient in this dtype (what a gradient check compares against)."""
    x, up = _arrays(dtype)
    return layer_norm_backward(up, x)


@lru_cache(maxsize=512)
def check(h: float, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(numerical gradient, |numerical - analytic| per dimension) for central differences with step h."""
    x, up = _arrays(dtype)
    num = numerical_gradient(layer_norm, x, up, h=h)
    return num, np.abs(num.astype(np.float64) - analytic(dtype).astype(np.float64))


@lru_cache(maxsize=1)
def curves() -> tuple[np.ndarray, dict]:
    """A grid of steps h and, per dtype, the largest disagreement over the five dimensions."""
    hs = np.logspace(np.log10(H_LO), np.log10(H_HI), 91)
    return hs, {dt: np.array([check(float(h), dt)[1].max() for h in hs]) for dt in DTYPES}


def _clip(v):
    return np.clip(v, *ERR_LIM)


def _setup(fig):
    ax, ax_dim = fig.subplots(1, 2, width_ratios=[2.1, 1])
    hs, err = curves()
    art = {"animated": []}
    # Reference slopes: truncation error grows like h**2, round-off error like u/h (u: unit round-off).
    ax.plot(hs, _clip(0.05 * hs ** 2), color="0.6", lw=0.9, ls=":", label="slopes h² and u/h")
    for dt in DTYPES:
        ax.plot(hs, _clip(UNIT_ROUNDOFF[dt] / hs), color="0.6", lw=0.9, ls=":")
    for dt in DTYPES:
        (art[f"curve_{dt}"],) = ax.plot(hs, _clip(err[dt]), STYLE[dt], color=COLORS["layer_norm"],
                                        label=f"{dt}: largest error")
    ax.axvline(CHAPTER_H, color="0.45", lw=0.9, ls=":")
    # Top of the panel: the only region near h = 1e-4 that no curve or slope line crosses.
    ax.text(CHAPTER_H * 1.25, 0.4, "reference\nh = 1e-4", fontsize=7.5, va="top", color="0.3")
    art["vline"] = ax.axvline(CHAPTER_H, color=COLORS["marker"], lw=1.0, ls="--")
    (art["dot"],) = ax.plot([CHAPTER_H], [1e-5], "o", color=COLORS["marker"], ms=6, zorder=5, clip_on=False,
                            in_layout=False)
    art["animated"] += [art["curve_float32"], art["curve_float64"], art["vline"], art["dot"]]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(H_LO, H_HI)
    ax.set_ylim(*ERR_LIM)
    ax.legend(loc="lower left")
    label(ax, "finite-difference step h (input units, log scale)",
          "max_i |numerical - analytic| (gradient units)", "The check's error is V-shaped in h")
    dims = np.arange(BACKWARD_INPUT.size)
    art["bars"] = ax_dim.bar(dims, np.full(BACKWARD_INPUT.size, 1e-6), bottom=ERR_LIM[0], color=COLORS["layer_norm"],
                             width=0.6)
    art["animated"] += list(art["bars"])
    ax_dim.set_yscale("log")
    ax_dim.set_ylim(*ERR_LIM)
    ax_dim.set_xlim(-0.6, BACKWARD_INPUT.size - 0.4)
    ax_dim.set_xticks(dims)
    ax_dim.axhline(1e-3, color="0.5", lw=0.8, ls="--")
    label(ax_dim, "dimension i", "|numerical - analytic| (gradient units)",
          "Per dimension at h\n(dashed: 1e-3 match limit)")
    return art


def _update(art, h, dtype):
    h = float(h)
    _, err = curves()
    for dt in DTYPES:
        chosen = dt == dtype
        art[f"curve_{dt}"].set_alpha(1.0 if chosen else 0.35)
        art[f"curve_{dt}"].set_linewidth(2.2 if chosen else 1.2)
    num, diff = check(h, dtype)
    worst = int(np.argmax(diff))
    art["vline"].set_xdata([h, h])
    art["dot"].set_data([h], [_clip(diff[worst])])
    for bar, d in zip(art["bars"], diff, strict=True):
        bar.set_height(_clip(d) - ERR_LIM[0])
    x, _ = _arrays(dtype)
    moved = (x + x.dtype.type(h)) != x
    grad = analytic(dtype)
    out = {
        "analytic": "[" + ", ".join(f"{g:+.6f}" for g in grad) + "]",
        "numerical": "[" + ", ".join(f"{g:+.6f}" for g in num) + "]",
        "largest error": f"{diff[worst]:.2e} at dimension {worst}",
    }
    h_best = float(curves()[0][np.argmin(err[dtype])])
    if not moved.any():
        out["what happens"] = (f"h = {h:.0e} is below the spacing of {dtype} numbers near x (1 to 5): x + h rounds "
                               "back to x, so every difference is exactly 0 and the numerical gradient is 0")
    elif not moved.all():
        out["what happens"] = (f"x + h rounds back to x for {int((~moved).sum())} of the 5 components "
                               "(the larger ones): their numerical gradient is 0")
    elif h < h_best:
        u = UNIT_ROUNDOFF[dtype]
        out["what happens"] = (f"round-off dominates: the outputs carry errors of about u = {u:.0e}, and dividing "
                               f"by 2h amplifies them; the best step for {dtype} is near {h_best:.0e}")
    else:
        out["what happens"] = ("truncation dominates: a central difference is off by about h² times the "
                               f"third derivative; the best step for {dtype} is near {h_best:.0e}")
    return out


# 1, 2, 5 per decade: close to evenly spaced on the log axis, with round labels.
H_STOPS = [m * 10.0 ** e for e in range(-10, -1) for m in (1, 2, 5)] + [H_HI]
H_STOPS = [float(f"{h:.0e}") for h in H_STOPS]

PRESETS = {
    "reference setting": Preset({}, (
        "h = 1e-4 in float32: the disagreement is 2.6e-4, on the round-off branch of the V, and dimension 2 "
        "has the largest bar, as in the reference program's output")),
    "float32, h 1e-2": Preset({"h": 1e-2}, (
        "near the bottom of the float32 V: 3.3e-6; larger steps pay in truncation error (like h²), smaller "
        "ones in round-off (like u/h)")),
    "float32, h 1e-7": Preset({"h": 1e-7}, (
        "x + h rounds back to x for the larger components: their numerical gradient is exactly 0, and a check "
        "would flag a correct gradient")),
    "float32, h 2e-8": Preset({"h": 2e-8}, "now x + h rounds back to x for every component: the numerical "
                             "gradient is all zeros"),
    "float64, h 2e-5": Preset({"dtype": "float64", "h": 2e-5}, (
        "float64 has the same V, shifted down and left: its best step is near 2e-5 with a disagreement of "
        "5e-12; the dotted lines are the slopes h² and u/h, with u the unit round-off of each dtype")),
}


def entries() -> list:
    """The catalog entries of section 23.8."""
    return [
        Explorable(
            "backward_fd_step",
            {
                "h": Slider(H_LO, H_HI, CHAPTER_H, scale="log", label="finite-difference step h", stops=H_STOPS),
                "dtype": Choice(list(DTYPES), "float32", label="arithmetic"),
            },
            _setup,
            _update,
            title="Gradient check of LayerNorm's backward pass: how the step size decides the error",
            presets=PRESETS,
            alt=lambda h, dtype: (
                "Left: log-log plot of the largest disagreement between the analytic and the finite-difference "
                "gradient of LayerNorm on x = [1, 3, 2, 5, 4] against the step h from 1e-10 to 1e-1, for float32 "
                f"(dashed) and float64 (solid); both are V-shaped. {dtype} is highlighted and h = {h:.0e} is "
                "marked; a dotted line marks the reference program's step 1e-4. Right: the disagreement per "
                "dimension at that step."),
        )
    ]
