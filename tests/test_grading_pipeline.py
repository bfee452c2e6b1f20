"""The grading pipeline, end to end: `make grade J=2` in a copy of the course, on a class of simulated submissions.

One release (shared by the test processes) and one run of the grade command serve most tests here (see
grading_support for the submissions): the reference, a blank notebook, one plausible wrong answer for every
automatically graded part (in three notebooks), answers that delegate to normlab_core or patch it, answers
whose `==` is always true, a kernel that rewrites the check cells and one that dies, and one hostile
submission for each hole of issue 23 (forged records, the grader's internals, a frame reader, a class
saboteur, huge output, warnings with paths) and the odd-but-correct ones (NumPy scalars, sum() means, a
slow answer, deleted check cells). The course folder is a copy with no .venv beside it, so the Makefile must
find Python by itself. Then `make grade` is run again in this process to check that it is incremental.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    EXPECTED_LOST,
    FAILED,
    GRADE_IDS,
    ROOT,
    SOURCE,
    auto_cells,
    cell_scores,
    mx,
    point_totals,
    released_course,
    require_sandbox,
    shared_tmp,
    solutions,
    submissions,
    tree_digest,
)

STORED = ROOT / "notebooks" / "10_exercises.ipynb"


AUTO, TOTAL = point_totals(nbformat.read(SOURCE, as_version=4))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Run `make grade J=2` on every simulated submission; return (course, source, released, process, digests)."""
    require_sandbox()
    course, source, released = released_course(tmp_path_factory.mktemp("pipeline") / "course",
                                               shared_tmp(tmp_path_factory))
    for name, nb in submissions(source, released, course).items():
        folder = course / "submitted" / name / mx.ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / mx.NOTEBOOK)
    (course / "submitted" / "float64" / mx.ASSIGNMENT / "my_notes.txt").write_text("read from the working folder")
    protected = ["normlab_grading", "source", "release", "nbgrader_config.py", "submitted"]
    before = {part: tree_digest(course / part) if (course / part).is_dir() else (course / part).read_bytes()
              for part in protected}
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHON")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["make", "-C", str(course), "grade", "J=2"], capture_output=True, text=True,
                          timeout=900, env=env)
    after = {part: tree_digest(course / part) if (course / part).is_dir() else (course / part).read_bytes()
             for part in protected}
    return course, source, released, proc, before, after


@pytest.fixture(scope="module")
def grades_csv(graded):
    with open(graded[0] / "grades.csv", newline="") as fh:
        return {row["student_id"]: row for row in csv.DictReader(fh)}


def test_every_submission_scores_what_it_deserves(graded):
    course, source, _, proc, _, _ = graded
    points = auto_cells(source)
    table = [int(m.group(1)) for m in re.finditer(r"^\| \d+ \| [^|]+ \| (\d+) \|", source.cells[0].source, re.M)]
    assert sum(table) == TOTAL, "the intro's table of exercises and the cells' points differ"
    wrong = {}
    for student, lost in EXPECTED_LOST.items():
        scores = cell_scores(course, student)
        want = {gid: ((0.0 if gid in lost else pts), pts) for gid, pts in points.items()}
        got = {gid: scores[gid] for gid in points}
        if got != want:
            wrong[student] = {gid: got[gid] for gid in points if got[gid] != want[gid]}
    assert wrong == {}, proc.stdout[-3000:]


