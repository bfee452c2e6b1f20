"""The judging logic on its own, in this process: the calls the sandbox would make are made here on a notebook's
namespace (runner.run_groups), and judged as the grader judges them (hidden_checks). No nbgrader, no sandbox.

- the reference solution gets full marks, for the course's seed, for 500 random seeds, and with the data of
  exercises 2 and 3 changed (what the instructor guide tells an instructor to change);
- each plausible mistake loses exactly its part; correct answers written in other ways lose nothing;
- objects that equal anything, hard-coded values, delegation to normlab_core and slow answers get what they
  deserve, with messages that say why;
- records that are missing, malformed or forged never pass and never crash the judge.
"""

from __future__ import annotations

import functools
import random
import re
import time

import nbformat
import numpy as np
import pytest
from grading_support import (
    DELEGATING,
    DEPENDENT,
    FLOAT64,
    FRAME,
    GRADE_IDS,
    PART_CELLS,
    SOURCE,
    SUM_MEAN,
    WRONG,
    context,
    failing,
    hidden_checks,
    judge_namespace,
    lost_cells,
    namespace,
)
from normlab_grading import plans, wire

import normlab_core


@pytest.fixture(scope="module")
def ctx():
    return context()


@pytest.fixture(scope="module")
def reference_ns():
    return namespace()


def test_reference_passes_every_check(reference_ns, ctx):
    verdicts = judge_namespace(reference_ns, ctx)
    assert set(verdicts) == set(GRADE_IDS) and failing(verdicts) == set()   # a verdict for every check cell
    assert "1(a): 3 visible and 25 hidden cases passed" == verdicts["test_ex1_function"].message


SEEDS = random.Random(23).sample(range(1, 2**31), 500)


@pytest.mark.parametrize("chunk", range(4))
def test_reference_gets_full_marks_for_500_random_seeds(reference_ns, ctx, chunk, monkeypatch):
    # 8(b)'s plan reads the stored grid's count from the data file (the same for every seed): read once here, it is
    # half of each seed's time (0.06 of 0.13 s)
    monkeypatch.setattr(plans, "stored_solved", functools.cache(plans.stored_solved))
    seeds = SEEDS[chunk::4]
    bad = {}
    for seed in seeds:
        verdicts = judge_namespace(reference_ns, hidden_checks.Context(seed=seed, data=ctx.data), via_json=False)
        if failing(verdicts):
            bad[seed] = {gid: verdicts[gid].message for gid in failing(verdicts)}
    assert bad == {}


def _with_data_seeds(ex2: int, ex3: int):
    source = nbformat.read(SOURCE, as_version=4)
    for cell in source.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex2_data":
            assert "default_rng(2310)" in cell.source
            cell.source = cell.source.replace("default_rng(2310)", f"default_rng({ex2})")
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex3_data":
            assert "default_rng(23)" in cell.source
            cell.source = cell.source.replace("default_rng(23)", f"default_rng({ex3})")
    return source


def test_reference_gets_full_marks_with_other_data_and_seeds():
    # The guide: change COURSE_SEED (every hidden input) and, if you like, the data cells of exercises 2 and 3.
    pick = random.Random(5)
    for _ in range(12):
        source = _with_data_seeds(pick.randrange(10**6), pick.randrange(10**6))
        ctx = context(seed=pick.randrange(2**31), source=source)
        verdicts = judge_namespace(namespace(source=source), ctx, via_json=False)
        assert failing(verdicts) == set(), {g: verdicts[g].message for g in failing(verdicts)}


