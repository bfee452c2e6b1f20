"""The classroom end to end: JupyterHub on 127.0.0.1, real Unix accounts, Chromium (`make test-classroom`).

scripts/classroom.py creates an instructor and three students (Unix accounts with homes of mode 700 and their
own passwords, checked by PAM), nbgrader's file-system exchange, and the instructor's course folder (a copy of
assignments/ with chapter 23 generated), and starts JupyterHub with configurable-http-proxy from npm. Then,
through the pages people use:

1. the instructor logs in, finds the Formgrader (the students must not), and releases chapter 23 there;
2. each student logs in, fetches chapter 23 from the Assignments list, answers it (one with the reference
   solutions, one with a mistake in 2(a), one leaves it blank: the answers are written into the student's
   notebook by the student's own page, through their server's contents API) and submits it from the list;
3. the instructor collects from the Formgrader, runs `make grade` in the course folder as their own account
   (each submission in its sandbox, as always), and releases the feedback from the Formgrader;
4. each student fetches their feedback from the Assignments list, opens it in JupyterLab, and sees their own
   score, which must equal grades.csv and the points of their answers; no student can open another's
   server, list the exchange's submissions or feedback, or read another's home;
5. the instructor sets a due date in the Formgrader; the blank student then submits the reference solutions
   after it; collecting again keeps the submission made before the due date (the guide's policy,
   ExchangeCollect.before_duedate), so their grade stays 0;
6. `make grades-lms` turns grades.csv into the Canvas and Moodle files, checked against the scores.

Screenshots of each role's pages (1280x900) go to _build/screenshots/classroom/, the time of every step to
_build/screenshots/classroom/timings.txt. Skips when not root or without chromium (fails instead under
NORMLAB_REQUIRE_BROWSER=1). Everything the set-up made (accounts, homes, processes, the exchange) goes at the end.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from browser_support import SCREENSHOTS, chromium_or_skip, launch
from grading_support import WRONG, auto_score, mx, require_sandbox, solutions
from untrusted_support import JS_CLICK_LINKS, JS_RENDERED, MARKER, NAME, Traces, notebook, ran

from scripts import classroom as hub
from scripts.browser import confine

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.classroom, pytest.mark.timeout(900)]
SHOTS = SCREENSHOTS / "classroom"
WAIT = 120_000      # ms: the longest any one page action may take (spawning a server on two busy cores)
A = mx.ASSIGNMENT
SCORE = re.compile(r"exercises \(Score: ([0-9.]+) / ([0-9.]+)\)")


def require_classroom() -> None:
    problems = hub.missing()
    if problems:
        msg = "the classroom test needs " + "; ".join(problems)
        if os.environ.get("NORMLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(msg + " (NORMLAB_REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(msg)
    chromium_or_skip()
    require_sandbox()


class Steps:
    """Times each step; writes them to timings.txt (also on failure, with the step that failed)."""

    def __init__(self):
        self.done: list[tuple[str, float]] = []
        self.t0 = time.monotonic()

    @contextlib.contextmanager
    def __call__(self, name: str):
        t = time.monotonic()
        try:
            yield
        except BaseException:
            self.done.append((f"{name} (FAILED)", time.monotonic() - t))
            self.write()
            raise
        self.done.append((name, time.monotonic() - t))
        self.write()

    def write(self):
        SHOTS.mkdir(parents=True, exist_ok=True)
        lines = [f"{secs:7.1f} s  {name}" for name, secs in self.done]
        lines.append(f"{time.monotonic() - self.t0:7.1f} s  total")
        (SHOTS / "timings.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


class Person:
    """One user's browser context on the hub: logs in with their password, reports page errors and any
    request that leaves 127.0.0.1 (blocked)."""

    def __init__(self, browser, room: hub.Classroom, name: str):
        self.room, self.name = room, name
        self.base = f"{room.url}user/{name}/"
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(WAIT)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        confine(self.page, (room.url,), self.problems)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))

    def submit_login(self):
        p = self.page
        p.goto(self.room.url + "hub/login")
        p.fill("#username_input", self.name)
        p.fill("#password_input", self.room.passwords[self.name])
        p.click("#login_submit", no_wait_after=True)

    def wait_for_lab(self):
        p = self.page
        p.wait_for_url(re.compile(rf"/user/{re.escape(self.name)}/lab"), timeout=WAIT)
        p.wait_for_selector("#jp-main-dock-panel", timeout=WAIT)
        p.wait_for_selector("text=Nbgrader", timeout=WAIT)   # the menu: the lab extension has loaded

    def nbgrader_menu(self) -> list[str]:
        p = self.page
        p.click("#jp-MainMenu >> text=Nbgrader")
        p.wait_for_selector("#jp-mainmenu-nbgrader .lm-Menu-itemLabel")
        labels = [t.strip() for t in p.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel").all_inner_texts()]
        p.keyboard.press("Escape")
        return labels

    def open_assignment_list(self):
        p = self.page
        p.click("#jp-MainMenu >> text=Nbgrader")
        p.click("#jp-mainmenu-nbgrader >> text=Assignment List")
        p.wait_for_selector("#released_assignments_list", timeout=WAIT)
        self.wait_list_loaded()

    def wait_list_loaded(self):
        self.page.wait_for_function("""() => ['released', 'fetched', 'submitted'].every(k => {
            const el = document.getElementById(k + '_assignments_list_loading'); return el && el.hidden; })""",
                                    timeout=WAIT)

    def row(self, section: str):
        return self.page.locator(f"#{section}_assignments_list .list_item", has_text=A)

    def api(self, method: str, path: str, body=None) -> dict:
        """A request to this user's own server from their page (their cookies and XSRF token)."""
        return self.page.evaluate("""async ([method, url, body]) => {
            const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || '';
            const r = await fetch(url, {method, headers: {'X-XSRFToken': decodeURIComponent(xsrf),
                                        'Content-Type': 'application/json'}, body: body && JSON.stringify(body)});
            const text = await r.text();
            return {status: r.status, text,
                    json: (r.headers.get('content-type') || '').includes('json') ? JSON.parse(text) : null};
        }""", [method, self.base + path, body])

    def shot(self, name: str):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"))

    def close(self):
        self.context.close()


