"""What students see in their feedback: scores, their code and outputs, and the verdict of every check cell.

`nbgrader generate_feedback` renders the graded notebook, whose check cells hold the grader's verdicts (see
grade.py). This preprocessor (configured in `nbgrader_config.py`) runs before the HTML is written and removes
from every check cell

- a hidden-test region of its source, if an instructor adds one (the lines between the BEGIN/END HIDDEN
  TESTS markers; this course's checks live in normlab_grading/hidden_checks.py and need none), and
- the tracebacks of its errors, which would quote the lines around the failing statement. The error's type and
  message stay: the messages of visible cases show returned against expected values, those of hidden cases
  say what failed without giving expected values, inputs or seeds.
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