def test_a_partial_assignment_is_judged_on_the_check_cells_it_keeps():
    # make_exercises.py --only 1,4: no data cells of exercises 2 and 3, and only their check cells to judge.
    from grading_support import mx

    part = mx.subset(nbformat.read(SOURCE, as_version=4), {1, 4})
    ids = [c.metadata["nbgrader"]["grade_id"] for c in part.cells
           if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert sorted(ids) == [g for g in GRADE_IDS if g.startswith(("test_ex1", "test_ex4"))]
    ctx = context(source=part)
    assert "x_check" not in ctx.data and "x_input" not in ctx.data
    verdicts = judge_namespace(namespace(source=part), ctx, ids)
    assert set(verdicts) == set(ids) and failing(verdicts) == set()


@pytest.mark.parametrize("part", sorted(WRONG))
def test_each_plausible_mistake_loses_exactly_its_part(part, ctx):
    cell, code = WRONG[part]
    verdicts = judge_namespace(namespace({cell: code}), ctx)
    assert failing(verdicts) == lost_cells((part,)), {g: v.message for g, v in verdicts.items()}
    for gid in PART_CELLS[part]:
        label = verdicts[gid].message.split(":")[0]
        assert re.fullmatch(r"\d(\([abc]\))?", label), verdicts[gid].message


def test_dependent_parts_are_the_ones_the_tests_expect():
    assert DEPENDENT == {"2a": ("2c", "8a"), "4a": ("4b",)}


# --- correct answers written another way ----------------------------------------------------------------------

ODD_ANSWERS = {
    "numpy_scalars_lists_and_float32": FLOAT64,
    "sum_based_means": SUM_MEAN,
    "one_pass_variance": {"ex1_function": """
def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean()
    var = (x * x).mean() - mean * mean
    return (x - mean) / np.sqrt(var + eps)
"""},
    "answers_of_other_types": {
        "ex1_why": """
def deviations_and_scale(x, eps):
    x = np.asarray(x, dtype=np.float64)
    numerator = x - x.mean()
    return [numerator, np.array(np.sqrt((numerator ** 2).mean() + eps))]


zero_over_zero = float("nan")
""",
        "ex2_check": """
def gradient_gap(dy, x, gamma, eps):
    analytic = rmsnorm_backward(dy, x, gamma, eps=eps)
    numeric = central_difference(lambda v: rms_norm(v, gamma, eps=eps), x, dy, h=1e-6)
    return np.asarray(np.max(np.abs(analytic - numeric)), dtype=np.float32)


max_abs_diff = gradient_gap(dy_check, x_check, gamma_check, 1e-5)
""",
        "ex4_counts": """
def layer_norm_ops(D):
    return (np.int32(3 * D + 3), np.uint64(4 * D - 1))


def rms_norm_ops(D):
    return (3 * D + 2, np.int16(D))
""",
    },
}


@pytest.mark.parametrize("name", sorted(ODD_ANSWERS))
def test_correct_answers_in_other_forms_get_full_marks(name, ctx):
    verdicts = judge_namespace(namespace(ODD_ANSWERS[name]), ctx)
    assert failing(verdicts) == set(), {g: verdicts[g].message for g in failing(verdicts)}


def test_zero_over_zero_accepts_any_spelling_of_nan(reference_ns, ctx):
    for answer in ("NaN", " nan ", float("nan"), np.float64("nan")):
        verdicts = judge_namespace(dict(reference_ns, zero_over_zero=answer), ctx, ["test_ex1_why"])
        assert failing(verdicts) == set(), answer
    for answer in ("inf", float("inf"), None, "not a number"):
        verdicts = judge_namespace(dict(reference_ns, zero_over_zero=answer), ctx, ["test_ex1_why"])
        assert failing(verdicts) == {"test_ex1_why"}, answer


# --- answers that must not pass -----------------------------------------------------------------------------

def test_numbers_of_the_wrong_kind_fail_with_a_reason(reference_ns, ctx):
    floats = dict(reference_ns, layer_norm_ops=lambda d: (3.0 * d + 3, 4.0 * d - 1))
    v = judge_namespace(floats, ctx, ["test_ex4_counts"])["test_ex4_counts"]
    assert not v.passed and "must return integers, got float" in v.message
    bools = dict(reference_ns, counted_speedup=lambda d: True, speedup_512=True)
    v = judge_namespace(bools, ctx, ["test_ex4_speedup"])["test_ex4_speedup"]
    assert not v.passed and "must be a real number, got bool" in v.message
    text = dict(reference_ns, max_abs_diff="1e-10")
    v = judge_namespace(text, ctx, ["test_ex2_check"])["test_ex2_check"]
    assert not v.passed and "must be a real number, got str" in v.message


def test_objects_that_equal_anything_fail(reference_ns, ctx):
    class Always(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    class AlwaysFloat(float):
        def __eq__(self, other):
            return True

        def __lt__(self, other):
            return True

        def __gt__(self, other):
            return True

        def __sub__(self, other):
            return 0.0

        __hash__ = float.__hash__

    ns = dict(reference_ns, layer_norm_ops=lambda d: (Always(0), Always(0)),
              counted_speedup=lambda d: AlwaysFloat(1.75), speedup_512=AlwaysFloat(1.75))
    verdicts = judge_namespace(ns, ctx, ["test_ex4_small", "test_ex4_counts", "test_ex4_speedup"])
    assert failing(verdicts) == {"test_ex4_small", "test_ex4_counts", "test_ex4_speedup"}


def test_hidden_cases_say_what_failed_but_show_no_value_input_or_seed(reference_ns, ctx):
    honest = reference_ns["layer_norm_vector"]

    def only_for_length_4(x, eps=1e-5):  # right where the notebook's own cases are, wrong elsewhere
        return honest(x, eps) if len(x) == 4 else np.zeros(len(x))

    v = judge_namespace(dict(reference_ns, layer_norm_vector=only_for_length_4), ctx,
                        ["test_ex1_function"])["test_ex1_function"]
    m = re.fullmatch(r"1\(a\): wrong result for a hidden vector of length (\d+) with eps=(\S+): off by more than "
                     r"the allowed 1e-07 of its size \(by more than 10 % of it\)", v.message)
    assert m, v.message
    plan = hidden_checks.plans(ctx, ["test_ex1_function"])["test_ex1_function"]
    inputs = {f"{x:.3f}"[:5] for c in plan.cases for x in c.request["args"][0]["array"]}
    assert not any(text in v.message for text in inputs if len(text) >= 4)
    assert str(ctx.seed) not in v.message


LEAKY = {"ex1_function": """
import numpy as np

def _leak(*args):   # an exception class named after the inputs it received, its message full of them
    text = "_".join(f"{float(v):.4f}" for a in args for v in np.ravel(a)).replace(".", "p").replace("-", "m")
    return type("Inputs_" + text, (ValueError,), {})("inputs " + repr([np.ravel(a).tolist() for a in args]))

def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    if x.tolist() in ([1.0, 2.0, 3.0, 4.0], [5.0] * 4):     # the notebook's own cases: right
        return (x - x.mean()) / np.sqrt(x.var() + eps)
    raise _leak(x, eps)
""", "ex2_backward": """
import numpy as np

def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):   # returns an object whose class and shape carry the inputs
    x = np.asarray(x, dtype=np.float64)
    name = "Leak_" + "_".join(f"{v:.4f}" for v in x.ravel()).replace(".", "p").replace("-", "m")
    return np.zeros([int(abs(v) * 1000) + 1 for v in x.ravel()[:3]]) if x.size > 6 else type(name, (), {})()
""", "ex2_check": """
import numpy as np

def gradient_gap(dy, x, gamma, eps):   # a number that encodes an input
    return float(np.ravel(x)[0]) * 1e-3
"""}


def test_hidden_cases_quote_nothing_the_students_code_produced(ctx):
    # A student who names exception classes and return types after their inputs, or returns arrays whose
    # shape or value encodes them, reads none of them in the verdicts; the verdicts still say which case
    # failed and why, in the grader's words.
    ids = ["test_ex1_function", "test_ex2_hidden", "test_ex2_check"]
    plans = hidden_checks.plans(ctx, ids)
    ns, honest = namespace(LEAKY), namespace()
    public = [np.ravel(arg["array"]).tolist() for plan in plans.values() for case in plan.cases if not case.hidden
              for arg in case.request.get("args", []) if isinstance(arg, dict) and "array" in arg]

    def right_where_visible(name, position):   # honest on the notebook's own inputs, leaky elsewhere
        leaky, right = ns[name], honest[name]

        def answer(*args, **kwargs):
            chosen = right if np.ravel(args[position]).tolist() in public else leaky
            return chosen(*args, **kwargs)
        return answer

    ns["layer_norm_vector"] = right_where_visible("layer_norm_vector", 0)
    ns["rmsnorm_backward"] = right_where_visible("rmsnorm_backward", 1)
    ns["max_abs_diff"] = honest["max_abs_diff"]   # the cell's stored number, which LEAKY's cell no longer sets
    verdicts = judge_namespace(ns, ctx, ids)
    inputs = set()
    for plan in plans.values():
        for case in plan.cases:
            for arg in case.request.get("args", []):
                for v in (arg.get("array", []) if isinstance(arg, dict) else []):
                    inputs |= {f"{v:.4f}".replace(".", "p").replace("-", "m"), f"{v:.4f}", f"{v:.2e}",
                               f"{abs(v) * 1000:.0f}", f"{v * 1e-3:.1e}"}
    for gid in ids:
        message = verdicts[gid].message
        assert not verdicts[gid].passed, gid
        assert "Inputs_" not in message and "Leak_" not in message and "inputs [" not in message, message
        assert not [t for t in inputs if len(t) >= 3 and t in message], (gid, message)
    assert "raised an exception on this hidden case" in verdicts["test_ex1_function"].message
    assert "hidden" in verdicts["test_ex2_hidden"].message
    assert "gradient_gap gives a gap not between 0 and 1e-6 on hidden inputs" in verdicts["test_ex2_check"].message


def test_hard_coded_values_fail_on_hidden_inputs(reference_ns, ctx):
    ns = dict(reference_ns, gradient_gap=lambda *a: 1e-10, max_abs_diff=1e-10, counted_speedup=lambda d: 3586 / 2050)
    verdicts = judge_namespace(ns, ctx, ["test_ex2_check", "test_ex4_speedup"])
    assert "does not change when rmsnorm_backward is wrong" in verdicts["test_ex2_check"].message
    assert "counted_speedup(8) is not the ratio" in verdicts["test_ex4_speedup"].message


def test_delegation_scores_zero_and_normlab_core_is_restored(reference_ns, ctx):
    before = normlab_core.rms_norm_backward.__code__
    ns = dict(reference_ns, rmsnorm_backward=lambda dy, x, gamma=None, eps=1e-5:
              normlab_core.rms_norm_backward(dy, x, gamma, eps=eps))
    v = judge_namespace(ns, ctx, ["test_ex2_hidden"])["test_ex2_hidden"]
    assert not v.passed and "normlab_core.backward.rms_norm_backward" in v.message and "scores 0" in v.message
    assert normlab_core.rms_norm_backward.__code__ is before
    x = np.array([[1.0, 2.0, 4.0]])
    assert np.all(np.isfinite(normlab_core.rms_norm_backward(np.ones_like(x), x)))
    assert "__normlab_tripped__" not in vars(normlab_core.backward)


# --- exercise 7: the schedule ----------------------------------------------------------------------------------

def _schedule(length=round, denominator=lambda steps, n: max(1, steps - 1 - n), visible_only=False):
    """A learning_rate written from the exercise's rules, with one of them changed."""
    import math

    def learning_rate(step, steps, peak, warmup):
        n = length(warmup * steps)
        if step < n:
            rate = peak * (step + 1) / n
        else:
            rate = peak * (0.1 + 0.45 * (1 + math.cos(math.pi * (step - n) / denominator(steps, n))))
        return rate if not visible_only or steps in (500, 10) else 1.01 * rate

    return learning_rate


SCHEDULE_MISTAKES = {   # name: (answer, the check cells it fails)
    "right only on the notebook's two runs": (_schedule(visible_only=True), {"test_ex7_hidden"}),
    "decay over steps - n steps (one too many)": (_schedule(denominator=lambda steps, n: max(1, steps - n)),
                                                  {"test_ex7_visible", "test_ex7_hidden"}),
    "no max(1, ...) (0 / 0 when one step is left)": (_schedule(denominator=lambda steps, n: steps - 1 - n),
                                                     {"test_ex7_hidden"}),
    "warm-up length rounded down": (_schedule(length=int), {"test_ex7_hidden"}),
}


@pytest.mark.parametrize("name", sorted(SCHEDULE_MISTAKES))
def test_schedule_mistakes_fail_the_cells_where_they_show(reference_ns, ctx, name):
    answer, cells = SCHEDULE_MISTAKES[name]
    assert answer(75, 500, 1e-2, 0.15) == pytest.approx(reference_ns["learning_rate"](75, 500, 1e-2, 0.15))
    verdicts = judge_namespace(dict(reference_ns, learning_rate=answer), ctx, ["test_ex7_visible", "test_ex7_hidden"])
    assert failing(verdicts) == cells, {g: v.message for g, v in verdicts.items()}
    for gid in cells:
        assert verdicts[gid].message.startswith("7: "), verdicts[gid].message


def test_schedule_hidden_runs_have_no_rounding_ties_for_any_seed(ctx):
    # 7 says "Python's round"; with no tie, rounding half up (the float32 answer) gets full marks for every seed
    ns = namespace({"ex7_schedule": FLOAT64["ex7_schedule"]})
    for seed in SEEDS[:100]:
        plans = hidden_checks.plans(hidden_checks.Context(seed=seed), ["test_ex7_hidden"])
        for case in plans["test_ex7_hidden"].cases:
            _, steps, _, warmup = case.request["args"]
            assert abs(warmup * steps % 1 - 0.5) > 1e-6, (seed, steps, warmup)
        verdicts = judge_namespace(ns, hidden_checks.Context(seed=seed, data=ctx.data),
                                   ["test_ex7_visible", "test_ex7_hidden"], via_json=False)
        assert failing(verdicts) == set(), {g: v.message for g, v in verdicts.items()}


# --- exercise 8: the residual stack in both wirings ------------------------------------------------------------

EX8 = ["test_ex8_grads", "test_ex8_observed"]


def _stack_norms(direct: bool = True, rows: bool = False, only_fixed: bool = False):
    """A grad_norms written from scratch (its own RMSNorm and way back), with one thing changed: the post-norm
    identity path dropped (direct=False), the norm taken over rows instead of features (rows=True), or right
    on the notebook's 12-layer stack only (only_fixed=True)."""
    def rms(v):
        r = np.sqrt(np.mean(v * v, axis=0 if rows else -1, keepdims=True) + 1e-5)
        return v / r, r

    def back(g, v):
        y, r = rms(v)
        return (g - y * np.mean(g * y, axis=0 if rows else -1, keepdims=True)) / r

    def grad_norms(x, weights, dy, placement):
        h, kept = np.asarray(x, dtype=np.float64), []
        for w in weights:
            a = rms(h)[0] if placement == "pre" else h + h @ w
            kept.append((h, a))
            h = h + a @ w if placement == "pre" else rms(a)[0]
        g, out = np.asarray(dy, dtype=np.float64), []
        for w, (h_in, a) in zip(reversed(weights), reversed(kept), strict=True):
            if placement == "pre":
                out.append(np.linalg.norm(a.T @ g))
                g = g + back(g @ w.T, h_in)
            else:
                g_v = back(g, a)
                out.append(np.linalg.norm(h_in.T @ g_v))
                g = g_v + g_v @ w.T if direct else g_v @ w.T
        out = np.array(out[::-1])
        return out if not only_fixed or len(weights) == 12 else 1.01 * out

    return grad_norms


STACK_ANSWERS = {   # name: (grad_norms, the check cells of exercise 8 it fails)
    "right, written without the library": (_stack_norms(), set()),
    "partly right: right on the notebook's stack only": (_stack_norms(only_fixed=True), {"test_ex8_grads"}),
    "wrong: post-norm's way back drops the identity path": (_stack_norms(direct=False), {"test_ex8_grads"}),
    "wrong: the norm taken over the rows": (_stack_norms(rows=True), {"test_ex8_grads"}),
}


@pytest.mark.parametrize("name", sorted(STACK_ANSWERS))
def test_stack_answers_get_what_they_deserve(reference_ns, ctx, name):
    fn, cells = STACK_ANSWERS[name]
    ns = dict(reference_ns, grad_norms=fn)
    ns.update(post_norms=fn(ns["x_stack"], ns["w_stack"], ns["dy_stack"], "post"),
              pre_norms=fn(ns["x_stack"], ns["w_stack"], ns["dy_stack"], "pre"))
    verdicts = judge_namespace(ns, ctx, EX8)
    assert failing(verdicts) == cells, {g: v.message for g, v in verdicts.items()}
    for gid in cells:
        assert verdicts[gid].message.startswith("8(a): "), verdicts[gid].message
    if not cells:
        assert verdicts["test_ex8_grads"].message == "8(a): 2 visible and 8 hidden cases passed"


def test_stack_reference_agrees_with_finite_differences():
    # the grader's reference against a central difference of the loss, entry by entry, in both wirings
    from normlab_grading.references import stack_grad_norms

    rng = np.random.default_rng(88)
    x, dy = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    ws = [rng.normal(scale=0.5, size=(5, 5)) for _ in range(4)]

    def loss(ws, placement):
        h = x
        for w in ws:
            if placement == "pre":
                n = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + 1e-5)
                h = h + n @ w
            else:
                v = h + h @ w
                h = v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + 1e-5)
        return float(np.sum(dy * h))

    for placement in ("pre", "post"):
        numeric = []
        for k in range(len(ws)):
            grad = np.zeros((5, 5))
            for i, j in np.ndindex(5, 5):
                up, down = [w.copy() for w in ws], [w.copy() for w in ws]
                up[k][i, j] += 1e-6
                down[k][i, j] -= 1e-6
                grad[i, j] = (loss(up, placement) - loss(down, placement)) / 2e-6
            numeric.append(np.linalg.norm(grad))
        np.testing.assert_allclose(stack_grad_norms(x, ws, dy, placement), numeric, rtol=1e-6)


