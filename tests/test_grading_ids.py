"""Student ids are data, never markup: hostile ids at every door of the grading.

The id rule (assignments/normlab_grading/ids.py) lets through 1 to 64 characters from A-Z a-z 0-9 . _ @ + -
starting with a letter or a digit. Every id below gets what it deserves at `make grade`, zip_collect, the
exchange's collect and `make grades-lms`; grades.csv and nbgrader's exclusions hold ids with commas whole
(defence behind the rule); and Formgrader, given a hostile id straight in its gradebook, shows it as text and
runs nothing (lab/instructor/python/normlab_formgrader.py).

A failure here: see book/instructors.md, "Student ids"; the browser test needs Debian's chromium and bubblewrap
(`NORMLAB_REQUIRE_SANDBOX=1 .venv/bin/pytest tests/test_grading_ids.py`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from grading_support import (
    NbgraderFailed,
    mx,
    nbgrader_here,
    platform_archive,
    released_course,
    require_sandbox,
    shared_tmp,
    solutions,
    structure,
)
from normlab_grading import grade, ids

from scripts import grades_lms

HOSTILE = {
    "img": "<img src=x onerror=alert(1)>",
    "script": '"><script>window.__pwned="script"</script>',
    "comma": "x,vic",
    "glob": "stu[1]",
    "lookalike": "\u0430lice",          # Cyrillic a
    "long": "a" * 65,
    "up": "..",
    "dot": ".",
    "option": "-rf",
    "formula": "=1+1",
    "space": "ann lee",
    "empty": "",
}
GOOD = ["alice", "nl-ada", "a" * 64, "j.doe@uni.example", "bob+2", "x_y", "7"]


@pytest.mark.parametrize("student", GOOD)
def test_the_rule_keeps_ordinary_ids(student):
    assert ids.usable(student) and ids.check(student) == student


@pytest.mark.parametrize("name", list(HOSTILE), ids=list(HOSTILE))
def test_the_rule_refuses_hostile_ids_and_says_why(name):
    student = HOSTILE[name]
    assert not ids.usable(student)
    with pytest.raises(ValueError) as err:
        ids.check(student, "student")
    message = str(err.value)
    assert message.startswith("student: ") and repr(student) in message and ids.ALLOWED in message, message


# --- grades.csv, nbgrader's exclusions, make grades-lms: whole rows even behind the rule ---------------------

def test_grades_csv_keeps_an_id_with_a_comma_in_one_row(tmp_path):
    """nbgrader's own CSV export writes `x,vic` unquoted: a phantom `x` and a lost score (make grade writes it)."""
    from nbgrader.api import Gradebook

    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", course_id="normlab") as gb:
        gb.add_assignment(mx.ASSIGNMENT)
        for student, first in (("x,vic", "Vic, Jr."), ("bob", "Bob")):
            gb.add_student(student, first_name=first, last_name="O'Neil")
    out = grade.export(tmp_path, mx.ASSIGNMENT, {"x,vic": {"status": "ok"}, "bob": {"status": "ok"}})
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["student_id"] for r in rows) == ["bob", "x,vic"], rows
    vic = next(r for r in rows if r["student_id"] == "x,vic")
    assert vic["first_name"] == "Vic, Jr." and vic["grading_status"] == "ok" and vic["max_score"] == "0.0"


