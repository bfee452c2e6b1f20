"""Make what a student wrote inert before it reaches a page that an instructor or a student opens.

The graded notebook (autograded/) is what Formgrader's manual grading page and the feedback HTML are rendered
from, on the Jupyter server's origin and in the student's browser. nbconvert renders raw HTML in markdown
cells, `text/html`, `text/markdown`, `text/latex`, `application/javascript` and SVG outputs as they are, and
puts a cell's tags and id into attributes. So, in every cell that a student can write (answer cells and
their own cells; the release's cells are the instructor's):

- outputs keep only text (`text/plain`), PNG and JPEG images (their base64 text checked, since it lands in an
  attribute); any other kind is replaced by a line of text naming what was left out;
- markdown is rendered here, with its raw HTML escaped and harmful link schemes removed, then cleaned by
  `bleach` (an allow-list of tags and attributes, links only to http, https and mailto, no images), and stored
  as one HTML block, so that rendering it again (nbconvert, JupyterLab) shows the same text and runs nothing;
  the maths stays as `$...$` for MathJax;
- a raw cell becomes such a markdown cell, showing its text;
- cell metadata other than nbgrader's is dropped, and attachments too (cell ids are checked in `structure`).
"""

from __future__ import annotations

import html
import re

import bleach

SAFE_MIME = ("text/plain", "image/png", "image/jpeg")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")

TAGS = ["p", "br", "hr", "em", "strong", "b", "i", "code", "pre", "blockquote", "ul", "ol", "li", "a",
        "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "sup", "sub",
        "span", "div"]
ATTRIBUTES = {"a": ["href", "title"], "th": ["align"], "td": ["align"]}
PROTOCOLS = ["http", "https", "mailto"]
MARK = "normlab-student-text"   # the class of the block that holds a cleaned answer


def safe_output(out: dict) -> dict:
    """An nbformat output (already of a known type) with only inert content."""
    if out.get("output_type") not in ("display_data", "execute_result"):
        return out
    data = out.get("data", {})
    kept, dropped = {}, []
    for mime, value in data.items():
        if mime == "text/plain" and isinstance(value, str):
            kept[mime] = value
        elif mime in ("image/png", "image/jpeg") and isinstance(value, str) and _BASE64.match(value):
            kept[mime] = value
        else:
            dropped.append(mime)
    if dropped and "text/plain" not in kept:
        names = ", ".join(sorted({m[:60] for m in dropped})[:5])
        kept["text/plain"] = (f"[an output of type {names} is not shown when the notebook is graded: only text and "
                              "PNG or JPEG images are]")
    if not kept:
        kept["text/plain"] = ""
    clean = dict(out)
    clean["data"] = kept
    clean["metadata"] = {}
    return clean


def _render(markdown: str) -> str:
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=True, allow_harmful_protocols=False)
    return MarkdownWithMath(renderer=renderer).render(markdown)


def clean_markdown(markdown: str) -> str:
    """The student's markdown as one inert HTML block that shows the same text (math left for MathJax)."""
    try:
        rendered = _render(markdown)
    except Exception:  # noqa: BLE001 - text mistune cannot render is shown as plain text
        rendered = f"<pre>{html.escape(markdown)}</pre>"
    cleaned = bleach.clean(rendered, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=False)
    return html_block(cleaned, MARK)


def clean_all(sources: list) -> list:
    """clean_markdown of every text in `sources`, in order (one call, so that it can run under one limit)."""
    return [clean_markdown(text) for text in sources]


def plain_block(markdown: str, note: str) -> str:
    """The student's markdown as escaped plain text under a note, for text the clean-up could not finish on:
    escaping is linear in the text's length and needs no parser."""
    text = html.escape(markdown[:20_000]) + ("&#10;[...]" if len(markdown) > 20_000 else "")
    return html_block(f"<p><strong>{html.escape(note)}</strong></p><pre>{text}</pre>", MARK)


def html_block(rendered: str, css_class: str) -> str:
    """Rendered HTML as one markdown HTML block, `<div class=...>` on one line: a blank line would end the block
    and let the next renderer read the rest as markdown."""
    return f'<div class="{css_class}">' + rendered.replace("\r", "").replace("\n", "&#10;") + "</div>"


def is_cleaned(source: str) -> bool:
    return source.startswith(f'<div class="{MARK}">')


def safe_cell(cell: dict, keep_source: bool = False, cleaned: str | None = None) -> dict:
    """A student's cell with inert markdown and metadata; `keep_source` leaves an untouched answer's text as it
    is (nbgrader tells an unchanged written answer by its checksum); `cleaned` is its markdown already cleaned
    (`clean_all`, `plain_block`)."""
    cell = dict(cell)
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    cell["metadata"] = {"nbgrader": meta["nbgrader"]} if isinstance(meta.get("nbgrader"), dict) else {}
    cell.pop("attachments", None)
    if cell.get("cell_type") == "raw":
        cell["cell_type"] = "markdown"
        text = html.escape(cell.get("source", "")).replace("\r", "").replace("\n", "&#10;")
        cell["source"] = f'<div class="{MARK}"><pre>{text}</pre></div>'
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    elif cell.get("cell_type") == "markdown" and not keep_source:
        cell["source"] = cleaned if cleaned is not None else clean_markdown(cell.get("source", ""))
    return cell