@pytest.mark.parametrize("observed, passes", [(0, True), (3, False), (1, False), (0.0, False)])
def test_stack_observation_is_judged_against_the_stored_grid(reference_ns, ctx, observed, passes):
    # post-norm, depth 12, lr 3e-3, no warm-up: every stored seed stuck (read here through normlab_core's own
    # lookup, the grader reads the file by itself)
    from normlab_core.figures import training_runs

    assert training_runs.stored().outcomes(
        placement="post", depth=12, lr=3e-3, warmup=0.0, final_norm=False)["solved"] == 0
    verdicts = judge_namespace(dict(reference_ns, observed_solved=observed), ctx, EX8)
    assert verdicts["test_ex8_observed"].passed is passes, verdicts["test_ex8_observed"].message
    assert verdicts["test_ex8_grads"].passed


def test_an_import_inside_the_answer_still_trips_the_wire(reference_ns, ctx):
    import sys

    import normlab_core
    import normlab_core.training as training

    before = training.lr_at.__code__
    modules = dict(sys.modules)
    saved = sys.modules.pop("normlab_core.training")   # as in a fresh kernel that never imported it
    try:
        ns = namespace({"ex7_schedule": DELEGATING["ex7_schedule"]})
        verdicts = judge_namespace(ns, ctx, ["test_ex7_visible", "test_ex7_hidden"])
    finally:
        # the answer's import made a second module object; put back the first, both in sys.modules and as the
        # package's attribute, or later tests see two different Run classes
        fresh = sys.modules.get("normlab_core.training")
        sys.modules.clear()
        sys.modules.update(modules)
        normlab_core.training = saved
    assert sys.modules["normlab_core.training"] is saved and normlab_core.training is saved
    for v in verdicts.values():
        assert not v.passed and "normlab_core.training.lr_at" in v.message and "scores 0" in v.message, v.message
    assert training.lr_at.__code__ is before
    if fresh is not None:
        assert fresh.lr_at(0, 10, 1.0, 0.0) == 1.0 and "__normlab_tripped__" not in vars(fresh)


