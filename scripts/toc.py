"""The book's pages in reading order, read from _toc.yml: the one list the build's tools and the tests share.

It imports nothing of the project, so the search index (run inside the Sphinx build) loads it by its path."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_pages(toc_file: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of _toc.yml in reading order, as paths without suffix ('notebooks/04_layer_norm')."""
    toc = yaml.safe_load(Path(toc_file).read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("chapters"))
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return [str(Path(p).with_suffix("")) for p in pages]