def test_the_report_lists_failures_cells_put_back_and_submissions_to_review(graded, grades_csv):
    stdout = graded[3].stdout
    assert graded[3].returncode != 0, stdout + graded[3].stderr
    assert "with 2 worker(s), each in a bubblewrap sandbox" in stdout
    failed = {s for s, row in grades_csv.items() if row["grading_status"].startswith("FAILED")}
    assert failed == set(FAILED)
    tail = stdout[stdout.index("FAILED TO GRADE"):]
    assert re.search(r"crash: kernel died: the notebook's Python process ended during cell \d+ \(exit status 1\)",
                     tail), tail
    assert grades_csv["crash"]["score"] == grades_csv["crash"]["raw_score"] == "", "must not look like a 0"
    assert grades_csv["blank"]["score"] in ("0", "0.0") and grades_csv["blank"]["grading_status"] == "ok"
    assert float(grades_csv["reference"]["score"]) == AUTO   # the manually graded answers are not graded yet
    put_back = stdout[stdout.index("Cells put back from the release"):stdout.index("Submissions marked for review")]
    assert put_back.count("\n  ") == 1 and "deleted: " in put_back, put_back
    for item in ("check cell test_ex1_function was deleted", "check cell test_ex4_speedup was deleted",
                 "check cell test_ex2_backward was changed", "locked cell ex2_data was changed", "cells were moved"):
        assert item in put_back, item
    review = stdout[stdout.index("Submissions marked for review"):]
    assert "the answer cell ex1_why is missing" in review
    assert "test_ex2_hidden: hit the time limit of its checks" in review
    for student in ("delegating", "patched", "alwaysequal", "transformer", "crash", "forged", "intruder",
                    "internals", "frame"):
        assert f"  {student}:" in review, student
    assert "check cell test_ex1_function was deleted" in grades_csv["deleted"]["review"]


