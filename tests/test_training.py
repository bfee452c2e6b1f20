"""The trainer: the task, the schedule, Adam, a recorded run, interruption, and the stored experiments against
fresh re-runs (so stale data cannot hide). Only tiny configurations are trained here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from normlab_core import data, outcome, training
from normlab_core.outcome import Rule, chance_ceiling, label
from normlab_core.training import Adam, chance_loss, lr_at, output_change, reversal_batch, run
from normlab_core.transformer import Config

TINY = dict(depth=1, d_model=16, heads=2, d_ff=32, vocab=4, seq_len=3)


def test_reversal_batch_is_x_sep_reversed_x():
    tokens = reversal_batch(np.random.default_rng(0), 64, seq_len=5, vocab=7)
    assert tokens.shape == (64, 11) and tokens.dtype.kind == "i"
    x, sep, back = tokens[:, :5], tokens[:, 5], tokens[:, 6:]
    assert np.all(sep == 7) and x.min() >= 0 and x.max() <= 6
    np.testing.assert_array_equal(back, x[:, ::-1])
    assert len({tuple(r) for r in x}) > 60            # draws, not one row repeated


def test_schedule_warms_up_linearly_then_decays_by_cosine_to_a_tenth():
    steps, peak = 200, 3e-3
    lrs = np.array([lr_at(s, steps, peak, 0.15) for s in range(steps)])
    n_warm = 30
    np.testing.assert_allclose(lrs[:n_warm], peak * np.arange(1, n_warm + 1) / n_warm)
    assert lrs[n_warm] == pytest.approx(peak) and lrs[-1] == pytest.approx(0.1 * peak)
    assert np.all(np.diff(lrs[n_warm:]) < 0)
    mid = n_warm + (steps - 1 - n_warm) / 2          # half-way through the cosine: half-way between peak and floor
    assert lr_at(int(mid), steps, peak, 0.15) == pytest.approx(peak * 0.55, rel=0.02)
    plain = [lr_at(s, steps, peak) for s in range(steps)]
    assert plain[0] == pytest.approx(peak) and plain[-1] == pytest.approx(0.1 * peak)


def test_adam_steps_match_the_update_written_out():
    """Adam's first step is lr * g / (|g| + eps) exactly (m_hat = g, v_hat = g^2); the second follows the
    bias-corrected averages computed here by hand."""
    p = {"w": np.array([1.0, -2.0, 0.5])}
    g1, g2 = np.array([0.3, -1e-3, 2.0]), np.array([-0.1, 0.2, 1.0])
    opt = Adam(p)
    opt.step(p, {"w": g1}, 0.01)
    np.testing.assert_allclose(p["w"], np.array([1.0, -2.0, 0.5]) - 0.01 * g1 / (np.abs(g1) + 1e-8))
    before = p["w"].copy()
    opt.step(p, {"w": g2}, 0.02)
    m = (0.9 * 0.1 * g1 + 0.1 * g2) / (1 - 0.9 ** 2)
    v = (0.98 * 0.02 * g1 ** 2 + 0.02 * g2 ** 2) / (1 - 0.98 ** 2)
    np.testing.assert_allclose(p["w"], before - 0.02 * m / (np.sqrt(v) + 1e-8))


def test_adam_updates_each_array_of_a_dict_as_if_alone():
    """The flat moment vectors are bookkeeping: every array of the dict, whatever its shape and place, moves as a
    one-array Adam (checked against the update above) would move it."""
    rng = np.random.default_rng(3)
    shapes = {"a": (2, 3), "b": (4,), "c": (1,), "d": (3, 1, 2)}
    p = {k: rng.standard_normal(s) for k, s in shapes.items()}
    alone = {k: Adam({k: p[k].copy()}) for k in p}
    alone_p = {k: {k: v.copy()} for k, v in p.items()}
    opt = Adam(p)
    for lr in (0.01, 0.03, 0.002):
        g = {k: rng.standard_normal(s) for k, s in shapes.items()}
        opt.step(p, g, lr)
        for k in p:
            alone[k].step(alone_p[k], {k: g[k]}, lr)
    for k, s in shapes.items():
        assert p[k].shape == s
        np.testing.assert_array_equal(p[k], alone_p[k][k])


# -- the labelling rule, on made-up trajectories --------------------------------------------------------------------

RULE = Rule(ceiling=0.09, n_tokens=2048)          # sigma = sqrt(0.09 * 0.91 / 2048) = 0.00632
STEPS6 = [0, 100, 200, 300, 400, 500]


def test_chance_ceiling_is_the_best_input_blind_predictor():
    answers = np.array([[0, 1], [0, 2], [1, 2], [0, 2]])   # position 0: three 0s; position 1: three 2s
    assert chance_ceiling(answers) == 6 / 8
    rng = np.random.default_rng(0)
    answers = rng.integers(0, 16, size=(256, 8))
    brute = np.mean([max(np.mean(answers[:, j] == k) for k in range(16)) for j in range(8)])
    assert chance_ceiling(answers) == pytest.approx(brute)
    with pytest.raises(ValueError, match="answers"):
        chance_ceiling(np.zeros((2, 2)))


def test_the_stored_rule_is_the_held_out_sets_own():
    r = outcome.rule()
    tokens = training.held_out(Config(depth=1))
    assert r.n_tokens == 256 * 8 and tokens.shape == (256, 17)
    per_position = [np.bincount(tokens[:, 9 + j], minlength=16).max() for j in range(8)]
    assert r.ceiling == sum(per_position) / 2048 and 1 / 16 < r.ceiling < 0.1
    assert r.sigma == pytest.approx(math.sqrt(r.ceiling * (1 - r.ceiling) / 2048))


def test_label_solved_learning_stuck_diverged():
    assert RULE.sigma == pytest.approx(0.006324, abs=1e-6)
    assert label(STEPS6, [0.06, 0.3, 0.8, 0.95, 0.99, 0.995], the_rule=RULE) == "solved"
    assert label(STEPS6, [0.06, 0.3, 0.8, 0.95, 0.99, 0.99], the_rule=RULE) == "learning"    # not above 0.99
    # rising at every evaluation to about twice chance: learning
    assert label(STEPS6, [0.055, 0.086, 0.098, 0.099, 0.110, 0.115], the_rule=RULE) == "learning"
    # at chance, jumping about as an argmax model does: stuck
    assert label(STEPS6, [0.061, 0.062, 0.099, 0.058, 0.067, 0.067], the_rule=RULE) == "stuck"
    # well above chance but flat over the last 40 % of the steps: stuck (stalled)
    assert label(STEPS6, [0.06, 0.11, 0.12, 0.135, 0.138, 0.137], the_rule=RULE) == "stuck"
    # rising, but not yet clearly above the chance ceiling: stuck
    assert label(STEPS6, [0.06, 0.06, 0.06, 0.07, 0.09, 0.10], the_rule=RULE) == "stuck"
    assert label(STEPS6, [0.06, 0.3, 0.5, 0.6, float("nan"), None], the_rule=RULE) == "diverged"
    assert label(STEPS6, [0.06, 0.3, 0.5, 0.6, 0.7, 0.8], diverged=True, the_rule=RULE) == "diverged"


def test_label_thresholds_are_where_the_rule_says():
    above, rise = RULE.learning_above, RULE.min_rise
    assert above == pytest.approx(0.09 + 3 * RULE.sigma) and rise == pytest.approx(2 * RULE.sigma)
    at = [0.06, 0.06, 0.06, above - 2 * rise, above - rise, above]
    assert label(STEPS6, [*at[:-1], above + 1e-4], the_rule=RULE) == "learning"
    assert label(STEPS6, [*at[:-1], above - 1e-4], the_rule=RULE) == "stuck"         # not clearly above chance
    flat = [0.06, 0.2, 0.2, 0.3, 0.3, 0.3 + rise - 1e-4]
    assert label(STEPS6, flat, the_rule=RULE) == "stuck"                              # rose less than 2 sigma
    assert label(STEPS6, [*flat[:-1], 0.3 + rise + 1e-4], the_rule=RULE) == "learning"
    # the window is a fraction of the steps: in a 2,000-step run the rise is measured from step 1,200 on
    steps = list(range(0, 2001, 100))
    acc = [0.06] * 12 + [0.3] * 8 + [0.3 + rise + 1e-4]
    assert label(steps, acc, the_rule=RULE) == "learning"
    assert label(steps, [0.06] * 11 + [0.3] * 9 + [0.3 + rise / 2], the_rule=RULE) == "stuck"
    with pytest.raises(ValueError, match="eval_steps"):
        label([0, 100], [0.1], the_rule=RULE)


def test_a_tiny_model_learns_to_reverse_and_records_everything():
    cfg = Config(**TINY, placement="pre")
    r = run(cfg, 1e-2, steps=150, warmup=0.1, seed=0, eval_every=50, progress=False)
    assert r.outcome == "solved" and r.accuracy > 0.99
    assert r.loss.shape == r.lrs.shape == r.max_logit.shape == r.grad_norm.shape == (150,)
    assert list(r.eval_steps) == [0, 50, 100, 150]
    assert r.eval_loss[0] > 0.9 * chance_loss(cfg) and r.eval_loss[-1] < 0.1
    assert r.resid_rms.shape == r.resid_max.shape == (4, 1)
    assert r.grad_norms_at_init.shape == (1, len(training.GRAD_GROUPS))
    assert np.all(r.grad_norms_at_init > 0)
    np.testing.assert_allclose(r.lrs, [lr_at(s, 150, 1e-2, 0.1) for s in range(150)])
    assert not (r.interrupted or r.diverged)


def test_runs_are_reproducible_and_seeds_differ():
    cfg = Config(**TINY, placement="post")
    a = run(cfg, 3e-3, steps=20, seed=1, eval_every=10, progress=False)
    b = run(cfg, 3e-3, steps=20, seed=1, eval_every=10, progress=False)
    c = run(cfg, 3e-3, steps=20, seed=2, eval_every=10, progress=False)
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.eval_loss, b.eval_loss)
    assert not np.array_equal(a.loss, c.loss)


def test_stop_after_trains_the_first_steps_of_the_same_schedule():
    cfg = Config(**TINY, placement="pre")
    whole = run(cfg, 1e-2, steps=40, warmup=0.15, seed=0, eval_every=20, progress=False)
    first = run(cfg, 1e-2, steps=40, warmup=0.15, seed=0, eval_every=20, stop_after=12, progress=False)
    np.testing.assert_array_equal(first.loss, whole.loss[:12])
    assert list(first.eval_steps) == [0, 12]


def test_an_interrupt_keeps_what_was_trained():
    """Ctrl-C in JupyterLab raises KeyboardInterrupt inside the loop: the run ends there and keeps its record."""
    cfg = Config(**TINY, placement="pre")
    seen = []

    def interrupt_at_second_evaluation(r):
        seen.append(len(r.loss))
        if len(seen) == 2:
            raise KeyboardInterrupt

    r = run(cfg, 1e-2, steps=100, seed=0, eval_every=10, progress=False, callback=interrupt_at_second_evaluation)
    assert r.interrupted and len(r.loss) == 20 and seen == [10, 20]
    assert list(r.eval_steps) == [0, 10, 20] and math.isfinite(r.accuracy)


def test_a_run_that_blows_up_is_marked_diverged(monkeypatch):
    cfg = Config(**TINY, placement="pre")
    real = training.loss_and_grads
    calls = []

    def fails_on_fourth(params, cfg, tokens, stats=None):
        calls.append(1)
        loss, grads = real(params, cfg, tokens, stats)
        return (float("nan") if len(calls) == 4 else loss), grads

    monkeypatch.setattr(training, "loss_and_grads", fails_on_fourth)
    r = run(cfg, 1e-2, steps=10, seed=0, progress=False)
    assert r.diverged and r.outcome == "diverged" and len(r.loss) == 3


@pytest.mark.parametrize("bad", [dict(lr=0.0), dict(lr=float("inf")), dict(warmup=1.0), dict(warmup=-0.1),
                                 dict(steps=0)])
def test_run_refuses_bad_settings(bad):
    settings = dict(lr=1e-3, steps=5, warmup=0.0)
    settings.update(bad)
    with pytest.raises((ValueError, TypeError)):
        run(Config(**TINY), settings["lr"], settings["steps"], settings["warmup"], 0, progress=False)


def test_output_change_is_first_order_in_the_step():
    """For small steps the output moves in proportion to the step: 10x the learning rate, 10x the change."""
    cfg = Config(**TINY, placement="post")
    small, large = output_change(cfg, 1e-5, 0), output_change(cfg, 1e-4, 0)
    assert large / small == pytest.approx(10, rel=0.01)


# -- the stored experiments ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stored():
    return data.load()


def test_data_file_is_small_and_complete(stored):
    assert data.PATH.stat().st_size <= 2_000_000
    s = stored.settings
    assert s["steps"] == 500 and s["seeds"] == [0, 1, 2] and s["betas"] == [0.9, 0.98]
    listed = 0
    for name, study in stored.studies.items():
        steps = study.get("steps", s["steps"])
        for cell in study["cells"]:
            runs = stored.select(**cell["config"], lr=cell["lr"], warmup=cell["warmup"], steps=steps)
            assert set(study.get("seeds", s["seeds"])) <= {r["seed"] for r in runs}, (name, cell)
            listed += len(study.get("seeds", s["seeds"]))
            for r in runs:
                assert len(r["loss"]) == len(r.get("curve_steps", s["curve_steps"])) or r["diverged"]
                assert r["eval_steps"][-1] == steps
    assert listed >= len(stored.runs)           # every stored run belongs to a study's cell


def test_every_stored_label_follows_the_rule(stored):
    """The outcome stored with each run is the rule of normlab_core.outcome applied to its accuracy trajectory
    (the old end-state rule called post-norm's rising depth-24 runs "stuck" and every other run "partial")."""
    for r in stored.runs:
        assert r["outcome"] == label(r["eval_steps"], r["eval_accuracy"], r["diverged"]), r["config"]
    assert {r["outcome"] for r in stored.runs} <= set(outcome.LABELS) - {"diverged"}


# Two cells re-run for their first RERUN_STEPS steps and compared with the stored curve: one that gets stuck
# (post-norm, depth 6, lr 1e-2) and one that learns (pre-norm, depth 2, warm-up). Tolerance: the file keeps 5
# significant digits (a relative rounding of at most 5e-5), and float32 arithmetic may differ in its last bits
# between CPUs' BLAS kernels. Over these 40 steps the whole float32 rounding matters little: the same runs in float64
# differ from float32 by at most 2.2e-7 relative. So 2e-4 relative is a generous bound for honest re-runs, while a
# change to the model, the initialization, the data or the optimizer moves these numbers by far more.
RERUN_STEPS = 40
RERUN_CELLS = [
    dict(config={"placement": "post", "depth": 6}, lr=1e-2, warmup=0.0, seed=0),
    dict(config={"placement": "pre", "depth": 2}, lr=3e-3, warmup=0.15, seed=1),
]


@pytest.mark.parametrize("cell", RERUN_CELLS, ids=lambda c: f"{c['config']['placement']}-{c['config']['depth']}")
def test_stored_runs_match_a_fresh_rerun(stored, cell):
    (rec,) = stored.select(**cell["config"], lr=cell["lr"], warmup=cell["warmup"], seed=cell["seed"])
    cfg = Config(**cell["config"])
    fresh = run(cfg, cell["lr"], stored.settings["steps"], cell["warmup"], cell["seed"], stop_after=RERUN_STEPS,
                progress=False)
    steps = [i for i, s in enumerate(stored.settings["curve_steps"]) if s < RERUN_STEPS]
    stored_loss = np.array(rec["loss"])[steps]
    fresh_loss = fresh.loss[np.array(stored.settings["curve_steps"])[steps]]
    np.testing.assert_allclose(fresh_loss, stored_loss, rtol=2e-4)
    np.testing.assert_allclose(fresh.grad_norms_at_init, rec["grad_norms_at_init"], rtol=2e-4)
    np.testing.assert_allclose(fresh.eval_loss[0], rec["eval_loss"][0], rtol=2e-4)


# -- train(): the live face trains, the book's face only shows stored runs ------------------------------------------

def test_train_in_the_book_shows_the_stored_runs_and_never_trains(monkeypatch):
    from normlab_core import display
    from normlab_core import training_live as live
    from normlab_core.figures.style import NARROW_IN

    def no_training(*a, **k):
        raise AssertionError("the book must not train")

    shown = []
    monkeypatch.setenv("NORMLAB_STATIC", "1")
    monkeypatch.setattr(training, "run", no_training)
    def show_figure(draw, *a, alt=None, caption="", **k):   # both layouts draw, stored runs or not
        wide, narrow = draw(*a, **k), draw(*a, narrow=True, **k)
        assert narrow.get_figwidth() == NARROW_IN < wide.get_figwidth()
        shown.append(caption)

    monkeypatch.setattr(display, "show_figure", show_figure)
    assert live.train(depth=6, placement="post", lr=1e-2) is None
    runs = data.load().select(placement="post", depth=6, lr=1e-2, warmup=0.0)
    assert len(shown) == 1 and live.seed_summary(runs) in shown[0]
    live.train(depth=5, placement="post", lr=1e-2)          # not stored: a note instead, still no training
    assert "not run" in shown[-1]


def test_train_live_returns_the_run_it_drew(monkeypatch):
    from normlab_core import training_live as live

    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    monkeypatch.setattr(live, "in_kernel", lambda: True)     # the live figure is drawn in a kernel (else a text line)

    class Handle:                                             # a kernel's display handle: each update replaces it
        def update(self, obj, **kwargs):
            pass

    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda *a, display_id=None, **k: Handle() if display_id else None)
    drawn = []
    real = live.LiveLoss.draw
    monkeypatch.setattr(live.LiveLoss, "draw", lambda self, run, status: drawn.append(0 if run is None else len(
        run.loss)) or real(self, run, status))
    r = live.train(lr=1e-2, steps=60, **TINY, placement="pre")
    assert isinstance(r, training.Run) and len(r.loss) == 60
    assert drawn[0] < drawn[-1] == 60 and len(drawn) >= 5       # redrawn while it trained, and once at the end


