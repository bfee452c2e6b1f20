"""What a reader sees of the built book's figures, tables, equations, sliders and drawers, at a laptop's size
(1280x900) and a phone's (390x844, a touch screen), in Debian's chromium through Playwright; and what a printed
page does with code (print media, as the PDF edition prints it).

* figures of the text are drawn at least twice as many pixels as they are shown (SHARP), on a phone's 3x screen
  three times (the phone drawing), and sit in the middle of their column; on a phone, the phone drawings and the
  explorables' frames fill their column (FILLS);
* a slider's touch target is at least 24 x 24 CSS px (WCAG 2.2, 2.5.8);
* a table column of sentences is at least READABLE px wide (the table scrolls in its box instead);
* no line of a display equation that MathJax broke is a lone symbol (at least MIN_MATH_LINE px wide);
* a tap on a link of the page-contents drawer closes the drawer and shows the heading;
* printed code that wraps goes on at its line's own indentation.

The page tests of test_site_reading.py run these checks on their own load of each page (one load per page and
size serves every check): sharpness_problems on every page with figures, the others on the pages their
INTERACTIONS name.
"""

from __future__ import annotations

import functools

import pytest
from browser_support import DESKTOP, PHONE, toc_pages

pytestmark = pytest.mark.browser

PAGES = toc_pages()
SHARP = 2.0            # pixels drawn per CSS pixel shown, at least (screens and the PDF's 200 ppi)
PHONE_SHARP = 2.9      # a phone drawing's pixels per CSS pixel (3x, rounded)
READABLE = 200         # px: a column whose cells are sentences
MIN_MATH_LINE = 40     # px: the narrowest line of a broken display equation
TOUCH = 24             # px: WCAG 2.2's minimum target size

# Every figure of the text (not an explorable's frame) once loaded: the pixels of the file it shows (read again
# without srcset's density), its shown width, and the space left and right of it in its output box.
FIGURES = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('article .cell_output img:not(.nl-frame)')) {
    img.loading = 'eager';
    img.scrollIntoView();
    await img.decode().catch(() => null);
    const raw = new Image();
    raw.src = img.currentSrc;
    await raw.decode().catch(() => null);
    const r = img.getBoundingClientRect();
    const box = img.closest('.output, .cell_output').getBoundingClientRect();
    out.push({file: img.currentSrc.split('/').pop(), pixels: raw.naturalWidth, shown: r.width,
              left: r.left - box.left, right: box.right - r.right});
  }
  return out;
}"""


# Every explorable's frame: its pixels, its shown width and the width of the explorable's box inside its padding.
FRAMES = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('.normlab-explorable img.nl-frame')) {
    img.scrollIntoView();
    await img.decode().catch(() => null);
    const box = img.closest('.normlab-explorable');
    const style = getComputedStyle(box);
    const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    out.push({name: box.dataset.explorable || box.id, pixels: img.naturalWidth,
              shown: img.getBoundingClientRect().width, room: inner});
  }
  return out;
}"""
FILLS = 0.95   # on a phone a drawing made for phones fills this much of its column, at least


@functools.cache
def figure_pages() -> list[str]:
    """The pages with a figure of the text or an explorable."""
    from browser_support import SITE

    return [p for p in PAGES if (SITE / f"{p}.html").is_file()
            and 'class="cell_output' in (text := (SITE / f"{p}.html").read_text(encoding="utf-8"))
            and ("_images/" in text or "normlab-explorable" in text)]


