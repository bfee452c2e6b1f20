"""A private JupyterLab on 127.0.0.1 and a Playwright page on it: what the JupyterLab tests and the browser
bench drive.

`LabServer` copies the section notebooks to a temporary directory, starts `jupyter lab` from the project's
.venv there (free port, random token, no browser, no update or news checks, config/runtime/settings/workspace
directories of its own) and stops it with its kernels. `LabPage` opens it in Chromium with every request
to another host blocked and reported, and drives notebooks through the JupyterLab application object
(exposed with `--LabApp.expose_app_in_browser`): open, run all, read outputs, execute code in the kernel.
Controls are moved with real keyboard and mouse events by the callers.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts import lab as lab_script  # how `make lab` sets up a learner's server
from scripts.browser import confine
from scripts.toc import toc_pages

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
# The notebooks of _toc.yml: sections 23.1-23.9 and "Going further" (its train() cell trains for real, a few
# seconds); not the exercises.
SECTION_NOTEBOOKS = sorted(Path(p).name + ".ipynb" for p in toc_pages()
                           if p.startswith("notebooks/") and not Path(p).name.startswith("10_"))
VENV_BIN = ROOT / ".venv" / "bin"


def _jupyter() -> Path:
    """The project's own jupyter (the venv the tests run in, else ROOT/.venv)."""
    for candidate in (Path(sys.executable).parent / "jupyter", VENV_BIN / "jupyter"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("no jupyter in the project's .venv: run `make venv`")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# JupyterLab settings for a quiet, offline session: no news or update checks, no pop-ups.
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                       "checkForUpdates": False},
}


class LabServer:
    """`jupyter lab` on 127.0.0.1:<free port> serving a temporary copy of `notebooks` (nothing is saved into
    the repository). Use as a context manager; `url(path)` gives a tokenized address; `log()` the server's
    output so far (kernel tracebacks land there)."""

    def __init__(self, notebooks: list[str] | None = None, startup_timeout: float = 90.0):
        self.tmp = Path(tempfile.mkdtemp(prefix="normlab-lab-"))
        self.root = self.tmp / "notebooks"
        self.root.mkdir()
        for name in notebooks or SECTION_NOTEBOOKS:
            shutil.copy2(NOTEBOOKS / name, self.root / name)
        settings = self.tmp / "settings"
        for rel, value in SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value), encoding="utf-8")
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.startup_timeout = startup_timeout
        self.proc = None
        self._log_path = self.tmp / "server.log"
        env = dict(os.environ)
        env.update({
            "JUPYTER_CONFIG_DIR": str(self.tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.tmp / "runtime"),
            "JUPYTER_DATA_DIR": str(self.tmp / "data"),
            "IPYTHONDIR": str(self.tmp / "ipython"),
            "JUPYTER_PLATFORM_DIRS": "1",
            "MPLBACKEND": "Agg",
            "PATH": f"{Path(_jupyter()).parent}{os.pathsep}{env.get('PATH', '')}",
        })
        env.pop("NORMLAB_STATIC", None)  # live widgets, not the book's static pages
        self.env = lab_script.lab_env(env)   # the learners' server settings, as `make lab` has them
        self.cmd = [
            str(_jupyter()), "lab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            "--ServerApp.open_browser=False",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self.tmp / 'workspaces'}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self.cmd.append("--allow-root")

    def url(self, path: str = "lab") -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def log(self) -> str:
        return self._log_path.read_text(encoding="utf-8", errors="replace") if self._log_path.exists() else ""

    def __enter__(self):
        self._log = open(self._log_path, "wb")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen(self.cmd, cwd=self.root, env=self.env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"jupyter lab did not answer in {self.startup_timeout:.0f} s:\n{self.log()[-3000:]}")
            time.sleep(0.25)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        if self.proc is not None:
            try:  # kernels the server left behind (same session) go too
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# -- the page ------------------------------------------------------------------------------------------

JS_OPEN = """async (path) => {
  const app = window.jupyterapp;
  await app.started; await app.restored;
  const w = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await w.context.ready;
  await w.sessionContext.ready;
  app.shell.activateById(w.id);
  return w.id;
}"""

# Run every cell and wait for the kernel; returns what went wrong per cell (errors and stderr streams).
JS_RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  await w.sessionContext.ready;
  const ok = await app.commands.execute('notebook:run-all-cells');
  const kernel = w.sessionContext.session.kernel;
  const t0 = Date.now();
  while (kernel.status !== 'idle' && Date.now() - t0 < 60000) await new Promise(r => setTimeout(r, 50));
  return ok;
}"""

JS_OUTPUT_PROBLEMS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const problems = [];
  const cells = w.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') continue;
    if (cell.executionCount === null) problems.push(`cell ${i}: not executed`);
    const outs = cell.outputs.toJSON();
    for (const o of outs) {
      if (o.output_type === 'error') problems.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
      if (o.output_type === 'stream' && o.name === 'stderr')
        problems.push(`cell ${i}: stderr: ${o.text.slice(0, 500)}`);
    }
  }
  return problems;
}"""