def answered(released: nbformat.NotebookNode, replace: dict[str, str]) -> dict:
    nb = nbformat.from_dict(json.loads(json.dumps(released)))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in replace:
            cell.source = replace[gid]
    return nb


def grades_csv(course: Path) -> dict[str, dict]:
    with open(course / "grades.csv", newline="") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh) if r["assignment"] == A}


def close_modal(page) -> str:
    """Wait for the formgrader's result dialog (it opens when the command has finished), check that it says
    Success, close it with OK, and return its text."""
    modal = page.locator(".modal", has=page.locator(".modal-title")).last
    modal.wait_for(state="visible", timeout=WAIT)
    text = modal.inner_text()
    title = modal.locator(".modal-title").inner_text().strip()
    assert title == "Success", text
    modal.locator(".modal-footer button[data-dismiss=modal]").first.click()
    modal.wait_for(state="detached", timeout=WAIT)
    return text


def formgrader_row(person: Person):
    p = person.page
    p.goto(person.base + "formgrader/manage_assignments")
    row = p.locator("#main-table tr", has_text=A).first
    row.wait_for(timeout=WAIT)
    return row


def untrusted_runs_nothing(person: Person) -> list[str]:
    """Puts untrusted_support's notebook into `person`'s home, opens it in their JupyterLab (a page of its own),
    clicks its javascript: links; what ran (untrusted_support.ran), and what is wrong with the page's policy. The
    hub's servers send lab/normlab_csp.py's policy (classroom/student, lab/instructor)."""
    saved = person.api("PUT", f"api/contents/{NAME}", {"type": "notebook", "format": "json",
                                                        "content": json.loads(notebook(person.base))})
    assert saved["status"] in (200, 201), saved
    traces = Traces(person.context)
    page = person.context.new_page()
    confine(page, (person.room.url,), person.problems)
    response = page.goto(person.base + f"lab/tree/{NAME}")
    policy = response.headers.get("content-security-policy", "")
    found = [] if "script-src" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0] \
        else [f"JupyterLab's page sends no policy that forbids inline script: {policy!r}"]
    page.wait_for_function(JS_RENDERED, arg=MARKER, timeout=WAIT)
    page.evaluate(JS_CLICK_LINKS)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=WAIT)   # kernel up
    found += ran(page, traces)
    page.close()
    return found


def as_student_can(room, who: str, code: str) -> subprocess.CompletedProcess:
    return room.as_user(who, [str(room.bin / "python"), "-c", code], timeout=60)


