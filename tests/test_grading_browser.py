"""Formgrader's manual grading page and the feedback page of a hostile submission, in Chromium: nothing runs.

A copy of the course grades (in its sandbox, `normlab_grading.grade` with one worker) the hostile submission of
hostile_markup, whose written answer 5, added cells and outputs carry script in every form that used to reach
these pages (raw HTML, JavaScript and SVG outputs, event attributes, javascript: links, cell tags). Then the
instructors' JupyterLab (scripts/lab.py --instructor: its options and configuration folder) serves the course on
127.0.0.1, and Chromium opens the submission in Formgrader as the guide says, clicks the answer's links and
waits. Every payload would record itself in `window.__pwned` and write pwned-<tag>.txt into the course through
/api/contents with the instructor's xsrf cookie; neither may happen. The instructor must still see the answer's
words, the outputs' text and the PNG, Formgrader's own script must still work under the server's
Content-Security-Policy, and JupyterLab must start under it without a policy violation. The feedback page is
opened from disk, as a student opens it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, chromium_or_skip, confine
from grading_support import mx, released_course, require_sandbox, shared_tmp, solutions, structure
from hostile_markup import ANSWER_WORDS, SHOWN, hostile
from lab_support import CourseLab, LabPage, launch

SHOTS = SCREENSHOTS / "grading"

pytestmark = pytest.mark.lab
STUDENT = "mallory"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    chromium_or_skip()
    require_sandbox()
    course, source, released = released_course(tmp_path_factory.mktemp("formgrader") / "course",
                                                shared_tmp(tmp_path_factory))
    release = structure.load(course / "release" / mx.ASSIGNMENT / mx.NOTEBOOK)
    answers = solutions(source)
    for cell in release["cells"]:
        if structure.grade_id(cell) in answers and cell["cell_type"] == "code":
            cell["source"] = answers[structure.grade_id(cell)]
    folder = course / "submitted" / STUDENT / mx.ASSIGNMENT
    folder.mkdir(parents=True)
    import json

    (folder / mx.NOTEBOOK).write_text(json.dumps(hostile(release)), encoding="utf-8")
    from normlab_grading import grade

    before = os.getcwd()
    os.chdir(course)
    try:
        assert grade.main([mx.ASSIGNMENT, "-j", "1"]) == 0
    finally:
        os.chdir(before)
    return course


def _submission_id(course: Path) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="normlab") as gb:
        return gb.find_submission_notebook(Path(mx.NOTEBOOK).stem, mx.ASSIGNMENT, STUDENT).id


def _click_links_and_wait(page) -> None:
    for link in page.locator("a", has_text="click me").all() + page.locator("a", has_text="again").all() + \
            page.locator("a", has_text="a link").all():
        try:
            link.click(timeout=2000, no_wait_after=True)
        except Exception:  # noqa: BLE001, S110 - a link that is not there (escaped) cannot run either
            pass
    time.sleep(2.0)   # onerror handlers and fetches are asynchronous


def _shown(page) -> dict:
    return page.evaluate("""() => ({
      pwned: window.__pwned || null,
      text: document.body.innerText,
      images: Array.from(document.images).filter(i => i.src.startsWith('data:image/png')).map(i => i.naturalWidth),
    })""")


def test_formgrader_manual_grading_runs_no_student_markup(course):
    from playwright.sync_api import sync_playwright

    with CourseLab(course) as server, sync_playwright() as pw:
        browser = launch(pw, chromium_or_skip())
        try:
            lab = LabPage(browser, server)   # JupyterLab starts under the policy (it waits for the app)
            csp = [p for p in lab.problems if "Content Security Policy" in p or "Content-Security-Policy" in p]
            assert csp == [], csp
            page = lab.page
            response = page.goto(server.url(f"formgrader/submissions/{_submission_id(course)}/"), wait_until="load")
            assert response.status == 200
            policy = response.headers.get("content-security-policy", "")
            assert "object-src 'none'" in policy and "connect-src 'self'" in policy, policy
            page.wait_for_function("() => window.jQuery && document.querySelectorAll('input.score').length > 0",
                                   timeout=30000)
            _click_links_and_wait(page)
            shown = _shown(page)
            # Formgrader's own script works: it put the automatic scores, from its API, into the score boxes.
            page.wait_for_function("() => Array.from(document.querySelectorAll('input.score'))"
                                   ".some(i => (i.getAttribute('placeholder') || '') !== '')", timeout=30000)
            filled = page.evaluate("() => Array.from(document.querySelectorAll('input.score'))"
                                   ".map(i => i.getAttribute('placeholder'))")
            typeset = page.evaluate("() => document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container')"
                                    ".length")
            problems = list(lab.problems)
            lab.close()
        finally:
            browser.close()
    assert shown["pwned"] is None, shown["pwned"]
    assert sorted(p.name for p in course.rglob("pwned-*")) == []
    for words in (ANSWER_WORDS, *SHOWN):
        assert words in shown["text"], words
    assert shown["images"] == [4], shown["images"]
    assert any(v for v in filled), (filled, problems)
    assert typeset > 0, problems   # MathJax, from this server, typeset the answer's maths
    # (MathJax 2 probes for fonts with the address about:blank, which font-src refuses; nothing else may be refused)
    assert [p for p in problems if "Content Security Policy" in p and "'about:blank'" not in p] == [], problems


def test_the_feedback_page_runs_no_student_markup(course):
    from playwright.sync_api import sync_playwright

    page_path = course / "feedback" / STUDENT / mx.ASSIGNMENT / "exercises.html"
    assert page_path.is_file()
    with sync_playwright() as pw:
        browser = launch(pw, chromium_or_skip())
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            elsewhere = []
            confine(page, ("file:",), elsewhere)
            page.goto(page_path.as_uri(), wait_until="load")
            # the instructor's maths, typeset as MathML by the page itself: every formula is laid out
            maths = page.evaluate("""() => Array.from(document.querySelectorAll('math')).map(m => {
              const r = m.getBoundingClientRect(); return [r.width, r.height]; })""")
            first = page.locator("math").first
            first.scroll_into_view_if_needed()
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "feedback-1280.png"))
            page.set_viewport_size({"width": 390, "height": 844})
            first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "feedback-390.png"))
            _click_links_and_wait(page)
            shown = _shown(page)
            context.close()
        finally:
            browser.close()
    assert elsewhere == [], f"the feedback page asked another host: {elsewhere}"
    assert len(maths) > 50 and all(w > 0 and h > 0 for w, h in maths), maths[:5]
    assert shown["pwned"] is None, shown["pwned"]
    for words in (ANSWER_WORDS, *SHOWN):
        assert words in shown["text"], words
    assert shown["images"] == [4], shown["images"]
