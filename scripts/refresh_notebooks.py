"""Re-execute section notebooks in place so their stored outputs match the code (used by `make notebooks`).

Each notebook runs top to bottom in a fresh python3 kernel from its own folder, with no execution
timings and no widget state stored. Live widget views are dropped from the stored outputs (their model
ids are random and they cannot be shown without a kernel anyway); the text that stays tells a reader to
run the cell for the sliders.

usage: python scripts/refresh_notebooks.py notebooks/01_….ipynb [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def refresh(path: Path) -> None:
    """Execute one notebook in place and drop widget views from its outputs."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=False, store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            out.get("data", {}).pop(WIDGET_VIEW, None)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)


def main(paths: list[str]) -> int:
    for p in paths:
        print(f"executing {p}", flush=True)
        refresh(Path(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
