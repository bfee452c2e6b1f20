"""Live views that survive, in a real JupyterLab (Debian's chromium through Playwright), on a notebook of its own whose
text quotes a number ({eval}, as every section notebook's does) above a live explorable and a long cell:

- run and saved, the notebook opened in a second browser tab, the page reloaded, and the notebook closed and
  reopened (its kernel still running) all show live controls, not the static figure, and a move there is drawn;
- a slider moved while a cell runs keeps the kernel indicator "busy" until the cell ends, and the move is drawn then;
- after a kernel restart the figure says to run the notebook from the top, and Run All brings live controls back;
- the Save PNG button downloads the frame shown, byte for byte the kernel's.

Screenshots of each state at 1280x900 and 390x844 go to SHOTS (default _build/screenshots/live). Marker `lab`; skips
without chromium. Fix a failure with the files it names: lab/normlab_notary.py (trust of a saved notebook),
lab-settings/overrides.json then `make venv` (comms over subshells), normlab_core/interactive/frontend.js.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, chromium_or_skip
from lab_support import LabPage, LabServer, launch

pytestmark = pytest.mark.lab

SHOTS = Path(os.environ.get("NORMLAB_LIVE_SHOTS", SCREENSHOTS / "live"))
NB = "zz_reopen.ipynb"
LONG = 12   # seconds the long cell runs (a stand-in for a train() call: the kernel is inside a cell)
CELLS = [("code", "n = 4\nfrom normlab_core.display import show"),
         ("markdown", "The input has {eval}`n` numbers."),
         ("code", "show('pre_post_fd_error')"),
         ("code", f"import time\nfor _ in range({LONG * 10}):\n    time.sleep(0.1)\nprint('cell done')")]
ROOT = ".jp-NotebookPanel:not(.lm-mod-hidden) .normlab-live"
FALLBACK = ".jp-NotebookPanel:not(.lm-mod-hidden) .nl-fallback"

# What the visible outputs of the current notebook are: live widgets, static fallback figures
JS_FACES = f"""() => {{
  const shown = (sel) => Array.from(document.querySelectorAll(sel)).filter((n) => n.checkVisibility()).length;
  return {{live: shown({ROOT!r}), fallback: shown({FALLBACK!r})}};
}}"""

# The state the kernel's view last drew, as JSON
DRAWN = ("import json as _j, normlab_core.interactive.live as _l\n_v = _l.views()[-1]; _v.wait()\n"
         "print(_j.dumps(_v.drawn, default=lambda o: o.item()))")


def write_notebook(folder: Path) -> None:
    import nbformat

    make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook(cells=[make[kind](src) for kind, src in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / NB)


def run_setup(page: LabPage) -> None:
    """Run the cells before the long one, then save."""
    page.page.evaluate("""async () => { const app = window.jupyterapp, w = app.shell.currentWidget;
      w.content.activeCellIndex = 0;
      for (let i = 0; i < 3; i++) await app.commands.execute('notebook:run-cell-and-select-next');
      const kernel = w.sessionContext.session.kernel, t0 = Date.now();
      while (kernel.status !== 'idle' && Date.now() - t0 < 60000) await new Promise(r => setTimeout(r, 50));
      await app.commands.execute('docmanager:save'); }""")


def faces(page: LabPage, want_live: bool = True) -> dict:
    """The visible faces once the live widget showed up (or 20 s passed: then the static one is what is there)."""
    sel = ROOT + " img.nl-frame"
    try:
        page.page.wait_for_selector(sel, state="visible", timeout=20000 if want_live else 3000)
    except Exception:  # noqa: BLE001 - reported by the assertion on what is shown
        pass
    return page.page.evaluate(JS_FACES)


def move(page: LabPage, key: str = "ArrowLeft") -> None:
    page.page.query_selector(ROOT + " [data-i='0']").focus()
    page.page.keyboard.press(key)


def shown_key(page: LabPage) -> str:
    return page.page.evaluate(f"() => document.querySelector({ROOT!r}).dataset.shown")


def wait_shown(page: LabPage, key: str, timeout: int = 60000) -> str:
    page.page.wait_for_function(f"k => document.querySelector({ROOT!r})?.dataset.shown === k", arg=key,
                                timeout=timeout)
    return shown_key(page)


def shoot(page: LabPage, name: str) -> None:
    """Screenshots of the widget's place at 1280x900 and 390x844 (single-document mode, side panels closed)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    p = page.page
    for (w, h), mode in (((1280, 900), "multiple-document"), ((390, 844), "single-document")):
        p.set_viewport_size({"width": w, "height": h})
        p.evaluate("(mode) => { const s = window.jupyterapp.shell; s.mode = mode; "
                   "if (mode === 'single-document') { s.collapseLeft(); s.collapseRight(); } }", mode)
        p.wait_for_timeout(400)
        try:   # the narrow layout's frame, once drawn (a dead kernel draws none: then the one held is shown)
            p.wait_for_function(f"() => !document.querySelector({ROOT!r})?.classList.contains('nl-loading')",
                                timeout=15000)
        except Exception:  # noqa: BLE001 - a screenshot of the wait is still a screenshot
            pass
        target = p.query_selector(ROOT) or p.query_selector(FALLBACK)
        if target:
            target.scroll_into_view_if_needed()
        p.screenshot(path=str(SHOTS / f"{name}-{w}x{h}.png"))
    p.set_viewport_size({"width": 1280, "height": 900})
    p.evaluate("() => { window.jupyterapp.shell.mode = 'multiple-document'; }")


