"""The public inputs of the checks: what the release's locked setup and data cells compute.

The visible cases use the notebook's own data (`x_check`, `gamma_check`, `dy_check`, `x_input`, `weights`).
They are computed here, in the grader's process, from the instructor's release (never from a student's
notebook).
"""

from __future__ import annotations

import contextlib
import io
import json

from normlab_grading import structure
from normlab_grading.references import magnitudes


def visible_data(release: dict) -> dict:
    """Run the release's locked code cells that are not checks (setup and data cells) in this process: their
    variables are the public inputs the visible cases use (instructor's code, never a student's)."""
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in release["cells"]:
            if cell.get("cell_type") == "code" and structure.is_locked(cell) and not structure.is_check(cell):
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                exec(compile(source, f"<release cell {structure.grade_id(cell)}>", "exec"), ns)  # noqa: S102
    return ns


def load_notebook(path) -> dict:
    """A notebook as a dict, each cell's source one string."""
    with open(path, encoding="utf-8") as fh:
        nb = json.load(fh)
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    return nb


def visible_values(source_path) -> dict:
    """The exact magnitudes the visible check of exercise 3 compares with, for the data cell as it is now."""
    data = visible_data(load_notebook(source_path))
    return {"without LayerNorm": magnitudes(data["x_input"], data["weights"], False),
            "with LayerNorm": magnitudes(data["x_input"], data["weights"], True)}


def check_ids(nb: dict) -> list:
    """The grade ids of a notebook's check cells, in order."""
    return [structure.grade_id(c) for c in nb["cells"] if structure.is_check(c)]
