"""train() as a lab bench: every argument is checked before anything is shown or trained, batch and eval_every are
arguments, and a Run can be saved and loaded again (versioned JSON)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from normlab_core import training
from normlab_core import training_live as live
from normlab_core.transformer import Config

TINY = dict(depth=1, d_model=8, heads=2, d_ff=16)


@pytest.fixture
def nothing_shown(monkeypatch):
    """Fails the test if train() displays anything or starts training."""
    import IPython.display

    def shown(*a, **k):
        raise AssertionError(f"train() displayed {a!r} before its arguments were checked")

    def trained(*a, **k):
        raise AssertionError("train() started training with a bad argument")

    monkeypatch.setattr(IPython.display, "display", shown)
    monkeypatch.setattr(training, "run", trained)
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("kwargs, error, words", [
    (dict(seed=-1), ValueError, ["seed", "-1", ">= 0"]),
    (dict(seed=1.5), TypeError, ["seed", "1.5"]),
    (dict(dept=6), TypeError, ["'dept'", "depth", "d_model", "placement", "qk_norm", "lr", "eval_every"]),
    (dict(steps=10**9), ValueError, ["steps", f"{training.MAX_STEPS}", f"{10**9}"]),
    (dict(steps=0), ValueError, ["steps", ">= 1"]),
    (dict(lr=-1.0), ValueError, ["lr", "-1.0"]),
    (dict(warmup=1.5), ValueError, ["warmup", "[0, 1)"]),
    (dict(batch=0), ValueError, ["batch"]),
    (dict(eval_every=0), ValueError, ["eval_every"]),
    (dict(depth=0), ValueError, ["depth"]),
])
def test_train_names_the_bad_argument_before_showing_anything(nothing_shown, monkeypatch, static, kwargs, error,
                                                              words):
    if static:
        monkeypatch.setenv("NORMLAB_STATIC", "1")
    with pytest.raises(error) as caught:
        live.train(**kwargs)
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_run_checks_its_arguments_the_same_way():
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        training.run(Config(**TINY), 1e-2, steps=2, seed=-1, progress=False)
    with pytest.raises(ValueError, match=f"steps must be at most {training.MAX_STEPS}"):
        training.run(Config(**TINY), 1e-2, steps=training.MAX_STEPS + 1, progress=False)


def test_train_takes_batch_and_eval_every(monkeypatch):
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    sizes = []
    real = training.reversal_batch
    monkeypatch.setattr(training, "reversal_batch", lambda rng, batch, *a: sizes.append(batch) or real(rng, batch, *a))
    r = live.train(lr=1e-2, steps=10, batch=4, eval_every=5, **TINY, placement="pre")
    assert list(r.eval_steps) == [0, 5, 10]
    # the ten training batches hold 4 sequences each; the held-out set (EVAL_SIZE sequences) is drawn apart from them
    assert [n for n in sizes if n != training.EVAL_SIZE] == [4] * 10 and training.EVAL_SIZE in sizes


def assert_same_run(a: training.Run, b: training.Run):
    assert a.cfg == b.cfg
    for name in ("lr", "steps", "warmup", "seed", "diverged", "interrupted", "seconds"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("loss", "lrs", "max_logit", "grad_norm", "grad_norms_at_init", "eval_steps", "eval_loss",
                 "eval_accuracy", "resid_rms", "resid_max"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def test_a_saved_run_loads_back_exactly(tmp_path):
    r = training.run(Config(**TINY, placement="pre", qk_norm=True), 1e-2, steps=12, warmup=0.25, seed=3,
                     eval_every=4, progress=False)
    r.loss[2], r.max_logit[3], r.grad_norm[4] = math.nan, math.inf, -math.inf   # what JSON has no number for
    path = r.save(tmp_path / "run.json")
    record = json.loads(path.read_text())          # plain JSON (no NaN literals), versioned
    assert record["format"] == "normlab-run" and record["version"] == training.RUN_VERSION
    assert record["config"]["qk_norm"] is True and record["loss"][2] == "NaN"
    back = training.Run.load(path)
    assert_same_run(r, back)
    assert back.outcome == r.outcome and back.accuracy == r.accuracy


def test_an_empty_run_and_other_files_are_handled(tmp_path):
    empty = training.Run(Config(**TINY), 1e-3, 10, 0.0, 0)
    assert_same_run(empty, training.Run.load(empty.save(tmp_path / "empty.json")))
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match="is not a saved run"):
        training.Run.load(tmp_path / "other.json")
    record = json.loads((tmp_path / "empty.json").read_text())
    (tmp_path / "later.json").write_text(json.dumps({**record, "version": training.RUN_VERSION + 1}))
    with pytest.raises(ValueError, match=f"of version {training.RUN_VERSION + 1}"):
        training.Run.load(tmp_path / "later.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        training.Run.load(tmp_path / "broken.json")
