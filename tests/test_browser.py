"""The published book in a real browser (Debian's chromium through Playwright).

Reads the site `make book` built in _build/html, serves it on 127.0.0.1 and opens every page of
_toc.yml. Each page must load with no console error, no failed request and no request to another
host (those are blocked and reported); equations must be typeset by the site's own MathJax; every
static slider must change the frame and its value label; the page with its images and frames must
stay under 3 MB; the exercises page must not show solutions. One screenshot per page is kept in
_build/screenshots/ for review, with a sizes report in _build/screenshots/report.txt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_support import (
    CHROMIUM_ARGS,
    PAGE_LIMIT,
    ROOT,
    SCREENSHOTS,
    SiteServer,
    chromium_or_skip,
    require_site,
    toc_pages,
)

pytestmark = pytest.mark.browser

PAGES = toc_pages()
SECTION_PAGES = [p for p in PAGES if p.startswith("notebooks/")]
EXERCISES = "notebooks/10_exercises"
REPORT: dict[str, dict] = {}


@pytest.fixture(scope="module")
def site() -> Path:
    return require_site()


@pytest.fixture(scope="module")
def server(site):
    with SiteServer(site) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()
    if REPORT:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        lines = [f"{'page':40s} {'own MB':>7s} {'shared MB':>9s} {'explorables':>11s} {'sliders':>7s} {'math':>5s}"]
        for name, r in REPORT.items():
            lines.append(f"{name:40s} {r['own'] / 2**20:7.2f} {r['shared'] / 2**20:9.2f} "
                         f"{r['explorables']:11d} {r['sliders']:7d} {r['math']:5d}")
        (SCREENSHOTS / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


class Visit:
    """One page opened in a fresh browser context, with everything that went wrong while loading."""

    def __init__(self, browser, server, site: Path, page_path: str):
        self.server, self.site = server, site
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.urls: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._response)
        self.url = server.base + page_path + ".html"
        self.page.goto(self.url, wait_until="load")

    def _route(self, route):
        url = route.request.url
        if self.server.is_local(url):
            route.continue_()
        else:
            self.problems.append(f"blocked request to another host: {url}")
            route.abort()

    def _failed(self, request):
        if self.server.is_local(request.url):
            self.problems.append(f"request failed: {request.url} ({request.failure})")

    def _response(self, response):
        self.urls.append(response.url)
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status} for {response.url}")

    def sizes(self) -> tuple[int, int]:
        """(bytes of the page and its own images/frames, bytes of shared theme/MathJax files under _static)."""
        own = shared = 0
        for url in dict.fromkeys(self.urls):
            path = self.server.local_file(url, self.site)
            if path is None:
                continue
            rel = path.relative_to(self.site).as_posix()
            if rel.startswith("_static/"):
                shared += path.stat().st_size
            else:
                own += path.stat().st_size
        return own, shared

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server, site):
    opened = []

    def _open(page_path: str) -> Visit:
        v = Visit(browser, server, site, page_path)
        opened.append(v)
        return v

    yield _open
    for v in opened:
        v.close()


# -- typesetting --------------------------------------------------------------------------------
WAIT_FOR_MATHJAX = """() => new Promise(resolve => {
  const ready = () => window.MathJax && MathJax.isReady && MathJax.Hub;
  const go = () => MathJax.Hub.Queue(() => resolve(true));
  if (ready()) { go(); return; }
  const t = setInterval(() => { if (ready()) { clearInterval(t); go(); } }, 50);
})"""

MATH_STATE = """() => {
  const math = Array.from(document.querySelectorAll('span.math.notranslate, div.math.notranslate'));
  const untypeset = math.filter(el => !el.querySelector('.MathJax, .MathJax_Display, .MathJax_SVG, .MathJax_CHTML'))
                        .map(el => el.textContent.slice(0, 80));
  const hasError = n => !!n && (n.type === 'merror' || (n.data || []).some(hasError));
  const errors = window.MathJax && MathJax.Hub
    ? MathJax.Hub.getAllJax().filter(j => hasError(j.root)).map(j => j.originalText.slice(0, 80)) : [];
  const rendered = document.querySelectorAll('.MathJax, .MathJax_Display').length;
  return {count: math.length, untypeset, errors, rendered};
}"""


def check_math(v: Visit) -> int:
    count = v.page.evaluate("() => document.querySelectorAll('span.math.notranslate, div.math.notranslate').length")
    if not count:
        return 0
    try:
        v.page.wait_for_function("() => window.MathJax && MathJax.isReady === true", timeout=20000)
        v.page.evaluate(WAIT_FOR_MATHJAX)
    except Exception as e:  # noqa: BLE001 - report, don't crash the page check
        v.problems.append(f"MathJax did not start: {e}")
        return count
    state = v.page.evaluate(MATH_STATE)
    if state["untypeset"]:
        v.problems.append(f"{len(state['untypeset'])} of {count} equations not typeset, e.g. {state['untypeset'][:3]}")
    if state["errors"]:
        v.problems.append(f"TeX errors in: {state['errors'][:5]}")
    if not state["rendered"]:
        v.problems.append("page has math but MathJax rendered nothing")
    return count


# -- sliders ------------------------------------------------------------------------------------
FRAME_STATE = """(root) => ({src: root.querySelector('img.nl-frame').getAttribute('src'),
  loaded: root.querySelector('img.nl-frame').complete && root.querySelector('img.nl-frame').naturalWidth > 0,
  alt: root.querySelector('img.nl-frame').getAttribute('alt') || '',
  readouts: (root.querySelector('.nl-readouts') || {}).textContent || '',
})"""
OUTPUT_TEXT = "el => { const o = el.parentElement.querySelector('output'); return o && o.textContent; }"


def check_controls(v: Visit) -> tuple[int, int]:
    """Move every slider one step with the keyboard (and pick another option of every select):
    the frame must change and still load, and a slider's value label must change."""
    roots = v.page.locator(".normlab-explorable")
    n_sliders = 0
    for i in range(roots.count()):
        root = roots.nth(i)
        name = root.get_attribute("data-explorable") or f"explorable #{i}"
        first = root.evaluate(FRAME_STATE)
        if not first["alt"].strip():
            v.problems.append(f"{name}: the frame has no alt text")
        sliders = root.locator("input[type=range]")
        for j in range(sliders.count()):
            n_sliders += 1
            s = sliders.nth(j)
            label = s.get_attribute("aria-label") or f"slider {j}"
            before = root.evaluate(FRAME_STATE)
            label_before = s.evaluate(OUTPUT_TEXT)
            at_max = s.evaluate("el => +el.value >= +el.max")
            s.focus()
            v.page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            after = root.evaluate(FRAME_STATE)
            label_after = s.evaluate(OUTPUT_TEXT)
            if after["src"] == before["src"]:
                v.problems.append(f"{name}: moving '{label}' did not change the frame")
            if not after["loaded"]:
                v.problems.append(f"{name}: after moving '{label}' the frame does not load")
            if label_after is None:
                v.problems.append(f"{name}: '{label}' has no <output> value label")
            elif label_after == label_before:
                v.problems.append(f"{name}: moving '{label}' did not change its value label ({label_after!r})")
        selects = root.locator("select")
        for j in range(selects.count()):
            sel = selects.nth(j)
            label = sel.get_attribute("aria-label") or f"select {j}"
            options = sel.evaluate("el => Array.from(el.options).map(o => o.value)")
            current = sel.input_value()
            other = next((o for o in options if o != current), None)
            if other is None:
                continue
            before = root.evaluate(FRAME_STATE)
            sel.select_option(other)
            after = root.evaluate(FRAME_STATE)
            # a choice such as the storage dtype may change only the printed digits, not the picture
            if after["src"] == before["src"] and after["readouts"] == before["readouts"]:
                v.problems.append(f"{name}: choosing another '{label}' changed neither the frame nor the readouts")
    return roots.count(), n_sliders


