"""The grading pipeline, end to end: `make grade` in a copy of the course, on simulated submissions.

One release and one run of the grade command serve every test here (see grading_support for the
submissions): the reference, a blank notebook, one plausible wrong answer for every automatically graded part
(in three notebooks), answers that delegate to normlab_core, wrong answers with normlab_core patched to agree,
answers whose `==` is always true, a kernel that rewrites the check cells, and a kernel that dies.
The visible checks are run the way JupyterLab's Validate button runs them (nbgrader's Validator).
"""

from __future__ import annotations

import csv
import html
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    EXPECTED_LOST,
    PART_CELLS,
    WRONG,
    WRONG_GROUPS,
    auto_cells,
    cell_scores,
    mx,
    released_course,
    solutions,
    submissions,
)

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "notebooks" / "10_exercises.ipynb"
SHOWN_NAME = {"1a": "1(a)", "1b": "1(b)", "1c": "1(c)", "2a": "2(a)", "2b": "2(b)", "2c": "2(c)", "3": "3:",
              "4a": "4(a)", "4b": "4(b)"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Run `make grade` on every simulated submission; return (course, source, released, process)."""
    course, source, released = released_course(tmp_path_factory.mktemp("pipeline") / "course")
    for name, nb in submissions(source, released).items():
        folder = course / "submitted" / name / mx.ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / mx.NOTEBOOK)
    proc = subprocess.run(["make", "-C", str(course), "grade", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=900)
    return course, source, released, proc


@pytest.fixture(scope="module")
def grades_csv(graded):
    course = graded[0]
    with open(course / "grades.csv", newline="") as fh:
        return {row["student_id"]: row for row in csv.DictReader(fh)}


def test_reference_earns_every_automatic_point(graded):
    course, source, _, _ = graded
    expected = auto_cells(source)
    assert sum(expected.values()) == 18
    scores = cell_scores(course, "reference")
    assert {gid: scores[gid] for gid in expected} == {gid: (pts, pts) for gid, pts in expected.items()}


def test_blank_notebook_earns_nothing(graded):
    scores = cell_scores(graded[0], "blank")
    assert sum(m for _, m in scores.values()) == 26
    assert all(s == 0 for s, _ in scores.values())


@pytest.mark.parametrize("student", ["wrong_a", "wrong_b", "wrong_c", "delegating", "patched", "alwaysequal"])
def test_each_submission_loses_exactly_its_wrong_parts(graded, student):
    course, source, _, _ = graded
    scores = cell_scores(course, student)
    lost = EXPECTED_LOST[student]
    assert lost, "every one of these submissions has something wrong"
    for gid, pts in auto_cells(source).items():
        assert scores[gid] == ((0.0 if gid in lost else pts), pts), (student, gid)


def test_every_autograded_part_has_a_wrong_answer_in_the_tests():
    assert {p for parts in WRONG_GROUPS.values() for p in parts} == set(PART_CELLS) == set(WRONG)


def test_grade_command_reports_the_submissions_that_failed(graded, grades_csv):
    _, _, _, proc = graded
    assert proc.returncode != 0, proc.stdout
    tail = proc.stdout[proc.stdout.index("FAILED TO GRADE"):]
    assert re.search(r"crash: kernel died", tail), tail
    assert re.search(r"transformer: the hidden checks of 12 check cell\(s\) did not run", tail), tail
    failed = {s for s, row in grades_csv.items() if row["grading_status"].startswith("FAILED")}
    assert failed == {"crash", "transformer"}
    for student in failed:
        assert grades_csv[student]["score"] == grades_csv[student]["raw_score"] == "", "must not look like a 0"
    assert grades_csv["blank"]["score"] in ("0", "0.0") and grades_csv["blank"]["grading_status"] == "ok"
    assert float(grades_csv["reference"]["score"]) == 18.0


def test_review_flags_the_tampering_and_nothing_else(grades_csv):
    flagged = {s for s, row in grades_csv.items() if row["review"]}
    assert flagged == {"delegating", "patched", "alwaysequal", "transformer", "crash"}
    assert "__eq__" in grades_csv["alwaysequal"]["review"]
    assert "input" in grades_csv["transformer"]["review"]
    assert "os._exit" in grades_csv["crash"]["review"]


def _feedback_text(course: Path, student: str) -> str:
    page = (course / "feedback" / student / mx.ASSIGNMENT / "exercises.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_shows_messages_but_no_hidden_test(graded):
    course, source, _, _ = graded
    hidden = (ROOT / "assignments" / "normlab_grading" / "hidden_checks.py").read_text()
    seeds = set(re.findall(r"_Draws\(([\d_]+)\)", hidden))
    assert len(seeds) >= 8
    for student in ("reference", "blank", "wrong_a", "wrong_b", "delegating", "alwaysequal"):
        text = _feedback_text(course, student)
        for secret in ("HIDDEN TESTS", "hidden_checks.py", "spec_from_file_location", "_Draws", *seeds):
            assert secret not in text, (student, secret)
        assert "Score" in text or "score" in text
        if student != "blank":  # (a blank answer cell's own traceback quotes only the student's cell)
            assert "Traceback (most recent call last)" not in text and "----> " not in text, student
    wrong = _feedback_text(course, "wrong_a")
    assert "def layer_norm_vector" in wrong  # the student's own code
    assert "1(a): layer_norm_vector([1, 2, 3, 4], eps=1e-05) returned" in wrong  # a visible check's message
    assert "3: wrong magnitudes for a hidden stack" in wrong  # a hidden check's message, without values
    delegating = _feedback_text(course, "delegating")
    assert "2(a) calls normlab_core's own implementation (normlab_core.backward.rms_norm_backward)" in delegating
    assert "1(a) calls normlab_core's own implementation (normlab_core.norms.layer_norm)" in delegating
    assert "must return plain Python ints" in _feedback_text(course, "alwaysequal") or \
        "two plain Python ints" in _feedback_text(course, "alwaysequal")


# --- validate: the visible checks, as the Validate button runs them ---------------------------------------

@pytest.fixture(scope="module")
def validated(graded, tmp_path_factory):
    """{name: nbgrader Validator result} for the released and book notebooks, blank and answered."""
    from nbgrader.validator import Validator

    _, source, released, _ = graded
    folder = tmp_path_factory.mktemp("validate")
    subs = submissions(source, released)
    notebooks = {name: subs[name] for name in ("reference", "blank", *WRONG_GROUPS)}
    stored = nbformat.read(STORED, as_version=4)
    notebooks["book_blank"] = stored
    book_answered = nbformat.from_dict(stored)
    answers = solutions(source)
    for cell in book_answered.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    notebooks["book_answered"] = book_answered
    results = {}
    for name, nb in notebooks.items():
        path = folder / f"{name}.ipynb"
        nbformat.write(nb, path)
        results[name] = Validator().validate(str(path))
    return results


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failed_checks(result, source) -> set[str]:
    """The grade ids of the check cells among a Validator result's failed cells."""
    checks = {c.source.split("### BEGIN HIDDEN TESTS")[0].strip(): c.metadata["nbgrader"]["grade_id"]
              for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")
              and not c.metadata["nbgrader"].get("solution")}
    return {checks[f["source"]] for f in result.get("failed", []) if f["source"] in checks}


def test_validate_passes_the_reference_and_fails_a_blank_notebook(graded, validated):
    source = graded[1]
    assert validated["reference"] == {}
    assert failed_checks(validated["blank"], source) == set(auto_cells(source))


def test_book_copy_validates_like_the_release(graded, validated):
    # The book's tags (raises-exception, remove-output, nbval-skip) do not make nbgrader skip a cell.
    source = graded[1]
    assert validated["book_answered"] == {}
    assert failed_checks(validated["book_blank"], source) == set(auto_cells(source))


@pytest.mark.parametrize("group", sorted(WRONG_GROUPS))
def test_validate_names_each_wrong_part(validated, group):
    failures = validated[group]["failed"]
    errors = [ANSI.sub("", f["raw_error"]) for f in failures]
    for part in WRONG_GROUPS[group]:
        hits = [e for e in errors if f"AssertionError: {SHOWN_NAME[part]}" in e]
        assert hits, (group, part, errors)
    for e in errors:
        assert re.search(r"AssertionError: \d", e), f"a bare or unnamed failure: {e[-300:]}"


def test_reference_runs_all_to_the_end(graded):
    # Run All with every answer in: no cell raises (optional cells included).
    course = graded[0]
    nb = nbformat.read(course / "autograded" / "reference" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    errors = [(i, o.ename) for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