def test_answers_that_read_their_callers_frames_find_nothing(ctx):
    verdicts = judge_namespace(namespace(FRAME), ctx)
    assert failing(verdicts) == lost_cells(("4a",))


def test_a_patched_numpy_in_the_namespace_changes_no_verdict(ctx, monkeypatch):
    # Judging happens on plain data in this process: numpy's comparison functions are never asked.
    ns = namespace({WRONG["1a"][0]: WRONG["1a"][1]})
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "isclose", lambda a, b, **k: np.ones(np.shape(a), bool))
    assert "test_ex1_function" in failing(judge_namespace(ns, ctx, ["test_ex1_function"]))


def test_a_slow_answer_is_stopped_with_the_cell_the_limit_and_the_calls(reference_ns, ctx):
    backward = reference_ns["rmsnorm_backward"]

    def slow(*args, **kwargs):
        time.sleep(0.05)
        return backward(*args, **kwargs)

    v = judge_namespace(dict(reference_ns, rmsnorm_backward=slow), ctx, ["test_ex2_hidden"],
                        budget=0.5)["test_ex2_hidden"]
    assert not v.passed and v.timed_out
    m = re.search(r"time limit reached in the check cell test_ex2_hidden\. Its checks call rmsnorm_backward 27 "
                  r"times, with a limit of 0\.5 s for all of them together; (\d+) of the 27 calls finished", v.message)
    assert m and 1 <= int(m.group(1)) <= 10, v.message


