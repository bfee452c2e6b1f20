"""The 23.8 explorable `scale_invariance_step` (normlab_core/figures/s08_scale.py) against computations that do not
use its code: float64 central differences of the loss for the gradient, the geometry of a step at right angles to W
and an independent gradient-descent loop. If one fails, fix the figure module or normlab_core/scale_invariance.py and
rerun `.venv/bin/pytest tests/test_scale_explorable.py -q`."""

from __future__ import annotations

import re

import numpy as np
import pytest

from normlab_core.figures import get
from normlab_core.figures import s08_scale as s08
from normlab_core.gradcheck import numerical_gradient
from normlab_core.scale_invariance import loss

EXP = get("scale_invariance_step")


def fd_grad(w):
    """dL/dW by central differences of the loss alone."""
    return numerical_gradient(lambda v: np.array([loss(v, s08.X, s08.T)]), w, np.ones(1), h=1e-6)


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


@pytest.mark.parametrize("scale", s08.SCALES)
def test_the_gradient_readout_is_orthogonal_to_w_and_as_long_as_central_differences_say(scale):
    w = scale * s08.W0
    h = 1e-6                                  # d/dc L(c W) at c = 1 is <grad, W>: zero for a scale-invariant loss
    along = (loss((1 + h) * w, s08.X, s08.T) - loss((1 - h) * w, s08.X, s08.T)) / (2 * h)
    g = fd_grad(w)
    assert abs(along) < 1e-7 * np.linalg.norm(g) * np.linalg.norm(w)
    readout = EXP.render(scale=scale).readouts["gradient and W"]
    g_len, at_unit = numbers(readout.split("|∇W| =")[1])[:2]
    assert readout.startswith("|cos(∇W, W)| below 1e-12")
    assert abs(np.sum(g * w)) < 1e-7 * np.linalg.norm(g) * np.linalg.norm(w)
    assert g_len == pytest.approx(np.linalg.norm(g), rel=1e-3)
    assert at_unit == pytest.approx(np.linalg.norm(fd_grad(s08.W0 / np.linalg.norm(s08.W0))), rel=1e-3)


@pytest.mark.parametrize("scale", s08.SCALES)
def test_the_first_turn_is_arctan_of_lr_g_over_w_and_falls_like_one_over_w_squared(scale):
    w = scale * s08.W0
    want = np.degrees(np.arctan(s08.LR * np.linalg.norm(fd_grad(w)) / np.linalg.norm(w)))
    readout = EXP.render(scale=scale).readouts["first step"]
    w_len, lr_eff, turn = numbers(readout)[:1] + numbers(readout.split("=")[2])[:1] + numbers(readout.split("by")[1])
    assert turn == pytest.approx(want, rel=1e-3)
    assert w_len == pytest.approx(np.linalg.norm(w), rel=1e-3)
    assert lr_eff == pytest.approx(s08.LR / np.linalg.norm(w) ** 2, rel=1e-3)
    base = np.tan(np.radians(s08.run(1.0, 0.0)["turn"][0])) * np.linalg.norm(s08.W0) ** 2
    assert np.tan(np.radians(s08.run(scale, 0.0)["turn"][0])) * np.linalg.norm(w) ** 2 == pytest.approx(base, rel=1e-9)


@pytest.mark.parametrize("decay", s08.DECAYS)
def test_the_stored_lengths_follow_an_independent_descent_loop(decay):
    """Twenty steps of W <- W - lr (grad + decay W) with central-difference gradients, and Pythagoras: the decay
    shortens W by (1 - lr decay), the gradient step adds at right angles."""
    w, got = s08.W0.copy(), s08.run(1.0, decay)["norm"]
    for k in range(20):
        g = fd_grad(w)
        new = w - s08.LR * (g + decay * w)
        pythagoras = np.sqrt((1 - s08.LR * decay) ** 2 * np.sum(w * w) + s08.LR ** 2 * np.sum(g * g))
        assert np.linalg.norm(new) == pytest.approx(pythagoras, rel=1e-9)
        assert got[k + 1] == pytest.approx(np.linalg.norm(new), rel=1e-5), k
        w = new


def test_weight_decay_sets_the_final_step_not_the_start():
    """From ten times the length, decay 0.05 ends where it ends from the plain start; without decay W stays long
    and its steps small."""
    far, near, free = s08.run(10.0, 0.05), s08.run(1.0, 0.05), s08.run(10.0, 0.0)
    assert far["norm"][-1] == pytest.approx(near["norm"][-1], rel=0.1)
    assert free["norm"][-1] > 10 * far["norm"][-1] and free["turn"][-1] < far["turn"][-1] / 10


def test_the_runs_are_read_only():
    with pytest.raises(ValueError):
        s08.run(1.0, 0.0)["norm"][0] = 1.0


@pytest.mark.parametrize("scale", s08.SCALES)
@pytest.mark.parametrize("decay", s08.DECAYS)
def test_the_neighbour_readout_tells_stable_paths_from_chaotic_ones(scale, decay):
    """A third start, nudged by another random pattern of the same size, agrees: where the readout says the path is
    stable it ends at the same four digits; where it says chaotic, the two nudged starts end apart too."""
    from normlab_core.formatting import number
    from normlab_core.scale_invariance import sgd

    note = EXP.render(scale=scale, decay=decay).readouts[f"a start {s08.NUDGE:g} away"]
    other = s08.W0 * (1 + s08.NUDGE * np.random.default_rng(9).normal(size=s08.W0.shape))
    ends = {number(sgd(scale * w, s08.X, s08.T, lr=s08.LR, steps=s08.STEPS, weight_decay=decay)["norm"][-1], 4)
            for w in (s08.W0, other)} | {number(s08.run(scale, decay, nudged=True)["norm"][-1], 4)}
    assert ("stable" in note) == (len(ends) == 1), (note, ends)
