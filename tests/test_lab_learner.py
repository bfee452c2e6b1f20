"""JupyterLab as `make lab` gives it to a learner and `make lab-instructor` to an instructor (scripts/lab.py).

A private JupyterLab (lab_support.LabServer) on a temporary copy of the repository's layout (notebooks/ and book/),
started with the options and configuration of scripts/lab.py, in Debian's chromium at 1280x900 and 390x844:

* the server's root is the repository, and its first page is the notebooks folder;
* following the glossary link 'sublayer' in 23.1 opens book/glossary.md rendered (Markdown preview, maths typeset,
  not its source) scrolled to the 'Sublayer' entry;
* no nbgrader control anywhere: no Validate button on the notebook, no Nbgrader menu, no Assignments / Formgrader
  / Courses panel, no nbgrader command ("Create Assignment" included), and nbgrader's server pages answer 404;
* the instructors' JupyterLab has them (the same checks, turned round, so the checks above can fail).

Also, without a browser: every relative link in every notebook points at a file of the repository (and at a heading
of it when it names one), so that none is dead in JupyterLab. Screenshots: _build/screenshots/lab-glossary-*.png.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser_support import ROOT, SCREENSHOTS, chromium_or_skip
from lab_support import LabPage, LabServer, launch, server_tracebacks

from scripts import lab as lab_script

NOTEBOOK = "notebooks/01_what_you_will_learn.ipynb"

# Everything of nbgrader that JupyterLab shows: its commands, menus, side panels and notebook toolbar buttons.
NBGRADER_UI = """() => {
  const app = window.jupyterapp;
  const commands = app.commands.listCommands().filter(id => /nbgrader|formgrader|assignment|course_list/i.test(id));
  const text = sel => Array.from(document.querySelectorAll(sel)).map(e => (e.innerText || e.title || '').trim());
  const menus = text('.lm-MenuBar-itemLabel').filter(t => /nbgrader|assignment|formgrader/i.test(t));
  const panels = Array.from(document.querySelectorAll('.jp-SideBar .lm-TabBar-tab'))
    .map(t => t.title || t.innerText || '').filter(t => /assignment|formgrader|course|nbgrader/i.test(t));
  const buttons = text('.jp-Toolbar-item, .jp-ToolbarButtonComponent').filter(t => /validate/i.test(t));
  const words = /Create Assignment|Validate|Formgrader/.test(document.body.innerText);
  return {commands, menus, panels, buttons, words};
}"""


class RepoLab(LabServer):
    """LabServer on a copy of the repository's layout, with scripts/lab.py's options (learner or instructor)."""

    def __init__(self, instructor: bool = False, notebooks: list[str] | None = None):
        super().__init__(notebooks=notebooks or [Path(NOTEBOOK).name])
        shutil.copytree(ROOT / "book", self.tmp / "book", ignore=shutil.ignore_patterns("assets"))
        self.cmd = [a for a in self.cmd if not a.startswith("--ServerApp.root_dir=")] + lab_script.lab_args(self.tmp,
                                                                                                           instructor)
        self.env.pop("JUPYTER_CONFIG_PATH", None)   # LabServer's learner settings: here scripts/lab.py decides
        self.env = lab_script.lab_env(self.env, instructor)


def _status(url: str) -> int:
    request = urllib.request.Request(url)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _open_folder(lab: LabPage, server: LabServer) -> list[str]:
    """The server's first page (its default URL): the file browser's folder and listing."""
    lab.page.goto(server.url(""), wait_until="load")
    lab.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
    lab.page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
    lab.page.wait_for_selector(".jp-DirListing-item", timeout=20000)
    return lab.page.evaluate("() => [window.location.pathname,"
                             " Array.from(document.querySelectorAll('.jp-DirListing-itemText')).map(e => e.innerText)]")


@pytest.mark.lab
def test_a_learner_follows_a_glossary_link_and_meets_no_grading_tools():
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with RepoLab() as server, sync_playwright() as pw:
        browser = launch(pw, chromium_or_skip())
        problems = []
        assert _status(server.url("formgrader")) == 404, "nbgrader's formgrader answers in the learners' JupyterLab"
        assert _status(server.url("assignments")) == 404, "nbgrader's assignment list answers for learners"
        for size in [(1280, 900), (390, 844)]:
            lab = LabPage(browser, server, viewport=size)
            path, listing = _open_folder(lab, server)
            assert path.endswith("/lab/tree/notebooks"), f"make lab opens {path}, not the notebooks folder"
            assert Path(NOTEBOOK).name in listing, f"the notebooks folder lists {listing}"
            lab.open(NOTEBOOK)
            p = lab.page
            link = p.locator(".jp-MarkdownCell a", has_text=re.compile(r"^sublayer$")).first   # MyST cells too
            link.wait_for(timeout=20000)
            link.scroll_into_view_if_needed()
            link.click()
            viewer = p.locator(".jp-MarkdownViewer:visible").first
            viewer.wait_for(timeout=20000)
            p.wait_for_timeout(1500)  # rendering, maths, then the scroll to the entry
            state = p.evaluate("""() => {
              const v = Array.from(document.querySelectorAll('.jp-MarkdownViewer')).find(e => e.checkVisibility());
              const heading = Array.from(v.querySelectorAll('h2')).find(h => /^Sublayer/.test(h.textContent));
              const box = v.getBoundingClientRect(), r = heading ? heading.getBoundingClientRect() : null;
              let sc = heading || v;  // the box that scrolls
              while (sc && sc !== document.body
                     && !(sc.scrollHeight > sc.clientHeight + 2 && /auto|scroll/.test(getComputedStyle(sc).overflowY)))
                sc = sc.parentElement;
              const tab = document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current');
              return {tab: tab ? tab.innerText : '', heading: !!heading,
                      offset: r ? r.top - box.top : null, height: box.height,
                      scrolled: sc.scrollTop, bottom: sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 2,
                      title: !!Array.from(v.querySelectorAll('h1')).find(h => /^Glossary/.test(h.textContent)),
                      maths: v.querySelectorAll('mjx-container, .MathJax').length};
            }""")
            name = f"lab-glossary-{size[0]}x{size[1]}.png"
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            p.screenshot(path=str(SCREENSHOTS / name))
            if "glossary.md" not in state["tab"]:
                problems.append(f"{size}: the link opened {state['tab']!r}, not glossary.md")
            if not (state["heading"] and state["title"]):
                problems.append(f"{size}: glossary.md is not shown rendered: {state}")
            elif not (0 <= state["offset"] < 0.4 * state["height"]
                      or (state["bottom"] and state["scrolled"] > 0 and 0 <= state["offset"] < state["height"] - 80)):
                # at the top of the view, or (an entry near the end) the view scrolled as far as it goes
                problems.append(f"{size}: the 'Sublayer' entry is not scrolled into view: {state}")
            if state["maths"] == 0:
                problems.append(f"{size}: no typeset maths in the glossary")
            ui = lab.page.evaluate(NBGRADER_UI)
            shown = {k: v for k, v in ui.items() if v}
            if shown:
                problems.append(f"{size}: nbgrader's tools are visible to a learner: {shown}")
            problems += [f"{size}: {x}" for x in lab.problems]
            lab.close()
        browser.close()
        assert not server_tracebacks(server.log()), server.log()[-3000:]
    assert not problems, "\n".join(problems)


@pytest.mark.lab
def test_instructors_have_the_grading_tools():
    """`make lab-instructor`: JupyterLab with nbgrader's server pages and its JupyterLab extension."""
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with RepoLab(instructor=True) as server, sync_playwright() as pw:
        assert _status(server.url("formgrader")) != 404, "no formgrader in the instructors' JupyterLab"
        browser = launch(pw, chromium_or_skip())
        lab = LabPage(browser, server)
        lab.open(NOTEBOOK)
        lab.page.wait_for_timeout(1000)
        ui = lab.page.evaluate(NBGRADER_UI)
        lab.close()
        browser.close()
    assert ui["commands"] and ui["menus"], f"the instructors' JupyterLab lacks nbgrader's commands or menu: {ui}"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_in_a_notebook_points_at_a_file():
    """In JupyterLab a link is followed relative to the notebook, inside the server's root (the repository):
    every one must name a file of the repository, and a heading of it where it has a #fragment."""
    checked = 0
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "markdown":
                continue
            for target in LINK.findall("".join(cell["source"])):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path, _, fragment = target.partition("#")
                file = (nb.parent / path).resolve()
                assert file.is_file(), f"{nb.name}: link {target!r} points at no file"
                assert ROOT.resolve() in file.parents, f"{nb.name}: link {target!r} leaves the repository"
                if fragment and file.suffix == ".md":
                    text = file.read_text(encoding="utf-8")
                    assert f'data-jupyter-id="{fragment}"' in text, \
                        f"{nb.name}: {target!r}: JupyterLab finds no entry #{fragment} in {path}"
                checked += 1
    assert checked >= 30, f"only {checked} links found in the notebooks"


