"""The nbgrader course of section 23.10, end to end, on a temporary copy of assignments/.

One release and one autograde run (four students in one go) serve every test in this file:
- "reference" submits the instructor's solutions, "untouched" submits the release unchanged,
- "wrong" makes two plausible mistakes (eps ignored in exercise 1, RMSNorm backward without its
  correction term), "broken" has a cell that raises and a cell that never ends.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "assignments" / "source" / "chapter23" / "exercises.ipynb"
STORED = ROOT / "notebooks" / "10_exercises.ipynb"
CELL_TIMEOUT = 10  # seconds per cell while autograding in this test (the course itself uses 30)

_spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "scripts" / "make_exercises.py")
mx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mx)

REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)

# The two plausible mistakes, written as a student might.
EPS_IGNORED = """
def layer_norm_vector(x, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    centred = x - np.mean(x)
    return centred / np.sqrt(np.mean(centred * centred))
"""
NO_CORRECTION = """
def rmsnorm_backward(dy, x, gamma=None, eps=1e-5):
    dy = np.asarray(dy, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    g = dy if gamma is None else dy * gamma
    return g / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
"""
RAISES = """
def layer_magnitudes(x, weights, normalize):
    raise ValueError("I got stuck here")


plain = layer_magnitudes(x_input, weights, normalize=False)
normed = layer_magnitudes(x_input, weights, normalize=True)
"""
NEVER_ENDS = """
while True:
    pass
"""


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def without_markers(text: str) -> str:
    """A solution cell as a student would hand it in: the instructor's code without the delimiters."""
    return "\n".join(line for line in text.split("\n") if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def submission(released, replace: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with the given answer cells' sources replaced."""
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        if grade_id(cell) in replace:
            cell.source = replace[grade_id(cell)]
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A released copy of the course: (course root, source notebook, released notebook)."""
    root = mx.copy_course(tmp_path_factory.mktemp("normlab") / "course")
    with open(root / "nbgrader_config.py", "a") as fh:
        fh.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
    released_path = mx.release(root)
    assert released_path.is_file() and root in released_path.parents
    return root, nbformat.read(SOURCE, as_version=4), nbformat.read(released_path, as_version=4)


@pytest.fixture(scope="module")
def grades(course):
    """Autograde four students in one run; return {student: {grade cell: (score, max score)}}."""
    root, source, released = course
    solutions = {grade_id(c): without_markers(c.source) for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    students = {
        "reference": submission(released, solutions),
        "untouched": released,
        "wrong": submission(released, {**solutions, "ex1_function": EPS_IGNORED, "ex2_backward": NO_CORRECTION}),
        "broken": submission(released, {**solutions, "ex3_layers": RAISES, "ex4_counts": NEVER_ENDS}),
    }
    for name, nb in students.items():
        folder = root / "submitted" / name / mx.ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / mx.NOTEBOOK)
    mx.nbgrader(root, "autograde", mx.ASSIGNMENT, "--force", timeout=600)

    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="normlab") as gb:
        for name in students:
            nb = gb.find_submission_notebook(Path(mx.NOTEBOOK).stem, mx.ASSIGNMENT, name)
            out[name] = {g.name: (g.score, g.max_score) for g in nb.grades}
    return out


def auto_cells(source) -> dict[str, float]:
    """{grade id: points} of the automatically graded check cells of the source notebook."""
    cells = {}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            cells[meta["grade_id"]] = float(meta["points"])
    return cells


def test_release_has_no_solution_or_hidden_test(course):
    _, source, released = course
    text = "\n".join(c.source for c in released.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "Rubric", "Model answer"):
        assert marker not in text
    # The reference implementation the hidden tests compare with is never handed to the student.
    assert "rms_norm_backward" not in text
    outside = "\n".join(REGION.sub("", c.source) for c in source.cells)
    released_lines = {line.strip() for line in text.split("\n")}
    secret = [line.strip() for c in source.cells for _, body in REGION.findall(c.source)
              for line in body.split("\n") if len(line.strip()) > 12 and line.strip() not in outside]
    assert len(secret) > 80  # the regions are substantial, so this check has something to find
    leaked = [line for line in secret if line in released_lines]
    assert leaked == []


def test_reference_solutions_earn_full_automatic_marks(course, grades):
    _, source, _ = course
    expected = auto_cells(source)
    assert sum(expected.values()) == 18
    got = {gid: grades["reference"][gid] for gid in expected}
    assert got == {gid: (pts, pts) for gid, pts in expected.items()}


def test_written_answers_wait_for_a_person(grades):
    # A written answer that was filled in has no automatic score yet; one left untouched scores zero.
    for gid in ("ex5_answer", "ex6_answer"):
        assert grades["reference"][gid] == (0.0, 4.0)
        assert grades["untouched"][gid] == (0.0, 4.0)


def test_untouched_release_earns_zero(grades):
    scores = grades["untouched"]
    assert sum(max_score for _, max_score in scores.values()) == 26
    assert all(score == 0 for score, _ in scores.values())


def test_plausible_mistakes_lose_their_parts_only(course, grades):
    _, source, _ = course
    lost = {"test_ex1_function", "test_ex1_results", "test_ex2_backward", "test_ex2_hidden", "test_ex2_check"}
    for gid, pts in auto_cells(source).items():
        assert grades["wrong"][gid] == ((0.0 if gid in lost else pts), pts), gid


def test_raising_and_endless_cells_score_zero_without_hanging(course, grades):
    _, source, _ = course
    lost = {"test_ex3_visible", "test_ex3_hidden", "test_ex4_small", "test_ex4_counts", "test_ex4_speedup"}
    for gid, pts in auto_cells(source).items():
        assert grades["broken"][gid] == ((0.0 if gid in lost else pts), pts), gid


def test_endless_cell_was_interrupted_by_the_timeout(course, grades):
    root, _, _ = course
    graded = nbformat.read(root / "autograded" / "broken" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    (cell,) = [c for c in graded.cells if grade_id(c) == "ex4_counts"]
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors and errors[0].ename in {"KeyboardInterrupt", "CellTimeoutError"}


def test_stored_student_notebook_is_up_to_date(course):
    _, _, released = course
    fresh = mx.book_version(released)
    stored = nbformat.read(STORED, as_version=4)

    def view(nb):
        return [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells]

    assert view(stored) == view(fresh), "notebooks/10_exercises.ipynb is stale: run `make exercises`"


def test_stored_notebook_runs_only_what_the_book_can_run():
    stored = nbformat.read(STORED, as_version=4)
    student_cells = [c for c in stored.cells if mx.is_student_cell(c)]
    assert len(student_cells) >= 20
    for cell in student_cells:
        assert set(mx.SKIP_TAGS) <= set(cell.metadata["tags"])
        assert cell.outputs == []
    for cell in stored.cells:
        if cell.cell_type == "code" and not mx.is_student_cell(cell):
            assert cell.execution_count is not None  # the remaining cells were executed
        for out in cell.get("outputs", []):
            assert out.output_type != "error"


def test_course_root_is_the_config_folder(tmp_path, monkeypatch):
    # The course must work wherever an instructor copies it: its root is the folder of its config file,
    # whatever the current directory is.
    from traitlets.config.loader import PyFileConfigLoader

    root = mx.copy_course(tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert config.CourseDirectory.root == os.path.abspath(root)
    assert config.CourseDirectory.course_id == "normlab"
    assert config.Execute.timeout > 0
