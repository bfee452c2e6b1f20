"""The PDF edition (`make pdf`, scripts/make_pdf.py) as a reader opens it: _build/pdf/normlab.pdf, its
text and layout read with PDFium (pypdfium2), its bookmarks, links and streams with pypdf.

What a reader of the PDF relies on, checked against the built HTML site (parsed here independently):

* every page of _toc.yml is in it, in the order of the table of contents, one top-level bookmark per section
  with the section's title, each bookmark on the page where that title is printed; every heading of a section
  (h2, h3) has a bookmark under it, in order;
* the text: each section's title; no sidebar, search box, header button or preset button; every explorable
  printed with its "Shown at:" line, its frame (an image on the same page) and its readouts; every line a code
  cell printed (the output tables) is one line of the PDF: no column moved to the next line;
* links: a link between pages of the book jumps inside the PDF, to the page that holds its target (the
  glossary entry it names); no link leads to the local server the pages were printed from, or to a file;
* offline: nothing in it points at the machine it was made on;
* size: every page's drawing is stored compressed.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
from pathlib import Path

import pytest

from scripts import make_pdf

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.pdf

PDF = ROOT / "_build" / "pdf" / "normlab.pdf"
SITE = ROOT / "_build" / "html"
PAGES = make_pdf.toc_pages()


def drawn(source) -> list[dict]:
    """Each page of a PDF (a path or its bytes) as PDFium lays it out: its text ("text"), the baseline height and
    font of each run of text in its body, above the footer ("body": (height in pt, set in a monospace font)), and
    each image drawn more than an inch wide, as figures and frames are ("images": (which, pixels per inch
    across)). The structure (bookmarks, links, streams) is read with pypdf, as make_pdf writes it."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    doc = pdfium.PdfDocument(source)
    pages = []
    try:
        for page in doc:
            textpage = page.get_textpage()
            body, images = [], []
            for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_TEXT, raw.FPDF_PAGEOBJ_IMAGE], max_depth=4):
                if obj.type == raw.FPDF_PAGEOBJ_TEXT:
                    y = obj.get_matrix().f   # the run's baseline on the page
                    if y > 50:   # above the footer (16 mm)
                        body.append((y, "Mono" in obj.get_font().get_base_name()))
                else:
                    left, _, right, _ = obj.get_bounds()   # on the page, form XObjects' matrices applied
                    width_px, height_px = obj.get_px_size()
                    if right - left > 72:   # images wider than an inch (figures and frames, not icons)
                        images.append((f"image {len(images) + 1} ({width_px}x{height_px} px)",
                                       width_px / ((right - left) / 72)))
            pages.append({"text": textpage.get_text_range().replace("\r\n", "\n"), "body": body,
                          "images": images})
            textpage.close()
            page.close()
    finally:
        doc.close()
    return pages


@pytest.fixture(scope="module")
def layout():
    """drawn(PDF): every page of the book's PDF."""
    if not PDF.is_file():
        msg = f"{PDF} is missing: run `make pdf` (after `make book`)"
        if not Path(make_pdf.CHROMIUM).is_file() and os.environ.get("NORMLAB_REQUIRE_BROWSER") != "1":
            pytest.skip(msg + f"; {make_pdf.CHROMIUM} is not installed")
        pytest.fail(msg, pytrace=False)
    if (SITE / "index.html").is_file() and PDF.stat().st_mtime < (SITE / "index.html").stat().st_mtime:
        pytest.fail(f"{PDF} is older than the site: run `make pdf` again", pytrace=False)
    return drawn(PDF)


@pytest.fixture(scope="module")
def pdf(layout):
    """The PDF's structure (pypdf's reader) and each page's text."""
    from pypdf import PdfReader

    return PdfReader(PDF), [page["text"] for page in layout]


def _flat_outline(reader, items, depth=0):
    out = []
    for item in items:
        if isinstance(item, list):
            out += _flat_outline(reader, item, depth + 1)
        else:
            out.append((depth, item.title, reader.get_destination_page_number(item)))
    return out


def _squash(text: str) -> str:
    """Text compared loosely: ligatures undone, no spaces (the PDF's text has its own line breaks)."""
    return re.sub(r"\s+", "", text.replace("\ufb01", "fi").replace("\ufb02", "fl").replace("\ufb00", "ff"))


def _article(name: str) -> str:
    text = (SITE / f"{name}.html").read_text(encoding="utf-8")
    return text[text.find("<article"):text.rfind("</article>")]


