"""Section 23.7: sensitivity and output norm against depth, pre-norm vs post-norm."""

from __future__ import annotations

import functools
from collections import OrderedDict

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from ..examples import STACK_INPUT
from ..formatting import number
from ..interactive import Choice, Explorable, Input, Preset, Slider, scalar, vector
from ..residual import Affine, fd_curves, run_stack, sensitivity, stack_curves
from ..stats import length
from .s11_does_it_train import SOLVED_COLOURS
from .style import COLORS, NARROW_IN, PLACEMENT_NAMES, label, panels, title_tail, vector_label
from .training_runs import stored, study_axes, warmup_label

MAX_DEPTH = 256
SENS_LIM = (1e-12, 1e3)
REFERENCE = Affine(0.5, 0.1)          # the reference program's sublayer
REFERENCE_DEPTHS = (1, 2, 4, 8, 16, 32)
PLACEMENTS = ("post", "pre")   # drawn in this order
GRID_DEPTHS, GRID_LRS, GRID_WARMUPS = (list(v) for v in study_axes("grid", "depth", "lr", "warmup"))
SENS = r"$\|\partial\,\mathrm{out} / \partial x_0[0]\|$"


def _sublayer(v):
    if not callable(v) or not hasattr(v, "jvp"):
        raise TypeError(f"got {type(v).__name__}")
    return v


SUBLAYER = Input(REFERENCE, _sublayer, "an Affine(gain, bias) or another callable with a .jvp(v, dv) method")


def _depth_axis(ax, lim):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_yscale("log")
    ax.set_xlim(1, MAX_DEPTH)
    ax.set_ylim(*lim)


def reference_points(x0, eps) -> dict | None:
    """The reference program's own measurement (float32 stack, forward difference with step 1e-3) at its six
    depths, for its input only."""
    if not np.array_equal(x0, STACK_INPUT) or eps != 1e-6:
        return None
    x32 = x0.astype(np.float32)
    return {p: (np.array([length(run_stack(x32, d, p)) for d in REFERENCE_DEPTHS]),
                np.array([sensitivity(x32, d, p, method="finite_difference", h=1e-3) for d in REFERENCE_DEPTHS]))
            for p in PLACEMENTS}


def setup(fig, *, narrow, x0, eps, sublayer=None):
    ax_s, ax_n = panels(fig, narrow)
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"ax_n": ax_n, "ax_s": ax_s, "points": reference_points(x0, eps), "size": np.sqrt(x0.size), "narrow": narrow}
    # pre-norm drawn first and wider, post-norm on top of it: with a final norm both output lengths coincide
    for p, width in (("pre", 3.4), ("post", 1.6)):
        (art[f"s_{p}"],) = ax_s.plot(depths, depths * 0 + 1.0, color=COLORS[p], lw=width, label=PLACEMENT_NAMES[p])
        (art[f"n_{p}"],) = ax_n.plot(depths, depths * 0 + 1.0, color=COLORS[p], lw=width, label=PLACEMENT_NAMES[p])
    for p in PLACEMENTS:
        (art[f"sm_{p}"],) = ax_s.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False)
        (art[f"nm_{p}"],) = ax_n.plot([1], [1], "o", color=COLORS[p], ms=6, clip_on=False)
        (art[f"sc_{p}"],) = ax_s.plot([], [], "x", color=COLORS["marker"], ms=5, mew=1.2,
                                      label="reference program (float32)" if p == "post" else None)
        (art[f"nc_{p}"],) = ax_n.plot([], [], "x", color=COLORS["marker"], ms=5, mew=1.2)
    _depth_axis(ax_s, SENS_LIM)
    _depth_axis(ax_n, (min(1.0, art["size"] / 2), 1e4))
    ax_n.legend(loc="upper left")
    ax_s.axhline(1, color="0.6", lw=0.8, ls=":")
    art["vline_s"] = ax_s.axvline(1, color="0.5", lw=0.8, ls="--")
    art["vline_n"] = ax_n.axvline(1, color="0.5", lw=0.8, ls="--")
    art["clip_note"] = ax_s.text(0.03, 0.30, "", transform=ax_s.transAxes, ha="left", va="bottom", color="0.3")
    label(ax_s, "depth (layers, log scale)", SENS + " (dimensionless)", "Sensitivity to the input")
    label(ax_n, "depth (layers, log scale)", r"$\|\mathrm{out}\|$ (input units)", "")
    return art


