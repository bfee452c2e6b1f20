"""Delegating to normlab_core cannot reach a reference implementation: real sandbox runs of the instructor's
notebook with answers that hand their work to the library in every way a student could hide it.

The sandbox gets the graded copy of normlab_core (normlab_grading.graded_core): `layer_norm` and `rms_norm`
for eps=1e-5, and stubs for the rest. Each delegating part must score 0 with a reason naming normlab_core; the
parts built on it may fail too; every other part keeps full marks, and the honest notebook scores them all.
"""

from __future__ import annotations

import nbformat
import pytest
from grading_support import GRADE_IDS, PART_CELLS, SOURCE, context, grade_id, require_sandbox, sandbox
from normlab_grading import graded_core, hidden_checks

LIMITS = sandbox.Limits(cell_seconds=60, check_seconds=60, startup_seconds=60, memory_mb=2048)

# Part -> the answer cell's new source; each reaches for the library in another way.
HIDDEN_IMPORTS = {
    # an alias of __import__, and a submodule imported by its dotted name
    "1a": ("ex1_function", """
_load = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__
_norms = _load("normlab_core.norms", fromlist=["layer_norm"])


def layer_norm_vector(x, eps=1e-5):
    return _norms.layer_norm(np.asarray(x, dtype=np.float64), eps=eps)
"""),
    # the module imported directly
    "2a": ("ex2_backward", """
import normlab_core.backward as _B


def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    return _B.rms_norm_backward(dy, x, gamma, eps=eps)
"""),
    # importlib with the name split into pieces
    "2b": ("ex2_central_difference", """
import importlib as _il


def central_difference(f, x, dy, h=1e-6):
    return getattr(_il.import_module("normlab_" + "core." + "grad" + "check"), "numerical_" + "gradient")(f, x, dy, h=h)
"""),
    # an attribute built from pieces
    "4a": ("ex4_counts", """
def _counter():
    return getattr(__import__("normlab_core"), "op" + "count")


def layer_norm_ops(D):
    ops = _counter().count_ops("layer_norm", D)["ops"]
    return ops["mul"] + ops["div"], ops["add/sub"] - 2


def rms_norm_ops(D):
    ops = _counter().count_ops("rms_norm", D)["ops"]
    return ops["mul"] + ops["div"], ops["add/sub"] - 1
"""),
    # the library's source read from disk and run
    "7": ("ex7_schedule", """
import os as _os
import normlab_core as _core

_ns = {"__name__": "copied_training"}
exec(open(_os.path.join(_os.path.dirname(_core.__file__), "training.py")).read(), _ns)


def learning_rate(step, steps, peak, warmup):
    return _ns["lr_at"](step, steps, peak, warmup)
"""),
}

OTHER_ROUTES = {
    # 2(a) through the residual stacks' tangent, found with importlib
    "2a": ("ex2_backward", """
import importlib


def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    residual = importlib.import_module("normlab_core.resid" + "ual")
    g = np.asarray(dy, dtype=np.float64) * (1.0 if gamma is None else np.asarray(gamma))
    return residual.stack_norm_jvp(np.asarray(x, dtype=np.float64), g, eps, "rms_norm")[1]   # J is symmetric
"""),
    # 1(a) as RMSNorm of the centred vector (the same formula), through the names the setup cell imported
    "1a": ("ex1_function", """
def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    return rms_norm(x - x.mean(), None, eps=eps)
"""),
    # 2(b) from the library's gradcheck.py, read from disk and exec'd
    "2b": ("ex2_central_difference", """
import os
import normlab_core

_path = os.path.join(os.path.dirname(normlab_core.__file__), "gradcheck.py")
_scope = {"__name__": "normlab_core.gradcheck_copy"}
exec(compile(open(_path).read(), _path, "exec"), _scope)


def central_difference(f, x, dy, h=1e-6):
    return _scope["numerical_gradient"](f, x, dy, h=h)
"""),
}

DEPENDS = {"1a": ("1b",), "2a": ("2c", "8a"), "2b": ("2c",), "4a": ("4b",)}   # 1(b) keeps 1(a); 8(a) runs 2(a)


def _verdicts(replace: dict):
    nb = nbformat.read(SOURCE, as_version=4)
    for cell in nb.cells:
        if grade_id(cell) in replace:
            cell.source = replace[grade_id(cell)]
    cells = [{"index": i, "source": c.source} for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and grade_id(c) not in ("ex4_timing", "ex6_experiment")]
    plans = hidden_checks.plans(context(), GRADE_IDS)
    run = sandbox.run_submission(cells, lambda records: hidden_checks.request(plans, 60.0), LIMITS)
    assert run.status == "ok", run.reason
    return {gid: hidden_checks.judge(plan, run.groups.get(gid), 60.0) for gid, plan in plans.items()}, run


@pytest.fixture(scope="module", autouse=True)
def bubblewrap():
    require_sandbox()


def test_the_honest_notebook_scores_full_marks_in_the_sandbox():
    verdicts, run = _verdicts({})
    assert {gid: v.message for gid, v in verdicts.items() if not v.passed} == {}
    # the setup cell's names are there, and what the exercises use of them works
    assert not any(o.get("output_type") == "error" for i in (1,) for o in run.cells[i]["outputs"])


@pytest.mark.parametrize("answers", [HIDDEN_IMPORTS, OTHER_ROUTES], ids=["hidden-imports", "other-routes"])
def test_delegating_answers_cannot_reach_the_reference(answers):
    verdicts, run = _verdicts({cell: source for cell, source in answers.values()})
    nb = nbformat.read(SOURCE, as_version=4)
    index = {grade_id(c): i for i, c in enumerate(nb.cells)}
    delegated = {gid for part in answers for gid in PART_CELLS[part]}
    dependent = {gid for part in answers for dep in DEPENDS.get(part, ()) for gid in PART_CELLS[dep]}
    for part, (cell, _) in answers.items():
        said = " ".join(str(o.get("evalue", "")) for o in run.cells[index[cell]]["outputs"])
        for gid in PART_CELLS[part]:
            v = verdicts[gid]
            assert not v.passed, gid
            # a reason that names what happened: in the verdict, or (a file read from disk and run) in the
            # answer cell's own error, which the feedback shows above the verdict
            assert "normlab_core" in v.message or "copy of normlab_core" in said, (gid, v.message, said)
    for gid in set(GRADE_IDS) - delegated - dependent:
        assert verdicts[gid].passed, (gid, verdicts[gid].message)


def test_the_graded_copy_has_no_reference_code(tmp_path):
    core = sandbox.core_package()
    root = graded_core.build(tmp_path, core)
    text = "\n".join(p.read_text() for p in root.rglob("*.py"))
    for name in ("def rms_norm_backward", "def lr_at", "def count_ops", "def backward",
                 "def jvp", "def stack_norm_jvp"):
        assert name not in text
    # every module of the real library is there (as a stub), found by listing it
    real = set(graded_core.module_names(core))
    copied = set(graded_core.module_names(root)) - {"_absent"}
    assert {n for n in real if not n.startswith("_")} <= copied