def sharpness_problems(page, page_path: str, phone: bool) -> list[str]:
    """The figures and frames of a loaded page (run by the page tests, test_site_reading, on their load at each
    size): each drawn at SHARP pixels per CSS px (a phone drawing at PHONE_SHARP) and centred in its column; on a
    phone, phone drawings and frames fill FILLS of their column."""
    problems = []
    for f in page.evaluate(FIGURES):
        if not f["shown"]:
            continue
        density = f["pixels"] / f["shown"]
        want = PHONE_SHARP if phone and f["file"].endswith("-narrow.png") else SHARP
        if density < want:
            problems.append(f"{page_path}: {f['file']} has {density:.2f} pixels per CSS px (at least {want})")
        room = f["shown"] + f["left"] + f["right"]
        if phone and f["file"].endswith("-narrow.png") and f["shown"] < FILLS * room:
            problems.append(f"{page_path}: {f['file']} is {f['shown']:.0f} px wide in a {room:.0f} px column")
        if abs(f["left"] - f["right"]) > 2:
            problems.append(f"{page_path}: {f['file']} is not centred ({f['left']:.0f} px left of it, "
                            f"{f['right']:.0f} px right)")
    if phone:
        for f in page.evaluate(FRAMES):
            if f["shown"] and f["shown"] < FILLS * f["room"]:
                problems.append(f"{page_path}: the frame of {f['name']} is {f['shown']:.0f} px wide in a "
                                f"{f['room']:.0f} px column")
            if f["shown"] and f["pixels"] / f["shown"] < PHONE_SHARP:
                problems.append(f"{page_path}: the frame of {f['name']} has {f['pixels'] / f['shown']:.2f} pixels "
                                f"per CSS px (at least {PHONE_SHARP}, for a phone's 3x screen)")
    return problems


def test_every_page_with_figures_is_checked_for_sharpness():
    """The page tests run sharpness_problems on these pages: the book has figures, and they are found."""
    assert len(figure_pages()) >= 8, figure_pages()


# The checks below read or change a page that a page test of test_site_reading.py (at 1280x900 and at 390x844)
# has open, after its own checks (its INTERACTIONS name them by page): one load of each page serves them all.
def slider_touch_targets_are_at_least_24_px(r, phone: bool = False) -> None:
    boxes = r.page.evaluate("""() => Array.from(
      document.querySelectorAll('.normlab-explorable input[type=range]'), s => {
        const b = s.getBoundingClientRect();
        return [s.getAttribute('aria-label') || s.id, b.width, b.height]; })""")
    assert boxes, "the page has no sliders"
    small = [f"slider {n} is {w:.0f} x {h:.0f} px" for n, w, h in boxes if min(w, h) < TOUCH]
    assert not small, "\n".join(small)


def a_column_of_sentences_is_readable(r, phone: bool = False) -> None:
    # the tables a reader sees: one inside a closed fold has no width until it is opened
    cells = r.page.evaluate("""() => Array.from(document.querySelectorAll('article table td'))
      .filter(c => c.checkVisibility())
      .map(c => [c.textContent.trim().slice(0, 40), c.textContent.trim().length, c.getBoundingClientRect().width])""")
    narrow = [f"'{t}…' is {w:.0f} px wide" for t, n, w in cells if n > 60 and w < READABLE]
    assert cells and not narrow, "\n".join(narrow)


# The lines of every display equation MathJax broke: the stacked spans of its line-broken row, with their widths.
MATH_LINES = """() => {
  const out = [];
  for (const d of document.querySelectorAll('article .MathJax_Display')) {
    for (const stack of d.querySelectorAll('.math span.mrow > span')) {
      const rows = Array.from(stack.children).filter(c => c.getBoundingClientRect().height > 0);
      if (rows.length < 2) continue;
      const boxes = rows.map(c => c.getBoundingClientRect());
      if (!boxes.every((b, i) => i === 0 || b.top >= boxes[i - 1].top + boxes[i - 1].height / 3)) continue;
      out.push({text: d.textContent.slice(0, 30), widths: boxes.map(b => Math.round(b.width))});
    }
  }
  return out;
}"""


def no_broken_equation_leaves_a_symbol_alone_on_a_line(r, phone: bool = False) -> None:
    lonely = [f"an equation ({e['text']!r}…) broken into lines {e['widths']} px wide"
              for e in r.page.evaluate(MATH_LINES) if min(e["widths"]) < MIN_MATH_LINE]
    assert not lonely, "\n".join(lonely)


def a_tap_in_the_page_contents_drawer_closes_it_and_shows_the_heading(r, phone: bool = True) -> None:
    p = r.page
    p.locator("button.secondary-toggle:visible").first.click()
    p.wait_for_timeout(400)
    links = p.locator("dialog#pst-secondary-sidebar-modal a.nav-link:visible")
    assert links.count() >= 2, "the page-contents drawer did not open"
    href = links.nth(1).get_attribute("href")
    links.nth(1).tap()
    p.wait_for_timeout(800)
    assert p.locator("dialog#pst-secondary-sidebar-modal[open]").count() == 0, "the drawer stayed open"
    top = p.evaluate("(id) => document.getElementById(id).getBoundingClientRect().top", href.split("#")[1])
    assert 0 <= top < PHONE["height"] / 2, f"the heading {href} is at {top:.0f} px, not at the top of the screen"
    assert p.url.endswith(href), p.url