def test_exclusions_reach_nbgrader_as_a_list():
    """`student_id_exclude` is split on commas by nbgrader: `x,vic` must stay one id (make grade's feedback)."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory()
    coursedir.student_id_exclude = grade.IdList(["x,vic", "bob"])
    assert coursedir.student_id_exclude.split(",") == ["x,vic", "bob"]
    assert "x" not in coursedir.student_id_exclude.split(",")
    assert str(coursedir.student_id_exclude) == "x,vic,bob"   # what the setting's type holds


def _grades_csv(path: Path, students: list[str]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["assignment", "student_id", "score", "max_score", "grading_status"])
        for i, s in enumerate(students):
            writer.writerow([mx.ASSIGNMENT, s, f"{i + 1}.0", "10.0", "ok"])
    return path


def test_grades_lms_writes_the_class_and_names_the_hostile_ids(tmp_path, capsys):
    students = ["alice", *HOSTILE.values()]
    grades = _grades_csv(tmp_path / "grades.csv", [s for s in students if s])
    status = grades_lms.main(["--grades", str(grades), "--out", str(tmp_path / "lms")])
    err = capsys.readouterr().err
    assert status == 1, err   # files written for the class; the status says something was left out
    with open(tmp_path / "lms" / "moodle-grades.csv", newline="", encoding="utf-8-sig") as fh:
        moodle = list(csv.reader(fh))
    assert moodle == [["Username", "Email address", mx.ASSIGNMENT], ["alice", "", "1"]]
    with open(tmp_path / "lms" / "canvas-gradebook.csv", newline="", encoding="utf-8-sig") as fh:
        canvas = list(csv.reader(fh))
    assert [row[3] for row in canvas[2:]] == ["alice"] and canvas[1][5] == "10"
    for s in students[1:]:
        if s:
            assert f"left out of both files: the student id {s!r} is refused" in err, (s, err)
    assert "'alice'" not in err


# --- zip_collect and the exchange's collect ----------------------------------------------------------------

@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return released_course(tmp_path_factory.mktemp("ids") / "course", shared_tmp(tmp_path_factory))


@pytest.mark.parametrize("name", ["img", "comma", "glob", "lookalike", "long", "option"])
def test_zip_collect_refuses_a_file_named_for_a_hostile_id(course, tmp_path, name):
    root, _, _ = platform_archive(course, tmp_path, ["carol_exercises.ipynb", f"{HOSTILE[name]}_exercises.ipynb"])
    with pytest.raises(NbgraderFailed) as failed:
        nbgrader_here(root, "zip_collect", mx.ASSIGNMENT)
    assert repr(HOSTILE[name]) in failed.value.log and ids.ALLOWED in failed.value.log, failed.value.log
    assert not (root / "submitted").exists() or not any((root / "submitted").rglob("*.ipynb"))


def _inbound(exchange: Path, student: str, stamp: str, notebook: bytes) -> Path:
    folder = exchange / "normlab" / "inbound" / f"{student}+{mx.ASSIGNMENT}+{stamp}+r{abs(hash(student)) % 999}"
    folder.mkdir(parents=True)
    (folder / mx.NOTEBOOK).write_bytes(notebook)
    (folder / "timestamp.txt").write_text(stamp)
    return folder


def test_collect_refuses_hostile_ids_and_folders_of_another_account_and_keeps_its_own_clock(course, tmp_path,
                                                                                           monkeypatch):
    """A folder named for another student's account is an error and is not collected; so is a hostile id;
    the honest submission is collected, timed by the exchange, not by the student's claimed date."""
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    other = next((p.pw_name for p in pwd.getpwall() if p.pw_uid != os.getuid() and ids.usable(p.pw_name)), None)
    if other is None or not ids.usable(me):
        pytest.skip("needs this account and another one whose names follow the id rule")
    root = tmp_path / "course"
    shutil.copytree(course[0], root)
    exchange = tmp_path / "exchange"
    monkeypatch.setenv("NORMLAB_EXCHANGE", str(exchange))
    released = (root / "release" / mx.ASSIGNMENT / mx.NOTEBOOK).read_bytes()
    claimed = "2000-01-01 00:00:00.000000 UTC"   # a student's own timestamp.txt, rewritten to look early
    _inbound(exchange, me, claimed, released)
    _inbound(exchange, other, claimed, b"{}")          # named for `other`, owned by this account
    _inbound(exchange, HOSTILE["img"], claimed, b"{}")
    _inbound(exchange, HOSTILE["comma"], claimed, b"{}")
    started = time.time()
    with pytest.raises(NbgraderFailed) as failed:
        nbgrader_here(root, "collect", mx.ASSIGNMENT)
    log = failed.value.log
    assert f"named for the student {other!r} but belongs to the account {me!r}" in log, log
    for hostile in (HOSTILE["img"], HOSTILE["comma"]):
        assert repr(hostile) in log, log
    collected = sorted(p.name for p in (root / "submitted").iterdir())
    assert collected == [me], collected
    assert (root / "submitted" / me / mx.ASSIGNMENT / mx.NOTEBOOK).read_bytes() == released
    from nbgrader.utils import parse_utc

    stamp = parse_utc((root / "submitted" / me / mx.ASSIGNMENT / "timestamp.txt").read_text())
    seconds = stamp.replace(tzinfo=__import__("datetime").timezone.utc).timestamp()
    assert started - 60 < seconds <= time.time() + 1, (stamp, started)


