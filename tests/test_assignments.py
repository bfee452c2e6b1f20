"""The nbgrader course of section 23.10: what the release and the book's copy contain, its visible checks, and
the course tools (partial assignments, zip_collect, the review scan, the feedback filter).

Grading is tested in test_grading_judge.py (the checks' logic), test_grading_sandbox.py (the sandbox),
test_grading_pipeline.py (simulated submissions, end to end) and test_grading_exchange.py (a class through
nbgrader's exchange).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys

import nbformat
import numpy as np
import pytest
from grading_support import (
    PART_CELLS,
    ROOT,
    SOURCE,
    WRONG,
    NbgraderFailed,
    mx,
    namespace,
    nbgrader_here,
    platform_archive,
    released_course,
    shared_tmp,
)

STORED = ROOT / "notebooks" / "10_exercises.ipynb"
REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
sys.path.insert(0, str(ROOT / "assignments"))
from normlab_grading import feedback, inert, review  # noqa: E402


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return released_course(tmp_path_factory.mktemp("release") / "course", shared_tmp(tmp_path_factory))


def test_release_has_no_solution_or_hidden_test(course):
    _, source, released = course
    text = "\n".join(c.source for c in released.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "Rubric", "Model answer", "hidden_checks",
                   "normlab_grading", "COURSE_SEED"):
        assert marker not in text
    outside = "\n".join(REGION.sub("", c.source) for c in source.cells)
    released_lines = {line.strip() for line in text.split("\n")}
    secret = [line.strip() for c in source.cells for _, body in REGION.findall(c.source)
              for line in body.split("\n") if len(line.strip()) > 12 and line.strip() not in outside]
    assert len(secret) > 40  # the regions are substantial, so this check has something to find
    assert [line for line in secret if line in released_lines] == []


def test_release_does_not_ship_the_grading_helpers(course):
    root, _, _ = course
    shipped = {p.name for p in (root / "release" / mx.ASSIGNMENT).rglob("*")}
    assert shipped == {mx.NOTEBOOK}


def test_stored_student_notebook_is_up_to_date(course):
    _, _, released = course
    fresh = mx.book_version(released)
    stored = nbformat.read(STORED, as_version=4)

    def view(nb):
        return [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells]

    assert view(stored) == view(fresh), "notebooks/10_exercises.ipynb is stale: run `make exercises`"


def test_book_copy_tags_let_every_tool_run_what_it_should():
    stored = nbformat.read(STORED, as_version=4)
    student_cells = [c for c in stored.cells if mx.is_student_cell(c)]
    # the answer and check cells of code in the source (optional ones too), each once: none lost or added
    wanted = [c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(SOURCE, as_version=4).cells
              if c.cell_type == "code" and {"solution", "grade"} & {k for k, v in c.metadata.get("nbgrader", {}).items()
                                                                     if v is True}]
    assert [c.metadata["nbgrader"]["grade_id"] for c in student_cells] == wanted, "run `make exercises`"
    for cell in stored.cells:
        tags = set(cell.metadata.get("tags", []))
        assert "skip-execution" not in tags  # nbgrader validate would skip such a cell
        if mx.is_student_cell(cell):
            # check cells only check: folded in the book and collapsed in JupyterLab; answer cells stay open
            assert tags == set(mx.BOOK_TAGS) | ({"hide-cell"} if mx.is_check_cell(cell) else set())
            assert cell.metadata.get("jupyter", {}).get("source_hidden", False) is mx.is_check_cell(cell)
            assert cell.outputs == []
        elif mx.is_plumbing_cell(cell):   # set-up and data cells: their code hidden, their printout shown
            assert "hide-input" in tags and cell.metadata["jupyter"]["source_hidden"] is True
        elif cell.cell_type == "code":
            assert cell.execution_count is not None
            assert all(o.output_type != "error" for o in cell.outputs)


def test_book_copy_opens_with_a_figure_within_its_first_cells():
    # the reading budget wants a figure within two screens: the stored runs' gradients, exercise 8's question
    stored = nbformat.read(STORED, as_version=4)
    first = [c for c in stored.cells[:3] if c.cell_type == "code" and c.get("id") == mx.TEASER_ID]
    assert len(first) == 1 and "remove-input" in first[0].metadata["tags"]
    assert any("image/png" in o.get("data", {}) for o in first[0].outputs), "run `make exercises`"


def test_optional_cells_say_what_to_fill_in_instead_of_raising(course):
    _, _, released = course
    optional = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                in ("ex4_timing", "ex6_experiment")]
    assert len(optional) == 2
    for cell in optional:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(cell.source, "<cell>", "exec"), {})  # noqa: S102 - the released stub itself
        assert out.getvalue().startswith("Optional (not graded): write your")


def test_course_root_is_the_config_folder(tmp_path, monkeypatch):
    # The course must work wherever an instructor copies it: its root is the folder of its config file,
    # whatever the current directory is.
    from traitlets.config.loader import PyFileConfigLoader

    root = mx.copy_course(tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert config.CourseDirectory.root == os.path.abspath(root)
    assert config.CourseDirectory.course_id == "normlab"
    assert config.Execute.timeout > 0
    assert feedback.HideHiddenTests in config.GenerateFeedback.preprocessors


# --- a subset of the exercises ------------------------------------------------------------------------

@pytest.fixture
def partial(tmp_path, monkeypatch):
    monkeypatch.setattr(mx, "COURSE", mx.copy_course(tmp_path / "course"))
    path = mx.write_subset("1,2,4", "chapter23_part")
    return nbformat.read(path, as_version=4), nbformat.read(SOURCE, as_version=4)


def test_only_writes_a_consistent_partial_assignment(partial):
    nb, source = partial
    text = "\n".join(c.source for c in nb.cells)
    headings = re.findall(r"^## (.*)", text, re.M)
    assert [h.split(":")[0] for h in headings] == ["Exercise 1", "Exercise 2", "Exercise 4", "Before you hand in"]
    intro = nb.cells[0].source
    assert re.findall(r"^\| (\d) \|", intro, re.M) == ["1", "2", "4"]
    assert len(re.findall(r"^- ", intro, re.M)) == 3
    assert "KANN" not in intro and "ten dense layers" not in intro and "six" not in intro.lower()
    assert not re.search(r"\bExercises? [356]\b", text)
    kept = {c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata}
    owners = zip(source.cells, mx.exercise_of_cells(source), strict=True)
    wanted = {c.metadata["nbgrader"]["grade_id"] for c, n in owners
              if "nbgrader" in c.metadata and n in (None, 1, 2, 4)}
    assert kept == wanted and "ex3_layers" not in kept and "ex5_answer" not in kept


def test_only_rejects_unknown_exercises(tmp_path, monkeypatch):
    monkeypatch.setattr(mx, "COURSE", mx.copy_course(tmp_path / "course"))
    beyond = max(n for n in mx.exercise_of_cells(nbformat.read(SOURCE, as_version=4)) if n is not None) + 1
    with pytest.raises(ValueError, match=f"no exercise \\[{beyond}\\]"):
        mx.write_subset(f"1,{beyond}", "chapter23_bad")
    with pytest.raises(ValueError, match="new assignment name"):
        mx.write_subset("1", "chapter23")


# --- zip_collect with the configured file-name pattern -----------------------------------------------------

def zip_collect(root, *args):
    """`nbgrader zip_collect chapter23` in root, in this process: (exit status, log)."""
    try:
        return 0, nbgrader_here(root, "zip_collect", mx.ASSIGNMENT, *args)
    except NbgraderFailed as exc:
        return exc.code, exc.log


def test_zip_collect_files_submissions_by_student_and_stops_at_a_nameless_file(course, tmp_path):
    import shutil

    root, archive, released = platform_archive(course, tmp_path, [
        "carol_exercises.ipynb", "week 3/dave_exercises.ipynb", "erin_exercises (1).ipynb", "frank_exercises-2.ipynb"])
    status, log = zip_collect(root)
    assert status == 0, log
    for student in ("carol", "dave", "erin", "frank"):
        assert (root / "submitted" / student / mx.ASSIGNMENT / mx.NOTEBOOK).read_bytes() == released
    shutil.rmtree(root / "submitted")
    (archive / "exercises.ipynb").write_bytes(released)  # whose?
    status, log = zip_collect(root, "--force")
    assert status == 1 and "cannot tell whose notebook 'exercises.ipynb' is" in log, log


@pytest.mark.parametrize("name", ["..", ".", "a\x1b[2Jb", "tab\tbed"], ids=["up", "dot", "escape", "tab"])
def test_zip_collect_refuses_ids_that_leave_submitted_or_hold_control_characters(course, tmp_path, name):
    root, _, _ = platform_archive(course, tmp_path, ["carol_exercises.ipynb", f"{name}_exercises.ipynb"])
    before = {p for p in root.rglob("*") if p.is_file()}
    status, log = zip_collect(root)
    assert status == 1 and "will not file" in log, log
    written = {p for p in root.rglob("*") if p.is_file()} - before
    assert not any("submitted" in p.parts for p in written), written   # nothing collected
    assert not (root / "submitted").exists() or not any((root / "submitted").rglob("*.ipynb"))


# --- the visible checks, as a learner runs them in JupyterLab ----------------------------------------------

def check_cells(source) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
            if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}


def run_check(ns: dict, code: str):
    """The AssertionError (or other error) a check cell raises in a learner's kernel, or None."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
            exec(compile(code, "<check>", "exec"), ns)  # noqa: S102
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


