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
    (dict(eps="1e-5"), TypeError, ["eps", "'1e-5'", ">= 0"]),        # once failed after the figure was drawn
    (dict(eps=-1e-5), ValueError, ["eps", "-1e-05", ">= 0"]),         # once trained and said "diverged at step 0"
    (dict(eps=math.nan), ValueError, ["eps", "nan"]),
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


def test_every_config_field_is_checked_where_the_config_is_made():
    """A Config with a bad eps is refused when it is made, as its other fields are (not at the first step)."""
    for eps, error in (("1e-5", TypeError), (-1.0, ValueError), (math.inf, ValueError)):
        with pytest.raises(error, match="eps"):
            Config(**TINY, eps=eps)
    assert Config(**TINY, eps=0.0).eps == 0.0


def test_outside_jupyter_train_prints_one_line_of_progress_not_image_data(monkeypatch, capsys):
    """In a terminal or a script, train() writes its progress as text on one line (rewritten with a carriage
    return), not the live figure's PNG as base64 (once 30 KB of it)."""
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    r = live.train(lr=1e-2, steps=6, eval_every=3, **TINY, placement="pre")
    out = capsys.readouterr().out
    assert "iVBOR" not in out and "image/png" not in out and len(out) < 2000, out[:300]
    assert out.count("\n") == 1 and out.endswith("\n"), repr(out)
    last = out.rstrip("\n").split("\r")[-1]
    assert "finished 6 steps" in last and "pre-norm" in last, last
    assert len(r.loss) == 6


def test_compare_returns_nothing_to_echo_and_keeps_runs_apart_beyond_six(monkeypatch):
    """compare(...) ending a cell shows the figure alone (it returns None, so no list of Runs is echoed under it),
    and eight runs get eight different (colour, line style) pairs."""
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: None)
    runs = [training.Run(Config(**TINY), 0.01, 10, 0.0, seed, loss=np.linspace(2.5, 0.5 + seed / 10, 10),
                         eval_steps=np.array([0, 10]), eval_loss=np.array([2.5, 1.0]),
                         eval_accuracy=np.array([0.1, 0.5])) for seed in range(8)]
    assert live.compare(*runs) is None
    fig = live.compare_figure(runs)
    loss_lines = [line for line in fig.axes[0].lines if len(line.get_xdata()) == 10]
    styles = {(line.get_color(), line.get_linestyle()) for line in loss_lines}
    assert len(loss_lines) == 8 and len(styles) == 8, styles


def test_the_live_status_says_the_time_while_training_and_not_once_finished():
    """While a run trains its status gives the elapsed time and an estimate of the time left (from the steps done);
    the finished run's status, the one a stored notebook keeps, has no time in it."""
    run = training.Run(Config(**TINY), 0.01, 40, 0.0, 0, loss=np.full(10, 2.0), eval_steps=np.array([0, 10]),
                       eval_loss=np.array([2.5, 2.0]), eval_accuracy=np.array([0.1, 0.2]))
    assert live._status(run, 40, 12.0).endswith("; 12 s so far, about 36 s left")     # 10 steps in 12 s, 30 to go
    done = training.Run(Config(**TINY), 0.01, 10, 0.0, 0, loss=np.full(10, 2.0), eval_steps=np.array([0, 10]),
                        eval_loss=np.array([2.5, 2.0]), eval_accuracy=np.array([0.1, 0.2]))
    assert " s " not in live._status(done, 10, 12.0) and live._status(done, 10, 12.0).startswith("finished 10 steps")
