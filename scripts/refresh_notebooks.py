"""Re-execute section notebooks in place so their stored outputs match the code (used by `make notebooks`).

Each notebook runs top to bottom in a fresh python3 kernel from its own folder, with no execution
timings and no widget state stored. Live widget views are dropped from the stored outputs (their model
ids are random and they cannot be shown without a kernel anyway); the text that stays tells a reader to
run the cell for the sliders.

Prose numbers: a markdown cell may quote a computed value as a MyST inline expression, {eval}`expr` (any
Python expression over the notebook's variables, e.g. {eval}`f"{ratio:.0f}"`). Each markdown cell's
expressions are evaluated in the kernel right after the code cells above it have run, as JupyterLab does
with jupyterlab-myst on Run All, and the results are stored in the cell's `user_expressions` metadata (the
format jupyterlab-myst reads), so a notebook opened without running shows the numbers. The book evaluates
the same expressions itself (myst-nb, `execute_notebooks: inline`).

`execute(nb, folder, overrides=...)` is also what tests/test_parameters.py uses: `overrides` is code run
right after the cell tagged `parameters` (papermill's convention), e.g. "EPS = 1e-3".

usage: python scripts/refresh_notebooks.py notebooks/01_….ipynb [...]
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbclient.util import ensure_async

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
EVAL = re.compile(r"\{eval\}`([^`]+)`")
METADATA_KEY = "user_expressions"   # where jupyterlab-myst keeps inline-expression results


def expressions(markdown: str) -> list[str]:
    """The {eval}`...` expressions of a markdown cell, in order (duplicates kept once)."""
    return list(dict.fromkeys(EVAL.findall(markdown)))


def parameters_index(nb) -> int | None:
    """Index of the cell tagged `parameters`, or None."""
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i
    return None


async def _evaluate(client: NotebookClient, exprs: list[str]) -> list[dict]:
    reply = await ensure_async(client.kc.execute("", silent=True, store_history=False, reply=True, timeout=60,
                                                 user_expressions={str(i): e for i, e in enumerate(exprs)}))
    found = reply["content"].get("user_expressions", {})
    return [{"expression": e, "result": found.get(str(i), {"status": "error", "ename": "NoReply",
                                                           "evalue": "", "traceback": []})}
            for i, e in enumerate(exprs)]


# Run before each notebook in a kernel that has run one before (Kernel below): what a run leaves in the kernel that
# the next could see, it takes away. Open pyplot figures, every name the last run defined (IPython's %reset -f; the
# modules stay imported), and the record of which warnings were already shown (resetting the filters clears every
# module's record; the filters themselves are put back), so a warning is shown again as in a fresh kernel.
RESET = """\
import sys as _sys, warnings as _warnings
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
_filters = list(_warnings.filters)
_warnings.resetwarnings()
_warnings.filters[:] = _filters
get_ipython().run_line_magic("reset", "-f")
"""


async def _run(client: NotebookClient, nb, overrides: str | None, reset: bool = False) -> None:
    after = parameters_index(nb)
    async with client.async_setup_kernel():
        if reset:
            reply = await ensure_async(client.kc.execute(RESET, silent=True, store_history=False, reply=True,
                                                         timeout=60))
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"the kernel could not be reset: {reply['content'].get('evalue')}")
        info = await client.async_wait_for_reply(await ensure_async(client.kc.kernel_info()))
        if info is not None and "language_info" in info["content"]:
            nb.metadata["language_info"] = info["content"]["language_info"]
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            elif cell.cell_type == "markdown":
                exprs = expressions(cell.source)
                if exprs:
                    cell.metadata[METADATA_KEY] = await _evaluate(client, exprs)
                else:
                    cell.metadata.pop(METADATA_KEY, None)
            if overrides and index == after:
                injected = nbformat.v4.new_code_cell(overrides, metadata={"tags": ["injected-parameters"]})
                await client.async_execute_cell(injected, index)


def _client(nb, folder: Path, timeout: int, km=None) -> NotebookClient:
    return NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, km=km,
                          store_widget_state=False, resources={"metadata": {"path": str(folder)}})


def execute(nb, folder: Path, overrides: str | None = None, timeout: int = 300, kernel: Kernel | None = None):
    """Run nb (in place) in a fresh python3 kernel started in `folder`, or in `kernel` (a Kernel kept between
    runs); store the inline-expression results."""
    if overrides and parameters_index(nb) is None:
        raise ValueError("the notebook has no cell tagged 'parameters' to override")
    if kernel is not None:
        return kernel.run(nb, folder, overrides, timeout)
    asyncio.run(_run(_client(nb, folder, timeout), nb, overrides))
    return nb


class Kernel:
    """One python3 kernel for several runs of a notebook, as a learner edits the parameters cell and runs all
    again: the first run gets a fresh kernel, each later one the same kernel with RESET run first. A run that
    fails takes the kernel with it, so the next run starts a fresh one. Close it when done (or use `with`)."""

    def __init__(self):
        self.loop, self.km = asyncio.new_event_loop(), None

    def run(self, nb, folder: Path, overrides: str | None = None, timeout: int = 300):
        from jupyter_client.manager import AsyncKernelManager

        if self.km is not None and not self.loop.run_until_complete(self.km.is_alive()):
            self.shutdown()                       # it died between runs: start afresh
        if self.km is None:
            self.km = AsyncKernelManager(kernel_name="python3")
        client = _client(nb, folder, timeout, km=self.km)
        try:   # a kernel already started has run a notebook before: empty it first
            self.loop.run_until_complete(_run(client, nb, overrides, reset=self.km.has_kernel))
        except BaseException:
            with contextlib.suppress(Exception):   # the run's own error is the one to report
                self.shutdown()
            raise
        finally:
            if client.kc is not None:
                client.kc.stop_channels()
        return nb

    def shutdown(self) -> None:
        """Stop the kernel (a later run starts a new one)."""
        km, self.km = self.km, None
        if km is not None and km.has_kernel:
            self.loop.run_until_complete(km.shutdown_kernel(now=True))

    def close(self) -> None:
        self.shutdown()
        self.loop.close()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def eval_failures(nb) -> list[str]:
    """Every inline expression whose stored result is an error, as 'cell i: expr: error'."""
    bad = []
    for i, cell in enumerate(nb.cells):
        for item in cell.get("metadata", {}).get(METADATA_KEY, []):
            if item["result"].get("status") != "ok":
                r = item["result"]
                bad.append(f"cell {i}: {item['expression']}: {r.get('ename')}: {r.get('evalue')}")
    return bad


def eval_text(result: dict) -> str:
    """The text a reader sees for one stored result (text/plain without the quotes of a string)."""
    text = result.get("data", {}).get("text/plain", "")
    return re.sub(r"^(['\"])(.*)\1$", r"\2", text, flags=re.S)


def rendered_markdown(cell) -> str:
    """A markdown cell's source with each {eval} replaced by its stored value (what both faces show)."""
    values = {item["expression"]: eval_text(item["result"]) for item in cell.get("metadata", {}).get(METADATA_KEY, [])}
    return EVAL.sub(lambda m: values.get(m.group(1), m.group(0)), cell.source)


def merged_streams(outputs: list) -> list:
    """Consecutive prints to the same stream as one output: how the kernel happened to split them (by timing)
    does not change the stored file (nbval compares them merged too)."""
    out = []
    for o in outputs:
        if out and o.get("output_type") == "stream" == out[-1].get("output_type") and o.name == out[-1].name:
            out[-1].text += o.text
        else:
            out.append(o)
    return out


def refresh(path: Path) -> None:
    """Execute one notebook in place and drop widget views from its outputs."""
    nb = nbformat.read(path, as_version=4)
    try:
        execute(nb, path.parent)
    except CellExecutionError as err:
        raise SystemExit(f"{path}: {err}") from None
    bad = eval_failures(nb)
    if bad:
        raise SystemExit(f"{path}: inline expressions failed:\n  " + "\n  ".join(bad))
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            out.get("data", {}).pop(WIDGET_VIEW, None)
        if "outputs" in cell:
            cell.outputs = merged_streams(cell.outputs)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)


def main(paths: list[str]) -> int:
    for p in paths:
        print(f"executing {p}", flush=True)
        refresh(Path(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