def test_the_class_saboteur_changed_nothing(graded):
    course, _, _, _, before, after = graded
    assert before == after
    nb = nbformat.read(course / "autograded" / "intruder" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "could not append to ../../../normlab_grading/hidden_checks.py: FileNotFoundError" in printed
    assert f"could not append to {course}/gradebook.db: FileNotFoundError" in printed
    assert "appended to" not in printed.replace("could not append to", "")
    assert "network: [Errno 101] Network is unreachable" in printed
    assert int(re.search(r"forked (\d+) processes", printed).group(1)) < 64
    assert "COURSE_SEED" not in printed and "submitted/reference" not in printed


def _feedback(course: Path, student: str) -> str:
    page = (course / "feedback" / student / mx.ASSIGNMENT / "exercises.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_shows_verdicts_and_leaks_nothing(graded):
    course, _, _, _, _, _ = graded
    from normlab_grading.hidden_checks import COURSE_SEED

    secrets = ["COURSE_SEED", str(COURSE_SEED), f"{COURSE_SEED:_}", "def plan_", "_Draws(", str(course), str(ROOT),
               "/root/.pyenv", "/work/", str(Path(sys.prefix))]
    for student in sorted(EXPECTED_LOST):
        text = _feedback(course, student)
        for secret in secrets:
            if student == "intruder" and secret in (str(course), "/work/"):
                continue  # its own code names the folders it tries to reach (its output is checked above)
            assert secret not in text, (student, secret)
        assert "Score" in text
        # their own errors (the delegating answers raise in the graded copy of normlab_core)
        if student not in ("blank", "forged", "transformer", "frame", "internals", "crash", "delegating"):
            assert "Traceback (most recent call last)" not in text and "----> " not in text, student
    page = (course / "feedback" / "reference" / mx.ASSIGNMENT / "exercises.html").read_text(encoding="utf-8")
    assert "<script" not in page and "cdnjs" not in page   # no MathJax from a CDN: the maths is MathML in the page
    assert page.count("<math ") > 50 and "$(\\dots, D)$" not in page   # prose of exercise 2
    wrong = _feedback(course, "wrong_a")
    assert "def layer_norm_vector" in wrong  # the student's own code
    assert "1(a): layer_norm_vector([1, 2, 3, 4], eps=1e-05): returned" in wrong  # a visible case, with values
    assert "(The visible check in your notebook said: 1(a): layer_norm_vector([1, 2, 3, 4], eps=1e-05) returned" \
        in wrong
    assert "3: plain (without LayerNorm): the magnitude after layer 1 is 0.8265989, expected 1.447405." in wrong
    assert "Graded outside your notebook: 1(b): 2 visible and 8 hidden cases passed" in wrong
    delegating = _feedback(course, "delegating")
    assert "2(a) calls normlab_core's own implementation (normlab_core.rms_norm_backward)" in delegating
    slow = _feedback(course, "slow")
    assert re.search(r"2\(a\): time limit reached in the check cell test_ex2_hidden\. Its checks call "
                     r"rmsnorm_backward 27 times, with a limit of 3 s for all of them together", slow), slow[-2000:]
    assert "`_grader`" not in _feedback(course, "internals")


def test_huge_output_is_cut_with_a_note(graded):
    course = graded[0]
    page = course / "feedback" / "huge" / mx.ASSIGNMENT / "exercises.html"
    assert page.stat().st_size < 1_500_000
    text = _feedback(course, "huge")
    assert "[output cut: this cell wrote 50,000,001 characters to stdout; the first 100,000 are kept]" in text
    log = (course / "logs" / mx.ASSIGNMENT / "huge.log").read_text()
    assert "[log cut: the sandbox wrote 10,000,000 bytes straight to its stdout/stderr]" in log


def test_warnings_show_no_server_paths_and_cost_nothing(graded):
    text = _feedback(graded[0], "warn")
    assert "UserWarning: layer_norm_vector was called" in text
    assert "/home/student/chapter23 /opt/normlab/" in text  # what the student's code sees of the file system


def test_the_grade_command_is_incremental(graded, monkeypatch, capsys):
    from normlab_grading import grade

    course, source, released, _, _, _ = graded
    monkeypatch.chdir(course)
    assert grade.main(["chapter23", "-j", "1"]) == 1  # crash still fails to grade
    assert "grading 0 (new or changed)" in capsys.readouterr().out
    # A resubmission is graded again, and only it; a manual grade given before stays.
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        gb.find_grade("ex5_answer", "exercises", mx.ASSIGNMENT, "wrong_c").manual_score = 3.5
        gb.db.commit()
    nbformat.write(submissions(source, released)["reference"],
                   course / "submitted" / "wrong_c" / mx.ASSIGNMENT / mx.NOTEBOOK)
    assert grade.main(["chapter23", "-j", "1"]) == 1
    out = capsys.readouterr().out
    assert "grading 1 (new or changed)" in out and "graded wrong_c" in out
    assert re.search(rf"^wrong_c\s+{AUTO + 3.5:.1f}\s+{TOTAL:.1f}\s+ok$", out, re.M), out
    assert cell_scores(course, "wrong_c")["ex5_answer"] == (3.5, 4.0)
    # One student on demand, changed or not; the others keep their grades.
    stamp = (course / "feedback" / "reference" / mx.ASSIGNMENT / "exercises.html").stat().st_mtime_ns
    assert grade.main(["chapter23", "--student", "reference"]) == 1
    out = capsys.readouterr().out
    assert "grading 1 (as asked)" in out and "graded reference" in out and "graded blank" not in out
    assert (course / "feedback" / "reference" / mx.ASSIGNMENT / "exercises.html").stat().st_mtime_ns != stamp
    assert re.search(rf"^blank\s+0\.0\s+{TOTAL:.1f}\s+ok$", out, re.M), out


def test_files_handed_in_beside_the_notebook_are_in_its_working_folder(graded):
    assert "my notes: read from the working folder" in _feedback(graded[0], "float64")


def test_reference_runs_all_to_the_end(graded):
    nb = nbformat.read(graded[0] / "autograded" / "reference" / mx.ASSIGNMENT / mx.NOTEBOOK, as_version=4)
    errors = [(i, o.ename) for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    verdicts = [o.text for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stdout"
                and o.text.startswith("Graded outside your notebook")]
    assert len(verdicts) == len(GRADE_IDS)


# --- validate: the book's copy, as JupyterLab's Validate button runs it --------------------------------------

def test_book_copy_validates_like_the_release(tmp_path):
    # The book's tags (raises-exception, remove-output, nbval-skip) must not make nbgrader skip a cell.
    from nbgrader.validator import Validator

    source = nbformat.read(mx.ROOT / "assignments" / "source" / "chapter23" / "exercises.ipynb", as_version=4)
    stored = nbformat.read(STORED, as_version=4)
    answered = nbformat.from_dict(stored)
    answers = solutions(source)
    for cell in answered.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    results = {}
    for name, nb in (("blank", stored), ("answered", answered)):
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
        with contextlib.redirect_stdout(io.StringIO()):
            results[name] = Validator().validate(str(tmp_path / f"{name}.ipynb"))
    assert results["answered"] == {}
    checks = {c.source.strip(): c.metadata["nbgrader"]["grade_id"] for c in source.cells
              if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")}
    failed = {checks[f["source"].strip()] for f in results["blank"].get("failed", []) if f["source"].strip() in checks}
    assert failed == set(auto_cells(source))
    json.dumps(results["blank"])
