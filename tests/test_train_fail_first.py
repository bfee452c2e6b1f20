"""Section 23.2's failing network: normlab_core.residual_mlp against central differences and LayerNorm's own
definition, the stored runs (normlab_core/data/fail_first.json.gz) against the study that declares them and a fresh
run of the code, and the explorable `fail_first` against the stored numbers. If the stored-data tests fail after a
change of the model, retrain: `.venv/bin/python scripts/experiments.py --only fail_first --add`; otherwise fix the
module and rerun `.venv/bin/pytest tests/test_train_fail_first.py -q`."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from normlab_core import residual_mlp as rm
from normlab_core.figures import get
from normlab_core.figures.s02_fail import PATH, stored
from scripts.experiments import SMALL

STUDY = SMALL["fail_first"]


def central(f, a, index, h=1e-6):
    a_up, a_down = a.copy(), a.copy()
    a_up[index] += h
    a_down[index] -= h
    return (f(a_up) - f(a_down)) / (2 * h)


@pytest.mark.parametrize("wiring", rm.WIRINGS)
def test_the_backward_pass_matches_central_differences(wiring):
    p = rm.init(3, wiring, seed=5)
    x, y = rm.batch(np.random.default_rng(6), 4)
    _, grads, _, dstream = rm.loss_and_grads(p, wiring, x, y)
    rng = np.random.default_rng(7)
    for name in [k for k in p if not k.startswith("final")]:
        index = tuple(int(rng.integers(n)) for n in p[name].shape)

        def loss_at(v, name=name):
            return rm.loss_and_grads({**p, name: v}, wiring, x, y)[0]

        assert grads[name][index] == pytest.approx(central(loss_at, p[name], index), rel=1e-5, abs=1e-9), name
    for index in [(0, 0), (3, 31), (2, 17)]:
        fd = central(lambda v: rm.loss_and_grads(p, wiring, v, y)[0], x, index)
        assert dstream[0][index] == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_the_post_norm_stream_is_centred_and_of_unit_variance_at_every_layer():
    p = rm.init(6, "post", seed=0)
    _, stream, _ = rm.forward(p, "post", rm.batch(np.random.default_rng(1), 16)[0])
    for h in stream[1:]:
        np.testing.assert_allclose(h.mean(axis=-1), 0, atol=1e-12)
        np.testing.assert_allclose(h.var(axis=-1), 1, rtol=1e-3)       # eps 1e-5 against variances near 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="wiring"):
        rm.init(2, "peri")
    with pytest.raises(ValueError, match="lr"):
        rm.train(2, "pre", -0.1, 10)
    with pytest.raises(TypeError, match="depth"):
        rm.init(2.5, "pre")


# -- the stored runs -----------------------------------------------------------------------------------------------
def test_the_file_holds_every_run_the_study_declares_and_stays_small():
    assert PATH.stat().st_size < 1_000_000
    settings, runs = stored()["settings"], stored()["runs"]
    assert settings["axes"] == STUDY["axes"] and settings["seeds"] == STUDY["seeds"]
    assert settings["steps"] == STUDY["steps"] and settings["quantiles"] == list(rm.QUANTILES)
    want = {(d, w, lr, s) for (d, w, lr), s in itertools.product(itertools.product(*STUDY["axes"].values()),
                                                                 STUDY["seeds"])}
    assert set(runs) == want


def test_each_run_is_consistent_with_itself():
    q = len(rm.QUANTILES)
    for (depth, _, _, seed), r in stored()["runs"].items():
        loss = r["loss"]
        assert np.isfinite(loss).all() and loss.max() <= rm.BLOWN
        assert r["end_step"] == len(loss) - 1
        assert len(loss) == (STUDY["steps"] if r["blown"] is None else r["blown"])
        if seed == STUDY["seeds"][0]:
            for when in ("start", "end"):
                for kind in ("act", "grad"):
                    b = r["bands"][when][kind]
                    assert b.shape == (q, depth + 1)
                    assert (np.diff(b, axis=0) >= 0).all()          # quantiles ascend
        else:
            assert "bands" not in r


def test_the_start_does_not_depend_on_the_learning_rate():
    runs = stored()["runs"]
    for depth, wiring in itertools.product(STUDY["axes"]["depth"], STUDY["axes"]["wiring"]):
        starts = [runs[(depth, wiring, lr, 0)]["bands"]["start"]["act"] for lr in STUDY["axes"]["lr"]]
        assert all(np.array_equal(starts[0], s) for s in starts[1:])


@pytest.mark.parametrize(("depth", "wiring", "lr"), [(4, "pre", 0.1), (8, "none", 0.03)])
def test_a_fresh_run_of_the_code_gives_the_stored_numbers(depth, wiring, lr):
    fresh, kept = rm.train(depth, wiring, lr, STUDY["steps"], seed=0), stored()["runs"][(depth, wiring, lr, 0)]
    assert fresh["blown"] == kept["blown"]
    np.testing.assert_allclose(kept["loss"], fresh["loss"], rtol=1e-4)
    for when, kind in itertools.product(("start", "end"), ("act", "grad")):
        np.testing.assert_allclose(kept["bands"][when][kind], fresh[when][kind], rtol=1e-4)


# -- the explorable ------------------------------------------------------------------------------------------------
def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


@pytest.mark.parametrize("depth", [4, 32])
@pytest.mark.parametrize("wiring", rm.WIRINGS)
def test_the_readouts_at_the_start_match_a_fresh_network(depth, wiring):
    """At the start nothing is trained: the quantiles come from rm.bands on a fresh network, and the readouts' median
    activation and gradient ratio agree with np.median computed here."""
    p = rm.init(depth, wiring, seed=0)
    x, y = rm.batch(np.random.default_rng(rm.PROBE_SEED), rm.PROBE)
    _, _, stream, dstream = rm.loss_and_grads(p, wiring, x, y)
    act_top = np.median(np.abs(stream[-1]))
    ratio = np.median(np.abs(dstream[0])) / np.median(np.abs(dstream[-1]))
    readouts = get("fail_first").render(depth=depth, placement=wiring, lr=0.03).readouts
    assert numbers(readouts["activations |h|, median"])[3] == pytest.approx(act_top, rel=5e-3)   # three digits shown
    assert numbers(readouts["gradients |dL/dh|, median"])[2] == pytest.approx(ratio, rel=5e-3)


@pytest.mark.parametrize(("depth", "wiring", "lr"), [(8, "none", 0.03), (32, "pre", 0.1), (32, "post", 0.03)])
def test_the_loss_readout_counts_the_seeds_that_blew_up(depth, wiring, lr):
    runs = [stored()["runs"][(depth, wiring, lr, s)] for s in STUDY["seeds"]]
    blown = [r["blown"] for r in runs if r["blown"] is not None]
    text = get("fail_first").render(depth=depth, placement=wiring, lr=lr).readouts["loss"]
    if blown:
        assert f"blew up in {len(blown)} of {len(runs)} seeds" in text
        assert text.endswith(", ".join(map(str, blown)))
    else:
        assert "no seed blew up" in text
