"""Simulated submissions of the section 23.10 exercises, shared by the grading pipeline tests.

Each submission is the released notebook with some answer cells replaced. `reference` holds the instructor's
solutions; the `wrong_*` ones hold plausible mistakes, grouped so that mistakes in one notebook do not feed
into each other's parts (except where one part uses another, listed in LOST); the others cheat or crash.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "assignments" / "source" / "chapter23" / "exercises.ipynb"

_spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "scripts" / "make_exercises.py")
mx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mx)

SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n", re.M)


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


PART_CELLS = {
    "1a": ["test_ex1_function"], "1b": ["test_ex1_results"], "1c": ["test_ex1_why"],
    "2a": ["test_ex2_backward", "test_ex2_hidden"], "2b": ["test_ex2_central_difference"], "2c": ["test_ex2_check"],
    "3": ["test_ex3_visible", "test_ex3_hidden"], "4a": ["test_ex4_small", "test_ex4_counts"],
    "4b": ["test_ex4_speedup"],
}

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
}

# Parts whose mistakes stay independent when they share a notebook, and what each notebook loses.
WRONG_GROUPS = {
    "wrong_a": ("1a", "2c", "3", "4b"),
    "wrong_b": ("1b", "2a", "4a"),   # 2(c) uses 2(a), 4(b) uses 4(a)
    "wrong_c": ("1c", "2b"),         # a one-sided difference still agrees with 2(a) to under 1e-6 in 2(c)
}
DEPENDENT = {"2a": ("2c",), "4a": ("4b",)}

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


def lost_cells(parts) -> set[str]:
    out = set()
    for part in parts:
        for p in (part, *DEPENDENT.get(part, ())):
            out.update(PART_CELLS[p])
    return out


def submissions(source, released) -> dict[str, nbformat.NotebookNode]:
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
    return subs


# What each submission must lose (cells scoring 0); every other automatic cell must score full marks.
EXPECTED_LOST = {
    "reference": set(),
    **{name: lost_cells(parts) for name, parts in WRONG_GROUPS.items()},
    # only the delegated parts: 2(c) and 4(b) build on them and are right
    "delegating": {c for p in ("1a", "2a", "2b", "4a") for c in PART_CELLS[p]},
    "patched": lost_cells(("1a", "2a")),
    "alwaysequal": lost_cells(("4a", "4b")),
}


# --- one release per test session, copied for each test module that grades --------------------------------
CELL_TIMEOUT = 10  # seconds per cell while autograding in the tests (the course itself uses 30)
_RELEASED: dict[str, Path] = {}


def released_course(dest: Path) -> tuple[Path, nbformat.NotebookNode, nbformat.NotebookNode]:
    """A copy at dest of the course after `nbgrader generate_assignment chapter23` (release and gradebook).

    The release is made once per session (in the first caller's folder's parent) and copied afterwards.
    """
    import shutil

    if "root" not in _RELEASED:
        first = dest.parent / "released-course"
        mx.copy_course(first)
        with open(first / "nbgrader_config.py", "a") as fh:
            fh.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
        mx.release(first)
        _RELEASED["root"] = first
    shutil.copytree(_RELEASED["root"], dest)
    source = nbformat.read(SOURCE, as_version=4)
    released = nbformat.read(dest / "release" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    return dest, source, released


def cell_scores(course: Path, student: str) -> dict[str, tuple[float, float]]:
    """{grade cell: (score, max score)} of one student's autograded submission, from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        nb = gb.find_submission_notebook(Path(mx.NOTEBOOK).stem, mx.ASSIGNMENT, student)
        return {g.name: (g.score, g.max_score) for g in nb.grades}
