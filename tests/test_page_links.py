"""The line of links at the top of a page ("← previous · next →") agrees with _toc.yml's reading order: the arrow
left goes to the page before, the arrow right to the page after. The theme's own footer is derived from _toc.yml;
these lines are written by hand, so moving or adding a page must update them. If this fails, edit the page's first
lines (the notebook's first Markdown cell, or the .md page's top) to link the neighbours the message names."""

from __future__ import annotations

import json
import posixpath
import re

import pytest
from toc_support import ROOT, toc_pages

PAGES = toc_pages()
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s#]+)(?:#[^)]*)?\)")


def top_lines(page: str) -> list[str]:
    """The first lines of a page's text: a notebook's first Markdown cell, or an .md page's first 12 lines."""
    nb = ROOT / f"{page}.ipynb"
    if nb.is_file():
        cells = [c for c in json.loads(nb.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "markdown"]
        return "".join(cells[0]["source"]).splitlines()[:12] if cells else []
    return (ROOT / f"{page}.md").read_text(encoding="utf-8").splitlines()[:12]


def arrows(page: str) -> dict:
    """{'previous': page, 'next': page} from the page's links marked ← and →, as _toc.yml names pages."""
    out = {}
    for line in top_lines(page):
        for text, target in LINK.findall(line):
            name = posixpath.normpath(posixpath.join(posixpath.dirname(page), target)).rsplit(".", 1)[0]
            if text.startswith("←"):
                out["previous"] = name
            elif text.endswith("→"):
                out["next"] = name
    return out


@pytest.mark.parametrize("page", PAGES)
def test_the_arrows_at_the_top_follow_the_contents(page):
    i = PAGES.index(page)
    want = {"previous": PAGES[i - 1] if i > 0 else None, "next": PAGES[i + 1] if i + 1 < len(PAGES) else None}
    got = arrows(page)
    wrong = {k: (v, want[k]) for k, v in got.items() if v != want[k]}
    assert not wrong, "; ".join(f"{page}: its {k} arrow links {v}, but _toc.yml puts {w} there"
                                for k, (v, w) in wrong.items())


def test_the_check_reads_the_arrows():
    """The parser finds both arrows where a page has them (23.4 has both)."""
    assert arrows("notebooks/04_layer_norm") == {"previous": "notebooks/03_mean_and_variance",
                                                  "next": "notebooks/05_rms_norm"}
