"""Section 23.7 explorables: sensitivity and output norm against depth, pre-norm vs post-norm."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..controls import Preset
from ..examples import STACK_INPUT
from ..explore import Choice, Explorable, Slider
from ..residual import Affine, run_stack, sensitivity, stack_curves
from ..style import COLORS, label

X0 = STACK_INPUT  # the reference program's input
MAX_DEPTH = 256
SENS_LIM = (1e-12, 1e3)
NORM_LIM = (1.0, 1e4)
CHAPTER = {"gain": 0.5, "bias": 0.1, "final_norm": False}
CHAPTER_DEPTHS = (1, 2, 4, 8, 16, 32)
PLACEMENT_NAMES = {"post": "post-norm", "pre": "pre-norm"}


@lru_cache(maxsize=64)
def curves(gain: float, bias: float, final_norm: bool) -> dict:
    """{placement: (|out|, sensitivity)} at depths 1..MAX_DEPTH, exact float64, cached per sublayer."""
    sub = Affine(gain, bias)
    return {p: stack_curves(X0, MAX_DEPTH, p, sublayer=sub, final_norm=final_norm) for p in ("pre", "post")}


@lru_cache(maxsize=1)
def chapter_points() -> dict:
    """The reference program's own measurement: float32 stack, forward difference with step 1e-3, at its six depths."""
    x32 = X0.astype(np.float32)
    out = {}
    for p in ("pre", "post"):
        norms = [float(np.linalg.norm(run_stack(x32, d, p))) for d in CHAPTER_DEPTHS]
        sens = [sensitivity(x32, d, p, method="finite_difference", h=1e-3) for d in CHAPTER_DEPTHS]
        out[p] = (np.array(norms), np.array(sens))
    return out


def _log_depth_axis(ax, lim):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_yscale("log")
    ax.set_xlim(1, MAX_DEPTH)
    ax.set_ylim(*lim)


def _setup(fig):
    ax_s, ax_n = fig.subplots(1, 2)
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"animated": []}
    # Pre-norm is drawn first and wider, post-norm on top of it: with a final norm both output lengths sit
    # at 2, and post-norm's line stays visible inside pre-norm's.  (Blitting draws in list order.)
    for p, width in (("pre", 3.4), ("post", 1.6)):
        name = PLACEMENT_NAMES[p]
        (art[f"s_{p}"],) = ax_s.plot(depths, depths * 0 + 1, color=COLORS[p], lw=width, label=name)
        (art[f"n_{p}"],) = ax_n.plot(depths, depths * 0 + 1, color=COLORS[p], lw=width, label=name)
        art["animated"] += [art[f"s_{p}"], art[f"n_{p}"]]
    for p in ("pre", "post"):
        (art[f"sm_{p}"],) = ax_s.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False, in_layout=False)
        (art[f"nm_{p}"],) = ax_n.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False, in_layout=False)
        # The reference program's float32 table, shown only at its sublayer and without a final norm.
        (art[f"sc_{p}"],) = ax_s.plot([], [], "x", color=COLORS["marker"], ms=5, mew=1.2)
        (art[f"nc_{p}"],) = ax_n.plot([], [], "x", color=COLORS["marker"], ms=5, mew=1.2)
        art["animated"] += [art[f"sm_{p}"], art[f"nm_{p}"], art[f"sc_{p}"], art[f"nc_{p}"]]
    ax_s.plot([], [], "x", color=COLORS["marker"], label="reference program (float32)")
    _log_depth_axis(ax_s, SENS_LIM)
    _log_depth_axis(ax_n, NORM_LIM)
    ax_s.legend(loc="lower left")
    ax_n.legend(loc="upper left")
    ax_s.axhline(1, color="0.6", lw=0.8, ls=":")
    art["vline_s"] = ax_s.axvline(1, color="0.5", lw=0.8, ls="--")
    art["vline_n"] = ax_n.axvline(1, color="0.5", lw=0.8, ls="--")
    art["clip_note"] = ax_s.text(0.03, 0.30, "", transform=ax_s.transAxes, ha="left", va="bottom", fontsize=7.5,
                                 color="0.3")
    art["clip_note"].set_in_layout(False)
    art["animated"] += [art["vline_s"], art["vline_n"], art["clip_note"]]
    label(ax_s, "depth (layers, log scale)", "||d out / d x0[0]|| (dimensionless)",
          "Sensitivity: post-norm fades with depth")
    label(ax_n, "depth (layers, log scale)", "|out| (input units)", "Output norm: post-norm is pinned")
    return art


