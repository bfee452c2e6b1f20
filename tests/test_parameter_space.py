"""Every notebook runs to the end for any value its parameters cell allows.

A learner may put anything the parameters cell allows into it: an input of zeros or of one repeated value, eps = 0,
a huge component, a depth of 1. A degenerate case is shown and explained in the notebook's output (a NaN printed
with the reason, a figure with a note), never raised. Every notebook's parameters are declared in
normlab_core/parameters.py (SECTIONS), and each notebook is run on the corners of its declaration, not on random
draws: the shortest and longest vectors, a constant, zeros, the largest magnitudes, EPS = 0, unequal lengths where
the declaration allows them and each integer range's ends, grouped so that a few runs put every parameter at each of
its corners (Parameters.corners). The edits a learner reported as crashing are fixed cases (REPORTED). A run fails on
any cell error, and on numpy's bare floating-point warnings ("invalid value encountered in divide" explains
nothing); the library's own warnings, which name the cause, may be written. A value outside a declaration is refused
by the check cell after the parameters cell, naming the parameter, before any work (REFUSED). A wider random
exploration of the declarations, with hypothesis, is tests/test_parameter_explore.py (`make test-explore`).

Cost: one execution per corner set, a few seconds each. A notebook's runs here and in test_parameters.py share one
kernel (conftest.py's `notebook_kernel`): the first is fresh, each later one is emptied first, as a learner edits the
parameters cell and runs all again.
"""

from __future__ import annotations

import math
import re

import nbformat
import numpy as np
import pytest
from test_prose_numbers import ROOT
from toc_support import toc_notebooks

from normlab_core.parameters import SECTIONS, STALE, STOPPED, Number, ParameterError, Parameters, Vector
from scripts.refresh_notebooks import execute, parameters_index

NOTEBOOKS = ROOT / "notebooks"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# numpy's own floating-point warnings ("overflow encountered in divide") say nothing a learner can act on; the
# library's warnings (normlab_core's, which say what happened and why, e.g. a zero variance with eps = 0) may stay.
RAW_WARNING = re.compile(r"RuntimeWarning: .* encountered in|Traceback")


# The edits the issue reports as crashing, as a learner typed them.
REPORTED = [
    ("07_pre_post_norm", {"X0": [1.0, -2.0, 0.5, 3.0, 1e4], "EPS": 1e-3, "GAIN": 0.8, "BIAS": 0.2,
                          "DEPTHS": (1, 2, 4, 8, 16, 32, 64)}),
    ("01_what_you_will_learn", {"X0": [0.0, 0.0, 0.0, 0.0]}),
    ("04_layer_norm", {"A": [3.0, 3.0, 3.0, 3.0, 3.0, 3.0], "EPS": 0.0}),
    ("08_backward", {"X": [2.0, 2.0, 2.0, 2.0], "DY": [0.1, -0.2, 0.3, 0.0], "EPS": 0.0}),   # x_hat = 0 / 0
    ("08_backward", {"X": [0.0, 0.0, 0.0], "DY": [0.0, 0.0, 0.0]}),                        # a zero gradient
    # 23.4, one run for three crashes: np.array (once "truth value of an array is ambiguous"), A alone, so that B
    # keeps six entries (once an error about gamma), and a largest deviation printed with 7 characters (once a negative
    # padding width, "Sign not allowed in string format specifier")
    ("04_layer_norm", "A = np.array([1.0, 2.0, 4.0])"),
    ("03_mean_and_variance", {"A": [5.0] * 6}),                      # once "x contains 6 NaN": NaNs never typed
    ("03_mean_and_variance", {"A": [100.0, 102.0, 98.0, 101.0], "B": [0.5, 0.1]}),   # once a raw broadcast error
    ("03_mean_and_variance", "A = np.array([100.0, 102.0, 98.0, 101.0, 99.0, 103.0])"),   # once truth value ...
    ("01_what_you_will_learn", {"MAX_DEPTH": 1}),                     # once an IndexError, inside the stated range
    ("09_key_takeaways", {"X_SIX": [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]}),                          # a constant vector
    ("09_key_takeaways", {"X_SIX": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "EPS": 0.0}),              # ... and 0/0
]


