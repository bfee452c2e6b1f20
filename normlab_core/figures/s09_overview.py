"""Section 23.9: the book in two views, a norm's output on an offset input and a stack's sensitivity."""

from __future__ import annotations

import numpy as np

from .. import norms
from ..examples import CENTRED, STACK_INPUT
from ..formatting import number
from ..interactive import Choice, Explorable, Preset, Slider, scalar, vector
from ..norms import layer_norm, rms_norm
from ..residual import depth_curves
from .style import COLORS, NARROW_IN, PLACEMENT_NAMES, index_ticks, label, vector_label

MAX_DEPTH = 64
OUT_LIM = (-2.4, 2.4)
SENS_LIM = (1e-3, 1e2)
NORMS = {"layer_norm": (norms.layernorm.NAME, layer_norm), "rms_norm": (norms.rmsnorm.NAME, rms_norm)}   # compared


def curves(art, norm, x0, eps) -> dict:
    """depth_curves of the stack with the registered norm `norm`, computed once per drawing."""
    if norm not in art["curves"]:
        art["curves"][norm] = depth_curves(norm, x0, MAX_DEPTH, eps=eps)
    return art["curves"][norm]


def output_setup(fig, *, narrow, x, eps):
    ax = fig.subplots()
    idx = np.arange(x.size)
    (other,) = ax.plot(idx, x, "o--", color="0.6", lw=1.2, ms=4)
    (line,) = ax.plot(idx, x, "o-", color=COLORS["layer_norm"], ms=6)
    ax.axhline(0, color="0.6", lw=0.8)
    index_ticks(ax, x.size)
    ax.set_xlim(-0.4, x.size - 0.6)
    ax.set_ylim(*OUT_LIM)
    text = ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top")
    label(ax, "component index i of x", r"$y_i$", "Output: RMSNorm squeezes an offset input, LayerNorm does not"
          if not narrow else "RMSNorm squeezes an offset input")
    return {"other": other, "out": line, "text": text}


def output_update(art, *, norm, offset, x, eps):
    v = offset + (x - x.mean())
    name, fn = NORMS[norm]
    other_name, other_fn = NORMS["rms_norm" if norm == "layer_norm" else "layer_norm"]
    y, y_other = fn(v, eps=eps), other_fn(v, eps=eps)
    art["out"].set_ydata(np.clip(y, *OUT_LIM))
    art["out"].set_color(COLORS[norm])
    art["other"].set_ydata(np.clip(y_other, *OUT_LIM))
    art["text"].set_text(f"solid: {name}, {y.min():+.3f} to {y.max():+.3f}\ndashed: {other_name}")
    y_ln, y_rms = layer_norm(v, eps=eps), rms_norm(v, eps=eps)
    out = {
        "input x": f"{vector_label(v, 3)} (mean {number(v.mean())})",
        "LayerNorm output": "[" + ", ".join(f"{a:+.3f}" for a in y_ln) + f"] (max - min {np.ptp(y_ln):.3f})",
        "RMSNorm output": "[" + ", ".join(f"{a:+.3f}" for a in y_rms) + f"] (max - min {np.ptp(y_rms):.3f})",
        "RMSNorm keeps": f"{np.ptp(y_rms) / np.ptp(y_ln):.1%} of LayerNorm's spread",
    }
    alt = (f"{name} of the input {vector_label(v, 3)} against component index, from {y.min():+.2f} to "
           f"{y.max():+.2f}, with {other_name} dashed, on a fixed axis from {number(OUT_LIM[0])} to "
           f"{number(OUT_LIM[1])}; RMSNorm keeps "
           f"{np.ptp(y_rms) / np.ptp(y_ln):.0%} of LayerNorm's spread.")
    return out, alt