def test_the_learners_server_sets_tcp_nodelay_on_kernel_websockets(monkeypatch):
    """lab/learner/jupyter_server_config.py swaps in a kernel connection that sets TCP_NODELAY before connecting
    (the JupyterLab tests and `make bench` run with it; the round-trip gain is in the bench's note)."""
    from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "lab" / "learner")).load_config()
    cls = config.ServerApp.kernel_websocket_connection_class
    assert issubclass(cls, ZMQChannelsWebsocketConnection)
    calls = []
    monkeypatch.setattr(ZMQChannelsWebsocketConnection, "connect", lambda self: calls.append("connect") or "done")

    class Handler(KernelWebsocketHandler):   # a handler without a request behind it: it only records set_nodelay
        def __init__(self):
            pass

        def set_nodelay(self, value):
            calls.append(("nodelay", value))

    conn = cls.__new__(cls)
    conn.websocket_handler = Handler()
    assert cls.connect(conn) == "done"
    assert calls == [("nodelay", True), "connect"]


def test_the_learners_server_shuts_down_kernels_left_idle_without_a_browser(tmp_path):
    """lab/learner/jupyter_server_config.py culls a kernel nobody is connected to after 30 idle minutes: a real
    kernel, started by jupyter_server's MappingKernelManager with that configuration, is kept while a browser is
    connected, while it runs a cell, and before its 30 minutes are up, and is shut down after them."""
    import asyncio
    from datetime import timedelta

    from jupyter_server._tz import utcnow
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "lab" / "learner")).load_config()

    async def scenario():
        manager = MappingKernelManager(config=config, root_dir=str(tmp_path))
        kid = await manager.start_kernel(kernel_name="python3", path="")
        kernel = manager.get_kernel(kid)
        try:
            def idle_for(minutes, state="idle", connections=0):
                kernel.last_activity = utcnow() - timedelta(minutes=minutes)
                kernel.execution_state = state
                manager._kernel_connections[kid] = connections

            kept = []
            for minutes, state, connections in ((29, "idle", 0), (31, "idle", 1), (31, "busy", 0)):
                idle_for(minutes, state, connections)
                await manager.cull_kernel_if_idle(kid)
                kept.append(kid in manager)
            idle_for(31)
            await manager.cull_kernel_if_idle(kid)
            return kept, kid in manager
        finally:
            if kid in manager:
                await manager.shutdown_kernel(kid, now=True)

    kept, still_there = asyncio.run(scenario())
    assert kept == [True, True, True] and not still_there


def test_jupyterlab_fetches_no_news_and_checks_for_no_updates():
    """The settings `make venv` installs (lab-settings/overrides.json) answer JupyterLab's news question with Never,
    so no pop-up asks a learner and no request leaves the machine; they pass the settings schema's allowed values."""
    overrides = json.loads((ROOT / "lab-settings" / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    schema = json.loads((Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/"
                         "notification.json").read_text())["properties"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}
    assert {"const": "false", "title": "Never"} in schema["fetchNews"]["oneOf"]
    assert schema["checkForUpdates"]["type"] == "boolean"
