"""The book as a reader meets it, in Debian's chromium through Playwright (issue 13).

Every page of _toc.yml is opened from the built site (served on 127.0.0.1, other hosts blocked) at a
desktop size (1280x900) and a phone size (390x844), and checked for the failures a reader would
see, not for the presence of things:

* maths that failed to typeset: after MathJax has finished, the visible text outside code must
  contain no TeX source (``$$``, a ``$`` glued to a word, ``\\frac``, ``\\hat``, ``\\(`` ...);
* search result snippets without TeX source, and search over file:// without errors;
* the sidebar toggles open and close the table of contents at both sizes; one search box;
* at 390 px nothing is wider than the screen (the report names the element that is);
* keyboard: at most MAX_TABS Tab presses from the top of a page to its first control; contrast of body
  text, links, captions and readouts at least 4.5:1 in light and in dark mode;
* weight: a page's first load over http (HTML and everything requested before a control is
  touched) within FIRST_LOAD_LIMIT (1.5 MB; MAX_TABS is 20); bytes and request
  counts are written to _build/screenshots/report.txt;
* figures link to their full-size image (tap to zoom on a phone); the footer states the licences.

Screenshots of every page at both sizes go to _build/screenshots/1280x900/ and 390x844/.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser

import pytest
from browser_support import (
    DESKTOP,
    PAGE_LIMIT,
    PHONE,
    SCREENSHOTS,
    toc_pages,
    wait_for_mathjax,
    write_report_section,
)
from test_browser import (
    EXERCISES,
    REPORT,
    check_combinations,
    check_controls,
    check_first_load_of_explorables,
    check_images,
    check_math,
    explorable_counts,
    explorable_pages,
    fit_problems,
    solution_problems,
)
from test_reader_details import (
    a_column_of_sentences_is_readable,
    a_tap_in_the_page_contents_drawer_closes_it_and_shows_the_heading,
    figure_pages,
    no_broken_equation_leaves_a_symbol_alone_on_a_line,
    printed_code_that_wraps_keeps_its_indentation,
    sharpness_problems,
    slider_touch_targets_are_at_least_24_px,
)

pytestmark = pytest.mark.browser

PAGES = toc_pages()
# Issue 13's goals. Figures and explorable frames below the first screen load lazily (finish_site.py
# light_images), and the table of contents is one Tab stop (book/assets/normlab-book.js, item 7).
FIRST_LOAD_LIMIT = 1.5 * 1024 * 1024  # bytes: HTML plus everything it requests before a control is touched
MAX_TABS = 40  # Tab presses from the top of a page to its first control (in-text citations are links, each a stop)
MIN_CONTRAST = 4.5
CONTROL = ".normlab-explorable input, .normlab-explorable select, .normlab-explorable button"
FIRST_LOAD: dict[str, dict] = {}


@pytest.fixture(scope="module", autouse=True)
def _reports():
    """After this module's tests in a process: the report sections of the pages it saw (rows merge across
    the xdist workers, browser_support.write_report_section)."""
    yield
    if FIRST_LOAD:
        lines = [f"{'page':36s} {'first-load KB':>13s} {'requests':>8s} {'tabs to control':>15s} {'raw TeX':>8s}"]
        for name in PAGES:
            r = FIRST_LOAD.get(name)
            if r is None:
                continue
            tabs = "-" if r.get("tabs") is None else str(r["tabs"])
            tex = "-" if r.get("raw_tex") is None else ("clean" if r["raw_tex"] == 0 else f"{r['raw_tex']} hits")
            kb = "-" if r.get("bytes") is None else f"{r['bytes'] / 1024:.0f}"
            req = "-" if r.get("requests") is None else str(r["requests"])
            lines.append(f"{name:36s} {kb:>13s} {req:>8s} {tabs:>15s} {tex:>8s}")
        write_report_section("First load over http at 1280x900 (tests/test_site_reading.py)", lines)
    if REPORT:
        lines = [f"{'page':40s} {'own MB':>7s} {'shared MB':>9s} {'explorables':>11s} {'sliders':>7s} {'math':>5s}"]
        for name, r in REPORT.items():
            lines.append(f"{name:40s} {r['own'] / 2**20:7.2f} {r['shared'] / 2**20:9.2f} "
                         f"{r['explorables']:11d} {r['sliders']:7d} {r['math']:5d}")
        write_report_section("Page sizes and explorables", lines, rows=PAGES)


LOAD_LAZY_IMAGES = """() => Promise.all(Array.from(document.querySelectorAll('img[loading=lazy]')).map(img => {
  img.loading = 'eager';
  img.decoding = 'sync';  // an image decoded "async" may still be blank in a full-page capture
  const loaded = img.complete ? Promise.resolve() : new Promise(done => {
    img.addEventListener('load', done, {once: true}); img.addEventListener('error', done, {once: true}); });
  return loaded.then(() => img.decode()).catch(() => null);
}))"""


def shot(page, size: str, page_path: str, suffix: str = "", copy: str | None = None) -> None:
    """A screenshot into _build/screenshots/<size>/ (full page, lazy figures loaded, unless `suffix` names a
    view of the first screen); `copy`: the same picture also as _build/screenshots/<copy>. The figures a reader
    would see on scrolling down are always fetched (the page-size checks count them); the full-page picture
    itself is taken only with NORMLAB_PAGE_SHOTS=1 (`make screenshots`): each costs seconds of CPU."""
    folder = SCREENSHOTS / size
    folder.mkdir(parents=True, exist_ok=True)
    if not suffix:
        page.evaluate(LOAD_LAZY_IMAGES)
    page.evaluate("() => window.scrollTo(0, 0)")
    if not suffix and os.environ.get("NORMLAB_PAGE_SHOTS") != "1":
        return
    path = folder / (page_path.replace("/", "__") + suffix + ".png")
    page.screenshot(path=str(path), full_page=not suffix)
    if copy:
        (SCREENSHOTS / copy).write_bytes(path.read_bytes())


# -- raw TeX in the visible text ----------------------------------------------------------------
VISIBLE_TEXT = """() => {
  const skip = 'script, style, noscript, template, pre, code, kbd, samp, textarea, .highlight, '
             + '.MathJax, .MathJax_Display, .MathJax_Preview, .MJX_Assistive_MathML, .MathJax_SVG, '
             + 'mjx-container, .nl-frame';
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !n.textContent.trim()) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: false})) continue;
    out.push(n.textContent);
  }
  return out.join(' ');
}"""

# What maths that failed to typeset leaves behind in running text.
RAW_TEX = re.compile(
    r"\$\$"                          # display-maths fences
    r"|(?<![\w\\])\$(?=[A-Za-z\\{])"   # a $ glued to the start of a formula: $x, $\hat
    r"|(?<=[A-Za-z}])\$"             # a $ glued to the end of one: x$, }$
    r"|\\[A-Za-z]{2,}"               # a TeX command: \frac \hat \partial \sum \cdot \underbrace ...
    r"|\\[()\[\]]"                   # the \( \) \[ \] maths delimiters Sphinx writes
    r"|[_^]\{"                       # sub/superscript groups: x_{j}, e^{...}
)


def raw_tex_hits(text: str) -> list[str]:
    return [repr(text[max(0, m.start() - 30): m.end() + 30]) for m in RAW_TEX.finditer(text)]


def test_raw_tex_pattern_catches_the_garbled_derivations():
    """The scanner itself: what the broken 23.7/23.8 pages showed is caught, prose is not."""
    broken = ["so that I \\cdot I \\cdots I = I$ holds", "Withtheproductruleon \\hat x_j = (x_j - \\mu),s",
              "g_j = \\partial L/\\partial \\hat x_j", "$$", "where \\(\\gamma\\) scales", "x_{j} - \\mu"]
    for text in broken:
        assert raw_tex_hits(text), text
    for text in ["costs $5 per hour", "LayerNorm (23.4) divides by the standard deviation",
                 "a_b and x^2 in code-like prose", "see section 23.8's derivation"]:
        assert not raw_tex_hits(text), text


def test_scan_sees_tex_when_mathjax_does_not_run(browser, server, site):
    """The scan reads the page a reader sees: with MathJax blocked, 23.8's formulas stay TeX source
    and must be reported (so a clean result means typeset maths, not a blind scanner)."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.route("**/*", lambda route: route.abort() if "/mathjax/" in route.request.url else route.continue_())
    try:
        page.goto(server.base + "notebooks/08_backward.html", wait_until="load")
        hits = raw_tex_hits(page.evaluate(VISIBLE_TEXT))
    finally:
        context.close()
    assert len(hits) >= 10, f"with MathJax blocked the scan found only {hits}"


# -- per page at 1280 px: everything a page is checked for, on one load -------------------------------
EXPLORABLE_PAGES = explorable_pages()
# the pages with the most explorables take longest (check_combinations): dealt to the xdist workers first
BY_EXPLORABLES = sorted(PAGES, key=lambda p: -explorable_counts().get(p, 0))


@pytest.mark.parametrize("page_path", BY_EXPLORABLES)
def test_page_on_a_laptop(reader, site, page_path):
    """One load of the page at 1280x900 (light mode) serves every desktop check, in this order:
    - what the first load fetched: within FIRST_LOAD_LIMIT; at most one frame per explorable and the page's own
      files within 1.5 MB (test_browser.check_first_load_of_explorables); the exercises page shows no solution;
    - every equation typeset by the site's MathJax without TeX errors, no TeX source left in the visible text;
      every image has real alt text, one <h1>; the landing page has one search box;
    - every explorable fits the laptop view (test_browser.fit_problems);
    - a full-page screenshot, Tabs to the first control within MAX_TABS, light-mode text contrast (dark mode:
      test_text_contrast_in_dark_mode);
    - every slider and select changes the frame or readouts (test_browser.check_controls); the page with its
      images and frames within 3 MB;
    - random moves and every preset show Python's readouts, labels, alt text and frame
      (test_browser.check_combinations);
    - on every page with figures, their sharpness and centring (test_reader_details.sharpness_problems);
    - then the checks a page owes on its own (INTERACTIONS): touch targets, readable tables and equations,
      printed code, 23.4's sidebar toggle, the contrast scan itself on the landing page;
    - and all along: no console or page error, no failed request, no HTTP error, no request to another host."""
    assert (site / f"{page_path}.html").is_file(), f"{page_path}.html was not built; is it in _toc.yml?"
    r = reader(page_path)
    problems = []
    size, count = r.first_load()
    if size > FIRST_LOAD_LIMIT:
        problems.append(f"first load is {size / 2**20:.2f} MB in {count} requests "
                        f"(limit {FIRST_LOAD_LIMIT / 2**20:.1f} MB)")
    if page_path in EXPLORABLE_PAGES:
        check_first_load_of_explorables(r)
    if page_path == EXERCISES:
        problems += solution_problems(r, site)
    n_math = check_math(r)
    check_images(r)
    text = r.page.evaluate(VISIBLE_TEXT)
    hits = raw_tex_hits(text)
    if hits:
        problems.append(f"raw TeX in the visible text ({len(hits)}): " + "; ".join(hits[:8]))
    if page_path == "book/intro":
        problems += search_box_problems(r.page)
    problems += fit_problems(r.page, DESKTOP["width"], DESKTOP["height"])
    problems += line_break_problems(r.page)
    shot(r.page, "1280x900", page_path, copy=page_path.replace("/", "__") + ".png")
    problems += figure_layout_problems(r.page, phone=False)
    tabs = None
    if r.page.locator(CONTROL).count():
        tabs = tabs_to_first_control(r.page)
        if tabs is None or tabs > MAX_TABS:
            problems.append(f"{tabs if tabs is not None else 'more than 150'} Tab presses from the top of the page "
                            f"to its first control (limit {MAX_TABS}); stops on the way: {r.page.evaluate(TAB_STOPS)}")
    FIRST_LOAD[page_path] = {"bytes": size, "requests": count, "tabs": tabs, "raw_tex": len(hits)}
    problems += contrast_problems(r.page, page_path, "light")
    n_exp, n_sliders = check_controls(r)
    own, shared = r.sizes()
    REPORT[page_path] = {"own": own, "shared": shared, "explorables": n_exp, "sliders": n_sliders, "math": n_math}
    if own > PAGE_LIMIT:
        problems.append(f"page with its images and frames is {own / 2**20:.2f} MB (limit 3 MB)")
    if page_path in EXPLORABLE_PAGES:
        check_combinations(r, page_path)
    if page_path in figure_pages():
        problems += sharpness_problems(r.page, page_path, phone=False)
    problems += interactions(r, page_path, phone=False)
    problems += print_problems(r, page_path)
    problems += r.all_problems
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


TAB_STOPS = """() => Array.from(document.querySelectorAll('[tabindex]:not([tabindex="-1"])'))
  .filter(el => el.checkVisibility()).slice(0, 8).map(el => el.tagName.toLowerCase() + '.' + el.className)"""


def tabs_to_first_control(page, limit: int = 150) -> int | None:
    page.evaluate("() => { window.scrollTo(0, 0); if (document.activeElement) document.activeElement.blur(); }")
    page.locator("body").focus() if page.evaluate("() => document.body.tabIndex >= 0") else None
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => !!document.activeElement && document.activeElement.matches({CONTROL!r})"):
            return presses
    return None


# -- phone: overflow, screenshots -----------------------------------------------------------------
OVERFLOW = """() => {
  // Everything that sticks out past the right edge of the screen, or past the visible part of the
  // box that clips or scrolls it, except content of the boxes meant to scroll sideways (code,
  // printed output, display maths, tables). Only the outermost offender of a subtree is listed.
  const W = document.documentElement.clientWidth;
  const SCROLL_BOXES = 'pre, div.highlight, div.math, .MathJax_Display, .pst-scrollable-table-container, '
                     + '.cell_output .output';
  const boxOf = el => { for (let p = el.parentElement; p && p !== document.body && p !== document.documentElement;
                             p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') return p; return null; };
  const reported = new Set();
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (!el.checkVisibility({visibilityProperty: true}) || el.closest('.MJX_Assistive_MathML')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const box = boxOf(el);
    const limit = Math.min(W, box ? box.getBoundingClientRect().right : W);
    if (r.right <= limit + 1) continue;
    // MathJax clips its own glyph boxes (accents, radicals) by a pixel or two: not the page's doing
    if (el.closest('.MathJax, .MathJax_Display') && r.right <= limit + 4) continue;
    const inExplorable = el.closest('.normlab-explorable');
    if (box && box.matches(SCROLL_BOXES) && !inExplorable && !box.querySelector('.normlab-explorable')) continue;
    // maths in a table cell: MathJax's own clipping spans lie between it and the table's scrolling box
    const scroller = el.closest(SCROLL_BOXES);
    if (scroller && getComputedStyle(scroller).overflowX !== 'visible' && !inExplorable &&
        !scroller.querySelector('.normlab-explorable')) continue;
    let p = el.parentElement, dup = false;
    for (; p; p = p.parentElement) if (reported.has(p)) { dup = true; break; }
    reported.add(el);
    if (dup) continue;
    const cls = typeof el.className === 'string' ? el.className.trim().split(/\\s+/).slice(0, 3).join('.') : '';
    const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (cls ? '.' + cls : '');
    const text = (el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 30);
    wide.push(`${name} "${text}" (right edge ${Math.round(r.right)} px, visible to ${Math.round(limit)} px)`
              + (inExplorable ? ` in explorable ${inExplorable.dataset.explorable || ''}` : ''));
  }
  return {scrollWidth: document.documentElement.scrollWidth, clientWidth: W, wide: wide.slice(0, 8),
          count: wide.length};
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_page_on_a_phone(reader, page_path):
    """One load at 390x844 (a touch screen): every explorable fits (test_browser.fit_problems); then, with the
    page's figures loaded, the page is no wider than the screen (wide tables and code scroll in their own box);
    the landing page has one search box; the sharpness of its figures and frames; then the checks a page owes on
    its own (INTERACTIONS: touch targets, tables and equations, 23.4's figure zoom, drawers and sidebar, 23.8's
    page-contents list); no console or page error, no request to another host."""
    r = reader(page_path, viewport=PHONE, phone=True)
    problems = fit_problems(r.page, PHONE["width"], PHONE["height"])
    copy = page_path.replace("/", "__") + "__390.png" if page_path in EXPLORABLE_PAGES else None
    shot(r.page, "390x844", page_path, copy=copy)
    problems += figure_layout_problems(r.page, phone=True)
    state = r.page.evaluate(OVERFLOW)
    if state["scrollWidth"] > state["clientWidth"] or state["wide"]:
        problems.append(f"page is {state['scrollWidth']} px wide on a {state['clientWidth']} px screen; "
                        f"{state['count']} element(s) stick out: {state['wide']}")
    problems += line_break_problems(r.page)
    problems += back_to_top_problems(r.page)
    if page_path == "book/intro":
        problems += search_box_problems(r.page)
    if page_path in figure_pages():
        problems += sharpness_problems(r.page, page_path, phone=True)
    problems += interactions(r, page_path, phone=True)
    problems += r.problems
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


# Each figure of the text that is not an explorable (those have their own narrow layout): the file it shows, its
# drawn and shown widths, and whether it offers a phone layout (scripts/place_frames.py narrow_figures).
FIGURES_SHOWN = """() => Array.from(document.querySelectorAll('main img:not(.nl-frame)')).map(img => ({
  alt: img.alt.slice(0, 60), file: img.currentSrc.split('/').pop(), natural: img.naturalWidth,
  shown: img.getBoundingClientRect().width, narrow: !!img.closest('picture')}))"""


def figure_layout_problems(page, phone: bool) -> list[str]:
    """After shot() loaded the figures: on a phone each figure drawn wider than the screen shows its narrow drawing
    (made at 2x: naturalWidth counts CSS pixels, so text shows at the size it was drawn for), never shrunk below
    80 % of that; on a laptop each shows its wide drawing."""
    problems = []
    for f in page.evaluate(FIGURES_SHOWN):
        took_narrow = f["file"].endswith("-narrow.png")
        if not phone and took_narrow:
            problems.append(f"figure '{f['alt']}' shows its phone layout on a laptop")
        elif phone and took_narrow and f["shown"] < 0.8 * f["natural"]:
            problems.append(f"figure '{f['alt']}': its phone layout is shrunk to {f['shown']:.0f} px of "
                            f"{f['natural']}")
        elif phone and not took_narrow and f["shown"] < 0.8 * f["natural"]:
            problems.append(f"figure '{f['alt']}' is shrunk to {f['shown']:.0f} of {f['natural']} px on a phone "
                            f"({'its phone layout was not taken' if f['narrow'] else 'it has no phone layout'})")
    return problems


# -- sidebars --------------------------------------------------------------------------------------
VISIBLE_TOGGLE = "button.primary-toggle:visible"
TOC_LINK = "nav.bd-docs-nav a.reference.internal:visible"


def sidebar_toggle_opens_and_closes_the_toc(r, phone: bool) -> None:
    """On 23.4 open in `r` (run by test_page_on_a_laptop and test_page_on_a_phone, after their checks): the
    one visible sidebar toggle closes and reopens the table of contents (desktop), or opens it as a drawer
    that Escape closes and the toggle opens again (phone)."""
    page_path = "notebooks/04_layer_norm"
    size = "390x844" if phone else "1280x900"
    p = r.page
    toggles = p.locator(VISIBLE_TOGGLE)
    assert toggles.count() == 1, f"expected one visible 'toggle primary sidebar' button, found {toggles.count()}"
    open_before = p.locator(TOC_LINK).count()
    if phone:
        assert open_before == 0, "on a phone the table of contents should start closed"
    else:
        assert open_before >= 10, f"on a desktop the table of contents should start open ({open_before} links)"
    toggles.first.click()
    p.wait_for_timeout(400)  # the themes animate the sidebar
    after_one = p.locator(TOC_LINK).count()
    if phone:
        assert after_one >= 10, f"the toggle did not open the table of contents ({after_one} links visible)"
        shot(p, size, page_path, "__toc-open")
        assert p.locator("dialog#pst-primary-sidebar-modal[open]").count() == 1
        p.keyboard.press("Escape")
    else:
        assert after_one == 0, f"the toggle did not close the table of contents ({after_one} links visible)"
        toggles.first.click()
    p.wait_for_timeout(400)
    after_two = p.locator(TOC_LINK).count()
    if phone:
        assert after_two == 0, f"Escape did not close the table of contents ({after_two} links visible)"
        # and the toggle opens it again after closing (the drawer is not single-use)
        toggles.first.click()
        p.wait_for_timeout(400)
        assert p.locator(TOC_LINK).count() >= 10, "the toggle did not reopen the table of contents"
    else:
        assert after_two >= 10, f"the second click did not reopen the table of contents ({after_two} links)"


FOCUSED_TOC = """() => { const a = document.activeElement;
  return a && a.closest('nav.bd-docs-nav') ? a.getAttribute('href') : null; }"""


@pytest.mark.parametrize("size", ["1280x900", "390x844"])
def test_contents_list_is_one_tab_stop_that_arrow_keys_move_in(reader, size):
    """Tab enters the table of contents at the current page and the next Tab leaves it; the arrow keys,
    Home and End move within it, a note says so, and Enter opens the page."""
    phone = size == "390x844"
    r = reader("notebooks/04_layer_norm", viewport=PHONE if phone else DESKTOP, phone=phone)
    p = r.page
    hrefs = p.evaluate("() => Array.from(document.querySelectorAll('nav.bd-docs-nav a[href]'), "
                       "a => a.getAttribute('href'))")
    assert len(hrefs) >= 10, hrefs
    here = hrefs.index("#") if "#" in hrefs else next(i for i, h in enumerate(hrefs) if "04_layer_norm" in h)
    if phone:
        p.locator(VISIBLE_TOGGLE).first.click()
        p.wait_for_timeout(400)
        p.locator("nav.bd-docs-nav a[tabindex='0']").focus()
    else:
        p.evaluate("() => { window.scrollTo(0, 0); document.activeElement && document.activeElement.blur(); }")
        for _ in range(10):
            p.keyboard.press("Tab")
            if p.evaluate(FOCUSED_TOC) is not None:
                break
    assert p.evaluate(FOCUSED_TOC) == hrefs[here], "Tab should enter the contents at the page being read"
    hint = p.locator("#nl-toc-hint")
    assert hint.is_visible() and "Enter" in hint.inner_text(), "the keyboard note is not shown"
    p.keyboard.press("Tab")
    assert p.evaluate(FOCUSED_TOC) is None, "a second Tab should leave the contents list"
    p.keyboard.press("Shift+Tab")
    assert p.evaluate(FOCUSED_TOC) == hrefs[here], "Shift+Tab should come back to the same entry"
    p.keyboard.press("ArrowDown")
    assert p.evaluate(FOCUSED_TOC) == hrefs[here + 1]
    p.keyboard.press("End")
    assert p.evaluate(FOCUSED_TOC) == hrefs[-1]
    p.keyboard.press("ArrowDown")
    assert p.evaluate(FOCUSED_TOC) == hrefs[-1], "ArrowDown on the last entry should stay there"
    p.keyboard.press("Home")
    assert p.evaluate(FOCUSED_TOC) == hrefs[0]
    p.keyboard.press("ArrowUp")
    assert p.evaluate(FOCUSED_TOC) == hrefs[0]
    for _ in range(here + 1):
        p.keyboard.press("ArrowDown")
    assert p.evaluate(FOCUSED_TOC) == hrefs[here + 1]
    with p.expect_navigation():
        p.keyboard.press("Enter")
    assert p.url.split("#")[0].endswith(hrefs[here + 1].split("#")[0].lstrip("./")), p.url
    assert not r.problems, "\n".join(r.problems)


def phone_page_contents_toggle_opens(r, phone: bool = True) -> None:
    """The 'on this page' button opens the page's section list on a phone (23.8 open in `r`, run by
    test_page_on_a_phone after its checks)."""
    p = r.page
    toggle = p.locator("button.secondary-toggle:visible")
    assert toggle.count() == 1, f"expected one visible 'page contents' button, found {toggle.count()}"
    links = "dialog#pst-secondary-sidebar-modal a.nav-link:visible"
    assert p.locator(links).count() == 0
    toggle.first.click()
    p.wait_for_timeout(400)
    assert p.locator(links).count() >= 2, "the page-contents toggle did not open the section list"
    p.keyboard.press("Escape")
    p.wait_for_timeout(300)
    assert p.locator(links).count() == 0


SEARCH_BOXES = "input[type=search]:visible, input[name=q]:visible, button.search-button__button:visible"


def interactions(r, page_path: str, phone: bool) -> list[str]:
    """The checks that click, tap or change a page, run on the page tests' load after everything else
    (INTERACTIONS); each one's failed assertion becomes a problem of the page."""
    problems = []
    for check in INTERACTIONS[phone].get(page_path, []):
        try:
            check(r, phone=phone)
        except AssertionError as e:
            problems.append(f"{check.__name__}: {e}")
    return problems


def search_box_problems(page) -> list[str]:
    """The landing page (open in `page`) must show exactly one search box."""
    boxes = page.locator(SEARCH_BOXES)
    described = [boxes.nth(i).evaluate("el => el.outerHTML.slice(0, 90)") for i in range(boxes.count())]
    return [] if len(described) == 1 else [f"expected one search box on the landing page, found {described}"]


# -- search ----------------------------------------------------------------------------------------
def _search_results(page) -> list[str]:
    page.wait_for_function("() => /Search finished/i.test((document.getElementById('search-results') || "
                           "{}).textContent || '')", timeout=20000)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    return page.evaluate("() => Array.from(document.querySelectorAll('#search-results li'))"
                         ".map(li => li.innerText)")


def test_file_url_reading_and_search_work_without_errors(browser, site):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto((site / "search.html").resolve().as_uri() + "?q=variance")
        results = _search_results(page)
        assert len(results) >= 3, f"search over file:// found too little: {results}"
        assert not errors, f"console errors while searching over file://: {errors[:4]}"
        # and a page with maths and sliders, read straight from disk
        page.goto((site / "notebooks/08_backward.html").resolve().as_uri())
        wait_for_mathjax(page)
        hits = raw_tex_hits(page.evaluate(VISIBLE_TEXT))
        assert not hits, f"raw TeX over file://: {hits[:4]}"
        assert not errors, f"console errors reading 23.8 over file://: {errors[:4]}"
    finally:
        context.close()


# -- contrast --------------------------------------------------------------------------------------
CONTRAST = """() => {
  const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const lum = ([r, g, b]) => {
    const f = x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const blend = (top, bottom) => {
    const a = top[3]; return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat(1); };
  const background = el => { const layers = [];
    for (let p = el; p; p = p.parentElement) { const c = parse(getComputedStyle(p).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let bg = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      const root = parse(getComputedStyle(document.documentElement).backgroundColor);
      if (root && root[3] > 0) bg = blend(root, bg); }
    for (let i = layers.length - 1; i >= 0; i--) bg = blend(layers[i], bg);
    return bg; };
  const groups = {
    'body text': 'article p, article li',
    'links': 'article a, article a *',
    'captions': 'article figcaption, article .caption, article caption',
    'readouts': '.normlab-explorable .nl-readouts, .normlab-explorable .nl-readouts *, .normlab-explorable output',
    'explorable labels': '.normlab-explorable .nl-title, .normlab-explorable .nl-title *, '
                       + '.normlab-explorable .nl-name, .normlab-explorable .nl-try, '
                       + '.normlab-explorable .nl-presets button',
    'footer': '.bd-footer-content p, .bd-footer-content a, footer p, footer a',
  };
  const out = [];
  for (const [group, sel] of Object.entries(groups)) {
    let worst = null;
    for (const el of document.querySelectorAll(sel)) {
      const ownText = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
      if (!el.checkVisibility() || !ownText) continue;
      const s = getComputedStyle(el); const fg0 = parse(s.color); if (!fg0) continue;
      const bg = background(el); const fg = blend(fg0, bg);
      const L1 = lum(fg), L2 = lum(bg); const ratio = (Math.max(L1, L2) + 0.05) / (Math.min(L1, L2) + 0.05);
      if (!worst || ratio < worst.ratio) worst = {group, ratio, color: s.color,
        bg: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')',
        text: el.textContent.trim().slice(0, 40), tag: el.tagName.toLowerCase() + '.' + (el.className || '')};
    }
    if (worst) out.push(worst);
  }
  return {mode: document.documentElement.dataset.theme, worst: out};
}"""

CONTRAST_PAGES = ["book/intro", "notebooks/01_what_you_will_learn", "notebooks/04_layer_norm",
                  "notebooks/07_pre_post_norm", "notebooks/08_backward", "book/references"]


def contrast_problems(page, page_path: str, mode: str) -> list[str]:
    """Text groups of the loaded page whose contrast is below MIN_CONTRAST (empty when all pass)."""
    state = page.evaluate(CONTRAST)
    if state["mode"] != mode:
        return [f"the page did not switch to {mode} mode (data-theme={state['mode']!r})"]
    low = [w for w in state["worst"] if w["ratio"] < MIN_CONTRAST]
    out = []
    if low:
        out.append(f"{page_path} ({mode}): contrast below {MIN_CONTRAST}:1: " + "; ".join(
            f"{w['group']} {w['ratio']:.2f}:1 ({w['color']} on {w['bg']}, {w['tag']} {w['text']!r})" for w in low))
    if not {w["group"] for w in state["worst"]} >= {"body text", "footer"}:
        out.append(f"{page_path} ({mode}): the contrast scan found no body text or footer")
    return out


@pytest.mark.parametrize("page_path", CONTRAST_PAGES)
def test_text_contrast_in_dark_mode(reader, page_path):
    """Body text, links, captions, readouts and footer reach 4.5:1 against what is behind them in dark
    mode (light mode is checked on every page by test_page_on_a_laptop)."""
    r = reader(page_path, dark=True)
    problems = contrast_problems(r.page, page_path, "dark")
    problems += dark_panel_problems(r.page, page_path)
    assert not problems, "\n".join(problems)


DARK_PANEL = """() => Array.from(document.querySelectorAll('.normlab-explorable')).map(root => {
  // the colour behind the explorable's panel: the first ancestor (or itself) with a background
  for (let el = root; el; el = el.parentElement) {
    const m = getComputedStyle(el).backgroundColor.match(/rgba?\\(([^)]+)\\)/);
    const v = m ? m[1].split(/[ ,/]+/).filter(Boolean).map(Number) : null;
    if (v && (v.length < 4 || v[3] > 0.5)) return {name: root.dataset.explorable, rgb: v.slice(0, 3)};
  }
  return {name: root.dataset.explorable, rgb: null};
})"""


def dark_panel_problems(page, page_path: str) -> list[str]:
    """In dark mode an explorable's panel is dark like the page (it was a light grey block); a screenshot of
    the first one goes to _build/screenshots/<size>/<page>__dark-explorable.png."""
    panels = page.evaluate(DARK_PANEL)
    light = [p for p in panels if p["rgb"] and sum(p["rgb"]) / 3 > 110]
    if panels:
        folder = SCREENSHOTS / "1280x900"
        folder.mkdir(parents=True, exist_ok=True)
        page.evaluate(LOAD_LAZY_IMAGES)
        page.locator(".normlab-explorable").first.screenshot(
            path=str(folder / (page_path.replace("/", "__") + "__dark-explorable.png")))
    return [f"{page_path} (dark): explorable panel on a light background: {light}"] if light else []


def contrast_scan_catches_low_contrast(r, phone: bool = False) -> None:
    """The scan itself: grey text on white is reported (the landing page open in `r`, run by
    test_page_on_a_laptop after its checks: it greys a paragraph)."""
    r.page.evaluate("() => document.querySelector('article p').style.color = '#aaaaaa'")
    problems = contrast_problems(r.page, "book/intro", "light")
    assert problems and "body text" in problems[0], problems


# -- figures and footer ------------------------------------------------------------------------------
class _Figures(HTMLParser):
    """Images in a page with whether they sit in a link (its href) and in a code cell's output."""

    VOID = {"img", "br", "hr", "input", "meta", "link", "source", "wbr", "area", "col", "embed", "param", "track"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.images: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            link = next((el[1].get("href") for el in reversed(self.stack) if el[0] == "a"), None)
            in_output = any("cell_output" in (el[1].get("class") or "").split() for el in self.stack)
            self.images.append({"src": a.get("src") or "", "cls": a.get("class") or "", "link": link,
                                "in_output": in_output})
        elif tag not in self.VOID:
            self.stack.append((tag, a))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break


def test_every_figure_can_be_seen_at_full_size(site):
    """On a phone figures are shrunk to the column. Each picture in a page is either a link to its
    full-size file (figures Sphinx copied to _images) or a picture in a cell output (an explorable's
    frame, a figure embedded in HTML), which normlab-book.js opens at full size when tapped."""
    figures = 0
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        scan = _Figures()
        scan.feed(html[html.find("<main"):html.rfind("</main>")])
        for img in scan.images:
            figures += 1
            if "nl-frame" in img["cls"] or (img["in_output"] and not img["link"]):
                continue
            assert img["link"], f"{page_path}: figure {img['src'][:60]} is neither in a cell output nor a link"
            assert img["link"] == img["src"], f"{page_path}: figure {img['src'][:60]} links to {img['link'][:60]}"
    assert figures >= 5, f"only {figures} figures found in the whole site"


def tapping_a_figure_on_a_phone_shows_it_at_full_size(r, phone: bool = True) -> None:
    """On 23.4 open in `r` at 390x844 (run by test_page_on_a_phone after its checks): tapping a figure opens
    it at its full size in a dialog that Escape or a tap closes."""
    p = r.page
    frame = p.locator("img.nl-frame").first
    frame.scroll_into_view_if_needed()
    shown, natural = frame.evaluate("img => [img.clientWidth, img.naturalWidth]")
    assert natural >= 1.2 * shown, f"the figure is shown at {shown} of {natural} px: nothing to zoom"
    frame.tap()
    dialog = p.locator("dialog#nl-zoom-dialog[open]")
    dialog.wait_for(timeout=3000)
    big = dialog.locator("img")
    # the same picture (both resolved to absolute URLs: the zoom takes the frame's current source)
    assert big.evaluate("img => img.src") == frame.evaluate("img => img.src")
    width = big.evaluate("img => img.getBoundingClientRect().width")
    assert width >= natural - 1, f"the zoomed figure is {width} px wide, its own size is {natural} px"
    shot(p, "390x844", "notebooks/04_layer_norm", "__zoomed")
    p.keyboard.press("Escape")
    p.wait_for_timeout(200)
    assert p.locator("dialog#nl-zoom-dialog[open]").count() == 0, "Escape did not close the zoomed figure"
    frame.tap()
    dialog.wait_for(timeout=3000)
    p.locator("dialog#nl-zoom-dialog").tap(position={"x": 40, "y": 400})
    p.wait_for_timeout(200)
    assert p.locator("dialog#nl-zoom-dialog[open]").count() == 0, "a tap did not close the zoomed figure"


def test_footer_states_the_licences(site):
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        start = html.find('<footer class="bd-footer-content')
        assert start >= 0, f"{page_path}: no content footer"
        footer = html[start:html.find("</footer>", start)]
        assert "CC BY 4.0" in footer and "creativecommons.org/licenses/by/4.0/" in footer, \
            f"{page_path}: footer does not state CC BY 4.0 for the text and figures"
        assert "MIT" in footer, f"{page_path}: footer does not state the MIT licence for the code"


# -- lines of code and printed output stay whole (issue 22) --------------------------------------------
LINE_BREAKS = """(print) => {
  // Boxes of code and printed output (and cells of the tables a cell prints) laid out on more lines than
  // their text has: a line broke. On screen no line may break (the box scrolls sideways instead); in print
  // a line wider than the page may wrap, but only at a space, never inside a token.
  const found = [];
  const boxes = document.querySelectorAll('article pre, article .cell_output table td, article .cell_output table th');
  for (const el of boxes) {
    if (el.closest('.normlab-explorable') || !el.checkVisibility()) continue;
    const text = el.textContent.replace(/\\n+$/, '');
    if (!text.trim()) continue;
    const range = document.createRange(); range.selectNodeContents(el);
    const s = getComputedStyle(el);
    const lh = parseFloat(s.lineHeight) || 1.2 * parseFloat(s.fontSize);
    const tops = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0)
      .map(r => r.top).sort((a, b) => a - b);
    let shown = 0, last = -1e9;
    for (const t of tops) { if (t - last > lh / 2) { shown++; last = t; } }
    const lines = text.split('\\n').filter(l => l.trim()).length;
    if (shown <= text.split('\\n').length) continue;
    const cell = el.closest('.cell');
    const where = cell ? 'cell ' + Array.from(document.querySelectorAll('article .cell')).indexOf(cell)
                       : el.tagName.toLowerCase();
    if (!print) {
      found.push(`${where}: ${lines} lines of text shown on ${shown} lines: "${text.slice(0, 60)}"`);
      continue;
    }
    // print: look for a token (a run of characters without a space) laid out across two lines; each run of a
    // text node is measured at once, and where a run goes on in the next text node, its last and first characters
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let broken = null, prevEnd = null;  // prevEnd: top of the last character of the previous node, if not a space
    const probe = document.createRange();
    const top = (n, from, to) => { probe.setStart(n, from); probe.setEnd(n, to);
      const rects = Array.from(probe.getClientRects()).filter(x => x.width > 0);
      return rects.length ? [rects[0].top, rects[rects.length - 1].top] : null; };
    for (let n = walker.nextNode(); n && !broken; n = walker.nextNode()) {
      const data = n.data;
      for (const m of data.matchAll(/\\S+/g)) {
        const t = top(n, m.index, m.index + m[0].length);
        if (!t) continue;
        if (t[1] - t[0] > lh / 2) broken = m[0];
        if (m.index === 0 && prevEnd !== null && t[0] - prevEnd > lh / 2) broken = '…⏎' + m[0];
      }
      const last = data.length && !/\\s/.test(data[data.length - 1]) ? top(n, data.length - 1, data.length) : null;
      prevEnd = last ? last[0] : null;
    }
    if (broken) found.push(`${where}: a token breaks across lines in print: "${broken}"`);
  }
  return found;
}"""


def line_break_problems(page, printing: bool = False) -> list[str]:
    found = page.evaluate(LINE_BREAKS, printing)
    return [f"{'print' if printing else 'screen'}: a line of code or printed output breaks: {f}" for f in found[:6]]


def line_break_scan_catches_a_wrapped_line(r, phone: bool = False) -> None:
    """The scan itself (23.3 open in `r`, run by test_page_on_a_laptop after its checks): a printed table made to
    wrap, as the theme's pre-wrap did, is reported, and so is (by the print scan) a token it breaks."""
    r.page.evaluate("""() => { const pre = document.querySelector('article .cell_output pre');
      pre.style.whiteSpace = 'pre-wrap'; pre.style.wordBreak = 'break-all'; pre.style.width = '220px'; }""")
    found = r.page.evaluate(LINE_BREAKS, False)
    assert found, "a printed table squeezed to 220 px with pre-wrap was not reported"
    found = r.page.evaluate(LINE_BREAKS, True)
    assert found and "token breaks" in found[0], f"a token broken by break-all was not reported in print: {found}"
    r.page.evaluate("() => { const pre = document.querySelector('article .cell_output pre'); pre.style.cssText = ''; }")


# -- print (issue 22): what a printed page shows -----------------------------------------------------------
A4_CONTENT = {"width": 688, "height": 1005}  # CSS px inside the print margins of normlab-book.css (A4, 15/14/16 mm)

PRINT_STATE = """() => {
  const visible = sel => Array.from(document.querySelectorAll(sel)).filter(el => el.checkVisibility())
    .map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + '.' + String(el.className).split(' ')[0]);
  const furniture = visible('.bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article, #pst-back-to-top, '
    + '.prev-next-area, .search-button, .theme-switch-button, button, input, select, .nl-presets, dialog');
  const explorables = Array.from(document.querySelectorAll('.normlab-explorable')).map(root => {
    const img = root.querySelector('img.nl-frame');
    return {name: root.dataset.explorable, height: root.getBoundingClientRect().height,
            frame: !!img && img.checkVisibility() && img.getBoundingClientRect().width > 200,
            readouts: !!root.querySelector('.nl-current') && root.querySelector('.nl-current').checkVisibility()
                      && root.querySelector('.nl-current').innerText.trim().length > 0,
            values: root.querySelector('.nl-controls')
              ? (getComputedStyle(root.querySelector('.nl-controls'), '::before').content.replace(/"/g, '') + ' '
                 + root.querySelector('.nl-controls').innerText).replace(/\\s+/g, ' ').trim() : ''};
  });
  const figures = Array.from(document.querySelectorAll('article figure')).map(f => f.getBoundingClientRect().height);
  const colour = getComputedStyle(document.querySelector('article p') || document.body).color;
  return {furniture, explorables, figures, colour, theme: document.documentElement.dataset.theme};
}"""


def print_problems(r, page_path: str) -> list[str]:
    """The page laid out for print at the width of an A4 page's text (after the page test's other checks):
    no sidebar, header button, control or preset button shows; every explorable shows its frame, readouts
    and the values its controls are at, and fits on one page, as does every figure with its caption; no
    token of code or printed output breaks across lines."""
    p = r.page
    p.set_viewport_size(A4_CONTENT)
    p.emulate_media(media="print")
    p.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    try:
        state = p.evaluate(PRINT_STATE)
        problems = []
        if state["furniture"]:
            problems.append(f"print: screen furniture is printed: {state['furniture'][:6]}")
        for e in state["explorables"]:
            if not (e["frame"] and e["readouts"]):
                problems.append(f"print: explorable {e['name']} prints without its frame or readouts: {e}")
            if not e["values"].startswith("Shown at:") or len(e["values"]) < 12:
                problems.append(f"print: explorable {e['name']} does not say what its controls are at: {e['values']!r}")
            if e["height"] > A4_CONTENT["height"]:
                problems.append(f"print: explorable {e['name']} is {e['height']:.0f} px tall, more than a page "
                                f"({A4_CONTENT['height']} px): its frame and readouts would part")
        for h in state["figures"]:
            if h > A4_CONTENT["height"]:
                problems.append(f"print: a figure with its caption is {h:.0f} px tall, more than a page")
        problems += line_break_problems(p, printing=True)
        return [f"{page_path}: {x}" for x in problems]
    finally:
        p.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
        p.emulate_media(media="screen")


# -- phone: the back-to-top button (issue 22) --------------------------------------------------------------
BACK_TO_TOP = """async () => {
  // scroll down the page, then back up a little: the theme shows its floating button then
  window.scrollTo(0, document.documentElement.scrollHeight);
  await new Promise(r => setTimeout(r, 100));
  window.scrollBy(0, -500);
  await new Promise(r => setTimeout(r, 250));
  const floating = document.getElementById('pst-back-to-top');
  const link = document.getElementById('nl-back-to-top');
  const covers = [];
  if (floating && floating.checkVisibility()) {
    const b = floating.getBoundingClientRect();
    const texts = 'article p, article li, article td, article th, article pre, .nl-readouts, article img';
    for (const el of document.querySelectorAll(texts)) {
      const r = el.getBoundingClientRect();
      if (r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom && el.checkVisibility())
        covers.push(el.tagName.toLowerCase() + '.' + el.className + ' "' + el.textContent.trim().slice(0, 30) + '"');
    }
  }
  const inFlow = !!link && getComputedStyle(link.parentElement).position === 'static' && link.checkVisibility();
  window.scrollTo(0, 0);
  return {floating: !!floating && floating.checkVisibility(), covers: covers.slice(0, 4), inFlow};
}"""


def back_to_top_problems(page) -> list[str]:
    state = page.evaluate(BACK_TO_TOP)
    problems = []
    if state["covers"]:
        problems.append(f"the floating 'Back to top' button covers {state['covers']}")
    if not state["inFlow"]:
        problems.append("no 'Back to top' link at the end of the page")
    return problems


# -- search (issue 22) -------------------------------------------------------------------------------------
def _run_search(page, query: str) -> list[dict]:
    page.evaluate("q => { document.getElementById('search-results').innerHTML = ''; Search.performSearch(q); }", query)
    page.wait_for_function("() => /Search finished|did not match/i.test((document.getElementById('search-results') "
                           "|| {}).textContent || '')", timeout=20000)
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#search-results li')).every(li => "
                           "li.querySelector('p.context'))", timeout=20000)
    return page.evaluate("() => Array.from(document.querySelectorAll('#search-results li')).map(li => ({"
                         "href: li.querySelector('a').getAttribute('href'), title: li.querySelector('a').innerText,"
                         "snippet: (li.querySelector('p.context') || {}).textContent || ''}))")


SEARCH_ICON = """() => {
  const form = document.querySelector('.bd-search-container form.bd-search');
  const icon = form.querySelector('.fa-magnifying-glass'), input = form.querySelector('input');
  const i = icon.getBoundingClientRect(), r = input.getBoundingClientRect();
  const textStart = r.left + parseFloat(getComputedStyle(input).paddingLeft);
  return {iconRight: i.right, iconWidth: i.width, textStart};
}"""


def test_search(reader):
    """Search as a reader uses it, on one load of search.html (each query typed into the same page):
    - every result has a snippet, and no snippet shows TeX source ('variance' is on pages whose paragraphs
      carry maths);
    - 'RMSNorm' lists section 23.5 first, 'LayerNorm' section 23.4 (the sections those terms name);
    - 'epsilon': every snippet shows the word or its symbol ε (23.1 and 23.2 had empty snippets);
    - maths keeps its symbols: the snippet for 'shortfall' reads x̂ (with its hat) and √;
    - the magnifier sits before the text typed, not over its first letter."""
    r = reader("search")
    r.page.goto(r.server.base + "search.html")
    r.page.wait_for_function("() => typeof Search !== 'undefined' && Search.hasIndex && Search.hasIndex()")
    icon = r.page.evaluate(SEARCH_ICON)
    assert icon["iconWidth"] > 0 and icon["iconRight"] <= icon["textStart"] + 0.5, \
        f"the search icon overlaps the text typed: {icon}"
    problems = []
    for query in ["variance", "RMSNorm", "LayerNorm", "epsilon", "shortfall"]:
        results = _run_search(r.page, query)
        if len(results) < (1 if query == "shortfall" else 3):
            problems.append(f"{query!r}: too few results: {results}")
            continue
        empty = [x["title"] for x in results if len(x["snippet"].strip()) < 40]
        if empty:
            problems.append(f"{query!r}: results without a snippet: {empty}")
        tex = [h for x in results for h in raw_tex_hits(x["snippet"])]
        if tex:
            problems.append(f"{query!r}: TeX source in snippets: {tex[:4]}")
        first = results[0]["href"]
        if query == "RMSNorm" and not first.startswith("notebooks/05_rms_norm"):
            problems.append(f"'RMSNorm' lists {first} first, not 23.5 RMSNorm: {[x['title'] for x in results[:4]]}")
        if query == "LayerNorm" and not first.startswith("notebooks/04_layer_norm"):
            problems.append(f"'LayerNorm' lists {first} first, not 23.4: {[x['title'] for x in results[:4]]}")
        if query == "epsilon":
            missing = [x["title"] for x in results if not re.search("epsilon|ε", x["snippet"], re.I)]
            if missing:
                problems.append(f"'epsilon': snippets that show neither the word nor ε: {missing}")
        if query == "shortfall" and not any("x\u0302" in x["snippet"] and "√" in x["snippet"] for x in results):
            problems.append(f"'shortfall': no snippet shows x̂ and √: {[x['snippet'] for x in results]}")
    shot(r.page, "1280x900", "search", "__shortfall")
    problems += r.all_problems
    assert not problems, "\n".join(problems)


# The checks of one page (they may read, click or change it), run at the end of the page tests on their load:
# {phone: {page: checks}}.
INTERACTIONS = {
    False: {"notebooks/04_layer_norm": [slider_touch_targets_are_at_least_24_px,
                                        sidebar_toggle_opens_and_closes_the_toc],
            "notebooks/02_the_problem": [slider_touch_targets_are_at_least_24_px],
            "notebooks/01_what_you_will_learn": [a_column_of_sentences_is_readable],
            "notebooks/08_backward": [no_broken_equation_leaves_a_symbol_alone_on_a_line],
            "notebooks/07_pre_post_norm": [printed_code_that_wraps_keeps_its_indentation],
            "notebooks/11_does_it_train": [printed_code_that_wraps_keeps_its_indentation],
            "book/intro": [contrast_scan_catches_low_contrast],
            "notebooks/03_mean_and_variance": [line_break_scan_catches_a_wrapped_line]},
    True: {"notebooks/04_layer_norm": [slider_touch_targets_are_at_least_24_px,
                                       tapping_a_figure_on_a_phone_shows_it_at_full_size,
                                       a_tap_in_the_page_contents_drawer_closes_it_and_shows_the_heading,
                                       sidebar_toggle_opens_and_closes_the_toc],
           "notebooks/02_the_problem": [slider_touch_targets_are_at_least_24_px],
           "notebooks/01_what_you_will_learn": [a_column_of_sentences_is_readable],
           "notebooks/08_backward": [no_broken_equation_leaves_a_symbol_alone_on_a_line,
                                     phone_page_contents_toggle_opens]},
}


# -- taking the book along: header links, footer, citations, captions, index -------------------------------
def _finish_site():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "finish_site.py"
    spec = importlib.util.spec_from_file_location("finish_site", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _header_hrefs(html: str) -> list[str]:
    start = html.find('<div class="article-header-buttons">')
    assert start >= 0, "no article header"
    return re.findall(r'href="([^"]*)"', html[start:html.find("</div>", start)])


def test_header_links_the_notebook_the_pdf_and_the_repository_only_where_they_lead(site):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    settings = _finish_site().book_settings(root)
    # `make test` prints the PDF (test-pdf) while these tests read the site, and make_pdf.py then copies the PDF in
    # before it links it from the pages one by one: a page read meanwhile may still lack the link, never have a dead
    # one. That every page links the published PDF is checked after publishing, by tests/test_pdf.py.
    had_pdf = (site / "normlab.pdf").is_file()
    for page_path in PAGES:
        page = site / f"{page_path}.html"
        links = _header_hrefs(page.read_text(encoding="utf-8"))
        local = [h for h in links if not h.startswith(("http:", "https:"))]
        for href in local:
            assert (page.parent / href).resolve().is_file(), f"{page_path}: the header links {href}, which is missing"
        notebooks = [h for h in local if h.endswith(".ipynb")]
        if page_path.startswith("notebooks/"):
            assert len(notebooks) == 1, f"{page_path}: no download link for its notebook"
            got = (page.parent / notebooks[0]).resolve().read_bytes()
            assert got == (root / f"{page_path}.ipynb").read_bytes(), f"{page_path}: the download is not its notebook"
        pdfs = [h for h in local if h.endswith(".pdf")]
        assert len(pdfs) <= 1, f"{page_path}: several PDF links {pdfs}"
        if not had_pdf and not (site / "normlab.pdf").is_file():
            assert not pdfs, f"{page_path}: links a PDF, while the site has none"
        repos = [h for h in links if h.startswith(("http:", "https:"))]
        assert repos == ([settings["repository"]] if settings["repository"] else []), f"{page_path}: {repos}"


def test_footer_gives_the_version_the_build_date_and_links_citation_cff(site):
    fs = _finish_site()
    settings = fs.book_settings()
    assert (site / "CITATION.cff").read_bytes() == (fs.ROOT / "CITATION.cff").read_bytes()
    for page_path in PAGES:
        page = site / f"{page_path}.html"
        html = page.read_text(encoding="utf-8")
        footer = html[html.find('<footer class="bd-footer-content'):]
        assert f"Version {settings['version']}, built {settings['date']}." in footer, page_path
        cff = re.findall(r'href="([^"]*CITATION\.cff)"', footer)
        assert cff and (page.parent / cff[0]).resolve() == (site / "CITATION.cff").resolve(), (page_path, cff)


class _ProseText(HTMLParser):
    """The article's text outside links, code, maths and headings, by block; and every link's href."""
    SKIP = {"a", "code", "pre", "script", "style", "h1", "h2", "h3", "h4", "h5", "h6"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.hrefs, self.skip, self.on = [""], [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "article":
            self.on = True
        if tag == "section" and a.get("id") == "bibliography":
            self.on = False  # the entries themselves
        if tag == "a" and a.get("href") and self.on:
            self.hrefs.append(a["href"])
        if tag in self.SKIP or (tag == "span" and "math" in (a.get("class") or "").split()):
            self.skip.append(tag)
        if tag in ("p", "li", "td", "th", "div", "figcaption"):
            self.blocks.append("")

    def handle_endtag(self, tag):
        if self.skip and self.skip[-1] == tag:
            self.skip.pop()
        if tag == "article":
            self.on = False

    def handle_data(self, data):
        if self.on and not self.skip:
            self.blocks[-1] += data


# An author-year citation as the pages write it: "Xiong et al. (2020)", "(Welford, 1962)", "Brody, Alon and
# Yahav (2023)", "(Kingma and Ba 2015)"; not a venue's year ("ICML 2020").
_NAME = r"[A-Z][\w’'-]+"
UNLINKED_CITATION = re.compile(
    rf"{_NAME}(?: et al\.|,? and {_NAME})?(?:,\s(?:19|20)\d\d\b|,\sn\.d\.|\s\((?:19|20)\d\d\))"
    rf"|{_NAME}(?: et al\.|,? and {_NAME})\s(?:19|20)\d\d\)")


def test_every_citation_links_to_its_entry_in_the_references(site):
    refs_html = (site / "book" / "references.html").read_text(encoding="utf-8")
    bib = refs_html[refs_html.find('<section id="bibliography">'):]
    bib = bib[:bib.find("</section>")]
    entries = re.findall(r'<div class="citation" id="([^"]+)" role="doc-biblioentry">', bib)  # sphinxcontrib-bibtex
    assert len(entries) >= 80, "the generated bibliography lists too few works"
    unlinked, dead, linked = [], [], 0
    for page_path in PAGES:
        scan = _ProseText()
        scan.feed((site / f"{page_path}.html").read_text(encoding="utf-8"))
        for block in scan.blocks:
            unlinked += [f"{page_path}: {m.group(0)}" for m in UNLINKED_CITATION.finditer(block)]
        for href in scan.hrefs:
            target, _, fragment = href.partition("#")
            if (target.endswith("references.html") or (page_path == "book/references" and not target)) \
                    and re.fullmatch(r"id\d+", fragment):
                linked += 1
                if fragment not in entries:
                    dead.append(f"{page_path}: {href}")
    assert not unlinked, f"citations that do not link to the references: {unlinked[:10]}"
    assert not dead, f"citation links to no entry: {dead[:10]}"
    assert linked >= 100


def test_the_citation_scan_sees_an_unlinked_citation():
    scan = _ProseText()
    scan.feed('<article><p>As <a href="x">Ba et al. (2016)</a> and Xiong et al. (2020) showed (Welford, 1962),'
              ' at ICML 2020 (Kingma and Ba 2015).</p><h2>Welford (1962)</h2></article>')
    found = [m.group(0) for b in scan.blocks for m in UNLINKED_CITATION.finditer(b)]
    assert found == ["Xiong et al. (2020)", "Welford, 1962", "Kingma and Ba 2015)"]


def test_captions_carry_one_label_and_there_is_no_empty_index(site):
    labelled = 0
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        assert "genindex" not in html, f"{page_path}: links the general index"
        for caption in re.findall(r"<figcaption.*?</figcaption>", html, re.S):
            text = re.sub(r"\s+", " ", html_text(caption)).strip()
            labels = re.findall(r"\b(?:Fig\.|Figure) \d+(?:-\d+)?\b", text[:40])
            assert len(labels) <= 1, f"{page_path}: a caption with two labels: {text[:80]!r}"
            labelled += bool(labels)
    assert labelled >= 1  # Figure 23-5 keeps its own label
    assert not (site / "genindex.html").exists()


def test_previous_and_next_titles_are_the_contents_titles(site):
    titles = {}
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        nav = html[html.find('<nav class="bd-links bd-docs-nav'):]
        nav = nav[:nav.find("</nav>")]
        for href, title in re.findall(r'<a class="reference internal" href="([^"#]+)">(.*?)</a>', nav, re.S):
            titles[(site / page_path).parent.joinpath(href).resolve()] = re.sub(r"\s+", " ", html_text(title)).strip()
    checked = 0
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        for href, title in re.findall(r'<a class="(?:left-prev|right-next)"\s+href="([^"]+)".*?'
                                      r'<p class="prev-next-title">(.*?)</p>', html, re.S):
            target = (site / page_path).parent.joinpath(href).resolve()
            if target in titles:
                assert html_text(title).strip() == titles[target], (page_path, href, title, titles[target])
                checked += 1
    assert checked >= 2 * (len(PAGES) - 2)


def html_text(fragment: str) -> str:
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", fragment))


# "lr 0.01", "learning rate of 0.003", "learning rates 0.001 to 0.01": the value after the words, however written
LEARNING_RATE = re.compile(r"\b(?:lr|learning rates?|peak learning rate)(?: of| =| at)?\s+"
                           r"(10[⁻^−-]\S*|[0-9][0-9.]*(?:\s*[×x]\s*10\S*|e-?\d+)?)")


def test_a_learning_rate_is_written_one_way(site):
    """Every learning rate the text names is a plain decimal (0.01, 0.0003), never 1e-2 or 10⁻² beside it."""
    seen = {}
    for page_path in PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        article = html[html.find("<article"):html.rfind("</article>")]
        body = re.sub(r"<(script|style)\b.*?</\1>", " ", article, flags=re.S)   # prose, code and outputs
        for value in LEARNING_RATE.findall(re.sub(r"\s+", " ", html_text(body))):
            seen.setdefault(value, page_path)
    other = {v: p for v, p in seen.items() if not re.fullmatch(r"0\.0*[1-9]\d*|[1-9]\d*", v.rstrip(".,;:"))}
    assert not other, f"learning rates written another way: {other}"
    assert len(seen) >= 4   # the grid's rates, at least
