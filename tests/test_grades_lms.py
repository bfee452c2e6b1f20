"""`make grades-lms`: the Canvas gradebook CSV and the Moodle grade-import CSV, checked against the formats' rules.

Canvas (its gradebook export, which its import reads back): the header is Student, ID, SIS User ID, SIS Login ID,
Section, then one column per assignment; the second row is "Points Possible" with each assignment's maximum and
nothing in the five fixed columns; then one row per student. Moodle (Import > CSV file): a header naming a user
field (Username, Email address) and one column per grade item, then one row per student, each grade a number
no larger than the item's maximum. Both: no text cell that a spreadsheet would run as a formula.
The input is a grades.csv in the form `make grade` writes (nbgrader's CSV export columns, then grading_status and
review), made here with hostile names.
"""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("grades_lms", ROOT / "scripts" / "grades_lms.py")
lms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lms)

NBGRADER_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                    "raw_score", "late_submission_penalty", "score", "max_score", "grading_status", "review"]
FORMULA = ("=", "+", "-", "@", "\t", "\r")

STUDENTS = [
    # student_id, last, first, email, score, status
    ("ada", "Lovelace", "Ada", "ada@example.org", "29.0", "ok"),
    ("bea", "=HYPERLINK(\"http://evil.example\",\"click\")", "Bea", "+bea@example.org", "12.5", "ok"),
    ("cy", "", "@SUM(A1:A9)", "-cy@example.org", "0.0", "ok"),
    ("dee", "O'Neil, Jr.", "Dee", "dee@example.org", "", "FAILED: its Python process died"),
    ("eve", "\tTab", "\rReturn", "eve@example.org", "3.0", "ok"),
]


def write_grades(path: Path, students=STUDENTS, assignments=(("chapter23", "29.0"),)) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=NBGRADER_COLUMNS)
        w.writeheader()
        for name, top in assignments:
            for sid, last, first, email, score, status in students:
                w.writerow({"assignment": name, "duedate": "", "timestamp": "2026-01-01 10:00:00", "student_id": sid,
                            "last_name": last, "first_name": first, "email": email, "raw_score": score,
                            "late_submission_penalty": "0.0", "score": score, "max_score": top,
                            "grading_status": status, "review": ""})
    return path


def read(path: Path) -> list[list[str]]:
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "UTF-8 with a byte-order mark (what both platforms and Excel read)"
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.reader(fh))


def assert_no_formula(rows: list[list[str]], score_columns: set[int]) -> None:
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if c in score_columns and r > 0 and cell != "":
                float(cell)  # a score is a plain number (a leading '-' would be a number, not a formula)
                assert not cell.startswith(("=", "+", "@")), (r, c, cell)
            else:
                assert not cell.startswith(FORMULA), f"row {r}, column {c}: {cell!r} would run as a formula"


@pytest.fixture
def exported(tmp_path):
    grades = write_grades(tmp_path / "grades.csv")
    canvas, moodle = lms.export(grades, tmp_path / "out")
    return read(canvas), read(moodle)


def test_canvas_header_points_possible_and_one_row_per_student(exported):
    canvas, _ = exported
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "chapter23"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "29"]
    body = canvas[2:]
    assert [row[3] for row in body] == sorted(s[0] for s in STUDENTS)   # SIS Login ID: the hub login
    assert all(len(row) == len(canvas[0]) for row in body)
    by_login = {row[3]: row for row in body}
    for sid, _last, _first, _email, score, status in STUDENTS:
        cell = by_login[sid][5]
        if status.startswith("FAILED"):
            assert cell == ""        # no made-up 0 for a submission that failed to grade
        else:
            assert float(cell) == float(score)
            assert 0 <= float(cell) <= 29
    assert by_login["ada"][0] == "Lovelace, Ada"
    assert by_login["dee"][0] == "O'Neil, Jr., Dee"   # a comma in a name stays inside its quoted cell


def test_moodle_header_and_rows_keyed_by_username_and_email(exported):
    _, moodle = exported
    assert moodle[0] == ["Username", "Email address", "chapter23"]
    body = moodle[1:]
    assert [row[0] for row in body] == sorted(s[0] for s in STUDENTS)
    by_user = {row[0]: row for row in body}
    assert by_user["ada"][1] == "ada@example.org"
    assert by_user["ada"][2] == "29" and by_user["bea"][2] == "12.5" and by_user["dee"][2] == ""


def test_no_cell_runs_as_a_formula(exported):
    canvas, moodle = exported
    assert_no_formula(canvas, score_columns={5})
    assert_no_formula(moodle, score_columns={2})
    names = {row[3]: row[0] for row in canvas[2:]}
    assert names["bea"] == "'=HYPERLINK(\"http://evil.example\",\"click\"), Bea"
    assert names["cy"] == "'@SUM(A1:A9)"
    emails = {row[0]: row[1] for row in moodle[1:]}
    assert emails["bea"] == "'+bea@example.org" and emails["cy"] == "'-cy@example.org"


def test_each_assignment_has_its_own_column_and_points(tmp_path):
    grades = write_grades(tmp_path / "grades.csv", STUDENTS[:2], (("chapter23", "29.0"), ("chapter23_part1", "17.5")))
    canvas, moodle = (read(p) for p in lms.export(grades, tmp_path / "out"))
    assert canvas[0][5:] == ["chapter23", "chapter23_part1"] and canvas[1][5:] == ["29", "17.5"]
    assert moodle[0][2:] == ["chapter23", "chapter23_part1"]
    assert len(canvas) == 2 + 2 and len(moodle) == 1 + 2


def test_a_roster_fills_canvas_ids_sections_and_emails(tmp_path):
    grades = write_grades(tmp_path / "grades.csv", STUDENTS[:1])
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,canvas_id,sis_user_id,section,email\nada,4711,S-0001,=Section A,a@uni.example\n")
    canvas, moodle = (read(p) for p in lms.export(grades, tmp_path / "out", roster))
    assert canvas[2] == ["Lovelace, Ada", "4711", "S-0001", "ada", "'=Section A", "29"]
    assert moodle[1] == ["ada", "a@uni.example", "29"]


@pytest.mark.parametrize("bad", ["=1+1", "abc", "nan", "inf"])
def test_a_score_that_is_not_a_number_is_refused(tmp_path, bad):
    rows = [(*STUDENTS[0][:4], bad, "ok")]
    grades = write_grades(tmp_path / "grades.csv", rows)
    with pytest.raises(ValueError):
        lms.export(grades, tmp_path / "out")


def test_maxima_that_disagree_are_refused(tmp_path):
    grades = write_grades(tmp_path / "grades.csv", STUDENTS[:1])
    with open(grades, "a", newline="") as fh:
        csv.writer(fh).writerow(["chapter23", "", "", "zed", "", "", "", "1", "0", "1", "30.0", "ok", ""])
    with pytest.raises(ValueError, match="max_score of 'chapter23'"):
        lms.export(grades, tmp_path / "out")


def test_command_line_says_what_is_missing(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "grades_lms.py"), "--grades",
                           str(tmp_path / "none.csv"), "--out", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "run `make grade` first" in proc.stderr
    grades = write_grades(tmp_path / "grades.csv")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "grades_lms.py"), "--grades", str(grades),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "canvas-gradebook.csv").is_file() and (tmp_path / "out" / "moodle-grades.csv").is_file()