def _update(art, depth, gain, bias, final_norm):
    gain, bias, final_norm = float(gain), float(bias), bool(final_norm)
    data = curves(gain, bias, final_norm)
    at_reference = (gain, bias, final_norm) == (CHAPTER["gain"], CHAPTER["bias"], CHAPTER["final_norm"])
    out = {}
    for p in ("post", "pre"):
        norms, sens = data[p]
        art[f"s_{p}"].set_ydata(np.clip(sens, *SENS_LIM))
        art[f"n_{p}"].set_ydata(np.clip(norms, *NORM_LIM))
        art[f"sm_{p}"].set_data([depth], [np.clip(sens[depth - 1], *SENS_LIM)])
        art[f"nm_{p}"].set_data([depth], [np.clip(norms[depth - 1], *NORM_LIM)])
        if at_reference:
            c_norms, c_sens = chapter_points()[p]
            art[f"sc_{p}"].set_data(CHAPTER_DEPTHS, c_sens)
            art[f"nc_{p}"].set_data(CHAPTER_DEPTHS, c_norms)
        else:
            art[f"sc_{p}"].set_data([], [])
            art[f"nc_{p}"].set_data([], [])
        out[PLACEMENT_NAMES[p]] = (
            f"depth {depth}: |out| {norms[depth - 1]:.4g}, sensitivity {sens[depth - 1]:.4g} "
            f"({sens[depth - 1] / sens[0]:.3g} x its depth-1 value)")
    art["vline_s"].set_xdata([depth, depth])
    art["vline_n"].set_xdata([depth, depth])
    ratio = data["pre"][1][depth - 1] / data["post"][1][depth - 1]
    out["pre / post sensitivity"] = f"{ratio:.4g}"
    below = [f"{PLACEMENT_NAMES[p]} from depth {int(np.argmax(data[p][1] < SENS_LIM[0])) + 1}"
             for p in ("post", "pre") if data[p][1].min() < SENS_LIM[0]]
    art["clip_note"].set_text(("below 1e-12, drawn on the bottom edge:\n" + "; ".join(below)) if below else "")
    if final_norm:
        note = ("one RMSNorm after the stack pins |out| near sqrt(4) = 2 for both placements and divides the "
                "pre-norm sensitivity by the size the stream has grown to")
    elif at_reference:
        note = "x marks: the reference program's float32 forward differences (depths 1 to 32)"
    elif gain == 0:
        note = ("the sublayer ignores its input: a pre-norm layer only adds the bias, so its sensitivity is "
                "exactly 1 at every depth")
    else:
        note = (f"post-norm keeps (1 + a) / (1 + a + |b|) = {(1 + gain) / (1 + gain + abs(bias)):.4g} of its "
                "sensitivity per layer once the stream has settled")
    out["note"] = note
    return out


def _update_sublayer(art, depth, gain, bias):
    return _update(art, depth, gain, bias, False)


def _update_final(art, depth, final_norm):
    return _update(art, depth, CHAPTER["gain"], CHAPTER["bias"], final_norm)


# -- the reference program's measurement method: forward differences in float32 or float64 ----------------------------
FD_H_LO, FD_H_HI = 1e-7, 1e-1
ERR_LIM = (1e-12, 10.0)


def _fd_pass(x: np.ndarray, steps) -> dict:
    """{placement: (len(steps), MAX_DEPTH) forward-difference sensitivities} and the steps actually taken.

    The stack on x0 and on x0 nudged by each step in component 0 (the rows of one array: every row is its
    own stack) is advanced one layer at a time with run_stack, so one pass yields every step and depth.
    """
    steps = np.asarray(steps, dtype=x.dtype)
    nudged = np.repeat(x[None, :], len(steps), axis=0)
    nudged[:, 0] += steps
    taken = [float(t) for t in nudged[:, 0] - x[0]]   # each step as taken once x0 + h is rounded to dtype
    out = {}
    for p in ("pre", "post"):
        rows = np.concatenate([x[None, :], nudged])
        sens = np.empty((len(steps), MAX_DEPTH))
        for d in range(MAX_DEPTH):
            rows = run_stack(rows, 1, p)
            diff = (rows[1:] - rows[0]) / steps[:, None]
            sens[:, d] = np.sqrt(np.sum(diff * diff, axis=1))
        out[p] = sens
    out["taken"] = taken
    return out