_CURVES: OrderedDict = OrderedDict()   # the last few curves drawn: moving the depth only moves the markers


def curves(x0, sublayer, final_norm, eps) -> dict:
    """stack_curves of both placements (placement -> (|out|, sensitivity)), computed once per x0, Affine sublayer,
    final norm and eps, however many depths are shown on them."""
    def fresh():
        return {p: stack_curves(x0, MAX_DEPTH, p, sublayer=sublayer, final_norm=final_norm, eps=eps)
                for p in PLACEMENTS}

    if type(sublayer) is not Affine:   # a learner's own sublayer may hold state: always computed afresh
        return fresh()
    x0 = np.asarray(x0)
    key = (x0.dtype.str, x0.shape, x0.tobytes(), sublayer, bool(final_norm), float(eps))
    if (data := _CURVES.pop(key, None)) is None:
        data = fresh()
        for arrays in data.values():
            for a in arrays:
                a.setflags(write=False)
    _CURVES[key] = data
    while len(_CURVES) > 32:
        _CURVES.popitem(last=False)
    return data


def draw(art, depth, sublayer, final_norm, x0, eps):
    """Draw both stacks on x0 with this sublayer; the readouts and a sentence on what is shown."""
    data = curves(x0, sublayer, final_norm, eps)
    crosses = art["points"] is not None and sublayer == REFERENCE and not final_norm
    out = {}
    for p in ("post", "pre"):
        norms, sens = data[p]
        art[f"s_{p}"].set_ydata(np.clip(sens, *SENS_LIM))
        art[f"n_{p}"].set_ydata(norms)
        art[f"sm_{p}"].set_data([depth], [np.clip(sens[depth - 1], *SENS_LIM)])
        art[f"nm_{p}"].set_data([depth], [norms[depth - 1]])
        c_norms, c_sens = art["points"][p] if crosses else ([], [])
        art[f"sc_{p}"].set_data(REFERENCE_DEPTHS if crosses else [], c_sens)
        art[f"nc_{p}"].set_data(REFERENCE_DEPTHS if crosses else [], c_norms)
        out[PLACEMENT_NAMES[p]] = (f"depth {depth}: |out| {number(norms[depth - 1])}, sensitivity "
                                   f"{number(sens[depth - 1])} ({number(sens[depth - 1] / sens[0], 3)} × its "
                                   "depth-1 value)")
    handles = [art["s_pre"], art["s_post"]] + ([art["sc_post"]] if crosses else [])
    art["ax_s"].legend(handles=handles, loc="lower left")           # the legend lists what is drawn
    pinned = ("both pinned" if art["narrow"] else "both pinned by the final norm") if final_norm else \
        "post-norm is pinned"
    art["ax_n"].set_title(f"Output norm: {pinned}", loc="left")
    art["ax_n"].set_ylim(min(1.0, art["size"] / 2), max(1e4, 2 * float(max(d[0].max() for d in data.values()))))
    for v in (art["vline_s"], art["vline_n"]):
        v.set_xdata([depth, depth])
    out["pre / post sensitivity"] = number(data["pre"][1][depth - 1] / data["post"][1][depth - 1])
    below = [f"{PLACEMENT_NAMES[p]} from depth {int(np.argmax(data[p][1] < SENS_LIM[0])) + 1}"
             for p in ("post", "pre") if data[p][1].min() < SENS_LIM[0]]
    edge = "below 1e-12, drawn\non the bottom edge:\n" if art["narrow"] else "below 1e-12, drawn on the bottom edge:\n"
    art["clip_note"].set_text((edge + ";\n".join(below)) if below else "")
    gain, bias = getattr(sublayer, "gain", None), getattr(sublayer, "bias", None)
    if final_norm:
        note = (f"one RMSNorm after the stack pins |out| near sqrt({x0.size}) = {number(np.sqrt(x0.size))} for both "
                "placements and divides the pre-norm sensitivity by the size the stream has grown to")
    elif crosses:
        note = "x marks: the reference program's float32 forward differences (depths 1 to 32)"
    elif gain == 0:
        note = "the sublayer ignores its input: a pre-norm layer only adds the bias, so its sensitivity is exactly 1"
    elif gain is not None:
        note = (f"post-norm keeps (1 + a) / (1 + a + |b|) = {number((1 + gain) / (1 + gain + abs(bias)))} of its "
                "sensitivity per layer once the stream has settled")
    else:
        note = "a sublayer of your own: the curves are its exact derivatives"
    out["note"] = note
    post, pre = data["post"][1][depth - 1], data["pre"][1][depth - 1]
    return out, (f"at depth {depth} the sensitivity is {number(post, 2)} for post-norm and {number(pre, 2)} for "
                 f"pre-norm, and |out| is {number(data['post'][0][depth - 1], 3)} and "
                 f"{number(data['pre'][0][depth - 1], 3)}")


