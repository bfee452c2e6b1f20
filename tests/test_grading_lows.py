"""The grader's small holes, each as a hostile notebook of our own.

The delegation tripwire (runner.Tripwires) lives in the student's own process, so a notebook can switch it off.
That must cost an answer of the student's own nothing, and a delegating answer must still score 0 (the sandbox's
copy of normlab_core has nothing to delegate to). The notebooks below are the instructor's answers with one of
the ways a student could switch the wire off added to the answer cell of 1(a), run once as they are and once
with the delegating answers of grading_support.DELEGATING, for real in the sandbox.

2(c) asks gradient_gap to compare the student's two gradients. The grader also calls it with one of the two
functions made a few times too large; that factor is drawn with the hidden inputs, so an answer that notices the
spoiled call and answers from a constant it learnt earns nothing.

The other small holes have their tests beside their code: test_grading_bounds (feedback templates missing,
terminal escapes in a log, metadata 900 levels deep, a timestamp that is not a date, files beside the
notebook), test_grading_sandbox (fifty spinning threads), test_grading_code (a table of hidden inputs from
earlier feedback) and test_grading_judge (a gradient_gap that only spots the altered calls).

If one fails: the code is in assignments/normlab_grading/runner.py (Tripwires, _core_functions) and plans.py
(plan_ex2_check); run
    PATH=$PWD/.venv/bin:$PATH .venv/bin/pytest -p no:cacheprovider -q tests/test_grading_lows.py
"""

from __future__ import annotations

import nbformat
import pytest
from grading_support import (
    DELEGATING,
    EXPECTED_LOST,
    GRADE_IDS,
    SOURCE,
    context,
    grade_id,
    judge_namespace,
    namespace,
    require_sandbox,
    sandbox,
    solutions,
)
from normlab_grading import hidden_checks

LIMITS = sandbox.Limits(cell_seconds=60, check_seconds=60, startup_seconds=60, memory_mb=2048)
NOT_RUN = ("ex4_timing", "ex6_experiment")   # optional cells that only time or print

# The runner's globals, reached from a cell through the class of the stream it prints to.
_RUNNER = """
import sys as _sys

_runner = type(_sys.stdout).write.__globals__
"""

# Ways to switch the wire off, each added after an answer cell's code. Those in STILL_ON leave it on.
SWITCH_OFF = {
    # the runner's class made to do nothing
    "the class": _RUNNER + """
_runner["Tripwires"].__enter__ = lambda self: self
_runner["Tripwires"].__exit__ = lambda self, *exc: False
""",
    # the tripwire's code never made
    "the code": _RUNNER + """
_runner["_tripwire_code"] = lambda name, freevars: None
""",
    # the search for the library's functions made to fail
    "the search": _RUNNER + """
def _nothing(modules):
    raise RuntimeError("switched off")


_runner["_core_functions"] = _nothing
""",
    # the record of calls made to forget them
    "the record": _RUNNER + """
class _Forget(list):
    def append(self, item):
        pass


_wire_init = _runner["Tripwires"].__init__
_runner["Tripwires"].__init__ = lambda self, modules, tripped: _wire_init(self, modules, _Forget())
""",
    # the library's functions put back by every call of the answer
    "the code put back": """
import sys as _sys
import types as _types

import normlab_core.gradcheck
import normlab_core.norms

_CORE = [_m for _m in list(_sys.modules.values()) if getattr(_m, "__name__", "").startswith("normlab_core")]
_OWN = {_fn: _fn.__code__ for _m in _CORE for _fn in list(vars(_m).values()) if isinstance(_fn, _types.FunctionType)}


def _untripped(fn):
    def call(*args, **kwargs):
        for _f, _code in _OWN.items():
            _f.__code__ = _code
        return fn(*args, **kwargs)
    return call


layer_norm_vector = _untripped(layer_norm_vector)
""",
    # the library's modules under another name too
    "a module under another name": """
import sys as _sys

import normlab_core.gradcheck
import normlab_core.norms

_sys.modules["normlab_core.norms.again"] = normlab_core.norms
_sys.modules["normlab_core.gradcheck.again"] = normlab_core.gradcheck
""",
    # the library's functions under a second name in their own module
    "a function under another name": """
import normlab_core.norms

normlab_core.norms.my_layer_norm = normlab_core.norms.layer_norm
normlab_core.norms.my_rms_norm = normlab_core.norms.rms_norm
""",
    # the names the notebook uses rebound to copies the wire does not know
    "copies of the functions": """
import types as _types


def _copy(fn):
    new = _types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


layer_norm, rms_norm = _copy(layer_norm), _copy(rms_norm)
""",
    # what the wire tells functions by, rebound
    "types.FunctionType": """
import types as _types

_types.FunctionType = object
""",
}
# (a copy of layer_norm still calls the module's own helpers, which are wired)
STILL_ON = {"a module under another name", "a function under another name", "copies of the functions",
            "types.FunctionType"}


