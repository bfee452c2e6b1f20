"""Section 23.8: why a norm helps the optimizer. The weights before a norm are scale-invariant, so their gradient is
orthogonal to them, a step turns them by about lr / |W|**2, and weight decay sets that step through |W|."""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.patches import Arc, FancyArrowPatch

from ..display import below_bound
from ..formatting import number
from ..interactive import Explorable, Preset, Slider
from ..scale_invariance import effective_lr, loss_grad, ordered_norm, sgd, toy
from .style import COLORS, NARROW_IN, label, panels

LR, STEPS = 0.5, 300
SCALES = [0.5, 1.0, 2.0, 3.0, 5.0, 10.0]
DECAYS = [0.0, 0.01, 0.05, 0.2]
STEP_TOP = 1.3              # the first panel shows steps up to this length (|W| drawn as 1)
NORM_LIM, TURN_LIM = (1.0, 40.0), (0.01, 90.0)
W0, X, T = toy()
NUDGE = 1e-12               # the neighbouring start: W0 times (1 + NUDGE * a fixed random pattern)
NUDGED = W0 * (1 + NUDGE * np.random.default_rng(8).normal(size=W0.shape))


@functools.cache
def run(scale: float, decay: float, nudged: bool = False) -> dict:
    """sgd from scale * W0 (or the nudged start) for STEPS steps at LR with this weight decay: |W| per step and the
    turn per step (degrees), read-only."""
    r = sgd(scale * (NUDGED if nudged else W0), X, T, lr=LR, steps=STEPS, weight_decay=decay)
    out = {"norm": r["norm"], "turn": np.degrees(r["turn"])}
    for a in out.values():
        a.setflags(write=False)
    return out


def setup(fig, *, narrow):
    ax_p, ax_n, ax_t = panels(fig, narrow, 3, ratios=[1.0, 1.1, 1.1])
    ax_p.add_patch(Arc((0, 0), 2, 2, theta1=-5, theta2=80, color="0.6", lw=0.8, ls=":"))
    ax_p.add_patch(FancyArrowPatch((0, 0), (1, 0), arrowstyle="-|>", mutation_scale=12, color=COLORS["input"], lw=1.6))
    ax_p.plot([0.93, 0.93, 1.0], [0.0, 0.07, 0.07], color="0.4", lw=0.8)          # the right angle
    ax_p.text(0.5, -0.1, "W (drawn at length 1)", ha="center", va="top", color=COLORS["input"])
    step = ax_p.add_patch(FancyArrowPatch((1, 0), (1, 0.5), arrowstyle="-|>", mutation_scale=12,
                                          color=COLORS["rms_norm"], lw=1.6))
    (new,) = ax_p.plot([0, 1], [0, 0.5], color=COLORS["layer_norm"], lw=1.2, ls="--")
    turn = ax_p.text(0.0, STEP_TOP, "", color=COLORS["layer_norm"], va="top")
    step_label = ax_p.text(0.0, STEP_TOP - 0.2, "", color=COLORS["rms_norm"], va="top")
    ax_p.set_xlim(-0.1, 1.2)
    ax_p.set_ylim(-0.3, STEP_TOP + 0.1)
    ax_p.set_aspect("equal", adjustable="box")
    ax_p.set_xticks([0, 1])
    ax_p.set_yticks([0, 1])
    label(ax_p, "along W (units of |W|)", "along -gradient", "One step of lr 0.5")
    steps = np.arange(STEPS + 1)
    lines = {}
    for ax, key, lim, xs in ((ax_n, "norm", NORM_LIM, steps), (ax_t, "turn", TURN_LIM, steps[:-1])):
        (lines[f"{key}_free"],) = ax.plot(xs, xs * 0.0 + 1, color="0.6", lw=1.2, ls="--", label="no decay")
        (lines[key],) = ax.plot(xs, xs * 0.0 + 1, color=COLORS["layer_norm"], lw=1.8, label="your decay")
        ax.set_yscale("log")
        ax.set_xlim(0, STEPS)
        ax.set_ylim(*lim)
        ax.legend(handles=[lines[key], lines[f"{key}_free"]], loc="upper right" if key == "turn" else "upper left")
    label(ax_n, "step", "|W| (log scale)", "Length of W")
    label(ax_t, "step", "turn per step (degrees, log)", "Effective step")
    return {"step": step, "new": new, "turn_text": turn, "step_label": step_label, "ax_n": ax_n, "ax_t": ax_t, **lines}