def _alt(sublayer, final_norm, x0, result) -> str:
    return (f"Two log-log panels against depth 1 to {MAX_DEPTH} for a stack on x0 = "
            f"{vector_label(x0)} with sublayer {sublayer!r}, "
            f"final norm {'on' if final_norm else 'off'}: the sensitivity of the output to x0[0] (left) and the "
            f"output norm (right) for post-norm and pre-norm; {result}.")


def update_sublayer(art, *, depth, gain, bias, x0, eps):
    out, result = draw(art, depth, Affine(gain, bias), False, x0, eps)
    return out, _alt(Affine(gain, bias), False, x0, result)


def update_final(art, *, depth, final_norm, x0, eps, sublayer):
    out, result = draw(art, depth, sublayer, final_norm, x0, eps)
    return out, _alt(sublayer, final_norm, x0, result)


# -- the reference program's measurement method: forward differences in float32 or float64 -------------------
ERR_LIM = (1e-12, 10.0)


def fd_setup(fig, *, narrow, x0, eps, sublayer):
    ax = fig.subplots()
    depths = np.arange(1, MAX_DEPTH + 1)
    art = {"exact": {p: stack_curves(x0, MAX_DEPTH, p, sublayer=sublayer, eps=eps)[1] for p in PLACEMENTS}}
    for p in ("post", "pre"):
        (art[p],) = ax.plot(depths, depths * 0 + 1.0, color=COLORS[p], label=PLACEMENT_NAMES[p])
    _depth_axis(ax, ERR_LIM)
    ax.axvline(32, color="0.6", lw=0.8, ls=":")
    ax.text(36, 2e-12, "the reference table\nstops at depth 32", color="0.35", va="bottom")
    ax.legend(loc="upper left")
    label(ax, "depth (layers, log scale)", "relative error (dimensionless)",
          "|forward difference - exact| / exact" if narrow else
          "|forward difference - exact| / exact: how many digits of the measurement are real")
    return art