# --- make grade --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """The course graded with one honest submission (`mallory`) and folders for hostile ids beside it."""
    require_sandbox()
    root = tmp_path_factory.mktemp("ids-graded") / "course"
    shutil.copytree(course[0], root)
    release = structure.load(root / "release" / mx.ASSIGNMENT / mx.NOTEBOOK)
    answers = solutions(course[1])
    for cell in release["cells"]:
        if structure.grade_id(cell) in answers and cell["cell_type"] == "code":
            cell["source"] = answers[structure.grade_id(cell)]
    for student in ["mallory", HOSTILE["img"], HOSTILE["comma"], HOSTILE["glob"], HOSTILE["lookalike"],
                    HOSTILE["long"]]:
        folder = root / "submitted" / student / mx.ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / mx.NOTEBOOK).write_text(json.dumps(release), encoding="utf-8")
    out = io.StringIO()
    before = os.getcwd()
    os.chdir(root)
    try:
        import contextlib

        with contextlib.redirect_stdout(out):
            status = grade.main([mx.ASSIGNMENT, "-j", "1"])
    finally:
        os.chdir(before)
    return root, status, out.getvalue()


def test_make_grade_refuses_hostile_folders_and_grades_the_rest(graded):
    root, status, out = graded
    assert status == 1, out    # something was refused: the run says so in its status
    assert "5 submission folder(s) REFUSED" in out and "every submission was graded" not in out, out
    for name in ("img", "comma", "glob", "lookalike", "long"):
        assert f"refused: submitted/{grade.printable(HOSTILE[name])}/" in out, (name, out)
    with open(root / "grades.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["student_id"] for r in rows] == ["mallory"], rows
    assert rows[0]["grading_status"] == "ok" and float(rows[0]["score"]) > 0   # (written answers: by hand)
    assert sorted(p.name for p in (root / "autograded").iterdir()) == ["mallory"]
    assert sorted(p.name for p in (root / "feedback").iterdir()) == ["mallory"]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="normlab") as gb:
        assert [s.id for s in gb.students] == ["mallory"]


# --- Formgrader: a hostile id that reached the gradebook anyway ------------------------------------------

PAGE_ID = '<img src=x onerror="window.__pwned=\'id\'">'
SCRIPT_ID = '";window.__pwned="js";"'
FIRST = "<svg onload=\"window.__pwned='first'\">"
LAST = "';window.__pwned='last';'"


def _hostile_gradebook(root: Path) -> str:
    """Rename `mallory` to PAGE_ID in the gradebook and on disk, add SCRIPT_ID; returns the submission's id."""
    import sqlite3

    db = sqlite3.connect(root / "gradebook.db")
    with db:
        db.execute("UPDATE student SET id=?, first_name=?, last_name=? WHERE id='mallory'", (PAGE_ID, FIRST, LAST))
        db.execute("UPDATE submitted_assignment SET student_id=? WHERE student_id='mallory'", (PAGE_ID,))
        db.execute("INSERT INTO student (id, first_name, last_name) VALUES (?, ?, ?)", (SCRIPT_ID, LAST, FIRST))
    db.close()
    for top in ("submitted", "autograded", "feedback"):
        if (root / top / "mallory").exists():
            (root / top / "mallory").rename(root / top / PAGE_ID)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="normlab") as gb:
        return gb.find_submission_notebook(Path(mx.NOTEBOOK).stem, mx.ASSIGNMENT, PAGE_ID).id


