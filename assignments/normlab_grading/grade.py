"""Grade the submissions of one assignment, each in a sandbox, judged outside the student's code.

    python -m normlab_grading.grade [ASSIGNMENT] [-j N] [--student ID ...] [--all] [--unsafe-no-sandbox]

(`make grade` in the course folder runs it; `make grade J=4 STUDENT=alice FORCE=1` passes the options.)
For every submission in submitted/<student>/<assignment>/ that is new or changed since it was last graded:

1. the notebook is put back into the release's shape (`structure`): deleted or changed check cells and
   locked cells come back from the release; what cannot be put back marks the submission for review;
2. its code cells run in a fresh bubblewrap sandbox (`sandbox`, `runner`), then the sandbox calls the
   student's functions on the inputs of every check (visible and hidden) and sends back what they returned
   as plain data;
3. this process judges those results against its references (`hidden_checks`) and writes the verdict of
   every check cell as that cell's output; nbgrader then records the scores in the gradebook from those
   outputs (its own autograde step, without executing anything) and writes feedback;
4. grades.csv gets every student's score, `grading_status` (`ok`, or `FAILED: <why>` with the score left
   empty) and `review` (what to look at), rewritten while the run goes on (`ProgressExport`) and at its end;
5. the report lists scores, check cells put back, submissions marked for review, and last the submissions
   that failed to grade (exit status 1 if there is one).

A folder submitted/<student>/ whose name breaks the student-id rule (`ids.py`) is refused before anything
else: it is named in the report, not graded, and the run ends with status 1.

Submissions are graded by N worker processes at once (default: one per core); each worker builds the
checks' inputs and references once. Unchanged submissions are skipped (their fingerprint, and that of the
grader, are kept in logs/<assignment>/<student>.json); `--student` regrades the named students, `--all`
everyone. Without a working sandbox it refuses to run, unless given `--unsafe-no-sandbox`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import fcntl
import glob
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path

from normlab_grading import bounded, draws, graded_core, hidden_checks, ids, inert, review, sandbox, structure
from normlab_grading.data import visible_data

NOTEBOOK = "exercises"
STAGED = ".staged"       # what nbgrader reads in place of submitted/ (the rebuilt notebook, with its outputs)
PACKAGE = Path(__file__).resolve().parent


# --- text a student chose, on a terminal and in a spreadsheet -----------------------------------------------

def printable(text) -> str:
    """`text` with control characters (terminal escapes, carriage returns, bidirectional overrides) written as
    escapes, so that a student id, a file name or a status cannot move the cursor or recolour the terminal."""
    text = structure.plain(str(text))
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


def printable_log(text) -> str:
    """A log's text, line by line `printable`: escapes (clear screen, OSC 52 clipboard writes, carriage returns
    that overwrite a line) are shown as text, so `cat` or `less -R` of the log draws only what it says."""
    return "\n".join(printable(line.replace("\t", "    ")) for line in str(text).split("\n"))


def csv_cell(text) -> str:
    """A grades.csv cell that a spreadsheet shows as text: printable, and never read as a formula."""
    text = printable(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "|", "%") else text


# --- configuration ----------------------------------------------------------------------------------------

def load_config(course: Path):
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


def limits_from(config) -> sandbox.Limits:
    section = dict(config.NormlabGrading) if "NormlabGrading" in config else {}
    if "cell_seconds" not in section and "timeout" in config.Execute:
        section["cell_seconds"] = config.Execute.timeout
    return sandbox.Limits.from_config(section)


def secret_from(config) -> str | None:
    """The course secret that makes the hidden inputs differ per student (`c.NormlabGrading.student_secret`)."""
    if "NormlabGrading" in config and config.NormlabGrading.get("student_secret"):
        return str(config.NormlabGrading.student_secret)
    return None


def student_plans(context, check_ids, secret: str | None, student: str, shared: dict, submission: str = "") -> dict:
    """The plans of one student's check cells: `shared` (built once, for the course seed) without a secret and
    a submission fingerprint; otherwise plans on that submission's own hidden inputs (draws.student_seed)."""
    if not secret and not submission:
        return shared
    seed = draws.student_seed(context.seed, secret, student, submission)
    return hidden_checks.plans(hidden_checks.Context(seed=seed, data=context.data), check_ids)


def seed_from(config) -> int:
    if "NormlabGrading" in config and "seed" in config.NormlabGrading:
        return int(config.NormlabGrading.seed)
    return hidden_checks.COURSE_SEED


def _hash_files(paths) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(os.fsencode(path.name))
        h.update(path.read_bytes() if path.is_file() else b"-")
    return h.hexdigest()


def _sources(package: Path) -> list[Path]:
    """Every Python file of a package, its subpackages included, in a fixed order."""
    return sorted((p for p in package.rglob("*.py") if "__pycache__" not in p.parts),
                  key=lambda p: p.relative_to(package).as_posix())


def grader_files(package: Path = PACKAGE) -> list[Path]:
    """The files of the grader: every Python file of this package, found by listing it (a new module counts
    without being named anywhere)."""
    return _sources(package)


def grader_fingerprint(course: Path, assignment: str, unsafe: bool, package: Path = PACKAGE) -> str:
    """Changes whenever anything that could change a grade changes: the grading code, the course
    configuration, the released notebook, normlab_core, and whether a sandbox is used."""
    h = hashlib.sha256()
    for root, files in ((package, grader_files(package)), (sandbox.core_package(), _sources(sandbox.core_package()))):
        for path in files:
            h.update(os.fsencode(path.relative_to(root).as_posix()) + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    h.update(_hash_files([course / "nbgrader_config.py", course / "release" / assignment / f"{NOTEBOOK}.ipynb"])
             .encode())
    return h.hexdigest() + ("-unsafe" if unsafe else "")


def submission_fingerprint(folder: Path) -> str:
    return _hash_files(sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()))


# --- one submission, in a worker ----------------------------------------------------------------------------

