"""What students see in their feedback: scores, their code and outputs, and the verdict of every check cell.

`nbgrader generate_feedback` renders the graded notebook, whose check cells hold the grader's verdicts (see
grade.py). This preprocessor (configured in `nbgrader_config.py`) runs before the HTML is written and removes
from every check cell

- a hidden-test region of its source, if an instructor adds one (the lines between the BEGIN/END HIDDEN
  TESTS markers; this course's checks live in normlab_grading/hidden_checks.py and need none), and
- the tracebacks of its errors, which would quote the lines around the failing statement. The error's type and
  message stay: the messages of visible cases show returned against expected values, those of hidden cases
  say what failed without giving expected values, inputs or seeds.

A second preprocessor, `MathAsMathML`, typesets the maths of the instructor's text (the release's prose, an
answer cell left as released, the grader's comments) as MathML in the page itself. nbgrader's feedback page
would load MathJax from a CDN: offline it never arrives, and in JupyterLab's HTML viewer (which runs no script
until the page is trusted) the maths showed as `$...$`. The course's template folder replaces that loader with
nothing (templates/feedback/mathjax.html.j2), so the page makes no request at all. A student's own text keeps
its maths as they typed it: the converter passes markup through (a `\\text` or `\\href` command), so it only ever sees
the instructor's LaTeX. A cell is the student's when grade.py made it inert (`inert.is_cleaned`).
"""

from __future__ import annotations

import functools
import re

import jinja2
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from normlab_grading import inert

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


# What a converted formula may contain: MathML elements with presentation attributes only (no href, style,
# class or colour), checked on the converter's output, so a formula that would bring anything else stays as written.
_ATTRIBUTE = (r'(?:xmlns|display|mathvariant|stretchy|accent|accentunder|fence|separator|lspace|rspace|notation'
              r'|columnalign|rowalign|columnspacing|rowspacing|columnlines|rowlines|frame|displaystyle|scriptlevel'
              r'|linethickness|width|height|depth|minsize|maxsize|movablelimits|symmetric|form|largeop|voffset'
              r'|align|open|close|separators|bevelled)="[^"<>&]*"')
_TAG = re.compile(r"<(?!/?(?:math|m[a-z]{1,12}|semantics|annotation)(?:\s+" + _ATTRIBUTE + r")*\s*/?>)")
TYPESET = "normlab-typeset"   # the class of the block that holds an instructor's cell, rendered with its MathML


def mathml(tex: str, display: str) -> str | None:
    """`tex` as a MathML element (display "inline" or "block"), or None when it cannot be converted or its MathML
    would hold more than maths."""
    from latex2mathml.converter import convert

    if len(tex) > 2000:
        return None
    try:
        out = convert(tex.strip(), display=display)
    except Exception:  # noqa: BLE001 - a formula the converter cannot read stays as written
        return None
    return None if _TAG.search(out) else out


def _renderer():
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class MathMLRenderer(IPythonRenderer):
        """nbconvert's own markdown renderer (as its markdown2html filter uses it), with MathML for the maths it
        finds, so a formula is what MathJax would have typeset, no more and no less."""

        def inline_math(self, body: str) -> str:
            return mathml(body, "inline") or super().inline_math(body)

        def block_math(self, body: str) -> str:
            return mathml(body, "block") or super().block_math(body)

    return MathMLRenderer(escape=False)


@functools.lru_cache(maxsize=1024)
def typeset(markdown: str) -> str:
    """The instructor's markdown rendered as nbconvert renders it, its maths as MathML, in one HTML block (kept:
    the release's text is the same on every page, so a process typesets each cell once)."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    return inert.html_block(MarkdownWithMath(renderer=_renderer()).render(markdown), TYPESET)


class MathAsMathML(Preprocessor):
    """Typeset the maths of the instructor's markdown cells and comments as MathML; students' cells stay as they are."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "markdown" and not inert.is_cleaned(cell.source):
                cell.source = typeset(cell.source)
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("comment"):   # written by whoever graded it by hand (GetGrades puts it here)
                meta["comment"] = typeset(meta["comment"])
        return nb, resources


class _TemplateCode(jinja2.BytecodeCache):
    """Compiled templates kept in memory, by template and source checksum (jinja2 compiles a changed source again)."""

    def __init__(self):
        self.store: dict = {}

    def load_bytecode(self, bucket) -> None:
        code = self.store.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket) -> None:
        self.store[bucket.key] = bucket.bytecode_to_string()


TEMPLATE_CODE = _TemplateCode()


class FeedbackHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter, whose templates are compiled once per process (and inherited by the children it
    forks) instead of once per page: nbgrader makes a new exporter, with a new template environment, per page."""

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = TEMPLATE_CODE
        return environment

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter's page. Its last pass parses the whole page with BeautifulSoup to give images an alt text
        and JupyterLab's cells a tabindex, then writes the page out again; on a page with neither (this course's
        template is the classic one: most pages) that pass changes only how the same markup is spelled, and it
        costs more than the rest of the page, so it is skipped there. nbconvert offers no switch for it: its
        module's BeautifulSoup is swapped for the length of this call (a page is written in a process of its own,
        with no other thread)."""
        import nbconvert.exporters.html as html_module

        real = html_module.BeautifulSoup
        html_module.BeautifulSoup = _soup_if_needed(real)
        try:
            return super().from_notebook_node(nb, resources, **kw)
        finally:
            html_module.BeautifulSoup = real


SOUP_NEEDED = re.compile(r"<img|jp-Notebook", re.I)   # what HTMLExporter's last pass looks for


class _Unchanged(str):
    """A page that HTMLExporter's last pass would leave as it is: `select` finds nothing; its text is the page."""

    def select(self, selector):
        return []


def _soup_if_needed(real):
    def soup(markup, features=None, **kw):
        return real(markup, features=features, **kw) if SOUP_NEEDED.search(markup) else _Unchanged(markup)

    return soup