@pytest.mark.lab
def test_formgrader_shows_hostile_ids_as_text_and_runs_nothing(graded):
    from browser_support import chromium_or_skip, launch
    from lab_support import CourseLab
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    root = graded[0].parent / "formgrader-course"
    shutil.copytree(graded[0], root)
    submission = _hostile_gradebook(root)
    quoted = {s: urllib.parse.quote(s, safe="") for s in (PAGE_ID, SCRIPT_ID)}
    pages = {   # page: (what it must show as text, a script-run check of its own)
        "formgrader/manage_students": ([PAGE_ID, SCRIPT_ID, f"{LAST}, {FIRST}"], "tr td.id"),
        f"formgrader/manage_students/{quoted[PAGE_ID]}": ([PAGE_ID], "tr td"),
        f"formgrader/manage_students/{quoted[SCRIPT_ID]}": ([SCRIPT_ID], None),
        f"formgrader/manage_students/{quoted[PAGE_ID]}/{mx.ASSIGNMENT}": ([PAGE_ID, mx.ASSIGNMENT], "tr td"),
        f"formgrader/manage_submissions/{mx.ASSIGNMENT}": ([PAGE_ID, f"{LAST}, {FIRST}"], "td.student-id:not(:empty)"),
        f"formgrader/gradebook/{mx.ASSIGNMENT}/{Path(mx.NOTEBOOK).stem}": ([f"{LAST}, {FIRST}"], "span.name-hidden"),
        f"formgrader/submissions/{submission}/": ([f"{LAST}, {FIRST}", Path(mx.NOTEBOOK).stem], "input.score"),
    }
    seen = {}
    with CourseLab(root) as server, sync_playwright() as pw:
        browser = launch(pw, executable)
        try:
            page = browser.new_page()
            for path, (texts, ready) in pages.items():
                response = page.goto(server.url(path), wait_until="load")
                if ready:
                    page.wait_for_selector(ready, timeout=30000)
                for eye in page.locator("span.glyphicon.name-hidden").all():   # names hidden until asked
                    eye.click()
                time.sleep(1.5)   # onerror and onload handlers are asynchronous
                seen[path] = page.evaluate("() => ({status: 0, pwned: window.__pwned || null, "
                                           "text: document.body.innerText})")
                seen[path]["status"] = response.status
                body = response.text()   # the page as the server sent it: no markup of an id or name in it
                seen[path]["raw"] = [x for x in (PAGE_ID, FIRST) if x in body]   # markup, as sent
                missing = [t for t in texts if t not in seen[path]["text"]]
                seen[path]["missing"] = missing
            # a message given to Formgrader's createModal as a string is shown as text
            page.goto(server.url("formgrader/manage_students"), wait_until="load")
            page.wait_for_selector("tr td.id", timeout=30000)
            page.evaluate("() => createModal('probe', 'probe', " + json.dumps(f"autograding {PAGE_ID} failed") + ")")
            time.sleep(1.5)
            modal = page.evaluate("() => ({pwned: window.__pwned || null, "
                                  "text: document.querySelector('#probe .modal-body').innerText})")
        finally:
            browser.close()
    for path, got in seen.items():
        assert got["status"] == 200 and got["pwned"] is None and got["missing"] == [] and got["raw"] == [], (
            path, {k: v for k, v in got.items() if k != "text"})
    assert modal == {"pwned": None, "text": f"autograding {PAGE_ID} failed"}, modal


