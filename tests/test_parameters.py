"""Notebooks survive edits: every section notebook re-runs with other values in its `parameters` cell.

A learner edits the parameters cell (another eps, a scaled or different input vector, another depth) and runs all
cells. Here each section notebook is executed with such an edit injected right after its cell tagged `parameters`
(papermill's convention; scripts/refresh_notebooks.execute), in the kernel conftest.py's `notebook_kernel` keeps for
it (fresh for its first run, emptied before each later one, as in a learner's next Run All), and

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
from toc_support import toc_notebooks

from scripts.refresh_notebooks import (
    EVAL,
    METADATA_KEY,
    Kernel,
    eval_failures,
    eval_text,
    execute,
    parameters_index,
    rendered_markdown,
)

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
                    "OFFSET = 4.0\nEPS = 1e-3",
    "07_pre_post_norm": "X0 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\nEPS = 1e-3\nSTEP = 1e-4\nMAX_DEPTH = 16\n"
                        "GAIN, BIAS = 0.8, 0.2",
    "08_backward": "X = [2.0, -1.0, 0.5, 3.0, 1.5, -2.5]\nDY = [0.3, 0.1, -0.2, 0.05, -0.4, 0.2]\nEPS = 1e-3",
    "09_key_takeaways": "X_STACK = [1.0, -2.0, 0.5, 4.0, 2.0]\nEPS = 1e-3\nSTACK_EPS = 1e-4\nMAX_DEPTH = 48\n"
                        "X_SIX = [3.0, 5.0, 4.0, 8.0]\nDEPTHS = (1, 3, 9)",
    # the row statistics that 23.6 computed in 16 bits before "Norms in 16 bits" took them over
    "12_norms_in_16_bits": "A = [10.0, 12.0, 9.0, 11.0, 13.0]\nEPS = 1e-3\nSTAT_OFFSET = 50.0\nCONSTANT = 3.0",
}
# A second edit for some notebooks: the values a reader's edits showed the prose once missed (a huge component, a
# large eps, a longer vector, the stack's own input), with what given sentences must then read (CHECKS).
SECOND_EDITS = {
    "03_mean_and_variance": "A = [1.0e4, -9.0e3, 2.5e3, 7.0, -3.5, 1.2e3]\nB = [0.5, 0.1, 0.3, 0.2, 0.9, 0.4]",
    "04_layer_norm": "EPS = 0.1",
    "05_rms_norm": "A = [float(40 + (7 * i) % 13) for i in range(64)]",
    "06_comparing": "CENTRED = [-2.0, -1.0, 0.5, 1.0, 1.5]\nMIXED = [1.0, -3.0, 2.0, 0.5, 1.5, -2.0]\nOFFSET = 2.0",
    "08_backward": "X = [4.0, -3.0, 0.5, 2.0, 7.0]\nDY = [1.0, -0.5, 0.25, 0.0, 0.3]",
    "09_key_takeaways": "X_SIX = [3.0, 5.0, 4.0, 8.0, 1.0]\nX_STACK = [3.0, -1.0, 2.0, 0.5]\nSTACK_EPS = 0.01",
}
RUNS = [(name, 0, edit) for name, edit in sorted(EDITS.items())] + [
    (name, 1, edit) for name, edit in sorted(SECOND_EDITS.items())]
# The book's notebooks that are not re-run with edits here, and why; every other notebook of _toc.yml needs an edit.
NOT_EDITED = {"10_exercises": "it has no parameters cell: the exercises bring their own inputs",
              "11_does_it_train": "its parameters choose among stored training runs, which "
                                  "tests/test_parameter_space.py draws"}
PATHS = {p.stem: p for p in toc_notebooks() if p.stem not in NOT_EDITED}
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
        edited = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\s*[,=]", EDITS[name] + "\n" + SECOND_EDITS.get(name, "")))
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


def prose(nb) -> str:
    """Every markdown cell as a reader sees it, its inline expressions replaced by their values."""
    return "\n\n".join(rendered_markdown(c) for c in nb.cells if c.cell_type == "markdown")


def run(name: str, edit: str, kernel=None):
    path = PATHS[name]
    nb = nbformat.read(path, as_version=4)
    execute(nb, path.parent, overrides=edit, kernel=kernel)   # raises CellExecutionError, naming the cell, on any error
    return nb


SAME = re.compile(r"(-?[0-9](?:[0-9.e+\-]*[0-9])?) instead of \1(?![0-9]|\.[0-9])")


def no_x_instead_of_x(text):
    assert not SAME.search(text), f"a comparison of a number with itself: {SAME.search(text).group(0)!r}"


# (notebook, edit index) -> checks of the prose a reader sees after that edit
CHECKS = {
    ("03_mean_and_variance", 1): [
        no_x_instead_of_x,
        lambda t: "b is not a's shape" in t and "gives the same number" not in t,
        lambda t: "s$ = [" in t and "[-0.5, 1.5, -2.5" not in t,
        lambda t: "every significant digit has cancelled" not in t],     # the one-pass result at 10000 is not 0
    ("04_layer_norm", 1): [lambda t: "(here 0.1)" in t and "here $10^{-5}$" not in t],
    ("07_pre_post_norm", 0): [lambda t: "a 6-term sum" in t and "four-term" not in t,
                              lambda t: "pinned near 2" not in t and "Counted in units of the last printed" in t],
    ("05_rms_norm", 1): [lambda t: "offset 100.5" not in t],
    ("09_key_takeaways", 0): [
        # what the reference programs printed stays theirs, whatever the parameters cell holds ...
        lambda t: "that ratio is 0.9999966" in t and "(0.04951 against 0.04929)" in t,
        lambda t: "from 6.660 at one layer to 43.507 at 32" in t,
        lambda t: "largest disagreement, 0.0003, at dimension 2" in t,
        lambda t: "runs from +0.792 to +1.188" in t and "loses about 86% of its sensitivity" in t,
        # ... and the sentences about the parameters cell follow it
        lambda t: "[3, 5, 4, 8] with ε = 0.001, the ratio is 0.999714367" in t,
        lambda t: "depth-1 sensitivity at depth 9." in t and "from depth 1 to depth 48." in t],
    ("08_backward", 1): [lambda t: "parameters cell's $x$ = [4, -3, 0.5, 2, 7]" in t and "Of the 25 entries" in t,
                         lambda t: "cosine of 0.88" not in t and "1.06 to 1.14 times" not in t],
    ("09_key_takeaways", 1): [lambda t: "(input [3, -1, 2, 0.5], $\\epsilon$ = 0.01)" in t and "[1, 2, 3, 4]" not in t,
                              lambda t: "[3, 5, 4, 8, 1] with ε = 1e-05" in t and "0.04951 against 0.04929" in t],
}


@pytest.mark.parametrize(("name", "index", "edit"), RUNS, ids=[f"{n}-{i}" for n, i, _ in RUNS])
def test_notebook_runs_with_edited_parameters_and_its_prose_follows(name, index, edit, notebook_kernel):
    stored = nbformat.read(PATHS[name], as_version=4)
    nb = run(name, edit, notebook_kernel(name))
    stderr = [f"cell {i}: {''.join(o.get('text', ''))[:200]}" for i, c in enumerate(nb.cells)
              for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert not stderr, f"{name} wrote to stderr with the edit {edit!r}:\n" + "\n".join(stderr)
    assert not eval_failures(nb), f"{name}: inline expressions failed:\n" + "\n".join(eval_failures(nb))
    before, after = stored_values(stored), stored_values(nb)
    assert before.keys() == after.keys()
    if any(EVAL.search(c.source) for c in nb.cells if c.cell_type == "markdown"):
        changed = [k for k in before if before[k] != after[k]]
        assert changed, f"{name}: no inline prose number changed with the edit {edit!r}"
    left = literal_numbers_left_behind(nb)
    assert not left, (f"{name}: with the edit {edit!r}, these prose numbers are no longer printed "
                      "(compute them with {eval}`...` or say they are the reference program's):\n" + "\n".join(left))
    text = prose(nb)
    no_x_instead_of_x(text)
    for i, check in enumerate(CHECKS.get((name, index), [])):
        assert check(text) is not False, f"{name} with the edit {edit!r}: check {i} fails on the prose"


def test_the_sentence_checks_can_fail():
    no_x_instead_of_x("gives 2.916992 instead of 2.916667.")
    no_x_instead_of_x("gives 30833818 instead of 30833818.3.")
    with pytest.raises(AssertionError, match="with itself"):
        no_x_instead_of_x("gives 1.599992e+11 instead of 1.599992e+11.")


def test_the_checks_can_fail():
    """A literal number that depends on a parameter is caught; an inline one is not."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("stream", name="stdout",
                                                                              text="mean 2.500\n")]),
                nbformat.v4.new_markdown_cell("The mean is 3.250, or {eval}`f'{m:.3f}'`.")]
    assert [m.split(":")[1].strip() for m in literal_numbers_left_behind(nb)] == ["'3.250' in"]
    nb.cells[1].source = "At the reference program's settings the mean is 3.250."
    assert literal_numbers_left_behind(nb) == []