def test_visible_checks_pass_the_reference():
    source = nbformat.read(SOURCE, as_version=4)
    ns = namespace(source=source)
    assert {gid: run_check(ns, code) for gid, code in check_cells(source).items()} == dict.fromkeys(
        check_cells(source))


@pytest.mark.parametrize("part", sorted(WRONG))
def test_each_plausible_mistake_fails_its_visible_check_with_a_message_that_names_it(part):
    source = nbformat.read(SOURCE, as_version=4)
    cell, code = WRONG[part]
    ns = namespace({cell: code}, source=source)
    label = f"{part}:" if len(part) == 1 else f"{part[0]}({part[1]}):"
    errors = {gid: run_check(ns, check_cells(source)[gid]) for gid in PART_CELLS[part]}
    named = [e for e in errors.values() if isinstance(e, AssertionError) and str(e).startswith(label)]
    assert named, errors


# --- the review scan and the feedback filter, on their own ---------------------------------------------------

def test_review_scan_finds_tampering_but_not_honest_answers():
    honest = nbformat.read(SOURCE, as_version=4)
    assert review.scan_notebook(honest) == []
    cheat = nbformat.from_dict(honest)
    answer = next(c for c in cheat.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_function")
    answer.source = "import builtins\nbuiltins.abs = lambda v: 0\nget_ipython().ast_transformers.append(None)\n"
    hits = review.scan_notebook(cheat)
    assert any("monkeypatching" in h for h in hits) and any("input" in h for h in hits)
    cheat.cells.append(nbformat.v4.new_code_cell("class Z(float):\n    def __eq__(self, o):\n        return True"))
    assert any("equals anything" in h for h in review.scan_notebook(cheat))


def test_feedback_filter_drops_hidden_tests_and_tracebacks():
    cell = nbformat.v4.new_code_cell("assert x == 1, 'visible'\n### BEGIN HIDDEN TESTS\nassert x == 7\n"
                                     "### END HIDDEN TESTS")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="1(a): visible",
                                           traceback=["----> 3 assert x == 7", "AssertionError: 1(a): visible"])]
    feedback.clean_check_cell(cell)
    assert cell.source == "assert x == 1, 'visible'"
    assert cell.outputs[0]["traceback"] == ["AssertionError: 1(a): visible"]