@lru_cache(maxsize=4)
def _fd_table(dtype: str) -> dict:
    """fd_curves at every stop of the h slider in one pass (about the cost of one step on its own)."""
    return _fd_pass(X0.astype(dtype), H_STOPS)


@lru_cache(maxsize=256)
def fd_curves(h: float, dtype: str) -> dict:
    """{placement: forward-difference sensitivity at depths 1..MAX_DEPTH} with step h in dtype, and the step
    actually taken ("taken"). The slider's stops come from one shared pass (_fd_table)."""
    if h in H_STOPS:
        table, i = _fd_table(dtype), H_STOPS.index(h)
    else:
        table, i = _fd_pass(X0.astype(dtype), [h]), 0
    return {"pre": table["pre"][i], "post": table["post"][i], "taken": table["taken"][i]}


def _fd_setup(fig):
    ax = fig.subplots(1, 1)
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"animated": []}
    for p in ("post", "pre"):
        (art[p],) = ax.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=PLACEMENT_NAMES[p])
        art["animated"].append(art[p])
    _log_depth_axis(ax, ERR_LIM)
    ax.axvline(32, color="0.6", lw=0.8, ls=":")
    ax.text(33, 2e-12, "the reference table\nstops at depth 32", fontsize=7.5, color="0.35", va="bottom")
    ax.legend(loc="upper left")
    label(ax, "depth (layers, log scale)", "relative error (dimensionless)",
          "|forward difference - exact| / exact: how many digits of the measurement are real")
    return art


def _fd_update(art, h, dtype):
    data = fd_curves(float(h), dtype)
    out = {}
    for p in ("post", "pre"):
        exact = curves(CHAPTER["gain"], CHAPTER["bias"], False)[p][1]
        rel = np.abs(data[p] - exact) / exact
        art[p].set_ydata(np.clip(rel, *ERR_LIM))
        out[f"{PLACEMENT_NAMES[p]} at depth 32"] = (
            f"measured {data[p][31]:.5f}, exact {exact[31]:.5f}, relative error {rel[31]:.1e}")
    zero = [f"{PLACEMENT_NAMES[p]} from depth {int(np.argmax(data[p] == 0)) + 1}"
            for p in ("post", "pre") if np.any(data[p] == 0)]
    if zero:
        out["measured exactly 0"] = ("; ".join(zero) + f": the true change (sensitivity times h) is below the "
                                     f"spacing of {dtype} numbers at the output, so both runs round to the same "
                                     "output (drawn as relative error 1)")
    else:
        out["measured exactly 0"] = "at no depth"
    if data["taken"] == 0:
        out["step actually taken"] = f"0: 1 + h rounds to 1 in {dtype}, the nudge vanishes and the difference is 0/h"
    elif abs(data["taken"] - h) > 1e-3 * h:
        out["step actually taken"] = (f"{data['taken']:.3e}: 1 + h is not representable in {dtype}, yet the "
                                      "difference is divided by h")
    else:
        out["step actually taken"] = f"{data['taken']:.4g}, h to within 0.1%"
    return out


DEPTH_STOPS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
GAIN_STOPS = [0.0, 0.5, 1.0, 1.5]
BIAS_STOPS = [-0.5, 0.0, 0.1, 0.5]
H_STOPS = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]

SUBLAYER_PRESETS = {
    "reference setting": Preset({}, (
        "gain 0.5, bias 0.1: the black crosses are the reference program's float32 table and sit on the exact "
        "curves")),
    "bias 0": Preset({"bias": 0.0}, (
        "post-norm's curve goes flat after the first layer: the per-layer factor (1 + a) / (1 + a + |b|) is "
        "exactly 1, so the fade is gone")),
    "gain 1.5, bias 0.5": Preset({"gain": 1.5, "bias": 0.5}, (
        "post-norm fades fastest, by 2.5 / 3.0 ≈ 0.8333 per layer; the note in the plot gives the depth from which "
        "it is below 1e-12 (147)")),
    "gain 1.5, bias -0.5": Preset({"gain": 1.5, "bias": -0.5}, (
        "the same rate of 0.8333 per layer once the stream has settled (see the note): only the size of the bias "
        "sets it; but the curve first rises for a few layers, so at depth 32 it is about 15 times higher")),
    "gain 0": Preset({"gain": 0.0}, (
        "the sublayer ignores its input, so a pre-norm layer only adds the bias and its sensitivity is exactly "
        "1 at every depth")),
}

