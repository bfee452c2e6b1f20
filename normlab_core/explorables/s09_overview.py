"""Section 23.9 explorables: the book in two views (a norm's output on an offset input; a stack's sensitivity)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..controls import Preset
from ..examples import CENTRED, STACK_INPUT
from ..explore import Choice, Explorable, Slider
from ..norms import layer_norm, rms_norm
from ..residual import stack_curves
from ..style import COLORS, label

SHAPE = CENTRED  # section 23.6's zero-centred vector; offset 10 gives [8..12]
X0 = STACK_INPUT  # section 23.7's stack input
MAX_DEPTH = 64
STACK_EPS = 1e-6  # the epsilon of the reference program's residual stack
OUT_LIM = (-2.4, 2.4)
SENS_LIM = (1e-3, 1e2)
NORMS = {"layer_norm": ("LayerNorm", layer_norm), "rms_norm": ("RMSNorm", rms_norm)}


@lru_cache(maxsize=8)
def depth_curves(norm: str) -> dict:
    """{placement: (|out|, sensitivity)} at depths 1..MAX_DEPTH for the chosen norm, exact float64, cached."""
    kind = "layer" if norm == "layer_norm" else "rms"
    return {p: stack_curves(X0, MAX_DEPTH, p, eps=STACK_EPS, norm=kind) for p in ("pre", "post")}


def _setup_output(fig):
    ax_o = fig.subplots(1, 1)
    idx = np.arange(SHAPE.size)
    art = {}
    (art["other"],) = ax_o.plot(idx, SHAPE, "o--", color="0.6", lw=1.2, ms=4)
    (art["out"],) = ax_o.plot(idx, SHAPE, "o-", color=COLORS["layer_norm"], ms=6)
    ax_o.axhline(0, color="0.6", lw=0.8)
    ax_o.set_xticks(idx)
    ax_o.set_xlim(-0.4, SHAPE.size - 0.6)
    ax_o.set_ylim(*OUT_LIM)
    art["text_o"] = ax_o.text(0.02, 0.97, "", transform=ax_o.transAxes, va="top", fontsize=8)
    label(ax_o, "component index i of x = [-2,-1,0,1,2] + offset", "y_i (dimensionless)",
          "Output: RMSNorm squeezes an offset input, LayerNorm does not")
    art["text_o"].set_in_layout(False)
    art["animated"] = [art["other"], art["out"], art["text_o"]]
    return art


def _update_output(art, norm, offset):
    x = SHAPE + offset
    name, fn = NORMS[norm]
    other_name, other_fn = NORMS["rms_norm" if norm == "layer_norm" else "layer_norm"]
    y, y_other = fn(x), other_fn(x)
    art["out"].set_ydata(y)
    art["out"].set_color(COLORS[norm])
    art["other"].set_ydata(y_other)
    art["text_o"].set_text(f"solid: {name}, {y.min():+.3f} to {y.max():+.3f}\ndashed: {other_name}")
    y_ln, y_rms = layer_norm(x), rms_norm(x)
    return {
        "input x": "[" + ", ".join(f"{v:g}" for v in x) + f"]  (mean {x.mean():g})",
        "LayerNorm output": "[" + ", ".join(f"{v:+.3f}" for v in y_ln) + f"]  (max - min {np.ptp(y_ln):.3f})",
        "RMSNorm output": "[" + ", ".join(f"{v:+.3f}" for v in y_rms) + f"]  (max - min {np.ptp(y_rms):.3f})",
        "RMSNorm keeps": f"{np.ptp(y_rms) / np.ptp(y_ln):.1%} of LayerNorm's spread",
    }


def _setup_depth(fig):
    ax_s = fig.subplots(1, 1)
    art = {"animated": []}
    depths = np.arange(1, MAX_DEPTH + 1)
    for p, name in (("post", "post-norm"), ("pre", "pre-norm")):
        (art[f"s_{p}"],) = ax_s.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=name)
        (art[f"m_{p}"],) = ax_s.plot([1], [1], "o", color=COLORS[p], ms=7, clip_on=False, in_layout=False)
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
    ax_s.text(0.98, 0.88, "stack input x0 = [1, 2, 3, 4]", transform=ax_s.transAxes, ha="right", va="top",
              fontsize=8, color="0.35")
    label(ax_s, "depth (layers, log scale)", "||d out / d x0[0]|| (dimensionless)",
          "Sensitivity to x0[0] against depth (chosen placement bold)")
    art["text_s"].set_in_layout(False)
    art["animated"] += [art["vline"], art["text_s"]]
    return art


def _update_depth(art, norm, placement, depth):
    name = NORMS[norm][0]
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
    out = {}
    for p in ("post", "pre"):
        p_norms, p_sens = data[p]
        out[f"{p}-norm"] = (f"sensitivity {p_sens[depth - 1]:.4g} at depth {depth} "
                            f"({p_sens[depth - 1] / p_sens[0]:.3g} x its depth-1 value), "
                            f"|out| {p_norms[depth - 1]:.4g}")
    if norm == "layer_norm" and placement == "post":
        note = ("LayerNorm removes the sublayer's constant bias and its scale, so every post-norm layer returns the "
                "same vector: this toy stack cannot fade with LayerNorm")
    elif placement == "post":
        note = f"with {name} the post-norm sensitivity fades with depth"
    else:
        note = f"pre-norm keeps the identity path: with {name} its sensitivity grows with depth"
    out["note"] = note
    return out


OFFSET_STOPS = [-10.0, -5.0, -2.0, 0.0, 2.0, 5.0, 10.0, 20.0]
DEPTH_STOPS = [1, 2, 4, 8, 16, 32, 64]
NORM_CHOICE = dict(options=["layer_norm", "rms_norm"], value="rms_norm", label="norm", labels=["LayerNorm", "RMSNorm"])

OUTPUT_PRESETS = {
    "RMSNorm, offset 0": Preset({"offset": 0.0}, "on zero-mean input the two norms give the same output"),
    "RMSNorm, offset 10": Preset({"offset": 10.0}, (
        "the solid RMSNorm line flattens to +0.792 .. +1.188, while the dashed LayerNorm line does not move")),
    "RMSNorm, offset -10": Preset({"offset": -10.0}, "a negative offset mirrors it below zero"),
}

DEPTH_PRESETS = {
    "RMSNorm, post-norm, depth 1": Preset({"depth": 1}, "one post-norm layer: the sensitivity is 0.3507"),
    "RMSNorm, post-norm, depth 32": Preset({"depth": 32}, "the marker sinks to 0.04929 after 32 layers"),
    "RMSNorm, post-norm, depth 64": Preset({"depth": 64}, "and to 0.006253 after 64"),
    "RMSNorm, pre-norm, depth 64": Preset({"placement": "pre", "depth": 64}, (
        "switch to pre-norm and the bold curve rises instead: 9.573 at depth 64")),
    "LayerNorm, post-norm": Preset({"norm": "layer_norm"}, (
        "a flat line at 0.490: the toy-stack caveat of takeaway 8, not a cure for post-norm")),
    "LayerNorm, pre-norm, depth 64": Preset({"norm": "layer_norm", "placement": "pre", "depth": 64}, (
        "16.25 against RMSNorm's 9.573: pre-norm keeps the identity path with either norm, and the norm inside the "
        "branch decides how fast the sensitivity grows")),
}


def entries() -> list:
    """The catalog entries of section 23.9."""
    return [
        Explorable(
            "overview_norm_output",
            {
                "norm": Choice(**NORM_CHOICE),
                "offset": Slider(-10.0, 20.0, 10.0, label="input offset (added to [-2,-1,0,1,2])",
                                 stops=OFFSET_STOPS),
            },
            _setup_output,
            _update_output,
            title="One norm's output on an offset input, the other norm dashed",
            alt=lambda norm, offset: (
                f"{NORMS[norm][0]} of the input [-2,-1,0,1,2] + {offset:g} against component index, with the other "
                f"norm dashed, on a fixed axis from {OUT_LIM[0]} to {OUT_LIM[1]}."),
            presets=OUTPUT_PRESETS,
            height=2.9,
        ),
        Explorable(
            "overview_stack_depth",
            {
                "norm": Choice(**NORM_CHOICE),
                "placement": Choice(["pre", "post"], "post", label="placement", labels=["pre-norm", "post-norm"]),
                "depth": Slider(1, MAX_DEPTH, 32, scale="log", label="depth (layers)", stops=DEPTH_STOPS),
            },
            _setup_depth,
            _update_depth,
            title="A residual stack's sensitivity against depth, for either norm and either placement",
            alt=lambda norm, placement, depth: (
                f"Log-log sensitivity of a residual stack with {NORMS[norm][0]} against depth 1 to {MAX_DEPTH}, "
                f"{placement}-norm drawn bold, with markers at depth {depth}."),
            presets=DEPTH_PRESETS,
            height=2.9,
        ),
    ]