def test_the_classroom_path(tmp_path):
    require_classroom()
    from playwright.sync_api import sync_playwright

    steps = Steps()
    source = nbformat.read(mx.COURSE / "source" / A / mx.NOTEBOOK, as_version=4)
    reference = solutions(source)
    with steps("hub set-up: accounts, exchange, course (make release), JupyterHub + proxy"):
        room = hub.Classroom(3, startup_timeout=120).__enter__()
    steps.done[-1:] = [(f"{steps.done[-1][0]} [{', '.join(f'{k} {v:.1f} s' for k, v in room.timings.items())}]",
                        steps.done[-1][1])]
    try:
        correct, partly, blank = room.students
        answers = {correct: reference, partly: {**reference, WRONG["2a"][0]: WRONG["2a"][1]}, blank: {}}
        _walk(room, steps, answers, sync_playwright)
    finally:
        with steps("tear-down: hub, servers, accounts, exchange"):
            made = [room.instructor, *room.students]
            room.__exit__(None, None, None)
        for name in made:
            assert subprocess.run(["id", name], capture_output=True).returncode != 0, f"account {name} left behind"
        assert not room.state.exists()


def _walk(room, steps, answers, sync_playwright):
    correct, partly, blank = room.students
    with sync_playwright() as pw:
        browser = launch(pw)
        people = {}
        try:
            with steps("everyone: log in (the hub spawns the four servers at once)"):
                for name in [room.instructor, *room.students]:
                    people[name] = Person(browser, room, name)
                    people[name].submit_login()
                for name in [room.instructor, *room.students]:
                    people[name].wait_for_lab()
                teacher = people[room.instructor]
                assert "Formgrader" in teacher.nbgrader_menu(), "the instructor's JupyterLab has no Formgrader"

            for name in [room.instructor, room.students[0]]:
                with steps(f"{name}: a notebook someone else wrote runs nothing in JupyterLab"):
                    assert untrusted_runs_nothing(people[name]) == [], f"script ran in {name}'s JupyterLab"

            with steps("instructor: release chapter23 from the formgrader"):
                row = formgrader_row(teacher)
                assert "draft" in row.inner_text()
                row.locator("td.release a").click()
                log = close_modal(teacher.page)
                assert "Released as:" in log or "released" in log.lower(), log
                row = formgrader_row(teacher)
                assert "released" in row.locator("td.status").inner_text()
                teacher.shot("instructor-formgrader-released")

            for student in room.students:
                with steps(f"student {student}: fetch, answer, submit"):
                    me = people[student]
                    menu = me.nbgrader_menu()
                    assert "Assignment List" in menu, menu
                    assert not any("Formgrader" in m or "Course" in m for m in menu), f"instructor tools: {menu}"
                    assert me.api("GET", "formgrader/api/assignments")["status"] == 404, "a student has the formgrader"
                    me.open_assignment_list()
                    me.row("released").locator("button", has_text="Fetch").click()
                    me.row("fetched").wait_for(timeout=WAIT)
                    path = f"api/contents/{A}/{mx.NOTEBOOK}"
                    got = me.api("GET", path + "?content=1")
                    assert got["status"] == 200, got
                    released = nbformat.from_dict(got["json"]["content"])
                    saved = me.api("PUT", path, {"type": "notebook", "format": "json",
                                                 "content": answered(released, answers[student])})
                    assert saved["status"] == 200, saved
                    me.row("fetched").locator("button", has_text="Submit").click()
                    me.row("submitted").wait_for(timeout=WAIT)
                    me.shot(f"student-{student[len(room.prefix):]}-assignments-submitted")

            with steps("isolation: no student reaches another's server, home or submission"):
                other = f"{room.url}user/{correct}/api/contents"
                r = people[blank].page.goto(other)
                assert r.status in (403, 404) or f"/user/{correct}/" not in people[blank].page.url, r.status
                inbound = room.exchange / hub.COURSE_ID / "inbound"
                feedback_dir = room.exchange / hub.COURSE_ID / "feedback"
                for code, what in [(f"import os; os.listdir({str(inbound)!r})", "list the submissions"),
                                   (f"import os; os.listdir({str(room.home(correct))!r})", "read another's home"),
                                   (f"import os; os.listdir({str(room.course)!r})", "read the course folder")]:
                    proc = as_student_can(room, blank, code)
                    assert proc.returncode != 0 and "PermissionError" in proc.stderr, f"a student could {what}"
                assert oct(inbound.stat().st_mode & 0o7777) == "0o2733"
                people[blank].page.goto(people[blank].base + "lab")
                people[blank].page.wait_for_selector("#jp-main-dock-panel")

            with steps("instructor: collect from the formgrader"):
                row = formgrader_row(teacher)
                row.locator("td.collect a").click()
                log = close_modal(teacher.page)
                row = formgrader_row(teacher)
                assert row.locator("td.num-submissions").inner_text().strip() == "3", log
                for s in room.students:
                    assert (room.course / "submitted" / s / A / mx.NOTEBOOK).is_file()
                blank_submission = (room.course / "submitted" / blank / A / mx.NOTEBOOK).read_bytes()

            with steps("instructor: make grade (sandboxed) in the course folder"):
                graded = room.as_user(room.instructor, ["make", "-C", str(room.course), "grade",
                                                        f"PYTHON={room.bin}/python"], timeout=600)
                assert graded.returncode == 0, graded.stdout + graded.stderr
                assert "unsafe" not in graded.stdout.lower()
                grades = grades_csv(room.course)
                scores = {s: float(grades[s]["score"]) for s in room.students}
                want = {correct: auto_score(), partly: auto_score(("2a",)), blank: 0.0}   # read off the source
                assert scores == want, (scores, want)
                assert all(grades[s]["grading_status"] == "ok" for s in room.students), grades

            with steps("instructor: release feedback from the formgrader"):
                row = formgrader_row(teacher)
                row.locator("td.release-feedback a").click()
                log = close_modal(teacher.page)
                assert "error" not in log.lower(), log
                teacher.page.goto(teacher.base + f"formgrader/manage_submissions/{A}")
                for s in room.students:   # the formgrader's scores are grades.csv's
                    line = teacher.page.locator("tr", has_text=s).first
                    line.wait_for(timeout=WAIT)
                    want = f"{float(grades[s]['score']):g} / {float(grades[s]['max_score']):g}"
                    assert want in line.inner_text(), (s, want, line.inner_text())
                    name = f"{hub.ROSTER_SURNAME}, {room.first_name(s)}"   # nbgrader lists "last, first"
                    assert name in line.inner_text(), (s, name, line.inner_text())
                teacher.shot("instructor-formgrader-submissions")

            with steps("instructor: open a submission in the formgrader's manual grading page"):
                listed = teacher.api("GET", f"formgrader/api/submitted_notebooks/{A}/{mx.NOTEBOOK[:-6]}")
                assert listed["status"] == 200, listed
                sid = next(n["id"] for n in json.loads(listed["text"]) if n["student"] == partly)   # (text/html)
                response = teacher.page.goto(teacher.base + f"formgrader/submissions/{sid}/")
                policy = response.headers.get("content-security-policy", "")
                assert "default-src 'self'" in policy and "object-src 'none'" in policy, policy  # lab/instructor's
                # the exercises' maths typeset by MathJax from the instructor's own server, under /user/<name>/
                teacher.page.wait_for_function("() => document.querySelectorAll('.MathJax, .MathJax_Display')"
                                               ".length > 50", timeout=WAIT)
                teacher.page.wait_for_function("() => Array.from(document.querySelectorAll('input.score'))"
                                               ".some(i => (i.getAttribute('placeholder') || '') !== '')",
                                               timeout=WAIT)   # Formgrader's own script works under the policy
                teacher.shot("instructor-formgrader-manual-grading")

            seen = {}
            for student in room.students:
                with steps(f"student {student}: fetch feedback and read their score"):
                    me = people[student]
                    me.open_assignment_list()
                    me.row("submitted").locator("button", has_text="Fetch Feedback").click()
                    me.page.locator("#submitted_assignments_list a", has_text="view feedback").first.wait_for(
                        timeout=WAIT)
                    me.page.locator("#submitted_assignments_list a", has_text="view feedback").first.click()
                    entry = me.page.locator(".jp-DirListing-item", has_text="exercises.html").first
                    entry.wait_for(timeout=WAIT)
                    entry.dblclick()
                    frame = me.page.frame_locator(".jp-HTMLViewer iframe, iframe").first
                    heading = frame.locator("h4", has_text="Score:").first
                    heading.wait_for(timeout=WAIT)
                    m = SCORE.search(heading.inner_text())
                    assert m, heading.inner_text()
                    seen[student] = (float(m.group(1)), float(m.group(2)))
                    # the exercise text's maths, typeset by the viewer itself (MathML; the viewer runs no script)
                    sizes = frame.locator("math").evaluate_all("ms => ms.map(m => m.getBoundingClientRect().width)")
                    assert len(sizes) > 50 and min(sizes) > 0, sizes[:5]
                    me.shot(f"student-{student[len(room.prefix):]}-feedback")
                    mine = sorted((room.home(student) / A / "feedback").glob(f"*/{mx.NOTEBOOK[:-6]}.html"))
                    assert len(mine) == 1, mine
                    page = mine[0].read_text(encoding="utf-8")
                    for s in room.students:
                        assert s not in page or s == student
                    assert "HIDDEN TESTS" not in page and "hidden_checks" not in page
                    # another student's feedback cannot be listed (feedback/ is 711: fetched by its hash only)
                    proc = as_student_can(room, student, f"import os; os.listdir({str(feedback_dir)!r})")
                    assert proc.returncode != 0 and "PermissionError" in proc.stderr, "feedback/ is listable"
            grades = grades_csv(room.course)
            for s in room.students:
                assert seen[s] == (float(grades[s]["score"]), float(grades[s]["max_score"])), (s, seen, grades[s])
            assert len({v[0] for v in seen.values()}) == 3, seen   # three different scores: no mix-up unnoticed

            with steps("late: due date set in the formgrader; a resubmission after it is not collected"):
                due = time.gmtime(time.time() - 2)
                row = formgrader_row(teacher)
                row.locator("td.edit a").click()
                modal = teacher.page.locator("#edit-assignment-modal")
                modal.wait_for(state="visible")
                modal.locator("input.modal-duedate").evaluate(
                    "(el, v) => { el.value = v; el.dispatchEvent(new Event('change')); }",
                    time.strftime("%Y-%m-%dT%H:%M:%S", due))
                modal.locator("input.modal-timezone").fill("+0000")
                modal.locator("button.save").click()
                modal.wait_for(state="detached", timeout=WAIT)
                row = formgrader_row(teacher)
                assert time.strftime("%Y-%m-%d", due) in row.locator("td.duedate").inner_text()
                teacher.shot("instructor-formgrader-duedate")
                time.sleep(2)   # the resubmission's timestamp is later than the due date
                late = people[blank]
                late.open_assignment_list()
                path = f"api/contents/{A}/{mx.NOTEBOOK}"
                got = late.api("GET", path + "?content=1")
                late.api("PUT", path, {"type": "notebook", "format": "json",
                                       "content": answered(nbformat.from_dict(got["json"]["content"]),
                                                           answers[correct])})
                before = (room.course / "submitted" / blank / A / "timestamp.txt").read_text()
                late.row("fetched").locator("button", has_text="Submit").click()
                late.page.wait_for_function(
                    "() => document.querySelectorAll('#submitted_assignments_list .list_item').length >= 2",
                    timeout=WAIT)
                row = formgrader_row(teacher)
                row.locator("td.collect a").click()
                close_modal(teacher.page)
                after = (room.course / "submitted" / blank / A / "timestamp.txt").read_text()
                assert after == before, "the submission after the due date replaced the one before it"
                kept = (room.course / "submitted" / blank / A / mx.NOTEBOOK).read_bytes()
                assert kept == blank_submission, "the collected notebook changed after the due date"
                assert float(grades_csv(room.course)[blank]["score"]) == 0.0

            with steps("make grades-lms: Canvas and Moodle files from grades.csv"):
                out = room.state / "lms"
                proc = subprocess.run(["make", "-C", str(ROOT), "grades-lms",
                                       f"LMS_ARGS=--grades {room.course / 'grades.csv'} --out {out}"],
                                      capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, proc.stdout + proc.stderr
                points = sum(float(c.metadata["nbgrader"]["points"]) for c in
                             nbformat.read(mx.COURSE / "source" / A / mx.NOTEBOOK, as_version=4).cells
                             if c.metadata.get("nbgrader", {}).get("points"))
                with open(out / "canvas-gradebook.csv", newline="", encoding="utf-8-sig") as fh:
                    canvas = list(csv.reader(fh))
                assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A]
                assert canvas[1][0] == "Points Possible" and float(canvas[1][5]) == points
                grades = grades_csv(room.course)
                assert {r[3]: float(r[5]) for r in canvas[2:]} == {s: float(grades[s]["score"]) for s in room.students}
                with open(out / "moodle-grades.csv", newline="", encoding="utf-8-sig") as fh:
                    moodle = list(csv.reader(fh))
                assert moodle[0] == ["Username", "Email address", A]
                assert {r[0]: float(r[2]) for r in moodle[1:]} == {s: float(grades[s]["score"]) for s in room.students}

            # Every page asked only 127.0.0.1: the feedback page too, whose maths is MathML in the page (no MathJax
            # from a CDN, normlab_grading/feedback.py). Any request to another host, or error, fails the test.
            problems = [f"{n}: {p}" for n, person in people.items() for p in person.problems]
            assert not problems, problems
        except BaseException:
            for name, person in people.items():
                with contextlib.suppress(Exception):
                    person.shot(f"FAILED-{name[len(room.prefix):]}")
            (SHOTS / "hub.log").write_text(room.log()[-200_000:], encoding="utf-8")
            raise
        finally:
            for person in people.values():
                with contextlib.suppress(Exception):
                    person.close()
            browser.close()


