"""Put each static explorable's files beside the page that shows it (run by `make book`).

While the book is built, `normlab_core.interactive.static` draws every combination of an explorable's stops in
both layouts and stages the frames and their table (table.js) in a folder (NORMLAB_FRAMES, default
_build/nl-frames/<name>/), with the one script and stylesheet of every explorable beside them. A page names its
explorables' folders (`data-dir="nl-frames/<name>/"`). This script copies, for every built page, the shared
script and stylesheet and exactly the files each table lists to `<page folder>/nl-frames/`, and fails (exit 1)
when one is missing.

It also gives the book's static figures their phone layout. `normlab_core.display.show_figure` stages a figure's
narrow drawing as <staging>/_figures/<sha256 of the wide PNG>.png; Sphinx names the wide PNG it copies to
_images/ by the same digest (a figure moved out of a data: URI by finish_site.light_images, by its first 20
digits, as nl-<digits>.png). Each such <img> becomes a <picture> whose <source>, <wide name>-narrow.png beside it
(drawn at 3x, for phones' 3x screens), is taken on screens up to 600 px wide, as the explorables' first frames
are; wider screens and print keep the wide figure (drawn at 2.5x, with its CSS size as its width).

    python scripts/place_frames.py [_build/html] [_build/nl-frames]
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

DIR = re.compile(r'<div class="normlab-explorable"[^>]*\sdata-dir="([^"]+)"')
SHARED = ("normlab-explorable.js", "normlab-explorable.css")
NARROW_FIGURES = "_figures"   # as normlab_core.display.NARROW_FIGURES (this script runs without the package)
NARROW_MEDIA = "(max-width: 600px)"   # as frontend.js's NARROW
SHARPNESS = 3                 # narrow figures are drawn at 3x (normlab_core.canvas.NARROW_SHARPNESS)
FIGURE_IMG = re.compile(r"""<img\b[^>]*?\bsrc=(["'])((?:\.\./)*_images/(?:nl-)?([0-9a-f]{20,64})\.png)\1[^>]*>""")


def table_files(table_js: Path) -> list[str]:
    """The frame files a table.js lists."""
    text = table_js.read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])["files"]


def place(site: Path, staging: Path) -> tuple[int, int, list[str]]:
    """Copy what every page needs; (pages with explorables, files placed, problems)."""
    problems, pages, placed = [], 0, 0

    def copy(src: Path, dest: Path, page: Path) -> None:
        nonlocal placed
        if not src.is_file():
            problems.append(f"{page.relative_to(site)}: {src} was not rendered")
        elif not dest.is_file() or dest.stat().st_size != src.stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            placed += 1

    for page in sorted(site.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        folders = DIR.findall(page.read_text(encoding="utf-8"))
        pages += bool(folders)
        for name in SHARED if folders else ():
            copy(staging / name, page.parent / "nl-frames" / name, page)
        for folder in folders:
            parts = folder.strip("/").split("/")
            if len(parts) != 2 or parts[0] != "nl-frames" or ".." in parts:
                problems.append(f"{page.relative_to(site)}: unexpected frame folder {folder!r}")
                continue
            source = staging / parts[1]
            copy(source / "table.js", page.parent / folder / "table.js", page)
            if (source / "table.js").is_file():
                for name in table_files(source / "table.js"):
                    copy(source / name, page.parent / folder / name, page)
    return pages, placed, problems


CSS_WIDTH = re.compile(r'\sstyle="width:\s*(\d+(?:\.\d+)?)px;?"')


def css_size_as_attributes(img: str, png: Path) -> str:
    """An <img> whose size Sphinx wrote as style="width: Npx" (a figure drawn at more pixels than it is shown)
    with that size as width and height attributes instead: an inline style would also size the phone drawing of
    the <picture> (its <source>'s width and height must win on a phone)."""
    from PIL import Image

    m = CSS_WIDTH.search(img)
    if not m or not png.is_file():
        return img
    with Image.open(png) as im:
        w, h = im.size
    width = float(m.group(1))
    return img[:m.start()] + f' width="{round(width)}" height="{round(h * width / w)}"' + img[m.end():]


def narrow_figures(site: Path, staging: Path) -> int:
    """Wrap every figure <img> that has a staged narrow drawing in a <picture> offering it to phones; the number
    of figures wrapped. Idempotent: a figure already in a <picture> is left alone."""
    from PIL import Image

    staged = {p.stem: p for p in (staging / NARROW_FIGURES).glob("*.png")}
    wrapped = 0
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")

        def wrap(m, text=text):
            nonlocal wrapped
            before = text[:m.start()]
            if before.endswith(">") and m.group(2).removesuffix(".png") + "-narrow.png" in before[before.rfind("<"):]:
                return m.group(0)   # wrapped already
            found = [p for digest, p in staged.items() if digest.startswith(m.group(3))]
            if len(found) != 1:
                return m.group(0)
            name = m.group(2).rsplit("/", 1)[1].removesuffix(".png") + "-narrow.png"   # beside the wide file
            dest = site / "_images" / name
            if not dest.is_file() or dest.read_bytes() != found[0].read_bytes():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(found[0], dest)
            with Image.open(found[0]) as im:
                w, h = (round(v / SHARPNESS) for v in im.size)
            src = m.group(2).rsplit("/", 1)[0] + "/" + name
            wrapped += 1
            img = css_size_as_attributes(m.group(0), site / "_images" / m.group(2).rsplit("/", 1)[1])
            return (f'<picture><source media="{NARROW_MEDIA}" srcset="{src} {SHARPNESS}x" width="{w}" '
                    f'height="{h}">{img}</picture>')

        new = FIGURE_IMG.sub(wrap, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return wrapped


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "_build/html")
    staging = Path(argv[2] if len(argv) > 2 else "_build/nl-frames")
    if not site.is_dir():
        print(f"place_frames: {site} does not exist; run `make book`", file=sys.stderr)
        return 1
    pages, placed, problems = place(site, staging)
    figures = narrow_figures(site, staging)
    for p in problems:
        print("place_frames:", p, file=sys.stderr)
    if problems:
        return 1
    total = sum(f.stat().st_size for f in site.rglob("nl-frames/*/*.png"))
    print(f"place_frames: {placed} files placed for {pages} pages ({total / 2**20:.1f} MB of frames); "
          f"{figures} static figures given their phone layout")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