def test_feedback_typesets_maths_as_mathml_and_leaves_code_alone():
    def typeset(text):   # the HTML inside the one block typeset() returns
        out = feedback.typeset(text)
        head = f'<div class="{feedback.TYPESET}">'
        assert out.startswith(head) and out.endswith("</div>") and "\n" not in out, out
        return out[len(head):-len("</div>")].replace("&#10;", "\n").strip()

    assert typeset("a $x_i$ b") == ('<p>a <math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><mrow>'
                                    '<msub><mi>x</mi><mi>i</mi></msub></mrow></math> b</p>')
    assert 'display="block"' in typeset("$$\\sum_i x_i$$")
    assert "<mfrac>" in typeset("see $\\frac{a}{b}$")
    for unchanged, shown in (("`$HOME` costs \\$5", "<code>$HOME</code> costs $5"), ("```\n$a$\n```", "$a$"),
                             ("$a\n\nb$", "$a"), ("no maths", "no maths"), ("$\\frac{" * 400 + "$", "$\\frac{")):
        out = typeset(unchanged)
        assert "<math" not in out and shown in out, (unchanged, out)
    assert typeset("`$a$` and $b$").startswith("<p><code>$a$</code> and <math")
    assert typeset("# Exercise 1\n\ntext").startswith('<h1 id="Exercise-1">')   # nbconvert's own headings