# -- the book's "Open in your class's JupyterHub" link (nbgitpuller) -----------------------------------------
HUB_NOTEBOOK = "notebooks/10_exercises.ipynb"   # the exercises page's notebook


@contextlib.contextmanager
def served_clone():
    """A bare clone of this repository's HEAD (branch `book`), served read-only by `git daemon` on 127.0.0.1, as a
    course's git host would serve it; yields (git address, branch, commit)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="normlab-hub-git-"))
    folder.chmod(0o755)
    daemon = None
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        bare = folder / "normlab.git"
        subprocess.run(["git", "clone", "--quiet", "--bare", "--no-local", str(ROOT), str(bare)], check=True)
        subprocess.run(["git", "-C", str(bare), "update-ref", "refs/heads/book", commit], check=True)
        port = hub.free_port()
        daemon = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={folder}", "--listen=127.0.0.1",
                                   f"--port={port}", "--reuseaddr", str(folder)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        address = f"git://127.0.0.1:{port}/normlab.git"
        for _ in range(100):   # until the daemon answers
            if subprocess.run(["git", "ls-remote", address, "book"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"git daemon does not serve {address}")
        yield address, "book", commit
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_student_follows_the_books_hub_link_into_the_notebook():
    """The link the site puts on the exercises page (scripts/finish_site.py: hub_settings, hub_link), for a hub
    at the classroom's address and this repository served by git: the student logs in, follows it, nbgitpuller
    clones the repository into ~/normlab and JupyterLab opens the notebook."""
    require_classroom()
    from playwright.sync_api import sync_playwright

    from scripts import finish_site

    with served_clone() as (address, branch, commit), hub.Classroom(1, startup_timeout=120) as room:
        settings = finish_site.hub_settings({"classroom_hub": {"jupyterhub_url": room.url, "repository": address,
                                                               "branch": branch, "folder": "normlab"}})
        link = finish_site.hub_link(HUB_NOTEBOOK, settings)
        assert link.startswith(room.url + "hub/user-redirect/git-pull?"), link
        student = room.students[0]
        with sync_playwright() as pw:
            browser = launch(pw)
            try:
                person = Person(browser, room, student)
                person.submit_login()
                person.wait_for_lab()
                p = person.page
                p.goto(link)
                p.wait_for_url(re.compile(rf"/user/{re.escape(student)}/lab/tree/normlab/{re.escape(HUB_NOTEBOOK)}"),
                               timeout=WAIT)
                p.wait_for_selector("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell",
                                    timeout=WAIT)
                tab = p.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
                assert tab.inner_text().strip() == Path(HUB_NOTEBOOK).name, \
                    f"the current tab is {tab.inner_text()!r} (pip install -r classroom/requirements.txt: nbgitpuller)"
                # its first heading, rendered: the title of the repository's notebook
                first = nbformat.read(ROOT / HUB_NOTEBOOK, as_version=4).cells[0].source.splitlines()[0]
                heading = p.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden) "
                                    ".jp-MarkdownCell h1").first
                heading.wait_for(timeout=WAIT)
                assert first.lstrip("# ").strip() in heading.inner_text(), (first, heading.inner_text())
                SHOTS.mkdir(parents=True, exist_ok=True)
                p.screenshot(path=str(SHOTS / "student-hub-link-opened.png"))
                assert not person.problems, person.problems
            finally:
                browser.close()
        # the notebook the student's server opened is the repository's, in the student's own home
        cloned = room.home(student) / "normlab" / HUB_NOTEBOOK
        expected = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{HUB_NOTEBOOK}"], check=True,
                                  capture_output=True).stdout
        assert cloned.read_bytes() == expected
        assert cloned.stat().st_uid == hub.pwd.getpwnam(student).pw_uid
