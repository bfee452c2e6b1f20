"""One submission costs at most its own grade: whatever it holds, every other student is graded and gets feedback.

A copy of the course with an honest reference, an honest student whose output and source hold lone surrogates
(`b"caf\\xe9".decode("utf-8", "surrogateescape")` printed; "\\udce9" in a comment), and hostile submissions of
the grader's inputs: a file of arbitrary bytes, a notebook in Latin-1, and notebooks whose code writes into the
grader's channel a record nested 200 000 levels deep, a record of NaNs under odd keys, and 3 MB of nesting. All
are graded by the single-worker path (`-j 1`, as with J=1, STUDENT=... or one changed submission): the honest
ones score what they deserve and get their feedback page; each hostile one is FAILED with its reason, alone.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os

import pytest
from grading_support import auto_score, mx, released_course, require_sandbox, shared_tmp, solutions, structure
from normlab_grading import grade

# the grader's channel: the one pipe the runner writes to besides its stdout and stderr
CHANNEL = ("import os, stat\n"
           "def _pipe(fd):\n"
           "    try:\n"
           "        return stat.S_ISFIFO(os.fstat(fd).st_mode) and os.get_blocking(fd) is not None\n"
           "    except OSError:\n"
           "        return False\n"
           "_fd = [fd for fd in range(3, 64) if _pipe(fd)][-1]\n")
HOSTILE_CELLS = {
    "deep": CHANNEL + "import os\nos.write(_fd, b'[' * 200000 + b']' * 200000 + b'\\n')\n",
    "nankeys": CHANNEL + ("import os\n"
                          "os.write(_fd, b'{\"cell\": NaN, \"NaN\": [NaN, Infinity], \"\\\\udce9\": -Infinity}\\n')\n"),
    "wide": CHANNEL + "import os\nos.write(_fd, b'{\"cell\": ' + b'[' * 900 + b'1' + b']' * 900 + b'}\\n' * 1500)\n",
}
BYPASS = """
import gc
_capture = [o for o in gc.get_objects() if type(o).__name__ == "Capture"][0]   # the runner's, for this cell
_capture.out.append({"output_type": "stream", "name": "stdout", "text": "y" * 3_000_000})
_capture.out.append({"output_type": "display_data", "data": {"image/png": "A" * 4_000_000}, "metadata": {}})
"""
ESCAPED_ID = "\x1b[2Jwiped"        # a terminal escape in a student id (a folder name)
FORMULA_ID = "=HYPERLINK(1)"       # a spreadsheet formula as a student id
HONEST = ("reference", "surrogate", "beside", "bypass")   # (the two ids above break the id rule: refused)


def _notebook(release: dict, answers: dict, extra: str | None = None, comment: str = "") -> dict:
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        gid = structure.grade_id(cell)
        if gid in answers and cell["cell_type"] == "code":
            cell["source"] = answers[gid] + comment
            if gid == "ex1_function" and extra:
                cell["source"] += "\n" + extra
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()
    course, source, _ = released_course(tmp_path_factory.mktemp("isolation") / "course", shared_tmp(tmp_path_factory))
    release = structure.load(course / "release" / mx.ASSIGNMENT / mx.NOTEBOOK)
    answers = solutions(source)

    def folder(student):
        path = course / "submitted" / student / mx.ASSIGNMENT
        path.mkdir(parents=True)
        return path / mx.NOTEBOOK

    folder("reference").write_text(json.dumps(_notebook(release, answers)), encoding="utf-8")
    printed = 'print(b"caf\\xe9".decode("utf-8", "surrogateescape"))'
    # json.dumps writes the lone surrogate of the comment as the escape \udce9, as a notebook file can hold it
    folder("surrogate").write_text(json.dumps(_notebook(release, answers, printed, comment="\n# caf\udce9\n")),
                                   encoding="utf-8")
    folder("bytes").write_bytes(bytes(range(256)) * 40)
    folder("latin1").write_bytes(json.dumps(_notebook(release, answers, comment="\n# café\n"),
                                            ensure_ascii=False).encode("latin-1"))
    for student, code in HOSTILE_CELLS.items():
        folder(student).write_text(json.dumps(_notebook(release, answers, code)), encoding="utf-8")
    # the instructor's notebook with the solutions, linked in place of the notebook, and beside one
    folder("linked").symlink_to(course / "source" / mx.ASSIGNMENT / mx.NOTEBOOK)
    folder("beside").write_text(json.dumps(_notebook(release, answers)), encoding="utf-8")
    (course / "submitted" / "beside" / mx.ASSIGNMENT / "notes.txt").symlink_to(
        course / "source" / mx.ASSIGNMENT / mx.NOTEBOOK)
    folder("bypass").write_text(json.dumps(_notebook(release, answers, BYPASS)), encoding="utf-8")
    for student in (ESCAPED_ID, FORMULA_ID):
        folder(student).write_text(json.dumps(_notebook(release, answers)), encoding="utf-8")
    before = os.getcwd()
    os.chdir(course)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = grade.main([mx.ASSIGNMENT, "-j", "1"])
    finally:
        os.chdir(before)
    with open(course / "grades.csv", newline="", encoding="utf-8") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    return course, code, rows, out.getvalue()


def test_honest_students_are_graded_and_get_feedback(graded):
    course, code, rows, _ = graded
    assert code == 1   # some submissions failed to grade
    for student in HONEST:
        row = rows[student]
        assert row["grading_status"] == "ok", row
        assert float(row["score"]) == auto_score(), row   # every automatic point of the source notebook
        page = course / "feedback" / student / mx.ASSIGNMENT / "exercises.html"
        assert page.is_file(), student
    text = (course / "feedback" / "surrogate" / mx.ASSIGNMENT / "exercises.html").read_text(encoding="utf-8")
    assert "caf\ufffd" in text   # the undecodable byte is shown as a replacement character


def test_each_hostile_submission_fails_alone_with_its_reason(graded):
    _, _, rows, _ = graded
    want = {"bytes": "the notebook cannot be read as a notebook", "latin1": "the notebook cannot be read",
            "deep": "tampering", "nankeys": "tampering", "wide": "tampering",
            "linked": "the submission's notebook is a symbolic link"}
    for student, reason in want.items():
        status = rows[student]["grading_status"]
        assert status.startswith("FAILED: ") and reason in status, (student, status)
        assert rows[student]["score"] == "", rows[student]


def test_a_second_run_grades_nothing_and_the_single_path_survives_a_hostile_student(graded, capsys):
    course, _, _, _ = graded
    before = os.getcwd()
    os.chdir(course)
    try:
        assert grade.main([mx.ASSIGNMENT]) == 1
        assert "grading 0 (new or changed)" in capsys.readouterr().out
        assert grade.main([mx.ASSIGNMENT, "--student", "deep,surrogate"]) == 1
        out = capsys.readouterr().out
    finally:
        os.chdir(before)
    assert "graded surrogate" in out and "graded deep" in out, out


def test_a_link_beside_the_notebook_is_not_followed(graded):
    course = graded[0]
    solutions_text = (course / "source" / mx.ASSIGNMENT / mx.NOTEBOOK).read_text(encoding="utf-8")
    for where in ("autograded", "feedback"):
        folder = course / where / "beside" / mx.ASSIGNMENT
        assert folder.is_dir()
        assert not (folder / "notes.txt").exists(), where
        for path in folder.iterdir():
            assert path.read_bytes() != solutions_text.encode(), path


def test_outputs_written_into_the_capture_directly_are_cut_by_the_grader(graded):
    course = graded[0]
    page = course / "feedback" / "bypass" / mx.ASSIGNMENT / "exercises.html"
    assert page.stat().st_size < 1_500_000, page.stat().st_size
    text = page.read_text(encoding="utf-8")
    assert "kept for each cell]" in text and "display output(s) left out: over the size cap" in text


def test_student_chosen_text_neither_drives_the_terminal_nor_becomes_a_formula(graded):
    course, _, rows, out = graded
    assert "\x1b" not in out and "refused: submitted/\\x1b[2Jwiped/" in out
    assert f"refused: submitted/{FORMULA_ID}/" in out   # ids outside the rule (normlab_grading/ids.py)
    with open(course / "grades.csv", encoding="utf-8") as fh:
        raw = fh.read()
    assert "\x1b" not in raw and "wiped" not in raw and "HYPERLINK" not in raw


def test_a_removed_submission_keeps_no_score_in_grades_csv(graded):
    import shutil

    course = graded[0]
    shutil.rmtree(course / "submitted" / "beside")   # graded above (full automatic points), then taken out of the class
    before = os.getcwd()
    os.chdir(course)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            grade.main([mx.ASSIGNMENT])
    finally:
        os.chdir(before)
    with open(course / "grades.csv", newline="", encoding="utf-8") as fh:
        row = {r["student_id"]: r for r in csv.DictReader(fh)}["beside"]
    assert row["score"] == "" and row["grading_status"].startswith("no submission: removed"), row
