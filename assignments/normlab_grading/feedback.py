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

import re

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


# Code (fenced blocks, then inline spans) is left alone; outside it, display maths ($$...$$, \[...\]) and inline
# maths (\(...\), $...$ not across a blank line, not an escaped \$) become MathML.
_CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|(`+).+?\2", re.S | re.M)
_MATH = re.compile(r"\$\$(?P<d1>.+?)\$\$|\\\[(?P<d2>.+?)\\\]|\\\((?P<i1>.+?)\\\)"
                   r"|(?<![\\$])\$(?P<i2>(?:\\.|[^$\\])+?)\$", re.S)


# What a converted formula may contain: MathML elements with presentation attributes only (no href, style,
# class or colour), checked on the converter's output, so a formula that would bring anything else stays as written.
_ATTRIBUTE = (r'(?:xmlns|display|mathvariant|stretchy|accent|accentunder|fence|separator|lspace|rspace|notation'
              r'|columnalign|rowalign|columnspacing|rowspacing|columnlines|rowlines|frame|displaystyle|scriptlevel'
              r'|linethickness|width|height|depth|minsize|maxsize|movablelimits|symmetric|form|largeop|voffset'
              r'|align|open|close|separators|bevelled)="[^"<>&]*"')
_TAG = re.compile(r"<(?!/?(?:math|m[a-z]{1,12}|semantics|annotation)(?:\s+" + _ATTRIBUTE + r")*\s*/?>)")


def _mathml(match: re.Match) -> str:
    from latex2mathml.converter import convert

    tex = next(v for v in match.group("d1", "d2", "i1", "i2") if v is not None)
    if "\n\n" in tex or len(tex) > 2000:
        return match.group(0)
    try:
        out = convert(tex.strip(), display="block" if match.group("d1", "d2") != (None, None) else "inline")
    except Exception:  # noqa: BLE001 - a formula the converter cannot read stays as written
        return match.group(0)
    return match.group(0) if _TAG.search(out) or "\n\n" in out else out


def typeset(markdown: str) -> str:
    """The instructor's markdown with its maths as MathML elements (inline HTML), code left as it is."""
    out, last = [], 0
    for code in _CODE.finditer(markdown):
        out.append(_MATH.sub(_mathml, markdown[last:code.start()]))
        out.append(code.group(0))
        last = code.end()
    out.append(_MATH.sub(_mathml, markdown[last:]))
    return "".join(out)


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