@pytest.fixture(scope="module")
def lab():
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with LabServer(notebooks=[]) as server, sync_playwright() as pw:
        write_notebook(server.root)
        browser = launch(pw, executable)
        page = LabPage(browser, server)
        page.open(NB)
        run_setup(page)
        yield page, server, browser
        page.close()
        browser.close()


def test_a_second_tab_a_reload_and_a_reopen_show_live_controls(lab):
    page, server, browser = lab
    assert faces(page) == {"live": 1, "fallback": 0}, "Run: the live widget"
    # a second browser tab on the same notebook
    tab = LabPage(browser, server)
    try:
        tab.open(NB)
        seen = faces(tab)
        shoot(tab, "second-tab")
        assert seen == {"live": 1, "fallback": 0}, (
            f"a second tab shows {seen}: the saved notebook opened untrusted, so JupyterLab drew the static figure "
            "(lab/normlab_notary.py signs a notebook that was run and saved)")
        move(tab, "ArrowLeft")
        assert wait_shown(tab, "3,0") == "3,0" and json.loads(tab.kernel(DRAWN)) == {"h": 0.0001, "dtype": "float32"}
    finally:
        tab.close()
    # the page reloaded
    page.page.reload(wait_until="load")
    page.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
    page.page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
    page.open(NB)
    seen = faces(page)
    shoot(page, "reloaded")
    assert seen == {"live": 1, "fallback": 0}, f"after a reload the page shows {seen}"
    move(page, "ArrowRight")
    assert wait_shown(page, "4,0") == "4,0"
    # the notebook closed (its kernel keeps running) and opened again
    page.page.evaluate("() => { const w = window.jupyterapp.shell.currentWidget; w.context.model.dirty = false; "
                       "w.dispose(); }")
    page.open(NB)
    seen = faces(page)
    shoot(page, "reopened")
    assert seen == {"live": 1, "fallback": 0}, f"the notebook reopened shows {seen}"


def test_a_slider_moved_while_a_cell_runs_keeps_the_kernel_busy(lab):
    page, _, _ = lab
    p = page.page
    # every change of the kernel's status, with whether the long cell had printed its last line by then
    p.evaluate("""() => { const w = window.jupyterapp.shell.currentWidget; window.__nlStatus = [];
      w.sessionContext.statusChanged.connect((_, s) => window.__nlStatus.push(
        [s, JSON.stringify(w.content.model.cells.get(3).outputs.toJSON()).includes('cell done')])); }""")
    before = shown_key(page)
    p.evaluate("""() => { const app = window.jupyterapp, w = app.shell.currentWidget; w.content.activeCellIndex = 3;
      app.commands.execute('notebook:run-cell'); }""")
    p.wait_for_function("() => window.__nlStatus.some(([s]) => s === 'busy')", timeout=30000)
    move(page, "ArrowLeft")   # once the kernel is busy with the cell
    wanted = p.evaluate(f"() => document.querySelector({ROOT!r}).dataset.state")
    assert wanted != before
    shoot(page, "busy-during-a-cell")
    p.wait_for_function("""() => JSON.stringify(window.jupyterapp.shell.currentWidget.content.model.cells.get(3)
      .outputs.toJSON()).includes('cell done')""", timeout=(LONG + 60) * 1000)
    assert wait_shown(page, wanted) == wanted, "the move made during the cell is drawn once it ends"
    statuses = p.evaluate("() => window.__nlStatus")
    statuses = statuses[[s for s, _ in statuses].index("busy"):]   # from the cell's start
    early = [s for s, done in statuses if s == "idle" and not done]
    assert not early, (
        f"the kernel indicator went idle while the cell ran ({statuses}): the slider's comm opened a kernel "
        "subshell, whose idle status JupyterLab shows; lab-settings/overrides.json sets commsOverSubshells to "
        "disabled (run `make venv` to install it)")


def test_save_png_downloads_the_frame_shown(lab):
    page, _, _ = lab
    root = page.page.query_selector(ROOT)
    button = root.query_selector("button.nl-save")
    assert button is not None, "no Save PNG button under the figure (normlab_core/interactive/frontend.js)"
    with page.page.expect_download() as info:
        button.click()
    download = info.value
    data = Path(download.path()).read_bytes()
    kernel = page.kernel("import base64, normlab_core.interactive.live as _l\n_v = _l.views()[-1]; _v.wait()\n"
                         "print(base64.b64encode(_v.png).decode())").strip()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and base64.b64encode(data).decode() == kernel
    assert download.suggested_filename == f"pre_post_fd_error-{shown_key(page).replace(',', '_')}.png"
    shoot(page, "save-png")


def test_after_a_restart_the_figure_says_run_all_and_run_all_brings_it_back(lab):
    page, _, _ = lab
    p = page.page
    p.evaluate("""async () => { const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        await kernel.restart(); const t0 = Date.now();
        while (kernel.status !== 'idle' && Date.now() - t0 < 30000) await new Promise(r => setTimeout(r, 50)); }""")
    p.wait_for_function(f"() => document.querySelector({ROOT!r} + ' .nl-status').textContent.includes('restarted')")
    status = p.evaluate(f"() => document.querySelector({ROOT!r} + ' .nl-status').textContent")
    shoot(page, "restarted")
    assert "run the notebook from the top (Run > Run All Cells)" in status, status
    run_setup(page)   # what the message says: every cell from the top (the long one is not needed)
    assert faces(page) == {"live": 1, "fallback": 0}
    move(page, "Home")
    assert wait_shown(page, "0,0") == "0,0" and json.loads(page.kernel(DRAWN))["dtype"] == "float32"
    shoot(page, "after-run-all")