class Worker:
    """What a worker builds once: the release, the checks' inputs and references, the sandbox command."""

    def __init__(self, course: Path, assignment: str, unsafe: bool, limits: sandbox.Limits, seed: int, jobs: int):
        self.course, self.assignment, self.unsafe, self.limits, self.jobs = course, assignment, unsafe, limits, jobs
        self.release = structure.load(course / "release" / assignment / f"{NOTEBOOK}.ipynb")
        ids = [structure.grade_id(c) for c in self.release["cells"] if structure.is_check(c)]
        self.check_ids = ids
        self.context = hidden_checks.Context(seed=seed, data=visible_data(self.release))
        self.plans = hidden_checks.plans(self.context, ids)
        self.secret = secret_from(load_config(course))

    def grade(self, student: str) -> dict:
        start = time.monotonic()
        folder = self.course / "submitted" / student / self.assignment
        path = folder / f"{NOTEBOOK}.ipynb"
        result = {"student": student, "put_back": [], "review": [], "verdicts": {}, "notebook": None,
                  "status": "ok", "log": "", "seconds": 0.0}
        if folder.is_symlink() or path.is_symlink():
            result["status"] = (f"FAILED: the submission's {'folder' if folder.is_symlink() else 'notebook'} is a "
                                "symbolic link (to a file that is not the student's); it is not followed")
            return _timed(result, start)
        if not path.is_file():
            others = sorted(p.name for p in folder.glob("*.ipynb"))
            result["status"] = (f"FAILED: no {NOTEBOOK}.ipynb in the submission"
                                + (f" (found {', '.join(others[:3])})" if others else ""))
            return _timed(result, start)
        stamp = timestamp_problem(folder / "timestamp.txt")
        if stamp:
            result["status"] = f"FAILED: {stamp}"
            return _timed(result, start)
        try:
            submitted = structure.load(path)
        except structure.Unreadable as exc:
            result["status"] = f"FAILED: the notebook {exc}"
            return _timed(result, start)
        result["review"] += bounded.cap_cells(submitted)
        result["review"] += review.scan_cells(submitted["cells"])
        restored = structure.restore(submitted, self.release)
        result["put_back"], result["review"] = restored.put_back, result["review"] + restored.review
        cells = [{"index": i, "source": c["source"]} for i, c in enumerate(restored.cells)
                 if c.get("cell_type") == "code"]
        present = [structure.grade_id(c) for c in restored.cells if structure.is_check(c)]
        # Hidden inputs drawn afresh for every hand-in (the same for the same files), so that a table of inputs
        # and answers gathered from earlier feedback is worth nothing.
        mine = student_plans(self.context, self.check_ids, self.secret, student, self.plans,
                             submission_fingerprint(folder))
        plans = {gid: mine[gid] for gid in present if gid in mine}
        budget = self.limits.check_seconds
        files, left_out = own_files(folder)
        if left_out:
            result["review"].append(
                f"files of the submission not given to the notebook ({len(left_out)}; at most {OWN_FILES_COUNT} "
                f"files of {OWN_FILE_CAP // 1_000_000} MB each, {OWN_FILES_CAP // 1_000_000} MB in all, are): "
                + ", ".join(printable(n) for n in left_out[:5]))
        run = sandbox.run_submission(cells, lambda records: hidden_checks.request(plans, budget), self.limits,
                                     sandbox=not self.unsafe, assignment=self.assignment, concurrent=self.jobs,
                                     files=files)
        verdicts = {gid: hidden_checks.judge(plan, run.groups.get(gid), budget) for gid, plan in plans.items()}
        if run.status != "ok":
            what = {"died": "kernel died", "timeout": "timeout", "tampered": "tampering"}[run.status]
            result["status"] = f"FAILED: {what}: {run.reason}"
        # An honest answer can lose points at a limit of the sandbox as a whole (memory, processes): look.
        result["review"] += run.hits
        result["confinement"] = run.confinement
        for v in verdicts.values():
            if v.timed_out:
                result["review"].append(f"{v.grade_id}: hit the time limit of its checks")
        for index, record in run.cells.items():
            if record.get("timed_out"):
                result["review"].append(f"cell {index}: stopped at the time limit of {self.limits.cell_seconds:g} s")
        parts = {gid: plan.part for gid, plan in plans.items()}
        result["notebook"] = compose(self.release, restored.cells, run, verdicts, parts, self.limits,
                                     result["review"])
        result["verdicts"] = {gid: {"passed": v.passed, "message": v.message} for gid, v in verdicts.items()}
        result["log"] = run.log
        result["sandbox_seconds"] = run.seconds
        return _timed(result, start)


NOT_THE_STUDENTS = {"timestamp.txt", "submission_secret.txt"}  # written by nbgrader's exchange, not by the student
OWN_FILES_CAP = 20_000_000   # bytes of all the files handed in beside the notebook together
OWN_FILE_CAP = 5_000_000     # bytes of one of them
OWN_FILES_COUNT = 20         # how many of them


def own_files(folder: Path) -> tuple[list, list]:
    """The files a student handed in beside the notebook (data, a module of their own), which their notebook
    may open from its working folder as it did in JupyterLab: at most 20 files of 5 MB each, 20 MB in all, top
    level only, in name order; returns (kept [(path, name)], names left out)."""
    files, left_out, total = [], [], 0
    for path in sorted(folder.iterdir()):
        if path.name in NOT_THE_STUDENTS or path.suffix == ".ipynb" or path.name.startswith("."):
            continue
        if not path.is_file() or path.is_symlink() or "/" in path.name:
            left_out.append(path.name)
            continue
        size = path.stat().st_size
        if size > OWN_FILE_CAP or total + size > OWN_FILES_CAP or len(files) >= OWN_FILES_COUNT:
            left_out.append(path.name)
            continue
        total += size
        files.append((path, path.name))
    return files, left_out


def timestamp_problem(path: Path) -> str:
    """Why the submission time in `path` (timestamp.txt, written by collect) cannot be read as nbgrader reads it,
    or "" when it can (or there is none)."""
    import dateutil.parser

    if not path.is_file() or path.is_symlink():
        return ""
    with open(path, "rb") as fh:
        raw = fh.read(201)
    try:
        text = raw.decode("utf-8").strip()
        if len(raw) > 200:
            raise ValueError("too long")
        when = dateutil.parser.parse(text)
    except (ValueError, OverflowError, UnicodeDecodeError) as exc:
        shown = printable(raw[:60].decode("utf-8", "replace"))
        return (f"its timestamp.txt is not a date (it holds {shown!r}: {type(exc).__name__}); collect it again "
                "(nbgrader collect writes the time it was handed in) or write that time there, such as "
                "2026-12-01 17:00:00.000000 UTC")
    return "" if when else "its timestamp.txt is empty"


