"""Simulated submissions of the section 23.10 exercises, and the helpers the grading tests share.

Each submission is the released notebook with some answer cells replaced. `reference` holds the instructor's
solutions; the `wrong_*` ones hold plausible mistakes, grouped so that mistakes in one notebook do not feed
into each other's parts (except where one part uses another, listed in DEPENDENT); the hostile ones (HOSTILE)
are written to break the grader, each aimed at one hole of issue 23; the odd ones (ODD) are correct answers
written in ways the old checks marked wrong.

`judge_namespace` runs the checks in this process, the way the sandbox runs them (runner.run_groups on the
student's namespace), so that the judging logic can be tested without nbgrader or bubblewrap.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import io
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "assignments"
SOURCE = COURSE / "source" / "chapter23" / "exercises.ipynb"
if str(COURSE) not in sys.path:
    sys.path.insert(0, str(COURSE))

from normlab_grading import hidden_checks, runner, sandbox, structure  # noqa: E402

_spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "scripts" / "make_exercises.py")
mx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mx)

SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n", re.M)
NOT_RUN = ("ex4_timing", "ex6_experiment")  # optional cells: the in-process namespace skips their timing


def require_sandbox() -> None:
    """Skip when this machine has no grading sandbox; fail instead under NORMLAB_REQUIRE_SANDBOX=1 (CI)."""
    import os

    import pytest

    try:
        sandbox.check_sandbox()
    except sandbox.SandboxUnavailable as exc:
        if os.environ.get("NORMLAB_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the grading sandbox is required here (NORMLAB_REQUIRE_SANDBOX=1): {exc}")
        pytest.skip(f"no grading sandbox on this machine: {exc}")


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def without_markers(text: str) -> str:
    """A solution cell as a student would hand it in: the instructor's code without the delimiters."""
    return SOLUTION_MARKERS.sub("", text)


def solutions(source) -> dict[str, str]:
    return {grade_id(c): without_markers(c.source) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def replaced(released, replace: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        if grade_id(cell) in replace:
            cell.source = replace[grade_id(cell)]
    return nb


def auto_cells(source) -> dict[str, float]:
    """{grade id: points} of the automatically graded check cells."""
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"]) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")}


