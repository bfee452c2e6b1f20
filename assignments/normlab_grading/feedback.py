"""What students see in their feedback: scores, their code and outputs, and the messages of failed checks.

`nbgrader generate_feedback` renders the autograded notebook, in which nbgrader has put the hidden tests back
into the check cells. This preprocessor (configured in `nbgrader_config.py`) runs before the HTML is written and
removes from every check cell

- the hidden-test region of its source (the lines between the BEGIN/END HIDDEN TESTS markers), and
- the tracebacks of its errors, which quote the lines around the failing statement and so could quote hidden
  code. The error's type and message stay: the visible checks' messages show returned against expected values,
  and the hidden checks' messages say what failed without giving expected values, inputs or seeds.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)


def is_check_cell(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def clean_check_cell(cell) -> None:
    cell.source = HIDDEN.sub("", cell.source).rstrip("\n")
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]


class HideHiddenTests(Preprocessor):
    """Strip hidden tests and tracebacks from the check cells of a notebook before it becomes feedback."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if is_check_cell(cell):
                clean_check_cell(cell)
        return nb, resources
