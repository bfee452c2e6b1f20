""""Check yourself" in JupyterLab, in Chromium, under the lab's Content-Security-Policy (lab/normlab_csp.py: no
inline script runs): the cell `show_questions(label)` shows the same questions as the book, built by the same
frontend.js (an anywidget), answered right and wrong with feedback, kept over a reload of JupyterLab, and usable
from the keyboard. Run: `.venv/bin/pytest -p no:cacheprovider tests/test_lab_questions.py`."""

from __future__ import annotations

import nbformat
import pytest
from browser_support import chromium_or_skip
from lab_support import LabPage, LabServer, launch, server_tracebacks

from normlab_core import questions as Q

SECTION = "23.4"
NAME = "zz_questions.ipynb"
ROOT = ".jp-Notebook .nl-questions"
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab():
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with LabServer(notebooks=[]) as server, sync_playwright() as pw:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            f'from normlab_core.questions import show_questions\n\nshow_questions("{SECTION}")')])
        nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, server.root / NAME)
        browser = launch(pw, executable)
        page = LabPage(browser, server)
        yield page, server
        page.close()
        browser.close()


def item(page, qid):
    return page.page.locator(f'{ROOT} .nl-q-item[data-question="{qid}"]')


def test_questions_in_jupyterlab(lab):
    page, server = lab
    page.open(NAME)
    page.page.evaluate("() => localStorage.clear()")
    page.run_all()
    assert not page.output_problems()
    page.page.locator(f"{ROOT} .nl-q-item").first.wait_for(timeout=30000)
    qs = Q.questions(SECTION)
    ids = page.page.eval_on_selector_all(f"{ROOT} .nl-q-item", "els => els.map(e => e.dataset.question)")
    assert ids == [q.id for q in qs], "the widget shows the section's questions in order"
    # the fallback list is hidden beside the working widget
    assert not page.page.locator(".jp-Notebook .nl-q-fallback").first.is_visible()

    choice = next(q for q in qs if isinstance(q, Q.Choice))
    number = next(q for q in qs if isinstance(q, Q.Number))
    wrong = next(i for i in range(len(choice.options)) if i != choice.answer)
    c = item(page, choice.id)
    c.scroll_into_view_if_needed()
    c.locator("input[type=radio]").nth(wrong).check()
    c.locator("button.nl-q-check").click()
    assert c.get_attribute("data-state") == "wrong"
    assert choice.key() in c.locator(".nl-q-feedback").inner_text()
    assert choice.explain in c.locator(".nl-q-explain").inner_text()

    # keyboard only: focus the number's box by Tab from its legend, type, Enter
    n = item(page, number.id)
    n.scroll_into_view_if_needed()
    n.locator("legend").evaluate("l => { l.tabIndex = -1; l.focus(); }")
    page.page.keyboard.press("Tab")
    assert page.page.evaluate("() => document.activeElement.tagName") == "INPUT"
    page.page.keyboard.type(f"{number.answer:.6g}")
    page.page.keyboard.press("Enter")
    assert n.get_attribute("data-state") == "right"
    assert n.locator(".nl-q-feedback").inner_text().startswith("Right")

    # JupyterLab reloaded and the notebook run again: the answers come back (kept in the browser, not the kernel)
    page.page.reload(wait_until="load")
    page.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
    page.page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
    page.open(NAME)
    page.run_all()
    page.page.locator(f"{ROOT} .nl-q-item").first.wait_for(timeout=60000)
    c, n = item(page, choice.id), item(page, number.id)
    assert c.get_attribute("data-state") == "wrong"
    assert c.locator("input[type=radio]").nth(wrong).is_checked()
    assert n.get_attribute("data-state") == "right"

    csp = [p for p in page.problems if "Content Security Policy" in p or "Refused" in p]
    assert not csp, "\n".join(csp)
    assert not [p for p in page.problems if "page error" in p], page.problems
    page.close_notebook()
    assert not server_tracebacks(server.log())