def _timed(result: dict, start: float) -> dict:
    result["seconds"] = round(time.monotonic() - start, 3)
    return result


# --- the graded notebook -----------------------------------------------------------------------------------

OUTPUT_TYPES = {"stream", "display_data", "execute_result", "error"}
NOTEBOOK_TEXT_CAP = 2_000_000   # characters of text outputs in one graded notebook
NOTEBOOK_DATA_CAP = 8_000_000   # bytes of rich outputs in one graded notebook


def _clean_output(out, count) -> dict | None:
    """An output from the sandbox, kept only if it has nbformat's shape."""
    if not isinstance(out, dict) or out.get("output_type") not in OUTPUT_TYPES:
        return None
    kind = out["output_type"]
    if kind == "stream":
        if out.get("name") not in ("stdout", "stderr") or not isinstance(out.get("text"), str):
            return None
        return {"output_type": "stream", "name": out["name"], "text": out["text"]}
    if kind == "error":
        tb = out.get("traceback")
        if not isinstance(tb, list) or not all(isinstance(t, str) for t in tb):
            tb = []
        tb = [t[:4000] for t in tb[-30:]]   # as the runner keeps them, whatever the record says
        return {"output_type": "error", "ename": str(out.get("ename", "Error"))[:200],
                "evalue": str(out.get("evalue", ""))[:2000], "traceback": tb}
    data = out.get("data")
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, (str, dict, list))
                                             for k, v in data.items()):
        return None
    if any(k.startswith("image/") and not isinstance(v, str) for k, v in data.items()):
        return None
    clean = {"output_type": kind, "data": data, "metadata": {}}
    if kind == "execute_result":
        clean["execution_count"] = count
    return inert.safe_output(clean)


def _cell_outputs(record: dict, limits: sandbox.Limits, budget: dict) -> list:
    """The outputs of one cell's record, cut here to the per-cell caps (the runner cuts them too, but it runs
    with the student's code, which can write into its capture directly) and to the notebook's budget."""
    count = record.get("execution_count") if isinstance(record.get("execution_count"), int) else None
    outputs = []
    kept = {"stdout": 0, "stderr": 0}
    cut = {"stdout": 0, "stderr": 0}
    data_used = data_dropped = 0
    raws = record.get("outputs", [])
    for raw in raws[:1000] if isinstance(raws, list) else []:
        out = _clean_output(raw, count)
        if out is None:
            continue
        if out["output_type"] == "stream":
            name, text = out["name"], out["text"]
            room = max(0, limits.text_cap + 1000 - kept[name])   # (+1000: room for the runner's own note)
            if len(text) > room:
                cut[name] += len(text) - room
                text = text[:room]
            kept[name] += len(text)
            if not text:
                continue
            out = {**out, "text": text}
        elif out["output_type"] != "error":
            size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in out["data"].values())
            if data_used + size > limits.data_cap:
                data_dropped += 1
                continue
            data_used += size
        if out["output_type"] == "error" and out["ename"] == "KeyboardInterrupt" and record.get("timed_out"):
            message = (f"this cell was stopped after {limits.cell_seconds:g} s, the time limit for each cell when "
                       "the notebook is graded")
            out = {"output_type": "error", "ename": "TimeoutError", "evalue": message,
                   "traceback": [f"TimeoutError: {message}"]}
        size = len(json.dumps(out))
        key = "text" if out["output_type"] in ("stream", "error") else "data"
        if budget[key] < size:
            budget["cut"] = budget.get("cut", 0) + 1
            if not budget.get(f"{key}-noted"):
                budget[f"{key}-noted"] = True
                outputs.append({"output_type": "stream", "name": "stdout",
                                "text": "[output cut: this notebook's outputs reached the size kept for grading]\n"})
            continue
        budget[key] -= size
        outputs.append(out)
    if data_dropped or any(cut.values()):
        budget["cut"] = budget.get("cut", 0) + 1
    for name, n in cut.items():
        if n:
            outputs.append({"output_type": "stream", "name": name,
                            "text": f"\n[output cut: {n:,} more characters of {name} than the {limits.text_cap:,} "
                                    "kept for each cell]\n"})
    if data_dropped:
        outputs.append({"output_type": "stream", "name": "stdout",
                        "text": f"[{data_dropped} display output(s) left out: over the size cap]\n"})
    return outputs


def _verdict_outputs(verdict, kernel_outputs: list, part: str) -> list:
    if verdict.passed:
        text = f"Graded outside your notebook: {verdict.message}\n"
        return [{"output_type": "stream", "name": "stdout", "text": text}]
    message = verdict.message
    own = [o for o in kernel_outputs if o.get("output_type") == "error" and o.get("ename") == "AssertionError"
           and str(o.get("evalue", "")).startswith(part)]
    if own and str(own[0]["evalue"]) not in message:
        message += f"\n(The visible check in your notebook said: {str(own[0]['evalue'])[:1000]})"
    return [{"output_type": "error", "ename": "AssertionError", "evalue": message,
             "traceback": [f"AssertionError: {message}"]}]


def clean_markdown_bounded(sources: list, review: list | None = None) -> list:
    """The students' markdown texts cleaned (inert.clean_all) in a child process under the limits of
    `bounded`; over a limit, every text is shown as escaped plain text with a note, and `review` says why."""
    if not sources:
        return []
    try:
        return bounded.call(inert.clean_all, (sources,), bounded.CLEAN_SECONDS, bounded.CLEAN_MEMORY)
    except bounded.Exceeded as exc:
        note = ("Shown as plain text: turning the written answers of this notebook into a page went over the "
                "limits set for it; your instructor will read them.")
        if review is not None:
            review.append(f"written answers shown as plain text: their clean-up {exc}")
        return [inert.plain_block(text, note) for text in sources]