def fd_update(art, *, h, dtype, x0, eps, sublayer):
    x = x0.astype(dtype)
    out, worst = {}, {}
    for p in ("post", "pre"):
        measured, taken = fd_curves(x, MAX_DEPTH, p, [h], eps=eps, sublayer=sublayer)
        measured, taken = measured[0], float(taken[0])
        exact = art["exact"][p]
        rel = np.abs(measured - exact) / exact
        art[p].set_ydata(np.clip(rel, *ERR_LIM))
        worst[p] = measured
        out[f"{PLACEMENT_NAMES[p]} at depth 32"] = (f"measured {measured[31]:.5f}, exact {exact[31]:.5f}, "
                                                    f"relative error {number(rel[31], 2)}")
    zero = [f"{PLACEMENT_NAMES[p]} from depth {int(np.argmax(worst[p] == 0)) + 1}" for p in ("post", "pre")
            if np.any(worst[p] == 0)]
    out["measured exactly 0"] = ("; ".join(zero) + f": the true change (sensitivity times h) is below the spacing "
                                 f"of {dtype} numbers at the output, so both runs round to the same output (drawn "
                                 "as relative error 1)") if zero else "at no depth"
    if taken == 0:
        out["step actually taken"] = f"0: 1 + h rounds to 1 in {dtype}, the nudge vanishes and the difference is 0/h"
    elif abs(taken - h) > 1e-3 * h:
        out["step actually taken"] = (f"{number(taken)}: 1 + h is not representable in {dtype}, yet the difference "
                                      "is divided by h")
    else:
        out["step actually taken"] = f"{number(taken)}, h to within 0.1%"
    alt = (f"Log-log plot against depth 1 to {MAX_DEPTH} of the relative error of the forward-difference sensitivity "
           f"with step h = {number(h)} in {dtype}, for post-norm and pre-norm, against the exact derivative; at depth "
           f"32 it is {out['post-norm at depth 32'].rsplit(' ', 1)[-1]} for post-norm"
           + (f"; {zero[0]} the measurement is exactly 0" if zero else "") + ".")
    return out, alt


SUBLAYER_PRESETS = {
    "reference setting": Preset({}, (
        "gain 0.5, bias 0.1: the black crosses are the reference program's float32 table and sit on the exact "
        "curves"), about_default=True),
    "bias 0": Preset({"bias": 0.0}, (
        "post-norm's curve goes flat after the first layer: the per-layer factor (1 + a) / (1 + a + |b|) is "
        "exactly 1, so the fade is gone"), about_default=True),
    "gain 1.5, bias 0.5": Preset({"gain": 1.5, "bias": 0.5}, (
        "post-norm fades fastest, by 2.5 / 3.0 ≈ 0.8333 per layer; the note in the plot gives the depth from which "
        "it is below 1e-12 (147)"), about_default=True),
    "gain 1.5, bias -0.5": Preset({"gain": 1.5, "bias": -0.5}, (
        "the same rate of 0.8333 per layer once the stream has settled (see the note): only the size of the bias "
        "sets it; but the curve first rises for a few layers, so at depth 32 it is about 15 times higher"),
        about_default=True),
    "gain 0": Preset({"gain": 0.0}, (
        "the sublayer ignores its input, so a pre-norm layer only adds the bias and its sensitivity is exactly "
        "1 at every depth"), about_default=True),
}

FINAL_PRESETS = {
    "final norm on": Preset({"final_norm": True}, (
        "both output lengths now sit at 2 (the thin post-norm line runs inside the wide pre-norm one), and "
        "pre-norm's sensitivity falls instead of rising"), about_default=True),
    "final norm on, depth 256": Preset({"final_norm": True, "depth": 256}, (
        "pre-norm falls only slowly: 0.188 at 256 layers, about half its depth-1 value, against post-norm's "
        "2.598e-8"), about_default=True),
    "final norm off, depth 256": Preset({"depth": 256}, (
        "without the final norm pre-norm's output has grown to length 311; that growth is what the final norm "
        "divides out"), about_default=True),
}

FD_PRESETS = {
    "reference setting": Preset({}, (
        "h = 1e-3 in float32, as in the reference program: post-norm's relative error climbs from 7e-5 at "
        "depth 1 to 0.0045 at depth 32, and from depth 143 on both runs give the same float32 output, so the "
        "measurement is 0 (relative error 1)"), about_default=True),
    "float64": Preset({"dtype": "float64"}, (
        "only the truncation error of the forward difference is left, between 7e-6 and 6e-5 relative at every "
        "depth, and the curves are smooth"), about_default=True),
    "float64, h 1e-7": Preset({"dtype": "float64", "h": 1e-7}, (
        "truncation and round-off are both tiny down to depth 32 (relative error 8.8e-8 for post-norm, 7 "
        "digits); deeper, post-norm's sensitivity is so small that float64 round-off divided by h takes over "
        "again (0.12 at depth 256)"), about_default=True),
    "float32, h 1e-7": Preset({"h": 1e-7}, (
        "x0[0] = 1 takes the nudge as 1.192e-7 (the float32 spacing at 1), but inside the stack it is smaller "
        "than the spacing near the stream's values and is rounded away: from depth 2 (post-norm) or 4 "
        "(pre-norm) on, every measurement is 0"), about_default=True),
}