def point_totals(source) -> tuple[float, float]:
    """(points of the automatically graded check cells, points of every graded cell) of the source notebook."""
    graded = [c.metadata["nbgrader"] for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")]
    return sum(auto_cells(source).values()), sum(float(m["points"]) for m in graded)


def part_cells(source) -> dict[str, list[str]]:
    """{part: its check cells' grade ids}, read off the source notebook: each code check cell belongs to the answer
    cell above it, and the answer cells of exercise N (test_exN_...) with checks are its parts "Na", "Nb", ... in
    order, or "N" when it has one. New exercises join by being written; tests compare the labels with the plans'."""
    answers, owner = {}, None
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            owner = meta["grade_id"]
        elif meta.get("grade"):
            number = re.match(r"test_ex(\d+)_", meta["grade_id"]).group(1)
            answers.setdefault(number, {}).setdefault(owner, []).append(meta["grade_id"])
    return {number + ("abcdefgh"[i] if len(cells) > 1 else ""): ids
            for number, cells in answers.items() for i, ids in enumerate(cells.values())}


PART_CELLS = part_cells(nbformat.read(SOURCE, as_version=4))

# --- plausible mistakes, one per autograded part -----------------------------------------------------------
WRONG = {
    # 1(a): eps added to the standard deviation instead of under the square root
    "1a": ("ex1_function", """
def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    centred = x - np.mean(x)
    return centred / (np.sqrt(np.mean(centred * centred)) + eps)
"""),
    # 1(b): the chapter's claim written down instead of the observed result
    "1b": ("ex1_results", """
constant = np.array([5.0, 5.0, 5.0, 5.0])
with_eps = layer_norm_vector(constant, eps=1e-5)
without_eps = np.full(4, np.inf)
"""),
    # 1(c): "inf" for 0/0, as the chapter says
    "1c": ("ex1_why", """
def deviations_and_scale(x, eps):
    x = np.asarray(x, dtype=np.float64)
    numerator = x - np.mean(x)
    return numerator, float(np.sqrt(np.mean(numerator * numerator) + eps))


zero_over_zero = "inf"
"""),
    # 2(a): the direct term only, no correction through r
    "2a": ("ex2_backward", """
def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    dy = np.asarray(dy, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    g = dy if gamma is None else dy * gamma
    return g / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
"""),
    # 2(b): a one-sided difference
    "2b": ("ex2_central_difference", """
def central_difference(f, x, dy, h=1e-6):
    x = np.asarray(x, dtype=np.float64)
    dy = np.asarray(dy, dtype=np.float64)
    grad = np.zeros_like(x)
    base = np.sum(dy * f(x))
    for index in np.ndindex(x.shape):
        up = x.copy()
        up[index] += h
        grad[index] = (np.sum(dy * f(up)) - base) / h
    return grad
"""),
    # 2(c): the analytic gradient compared with itself
    "2c": ("ex2_check", """
def gradient_gap(dy, x, gamma, eps):
    analytic = rmsnorm_backward(dy, x, gamma, eps=eps)
    again = rmsnorm_backward(dy, x, gamma, eps=eps)
    return float(np.max(np.abs(analytic - again)))


max_abs_diff = gradient_gap(dy_check, x_check, gamma_check, 1e-5)
"""),
    # 3: the mean absolute value instead of the root mean square
    "3": ("ex3_layers", """
def layer_magnitudes(x, weights, normalize):
    h = np.asarray(x, dtype=np.float64)
    sizes = []
    for w in weights:
        h = np.maximum(h @ w, 0.0)
        if normalize:
            h = layer_norm(h, eps=1e-5)
        sizes.append(np.mean(np.abs(h)))
    return np.array(sizes)


plain = layer_magnitudes(x_input, weights, normalize=False)
normed = layer_magnitudes(x_input, weights, normalize=True)
"""),
    # 4(a): LayerNorm's beta forgotten
    "4a": ("ex4_counts", """
def layer_norm_ops(D):
    return 3 * D + 3, 3 * D - 1


def rms_norm_ops(D):
    return 3 * D + 2, D
"""),
    # 4(b): the ratio upside down
    "4b": ("ex4_ratio", """
def counted_speedup(D):
    return sum(rms_norm_ops(D)) / sum(layer_norm_ops(D))


speedup_512 = counted_speedup(512)
"""),
    # 7: the warm-up starts from 0 (step / n), so it reaches the peak one step late
    "7": ("ex7_schedule", """
def learning_rate(step, steps, peak, warmup):
    n_warm = round(warmup * steps)
    if step < n_warm:
        return peak * step / n_warm
    p = (step - n_warm) / max(1, steps - 1 - n_warm)
    return peak * (0.1 + 0.45 * (1.0 + np.cos(np.pi * p)))
"""),
    # 8(a): post-norm's way back forgets the identity path (g = g_v instead of g_v + g_v W^T)
    "8a": ("ex8_grads", """
def grad_norms(x, weights, dy, placement):
    h = np.asarray(x, dtype=np.float64)
    kept = []
    for w in weights:
        if placement == "pre":
            kept.append((h, rms_norm(h)))
            h = h + kept[-1][1] @ w
        else:
            kept.append((h, h + h @ w))
            h = rms_norm(kept[-1][1])
    g = np.asarray(dy, dtype=np.float64)
    norms = []
    for w, (h_in, a) in zip(reversed(weights), reversed(kept), strict=True):
        if placement == "pre":
            norms.append(np.linalg.norm(a.T @ g))
            g = g + rmsnorm_backward(g @ w.T, h_in)
        else:
            g_v = rmsnorm_backward(g, a)
            norms.append(np.linalg.norm(h_in.T @ g_v))
            g = g_v @ w.T
    return np.array(norms[::-1])


post_norms = grad_norms(x_stack, w_stack, dy_stack, "post")
pre_norms = grad_norms(x_stack, w_stack, dy_stack, "pre")
"""),
    # 8(b): the guess copied into the observation instead of reading the grid
    "8b": ("ex8_observed", """
predicted_solved = observed_solved = 3
"""),
}

# Parts whose mistakes stay independent when they share a notebook, and what each notebook loses.
WRONG_GROUPS = {
    "wrong_a": ("1a", "2c", "3", "4b", "8a"),
    "wrong_b": ("1b", "2a", "4a"),   # 2(c) uses 2(a), 4(b) uses 4(a)
    "wrong_c": ("1c", "2b", "7", "8b"),    # a one-sided difference still agrees with 2(a) to under 1e-6 in 2(c)
}
# A wrong answer in no group above (a new exercise's) is graded alone, in a submission of its own.
WRONG_GROUPS.update({f"wrong_{part}": (part,) for part in WRONG
                     if not any(part in parts for parts in WRONG_GROUPS.values())})
DEPENDENT = {"2a": ("2c", "8a"), "4a": ("4b",)}   # 8(a) runs the stack's way back with 2(a)

DELEGATING = {
    "ex1_function": """
def layer_norm_vector(x, eps=1e-5):
    return layer_norm(np.asarray(x, dtype=np.float64), eps=eps)
""",
    "ex2_backward": """
import normlab_core


def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    return normlab_core.rms_norm_backward(dy, x, gamma, eps=eps)
""",
    "ex2_central_difference": """
from normlab_core import numerical_gradient as _ng


def central_difference(f, x, dy, h=1e-6):
    return _ng(f, x, dy, h=h)
""",
    "ex4_counts": """
from normlab_core import opcount as _oc


def layer_norm_ops(D):
    ops = _oc.count_ops("layer_norm", D)["ops"]  # the library's convention, adjusted to the exercise's
    return ops["mul"] + ops["div"], ops["add/sub"] - 2


def rms_norm_ops(D):
    ops = _oc.count_ops("rms_norm", D)["ops"]
    return ops["mul"] + ops["div"], ops["add/sub"] - 1
""",
    # imported inside the function, after the grader's tripwires were set: they must still notice
    "ex7_schedule": """
def learning_rate(step, steps, peak, warmup):
    from normlab_core.training import lr_at
    return lr_at(step, steps, peak, warmup)
""",
}

# Wrong answers for 1(a) and 2(a), with normlab_core patched to agree with them (what fooled the old checks).
PATCHED = {
    "ex1_function": WRONG["1a"][1] + """

import normlab_core
import normlab_core.norms
def _agrees(x, gamma=None, beta=None, eps=1e-5):
    return layer_norm_vector(x, eps)


normlab_core.layer_norm = normlab_core.norms.layer_norm = _agrees
np.testing.assert_allclose = lambda *args, **kwargs: None
""",
    "ex2_backward": WRONG["2a"][1] + """

import normlab_core
import normlab_core.backward
normlab_core.rms_norm_backward = normlab_core.backward.rms_norm_backward = rmsnorm_backward
normlab_core.numerical_gradient = lambda f, x, dy, h=1e-5: rmsnorm_backward(dy, x, None)
""",
}

# Counts and a ratio that claim to equal anything.
ALWAYS_EQUAL = {
    "ex4_counts": """
class Always(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def layer_norm_ops(D):
    return Always(0), Always(0)


def rms_norm_ops(D):
    return Always(0), Always(0)
""",
    "ex4_ratio": """
class AlwaysFloat(float):
    def __eq__(self, other):
        return True

    def __lt__(self, other):
        return True

    def __gt__(self, other):
        return True

    __hash__ = float.__hash__


def counted_speedup(D):
    return AlwaysFloat(1.75)


speedup_512 = counted_speedup(512)
""",
}


CRASH = {"ex1_function": "import os\nos._exit(1)\n"}

# No answers at all; every cell that contains "assert" is blanked before it runs.
TRANSFORMER = {"ex1_function": """
def _blank_checks(lines):
    return [] if any("assert" in line for line in lines) else lines


get_ipython().input_transformers_cleanup.append(_blank_checks)
"""}

GRADE_IDS = sorted(PART_CELLS[p][i] for p in PART_CELLS for i in range(len(PART_CELLS[p])))

# --- hostile submissions, one per hole of issue 23 -------------------------------------------------------------

# 1. A blank notebook that makes every cell look successful and prints the old record line of every check.
FORGED = {"ex1_function": f"""
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

ExecutionResult.success = property(lambda self: True)
_IDS = {GRADE_IDS!r}


def _all_passed(self, *args, **kwargs):
    for _gid in _IDS:
        print(f"hidden cases passed (hidden checks passed: {{_gid}})")


InteractiveShell.showtraceback = _all_passed
get_ipython().showtraceback = _all_passed.__get__(get_ipython())
"""}

# 2. Answers that call the grader's own code: `_hidden` from the old hidden-test cells, or the checks' file
#    wherever it can be found; each falls back to an error (and so scores 0) when the grader is out of reach.
_GRADER = """
def _grader():
    import importlib.util, pathlib, sys
    if "_hidden" in globals():
        return globals()["_hidden"]
    for name in ("normlab_grading.hidden_checks", "hidden_checks", "normlab_hidden_checks"):
        if name in sys.modules:
            return sys.modules[name]
    for folder in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents):
        path = folder / "normlab_grading" / "hidden_checks.py"
        if path.is_file():
            spec = importlib.util.spec_from_file_location("_stolen", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    import normlab_grading.hidden_checks as module
    return module
"""
INTERNALS = {
    "ex2_backward": _GRADER + """

def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    dy, x = np.asarray(dy, dtype=np.float64), np.asarray(x, dtype=np.float64)
    g = None if gamma is None else list(np.asarray(gamma, dtype=np.float64))
    flat = _grader()._backward_reference(x.shape, list(x.ravel()), list(dy.ravel()), g, eps)
    return np.array(flat).reshape(x.shape)
""",
    "ex3_layers": _GRADER + """

def layer_magnitudes(x, weights, normalize):
    return np.array(_grader()._magnitudes(x, weights, normalize))


plain = normed = None
""",
    "ex4_counts": _GRADER + """

def layer_norm_ops(D):
    return tuple(_grader().counts("layer", D))


def rms_norm_ops(D):
    return tuple(_grader().counts("rms", D))
""",
}

# 3. Counts taken from the callers' stack frames, reached through an exception's traceback: the old hidden
#    check called the student's function from a module whose globals held the reference counter `_counts`.
FRAME = {"ex4_counts": """
def _callers():
    try:
        raise ZeroDivisionError
    except ZeroDivisionError as exc:
        frame = exc.__traceback__.tb_frame.f_back.f_back
    while frame is not None:
        yield frame
        frame = frame.f_back


def _borrowed(norm, D):
    for frame in _callers():
        for scope in (frame.f_locals, frame.f_globals):
            for name in ("_counts", "counts"):
                found = scope.get(name)
                if callable(found) and getattr(found, "__module__", "") != "__main__":
                    return tuple(found(norm, D))
    return (0, 0)


def layer_norm_ops(D):
    return _borrowed("layer", D)


def rms_norm_ops(D):
    return _borrowed("rms", D)
"""}


def intruder(course: Path) -> dict[str, str]:
    """Correct answers, plus a cell of the student's own that tries to sabotage the class and to read what it
    should not: it appends to the grader's files and the gradebook, copies other submissions, prints what it
    found, phones home and forks."""
    return {"setup": None, "ex1_results": f"""
import glob, os, pathlib, socket

_COURSE = {str(course)!r}
_found = []
for _target in ("../../../normlab_grading/hidden_checks.py", _COURSE + "/normlab_grading/hidden_checks.py",
                _COURSE + "/normlab_grading/runner.py", _COURSE + "/gradebook.db", "/opt/normlab/runner.py",
                "/opt/normlab/lib/normlab_core/norms/__init__.py", "/opt/normlab/venv/pyvenv.cfg"):
    try:
        with open(_target, "a") as _fh:
            _fh.write("\\nraise SystemExit('sabotaged')\\n")
        _found.append(f"appended to {{_target}}")
    except Exception as _exc:
        _found.append(f"could not append to {{_target}}: {{type(_exc).__name__}}")
for _target in (_COURSE + "/normlab_grading/hidden_checks.py", "../../../normlab_grading/hidden_checks.py"):
    try:
        _found.append(open(_target).read())
    except Exception as _exc:
        _found.append(f"could not read {{_target}}: {{type(_exc).__name__}}")
_found += glob.glob(_COURSE + "/submitted/*/*/*.ipynb") + glob.glob("../../*/*/*.ipynb")
_found += glob.glob("/home/*") + glob.glob("/work/*") + glob.glob("/root/*") + glob.glob("/tmp/*")
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    _found.append("network: connected")
except OSError as _exc:
    _found.append(f"network: {{_exc}}")
_children = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            import time
            time.sleep(3)
            os._exit(0)
        _children += 1
    except OSError:
        break
_found.append(f"forked {{_children}} processes")
print("\\n".join(_found))

constant = np.array([5.0, 5.0, 5.0, 5.0])
with_eps = layer_norm_vector(constant, eps=1e-5)
with np.errstate(invalid="ignore", divide="ignore"):
    without_eps = layer_norm_vector(constant, eps=0.0)
"""}


# 5. Output a grader must cut: 50 MB printed, 10 MB written straight to the file descriptor.
HUGE = {"ex6_experiment": """
import os

def latent_experiment():
    pass


print("x" * 50_000_000)
os.write(1, b"y" * 10_000_000)
"""}

# 5. Warnings (and printed paths) that used to put server paths into a check's feedback.
WARN = {"ex1_function": """
import os, sys, warnings


def layer_norm_vector(x, eps=1e-5):
    warnings.warn("layer_norm_vector was called")
    np.log(-np.ones(1))  # a RuntimeWarning from NumPy's own code
    x = np.asarray(x, dtype=np.float64)
    centred = x - np.mean(x)
    return centred / np.sqrt(np.mean(centred * centred) + eps)


print(os.getcwd(), sys.executable, np.__file__, os.path.abspath("."))
layer_norm_vector([1.0, 2.0])
"""}

# --- correct answers the old checks marked wrong --------------------------------------------------------------

# NumPy scalars and integers, a list where an array is asked for, a float32 ratio.
FLOAT64 = {
    "ex2_check": """
def gradient_gap(dy, x, gamma, eps):
    analytic = rmsnorm_backward(dy, x, gamma, eps=eps)
    numeric = central_difference(lambda v: rms_norm(v, gamma, eps=eps), x, dy, h=1e-6)
    return np.max(np.abs(analytic - numeric))


max_abs_diff = gradient_gap(dy_check, x_check, gamma_check, 1e-5)
""",
    "ex3_layers": """
def layer_magnitudes(x, weights, normalize):
    h = np.asarray(x, dtype=np.float64)
    sizes = []
    for w in weights:
        h = np.maximum(h @ w, 0.0)
        if normalize:
            h = layer_norm(h, eps=1e-5)
        sizes.append(np.sqrt(np.mean(h * h)))
    return sizes


plain = layer_magnitudes(x_input, weights, normalize=False)
normed = layer_magnitudes(x_input, weights, normalize=True)
""",
    "ex4_counts": """
def layer_norm_ops(D):
    D = np.int64(D)
    return 3 * D + 3, 4 * D - 1


def rms_norm_ops(D):
    D = np.int64(D)
    return [3 * D + 2, D]
""",
    "ex4_ratio": """
def counted_speedup(D):
    return np.float32(sum(layer_norm_ops(D)) / sum(rms_norm_ops(D)))


speedup_512 = counted_speedup(512)
""",
    # 7 in float32, with NumPy integers and rounding half up (the checks never use a tie)
    "ex7_schedule": """
def learning_rate(step, steps, peak, warmup):
    step, steps = np.int64(step), np.int64(steps)
    n_warm = int(np.floor(warmup * steps + 0.5))
    if step < n_warm:
        return np.float32(peak) * np.float32(step + 1) / np.float32(n_warm)
    p = (step - n_warm) / max(1, steps - 1 - n_warm)
    return np.float32(peak * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * p))))
""",
    # a file handed in beside the notebook, read from the working folder as in JupyterLab
    "ex6_experiment": """
import os


def latent_experiment():
    pass


if os.path.exists("my_notes.txt"):
    print("my notes:", open("my_notes.txt").read())
""",
}

# Means by Python's sum() (rounding differs from np.mean in the last bits), variance by a generator.
SUM_MEAN = {
    "ex1_function": """
def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    mean = sum(x) / len(x)
    var = sum((v - mean) ** 2 for v in x) / len(x)
    return (x - mean) / (var + eps) ** 0.5
""",
    "ex1_why": """
def deviations_and_scale(x, eps):
    x = np.asarray(x, dtype=np.float64)
    mean = sum(x) / len(x)
    numerator = x - mean
    return numerator, (sum(v * v for v in numerator) / len(x) + eps) ** 0.5


zero_over_zero = "nan"
""",
}

SLOW_SECONDS = 0.2  # per call of rmsnorm_backward; the tests' course allows 3 s per check cell
SLOW = {"ex2_backward": f"""
import time


def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    time.sleep({SLOW_SECONDS})
    dy = np.asarray(dy, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    g = dy if gamma is None else dy * np.asarray(gamma, dtype=np.float64)
    r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    unit = x / r
    return (g - unit * np.mean(g * unit, axis=-1, keepdims=True)) / r
"""}


def deleted_checks(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Correct answers, with check cells deleted, edited and moved, a data cell edited, and an answer cell
    deleted with its code moved into a cell of the student's own."""
    nb = nbformat.from_dict(nb)
    cells = {grade_id(c): c for c in nb.cells if grade_id(c)}
    cells["test_ex2_backward"].source = "pass  # the check is gone"
    cells["ex2_data"].source = cells["ex2_data"].source.replace("default_rng(2310)", "default_rng(1)")
    cells["ex1_why"].metadata.pop("nbgrader")
    moved = cells["test_ex3_hidden"]
    nb.cells = [c for c in nb.cells if grade_id(c) not in ("test_ex1_function", "test_ex4_speedup",
                                                          "test_ex3_hidden")]
    nb.cells.insert(2, moved)
    return nb


def lost_cells(parts) -> set[str]:
    out = set()
    for part in parts:
        for p in (part, *DEPENDENT.get(part, ())):
            out.update(PART_CELLS[p])
    return out


def auto_score(wrong=()) -> float:
    """The automatic points of the reference answers with the WRONG answers of these parts (and of the parts that
    depend on them) in their place: what the grader must give, read off the source notebook."""
    points = auto_cells(nbformat.read(SOURCE, as_version=4))
    return sum(points.values()) - sum(points[c] for c in lost_cells(wrong))


def submissions(source, released, course: Path | None = None) -> dict[str, nbformat.NotebookNode]:
    """Every simulated submission, by student id."""
    ref = solutions(source)
    subs = {"reference": replaced(released, ref), "blank": nbformat.from_dict(released)}
    for name, parts in WRONG_GROUPS.items():
        subs[name] = replaced(released, {**ref, **{WRONG[p][0]: WRONG[p][1] for p in parts}})
    subs["delegating"] = replaced(released, {**ref, **DELEGATING})
    subs["patched"] = replaced(released, {**ref, **PATCHED})
    subs["alwaysequal"] = replaced(released, {**ref, **ALWAYS_EQUAL})
    subs["transformer"] = replaced(released, TRANSFORMER)
    subs["crash"] = replaced(released, {**ref, **CRASH})
    subs["forged"] = replaced(released, FORGED)
    subs["internals"] = replaced(released, {**ref, **INTERNALS})
    subs["frame"] = replaced(released, {**ref, **FRAME})
    if course is not None:
        extra = intruder(course)
        subs["intruder"] = replaced(released, {**ref, **{k: v for k, v in extra.items() if v}})
    subs["huge"] = replaced(released, {**ref, **HUGE})
    subs["warn"] = replaced(released, {**ref, **WARN})
    subs["float64"] = replaced(released, {**ref, **FLOAT64})
    subs["summean"] = replaced(released, {**ref, **SUM_MEAN})
    subs["slow"] = replaced(released, {**ref, **SLOW})
    subs["deleted"] = deleted_checks(replaced(released, ref))
    return subs


# What each submission must lose (cells scoring 0); every other automatic cell must score full marks.
EXPECTED_LOST = {
    "reference": set(),
    **{name: lost_cells(parts) for name, parts in WRONG_GROUPS.items()},
    # the delegated parts, and in the sandbox 1(b), 2(c) and 4(b) too: the graded copy of normlab_core has no
    # reference implementations (and its layer_norm takes eps=1e-5 only), so what they build on raises there
    "delegating": {c for p in ("1a", "1b", "2a", "2b", "2c", "4a", "4b", "7", "8a") for c in PART_CELLS[p]},
    "patched": lost_cells(("1a", "2a")),
    "alwaysequal": lost_cells(("4a", "4b")),
    "blank": set(GRADE_IDS), "transformer": set(GRADE_IDS), "forged": set(GRADE_IDS),
    "internals": lost_cells(("2a", "3", "4a")),
    "frame": lost_cells(("4a",)),
    "intruder": set(), "huge": set(), "warn": set(), "float64": set(), "summean": set(), "deleted": set(),
    # 27 calls of 0.2 s do not fit in the check cell's 3 s; 8 calls (2(a)) do; 8(a) calls the slow backward once
    # per layer of every stack, far more than 3 s
    "slow": {"test_ex2_hidden", "test_ex8_grads"},
}
FAILED = {"crash": "kernel died"}


# --- the checks in this process ---------------------------------------------------------------------------

def namespace(replace: dict[str, str] | None = None, source=None) -> dict:
    """The globals of a notebook run with the reference answers (and some replaced), without its check cells
    and without the optional timing."""
    source = source or nbformat.read(SOURCE, as_version=4)
    answers = {**solutions(source), **(replace or {})}
    ns = {"__name__": "__main__"}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        check = meta.get("grade") and not meta.get("solution")
        if cell.cell_type != "code" or check or meta.get("grade_id") in NOT_RUN:
            continue
        code = answers.get(meta.get("grade_id"), cell.source)
        with np.errstate(all="ignore"), contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(code, f"<cell {meta.get('grade_id')}>", "exec"), ns)  # noqa: S102
            except Exception:  # noqa: BLE001, S110 - as in a graded notebook, a failing cell does not stop the rest
                pass
    return ns


def context(seed: int | None = None, source=None) -> hidden_checks.Context:
    release = json.loads(nbformat.writes(source or nbformat.read(SOURCE, as_version=4)))
    from normlab_grading.data import visible_data

    return hidden_checks.Context(seed=hidden_checks.COURSE_SEED if seed is None else seed,
                                 data=visible_data(release))


def judge_namespace(ns: dict, ctx: hidden_checks.Context, grade_ids=None, budget: float = 30.0,
                    via_json: bool = True) -> dict:
    """{grade id: Verdict}: the calls made on `ns` as the sandbox makes them, the records passed through JSON
    (unless via_json is False), and judged as the grader judges them."""
    plans = hidden_checks.plans(ctx, grade_ids or GRADE_IDS)
    records: dict = {}
    request = hidden_checks.request(plans, budget)

    def keep(record):
        records[record["group"]] = json.loads(json.dumps(record)) if via_json else record

    runner.run_groups(ns, json.loads(json.dumps(request)) if via_json else request, np, send=keep)
    return {gid: hidden_checks.judge(plan, records.get(gid), budget) for gid, plan in plans.items()}


def failing(verdicts: dict) -> set[str]:
    return {gid for gid, v in verdicts.items() if not v.passed}


# --- one release per test run, shared by the test processes ------------------------------------------------
TEST_LIMITS = """
# (added by the tests) shorter limits, so that the slow and stuck submissions cost seconds, not minutes
c.Execute.timeout = 10
c.NormlabGrading.cell_seconds = 10
c.NormlabGrading.check_seconds = 3
c.NormlabGrading.grace_seconds = 3
c.NormlabGrading.processes = 16
"""


def _release_key() -> str:
    h = hashlib.sha256(TEST_LIMITS.encode())
    for path in sorted([SOURCE, COURSE / "nbgrader_config.py", *(COURSE / "normlab_grading").glob("*.py")]):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def released_course(dest: Path, tmp_root: Path) -> tuple[Path, nbformat.NotebookNode, nbformat.NotebookNode]:
    """A copy at dest of the course after `nbgrader generate_assignment chapter23` (release and gradebook).

    The release is made once (under a lock, in tmp_root: the folder shared by all the test processes of a
    run) for the current sources, and copied afterwards."""
    tmp_root.mkdir(parents=True, exist_ok=True)
    master = tmp_root / f"normlab-release-{_release_key()}"
    with open(tmp_root / "normlab-release.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (master / "release" / mx.ASSIGNMENT / mx.NOTEBOOK).is_file():
            building = tmp_root / f"{master.name}.building"
            shutil.rmtree(building, ignore_errors=True)
            mx.copy_course(building)
            with open(building / "nbgrader_config.py", "a") as fh:
                fh.write(TEST_LIMITS)
            nbgrader_here(building, "generate_assignment", mx.ASSIGNMENT, "--force")
            building.rename(master)
    shutil.copytree(master, dest, symlinks=True)
    source = nbformat.read(SOURCE, as_version=4)
    released = nbformat.read(dest / "release" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    return dest, source, released


def nbgrader_here(cwd: Path, command: str, *args) -> str:
    """`nbgrader <command> <args>` run from cwd in this process (nbgrader's own application, without the
    seconds a new process spends importing it); returns its log, raises if it fails."""
    import logging
    import os

    from nbgrader import apps
    from traitlets.config.configurable import SingletonConfigurable

    app_class = {"generate_assignment": apps.GenerateAssignmentApp, "zip_collect": apps.ZipCollectApp,
                 "release_assignment": apps.ReleaseAssignmentApp, "fetch_assignment": apps.FetchAssignmentApp,
                 "submit": apps.SubmitApp, "collect": apps.CollectApp, "release_feedback": apps.ReleaseFeedbackApp,
                 "fetch_feedback": apps.FetchFeedbackApp}[command]
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    log = io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        app = app_class()
        app.initialize(list(args))
        app.log.addHandler(logging.StreamHandler(log))
        try:
            app.start()
        except SystemExit as exc:
            if exc.code:
                raise NbgraderFailed(exc.code, log.getvalue()) from None
    finally:
        os.chdir(before)

        def forget(cls):
            for sub in cls.__subclasses__():
                forget(sub)
            if getattr(cls, "_instance", None) is not None:
                cls.clear_instance()

        forget(SingletonConfigurable)
    return log.getvalue()


class NbgraderFailed(RuntimeError):
    def __init__(self, code, log):
        super().__init__(f"nbgrader exited with {code}:\n{log}")
        self.code, self.log = code, log


def shared_tmp(tmp_path_factory) -> Path:
    """The folder that every xdist worker of this test run shares (the parent of each worker's base temp)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def tree_digest(folder: Path) -> str:
    """A digest of every file under folder (paths and contents), to show nothing was changed."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cell_scores(course: Path, student: str) -> dict[str, tuple[float, float]]:
    """{grade cell: (score, max score)} of one student's autograded submission, from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        nb = gb.find_submission_notebook(Path(mx.NOTEBOOK).stem, mx.ASSIGNMENT, student)
        return {g.name: (g.score, g.max_score) for g in nb.grades}


__all__ = ["sandbox", "structure"]


def platform_archive(course, tmp_path, names: list[str]):
    """A copy of the course whose downloaded/ holds one zip of the released notebook under each of `names` (as an
    LMS hands them out); returns (course copy, archive folder, the released notebook's bytes)."""
    import zipfile

    root = tmp_path / "zc"
    shutil.copytree(course[0], root)
    archive = root / "downloaded" / mx.ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    released = (root / "release" / mx.ASSIGNMENT / mx.NOTEBOOK).read_bytes()
    with zipfile.ZipFile(archive / "from_the_platform.zip", "w") as zf:
        for name in names:
            zf.writestr(name, released)
    return root, archive, released
