"""Notebooks survive edits: every section notebook re-runs with other values in its `parameters` cell.

A learner edits the parameters cell (another eps, a scaled or different input vector, another depth) and runs all
cells. Here each section notebook is executed in a fresh kernel with such an edit injected right after its cell
tagged `parameters` (papermill's convention; scripts/refresh_notebooks.execute), and

- no cell raises (no bare AssertionError, IndexError, ...) and no cell writes to stderr (no stray warning);
- every prose number written as an inline expression, {eval}`...`, evaluates, and the prose follows the edit:
  at least one of them reads differently from the stored notebook's;
- every literal prose number (three or more significant digits, test_prose_numbers' definition) is still printed
  by the re-executed notebook, unless its sentence says it is about the reference program's own settings
  ("the reference program", "the reference text", "figure 23-…", "at the reference …").

Cost: one execution per notebook, about as long as `make notebooks` takes for it (a few seconds each).
"""

from __future__ import annotations

import re
import sys

import nbformat
import pytest
from test_prose_numbers import (
    _YEAR,
    MIN_SIGNIFICANT,
    ROOT,
    cites,
    is_approximate,
    numbers_in,
    printed_numbers,
    prose_text,
    sentence_around,
)

sys.path.insert(0, str(ROOT / "scripts"))
from refresh_notebooks import EVAL, METADATA_KEY, eval_failures, eval_text, execute, parameters_index  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"

# For each section notebook: the edit a learner might make (run right after its parameters cell).
EDITS = {
    "01_what_you_will_learn": "X0 = [0.5, -1.0, 2.0, 3.5, 1.0]\nDEPTH = 12\nGAINS = (0.2, 0.8)",
    "02_the_problem": "GAIN_UP, GAIN_DOWN = 1.05, 0.95\nDEPTH = 12\nX0 = [2.0, -1.0, 0.5]",
    "03_mean_and_variance": "A = [10.0, 12.0, 9.0, 11.5, 10.5]\nB = [0.5, 0.1, 0.3, 0.2, 0.9]",
    "04_layer_norm": "A = [3.0, 5.0, 1.0, 4.0, 2.0, 7.0, 6.0]\nB = [0.02, 0.01, 0.05, 0.03, 0.04, 0.0, 0.06]\n"
                     "EPS = 1e-3",
    "05_rms_norm": "A = [10.0, 12.0, 9.0, 11.0, 13.0]\nEPS = 1e-3",
    "06_comparing": "CENTRED = [-3.0, -1.0, 0.0, 1.0, 3.0, 0.0]\nMIXED = [2.0, -2.0, 1.0, 0.5, -1.5, 3.0]\n"
                    "OFFSET = 4.0\nEPS = 1e-3\nSTAT_OFFSET = 50.0",
    "07_pre_post_norm": "X0 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\nEPS = 1e-3\nSTEP = 1e-4\nMAX_DEPTH = 16\n"
                        "GAIN, BIAS = 0.8, 0.2",
    "08_backward": "X = [2.0, -1.0, 0.5, 3.0, 1.5, -2.5]\nDY = [0.3, 0.1, -0.2, 0.05, -0.4, 0.2]\nEPS = 1e-3",
    "09_key_takeaways": "X_STACK = [1.0, -2.0, 0.5, 4.0, 2.0]\nEPS = 1e-3\nSTACK_EPS = 1e-4\nMAX_DEPTH = 48\n"
                        "X_SIX = [3.0, 5.0, 4.0, 8.0]\nDEPTHS = (1, 3, 9)",
}
PATHS = {p.stem: p for p in sorted(NOTEBOOKS.glob("0[1-9]_*.ipynb"))}
# A sentence that says it is about the reference program's own settings may quote their figures as written.
AT_REFERENCE = re.compile(r"reference program|reference text|figure 23-\d|at the reference|the chapter's", re.I)


def test_every_section_notebook_has_an_edit_and_a_parameters_cell():
    assert sorted(EDITS) == sorted(PATHS)
    for name, path in PATHS.items():
        nb = nbformat.read(path, as_version=4)
        i = parameters_index(nb)
        assert i is not None, f"{name}: no cell tagged 'parameters'"
        code_before = [c for c in nb.cells[:i] if c.cell_type == "code"]
        assert len(code_before) <= 1, f"{name}: the parameters cell should be at the top (after the imports)"
        edited = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\s*[,=]", EDITS[name]))
        present = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\b", nb.cells[i].source))
        assert edited <= present, f"{name}: the edit sets {sorted(edited - present)}, not in the parameters cell"


def literal_numbers_left_behind(nb) -> list[str]:
    """Literal prose numbers that the re-executed notebook no longer prints (and whose sentence does not say
    it is about the reference program's settings)."""
    printed = printed_numbers(nb)
    missing = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = prose_text(cell.source)              # {eval}`...` roles are blanked out with the other roles
        for pos, q in numbers_in(text):
            if q.significant < MIN_SIGNIFICANT or _YEAR.match(q.text) or is_approximate(text, pos):
                continue
            sentence = sentence_around(cell.source, pos)
            if AT_REFERENCE.search(sentence) or any(cites(q, p) for p in printed):
                continue
            missing.append(f"cell {index}: {q.text!r} in: {sentence}")
    return missing


def stored_values(nb) -> dict:
    return {(i, item["expression"]): eval_text(item["result"])
            for i, c in enumerate(nb.cells) for item in c.get("metadata", {}).get(METADATA_KEY, [])}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_notebook_runs_with_edited_parameters_and_its_prose_follows(name):
    path = PATHS[name]
    stored = nbformat.read(path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    execute(nb, path.parent, overrides=EDITS[name])   # raises CellExecutionError, naming the cell, on any error
    stderr = [f"cell {i}: {''.join(o.get('text', ''))[:200]}" for i, c in enumerate(nb.cells)
              for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert not stderr, f"{name} wrote to stderr with the edit {EDITS[name]!r}:\n" + "\n".join(stderr)
    assert not eval_failures(nb), f"{name}: inline expressions failed:\n" + "\n".join(eval_failures(nb))
    before, after = stored_values(stored), stored_values(nb)
    assert before.keys() == after.keys()
    if any(EVAL.search(c.source) for c in nb.cells if c.cell_type == "markdown"):
        changed = [k for k in before if before[k] != after[k]]
        assert changed, f"{name}: no inline prose number changed with the edit {EDITS[name]!r}"
    left = literal_numbers_left_behind(nb)
    assert not left, (f"{name}: with the edit {EDITS[name]!r}, these prose numbers are no longer printed "
                      "(compute them with {eval}`...` or say they are the reference program's):\n" + "\n".join(left))


def test_the_checks_can_fail():
    """A literal number that depends on a parameter is caught; an inline one is not."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("stream", name="stdout",
                                                                              text="mean 2.500\n")]),
                nbformat.v4.new_markdown_cell("The mean is 3.250, or {eval}`f'{m:.3f}'`.")]
    assert [m.split(":")[1].strip() for m in literal_numbers_left_behind(nb)] == ["'3.250' in"]
    nb.cells[1].source = "At the reference program's settings the mean is 3.250."
    assert literal_numbers_left_behind(nb) == []