def _plain(fragment: str) -> str:
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", fragment))).strip()


def _headings(name: str) -> list[tuple[int, str]]:
    """The h2/h3 headings of a built page that begin a section (level, text without maths)."""
    out = []
    for level, body in re.findall(r'<section id="[^"]+">\s*<h([23])>(.*?)</h\1>', _article(name), re.S):
        body = re.sub(r'<a class="headerlink".*?</a>', "", body, flags=re.S)
        out.append((int(level), _plain(re.sub(r'<span class="math.*?</span>', "", body, flags=re.S))))
    return out


def section_starts(reader) -> list[int]:
    top = [(title, page) for depth, title, page in _flat_outline(reader, reader.outline) if depth == 0]
    return [page for _, page in top]


def test_one_bookmark_per_section_in_the_order_of_the_contents(pdf):
    reader, texts = pdf
    outline = _flat_outline(reader, reader.outline)
    top = [(title, page) for depth, title, page in outline if depth == 0]
    titles = [make_pdf.page_title(SITE, name) for name in PAGES]
    assert [t for t, _ in top] == titles, f"top-level bookmarks {[t for t, _ in top]}, sections {titles}"
    starts = [page for _, page in top]
    assert starts[0] == 0 and starts == sorted(set(starts)), f"sections do not start in order: {starts}"
    for (title, page) in top:
        assert _squash(title) in _squash(texts[page]), f"bookmark {title!r} -> page {page + 1}, which does not show it"
    # A4 portrait throughout, and the whole book (not one page per section)
    assert len(reader.pages) >= 3 * len(PAGES), f"only {len(reader.pages)} pages for {len(PAGES)} sections"
    for i, page in enumerate(reader.pages):
        w, h = float(page.mediabox.width), float(page.mediabox.height)
        assert abs(w - 595.3) < 2 and abs(h - 841.9) < 2, f"page {i + 1} is {w:.0f}x{h:.0f} pt, not A4"


def test_every_heading_has_a_bookmark_under_its_section(pdf):
    reader, texts = pdf
    outline = _flat_outline(reader, reader.outline)
    starts = section_starts(reader) + [len(reader.pages)]
    sections = []
    for depth, title, page in outline:
        if depth == 0:
            sections.append([])
        else:
            sections[-1].append((depth, title, page))
    for i, name in enumerate(PAGES):
        expected = _headings(name)
        got = sections[i]
        assert [d + 1 for d, _, _ in got] == [lvl for lvl, _ in expected], \
            f"{name}: bookmark levels {got}, headings {expected}"
        for (_depth, title, page), (_, heading) in zip(got, expected, strict=True):
            parts = [_squash(w) for w in re.split(r"[\s,]+", heading) if w]
            assert all(w in _squash(title) for w in parts), f"{name}: bookmark {title!r} for heading {heading!r}"
            assert starts[i] <= page < starts[i + 1], f"{name}: bookmark {title!r} points outside its section"
            words = [w for w in re.findall(r"[A-Za-z]{4,}", heading)][:3]
            assert all(w in _squash(texts[page]) for w in words), \
                f"{name}: bookmark {title!r} -> page {page + 1}, which does not show {words}"


def test_text_is_the_article_without_screen_furniture(pdf):
    reader, texts = pdf
    everything = "\n".join(texts)
    for furniture in ["Ctrl+K", "Search this book", "Toggle navigation", "Back to top", "Try:",
                      "each button above the figure", "Print to PDF", "Skip to main content"]:
        assert furniture not in everything, f"{furniture!r} is printed in the PDF"
    assert "\u25b6" not in everything
    # the licence is stated once, on the landing page
    assert "CC BY 4.0" in "\n".join(texts[:section_starts(reader)[1]])


def test_explorables_print_their_frame_readouts_and_values(pdf, layout):
    reader, texts = pdf
    starts = section_starts(reader) + [len(reader.pages)]
    for i, name in enumerate(PAGES):
        article = _article(name)
        count = article.count('class="normlab-explorable')
        pages = [p for p in range(starts[i], starts[i + 1]) if "Shown at:" in texts[p]]
        shown = sum(texts[p].count("Shown at:") for p in pages)
        assert shown == count, f"{name}: {count} explorables, {shown} 'Shown at:' lines in the PDF"
        # each one's readouts (their first label) on a page with its "Shown at:" line and its frame
        firsts = [json.loads(spec.replace("<\\/", "</"))["first"]["wide"][1][0][0] for spec in   # (interactive:
                  re.findall(r'<script type="application/json" class="nl-spec">(.*?)</script>', article, re.S)]  # spec)
        assert len(firsts) == count, f"{name}: could not read the explorables' readouts from the HTML"
        for label in firsts:
            label = _plain(label)
            assert any(_squash(label) in _squash(texts[p]) for p in pages), \
                f"{name}: readout {label!r} is not on a page with an explorable's 'Shown at:' line"
        for p in pages:
            assert layout[p]["images"], \
                f"{name}: page {p + 1} prints an explorable's values but no frame"