# Corners that still stop a notebook, each in a cell outside its parameters and check cells: shown here, by corner,
# until the cell named is fixed (then the run passes, this strict xfail fails, and the entry goes). Each is a constant
# or all-zero input with EPS = 0 (0/0), or a gain of 0 (a sensitivity of 0, whose log is taken), which the cell
# should show and explain instead.
KNOWN: dict[str, str] = {}   # none left: every corner of 06, 07 and 09 now runs clean


def edit_source(values: dict | str) -> str:
    """The edit as a learner types it (a dict of values, or the source itself, e.g. with np.array(...))."""
    return values if isinstance(values, str) else "\n".join(f"{k} = {v!r}" for k, v in values.items())


def cases() -> list:
    out, seen = [], {}
    for name, values in REPORTED:
        seen[name] = seen.get(name, -1) + 1
        out.append(pytest.param(name, values, id=f"{name}-reported{seen[name] or ''}"))
    for name, decl in SECTIONS.items():   # its corners, as few runs as put every parameter at each corner
        for i, values in enumerate(decl.corners()):
            known = KNOWN.get(key := f"{name}-corners{i}")
            marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
            out.append(pytest.param(name, values, id=key, marks=marks))
    return out


def test_every_known_crash_names_a_corner_that_exists():
    ids = {p.id for p in cases()}
    assert set(KNOWN) <= ids, f"remove these from KNOWN: {sorted(set(KNOWN) - ids)}"


def test_every_notebook_with_a_parameters_cell_is_declared():
    """Its corners are then run here, its values explored by test_parameter_explore.py, its help text and check
    written from the declaration: a new parameters cell needs an entry in normlab_core/parameters.py SECTIONS."""
    with_parameters = sorted(p.stem for p in toc_notebooks()
                             if any("parameters" in c.metadata.get("tags", [])
                                    for c in nbformat.read(p, as_version=4).cells))
    assert sorted(SECTIONS) == with_parameters, "declare it in normlab_core/parameters.py SECTIONS"


@pytest.mark.parametrize("name, values", cases())
def test_notebook_runs_to_the_end_with_allowed_parameters(name, values, notebook_kernel):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    edit = edit_source(values)
    try:
        execute(nb, path.parent, overrides=edit, kernel=notebook_kernel(name))
    except Exception as err:  # noqa: BLE001 - reported with the edit that caused it
        cell = ANSI.sub("", str(err)).split("------------------")[1] if "------------------" in str(err) else ""
        pytest.fail(f"{name} stopped with the edit\n{edit}\nin the cell{cell}\n"
                    f"{getattr(err, 'ename', type(err).__name__)}: {ANSI.sub('', str(getattr(err, 'evalue', err)))}")
    raw = [f"cell {i}: {''.join(o.get('text', ''))[:300]}" for i, c in enumerate(nb.cells)
           for o in c.get("outputs", []) if o.get("name") == "stderr" and RAW_WARNING.search(o.get("text", ""))]
    assert not raw, f"{name} let numpy's bare warnings through with the edit\n{edit}\n" + "\n".join(raw)


# -- the declarations (normlab_core/parameters.py) and the check cell that uses them ------------------------------
# Values outside a declaration, as a learner typed them, and the words the refusal must say (a value out of range
# once failed deep in the library, "x contains NaN"; swapped gains once printed "ten-fold growth takes -21.85 layers").
REFUSED = [
    ("02_the_problem", {"RHO": 2.7}, "RHO must be between 0 and 0.99, got 2.7"),
    ("02_the_problem", {"GAIN_UP": 0.9, "GAIN_DOWN": 1.1}, "GAIN_UP must be a number above 1, at most 1.5, got 0.9"),
    ("04_layer_norm", {"EPS": "1e-5"}, "EPS must be a number, got str '1e-5'"),
    ("04_layer_norm", "A = [1.0, float('nan')]", "each entry of A must be a finite number, got nan"),
    ("11_does_it_train", {"GRAD_DEPTHS": (6, 12, 48)}, "each entry of GRAD_DEPTHS must be between 1 and 24, got 48"),
    ("05_rms_norm", {"EPS": -1e-5}, "EPS must be between 0 and 1, got -1e-05"),
    ("06_comparing", {"OFFSET": 5000.0}, "OFFSET must be between -1000 and 1000, got 5000"),
    ("07_pre_post_norm", {"RANDOM_WIDTH": 1}, "RANDOM_WIDTH must be between 2 and 256, got 1"),
    ("08_backward", {"BATCH": 64, "SEQ": 1024, "WIDTH": 768},
     "BATCH * SEQ * WIDTH must be at most 20,000,000 (the arrays they size must fit in memory), got 50,331,648"),
    ("09_key_takeaways", {"X_GRAD": [1.0, 2.0, 3.0]}, "X_GRAD and UPSTREAM must have the same number of entries"),
    ("12_norms_in_16_bits", "A = np.array([[1.0, 2.0], [3.0, 4.0]])", "A must be one row of numbers (a 1-D array)"),
]