# Execute code in the current notebook's kernel without adding a cell; stdout, stderr/errors and status.
JS_KERNEL_EXEC = """async (code) => {
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let out = '', err = '';
  future.onIOPub = msg => {
    const t = msg.header.msg_type;
    if (t === 'stream') { if (msg.content.name === 'stdout') out += msg.content.text; else err += msg.content.text; }
    else if (t === 'error') err += msg.content.ename + ': ' + msg.content.evalue;
  };
  const reply = await future.done;
  return {out, err, status: reply.content.status};
}"""

JS_CLOSE = """async () => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  if (!w || !w.sessionContext) return;
  await w.sessionContext.shutdown();
  w.context.model.dirty = false;   // a temporary copy: nothing to save, no dialog
  w.dispose();
}"""


# The one traceback a server may log through no fault of ours: a browser page closed (a notebook closed or
# reopened) while tornado was still writing a kernel message to its websocket. tornado reports the write it could
# not finish as "Task exception was never retrieved" ... WebSocketClosedError; nothing was lost that a page shows.
CLOSED_SOCKET = re.compile(
    r"Task exception was never retrieved\nfuture: <Task finished name='[^']*' "
    r"coro=<WebSocketProtocol13\.write_message\.<locals>\.wrapper\(\) .*?\n"
    r"Traceback \(most recent call last\):\n(?:  .*\n)+tornado\.iostream\.StreamClosedError: Stream is closed\n"
    r"\nDuring handling of the above exception, another exception occurred:\n\n"
    r"Traceback \(most recent call last\):\n(?:  .*\n)+tornado\.websocket\.WebSocketClosedError\n")


# A kernel shut down while its control channel still had a message to answer (a notebook closed by the test) may
# print, on its way out, that a coroutine was never awaited because its event loop had closed: ipykernel's exit,
# not the server's, and nothing a page did.
KERNEL_EXIT = re.compile(
    r"Exception ignored in: <coroutine object Kernel\.dispatch_control at 0x[0-9a-f]+>\n"
    r"Traceback \(most recent call last\):\n(?:  .*\n)+RuntimeError: Event loop is closed\n")


def server_tracebacks(log: str) -> list[str]:
    """The lines of a server log that start a traceback, but those of a websocket closed by its page
    (CLOSED_SOCKET) and of a kernel's exit after its loop closed (KERNEL_EXIT)."""
    log = KERNEL_EXIT.sub("", CLOSED_SOCKET.sub("", log))
    return [line for line in log.splitlines() if "Traceback" in line]


class LabPage:
    """One Chromium page on a LabServer, with problems (page errors, console errors, off-site requests)."""

    def __init__(self, browser, server: LabServer, viewport=(1280, 900)):
        self.server = server
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.page = self.context.new_page()
        self.problems: list[str] = []
        confine(self.page, (server.base,), self.problems)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("console", self._console)
        self.page.goto(server.url("lab"), wait_until="load")
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
        self.page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")

    def _console(self, msg):
        if msg.type == "error":
            self.problems.append(f"console error: {msg.text}")

    def open(self, name: str) -> None:
        self.page.evaluate(JS_OPEN, name)

    def run_all(self) -> None:
        self.page.evaluate(JS_RUN_ALL)

    def output_problems(self) -> list[str]:
        return self.page.evaluate(JS_OUTPUT_PROBLEMS)

    def kernel(self, code: str) -> str:
        """Run `code` in the notebook's kernel; its stdout (fails on error or stderr)."""
        r = self.page.evaluate(JS_KERNEL_EXEC, code)
        if r["status"] != "ok" or r["err"]:
            raise AssertionError(f"kernel code failed ({r['status']}): {r['err']}\ncode: {code}")
        return r["out"]

    def close_notebook(self) -> None:
        self.page.evaluate(JS_CLOSE)

    def close(self) -> None:
        self.context.close()