def test_printed_output_lines_stay_whole(pdf):
    """Every line a code cell printed (up to 100 characters: the printed tables) is one line of the PDF text."""
    reader, texts = pdf
    starts = section_starts(reader) + [len(reader.pages)]
    checked = 0
    for i, name in enumerate(PAGES):
        lines = {re.sub(r"\s+", " ", line).strip() for line in
                 (re.sub(r"\s+", " ", ln).strip() for ln in "\n".join(texts[starts[i]:starts[i + 1]]).splitlines())}
        for block in re.findall(r'<div class="cell_output docutils container">\s*<div class="output stream '
                                r'highlight-myst-ansi notranslate"><div class="highlight"><pre>(.*?)</pre>',
                                _article(name), re.S):
            for raw in html_lib.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
                line = re.sub(r"\s+", " ", raw).strip()
                if not line or len(raw) > 100:
                    continue
                checked += 1
                assert line in lines, f"{name}: the printed line {raw!r} is not one line of the PDF"
    assert checked >= 200, f"only {checked} printed lines found in the site"


def test_links_between_pages_jump_inside_the_pdf(pdf):
    from pypdf.generic import ArrayObject

    reader, texts = pdf
    starts = section_starts(reader) + [len(reader.pages)]
    glossary = PAGES.index("book/glossary")
    index_of = {page.indirect_reference.idnum: n for n, page in enumerate(reader.pages)}
    internal = to_glossary = 0
    for n, page in enumerate(reader.pages):
        for ref in page.get("/Annots") or []:
            a = ref.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            uri = str((a.get("/A") or {}).get("/URI", ""))
            assert not re.match(r"(file:|https?://(127\.0\.0\.1|localhost))", uri), \
                f"page {n + 1}: a link to the machine the PDF was made on: {uri}"
            dest = a.get("/Dest")
            if dest is None:
                assert uri.startswith(("http://", "https://", "mailto:")), f"page {n + 1}: a link to nowhere: {a}"
                continue
            assert isinstance(dest, ArrayObject), f"page {n + 1}: a named jump that was not resolved: {dest}"
            target = index_of[dest[0].idnum]
            internal += 1
            if starts[glossary] <= target < starts[glossary + 1] and not starts[glossary] <= n < starts[glossary + 1]:
                to_glossary += 1
    assert internal >= 100, f"only {internal} links inside the PDF"
    assert to_glossary >= 20, f"only {to_glossary} links from the sections into the glossary"


def test_a_glossary_link_jumps_to_its_entry(pdf):
    """23.1 links 'sublayer' to the glossary entry: the jump lands on the page that prints the entry, near it."""
    from pypdf.generic import ArrayObject

    reader, texts = pdf
    starts = section_starts(reader) + [len(reader.pages)]
    first = PAGES.index("notebooks/01_what_you_will_learn")
    index_of = {page.indirect_reference.idnum: n for n, page in enumerate(reader.pages)}
    html = _article("notebooks/01_what_you_will_learn")
    assert 'glossary.html#sublayer"' in html, "23.1 no longer links the glossary's 'Sublayer' entry"
    jumps = []
    for n in range(starts[first], starts[first + 1]):
        for ref in reader.pages[n].get("/Annots") or []:
            dest = ref.get_object().get("/Dest")
            if isinstance(dest, ArrayObject):
                jumps.append((index_of[dest[0].idnum], float(dest[3])))
    entry_pages = [p for p in range(starts[PAGES.index("book/glossary")], starts[PAGES.index("book/glossary") + 1])
                   if re.search(r"(?m)^Sublayer\s*$", texts[p])]
    assert entry_pages, "the glossary's 'Sublayer' entry is not in the PDF text"
    assert any(p == entry_pages[0] for p, _ in jumps), \
        f"no link of 23.1 jumps to page {entry_pages[0] + 1}, where the 'Sublayer' entry is printed"