# Printed code: each source line's rows as laid out (a Range over the line's characters from its first
# non-space one), as [left of the first row's text, [left of each row]], for lines the page wraps.
WRAPPED = """() => {
  const out = [];
  for (const pre of document.querySelectorAll('article pre')) {
    if (pre.closest('.normlab-explorable')) continue;
    const nodes = [];
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    const text = nodes.map(n => n.data).join('');
    const at = (i) => { for (const n of nodes) { if (i <= n.data.length) return [n, i]; i -= n.data.length; } };
    let start = 0;
    for (const line of text.split('\\n')) {
      const first = line.search(/\\S/);
      if (first >= 0) {
        const range = document.createRange();
        range.setStart(...at(start + first));
        range.setEnd(...at(start + line.length));
        const rows = new Map();
        for (const b of range.getClientRects()) {
          if (!b.width) continue;
          const key = Math.round(b.top);
          rows.set(key, Math.min(rows.has(key) ? rows.get(key) : Infinity, b.left));
        }
        if (rows.size > 1) {
          const lefts = Array.from(rows.entries()).sort((a, b) => a[0] - b[0]).map(e => e[1]);
          out.push({line: line.trim().slice(0, 50), indent: first, lefts});
        }
      }
      start += line.length + 1;
    }
  }
  return out;
}"""


def printed_code_that_wraps_keeps_its_indentation(r, phone: bool = False) -> None:
    """(The page is laid out for print at the A4 text width, then back on screen at 1280x900.)"""
    p = r.page
    p.emulate_media(media="print")
    p.set_viewport_size({"width": 690, "height": 900})   # the A4 page's text width (182 mm) in CSS px
    p.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    try:
        wrapped = p.evaluate(WRAPPED)
    finally:
        p.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
        p.emulate_media(media="screen")
        p.set_viewport_size(DESKTOP)
    indented = [w for w in wrapped if w["indent"] >= 4]
    assert indented, "no indented code line wraps in print; the test sees nothing"
    lost = [f"'{w['line']}' (indent {w['indent']}): rows start at {[round(x) for x in w['lefts']]}"
            for w in indented if min(w["lefts"][1:]) < w["lefts"][0] - 0.5]
    assert not lost, "\n".join(lost)


# The models page's figure as the built page shows it: the file it loaded, its alt text and where it starts.
MODELS_FIGURE = """async () => {
  const img = document.querySelector('article.bd-article figure img');
  if (!img) return null;
  await img.decode().catch(() => null);
  const r = img.getBoundingClientRect();
  return {file: img.currentSrc.split('/').pop(), alt: img.alt, pixels: img.naturalWidth,
          top: r.top + window.scrollY, shown: r.width};
}"""


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_models_page_opens_with_its_generated_figure(reader, size):
    """book/models shows the figure scripts/models_figure.py draws for `make book` (the page's first figure), loaded,
    with the alt text book/models.md gives it, within the first two screens, and at 0.8 of its pixels or more."""
    import re

    from browser_support import ROOT

    from scripts import models_figure

    viewport = DESKTOP if size == "desktop" else PHONE
    r = reader("book/models", viewport=viewport, phone=size == "phone")
    got = r.page.evaluate(MODELS_FIGURE)
    assert got is not None, "book/models has no figure: is the figure directive at the top of book/models.md?"
    assert got["file"] == models_figure.OUT.name and got["pixels"] > 0, f"{got}: run `make book`"
    source = (ROOT / "book" / "models.md").read_text(encoding="utf-8")
    assert got["alt"] == re.search(r"```\{figure\} \S+\n:alt: (.+)\n", source).group(1)
    assert got["top"] < 2 * viewport["height"], f"the figure starts {got['top']:.0f} px down"
    assert got["shown"] >= 0.8 * got["pixels"], got
    r.page.emulate_media(media="print")   # 100 dpi would print under 200 ppi: the table below prints instead
    assert r.page.evaluate("() => document.querySelector('article.bd-article figure img').offsetWidth") == 0
    r.page.emulate_media(media="screen")
    assert not r.all_problems, r.all_problems