def compose(release: dict, cells: list, run: sandbox.Run, verdicts: dict, parts: dict,
            limits: sandbox.Limits, review: list | None = None) -> dict:
    """The graded notebook: the rebuilt cells, the outputs of the run, and the verdict of every check cell;
    what a person should look at is added to `review`."""
    budget = {"text": NOTEBOOK_TEXT_CAP, "data": NOTEBOOK_DATA_CAP}
    stopped_at = run.where if run.status != "ok" else ""
    trusted = {structure.grade_id(c): c for c in release["cells"] if structure.is_locked(c) or structure.is_check(c)}
    answers = {structure.grade_id(c): c for c in release["cells"] if structure.nbgrader_meta(c).get("solution")}
    prose = {c.get("source") for c in release["cells"]
             if c.get("cell_type") == "markdown" and not structure.grade_id(c)}
    kinds = []   # (mine, untouched) of every cell
    for cell in cells:
        gid = structure.grade_id(cell)
        if gid is None:   # the release's own text, unchanged, or a cell of the student's
            mine = not (cell.get("cell_type") == "markdown" and cell.get("source") in prose)
        else:
            mine = not (gid in trusted and cell.get("source") == trusted[gid].get("source")
                        and cell.get("cell_type") == trusted[gid].get("cell_type"))
        kinds.append((mine, mine and gid in answers and cell.get("source") == answers[gid].get("source")))
    to_clean = [i for i, (cell, (mine, untouched)) in enumerate(zip(cells, kinds, strict=True))
                if mine and not untouched and cell.get("cell_type") == "markdown"]
    cleaned = dict(zip(to_clean, clean_markdown_bounded([cells[i].get("source", "") for i in to_clean], review),
                       strict=True))
    out_cells = []
    for index, cell in enumerate(cells):
        gid = structure.grade_id(cell)
        mine, untouched = kinds[index]
        if mine:   # the student's text: made inert for the pages rendered from this notebook
            if gid not in answers and gid not in trusted:
                cell = {**cell, "metadata": {}}
            cell = inert.safe_cell(cell, keep_source=untouched, cleaned=cleaned.get(index))
        else:
            cell = dict(cell)
        if cell.get("cell_type") == "code":
            record = run.cells.get(index)
            was_cut = budget.get("cut", 0)
            kernel = _cell_outputs(record, limits, budget) if record else []
            if budget.get("cut", 0) > was_cut and review is not None:
                review.append(f"cell {index}: its outputs were over the sizes kept for grading and were cut "
                              "(the feedback says where)")
            cell["execution_count"] = record.get("execution_count") if record and isinstance(
                record.get("execution_count"), int) else None
            gid = structure.grade_id(cell)
            if structure.is_check(cell) and gid in verdicts:
                cell["outputs"] = _verdict_outputs(verdicts[gid], kernel, parts.get(gid, ""))
            elif record is None and stopped_at:
                cell["outputs"] = [{"output_type": "stream", "name": "stderr",
                                    "text": f"Not run: grading stopped at {stopped_at} ({run.reason}).\n"}]
            else:
                cell["outputs"] = kernel
        out_cells.append(cell)
    metadata = dict(release.get("metadata", {}))
    return {"cells": out_cells, "metadata": metadata, "nbformat": 4,
            "nbformat_minor": max(int(release.get("nbformat_minor", 4)), 5)}


# --- the gradebook, the feedback and grades.csv (in the main process) -----------------------------------

def course_api(course: Path):
    """nbgrader's Python API on the course folder, set up to record grades from the outputs the grader wrote
    (nbgrader's autograde with its sanitizing steps kept and without executing anything)."""
    import warnings

    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        OverwriteCells,
        OverwriteKernelspec,
        SaveAutoGrades,
    )
    from sqlalchemy.exc import SAWarning

    from normlab_grading.feedback import FeedbackHTMLExporter

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's gradebook under SQLAlchemy 2
    # nbgrader runs `alembic` by name to set up the gradebook: put this Python's bin folder first on PATH.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    config = load_config(course)
    config.Autograde.sanitize_preprocessors = [OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
    # (nbgrader checks the cells' metadata again after its kernel ran; nothing runs here, and SaveAutoGrades and
    # AssignLatePenalties write only to the gradebook, so the check of the sanitizing step stands.)
    config.Autograde.autograde_preprocessors = [SaveAutoGrades, AssignLatePenalties]
    config.GenerateFeedback.exporter_class = FeedbackHTMLExporter   # templates compiled once per process
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def record(api, course: Path, assignment: str, student: str, notebook: dict) -> dict:
    """Write the graded notebook where nbgrader reads submissions from, and let nbgrader autograde it."""
    staged = course / STAGED / student / assignment
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    (staged / f"{NOTEBOOK}.ipynb").write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")
    # Everything else the submission holds goes along (timestamp.txt, the exchange's submission_secret.txt that
    # release_feedback needs, files the student added), as when nbgrader reads submitted/ itself.
    # Only the files the notebook was given (own_files: capped in number and size) and the exchange's own.
    folder = course / "submitted" / student / assignment
    names = [folder / n for n in NOT_THE_STUDENTS] + [p for p, _ in own_files(folder)[0]]
    for other in names:
        if other.is_file() and not other.is_symlink():   # a link is not followed
            shutil.copy2(other, staged / other.name)
    saved = api.coursedir.submitted_directory
    api.coursedir.submitted_directory = STAGED
    try:
        # nbgrader reads the id as a file glob: escaped, `stu[1]` names only itself
        return api.autograde(assignment, glob.escape(student), force=True, create=True)
    finally:
        api.coursedir.submitted_directory = saved
        shutil.rmtree(staged, ignore_errors=True)


CSV_FIELDS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
              "late_submission_penalty", "score", "max_score"]   # the columns of nbgrader's `export`


def gradebook_rows(gb) -> list[dict]:
    """The rows nbgrader's CSV export would write (every assignment x every student, 0 when not submitted), as
    data: its plugin joins them with commas unquoted, so an id or a name with a comma would split its row."""
    from nbgrader.api import MissingEntry

    rows = []
    for a in gb.assignments:
        for st in gb.students:
            row = {"assignment": a.name, "duedate": a.duedate, "student_id": st.id, "last_name": st.last_name,
                   "first_name": st.first_name, "email": st.email, "max_score": a.max_score}
            try:
                sub = gb.find_submission(a.name, st.id)
            except MissingEntry:
                row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
            else:
                penalty = sub.late_submission_penalty
                row.update(timestamp=sub.timestamp, raw_score=sub.score, late_submission_penalty=penalty,
                           score=max(0.0, sub.score - penalty))
            rows.append({k: "" if v is None else str(v) for k, v in row.items()})
    return rows


PENDING = "in progress: not graded yet in this run"