def test_the_site_publishes_the_pdf_and_every_page_links_it(pdf):
    published = SITE / "normlab.pdf"
    assert published.is_file() and published.read_bytes() == PDF.read_bytes(), \
        "make pdf did not put the PDF into the site (scripts/finish_site.py, publish_pdf)"
    for name in PAGES:
        page = SITE / f"{name}.html"
        html = page.read_text(encoding="utf-8")
        start = html.find('<div class="article-header-buttons">')
        links = [h for h in re.findall(r'href="([^"]*)"', html[start:html.find("</div>", start)]) if h.endswith(".pdf")]
        assert links, f"{name}: no PDF link in the header"
        assert all((page.parent / h).resolve() == published.resolve() for h in links), (name, links)


def test_page_numbers_run_through_the_whole_pdf(pdf):
    """Every page's foot says "n / total", counted through the whole PDF (not from 1 in each section)."""
    reader, texts = pdf
    total = len(texts)
    wrong = [i + 1 for i, text in enumerate(texts) if f"{i + 1} / {total}" not in text]
    assert not wrong, f"pages without their number 'n / {total}': {wrong[:10]} (of {total})"


def test_the_contents_page_gives_the_page_each_section_starts_on(pdf):
    reader, texts = pdf
    starts = section_starts(reader)
    contents = re.sub(r"\s+", " ", " ".join(texts[:starts[1]]))   # the landing page and its contents list come first
    titles = [title for depth, title, _ in _flat_outline(reader, reader.outline) if depth == 0]
    wrong = []
    for title, start in zip(titles[1:], starts[1:], strict=True):
        m = re.search(re.escape(title) + r" (\d+) ", contents)
        if m is None or int(m.group(1)) != start + 1:
            wrong.append(f"{title}: {m.group(1) if m else 'no number'} (it starts on page {start + 1})")
    assert not wrong, "\n".join(wrong)


_TRY_THIS = re.compile(r"<p><strong>Try this\.</strong>.*?</p>\s*<ul[^>]*>\s*<li><p><strong>(.*?)</strong>", re.S)


def test_a_try_this_lead_in_is_printed_on_the_page_of_its_list(pdf):
    """"Try this." never ends a page without the first state of its list below it."""
    reader, texts = pdf
    starts = section_starts(reader) + [len(texts)]
    alone = []
    for name, first, end in zip(PAGES, starts, starts[1:], strict=False):
        labels = [_squash(_plain(x)) for x in _TRY_THIS.findall(_article(name))]
        found = 0
        for number in range(first, end):
            page = _squash(texts[number])
            for m in re.finditer(re.escape("Trythis."), page):
                label = labels[found] if found < len(labels) else ""
                if label and label not in page[m.end():]:
                    alone.append(f"{name}: page {number + 1} ends with 'Try this.' before '{label}'")
                found += 1
        assert found == len(labels), f"{name}: {found} 'Try this.' lead-ins printed, the page has {len(labels)}"
    assert not alone, "\n".join(alone)


def test_long_code_breaks_rather_than_leaving_half_empty_pages(pdf, layout):
    """A page whose next page (in the same section) begins with code is filled at least half-way down: a code
    block too long for what is left of a page starts there and goes on over the page."""
    reader, texts = pdf
    starts = section_starts(reader) + [len(texts)]
    half = float(reader.pages[0].mediabox.height) / 2
    assert any(mono for page in layout for _, mono in page["body"]), "no text in a monospace font: code not found"
    empty = []
    for name, first, end in zip(PAGES, starts, starts[1:], strict=False):
        for number in range(first, end - 1):
            here, after = layout[number]["body"], layout[number + 1]["body"]
            if here and after and max(after)[1] and min(y for y, _ in here) > half:
                empty.append(f"{name}: page {number + 1} ends half-way up, page {number + 2} begins with code")
    assert not empty, "\n".join(empty)


def test_figures_and_frames_print_at_200_ppi_or_more(layout):
    low, seen = [], 0
    for number, page in enumerate(layout):
        for name, ppi in page["images"]:
            seen += 1
            if ppi < 200:
                low.append(f"page {number + 1}: {name} at {ppi:.0f} ppi")
    assert seen > 20, f"only {seen} images found in the PDF"
    assert not low, f"{len(low)} images below 200 ppi: {low[:10]}"