def _graded(replace: dict) -> tuple[dict, list]:
    """({grade id: message} of the check cells that fail, the errors of the answer cell of 1(a)), the notebook
    run in the sandbox with these answers."""
    nb = nbformat.read(SOURCE, as_version=4)
    answers = {**solutions(nb), **replace}
    cells = [{"index": i, "source": answers.get(grade_id(c), c.source)} for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and grade_id(c) not in NOT_RUN]
    plans = hidden_checks.plans(context(), GRADE_IDS)
    run = sandbox.run_submission(cells, lambda records: hidden_checks.request(plans, 60.0), LIMITS)
    verdicts = {gid: hidden_checks.judge(plan, run.groups.get(gid), 60.0) for gid, plan in plans.items()}
    first = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "ex1_function")
    errors = [f"{o['ename']}: {o['evalue']}" for o in run.cells[first]["outputs"] if o["output_type"] == "error"]
    return {gid: f"{run.status}: {v.message}" for gid, v in verdicts.items() if not v.passed}, errors


@pytest.fixture()
def bubblewrap():
    require_sandbox()


def test_switching_the_tripwire_off_costs_own_answers_nothing_and_a_delegate_still_scores_0(bubblewrap):
    # On the old runner a function found twice (an alias, a module under a second name) was wired twice, and
    # leaving put the tripwire back as its code: every later check that used rms_norm or layer_norm (2(c), 3,
    # 8(a)) failed for an honest notebook; a rebound types.FunctionType stopped every check.
    ref = solutions(nbformat.read(SOURCE, as_version=4))
    lost, kept, broken = {}, {}, {}
    for way, code in SWITCH_OFF.items():
        honest, errors = _graded({"ex1_function": ref["ex1_function"] + code})
        if honest:
            lost[way] = honest
        delegating, errors_too = _graded({**DELEGATING, "ex1_function": DELEGATING["ex1_function"] + code})
        if set(delegating) != EXPECTED_LOST["delegating"]:
            kept[way] = sorted(EXPECTED_LOST["delegating"] - set(delegating))
        # the way did switch the wire off: 1(a) fails on what the graded layer_norm does, not on the wire
        tripped = "calls normlab_core's own implementation" in delegating.get("test_ex1_function", "")
        if errors or errors_too or tripped != (way in STILL_ON):
            broken[way] = (errors + errors_too, delegating.get("test_ex1_function"))
    assert lost == {}, f"answers of the student's own lost points once the tripwire was switched off: {lost}"
    assert kept == {}, f"delegating answers scored once the tripwire was switched off: {kept}"
    assert broken == {}, f"ways that did not run, or did not do what they say: {broken}"


# A gradient_gap that compares nothing: a made-up tiny gap, and for a spoiled call (told by its changed code) what
# the grader's factor, taken as the constant it once was, would give.
CONSTANT_SPOIL = """
_codes = {"rmsnorm_backward": rmsnorm_backward.__code__, "central_difference": central_difference.__code__}


def gradient_gap(dy, x, gamma, eps):
    if rmsnorm_backward.__code__ is not _codes["rmsnorm_backward"]:
        spoiled = np.asarray(rmsnorm_backward(dy, x, gamma, eps))
        return float(np.max(np.abs(spoiled - spoiled / 1.5)))
    if central_difference.__code__ is not _codes["central_difference"]:
        return float(0.5 * np.max(np.abs(rmsnorm_backward(dy, x, gamma, eps))))
    return 2e-10
"""


def test_2c_told_from_the_spoiled_calls_by_a_known_factor_earns_nothing():
    # Fails while the factor was the constant 1.5 for every course and hand-in.
    ns = namespace()
    exec(compile(CONSTANT_SPOIL, "<constant spoil>", "exec"), ns)  # noqa: S102
    ids = ["test_ex2_check"]
    for seed in (hidden_checks.COURSE_SEED, 1, 2, 3):
        ctx = context(seed)
        factors = [f for c in hidden_checks.plans(ctx, ids)["test_ex2_check"].cases
                   for f in c.request.get("replace", {}).values()]
        assert len(factors) == 2 and all(1.75 <= f <= 3.0 for f in factors), factors
        verdict = judge_namespace(ns, ctx, ids)["test_ex2_check"]
        assert not verdict.passed and "does not change when" in verdict.message, (seed, verdict.message)
        assert judge_namespace(namespace(), ctx, ids)["test_ex2_check"].passed   # the instructor's answer