# --- what comes back from the sandbox cannot be trusted ----------------------------------------------------------

def test_missing_malformed_or_forged_records_never_pass(ctx):
    plan = hidden_checks.plans(ctx, ["test_ex1_function"])["test_ex1_function"]
    n = len(plan.cases)
    bad_records = [
        None, {}, {"results": "all passed"}, {"results": [None] * n}, {"results": [{}] * n},
        {"results": [{"value": "passed"}] * n}, {"results": [{"value": {"t": "ndarray", "shape": [4]}}] * n},
        {"results": [{"value": {"t": "ndarray", "dtype": "float64", "shape": [4], "data": ["a"] * 4}}] * n},
        {"results": [{"value": {"t": "list", "items": [{"t": "float", "v": 0.0}]}}] * n},
        {"results": []}, {"results": [{"error": {"type": "X"}}] * n, "tripped": []},
        {"results": [{"value": {"t": "float", "v": "NaN"}}] * n},
    ]
    for record in bad_records:
        try:
            verdict = hidden_checks.judge(plan, record, 30.0)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"the judge crashed on {record!r}: {exc!r}")
        assert not verdict.passed, record


def test_every_check_cell_of_the_notebook_has_an_outside_judge():
    source = nbformat.read(SOURCE, as_version=4)
    checks = {c.metadata["nbgrader"]["grade_id"] for c in source.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    assert checks == set(hidden_checks.CHECKS) == set(GRADE_IDS)
    hidden = "\n".join(c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")
                       and c.cell_type == "code")
    assert "HIDDEN TESTS" not in hidden and "hidden_checks" not in hidden and "_hidden" not in hidden


def test_each_plan_names_the_part_its_check_cell_belongs_to_in_the_notebook(ctx):
    """PART_CELLS is read off the notebook (grading_support.part_cells); each plan's own label ("8(a)", "3") must
    be that part, so that its messages name the part the student sees."""
    plans = hidden_checks.plans(ctx, GRADE_IDS)
    wrong = {gid: plans[gid].part for part, ids in PART_CELLS.items() for gid in ids
             if plans[gid].part.replace("(", "").replace(")", "") != part}
    assert not wrong, f"plans in assignments/normlab_grading/plans.py label these check cells wrongly: {wrong}"


def test_describe_reads_values_through_the_built_in_types():
    class Sneaky(float):
        def __float__(self):
            return 1.0

        def __repr__(self):
            return "1.0"

    class Count(int):
        def __int__(self):
            return 99

        def __index__(self):
            return 99

    budget = [10**6]
    assert wire.describe(Sneaky(2.5), np, budget) == {"t": "float", "v": 2.5,
                                                      "cls": f"{Sneaky.__module__}.{Sneaky.__qualname__}"}
    assert wire.describe(Count(7), np, budget)["v"] == 7
    assert wire.describe(np.float32(0.5), np, budget) == {"t": "npscalar", "dtype": "float32", "v": 0.5,
                                                            "cls": "numpy.float32"}
    assert wire.describe(np.array(3.0), np, budget)["shape"] == []
    assert wire.describe(np.zeros(10**6 + 5), np, [10**6])["t"] == "toolarge"
    assert wire.describe(object(), np, budget)["t"] == "object"
    nested = wire.describe((np.arange(3.0), [1, 2.0]), np, budget)
    assert [i["t"] for i in nested["items"]] == ["ndarray", "list"]


def test_a_function_that_changes_its_callers_arrays_fails_every_cell_that_calls_it(reference_ns, ctx):
    honest = reference_ns["rmsnorm_backward"]

    def clobbering(dy, x, gamma=None, eps=1e-5):   # the right gradient, then the caller's dy and x overwritten
        grad = honest(dy, x, gamma, eps)
        dy[...] = 0.0
        x *= 2.0
        return grad

    verdicts = judge_namespace(dict(reference_ns, rmsnorm_backward=clobbering), ctx,
                               ["test_ex2_backward", "test_ex2_hidden"])
    for gid, v in verdicts.items():
        assert not v.passed and "rmsnorm_backward changed its argument 1 in place" in v.message, (gid, v.message)
    same = judge_namespace(reference_ns, ctx, ["test_ex2_backward", "test_ex2_hidden"])
    assert all(v.passed for v in same.values())


BOUND = """
import numpy as np

def gradient_gap(dy, x, gamma, eps, backward=rmsnorm_backward, numeric=central_difference):
    # the two functions bound as default arguments when the cell ran (a correct answer)
    analytic = backward(dy, x, gamma, eps)

    def loss_of(v):
        return rms_norm(v, gamma, eps=eps)

    return float(np.max(np.abs(analytic - numeric(loss_of, x, dy))))
"""

FAKER = """
import numpy as np
_mine = rmsnorm_backward
_fd = central_difference

def gradient_gap(dy, x, gamma, eps):
    # no computation: a tiny gap, unless the grader's broken copy shows itself by name or identity
    suspicious = (rmsnorm_backward is not _mine or central_difference is not _fd
                  or rmsnorm_backward.__name__ != "rmsnorm_backward"
                  or central_difference.__name__ != "central_difference"
                  or rmsnorm_backward.__code__.co_name != "rmsnorm_backward")
    return 1.0 if suspicious else 1e-10
"""


def test_2c_with_the_functions_bound_as_default_arguments_gets_its_points(ctx):
    ns = namespace()
    exec(compile(BOUND, "<bound>", "exec"), ns)  # noqa: S102 - the answer, run in the notebook's namespace
    v = judge_namespace(ns, ctx, ["test_ex2_check"])["test_ex2_check"]
    assert v.passed, v.message


def test_2c_cannot_tell_the_broken_copy_by_its_name_or_identity(ctx):
    ns = namespace()
    exec(compile(FAKER, "<faker>", "exec"), ns)  # noqa: S102
    v = judge_namespace(ns, ctx, ["test_ex2_check"])["test_ex2_check"]
    assert not v.passed and "does not change when rmsnorm_backward is wrong" in v.message, v.message
    assert ns["rmsnorm_backward"].__code__.co_name == "rmsnorm_backward"   # restored after the calls
    assert judge_namespace(namespace(), ctx, ["test_ex2_check"])["test_ex2_check"].passed


DETECTOR = """
import numpy as np
_codes = (rmsnorm_backward.__code__, central_difference.__code__)

def gradient_gap(dy, x, gamma, eps):
    # no comparison: a tiny gap, unless the grader's broken copy shows itself by a changed code object
    if (rmsnorm_backward.__code__, central_difference.__code__) != _codes:
        return 1.0
    return 1e-10
"""

WRONG_BACKWARD_HONEST_GAP = """
import numpy as np

def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):   # wrong: drops the term through the RMS
    x, dy = np.asarray(x, dtype=np.float64), np.asarray(dy, dtype=np.float64)
    g = np.ones(x.shape[-1]) if gamma is None else np.asarray(gamma, dtype=np.float64)
    return g * dy / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
"""


def test_2c_is_judged_against_what_the_students_own_functions_return(ctx):
    # A gradient_gap that only tells the grader's spoiled calls apart (here by their code objects) and returns a
    # large number for them earns nothing: with a function made a few times too large the gap must be what the
    # student's own functions then give. Fails on the older judge, which asked for any gap above 1e-3.
    ns = namespace()
    exec(compile(DETECTOR, "<detector>", "exec"), ns)  # noqa: S102
    v = judge_namespace(ns, ctx, ["test_ex2_check"])["test_ex2_check"]
    assert not v.passed and "does not change when rmsnorm_backward is wrong as it should" in v.message, v.message
    # An honest gradient_gap over a wrong rmsnorm_backward measures that error: 2(c) judges the comparison
    # (2(a) already loses the point for the gradient), as the student's functions give it.
    ns = namespace()
    exec(compile(WRONG_BACKWARD_HONEST_GAP, "<wrong>", "exec"), ns)  # noqa: S102
    ns["max_abs_diff"] = namespace()["max_abs_diff"]
    verdicts = judge_namespace(ns, ctx, ["test_ex2_check", "test_ex2_hidden"])
    assert verdicts["test_ex2_check"].passed, verdicts["test_ex2_check"].message
    assert not verdicts["test_ex2_hidden"].passed