def update(art, *, scale, decay):
    r, free, near = run(scale, decay), run(scale, 0.0), run(scale, decay, nudged=True)
    w = scale * W0
    g = loss_grad(w, X, T)
    w_len, g_len = ordered_norm(w), ordered_norm(g)
    cos = float(np.sum(g * w)) / (w_len * g_len)
    s = LR * g_len / w_len                        # the step's length in units of |W|
    art["step"].set_positions((1, 0), (1, min(s, STEP_TOP)))
    art["new"].set_data([0, 1], [0, min(s, STEP_TOP)])
    art["turn_text"].set_text(f"W turns by {r['turn'][0]:.3g}°")
    art["step_label"].set_text(f"step {number(s, 3)} |W|" + (" (cut)" if s > STEP_TOP else ""))
    for key, lim in (("norm", NORM_LIM), ("turn", TURN_LIM)):
        art[key].set_ydata(np.clip(r[key], *lim))
        art[f"{key}_free"].set_ydata(np.clip(free[key], *lim))
    ratio = (LR * g_len / w_len) * w_len ** 2 / LR     # |grad at W/|W|| : the same at every scale
    out = {
        "gradient and W": (f"|cos(∇W, W)| {below_bound(abs(cos), 1e-12)} (orthogonal); |∇W| = {number(g_len, 4)} = "
                           f"{number(ratio, 4)} / |W|"),
        "first step": (f"|W| = {number(w_len, 4)}, lr / |W|² = {number(effective_lr(w, LR), 4)}: "
                       f"W turns by {r['turn'][0]:.4g}°"),
        f"after {STEPS} steps": (f"|W| = {number(r['norm'][-1], 4)}, the last step turns W by "
                                 f"{r['turn'][-1]:.4g}°"),
        "no decay, same start": (f"|W| = {number(free['norm'][-1], 4)}, last turn {free['turn'][-1]:.4g}°"),
        f"a start {NUDGE:g} away": chaos_note(r["norm"][-1], near["norm"][-1]),
    }
    alt = (f"Left: W drawn at length 1 and the step of learning rate {number(LR)} at right angles to it, "
           f"{number(s, 3)} times |W| long, turning W by {r['turn'][0]:.3g} degrees at |W| = {number(w_len, 4)}. "
           f"Middle and right, over {STEPS} steps with weight decay {number(decay)}: |W| goes from "
           f"{number(w_len, 4)} to {number(r['norm'][-1], 4)} and the turn per step from {r['turn'][0]:.3g} to "
           f"{r['turn'][-1]:.3g} degrees" + (f"; without decay |W| ends at {number(free['norm'][-1], 4)}."
                                             if decay > 0 else "."))
    return out, alt


PRESETS = {
    "|W| 10 times": Preset({"scale": 10.0}, (
        "ten times longer, the same gradient step turns W by 0.1798° instead of 17.42°: about a hundredth, "
        "the 1/|W|² of the effective learning rate")),
    "|W| half": Preset({"scale": 0.5}, (
        "half as long, the first step turns W by 51.46°: a small W takes huge effective steps, and its length "
        "grows fast, which brakes them")),
    "decay 0.05": Preset({"decay": 0.05}, (
        "with weight decay 0.05, |W| settles near 2.11 instead of growing to 12.1, and the last step turns W by "
        "13.11° instead of 0.1145°: the decay, not the learning rate, sets the step")),
    "|W| 10 times, decay 0.05": Preset({"scale": 10.0, "decay": 0.05}, (
        "started ten times longer, the decay pulls |W| down to 2.032 and the turn per step climbs from "
        "0.1844° to 12.86°: the same place as from |W| = 2.75")),
    "decay 0.2": Preset({"decay": 0.2}, (
        "a strong decay holds |W| at 1.606, where each step turns W by 25.84°: the steps stay large to the end")),
}


def chaos_note(end: float, near_end: float) -> str:
    """Where the nudged start ends, against the plain one: the same to the digits shown, or a chaotic path."""
    a, b = number(end, 4), number(near_end, 4)
    if a == b:
        return f"ends at |W| = {b} too: a stable path"
    return f"ends at |W| = {b}, not {a}: a chaotic path, only its rough size is predictable"


def entries() -> list:
    """The explorables of section 23.8 on scale invariance."""
    return [
        Explorable("scale_invariance_step", title="A norm after W: the step turns W by about lr / |W|²",
                   setup=setup, update=update, presets=PRESETS, size=(7.2, 3.0), narrow=(NARROW_IN, 8.4),
                   controls={"scale": Slider(SCALES, 1.0, label="start: W0 times"),
                             "decay": Slider(DECAYS, 0.0, label="weight decay")}),
    ]
