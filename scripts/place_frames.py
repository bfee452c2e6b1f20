"""Put each static explorable's frame files beside the page that shows it (run by `make book`).

While the book is built, `normlab_core.static` renders every combination of an explorable's controls
and stages the distinct PNG frames in a folder (NORMLAB_FRAMES, default _build/nl-frames/<name>/).
A page refers to them by a relative address, `nl-frames/<name>/<hash>.png`, listed in the
explorable's embedded JSON. This script reads every built page, copies exactly the files it lists
from the staging folder to `<page folder>/nl-frames/<name>/`, and fails (exit 1) when one is missing.

    python scripts/place_frames.py [_build/html] [_build/nl-frames]
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

DATA = re.compile(r'<script type="application/json" class="nl-data">(.*?)</script>', re.S)


def page_frames(text: str) -> list[tuple[str, list[str]]]:
    """(frame folder address, file names) of every static explorable in a page's HTML."""
    out = []
    for m in DATA.finditer(text):
        data = json.loads(m.group(1))
        out.append((data["dir"], list(data["files"])))
    return out


def place(site: Path, staging: Path) -> tuple[int, int, list[str]]:
    """Copy the frames every page needs; (pages with explorables, files placed, problems)."""
    problems, pages, placed = [], 0, 0
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        found = page_frames(page.read_text(encoding="utf-8"))
        pages += bool(found)
        for folder, files in found:
            parts = folder.strip("/").split("/")
            if len(parts) != 2 or parts[0] != "nl-frames" or ".." in parts:
                problems.append(f"{page.relative_to(site)}: unexpected frame folder {folder!r}")
                continue
            dest = page.parent / folder
            dest.mkdir(parents=True, exist_ok=True)
            for name in files:
                src = staging / parts[1] / name
                if not src.is_file():
                    problems.append(f"{page.relative_to(site)}: frame {src} was not rendered")
                    continue
                if not (dest / name).is_file():
                    shutil.copyfile(src, dest / name)
                    placed += 1
    return pages, placed, problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "_build/html")
    staging = Path(argv[2] if len(argv) > 2 else "_build/nl-frames")
    if not site.is_dir():
        print(f"place_frames: {site} does not exist; run `make book`", file=sys.stderr)
        return 1
    pages, placed, problems = place(site, staging)
    for p in problems:
        print("place_frames:", p, file=sys.stderr)
    if problems:
        return 1
    total = sum(f.stat().st_size for f in site.rglob("nl-frames/*/*.png"))
    print(f"place_frames: {placed} frame files placed for {pages} pages ({total / 2**20:.1f} MB of frames)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