def test_a_kept_kernel_starts_each_run_as_a_fresh_one_would(tmp_path):
    """The kernel kept between runs (notebook_kernel) forgets the last run's names and shown warnings; a run that
    fails, or ends its kernel, leaves a fresh kernel to the next."""
    (tmp_path / "helper.py").write_text("import warnings\n\ndef warn():\n    warnings.warn('said once', UserWarning)\n",
                                        encoding="utf-8")
    cells = ["X = 1", "import os\nimport helper\nprint('left' in dir(), os.getpid())\nleft = X\nhelper.warn()"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.cells[0].metadata["tags"] = ["parameters"]

    def once(kernel, edit="X = 2"):
        out = execute(nbformat.from_dict(nb), tmp_path, overrides=edit, kernel=kernel).cells[-1].outputs
        text = {o.name: o.text for o in out}
        return text["stdout"].split(), "said once" in text.get("stderr", "")

    with Kernel() as kernel:
        (left1, pid1), warned1 = once(kernel)
        (left2, pid2), warned2 = once(kernel)
        assert pid1 == pid2, "the second run should use the same kernel"
        assert left1 == left2 == "False", "a name the last run defined is still there"
        assert warned1 and warned2, "a warning shown in the last run is not shown again"
        with pytest.raises(Exception, match="NameError"):
            once(kernel, edit="del X")
        (_, pid3), _ = once(kernel)
        assert pid3 != pid1, "after a failed run, the next should get a fresh kernel"
        with pytest.raises(Exception, match="[Dd]ied|[Dd]ead"):
            once(kernel, edit="import os\nos._exit(1)")   # a run that ends its kernel
        (_, pid4), _ = once(kernel)
        assert pid4 != pid3, "after the kernel died, the next run should get a fresh kernel"