# -- the notebook "Does it train?" (notebooks/11_does_it_train.ipynb), with the section notebooks' own checks ----------

NB11 = data.PATH.parents[2] / "notebooks" / "11_does_it_train.ipynb"
# A learner's edit of its parameters cell: other depths, seeds and matrix for (a), a smaller checked model, and a
# short live run (train() trains for real outside the book).
NB11_EDIT = ("GRAD_DEPTHS = (4, 8)\nGRAD_SEEDS = (1,)\nGRAD_MATRIX = 'attn.wv'\n"
             "CHECK = dict(depth=1, d_model=4, heads=2, d_ff=6, vocab=3, seq_len=2)\n"
             "LIVE = dict(depth=2, placement='pre', lr=1e-2, steps=30, seed=1)")


def test_notebook_prose_numbers_are_printed_or_computed():
    """Every literal prose number of notebook 11 is printed by its cells, and every {eval} one is stored with an
    evaluated value (the checks tests/test_prose_numbers.py applies to the section notebooks)."""
    import json

    from test_prose_numbers import inline_expressions, report, unbacked

    nb = json.loads(NB11.read_text(encoding="utf-8"))
    assert not unbacked(nb), report(NB11.name, unbacked(nb))
    exprs = inline_expressions(nb)
    assert len(exprs) >= 20
    for index, expr in exprs:
        stored = {i["expression"]: i["result"] for i in nb["cells"][index]["metadata"].get("user_expressions", [])}
        assert stored.get(expr, {}).get("status") == "ok", f"cell {index}: {expr!r} not stored (run make notebooks)"


def test_notebook_runs_with_edited_parameters_and_its_prose_follows():
    """The edit-and-rerun check of tests/test_parameters.py, for notebook 11."""
    import nbformat
    from test_parameters import literal_numbers_left_behind, stored_values

    from scripts.refresh_notebooks import eval_failures, execute
    stored = nbformat.read(NB11, as_version=4)
    nb = nbformat.read(NB11, as_version=4)
    execute(nb, NB11.parent, overrides=NB11_EDIT)
    stderr = [f"cell {i}: {''.join(o.get('text', ''))[:200]}" for i, c in enumerate(nb.cells)
              for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert not stderr, "\n".join(stderr)
    assert not eval_failures(nb), "\n".join(eval_failures(nb))
    before, after = stored_values(stored), stored_values(nb)
    assert before.keys() == after.keys()
    assert [k for k in before if before[k] != after[k]], "no inline prose number followed the edit"
    assert not literal_numbers_left_behind(nb), "\n".join(literal_numbers_left_behind(nb))
