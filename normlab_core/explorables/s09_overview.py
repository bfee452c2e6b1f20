"""Section 23.9 explorable: the whole chapter in one view (norm, placement, input offset, depth)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..examples import CENTRED, STACK_INPUT
from ..explore import Choice, Explorable, Slider
from ..norms import layer_norm, rms_norm
from ..residual import stack_curves
from ..style import COLORS, label

SHAPE = CENTRED  # section 23.6's zero-centred vector; offset 10 gives [8..12]
X0 = STACK_INPUT  # section 23.7's stack input
MAX_DEPTH = 64
STACK_EPS = 1e-6  # the epsilon of the chapter's residual stack (listing 124)
OUT_LIM = (-2.4, 2.4)
SENS_LIM = (1e-3, 1e2)
NORMS = {"layer_norm": ("LayerNorm", layer_norm), "rms_norm": ("RMSNorm", rms_norm)}


@lru_cache(maxsize=8)
def depth_curves(norm: str) -> dict:
    """{placement: (|out|, sensitivity)} at depths 1..MAX_DEPTH for the chosen norm, exact float64, cached."""
    kind = "layer" if norm == "layer_norm" else "rms"
    return {p: stack_curves(X0, MAX_DEPTH, p, eps=STACK_EPS, norm=kind) for p in ("pre", "post")}


def _setup(fig):
    ax_o, ax_s = fig.subplots(1, 2)
    idx = np.arange(SHAPE.size)
    art = {"animated": []}
    (art["other"],) = ax_o.plot(idx, SHAPE, "o--", color="0.6", lw=1.2, ms=4)
    (art["out"],) = ax_o.plot(idx, SHAPE, "o-", color=COLORS["layer_norm"], ms=6)
    ax_o.axhline(0, color="0.6", lw=0.8)
    ax_o.set_xticks(idx)
    ax_o.set_xlim(-0.4, SHAPE.size - 0.6)
    ax_o.set_ylim(*OUT_LIM)
    art["text_o"] = ax_o.text(0.02, 0.97, "", transform=ax_o.transAxes, va="top", fontsize=8)
    label(ax_o, "component index i of x = [-2,-1,0,1,2] + offset", "y_i (dimensionless)",
          "Output: RMSNorm squeezes an offset input")

    depths = np.arange(1, MAX_DEPTH + 1)
    for p, name in (("post", "post-norm"), ("pre", "pre-norm")):
        (art[f"s_{p}"],) = ax_s.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=name)
        (art[f"m_{p}"],) = ax_s.plot([1], [1], "o", color=COLORS[p], ms=7)
        art["animated"] += [art[f"s_{p}"], art[f"m_{p}"]]
    art["vline"] = ax_s.axvline(1, color="0.5", lw=0.8, ls="--")
    ax_s.set_xscale("log", base=2)
    ticks = [2 ** k for k in range(MAX_DEPTH.bit_length())]
    ax_s.set_xticks(ticks, [str(t) for t in ticks])
    ax_s.set_yscale("log")
    ax_s.set_xlim(1, MAX_DEPTH)
    ax_s.set_ylim(*SENS_LIM)
    ax_s.legend(loc="lower left")
    art["text_s"] = ax_s.text(0.98, 0.96, "", transform=ax_s.transAxes, ha="right", va="top", fontsize=8)
    ax_s.text(0.98, 0.89, "stack input x0 = [1, 2, 3, 4]", transform=ax_s.transAxes, ha="right", va="top",
              fontsize=8, color="0.35")
    label(ax_s, "depth (layers, log scale)", "||d out / d x0[0]|| (dimensionless)",
          "Sensitivity to x0[0] against depth")
    art["animated"] += [art["other"], art["out"], art["text_o"], art["vline"], art["text_s"]]
    return art


def _update(art, norm, placement, offset, depth):
    x = SHAPE + offset
    name, fn = NORMS[norm]
    other_key = "rms_norm" if norm == "layer_norm" else "layer_norm"
    other_name, other_fn = NORMS[other_key]
    y, y_other = fn(x), other_fn(x)
    art["out"].set_ydata(y)
    art["out"].set_color(COLORS[norm])
    art["other"].set_ydata(y_other)
    spread, spread_other = float(np.ptp(y)), float(np.ptp(y_other))
    art["text_o"].set_text(f"solid: {name}, {y.min():+.3f} to {y.max():+.3f}\ndashed: {other_name}")

    data = depth_curves(norm)
    for p in ("post", "pre"):
        sens = data[p][1]
        chosen = p == placement
        art[f"s_{p}"].set_ydata(np.clip(sens, *SENS_LIM))
        art[f"s_{p}"].set_linewidth(2.6 if chosen else 1.0)
        art[f"s_{p}"].set_alpha(1.0 if chosen else 0.45)
        art[f"m_{p}"].set_data([depth], [np.clip(sens[depth - 1], *SENS_LIM)])
        art[f"m_{p}"].set_alpha(1.0 if chosen else 0.45)
    art["vline"].set_xdata([depth, depth])
    norms, sens = data[placement]
    kept = sens[depth - 1] / sens[0]
    art["text_s"].set_text(f"{placement}-norm, depth {depth}: {sens[depth - 1]:.3g} ({kept:.0%} of depth 1)")

    out = {
        "input x": "[" + ", ".join(f"{v:g}" for v in x) + f"]  (mean {x.mean():g})",
        f"{name} output": "[" + ", ".join(f"{v:+.3f}" for v in y) + f"]  (max - min {spread:.3f})",
        f"{other_name} output": "[" + ", ".join(f"{v:+.3f}" for v in y_other) + f"]  (max - min {spread_other:.3f})",
        f"stack ({name}, {placement}-norm) at depth {depth}":
            f"|out| {norms[depth - 1]:.4g}, sensitivity {sens[depth - 1]:.4g} = {kept:.1%} of its depth-1 value",
    }
    if norm == "layer_norm" and placement == "post":
        out["why flat"] = ("LayerNorm removes the sublayer's constant bias and its scale, so every post-norm "
                           "layer returns the same vector: this toy stack cannot fade with LayerNorm")
    if norm == "rms_norm" and abs(offset) >= 5:
        out["why squeezed"] = (f"the offset {offset:g} dominates the RMS, so RMSNorm keeps only "
                               f"{spread / 2 ** 1.5:.1%} of LayerNorm's spread")
    return out


def entries() -> list:
    """The catalog entries of section 23.9."""
    return [
        Explorable(
            "chapter_overview",
            {
                "norm": Choice(["layer_norm", "rms_norm"], "rms_norm", label="norm",
                               labels=["LayerNorm", "RMSNorm"]),
                "placement": Choice(["pre", "post"], "post", label="placement",
                                    labels=["pre-norm", "post-norm"]),
                "offset": Slider(-10.0, 20.0, 10.0, step=0.5, label="input offset (added to [-2,-1,0,1,2])",
                                 steps=7),
                "depth": Slider(1, MAX_DEPTH, 32, scale="log", label="depth (layers)", steps=7),
            },
            _setup,
            _update,
            title="The chapter in one view: a norm's output on an offset input, and a stack's sensitivity",
            alt=lambda norm, placement, offset, depth: (
                f"Two panels. Left: {NORMS[norm][0]} of the input [-2,-1,0,1,2] + {offset:g}, with the other "
                f"norm dashed, on a fixed axis from {OUT_LIM[0]} to {OUT_LIM[1]}. Right: log-log sensitivity of a "
                f"residual stack with {NORMS[norm][0]} against depth 1 to {MAX_DEPTH}, {placement}-norm drawn "
                f"bold, with markers at depth {depth}."),
        )
    ]