def test_every_formgrader_template_renders_ids_as_text():
    """Without a browser: each of Formgrader's own pages, rendered as the instructor's server renders them
    (normlab_formgrader), holds no hostile value as markup and none outside a JSON string in its script."""
    import re
    import sys as _sys

    from nbgrader.server_extensions.formgrader import handlers

    _sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab" / "instructor" / "python"))
    import normlab_formgrader

    env = normlab_formgrader.environment(handlers.template_path)
    values = {k: PAGE_ID + SCRIPT_ID for k in ("student_id", "assignment_id", "notebook_id", "course_dir",
                                               "exchange", "current_config", "course_id", "url_prefix")}
    pages = sorted(p.name for p in Path(handlers.template_path).glob("*.tpl")
                   if not p.name.startswith(("base", "formgrade_404")) and not p.name.endswith("_base.tpl"))
    assert len(pages) >= 8, pages
    for name in pages:
        html = env.get_template(name).render(base_url="/base", default_timezone="+0000", windows=False,
                                             exchange_missing=True, **values)
        assert PAGE_ID not in html and SCRIPT_ID not in html, name
        for line in re.findall(r"^\s*var \w+ = \".*$", html, flags=re.M):   # a value in a script
            assert re.fullmatch(r'\s*var \w+ = "(?:[^"\\<>&\']|\\.)*";', line), (name, line)


@pytest.mark.parametrize("config", ["lab/instructor/jupyter_server_config.d/normlab_formgrader.json",
                                    "classroom/instructor/jupyter_server_config.json"])
def test_the_instructors_servers_load_formgrader_only_escaped(config):
    """`make lab-instructor` and the hub's instructor: nbgrader's own loading of Formgrader is off and
    normlab_formgrader's is on, so that without the escaping there is no Formgrader at all."""
    from scripts import lab as lab_script

    root = Path(__file__).resolve().parent.parent
    extensions = json.loads((root / config).read_text())["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False and extensions["normlab_formgrader"] is True
    env = lab_script.lab_env({}, instructor=True)
    assert (Path(env["PYTHONPATH"]) / "normlab_formgrader.py").is_file()


def test_grades_csv_written_during_a_run_shows_who_is_still_being_graded(tmp_path):
    """A run's interim grades.csv: finished students have their status, queued ones a row with no score and the
    'in progress' status (not 'not submitted'); the final export drops that status. The file is replaced whole."""
    from nbgrader.api import Gradebook

    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", course_id="normlab") as gb:
        gb.add_assignment(mx.ASSIGNMENT)
        for student in ("ann", "bob", "cy"):
            gb.add_student(student)
    (tmp_path / "autograded" / "cy" / mx.ASSIGNMENT).mkdir(parents=True)   # graded in an earlier run
    states = {"ann": {"status": "ok"}}
    progress = grade.ProgressExport(tmp_path, mx.ASSIGNMENT, states, ["ann", "bob", "cy"], every=0.0)
    progress()

    def rows():
        with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as fh:
            return {r["student_id"]: r for r in csv.DictReader(fh)}

    interim = rows()
    assert interim["ann"]["grading_status"] == "ok"
    for student in ("bob", "cy"):
        assert interim[student]["grading_status"] == grade.PENDING and interim[student]["score"] == "", interim
    assert not (tmp_path / "grades.csv.part").exists()
    states.update(bob={"status": "ok"}, cy={"status": "FAILED: a crash"})
    progress(final=True)
    final = rows()
    assert [final[s]["grading_status"] for s in ("ann", "bob", "cy")] == ["ok", "ok", "FAILED: a crash"]


def test_interim_exports_wait_their_turn(tmp_path, monkeypatch):
    """Between two exports at least `every` seconds pass, and five times what the last export took."""
    calls = []
    monkeypatch.setattr(grade, "export", lambda *a, **k: calls.append(k))
    clock = [100.0]
    monkeypatch.setattr(grade.time, "monotonic", lambda: clock[0])
    progress = grade.ProgressExport(tmp_path, mx.ASSIGNMENT, {}, ["ann"], every=15.0)
    for t in (101.0, 114.0, 116.0, 120.0, 131.5):
        clock[0] = t
        progress()
    assert len(calls) == 2 and calls[0] == {"pending": {"ann"}}
    progress(final=True)
    assert calls[-1] == {"pending": ()}
