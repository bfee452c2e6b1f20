"""Grades for a learning platform: `make grades-lms` (a Canvas gradebook CSV and a Moodle grade-import CSV).

    python scripts/grades_lms.py [--grades assignments/grades.csv] [--out _build/lms] [--roster roster.csv]

Reads the course's grades.csv (written by `make grade`: one row per student and assignment, with `score`,
`max_score` and `grading_status`) and writes two files into --out:

* canvas-gradebook.csv -- the columns of a Canvas gradebook export, which Canvas' *Import* accepts back:
  `Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, then one column per assignment. The second row is
  `Points Possible`, with each assignment's maximum. Canvas matches a row to a student by `ID` (Canvas' own
  number), `SIS User ID` or `SIS Login ID`; without a roster the student's login (their id in nbgrader and on
  the hub) fills `SIS Login ID`.
* moodle-grades.csv -- for Moodle's *Import > CSV file*: `Username`, `Email address`, then one column per
  assignment. On import, map "Identify user by" to Username or Email address and each assignment column to a
  grade item whose maximum grade is the assignment's points (Moodle refuses grades above the item's maximum).

A submission that failed to grade (grading_status `FAILED: ...`) has an empty score in grades.csv and an empty
cell here: both platforms leave an empty cell alone, so nothing is overwritten with a made-up 0.

--roster names a CSV with a `student_id` column and any of `canvas_id`, `sis_user_id`, `sis_login_id`,
`section`, `email`, `name` (e.g. made from the platform's own export); its values win over grades.csv's.

A row whose student id breaks the id rule (assignments/normlab_grading/ids.py: 1 to 64 characters from
A-Z a-z 0-9 . _ @ + -, starting with a letter or a digit) is left out of both files and named; the others are
written, and the command ends with status 1.

Every text cell that a spreadsheet would read as a formula (it starts with =, +, -, @, a tab or a carriage
return) gets a leading apostrophe, so that a name such as `=HYPERLINK(...)` stays text. Scores are written
as plain numbers with a decimal point.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "assignments") not in sys.path:
    sys.path.insert(0, str(ROOT / "assignments"))
from normlab_grading import ids  # noqa: E402 - the course's id rule, from the course folder

CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_FIXED = ["Username", "Email address"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ROSTER_FIELDS = ("canvas_id", "sis_user_id", "sis_login_id", "section", "email", "name")


def inert(text: str) -> str:
    """`text` as a spreadsheet keeps it: a leading apostrophe when its first character would start a formula."""
    text = "" if text is None else str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def number(value: str) -> str:
    """A score as a plain decimal number ('' stays ''); raises ValueError for anything else."""
    if value is None or str(value).strip() == "":
        return ""
    x = float(value)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"score: got {value!r}, expected a finite number or an empty cell")
    return f"{x:g}" if x == int(x) else f"{x:.6g}"


def read_grades(path: Path, refused: list | None = None) -> tuple[list[str], dict[str, dict]]:
    """(assignments in order of first appearance, {student: {"row": first row, assignment: (score, max)}}); the
    ids that break the id rule are left out, and appended to `refused`."""
    if not path.is_file():
        raise FileNotFoundError(f"grades: {path} does not exist; run `make grade` first (it writes grades.csv)")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    needed = {"assignment", "student_id", "score", "max_score"}
    if rows and not needed <= set(rows[0]):
        raise ValueError(f"grades: {path} lacks the columns {sorted(needed - set(rows[0]))}; "
                         "expected the grades.csv that `make grade` writes")
    assignments: list[str] = []
    students: dict[str, dict] = {}
    for row in rows:
        a, s = row["assignment"], row["student_id"]
        if a not in assignments:
            assignments.append(a)
        if not ids.usable(s):
            if refused is not None and s not in refused:
                refused.append(s)
            continue
        entry = students.setdefault(s, {"row": row})
        score = "" if row.get("grading_status", "ok").startswith("FAILED") else number(row["score"])
        entry[a] = (score, number(row["max_score"]))
    return assignments, students


def read_roster(path: Path | None) -> dict[str, dict]:
    if path is None:
        return {}
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if rows and "student_id" not in rows[0]:
        raise ValueError(f"roster: {path} has no student_id column (got {list(rows[0])})")
    return {r["student_id"]: {k: r[k] for k in ROSTER_FIELDS if r.get(k)} for r in rows}


def points_possible(assignments: list[str], students: dict[str, dict]) -> dict[str, str]:
    out = {}
    for a in assignments:
        maxima = {students[s][a][1] for s in students if a in students[s]} - {""}
        if len(maxima) != 1:
            raise ValueError(f"max_score of {a!r}: got {sorted(maxima)}, expected one value for every student")
        out[a] = maxima.pop()
    return out


def display_name(row: dict, extra: dict, student: str) -> str:
    if extra.get("name"):
        return extra["name"]
    last, first = (row.get("last_name") or "").strip(), (row.get("first_name") or "").strip()
    if last and first:
        return f"{last}, {first}"
    return last or first or student


def canvas_rows(assignments, students, roster) -> list[list[str]]:
    possible = points_possible(assignments, students)
    rows = [CANVAS_FIXED + assignments, ["Points Possible", "", "", "", "", *(possible[a] for a in assignments)]]
    for s in sorted(students):
        extra = roster.get(s, {})
        row = students[s]["row"]
        fixed = [display_name(row, extra, s), extra.get("canvas_id", ""), extra.get("sis_user_id", ""),
                 extra.get("sis_login_id", s), extra.get("section", "")]
        rows.append([inert(v) for v in fixed] + [students[s].get(a, ("", ""))[0] for a in assignments])
    return rows


def moodle_rows(assignments, students, roster) -> list[list[str]]:
    rows = [MOODLE_FIXED + assignments]
    for s in sorted(students):
        extra = roster.get(s, {})
        email = extra.get("email") or students[s]["row"].get("email") or ""
        rows.append([inert(s), inert(email)] + [students[s].get(a, ("", ""))[0] for a in assignments])
    return rows


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # UTF-8 with a byte-order mark: both platforms read it, and Excel then shows accents right.
    with open(path, "w", newline="", encoding="utf-8-sig") as fh:
        csv.writer(fh, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows(rows)
    return path


def export(grades: Path, out: Path, roster: Path | None = None, refused: list | None = None) -> tuple[Path, Path]:
    assignments, students = read_grades(grades, refused)
    extra = read_roster(roster)
    return (write_csv(out / "canvas-gradebook.csv", canvas_rows(assignments, students, extra)),
            write_csv(out / "moodle-grades.csv", moodle_rows(assignments, students, extra)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grades", type=Path, default=ROOT / "assignments" / "grades.csv")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "lms")
    parser.add_argument("--roster", type=Path, default=None)
    args = parser.parse_args(argv)
    refused: list = []
    try:
        canvas, moodle = export(args.grades, args.out, args.roster, refused)
    except (OSError, ValueError) as exc:
        print(f"grades-lms: {exc}", file=sys.stderr)
        return 2
    print(f"Canvas gradebook: {canvas}\nMoodle grade import: {moodle}")
    for s in refused:
        print(f"grades-lms: left out of both files: {ids.problem(s)}", file=sys.stderr)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
