"""Put a "Check yourself" block at the end of every section notebook that has questions (normlab_core/questions):
a Markdown heading and a code cell that shows the section's questions. Idempotent: a notebook that has both cells
(found by their ids) with the right text is left byte for byte as it is, so the script can be re-run after
notebooks are merged.

Where: after the notebook's last cell, or before its trailing navigation cells (a cell that is only "Back: …" /
"Next: …" links, or a "## Where to go next" table), so that the questions close the section's teaching.

usage: python -m scripts.add_question_cells [notebooks/NN_x.ipynb ...]   (default: every section with questions)
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
HEADING_ID, CODE_ID = "check-yourself", "check-yourself-questions"
TAGS = ["remove-input", "nbval-ignore-output", "normlab-questions"]
HEADING = "## Check yourself"   # what to do is said inside the block (frontend.js), which is not counted as prose
NAVIGATION = re.compile(r"^\s*(?:(?:Back|Next|Previous|Earlier):\s*\[[^\n]*\s*)+$|^\s*## Where to go next", re.S)


def sections() -> dict[str, str]:
    """Notebook stem -> section label, from the question modules' own NOTEBOOK and SECTION."""
    from normlab_core import questions

    out = {}
    for label, name in questions.SECTIONS.items():
        mod = importlib.import_module(f"normlab_core.questions.{name}")
        if mod.SECTION != label:
            raise ValueError(f"normlab_core/questions/{name}.py declares SECTION {mod.SECTION!r}, not {label!r}")
        out[mod.NOTEBOOK] = label
    return out


def code_source(label: str) -> str:
    return f'from normlab_core.questions import show_questions\n\nshow_questions("{label}")'


def insert_at(cells: list) -> int:
    """The index before the notebook's trailing navigation cells (len(cells) when there are none)."""
    at = len(cells)
    while at > 0 and cells[at - 1].cell_type == "markdown" and NAVIGATION.match(cells[at - 1].source):
        at -= 1
    return at


def add(nb, label: str) -> bool:
    """Give notebook `nb` its two cells for section `label`; True when anything changed."""
    by_id = {c.get("id"): c for c in nb.cells}
    changed = False
    heading, code = by_id.get(HEADING_ID), by_id.get(CODE_ID)
    if heading is None:
        heading = nbformat.v4.new_markdown_cell(HEADING, id=HEADING_ID)
        nb.cells.insert(insert_at(nb.cells), heading)
        changed = True
    elif heading.source != HEADING:
        heading.source, changed = HEADING, True
    if code is None:
        code = nbformat.v4.new_code_cell(code_source(label), id=CODE_ID, metadata={"tags": list(TAGS)})
        nb.cells.insert(nb.cells.index(heading) + 1, code)
        changed = True
    else:
        if code.source != code_source(label):
            code.source, changed = code_source(label), True
        if code.metadata.get("tags") != TAGS:
            code.metadata["tags"], changed = list(TAGS), True
    return changed


def main(argv: list[str]) -> int:
    known = sections()
    paths = [Path(a) for a in argv] or [ROOT / "notebooks" / f"{stem}.ipynb" for stem in known]
    for path in paths:
        if path.stem not in known:
            print(f"add_question_cells: {path} has no questions in normlab_core/questions", file=sys.stderr)
            return 2
        nb = nbformat.read(path, as_version=4)
        if add(nb, known[path.stem]):
            nbformat.write(nb, path)
            print(f"add_question_cells: {path.name}: cells added or updated")
        else:
            print(f"add_question_cells: {path.name}: unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