def depth_setup(fig, *, narrow, x0, eps):
    ax = fig.subplots()
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"curves": {n: depth_curves(n, x0, MAX_DEPTH, eps=eps) for n in NORMS}}   # others on first use
    for p in ("post", "pre"):
        (art[f"s_{p}"],) = ax.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=PLACEMENT_NAMES[p])
        (art[f"m_{p}"],) = ax.plot([1], [1], "o", color=COLORS[p], ms=7, clip_on=False)
    art["vline"] = ax.axvline(1, color="0.5", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ticks = [2 ** k for k in range(MAX_DEPTH.bit_length())]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_yscale("log")
    ax.set_xlim(1, MAX_DEPTH)
    ax.set_ylim(*SENS_LIM)
    # on a phone the reading takes two lines (or it reaches over the y axis) and the input heads the legend
    stack_input = f"stack input x0 = {vector_label(x0, 3)}"
    ax.legend(loc="lower left", title=stack_input if narrow else None)
    art["text"] = ax.text(0.98, 0.96, "", transform=ax.transAxes, ha="right", va="top")
    art["narrow"] = narrow
    if not narrow:
        ax.text(0.98, 0.86, stack_input, transform=ax.transAxes, ha="right", va="top", color="0.35")
    label(ax, "depth (layers, log scale)", r"$\|\partial\,\mathrm{out} / \partial x_0[0]\|$",
          "Sensitivity (chosen placement bold)" if narrow else
          "Sensitivity to x0[0] against depth (chosen placement bold)")
    return art


def depth_update(art, *, norm, placement, depth, x0, eps):
    name, data = norms.get(norm, per_token=True).NAME, curves(art, norm, x0, eps)
    for p in ("post", "pre"):
        sens, chosen = data[p][1], p == placement
        art[f"s_{p}"].set_ydata(np.clip(sens, *SENS_LIM))
        art[f"s_{p}"].set_linewidth(2.6 if chosen else 1.0)
        art[f"s_{p}"].set_alpha(1.0 if chosen else 0.45)
        art[f"m_{p}"].set_data([depth], [np.clip(sens[depth - 1], *SENS_LIM)])
        art[f"m_{p}"].set_alpha(1.0 if chosen else 0.45)
    art["vline"].set_xdata([depth, depth])
    sens = data[placement][1]
    art["text"].set_text(f"{placement}-norm, depth {depth}: {number(sens[depth - 1], 3)}"
                         + ("\n" if art["narrow"] else " ") + f"({sens[depth - 1] / sens[0]:.0%} of depth 1)")
    out = {f"{p}-norm": (f"sensitivity {number(data[p][1][depth - 1])} at depth {depth} "
                         f"({number(data[p][1][depth - 1] / data[p][1][0], 3)} × its depth-1 value), "
                         f"|out| {number(data[p][0][depth - 1])}") for p in ("post", "pre")}
    if norm == "layer_norm" and placement == "post":
        out["note"] = ("LayerNorm removes the sublayer's constant bias and its scale, so every post-norm layer "
                       "returns the same vector: this toy stack cannot fade with LayerNorm")
    elif placement == "post":
        out["note"] = f"with {name} the post-norm sensitivity fades with depth"
    else:
        out["note"] = f"pre-norm keeps the identity path: with {name} its sensitivity grows with depth"
    alt = (f"Log-log sensitivity of a residual stack with {name} against depth 1 to {MAX_DEPTH}, {placement}-norm "
           f"bold: at depth {depth} it is {number(sens[depth - 1], 3)} for {placement}-norm and "
           f"{number(data['pre' if placement == 'post' else 'post'][1][depth - 1], 3)} for the other placement.")
    return out, alt


NORM = {"options": list(NORMS), "value": "rms_norm", "label": "norm",
        "labels": [norms.get(n).NAME for n in NORMS]}

OUTPUT_PRESETS = {
    "RMSNorm, offset 0": Preset({"offset": 0.0}, "on zero-mean input the two norms give the same output",
        about_default=True),
    "RMSNorm, offset 10": Preset({"offset": 10.0}, (
        "the solid RMSNorm line flattens to +0.792 .. +1.188, while the dashed LayerNorm line does not move"),
        about_default=True),
    "RMSNorm, offset -10": Preset({"offset": -10.0}, "a negative offset mirrors it below zero"),
}

DEPTH_PRESETS = {
    "RMSNorm, post-norm, depth 1": Preset({"depth": 1}, "one post-norm layer: the sensitivity is 0.3507",
        about_default=True),
    "RMSNorm, post-norm, depth 32": Preset({"depth": 32}, "the marker sinks to 0.04929 after 32 layers",
        about_default=True),
    "RMSNorm, post-norm, depth 64": Preset({"depth": 64}, "and to 0.006253 after 64", about_default=True),
    "RMSNorm, pre-norm, depth 64": Preset({"placement": "pre", "depth": 64}, (
        "switch to pre-norm and the bold curve rises instead: 9.573 at depth 64"), about_default=True),
    "LayerNorm, post-norm": Preset({"norm": "layer_norm"}, (
        "a flat line at 0.4899: the toy-stack caveat of takeaway 8, not a cure for post-norm"), about_default=True),
    "LayerNorm, pre-norm, depth 64": Preset({"norm": "layer_norm", "placement": "pre", "depth": 64}, (
        "16.25 against RMSNorm's 9.573: pre-norm keeps the identity path with either norm, and the norm inside the "
        "branch decides how fast the sensitivity grows"), about_default=True),
}


def entries() -> list:
    """The explorables of section 23.9."""
    return [
        Explorable("overview_norm_output", title="One norm's output on an offset input, the other norm dashed",
                   controls={"norm": Choice(**NORM), "offset": Slider([-10.0, -5.0, -2.0, 0.0, 2.0, 5.0, 10.0, 20.0],
                                                                     10.0, label="offset (the mean of x)",
                                                                     free=(-1e3, 1e3))},
                   inputs={"x": vector(CENTRED + 10.0, 2, 16), "eps": scalar(1e-5, 0.0, 10.0)},
                   start=lambda x, eps: {"offset": float(x.mean())}, setup=output_setup, update=output_update,
                   presets=OUTPUT_PRESETS, size=(7.2, 2.9), narrow=(NARROW_IN, 3.2)),
        Explorable("overview_stack_depth", title="A residual stack's sensitivity against depth, for either norm and "
                   "either placement",
                   controls={"norm": Choice(**NORM), "placement": Choice(
                       ["pre", "post"], "post", label="placement",
                       labels=[PLACEMENT_NAMES[p] for p in ("pre", "post")]),
                             "depth": Slider([1, 2, 4, 8, 16, 32, 64], 32, label="depth (layers)",
                                             free=(1, MAX_DEPTH))},
                   inputs={"x0": vector(STACK_INPUT, 1, 64), "eps": scalar(1e-6, 0.0, 1.0)}, setup=depth_setup,
                   update=depth_update, presets=DEPTH_PRESETS, size=(7.2, 2.9), narrow=(NARROW_IN, 3.6)),
    ]