@pytest.mark.parametrize("tex", ["\\text{<img src=x onerror=alert(1)>}", "\\href{javascript:alert(1)}{x}",
                                 "\\style{color:red}{x}", "\\class{c}{x}", "\\color{red}{x}", "\\fbox{<i>}"])
def test_feedback_leaves_a_formula_as_written_when_its_mathml_would_carry_more_than_maths(tex):
    # the converter passes markup, links, styles and classes through: such a formula stays as its text
    # (MathAsMathML gives the converter only the instructor's text anyway)
    assert feedback.mathml(tex, "inline") is None
    out = feedback.typeset(f"${tex}$")
    assert "<math" not in out and "javascript:" not in out.replace("$\\href{javascript:", ""), out


def test_feedback_mathml_holds_markup_characters_as_characters():
    out = feedback.mathml("\\mathrm{</math><b>}", "inline")
    assert out.startswith("<math") and "&#x0003C;" in out and "<b>" not in out and "</math><" not in out


def test_feedback_typesets_the_instructors_cells_only():
    prose = nbformat.v4.new_markdown_cell("the mean $\\mu$")
    mine = nbformat.v4.new_markdown_cell(inert.clean_markdown("my $\\mu$"))
    graded = nbformat.v4.new_markdown_cell("answer")
    graded.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "a", "points": 1,
                                   "comment": "use $\\sigma$"}
    nb = nbformat.v4.new_notebook(cells=[prose, mine, graded])
    nb, _ = feedback.MathAsMathML().preprocess(nb, {})
    assert "<p>the mean <math" in nb.cells[0].source and nb.cells[1].source == inert.clean_markdown("my $\\mu$")
    assert "<p>use <math" in nb.cells[2].metadata["nbgrader"]["comment"]


def test_make_exercises_only_is_a_command(capsys):
    with pytest.raises(SystemExit):
        mx.main(["--only", "1"])
    assert "--only and --name go together" in capsys.readouterr().err


def test_the_visible_numbers_of_exercise_3_are_what_the_grader_computes():
    # The check cell of exercise 3 holds exact magnitudes; `python -m normlab_grading.hidden_checks` prints them
    # for the data cell as it is (an instructor who changes the data pastes the new ones in).
    from normlab_grading import hidden_checks

    source = nbformat.read(SOURCE, as_version=4)
    cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_ex3_visible")
    for name, values in hidden_checks.visible_values(SOURCE).items():
        shown = re.search(rf'"{name}": \((?:plain|normed), \[([^\]]*)\]', cell.source).group(1)
        assert [float(v) for v in shown.split(",")] == [float(f"{v:.10g}") for v in values], name