@pytest.mark.parametrize("name, values, words", REFUSED, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(REFUSED)])
def test_a_value_outside_the_declaration_is_refused_by_name_before_any_work(name, values, words, notebook_kernel):
    """The check cell right after the parameters cell refuses the value, naming it, in one line (no traceback into
    the library), and says that the numbers in the text below are not this run's."""
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    i = parameters_index(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    with pytest.raises(Exception) as caught:
        execute(nb, path.parent, overrides=edit_source(values), kernel=notebook_kernel(name))
    err = caught.value
    assert getattr(err, "ename", "") == "ParameterError", ANSI.sub("", str(err))[-600:]
    assert words in err.evalue and STALE in err.evalue, err.evalue
    check = nb.cells[i + 1]
    assert "allowed.check(globals())" in check.source, "the refusal should come from the check cell"
    shown = [o for o in check.outputs if o.get("output_type") == "error"]
    assert shown and len(shown[0]["traceback"]) == 1, "the refusal should be its message alone, not a traceback"
    later = [c for c in nb.cells[i + 2:] if c.cell_type == "code" and c.get("outputs")]
    assert not later, "a cell after the check ran"


def parameters_cell(name: str):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    i = parameters_index(nb)
    return nb, i


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_the_declaration_is_the_parameters_cell_and_its_defaults_are_allowed(name):
    """Every name the parameters cell assigns is declared and every declared name is assigned; the cell's own values
    pass the declaration (notebook 11's GRAD_DEPTHS once lay outside its stated range); the allowed values are
    written once, in the declaration (the help text under the cell), not again in the cell's comments; the check
    cell follows the parameters cell."""
    nb, i = parameters_cell(name)
    src = nb.cells[i].source
    namespace = {}
    exec(src, namespace)
    assigned = {k for k in namespace if k.isupper()}
    assert assigned == set(SECTIONS[name].names), (assigned, SECTIONS[name].names)
    SECTIONS[name].check(namespace)
    assert "Allowed" not in src and not re.search(r"\b\d+ to \d+\b", src), "the cell's comments repeat the ranges"
    check = nb.cells[i + 1]
    assert check.cell_type == "code" and f'SECTIONS["{name}"]' in check.source and "allowed.check" in check.source
    assert str(SECTIONS[name]) in "".join(o.get("data", {}).get("text/plain", "") for o in check.outputs), (
        "the check cell's stored output is not the declaration's help text: "
        f"MPLBACKEND=Agg .venv/bin/python scripts/refresh_notebooks.py notebooks/{name}.ipynb")


def test_every_declared_notebook_has_corner_runs_and_each_corner_is_allowed():
    for name, decl in SECTIONS.items():
        sets = decl.corners()
        assert 2 <= len(sets) <= 6, (name, len(sets))       # a few runs per notebook (make test's budget)
        for values in sets:
            decl.check(values)
        for p in decl.params:                                 # every corner of every parameter is in some run
            for corner in p.corners():
                assert any(p.check(v[p.name]) == p.check(corner) for v in sets) or decl.same_length, (name, p.name)


def test_the_check_accepts_lists_tuples_and_arrays_and_names_what_it_refuses():
    decl = Parameters((Vector("A"), Vector("B", as_tuple=True), Number("EPS", 0.0, 1.0),
                       Number("N", 1, 8, integer=True)), same_length=(("A", "B"),))
    got = decl.check({"A": np.array([1, 2]), "B": [3.0, 4.0], "EPS": np.float32(0.5), "N": np.int64(3)})
    assert got == {"A": [1.0, 2.0], "B": (3.0, 4.0), "EPS": 0.5, "N": 3}
    assert type(got["A"][0]) is float and type(got["N"]) is int
    ok = {"A": (1.0, 2.0), "B": [3.0, 4.0], "EPS": 0.0, "N": 1}
    for change, words in [({"EPS": 2.7}, "EPS must be between 0 and 1, got 2.7"),
                          ({"EPS": -0.0001}, "EPS must be between 0 and 1, got -0.0001"),
                          ({"EPS": True}, "EPS must be a number, got bool True"),
                          ({"N": 2.0}, "N must be a whole number, got float 2.0"),
                          ({"N": 9}, "N must be between 1 and 8, got 9"),
                          ({"A": "1, 2"}, "A must be a list, tuple or numpy array"),
                          ({"A": np.ones((2, 2))}, "A must be one row of numbers (a 1-D array), got shape (2, 2)"),
                          ({"A": [1.0]}, "A must hold 2 to 64 numbers"),
                          ({"A": [1.0, 2e4]}, "each entry of A must be between -10000 and 10000, got 20000"),
                          ({"A": [1.0, 2.0, 3.0]}, "A and B must have the same number of entries: A has 3, B has 2"),
                          ({"B": [1.0, math.inf]}, "each entry of B must be a finite number, got inf")]:
        with pytest.raises(ParameterError) as caught:
            decl.check({**ok, **change})
        assert str(caught.value).startswith(words) and str(caught.value).endswith(STALE), str(caught.value)
    with pytest.raises(ParameterError, match="must define N"):
        decl.check({k: v for k, v in ok.items() if k != "N"})
    help_text = str(decl)
    assert "  A    2 to 64 numbers" in help_text and "A and B must have the same length" in help_text


def test_a_failing_cell_after_the_check_says_the_page_may_be_stale(tmp_path):
    """When a Run All stops at an error, the text's computed numbers ({eval}, stored per markdown cell in its
    user_expressions metadata) may still be an earlier run's: jupyterlab-myst asks the kernel for them only when the
    run reaches the markdown cell, after the code cells already queued, so the kernel's abort after an error drops
    the request and the old values stay. The kernel cannot reach that metadata, so the failing cell says it."""
    from nbclient import NotebookClient

    cells = ["from normlab_core.parameters import Parameters, Number\nX = 1",
             "Parameters((Number('X', 0, 2),)).check(globals())", "1 / 0", "Parameters((Number('X', 0, 2),))"
             ".check({'X': 3})", "raise KeyboardInterrupt"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    def said(cell):
        return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")

    assert STOPPED in said(nb.cells[2]), nb.cells[2].outputs
    assert said(nb.cells[1]) == "" and said(nb.cells[3]) == "", "only an error outside the check says it"
    assert STOPPED not in said(nb.cells[4]), "an interrupt is the learner's own stop"


def test_a_product_limit_is_checked_said_in_the_help_and_kept_by_the_corners():
    """08's BATCH * SEQ * WIDTH sizes arrays the notebook allocates: each may be large, not all three at once."""
    decl = Parameters((Number("B", 1, 1024, integer=True), Number("S", 1, 8192, integer=True)),
                      at_most=((("B", "S"), 1_000_000),))
    assert decl.check({"B": 1024, "S": 976}) == {"B": 1024, "S": 976}
    with pytest.raises(ParameterError) as caught:
        decl.check({"B": 1024, "S": 977})
    assert str(caught.value).startswith("B * S must be at most 1,000,000 (the arrays they size must fit in memory), "
                                        "got 1,000,448"), str(caught.value)
    assert "  B * S must be at most 1,000,000" in str(decl)
    for values in decl.corners():
        decl.check(values)
    fitted = decl._fit_lengths({"B": 1024, "S": 8192})
    assert fitted["B"] * fitted["S"] <= 1_000_000 and min(fitted.values()) >= 1, fitted