def check_images(v: Visit) -> None:
    bad = v.page.evaluate("""() => Array.from(document.querySelectorAll('article img, main img'))
        .filter(img => { const a = (img.getAttribute('alt') || '').trim();
                         return !a || /\\.(png|svg|jpe?g|gif)$/i.test(a); })
        .map(img => (img.getAttribute('src') || '').slice(0, 60))""")
    for src in bad:
        v.problems.append(f"image without real alt text: {src}")
    h1 = v.page.evaluate("() => Array.from(document.querySelectorAll('article h1')).map(h => h.textContent.trim())")
    if len(h1) != 1:
        v.problems.append(f"expected exactly one <h1> heading in the article, found {h1}")


def screenshot(v: Visit, page_path: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    v.page.evaluate("() => window.scrollTo(0, 0)")
    v.page.screenshot(path=str(SCREENSHOTS / (page_path.replace("/", "__") + ".png")), full_page=True)


# -- the tests ----------------------------------------------------------------------------------
def test_toc_lists_the_whole_chapter():
    assert PAGES[0] == "book/intro"
    numbers = [re.match(r"notebooks/(\d\d)_", p).group(1) for p in SECTION_PAGES]
    assert numbers == [f"{k:02d}" for k in range(1, 11)], SECTION_PAGES
    assert PAGES[-2:] == ["book/instructors", "book/references"]


def test_index_leads_to_the_landing_page(visit):
    v = visit("index")
    v.page.wait_for_url(re.compile(r"book/intro\.html$"), timeout=10000)
    assert v.page.locator("article h1").first.inner_text().strip().startswith("normlab")
    assert not v.problems, "\n".join(v.problems)


@pytest.mark.parametrize("page_path", PAGES)
def test_page_in_browser(visit, site, page_path):
    assert (site / f"{page_path}.html").is_file(), f"{page_path}.html was not built; is it in _toc.yml?"
    v = visit(page_path)
    n_math = check_math(v)
    check_images(v)
    screenshot(v, page_path)  # before the sliders move: the page as a reader first sees it
    n_exp, n_sliders = check_controls(v)
    own, shared = v.sizes()
    REPORT[page_path] = {"own": own, "shared": shared, "explorables": n_exp, "sliders": n_sliders, "math": n_math}
    if own > PAGE_LIMIT:
        v.problems.append(f"page with its images and frames is {own / 2**20:.2f} MB (limit 3 MB)")
    assert not v.problems, f"{page_path}:\n  " + "\n  ".join(v.problems)


def test_book_has_math_and_sliders(site):
    """Guard against a build in which static mode or MathJax silently did nothing (reads the HTML)."""
    total_sliders = total_math = 0
    for page_path in SECTION_PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        total_sliders += len(re.findall(r"<input type='range'", html))
        total_math += len(re.findall(r'class="math notranslate', html))
        assert "application/vnd.jupyter.widget-view+json" not in html and "jupyter-widgets" not in html, \
            f"{page_path} contains live-widget output; the book must be built with NORMLAB_STATIC=1"
    assert total_sliders > 0, "no static slider on any section page"
    assert total_math > 0, "no equation on any section page"


def _solution_lines() -> list[str]:
    """Code lines of the reference solutions in the nbgrader source (when it is present)."""
    lines = []
    for nb in sorted((ROOT / "assignments" / "source").rglob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            inside = False
            for line in "".join(cell.get("source", [])).splitlines():
                s = line.strip()
                if "BEGIN SOLUTION" in s:
                    inside = True
                elif "END SOLUTION" in s:
                    inside = False
                elif inside and len(s) >= 20 and not s.startswith("#"):
                    lines.append(s)
    return lines


def test_exercises_page_shows_no_solution(visit, site):
    html = (site / f"{EXERCISES}.html").read_text(encoding="utf-8")
    v = visit(EXERCISES)
    text = v.page.locator("article").inner_text()
    assert v.page.locator("article div.cell").count() >= 1, "the exercises page has no code cells"
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in html, f"the exercises page contains {marker!r}"
    shown = {line.strip() for line in text.splitlines()}
    leaked = [s for s in _solution_lines() if s in shown]  # whole lines: a test cell may share a substring
    assert not leaked, f"reference-solution code on the exercises page: {leaked[:5]}"
