"""The PDF edition of the book: `make pdf`, or `python -m scripts.make_pdf [SITE] [-o OUT.pdf]`.

Every page of _toc.yml, in the order of the table of contents, is opened from the built site
(SITE, default _build/html, served on 127.0.0.1; a request to any other host is refused and reported)
in Debian's Chromium through Playwright, and printed with the book's own print stylesheet
(book/assets/normlab-book.css, "Print"): the article, its figures and captions, each explorable's
current frame, readouts and control values, every folded block open (the "Check the figures" blocks and the
folded code cells), and no sidebars, buttons or sliders. The pages' PDFs
are then joined (pypdf) into one file, OUT (default _build/pdf/normlab.pdf), with

* bookmarks: one per section (the page's title), holding the section's own headings;
* internal links: a link from one page of the book to another (or to a heading of another) becomes
  a jump inside the PDF. Chromium keeps a link as a jump only when it points into the same page,
  so before printing each page gets hidden same-page links to every element that another page
  links to (Chromium then records those elements' positions as named destinations), and links
  between pages are rewritten to those positions. Links to other sites stay web links; links to
  files of the site that are not pages (a figure's full-size image) are dropped;
* a contents list on the first page (the landing page), with a link to every section and the page it starts on;
* page numbers that run through the whole PDF ("n / total" at the foot of every page).

The PDF is then copied into the site as SITE/normlab.pdf, and every page's header gets its PDF link
(scripts/finish_site.py, publish_pdf): the pages are printed before the PDF exists, so until then the site
shows no PDF link, never one that leads nowhere.

Nothing is fetched from the network, and no browser is downloaded: Playwright drives /usr/bin/chromium.
Exits 1 with a message when the site is not built, a page fails to load, or a link cannot be resolved.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from scripts import finish_site
from scripts.browser import CHROMIUM, SiteServer, confine, launch
from scripts.toc import toc_pages

ROOT = Path(__file__).resolve().parent.parent
BOOK_TITLE = "normlab: Normalization in Transformers"


# -- which elements other pages link to ------------------------------------------------------------
_HREF = re.compile(r"""<a\b[^>]*?\bhref=(["'])(.*?)\1""", re.S)


def page_of(url: str, base: str, pages: list[str]) -> tuple[str | None, str]:
    """(the book page a URL of the served site points to, or None; its fragment)."""
    parts = urlsplit(url)
    if not url.startswith(base):
        return None, parts.fragment
    path = unquote(parts.path)[len(urlsplit(base).path):]
    if path in ("", "index.html"):
        path = pages[0] + ".html"
    name = path[:-5] if path.endswith(".html") else None
    return (name if name in pages else None), unquote(parts.fragment)


def link_targets(site: Path, pages: list[str], base: str) -> dict[str, set[str]]:
    """For each page: the ids in it that some other page links to (page -> {id})."""
    targets: dict[str, set[str]] = {p: set() for p in pages}
    for name in pages:
        html = (site / f"{name}.html").read_text(encoding="utf-8")
        for _, href in _HREF.findall(html):
            target, fragment = page_of(urljoin(base + name + ".html", href.replace("&amp;", "&")), base, pages)
            if target and target != name and fragment:
                targets[target].add(fragment)
    return targets


# -- printing -----------------------------------------------------------------------------------------
# Ready to print: MathJax has typeset everything, every lazy figure is loaded and decoded.
READY = """async () => {
  // print the checking line too: folded code cells (hide-cell) and "Check the figures" dropdowns open
  document.querySelectorAll('.tag_hide-cell > details').forEach(d => { d.open = true; });
  document.querySelectorAll('.admonition.dropdown.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  if (document.querySelector('script[src*="mathjax/MathJax.js"]')) {
    const t0 = Date.now();
    while (!(window.MathJax && MathJax.isReady && MathJax.Hub) && Date.now() - t0 < 30000)
      await new Promise(r => setTimeout(r, 50));
    if (window.MathJax && MathJax.Hub) await new Promise(r => MathJax.Hub.Queue(r));
  }
  await Promise.all(Array.from(document.images).map(img => {
    img.loading = 'eager';
    const done = img.complete ? Promise.resolve() : new Promise(r => {
      img.addEventListener('load', r, {once: true}); img.addEventListener('error', r, {once: true}); });
    return done.then(() => img.decode()).catch(() => null);
  }));
  return Array.from(document.images).filter(i => !i.naturalWidth && i.checkVisibility()).map(i => i.src);
}"""

# Hidden same-page links to each id other pages link to and to each heading of the article: Chromium then
# records their positions (named destinations). Returns the ids that are missing and the article's headings
# (level, id, title; maths in a title read as plain symbols by normlab-book.js).
ANCHORS = """(ids) => {
  const plain = (window.normlab && window.normlab.plainMath) || (t => t);
  const headings = [];
  for (const h of document.querySelectorAll('article.bd-article section[id] > :is(h2, h3, h4):first-child')) {
    const copy = h.cloneNode(true);
    copy.querySelectorAll('.headerlink, .MathJax, .MathJax_Preview, .MJX_Assistive_MathML').forEach(e => e.remove());
    copy.querySelectorAll('script[type^="math/tex"]').forEach(e => e.replaceWith(plain(e.textContent)));
    const title = copy.textContent.replace(/\\s+/g, ' ').trim();
    if (title) headings.push([Number(h.tagName[1]), h.parentElement.id, title]);
  }
  const box = document.createElement('div');
  box.hidden = true;
  box.id = 'nl-pdf-anchors';
  const missing = [];
  for (const id of new Set(ids.concat(headings.map(h => h[1])))) {
    if (!document.getElementById(id)) { missing.push(id); continue; }
    const a = document.createElement('a'); a.href = '#' + id; box.appendChild(a);
  }
  document.body.appendChild(box);
  document.documentElement.classList.add('nl-pdf');
  return {missing, headings};
}"""

# Every folded block open (the checking line is printed: normlab-book.js's openFolds, item 8); returns how many
# blocks are still closed after that (none, or the page's script did not run).
OPEN_FOLDS = """() => {
  if (window.normlab && window.normlab.openFolds) window.normlab.openFolds();
  const article = document.querySelector('article.bd-article') || document.body;
  return article.querySelectorAll('details:not([open]), .admonition.toggle-hidden').length;
}"""

# The landing page of the PDF gets a contents list: every section, with a link to it and the page it starts on
# (printed first with "00" in place of each number, then again with the numbers once every page's count is known).
CONTENTS = """(entries) => {
  const article = document.querySelector('article.bd-article') || document.body;
  const old = document.querySelector('section.nl-pdf-contents');
  if (old) old.remove();
  const section = document.createElement('section');
  section.className = 'nl-pdf-contents';
  section.innerHTML = '<h2 id="nl-pdf-contents">Contents</h2>';
  const list = document.createElement('ul');
  list.style.listStyle = 'none';
  list.style.paddingLeft = '0';
  for (const [href, title, number] of entries) {
    const li = document.createElement('li'); const a = document.createElement('a');
    li.style.display = 'flex'; li.style.gap = '0.6em';
    a.href = href; a.textContent = title; a.className = 'reference internal';
    const leader = document.createElement('span');
    leader.style.flex = '1'; leader.style.borderBottom = '0.5px dotted #888'; leader.style.marginBottom = '0.35em';
    const page = document.createElement('span');
    page.className = 'nl-pdf-page'; page.textContent = number; page.style.fontVariantNumeric = 'tabular-nums';
    li.append(a, leader, page); list.appendChild(li);
  }
  section.appendChild(list);
  const first = article.querySelector('h1');
  (first && first.closest('section') ? first.closest('section') : article).querySelector('h1').after(section);
}"""

FOOTER = ("<div style='font-size:7pt;color:#555;width:100%;margin:0 14mm;font-family:sans-serif'>"
          "<span>{title}</span></div>")
# Page numbers run through the whole PDF: Chromium numbers each printed page from 1, so the joined PDF gets its
# numbers from one more print, an A4 page per page of the book holding only "n / total" where Chromium's footer
# would put it, laid over the book's pages (stamp_numbers).
NUMBERS = """<!doctype html><html><head><style>
  @page {{ size: A4; margin: 0; }}
  html, body {{ margin: 0; padding: 0; }}
  .p {{ position: relative; width: 210mm; height: 297mm; break-after: page; overflow: hidden; }}
  .p:last-child {{ break-after: auto; }}
  .n {{ position: absolute; right: 14mm; bottom: {bottom}; font: 7pt sans-serif; color: #555; }}
</style></head><body>{pages}</body></html>"""
NUMBER_BOTTOM = "5.6mm"   # the baseline of Chromium's footer line in the 16 mm bottom margin
_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1>", re.S)


def page_title(site: Path, name: str) -> str:
    """The title of a built page: its article's first <h1>, without the permalink sign."""
    import html as html_lib

    text = (site / f"{name}.html").read_text(encoding="utf-8")
    main = text[text.find("<article"):] if "<article" in text else text
    m = _H1.search(main)
    if not m:
        raise RuntimeError(f"{name}.html has no <h1> title")
    title = re.sub(r"<a\b[^>]*class=\"headerlink\".*?</a>", "", m.group(1), flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", title))).strip()


def print_pages(site: Path, pages: list[str], workdir: Path) -> tuple[str, list[dict]]:
    """Print every page to workdir/<n>.pdf, in order; returns the server's base URL and, per page, its name,
    title and PDF file."""
    import html as html_lib

    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader

    problems: list[str] = []
    printed = [{"name": name, "title": page_title(site, name), "file": workdir / f"{i:02d}.pdf"}
               for i, name in enumerate(pages)]
    with SiteServer(site) as server:
        base = server.base
        targets = link_targets(site, pages, base)
        with sync_playwright() as pw:
            browser = launch(pw, CHROMIUM)
            context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
            confine(context, (base,), problems)
            page = context.new_page()
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            for i, item in enumerate(printed):
                name = item["name"]
                response = page.goto(base + name + ".html", wait_until="load", timeout=90000)
                if response is None or response.status != 200:
                    raise RuntimeError(f"{name}.html did not load ({response.status if response else 'no response'})")
                broken = page.evaluate(READY)
                if broken:
                    problems.append(f"{name}: images that did not load: {broken[:3]}")
                closed = page.evaluate(OPEN_FOLDS)
                if closed:
                    problems.append(f"{name}: {closed} folded block(s) would print closed")
                unbuilt = page.evaluate("() => document.querySelectorAll('div.nl-questions:not(.nl-questions-ready)')"
                                        ".length")   # "Check yourself" prints its questions and answers
                if unbuilt:
                    problems.append(f"{name}: {unbuilt} question block(s) not built (normlab-questions.js did not run)")
                # the plain reading of maths for the bookmark titles (the search page's script)
                page.add_script_tag(url=base + "_static/normlab-search.js")
                marks = page.evaluate(ANCHORS, sorted(targets[name]))
                if marks["missing"]:
                    problems.append(f"{name}: other pages link to ids it does not have: {marks['missing'][:5]}")
                item["headings"] = marks["headings"]
                if i == 0:
                    page.evaluate("() => document.documentElement.classList.add('nl-pdf-first')")
                    page.evaluate(CONTENTS, [[base + p["name"] + ".html", p["title"], "00"] for p in printed[1:]])
                running = BOOK_TITLE if item["title"] == BOOK_TITLE else f"{BOOK_TITLE} · {item['title']}"
                footer = FOOTER.format(title=html_lib.escape(running))
                item["footer"] = footer
                page.pdf(path=str(item["file"]), format="A4", print_background=True,
                         prefer_css_page_size=True, display_header_footer=True,
                         header_template="<span></span>", footer_template=footer)
            # the contents list again, with the page each section starts on (1 is the landing page)
            counts = [len(PdfReader(item["file"]).pages) for item in printed]
            starts = [1 + sum(counts[:i]) for i in range(len(printed))]
            first = printed[0]
            page.goto(base + first["name"] + ".html", wait_until="load", timeout=90000)
            page.evaluate(READY)
            page.evaluate(OPEN_FOLDS)
            page.add_script_tag(url=base + "_static/normlab-search.js")
            page.evaluate(ANCHORS, sorted(targets[first["name"]]))
            page.evaluate("() => document.documentElement.classList.add('nl-pdf-first')")
            page.evaluate(CONTENTS, [[base + p["name"] + ".html", p["title"], str(n)]
                                     for p, n in zip(printed[1:], starts[1:], strict=True)])
            page.pdf(path=str(first["file"]), format="A4", print_background=True, prefer_css_page_size=True,
                     display_header_footer=True, header_template="<span></span>", footer_template=first["footer"])
            if len(PdfReader(first["file"]).pages) != counts[0]:
                problems.append("the contents page changed its length when its page numbers were filled in")
            total = sum(counts)
            numbers = "".join(f"<div class='p'><span class='n'>{n} / {total}</span></div>" for n in range(1, total + 1))
            page.set_content(NUMBERS.format(bottom=NUMBER_BOTTOM, pages=numbers))
            page.pdf(path=str(workdir / "numbers.pdf"), format="A4", prefer_css_page_size=True)
            browser.close()
    if problems:
        raise RuntimeError("\n".join(problems))
    return base, printed


# -- joining ------------------------------------------------------------------------------------------
def _clean(text) -> str:
    return re.sub(r"\s+", " ", str(text).replace("#", "")).strip()


def join(base: str, printed: list[dict], pages: list[str], out: Path, numbers: Path | None = None) -> dict:
    """Join the pages' PDFs into `out` with one bookmark per section (its headings below it) and links
    between pages turned into jumps inside the PDF. Returns counts for the summary line."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, Fit, FloatObject, NameObject, NullObject

    writer = PdfWriter()
    start, named = {}, {}
    for item in printed:
        reader = PdfReader(item["file"])
        name = item["name"]
        start[name] = len(writer.pages)
        named[name] = {str(k).lstrip("/"): (reader.get_destination_page_number(d), float(d.left or 0),
                                             float(d.top) if d.top is not None else None)
                       for k, d in reader.named_destinations.items()}
        for p in reader.pages:
            writer.add_page(p)
        item["pages"] = len(reader.pages)
    if numbers is not None:   # the page numbers, counted through the whole PDF
        stamps = PdfReader(numbers).pages
        if len(stamps) != len(writer.pages):
            raise RuntimeError(f"{len(stamps)} page numbers printed for {len(writer.pages)} pages")
        for page, stamp in zip(writer.pages, stamps, strict=True):
            page.merge_page(stamp)
            page.compress_content_streams()   # merging leaves the page's drawing uncompressed (15 of 20 MB)

    def jump(name: str, index: int, left: float, top: float | None):
        target = writer.pages[start[name] + index]
        if top is None:
            top = float(target.mediabox.top)
        return ArrayObject([target.indirect_reference, NameObject("/XYZ"), FloatObject(left), FloatObject(top),
                            NullObject()])

    unresolved, internal, external, dropped = [], 0, 0, 0
    owner = [item["name"] for item in printed for _ in range(item["pages"])]
    for number, page in enumerate(writer.pages):
        here = owner[number]
        annots = page.get("/Annots")
        if not annots:
            continue
        kept = ArrayObject()
        for ref in annots.get_object():
            a = ref.get_object()
            if a.get("/Subtype") != "/Link":
                kept.append(ref)
                continue
            dest, action = a.get("/Dest"), a.get("/A")
            if dest is not None and not isinstance(dest, ArrayObject):  # a named destination of this page's PDF
                key = str(dest).lstrip("/")
                if key not in named[here]:
                    unresolved.append(f"{here}: #{key}")
                    continue
                a[NameObject("/Dest")] = jump(here, *named[here][key])
                internal += 1
                kept.append(ref)
                continue
            uri = str(action.get_object().get("/URI", "")) if action is not None else ""
            if not uri:
                kept.append(ref)
                continue
            target, fragment = page_of(uri, base, pages)
            if target is None and uri.startswith(base):
                dropped += 1  # a file of the site that is not a page (a figure's full-size image)
                continue
            if target is None:
                external += 1
                kept.append(ref)
                continue
            if fragment and fragment not in named[target]:
                unresolved.append(f"{here} -> {target}#{fragment}")
                continue
            del a["/A"]
            a[NameObject("/Dest")] = jump(target, *named[target][fragment]) if fragment else jump(target, 0, 0, None)
            internal += 1
            kept.append(ref)
        page[NameObject("/Annots")] = kept
    if unresolved:
        raise RuntimeError(f"{len(unresolved)} link(s) with no target in the PDF: {unresolved[:8]}")

    # bookmarks: a section's title, its headings below it (h2 under the title, h3 under the h2 before it, ...)
    bookmarks = 0
    for item in printed:
        name = item["name"]
        parents = {1: writer.add_outline_item(title=item["title"], page_number=start[name])}
        bookmarks += 1
        for level, anchor, title in item["headings"]:
            index, left, y = named[name][anchor]
            parent = parents[max(d for d in parents if d < level)]
            parents = {d: o for d, o in parents.items() if d < level}
            parents[level] = writer.add_outline_item(title=title, page_number=start[name] + index, parent=parent,
                                                     fit=Fit.xyz(left=0, top=y), is_open=False)
            bookmarks += 1
    writer.page_mode = "/UseOutlines"
    writer.add_metadata({"/Title": BOOK_TITLE, "/Author": "The normlab authors",
                         "/Subject": "Normalization in transformers: sections 23.1-23.10"})
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        writer.write(f)
    return {"pages": len(writer.pages), "bookmarks": bookmarks, "internal links": internal,
            "web links": external, "links to full-size figure images (not in the PDF)": dropped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("-o", "--out", default=str(ROOT / "_build" / "pdf" / "normlab.pdf"))
    args = parser.parse_args(argv)
    site, out = Path(args.site), Path(args.out)
    if not (site / "index.html").is_file():
        print(f"make_pdf: {site} has no index.html; run `make book` first", file=sys.stderr)
        return 1
    if not CHROMIUM.is_file():
        print(f"make_pdf: {CHROMIUM} not found; install Debian's chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    pages = toc_pages()
    missing = [p for p in pages if not (site / f"{p}.html").is_file()]
    if missing:
        print(f"make_pdf: pages of _toc.yml missing from {site}: {missing}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="normlab-pdf-") as tmp:
            base, printed = print_pages(site, pages, Path(tmp))
            counts = join(base, printed, pages, out, numbers=Path(tmp) / "numbers.pdf")
    except RuntimeError as e:
        print(f"make_pdf: {e}", file=sys.stderr)
        return 1
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    print(f"make_pdf: {out} ({out.stat().st_size / 2**20:.1f} MB): {len(pages)} sections, {summary}; "
          f"{time.monotonic() - t0:.0f} s")
    published = finish_site.publish_pdf(site, out)
    print(f"make_pdf: published in the site as {published}; every page's header links it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