# -- what training does: the lab's grid, compact (stored runs of `make experiments`, never trained here) -------
@functools.cache
def _grid_cells(warmup) -> dict:
    """(placement, depth, lr) -> the stored runs of that cell of the lab's grid, at this warm-up (the store is
    read-only, so each warm-up is looked up once)."""
    exp = stored()
    return {(p, d, r): exp.select(placement=p, depth=d, lr=r, warmup=warmup)
            for p in PLACEMENTS for d in GRID_DEPTHS for r in GRID_LRS}


def _loss_range(runs) -> str:
    """The seeds' final losses as 'lo-hi' (two decimals; '<0.01' for a solved cell)."""
    lo, hi = (f"{v:.2f}" if v >= 0.01 else "<0.01" for v in
              (min(r["final_loss"] for r in runs), max(r["final_loss"] for r in runs)))
    if lo == "<0.01" and hi == "0.01":
        return "\u22640.01"     # below 0.01 up to one that rounds to it
    return lo if lo == hi else f"{lo}\u2013{hi}"


def grid_words(warmup, placement) -> str:
    """'all seeds solved 6 of 12 cells; stuck: depth 6 at lr 0.01, ...' for one placement at this warm-up."""
    cells = _grid_cells(warmup)
    full = [k for k in cells if k[0] == placement and all(r["outcome"] == "solved" for r in cells[k])]
    stuck = [f"depth {d} at lr {number(r)}" for (p, d, r), runs in cells.items()
             if p == placement and any(x["outcome"] == "stuck" for x in runs)]
    return (f"every seed solved in {len(full)} of {len(GRID_DEPTHS) * len(GRID_LRS)} cells; a seed stuck at "
            f"chance in: {', '.join(stuck) or 'none'}")


def trains_setup(fig, *, narrow):
    axes = panels(fig, narrow)
    art = {"axes": dict(zip(PLACEMENTS, axes, strict=True))}
    for p, ax in art["axes"].items():
        for i in range(len(GRID_DEPTHS)):   # a patch per cell: a new warm-up draws only the cells it changes
            for j in range(len(GRID_LRS)):
                art[f"c_{p}{i}{j}"] = ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, lw=0,
                                                             fc=SOLVED_COLOURS.colors[0]))
                art[f"t_{p}{i}{j}"] = ax.text(j, i, "", ha="center", va="center", linespacing=1.15)
        ax.set_xlim(-0.5, len(GRID_LRS) - 0.5)
        ax.set_ylim(-0.5, len(GRID_DEPTHS) - 0.5)
        ax.set_xticks(range(len(GRID_LRS)), [number(v) for v in GRID_LRS])
        ax.set_yticks(range(len(GRID_DEPTHS)), [str(d) for d in GRID_DEPTHS])
        ax.grid(False)
        label(ax, "peak learning rate", "depth (layers)")
        art[f"warm_{p}"] = title_tail(ax, f"{PLACEMENT_NAMES[p]}, warm-up")   # the warm-up follows the title
    return art


@functools.cache
def _grid_look(warmup, placement) -> dict:
    """(i, j) -> (its shade, its words, their colour) for each cell (depth i, lr j) of one placement's grid at this
    warm-up."""
    top = len(SOLVED_COLOURS.colors) - 1
    out = {}
    for (p, d, r), runs in _grid_cells(warmup).items():
        if p == placement:
            solved = sum(x["outcome"] == "solved" for x in runs)
            shade = round(top * solved / len(runs))
            out[GRID_DEPTHS.index(d), GRID_LRS.index(r)] = (SOLVED_COLOURS.colors[shade],
                                                            f"{solved}/{len(runs)}\n{_loss_range(runs)}",
                                                            "white" if shade == top else "black")
    return out


