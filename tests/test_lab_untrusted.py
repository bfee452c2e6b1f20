"""A notebook someone else wrote runs nothing in the JupyterLab that opens it, and the book's own notebooks keep their
prose numbers and live widgets under the same Content-Security-Policy (lab/normlab_csp.py).

For the learners' JupyterLab (`make lab`'s configuration, lab/learner) and the instructors' (`make lab-instructor`,
lab/instructor), one private server each, in Debian's chromium:

* the untrusted notebook of untrusted_support (jupyterlab-myst `{iframe}` with `javascript:` and `data:` targets in
  both fence forms, raw HTML, links, figures, cards, mermaid, a stored `{eval}` result in HTML) is opened, rendered
  and each of its `javascript:` links clicked: no payload leaves a trace (a flag in any frame, a console line, a
  request to the server, the server's log), and no request leaves for another host;
* the page's own inline script ran (it takes the token out of the address bar: the policy allows it by hash);
* 23.1 shows the values of its `{eval}` expressions as stored in the notebook, and after Run All its live
  explorable shows a frame (an anywidget module imported from a blob: URL, a blob: image), with no console error,
  page error or refused resource;
* JupyterLab's HTML viewer still shows an HTML file (a frame from a blob: URL);
* every page of JupyterLab sends the policy; Formgrader's pages (instructors) send their own.

The hub's servers get the same check in tests/test_classroom.py. Marker `lab` (`make test-lab`); skips without
chromium, fails under NORMLAB_REQUIRE_BROWSER=1. If it fails: the policy is missing or lets script run; see
lab/normlab_csp.py and the configuration files that call it (lab/learner, lab/instructor, classroom/student).
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from browser_support import chromium_or_skip
from lab_support import NOTEBOOKS, LabPage, LabServer, launch, server_tracebacks
from untrusted_support import (
    JS_CLICK_LINKS,
    JS_FRAMES,
    JS_KERNEL_IDLE,
    JS_RENDERED,
    MARKER,
    NAME,
    Traces,
    notebook,
    ran,
)

from scripts import lab as lab_script

pytestmark = pytest.mark.lab

BOOK = "01_what_you_will_learn.ipynb"
VIEWER = "viewer.html"

JS_OPEN_HTML = """async (path) => {
  const w = await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'HTML Viewer'});
  await w.context.ready;
}"""

# The text of the rendered Markdown cells of the current notebook.
JS_MARKDOWN_TEXT = """() => Array.from(window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-MarkdownCell'))
  .map(c => c.textContent).join('\\n')"""

# The live explorable's frame: a blob: image that decoded.
JS_FRAME_SHOWN = """() => Array.from(document.querySelectorAll('img.nl-frame'))
  .some(i => i.src.startsWith('blob:') && i.complete && i.naturalWidth > 0)"""


def expressions(name: str) -> list[tuple[str, str]]:
    """(expression, the text/plain of its stored value without a string's quotes) of notebook `name`."""
    nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    found = []
    for cell in nb["cells"]:
        for e in cell.get("metadata", {}).get("user_expressions", []):
            text = e["result"]["data"]["text/plain"]
            found.append((e["expression"], text[1:-1] if text[:1] in "'\"" and text[-1:] == text[:1] else text))
    return found


def header(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.headers.get("Content-Security-Policy", "")


def server(instructor: bool) -> LabServer:
    """A private JupyterLab on 23.1 and the untrusted notebook, configured as `make lab` or `make lab-instructor`."""
    lab = LabServer(notebooks=[BOOK])
    env = {k: v for k, v in lab.env.items() if k != "JUPYTER_CONFIG_PATH"}
    lab.env = lab_script.lab_env(env, instructor)
    (lab.root / NAME).write_text(notebook(lab.base), encoding="utf-8")
    (lab.root / VIEWER).write_text("<!doctype html><title>A page</title><h4>Shown</h4>", encoding="utf-8")
    return lab


@pytest.mark.parametrize("who", ["learner", "instructor"])
def test_an_untrusted_notebook_runs_nothing_and_the_book_still_works(who):
    chromium_or_skip()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    instructor = who == "instructor"
    problems = []
    with server(instructor) as lab_server, sync_playwright() as pw:
        policy = header(lab_server.url("lab"))
        if "script-src" not in policy or "'unsafe-inline'" in policy.split("script-src")[1].split(";")[0]:
            problems.append(f"JupyterLab's page sends no policy that forbids inline script: {policy!r}")
        if instructor:
            graders = header(lab_server.url("formgrader/manage_assignments"))
            if "default-src 'self'" not in graders or graders == policy:
                problems.append(f"Formgrader's pages send {graders!r}, not their own policy")
        browser = launch(pw, chromium_or_skip())
        lab = LabPage(browser, lab_server)
        traces = Traces(lab.context)
        if "token=" in lab.page.url:
            problems.append("JupyterLab's own inline script did not run (the token is still in the address)")

        lab.open(NAME)
        lab.page.wait_for_function(JS_RENDERED, arg=MARKER, timeout=30000)
        frames = lab.page.evaluate(JS_FRAMES)
        clicked = lab.page.evaluate(JS_CLICK_LINKS)
        # Something the page must do after every frame above has had its chance to load and run: the kernel
        # starts and answers a request sent now, through the same page.
        lab.page.wait_for_function(JS_KERNEL_IDLE, timeout=60000)
        assert lab.kernel("print(6 * 7)").strip() == "42"
        lab.page.wait_for_load_state("load")
        problems += [f"the untrusted notebook ran script: {t}" for t in ran(lab.page, traces, lab_server.log())]
        problems += [p for p in lab.problems if p.startswith("blocked request")]
        print(f"{who}: frames {frames}, {clicked} javascript: links clicked, {len(traces.refused)} refusals")
        lab.close_notebook()
        lab.problems.clear()

        # JupyterLab's HTML viewer (how a learner reads a feedback page) shows a file from a blob: URL in a frame.
        lab.page.evaluate(JS_OPEN_HTML, VIEWER)
        try:
            lab.page.frame_locator(".jp-HTMLViewer iframe").first.locator("h4", has_text="Shown").wait_for(
                timeout=30000)
        except PlaywrightTimeout:
            problems.append(f"JupyterLab's HTML viewer does not show {VIEWER}")

        lab.open(BOOK)
        values = [v for _, v in expressions(BOOK)]
        try:   # jupyterlab-myst renders the cells after the notebook opens
            lab.page.wait_for_function("vs => { const t = (" + JS_MARKDOWN_TEXT + ")(); "
                                       "return vs.every(v => t.includes(v)); }", arg=values, timeout=30000)
        except PlaywrightTimeout:
            pass
        text = lab.page.evaluate(JS_MARKDOWN_TEXT)
        missing = [(e, v) for e, v in expressions(BOOK) if v not in text]
        if missing:
            problems.append(f"{BOOK}: the {{eval}} values {missing} are not shown")
        lab.run_all()
        try:
            lab.page.wait_for_function(JS_FRAME_SHOWN, timeout=60000)
        except PlaywrightTimeout:
            problems.append(f"{BOOK}: no live frame appeared after Run All")
        problems += [f"{BOOK}: {p}" for p in lab.output_problems()]
        problems += [f"{BOOK}: {p}" for p in lab.problems]
        lab.close()
        browser.close()
        tracebacks = server_tracebacks(lab_server.log())
        if tracebacks:
            problems.append(f"server tracebacks: {lab_server.log()[-3000:]}")
    assert not problems, f"{who}'s JupyterLab:\n" + "\n".join(problems)