def test_every_large_stream_is_compressed(pdf):
    """No page drawing, image or font is stored raw: stamping the page numbers onto a page once left its content
    stream uncompressed (15 of a 20 MB PDF)."""
    reader, _ = pdf
    raw = []
    for number, page in enumerate(reader.pages):
        contents = page.get("/Contents")
        streams = contents.get_object() if contents is not None else []
        for ref in streams if isinstance(streams, list) else [contents]:
            obj = ref.get_object()
            if obj.get("/Filter") is None and len(obj.get_data()) > 4096:
                raw.append(f"page {number + 1}: a {len(obj.get_data()) // 1024} KB drawing without a filter")
    assert not raw, f"{len(raw)} uncompressed content streams, e.g. " + "; ".join(raw[:5])


# A page of the book's print stylesheet with a spacer of `{h}` mm above a "Try this." lead-in and its list, as
# normlab-book.js marks them (p.nl-lead-in before a <ul>).
_LEAD_IN_PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body>
<div class="bd-article"><div style="height: {h}mm"></div>
<p class="nl-lead-in"><strong>Try this.</strong></p>
<ul><li><p><strong>firststate</strong>: a state of the explorable, described in a sentence or two.</p></li>
<li><p><strong>secondstate</strong>: another one.</p></li></ul></div></body></html>"""


def _lead_in_pages(css: str, heights) -> list[tuple[float, bool]]:
    """For each spacer height: (height, whether "Try this." and the first state print on the same page)."""
    from browser_support import launch
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page()
            for h in heights:
                page.set_content(_LEAD_IN_PAGE.format(css=css, h=h))
                texts = [_squash(p["text"]) for p in drawn(page.pdf(format="A4", prefer_css_page_size=True))]
                lead = next(i for i, t in enumerate(texts) if "Trythis." in t)
                out.append((h, "firststate" in texts[lead]))
        finally:
            browser.close()
    return out


def test_the_print_stylesheet_keeps_try_this_with_its_list():
    """Wherever the page ends, the lead-in moves with its list; without the stylesheet's two rules for it, some
    spacer leaves it alone at the foot of a page (so the sweep reaches the case it guards against)."""
    css = (ROOT / "book" / "assets" / "normlab-book.css").read_text(encoding="utf-8")
    rules = re.findall(r"[^{}\n]*nl-lead-in[^{}]*\{[^}]*\}", css)
    assert len(rules) == 2, rules
    heights = [240 + 0.5 * i for i in range(52)]   # the lead-in's line walks down past the foot of the first page
    apart = [h for h, together in _lead_in_pages(css, heights) if not together]
    assert not apart, f"'Try this.' printed alone at the foot of a page with a spacer of {apart} mm"
    stripped = css
    for r in rules:
        stripped = stripped.replace(r, "")
    assert any(not together for _, together in _lead_in_pages(stripped, heights)), \
        "the sweep never leaves the lead-in alone, even without its rules: it tests nothing"


def test_folded_blocks_are_printed_open(pdf):
    """The checking line folds away on screen ("Check the figures" admonitions, hide-cell and hide-input code cells)
    but the PDF holds it: the opening of each folded paragraph and of each folded cell's code is printed in its
    section, and none of the buttons that open them is."""
    from bs4 import BeautifulSoup

    reader, texts = pdf
    starts = section_starts(reader) + [len(texts)]
    everything = "\n".join(texts)
    checked, missing, prompts = 0, [], {"Click to show", "Click to hide"}
    for i, name in enumerate(PAGES):
        soup = BeautifulSoup(_article(name), "html.parser")
        prompts |= {" ".join(p.get_text().split()) for p in soup.select("div.cell details.hide > summary p")}
        samples = []
        for fold in soup.select(".admonition.dropdown"):
            for p in fold.select("p:not(.admonition-title)"):
                if not p.select(".math, script, code"):
                    samples.append(p.get_text())
                    break
        for cell in soup.select("div.cell details.hide .cell_input pre"):
            samples.append(cell.get_text().strip().splitlines()[0])
        section = _squash("\n".join(texts[starts[i]:starts[i + 1]]))
        for sample in samples:
            words = _squash(" ".join(sample.split()[:8]))
            checked += 1
            if words and words not in section:
                missing.append(f"{name}: {sample[:60]!r}")
    assert checked >= 10, f"only {checked} folded blocks found in the site"
    printed = [p for p in prompts if p and p in " ".join(everything.split())]
    assert not printed, f"the buttons that open folded blocks are printed: {printed}"
    assert not missing, ("folded text missing from the PDF (run `make pdf` after `make book`):\n"
                         + "\n".join(missing[:10]))