FINAL_PRESETS = {
    "final norm on": Preset({"final_norm": True}, (
        "both output lengths now sit at 2 (the thin post-norm line runs inside the wide pre-norm one), and "
        "pre-norm's sensitivity falls instead of rising")),
    "final norm on, depth 256": Preset({"final_norm": True, "depth": 256}, (
        "pre-norm falls only slowly: 0.188 at 256 layers, about half its depth-1 value, against post-norm's "
        "2.6e-8")),
    "final norm off, depth 256": Preset({"depth": 256}, (
        "without the final norm pre-norm's output has grown to length 311; that growth is what the final norm "
        "divides out")),
}

FD_PRESETS = {
    "reference setting": Preset({}, (
        "h = 1e-3 in float32, as in the reference program: post-norm's relative error climbs from 7e-5 at "
        "depth 1 to 4.5e-3 at depth 32, and from depth 143 on both runs give the same float32 output, so the "
        "measurement is 0 (relative error 1)")),
    "float64": Preset({"dtype": "float64"}, (
        "only the truncation error of the forward difference is left, between 7e-6 and 6e-5 relative at every "
        "depth, and the curves are smooth")),
    "float64, h 1e-7": Preset({"dtype": "float64", "h": 1e-7}, (
        "truncation and round-off are both tiny down to depth 32 (relative error 8.8e-8 for post-norm, 7 "
        "digits); deeper, post-norm's sensitivity is so small that float64 round-off divided by h takes over "
        "again (0.12 at depth 256)")),
    "float32, h 1e-7": Preset({"h": 1e-7}, (
        "x0[0] = 1 takes the nudge as 1.19e-7 (the float32 spacing at 1), but inside the stack it is smaller "
        "than the spacing near the stream's values and is rounded away: from depth 2 (post-norm) or 4 "
        "(pre-norm) on, every measurement is 0")),
}


def _alt(depth, gain, bias, final_norm):
    return (f"Two log-log panels against depth 1 to {MAX_DEPTH}, sublayer F(v)={gain:g}v+{bias:g}, "
            f"final norm {'on' if final_norm else 'off'}. Left: sensitivity of the output to the first "
            "input component for post-norm and pre-norm. Right: output norm. A dashed line marks depth "
            f"{depth}.")


def entries() -> list:
    """The catalog entries of section 23.7."""
    return [
        Explorable(
            "pre_post_sensitivity",
            {
                "depth": Slider(1, MAX_DEPTH, 32, scale="log", label="depth (layers)", stops=DEPTH_STOPS),
                "gain": Slider(0.0, 1.5, 0.5, label="sublayer gain a", stops=GAIN_STOPS),
                "bias": Slider(-0.5, 0.5, 0.1, label="sublayer bias b", stops=BIAS_STOPS),
            },
            _setup,
            _update_sublayer,
            title="Pre-norm vs post-norm: how much of the input still reaches the output",
            alt=lambda depth, gain, bias: _alt(depth, gain, bias, False),
            presets=SUBLAYER_PRESETS,
        ),
        Explorable(
            "pre_post_final_norm",
            {
                "depth": Slider(1, MAX_DEPTH, 32, scale="log", label="depth (layers)", stops=DEPTH_STOPS),
                "final_norm": Choice([False, True], False, label="final RMSNorm after the stack",
                                     labels=["off", "on"]),
            },
            _setup,
            _update_final,
            title="A final norm on top of the stack: both output lengths pinned, pre-norm still sensitive",
            alt=lambda depth, final_norm: _alt(depth, CHAPTER["gain"], CHAPTER["bias"], final_norm),
            presets=FINAL_PRESETS,
        ),
        Explorable(
            "pre_post_fd_error",
            {
                "h": Slider(FD_H_LO, FD_H_HI, 1e-3, scale="log", label="forward-difference step h", stops=H_STOPS),
                "dtype": Choice(["float32", "float64"], "float32", label="arithmetic"),
            },
            _fd_setup,
            _fd_update,
            title="The reference program's measurement: forward differences in float32 against the exact sensitivity",
            alt=lambda h, dtype: (
                f"Log-log plot against depth 1 to {MAX_DEPTH} of the relative error of the forward-difference "
                f"sensitivity with step h = {h:.0e} in {dtype}, for post-norm and pre-norm, against the exact "
                "derivative."),
            presets=FD_PRESETS,
        ),
    ]