def trains_update(art, *, warmup):
    for p in PLACEMENTS:   # only what differs from the state before is set: a cell that stays is not drawn again
        for (i, j), (shade, text, colour) in _grid_look(warmup, p).items():
            if art[f"c_{p}{i}{j}"].get_facecolor() != to_rgba(shade):
                art[f"c_{p}{i}{j}"].set_facecolor(shade)
            art[f"t_{p}{i}{j}"].set_text(text)
            if art[f"t_{p}{i}{j}"].get_color() != colour:
                art[f"t_{p}{i}{j}"].set_color(colour)
        art[f"warm_{p}"].set_text(f" {warmup_label(warmup, short=True)}")   # (a space after the title)
    readouts = {PLACEMENT_NAMES[p]: grid_words(warmup, p) for p in ("post", "pre")}
    alt = (f"Two grids of depth ({GRID_DEPTHS[0]} to {GRID_DEPTHS[-1]} layers) against peak learning rate "
           f"({number(GRID_LRS[0])} to {number(GRID_LRS[-1])}), warm-up {warmup_label(warmup)}: in each cell the "
           f"seeds that solved the task and the range of their final losses. Post-norm: "
           f"{readouts['post-norm']}. Pre-norm: {readouts['pre-norm']}.")
    return readouts, alt


def _trains_presets() -> dict:
    return {
        "no warm-up": Preset({}, (
            "post-norm: " + grid_words(0.0, "post") + "; pre-norm: " + grid_words(0.0, "pre"))),
        "with warm-up": Preset({"warmup": GRID_WARMUPS[-1]}, (
            f"the learning rate ramped up over the first {warmup_label(GRID_WARMUPS[-1])}; post-norm: "
            + grid_words(GRID_WARMUPS[-1], "post"))),
    }


def entries() -> list:
    """The explorables of section 23.7."""
    depth = Slider([1, 2, 4, 8, 16, 32, 64, 128, 256], 32, label="depth (layers)", free=(1, MAX_DEPTH))
    x0, eps = vector(STACK_INPUT, 1, 64), scalar(1e-6, 0.0, 1.0)
    return [
        Explorable("pre_post_sensitivity", title="Pre-norm vs post-norm: how much of the input still reaches the "
                   "output", setup=setup, update=update_sublayer, presets=SUBLAYER_PRESETS, narrow=(NARROW_IN, 5.6),
                   controls={"depth": depth,
                             "gain": Slider([0.0, 0.5, 1.0, 1.5], 0.5, label="sublayer gain a", free=(0.0, 3.0)),
                             "bias": Slider([-0.5, 0.0, 0.1, 0.5], 0.1, label="sublayer bias b", free=(-2.0, 2.0))},
                   inputs={"x0": x0, "eps": eps}),
        Explorable("pre_post_final_norm", title="A final norm on top of the stack: both output lengths pinned, "
                   "pre-norm still sensitive", setup=setup, update=update_final, presets=FINAL_PRESETS,
                   narrow=(NARROW_IN, 5.6), inputs={"x0": x0, "eps": eps, "sublayer": SUBLAYER},
                   controls={"depth": depth, "final_norm": Choice([False, True], False, label="final RMSNorm after "
                                                                  "the stack", labels=["off", "on"])}),
        Explorable("pre_post_fd_error", title="The reference program's measurement: forward differences against "
                   "the exact sensitivity", setup=fd_setup, update=fd_update, presets=FD_PRESETS,
                   narrow=(NARROW_IN, 3.8),
                   controls={"h": Slider([1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1], 1e-3,
                                         label="forward-difference step h", free=(1e-12, 1.0)),
                             "dtype": Choice(["float32", "float64"], "float32", label="arithmetic")},
                   inputs={"x0": x0, "eps": eps, "sublayer": SUBLAYER}),
        Explorable("pre_post_trains", title="What training does: the seeds that solved the task in each cell "
                   "of the lab's grid", setup=trains_setup, update=trains_update, presets=_trains_presets(),
                   narrow=(NARROW_IN, 6.4),
                   controls={"warmup": Choice(GRID_WARMUPS, 0.0, label="warm-up",
                                              labels=[warmup_label(w, short=True) for w in GRID_WARMUPS])}),
    ]