def export(course: Path, assignment: str, states: dict, pending=()) -> Path:
    """Write grades.csv from the gradebook and this run's `states`; students in `pending` (queued in this run, not
    finished yet) get a row with no score. Written to a temporary file and renamed: a reader sees a whole file."""
    from nbgrader.api import Gradebook

    out = course / "grades.csv"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        rows = gradebook_rows(gb)
    fields = CSV_FIELDS
    seen = {(r.get("assignment"), r.get("student_id")) for r in rows}
    waiting = {p for p in pending if p not in states}
    for student in [*states, *sorted(waiting)]:
        if (assignment, student) not in seen:
            rows.append({"assignment": assignment, "student_id": student})
    for row in rows:
        if row.get("assignment") != assignment:
            continue
        student = row["student_id"]
        if student in waiting:
            row.update(grading_status=PENDING, review="", score="", raw_score="")
            continue
        if student not in states and (course / "autograded" / student / assignment).is_dir():
            # graded once, and its submission has since been removed: its old score is not a grade any more
            row["grading_status"] = "no submission: removed from submitted/ since it was graded"
            row["review"] = "a score recorded earlier stays in the gradebook but is not shown here"
            row["score"] = row["raw_score"] = ""
            continue
        state = states.get(student, {"status": "not submitted"})
        row["grading_status"] = state["status"]
        row["review"] = "; ".join(state.get("review", []) + state.get("put_back", []))
        if state["status"].startswith("FAILED"):
            row["score"] = row["raw_score"] = ""
    numeric = {"score", "raw_score", "max_score", "late_submission_penalty", "timestamp", "duedate"}
    rows = [{k: (v if k in numeric or v is None else csv_cell(v)) for k, v in row.items()} for row in rows]
    part = out.with_name(out.name + ".part")
    with open(part, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields + ["grading_status", "review"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(part, out)
    return out


class ProgressExport:
    """grades.csv rewritten while a run goes on, so each finished submission's row appears within `every` seconds
    of it (at least five times as long as one export takes, so a large class is not slowed by its own exports)."""

    def __init__(self, course: Path, assignment: str, states: dict, pending, every: float = 15.0):
        self.args, self.pending, self.every = (course, assignment, states), set(pending), every
        self.last, self.cost = time.monotonic(), 0.0

    def __call__(self, final: bool = False) -> Path | None:
        """Export if it is time (always when `final`, with no student left pending); the path when written."""
        now = time.monotonic()
        if not final and now - self.last < max(self.every, 5 * self.cost):
            return None
        try:
            out = export(*self.args, pending=() if final else self.pending)
        except Exception as exc:  # noqa: BLE001 - an interim export may fail (a locked gradebook); the final one counts
            if final:
                raise
            print(f"  (grades.csv not updated this time: {type(exc).__name__}: {_short(exc)})", flush=True)
            out = None
        self.last, self.cost = time.monotonic(), time.monotonic() - now
        return out


# --- the command -------------------------------------------------------------------------------------------

_WORKER: list = []


def _init_worker(*args) -> None:
    _WORKER.append(Worker(*args))


def _grade_in_worker(student: str) -> dict:
    return grade_safely(_WORKER[0], student)


def grade_safely(worker: Worker, student: str) -> dict:
    """worker.grade(student), whatever the submission holds: an error of the grader on it (RecursionError
    included) fails this submission only, with the reason; the result holds no lone surrogate."""
    try:
        return structure.plain(worker.grade(student))
    except Exception as exc:  # noqa: BLE001 - a grader bug must not pass for a grade: report it as a failure
        import traceback

        return {"student": student, "status": f"FAILED: the grader itself failed on this submission "
                                              f"({type(exc).__name__}: {_short(exc)})",
                "put_back": [], "review": [], "verdicts": {}, "notebook": None,
                "log": structure.plain(traceback.format_exc()), "seconds": 0.0}


def _short(exc: BaseException) -> str:
    try:
        return structure.plain(str(exc))[:300]
    except Exception:  # noqa: BLE001 - an exception whose message cannot be shown
        return "(no message)"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m normlab_grading.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", nargs="?", default="chapter23")
    parser.add_argument("-j", "--jobs", type=int, default=0, help="submissions graded at once (default: one per core)")
    parser.add_argument("--student", action="append", default=[],
                        help="grade only this student (again, even if unchanged); may be repeated or comma-separated")
    parser.add_argument("--all", action="store_true", help="grade every submission again, changed or not")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run student code WITHOUT the sandbox: it can then read and change every file the "
                             "grading account can, including the references, the gradebook and other submissions")
    return parser.parse_args(argv)


def grade(course: Path, args) -> int:
    course = course.resolve()
    assignment = args.assignment
    started = time.monotonic()
    config = load_config(course)
    limits = limits_from(config)
    unsafe = args.unsafe_no_sandbox
    release = course / "release" / assignment / f"{NOTEBOOK}.ipynb"
    if not release.is_file():
        print(f"no release at {release}: run `nbgrader generate_assignment {assignment}` (make release) first")
        return 2
    try:
        hidden_checks.require_plans(structure.load(release), f"the release {release}")
    except hidden_checks.Unplanned as exc:
        print(f"Cannot grade: {exc}. Without a plan such a cell could only be scored by the student's own kernel.")
        return 2
    missing = feedback_templates_missing(config)
    if missing:
        print(f"Cannot grade: {missing}")
        return 2
    folders = sorted(p for p in (course / "submitted").glob(f"*/{assignment}") if p.is_dir())
    # An id outside the id rule (ids.py) reaches no gradebook, page or file: its folder is refused, and named.
    refused = [p.parent.name for p in folders if not ids.usable(p.parent.name)]
    for student in refused:
        print(f"refused: submitted/{printable(student)}/: {printable(ids.problem(student))}; rename the folder "
              "(and the student in the gradebook) to an id that follows the rule, then grade again")
    folders = [p for p in folders if ids.usable(p.parent.name)]
    students = [p.parent.name for p in folders]
    if not students:
        print(f"no submissions in {course / 'submitted'}/*/{assignment}" + (" that can be graded" if refused else ""))
        return 1
    wanted = {s for item in args.student for s in item.split(",") if s}
    unknown = sorted(wanted - set(students))
    if unknown:
        print(f"no submission of {', '.join(printable(u) for u in unknown)} in {course / 'submitted'}/*/{assignment}")
        return 1

    state_dir = course / "logs" / assignment
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = open(course / "logs" / ".grading.lock", "w")  # noqa: SIM115 - held until this process ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("another `make grade` is running in this course folder: wait for it to finish")
        return 2
    fingerprint = grader_fingerprint(course, assignment, unsafe)
    states: dict = {}
    todo = []
    for student, folder in zip(students, folders, strict=True):
        state_file = state_dir / f"{student}.json"
        old = json.loads(state_file.read_text()) if state_file.is_file() else None
        mine = submission_fingerprint(folder)
        graded = course / "autograded" / student / assignment / f"{NOTEBOOK}.ipynb"
        if wanted and student not in wanted:
            if old:
                states[student] = old
            continue
        if (old and not args.all and not wanted and old.get("submission") == mine
                and old.get("grader") == fingerprint and (old["status"].startswith("FAILED") or (
                    graded.is_file() and (course / "feedback" / student / assignment / f"{NOTEBOOK}.html").is_file()))):
            states[student] = old
            continue
        todo.append((student, mine))
    if unsafe:
        print("WARNING: grading WITHOUT a sandbox (--unsafe-no-sandbox): student code can read and change the "
              "course, the gradebook and other students' work.")
    elif todo:
        try:
            sandbox.check_sandbox()
        except sandbox.SandboxUnavailable as exc:
            print(f"Cannot grade safely: {exc}.\nGrading runs each submission in a bubblewrap sandbox; install it "
                  "(Debian/Ubuntu: apt-get install bubblewrap) or, knowing that student code can then reach every "
                  "file of this account, run with --unsafe-no-sandbox (make grade UNSAFE=1).")
            return 2
        note = sandbox.confinement_note(limits)
        if note:
            print(note)
    jobs = args.jobs or os.cpu_count() or 1
    jobs = max(1, min(jobs, len(todo))) if todo else 1
    print(f"{assignment}: {len(students)} submissions; grading {len(todo)} "
          f"({'new or changed' if not (args.all or wanted) else 'as asked'}) with {jobs} worker(s)"
          + (f", {len(students) - len(todo)} unchanged" if not wanted and len(todo) < len(students) else "")
          + ("" if unsafe else ", each in a bubblewrap sandbox"))

    shutil.rmtree(course / STAGED, ignore_errors=True)
    if todo and not unsafe:
        graded_core.graded_copy(sandbox.core_package())   # built once, before the workers are forked
    seed = seed_from(config)
    timings = []
    phases: dict = {}
    progress = ProgressExport(course, assignment, states, [s for s, _ in todo])
    if todo:
        t0 = time.monotonic()
        writer = FeedbackWriter(course, assignment, jobs, state_dir, len(todo))   # before any thread starts
        grade_all(course, assignment, todo, unsafe, limits, seed, jobs, fingerprint, state_dir, states, timings,
                  writer.add, progress)
        t1 = time.monotonic()
        for student, problem in writer.finish().items():
            state = states[student]
            if problem.startswith("limits: "):
                state["review"] = state["review"] + [f"feedback: a plain page stands in for it: {problem[8:]}"]
            else:
                state["status"] = "FAILED: its feedback page could not be written (see the log)"
            (state_dir / f"{student}.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
        phases = {"grading": t1 - t0, "feedback": time.monotonic() - t1}
    else:
        print("nothing to grade: every submission is unchanged since it was last graded (--all to grade again)")
    csv_path = progress(final=True)
    report(course, assignment, students, states, csv_path, state_dir, timings, time.monotonic() - started, jobs,
           phases, refused)
    return 1 if refused or any(states[s]["status"].startswith("FAILED") for s in students if s in states) else 0


def grade_all(course, assignment, todo, unsafe, limits, seed, jobs, fingerprint, state_dir, states, timings,
              recorded=None, progress=None):
    """Grade `todo` ([(student, fingerprint)]): in `jobs` worker processes (forked before nbgrader is imported
    here), or in this process for one job; record each result in the gradebook as it arrives, and pass each
    student whose grades were recorded to `recorded` (which writes their feedback meanwhile)."""

    def done(result, mine):
        try:
            state = finish(api, course, assignment, result, mine, fingerprint, state_dir)
        except Exception as exc:  # noqa: BLE001 - recording one submission failed: it fails alone
            result = {**result, "notebook": None,
                      "status": f"FAILED: its grades could not be recorded ({type(exc).__name__}: {_short(exc)})"}
            state = finish(api, course, assignment, result, mine, fingerprint, state_dir)
        states[result["student"]] = state
        timings.append(state["seconds"])
        print(f"  graded {printable(result['student']):<24} {state['seconds']:6.1f} s  {printable(state['status'])}",
              flush=True)
        if recorded is not None and state.get("recorded"):
            recorded(result["student"])
        if progress is not None:
            progress()

    if jobs == 1:
        worker = Worker(course, assignment, unsafe, limits, seed, 1)
        api = course_api(course)
        for student, mine in todo:
            done(grade_safely(worker, student), mine)
    else:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(
                max_workers=jobs, mp_context=context, initializer=_init_worker,
                initargs=(course, assignment, unsafe, limits, seed, jobs)) as pool:
            futures = {pool.submit(_grade_in_worker, student): mine for student, mine in todo}
            api = course_api(course)  # after the workers started: they never import nbgrader
            for future in concurrent.futures.as_completed(futures):
                done(future.result(), futures[future])
    return [s for s, _ in todo if states[s].get("recorded")]


def finish(api, course: Path, assignment: str, result: dict, mine: str, fingerprint: str, state_dir: Path) -> dict:
    student = result["student"]
    log = [f"student {student}: {result['status']} ({result['seconds']} s)"]
    if result.get("confinement"):
        log.append(f"sandbox limits: {result['confinement']}")
    recorded = False
    if result.get("notebook") is not None:
        outcome = record(api, course, assignment, student, result["notebook"])
        log.append(f"nbgrader autograde (success: {outcome.get('success')})\n{outcome.get('log', '')}"
                   f"\n{outcome.get('error', '')}")
        recorded = bool(outcome.get("success"))
        if not recorded and result["status"] == "ok":
            result["status"] = "FAILED: nbgrader could not record the grades (see the log)"
    for gid, v in result.get("verdicts", {}).items():
        log.append(f"{gid}: {'passed' if v['passed'] else 'failed'}: {v['message']}")
    log.append("--- the sandbox's own output ---\n" + result.get("log", ""))
    (state_dir / f"{student}.log").write_text(printable_log("\n".join(log)), encoding="utf-8", errors="replace")
    state = {"student": student, "status": result["status"], "review": result["review"],
             "put_back": result["put_back"], "submission": mine, "grader": fingerprint,
             "seconds": result["seconds"], "recorded": recorded}
    (state_dir / f"{student}.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    return state


class IdList(str):
    """A list of student ids for nbgrader's comma-separated settings (`student_id_exclude`): the comma-joined text
    that the setting's type asks for, whose `split(",")` gives back the ids themselves, commas and all."""

    def __new__(cls, items):
        items = list(items)
        self = super().__new__(cls, ",".join(items))
        self.items = items
        return self

    def split(self, sep=None, maxsplit=-1):
        return list(self.items) if sep == "," and maxsplit == -1 else super().split(sep, maxsplit)


FEEDBACK_TEMPLATE = Path("feedback") / "mathjax.html.j2"   # replaces nbgrader's loader of MathJax from a CDN


def feedback_templates_missing(config) -> str:
    """Why the feedback pages would load MathJax from a CDN (no folder of c.HTMLExporter.extra_template_basedirs
    holds feedback/mathjax.html.j2), or "" when the course's own template is there."""
    folders = list(config.HTMLExporter.get("extra_template_basedirs", [])) if "HTMLExporter" in config else []
    if any((Path(f) / FEEDBACK_TEMPLATE).is_file() for f in folders):
        return ""
    return (f"no {FEEDBACK_TEMPLATE} in the template folders of nbgrader_config.py "
            f"(c.HTMLExporter.extra_template_basedirs: {', '.join(map(str, folders)) or 'none'}); without it every "
            "feedback page would load MathJax from a CDN. Copy normlab_grading/templates/ from the repository's "
            "assignments/ into the course folder")


def _feedback_one(api, assignment: str, student: str) -> dict:
    """nbgrader generate_feedback for one student (run in a bounded child: `bounded.Child`)."""
    outcome = api.generate_feedback(assignment, glob.escape(student), force=True)
    return {k: str(outcome.get(k, "")) if k != "success" else bool(outcome.get(k)) for k in ("success", "log", "error")}


def warm_feedback(api, course: Path, assignment: str) -> None:
    """Do once, in the process that forks a child per page, what every page would otherwise do from cold: set up
    the gradebook's object mapping (without opening the database, which the grading may be creating meanwhile),
    and render the release (the instructor's notebook, with made-up scores and
    outputs; nothing of a student's) through the feedback exporter and its preprocessors, which compiles its
    templates, regular expressions and CSS selectors and typesets the release's maths. The children inherit it
    all. Best effort: if it fails, the pages are written as before, only slower."""
    import warnings

    import nbgrader.api  # noqa: F401 - the gradebook's classes, for configure_mappers
    from nbconvert.preprocessors import Preprocessor
    from nbgrader.converters import GenerateFeedback
    from nbgrader.preprocessors import GetGrades
    from sqlalchemy.orm import configure_mappers
    from traitlets.config import Config

    class MadeUpGrades(Preprocessor):
        """Stands in for GetGrades (which reads a student's grades): every graded cell gets its full points."""

        def preprocess_cell(self, cell, resources, index):
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") or meta.get("task"):
                meta["score"] = meta["points"] = float(meta.get("points", 0) or 0)
            if meta.get("solution") or meta.get("task"):
                meta["comment"] = None
            return cell, resources

    try:
        import nbformat

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            configure_mappers()   # nbgrader's gradebook classes; the database is not opened (nor made) here
        nb = nbformat.read(course / "release" / assignment / f"{NOTEBOOK}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1.0\n"),
                                nbformat.v4.new_output("error", ename="AssertionError", evalue="no",
                                                       traceback=["AssertionError: no"])]
        app = GenerateFeedback(coursedir=api.coursedir, parent=api)
        app.update_config(Config({"HTMLExporter": {"template_name": "feedback"}}))
        exporter = app.exporter_class(parent=app, config=app.config)
        for pp in app.preprocessors:   # as nbgrader registers them (BaseConverter.start), GetGrades replaced
            if pp in (GetGrades, "nbgrader.preprocessors.GetGrades"):
                exporter.register_preprocessor(MadeUpGrades, enabled=True)
            else:
                exporter.register_preprocessor(pp)
        points = sum(float(c.metadata.get("nbgrader", {}).get("points", 0) or 0) for c in nb.cells)
        resources = {"unique_key": NOTEBOOK, "output_files_dir": f"{NOTEBOOK}_files",
                     "nbgrader": {"student": "", "assignment": assignment, "notebook": NOTEBOOK,
                                  "db_url": api.coursedir.db_url, "score": points, "max_score": points,
                                  "late_penalty": 0}}
        exporter.from_notebook_node(nb, resources=resources)
        from bs4 import BeautifulSoup  # the selectors of HTMLExporter's last pass, for a page with an image

        soup = BeautifulSoup('<div class="jp-Notebook"><img></div>', features="html.parser")
        for selector in ("img:not([alt])", ".jp-Notebook div.jp-Cell-inputWrapper",
                         ".jp-Notebook div.jp-OutputArea-output"):
            soup.select(selector)
    except Exception as exc:  # noqa: BLE001 - only a warm-up: the pages are still written, from cold
        print(f"  (feedback warm-up skipped: {type(exc).__name__}: {_short(exc)})", flush=True)


PLAIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback: {assignment}</title></head>
<body><h1>Feedback on {assignment}</h1>
<p>Your notebook was graded, but its feedback page could not be written within the limits set for writing one
({why}). Your instructor has been told and will look at your submission.</p></body></html>
"""


def plain_page(course: Path, assignment: str, student: str, why: str) -> Path:
    """A feedback page with no content of the student's, written in place of the one that went over its limits."""
    import html

    page = course / "feedback" / student / assignment / f"{NOTEBOOK}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(PLAIN_PAGE.format(assignment=html.escape(assignment), why=html.escape(why)), encoding="utf-8")
    return page


def feedback(course: Path, assignment: str, students: list, everyone: list, jobs: int, state_dir: Path,
             seconds: float = bounded.FEEDBACK_SECONDS, memory: int = bounded.FEEDBACK_MEMORY,
             incoming: bounded.Lines | None = None, total: int | None = None) -> dict:
    """Feedback pages for `students`, and for those `incoming` names as they are graded, each written alone in
    a child process under a time and a memory limit (`bounded`), `jobs` at a time, each reported as it is
    done. A page over its limits is replaced by a plain one saying so. Returns {student: what went wrong} for
    the pages that are not nbgrader's own: "limits: ..." when a plain page stands in for it, "failed: ..."
    when nbgrader could not write it."""
    waiting = list(students)
    if not waiting and incoming is None:
        return {}
    total = total or len(waiting)
    api = course_api(course)   # built once here; every child inherits it
    warm_feedback(api, course, assignment)
    running, problems, done = {}, {}, 0
    print(f"writing {total} feedback page(s), {jobs} at a time, each within {seconds:g} s and "
          f"{memory >> 20} MB", flush=True)
    while waiting or running or (incoming is not None and not incoming.done):
        while waiting and len(running) < jobs:
            student = waiting.pop(0)
            child = bounded.Child(_feedback_one, (api, assignment, student), seconds, memory)
            running[child] = (student, time.monotonic())
        bounded.wait(list(running), (incoming,) if incoming is not None else ())
        if incoming is not None:
            waiting += incoming.items
            incoming.items = []
        for child in [c for c in running if c.done]:
            student, begun = running.pop(child)
            done += 1
            try:
                outcome = child.result()
            except bounded.Exceeded as exc:
                why = f"writing it {exc}"
                plain_page(course, assignment, student, why)
                problems[student] = f"limits: {why}"
                outcome = {"success": False, "log": "", "error": f"a plain page was written instead: {why}"}
            else:
                page = course / "feedback" / student / assignment / f"{NOTEBOOK}.html"
                if not outcome.get("success") and not page.is_file():
                    problems[student] = f"failed: {outcome.get('error', '')[:300]}"
            if not outcome.get("success"):
                with open(state_dir / f"{student}.log", "a", encoding="utf-8") as fh:
                    fh.write(printable_log(f"\nnbgrader generate_feedback reported a failure:\n"
                                           f"{outcome.get('log', '')}\n{outcome.get('error', '')}"))
            print(f"  feedback {done:>4}/{max(total, done)} {printable(student):<24} "
                  f"{time.monotonic() - begun:6.1f} s  {printable(problems.get(student, 'written'))}", flush=True)
    return problems


class FeedbackWriter:
    """Feedback written while grading goes on: a process forked before the graders start (so that it holds no
    thread of theirs) takes each student as their grades are recorded (`add`) and writes their page with
    `feedback`; `finish` waits for the last page and returns what `feedback` returns."""

    def __init__(self, course: Path, assignment: str, jobs: int, state_dir: Path, total: int,
                 seconds: float = bounded.FEEDBACK_SECONDS, memory: int = bounded.FEEDBACK_MEMORY):
        names_r, names_w = os.pipe()
        back_r, back_w = os.pipe()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            os.close(names_w)
            os.close(back_r)
            code = 0
            try:
                problems = feedback(course, assignment, [], [], jobs, state_dir, seconds, memory,
                                    incoming=bounded.Lines(names_r), total=total)
                with os.fdopen(back_w, "w") as fh:
                    fh.write(json.dumps(problems))
            except BaseException:  # noqa: BLE001 - the parent reports every page as not written
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        os.close(names_r)
        os.close(back_w)
        self.pid, self.names, self.back, self.added = pid, names_w, back_r, []

    def add(self, student: str) -> None:
        self.added.append(student)
        os.write(self.names, (json.dumps(student) + "\n").encode())

    def finish(self) -> dict:
        os.close(self.names)
        with os.fdopen(self.back) as fh:
            text = fh.read()
        os.waitpid(self.pid, 0)
        try:
            return json.loads(text)
        except ValueError:
            return {s: "failed: the process writing the feedback pages ended early" for s in self.added}


def report(course, assignment, students, states, csv_path, state_dir, timings, elapsed, jobs, phases,
           refused=()) -> None:
    with open(csv_path, newline="") as fh:
        scores = {r["student_id"]: r for r in csv.DictReader(fh) if r["assignment"] == assignment}
    print(f"\n{'student':<24} {'score':>7} {'max':>5}  status")
    for student in students:
        row = scores.get(student, {})
        print(f"{printable(student):<24} {row.get('score', ''):>7} {row.get('max_score', ''):>5}  "
              f"{printable(states[student]['status'])}")
    print(f"\ngrades: {csv_path}   feedback: {course / 'feedback'}   logs: {state_dir}")
    put_back = {s: states[s]["put_back"] for s in students if states[s].get("put_back")}
    if put_back:
        print("\nCells put back from the release before grading:")
        for student, items in put_back.items():
            print(f"  {printable(student)}: " + "; ".join(printable(i) for i in items))
    flagged = {s: states[s]["review"] for s in students if states[s].get("review")}
    if flagged:
        print("\nSubmissions marked for review (open the notebook; a hit is a reason to look, not proof):")
        for student, hits in flagged.items():
            print(f"  {printable(student)}:")
            for hit in hits:
                print(f"      {printable(hit)}")
    if timings:
        print(f"\ngraded {len(timings)} submission(s) in {elapsed:.1f} s with {jobs} worker(s): "
              f"{sum(timings) / len(timings):.2f} s per submission on average (max {max(timings):.2f} s); "
              f"running and judging, with the gradebook records: {phases.get('grading', 0):.1f} s, "
              f"feedback: {phases.get('feedback', 0):.1f} s after the last grade (each page is written as soon as "
              "its grades are recorded, beside the grading)")
    failed = {s: states[s]["status"] for s in students if states[s]["status"].startswith("FAILED")}
    if failed:
        print(f"\n{len(failed)} submission(s) FAILED TO GRADE (their grades.csv rows have no score):")
        for student, st in failed.items():
            print(f"  {printable(student)}: {printable(st[len('FAILED: '):])}   "
                  f"log: {printable(state_dir / f'{student}.log')}")
    if refused:
        print(f"\n{len(refused)} submission folder(s) REFUSED for their student id (not graded): "
              + ", ".join(printable(s) for s in refused))
    if not failed:
        print("\nevery submission with a usable student id was graded" if refused else "\nevery submission was graded")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return grade(Path.cwd(), args)


if __name__ == "__main__":
    sys.exit(main())
