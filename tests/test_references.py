"""The references read the same in the book and in JupyterLab: plain Markdown (JupyterLab's MyST preview shows
Sphinx's citation roles and its bibliography directive as raw text), and every citation names a listed work."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "book" / "references.md"
CITATION = re.compile(r"([A-Z][A-Za-z-]+(?: et al\.| and [A-Z][A-Za-z-]+)?),? \(?((?:19|20)\d\d)\b")
SPHINX_ONLY = re.compile(r"\{cite(?::[a-z]+)?\}|\{bibliography\}|\{footcite")


def sources() -> dict:
    """Each book page and each notebook's Markdown, by path."""
    out = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("book/*.md"))}
    for p in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        out[p.relative_to(ROOT).as_posix()] = "\n".join("".join(c["source"]) for c in cells
                                                        if c["cell_type"] == "markdown")
    return out


def listed() -> set:
    """(first author's last name, year) of every work in the Bibliography list of references.md."""
    text = REFERENCES.read_text(encoding="utf-8").split("## Bibliography", 1)[1]
    out = set()
    for line in (ln for ln in text.splitlines() if ln.startswith("- ")):
        first = re.split(r",| and ", line[2:].split(" (", 1)[0])[0].split()[-1]
        year = re.search(r"\((\d{4}|n\.d\.)\)", line)
        assert year, f"no year in the reference {line!r}"
        out.add((first, year.group(1)))
    return out


def test_no_page_or_notebook_uses_markup_that_jupyterlab_shows_raw():
    found = {path: SPHINX_ONLY.findall(text) for path, text in sources().items()}
    assert not {k: v for k, v in found.items() if v}


def test_every_citation_on_the_references_page_and_the_intro_names_a_listed_work():
    works = listed()
    assert len(works) >= 20
    for path in ("book/references.md", "book/intro.md"):
        text = (ROOT / path).read_text(encoding="utf-8").split("## Bibliography", 1)[0]
        cited = {(who.split()[0], year) for who, year in CITATION.findall(text)}
        assert cited, path
        assert cited <= works, (path, sorted(cited - works))


def test_the_citation_check_catches_a_work_that_is_not_listed():
    text = "as Smith et al. (2031) showed (Ba et al., 2016)"
    cited = {(who.split()[0], year) for who, year in CITATION.findall(text)}
    assert cited == {("Smith", "2031"), ("Ba", "2016")} and not cited <= listed() and ("Ba", "2016") in listed()
