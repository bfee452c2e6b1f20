"""Grade every submission of one assignment, with no silent zeros: `make grade` in this folder runs it.

    python -m normlab_grading.grade [ASSIGNMENT]      (from the course folder, default chapter23)

1. scans every submission for code that tampers with grading (normlab_grading.review);
2. autogrades every submission in submitted/, one student at a time, with nbgrader's Python API (what
   `nbgrader autograde --force --student <id>` does), and records why a submission failed to grade (its kernel
   died, a cell ignored the time limit's interrupt, cells or their metadata were changed);
3. checks that every check cell that passed printed the record of its hidden checks (a cell rewritten before
   it ran passes without one);
4. writes feedback (`nbgrader generate_feedback`) and exports the gradebook to grades.csv, with two extra
   columns: `grading_status` (`ok` or `FAILED: <why>`; a failed row's score and raw score are left empty, so
   it cannot pass for a blank submission) and `review` (what the scan found);
5. ends with the list of submissions that failed to grade and why, and exits with status 1 if there is one.

The log of every step is kept in logs/.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from pathlib import Path

import nbformat

from normlab_grading import review
from normlab_grading.feedback import HIDDEN, is_check_cell
from normlab_grading.hidden_checks import MARK

NOTEBOOK = "exercises"

REASONS = [
    ("kernel died", re.compile(r"DeadKernelError|Kernel died|kernel.{0,40}(died|dead|restarted)", re.I)),
    ("timeout: a cell ignored the interrupt",
     re.compile(r"CellTimeoutError|TimeoutError|timed out|Timeout waiting", re.I)),
    ("changed checksums or cell metadata", re.compile(r"checksum|has changed|was changed|modified|cell type|"
                                                      r"missing.{0,40}cell|grade_id", re.I)),
]


def course_api(course: Path):
    """nbgrader's Python API on the course folder, configured by its nbgrader_config.py (run in this process,
    so grading a class starts Python and nbgrader once instead of once per step)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    # nbgrader runs `alembic` by name to set up the gradebook: put this Python's bin folder first on PATH.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def keep_log(log: Path, what: str, result: dict) -> str:
    text = f"$ {what}\n(success: {result.get('success')})\n{result.get('log', '')}\n{result.get('error', '')}"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    return text


def why_failed(output: str) -> str:
    # nbgrader warns about every restored cell ("Attribute 'checksum' ... has changed!") even when grading
    # succeeds: only its error lines say why a submission failed.
    output = "\n".join(line for line in output.splitlines() if "WARNING" not in line and "Warning" not in line)
    for reason, pattern in REASONS:
        if pattern.search(output):
            return reason
    errors = [line.strip() for line in output.splitlines() if "ERROR" in line or "Error" in line]
    return errors[-1][:200] if errors else "unknown (see the log)"


def missing_hidden_records(graded: Path) -> list[str]:
    """Check cells with hidden tests that passed without printing the hidden checks' record."""
    nb = nbformat.read(graded, as_version=4)
    missing = []
    for cell in nb.cells:
        if not is_check_cell(cell) or not HIDDEN.search(cell.source):
            continue
        outs = cell.get("outputs", [])
        failed = any(o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr") for o in outs)
        text = "".join(o.get("text", "") for o in outs if o.output_type == "stream")
        gid = cell.metadata["nbgrader"]["grade_id"]
        if not failed and f"{MARK}: {gid})" not in text:
            missing.append(gid)
    return missing


def export(course: Path, status: dict[str, str], flags: dict[str, list[str]], assignment: str) -> Path:
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    out = course / "grades.csv"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    fields = list(rows[0].keys()) if rows else ["assignment", "student_id", "score", "max_score"]
    seen = {(r.get("assignment"), r.get("student_id")) for r in rows}
    for student in status:
        if (assignment, student) not in seen:
            rows.append({"assignment": assignment, "student_id": student})
    for row in rows:
        if row.get("assignment") != assignment:
            continue
        st = status.get(row["student_id"], "not submitted")
        row["grading_status"] = st
        row["review"] = "; ".join(flags.get(row["student_id"], []))
        if st.startswith("FAILED"):
            row["score"] = row["raw_score"] = ""
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields + ["grading_status", "review"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return out


def grade(course: Path, assignment: str) -> int:
    course = course.resolve()
    log_dir = course / "logs"
    submitted = sorted(p.parent.name for p in (course / "submitted").glob(f"*/{assignment}"))
    if not submitted:
        print(f"no submissions in {course / 'submitted'}/*/{assignment}")
        return 1
    print(f"grading {len(submitted)} submissions of {assignment}")

    flags: dict[str, list[str]] = {}
    for student in submitted:
        hits = [h for nb in sorted((course / "submitted" / student / assignment).glob("*.ipynb"))
                for h in review.scan_file(nb)]
        if hits:
            flags[student] = hits

    api = course_api(course)
    status: dict[str, str] = {}
    for student in submitted:
        result = api.autograde(assignment, student, force=True, create=True)
        text = keep_log(log_dir / f"autograde-{student}.log", f"nbgrader autograde {assignment} --student {student}",
                        result)
        graded = course / "autograded" / student / assignment / f"{NOTEBOOK}.ipynb"
        if not result.get("success") or not graded.is_file():
            status[student] = f"FAILED: {why_failed(text)}"
            continue
        missing = missing_hidden_records(graded)
        status[student] = "ok" if not missing else (
            f"FAILED: the hidden checks of {len(missing)} check cell(s) did not run "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): the cells were rewritten before "
            "they ran; see the review list")

    result = api.generate_feedback(assignment, force=True)
    keep_log(log_dir / "feedback.log", f"nbgrader generate_feedback {assignment}", result)
    csv_path = export(course, status, flags, assignment)

    with open(csv_path, newline="") as fh:
        scores = {r["student_id"]: r for r in csv.DictReader(fh) if r["assignment"] == assignment}
    print(f"\n{'student':<20} {'score':>7} {'max':>5}  status")
    for student in submitted:
        row = scores.get(student, {})
        print(f"{student:<20} {row.get('score', ''):>7} {row.get('max_score', ''):>5}  {status[student]}")
    print(f"\ngrades: {csv_path}   feedback: {course / 'feedback'}   logs: {log_dir}")
    if flags:
        print("\nSubmissions to look at (python -m normlab_grading.review lists the same):")
        for student, hits in flags.items():
            print(f"  {student}:")
            for hit in hits:
                print(f"      {hit}")
    failed = {s: st for s, st in status.items() if st.startswith("FAILED")}
    if failed:
        print(f"\n{len(failed)} submission(s) FAILED TO GRADE (their grades.csv rows have no score):")
        for student, st in failed.items():
            print(f"  {student}: {st[len('FAILED: '):]}   log: {log_dir / f'autograde-{student}.log'}")
        return 1
    print("\nevery submission was graded")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    assignment = args[0] if args else "chapter23"
    return grade(Path.cwd(), assignment)


if __name__ == "__main__":
    sys.exit(main())
