"""The book's notebooks as _toc.yml lists them, in reading order. Tests find notebooks here and never by their file
names, so a notebook joins the checks when it joins the book (scripts/toc.py reads the file)."""

from __future__ import annotations

from pathlib import Path

from browser_support import ROOT, toc_pages

__all__ = ["ROOT", "toc_notebooks", "toc_pages"]


def toc_notebooks() -> list[Path]:
    """Every notebook page of _toc.yml, in reading order."""
    return [ROOT / f"{page}.ipynb" for page in toc_pages() if (ROOT / f"{page}.ipynb").is_file()]
