"""Helpers for the browser tests: where the site is, which pages it has, a local HTTP server and
a Chromium launcher that skips (or fails, when NORMLAB_REQUIRE_BROWSER=1) without a browser."""

from __future__ import annotations

import os
from pathlib import Path

from scripts.browser import (  # noqa: F401  (the browser and the site server, shared with the tools)
    CHROMIUM,
    CHROMIUM_ARGS,
    HEADLESS_SHELL,
    SiteServer,
    confine,
    driven_browser,
)
from scripts.browser import launch as _launch
from scripts.toc import toc_pages  # noqa: F401  (the pages in reading order)

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
PAGE_LIMIT = 3 * 1024 * 1024  # bytes: a page's HTML plus the images and frames it loads


def require_site() -> Path:
    """The built site; a clear failure when it has not been built."""
    import pytest

    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} has no index.html: run `make book` first (the browser tests read the built site)",
                    pytrace=False)
    return SITE


def chromium_or_skip() -> str:
    """Path of the browser the tests drive (driven_browser()); skip without one, or fail when
    NORMLAB_REQUIRE_BROWSER=1."""
    import pytest

    if (path := driven_browser()) is not None:
        return str(path)
    given = os.environ.get("NORMLAB_CHROMIUM")
    msg = (f"NORMLAB_CHROMIUM={given} is not an executable file" if given else
           f"neither {HEADLESS_SHELL} nor {CHROMIUM} found: install Debian's browser (apt-get install -y chromium "
           "chromium-headless-shell) to run the browser tests")
    if os.environ.get("NORMLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(msg + " (NORMLAB_REQUIRE_BROWSER=1, so a missing browser is a failure)", pytrace=False)
    pytest.skip(msg)


def write_report_section(title: str, lines: list[str], rows: list[str] | None = None) -> Path:
    """Write one titled section of _build/screenshots/report.txt, keeping the other sections.

    Several browser test modules report into the same file; a section starts with a line
    '== <title> ==' and runs to the next such line. Text before the first section (a module that
    writes the whole file) is kept as it is.

    `lines` are a header line and rows keyed by their first word, one of `rows` (default: every page of
    _toc.yml, in reading order). Rows of the section already in the file that this call does not bring are
    kept, so that test processes that each saw some of the pages (xdist workers) fill in one table; the
    table comes out in the order of `rows`, and lines not keyed by one of them are dropped."""
    import fcntl

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    report = SCREENSHOTS / "report.txt"
    with open(SCREENSHOTS / ".report.lock", "w") as lock:  # test modules may run in parallel workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        lines = _merged_rows(report, title, lines, toc_pages() if rows is None else rows)
        return _write_section(report, title, lines)


def _merged_rows(report: Path, title: str, lines: list[str], rows: list[str]) -> list[str]:
    def keyed(body):
        return {line.split()[0]: line for line in body if line.split() and line.split()[0] in rows}

    old = report.read_text(encoding="utf-8").splitlines() if report.is_file() else []
    head = f"== {title} =="
    section = old[old.index(head) + 2:] if head in old else []  # after the title and the header line
    section = section[:next((i for i, line in enumerate(section) if line.startswith("== ")), len(section))]
    merged = {**keyed(section), **keyed(lines[1:])}
    return [lines[0], *(merged[key] for key in rows if key in merged)]


def _write_section(report: Path, title: str, lines: list[str]) -> Path:
    old = report.read_text(encoding="utf-8") if report.is_file() else ""
    head = f"== {title} =="
    kept, skipping = [], False
    for line in old.splitlines():
        if line.startswith("== ") and line.endswith(" =="):
            skipping = line == head
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    text = "\n".join(kept + ([""] if kept else []) + [head, *lines]) + "\n"
    report.write_text(text, encoding="utf-8")
    return report


# -- one page in a browser: what the browser tests share ---------------------------------------------
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def launch(playwright, executable: str | None = None):
    """The browser at `executable` (default: chromium_or_skip()), headless, through a running Playwright
    (scripts/browser.py's launch, with its arguments)."""
    return _launch(playwright, executable or chromium_or_skip())


def wait_for_mathjax(page) -> None:
    """Return once MathJax (when the page loads it) has processed its whole queue."""
    page.evaluate("""() => new Promise(resolve => {
      if (!document.querySelector('script[src*="mathjax/MathJax.js"]')) { resolve(false); return; }
      const started = Date.now();
      const poll = () => {
        if (window.MathJax && MathJax.isReady && MathJax.Hub) { MathJax.Hub.Queue(() => resolve(true)); return; }
        if (Date.now() - started > 20000) { resolve(false); return; }
        setTimeout(poll, 50);
      };
      poll();
    })""")


class Tab:
    """One page of the served site in a fresh browser context, with everything that went wrong while loading.

    `problems`: console errors, page errors and blocked requests to other hosts; `network_problems`: failed
    local requests and HTTP errors (tests that read the page as loaded check both: `all_problems`).
    `requests` lists the http URLs requested (first-load weight), `urls` the responses (page size).
    With `settle` the page is also given time to finish: MathJax's queue, then no network for 500 ms."""

    def __init__(self, browser, server, site: Path, page_path: str, viewport=DESKTOP, dark=False, phone=False,
                 settle=True):
        self.server, self.site = server, site
        opts = {"viewport": viewport, "color_scheme": "dark" if dark else "light"}
        if phone:
            opts.update(is_mobile=True, has_touch=True, device_scale_factor=1)
        self.context = browser.new_context(**opts)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.network_problems: list[str] = []
        self.requests: list[str] = []
        self.urls: list[str] = []
        confine(self.page, (server.base,), self.problems)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("request", lambda r: r.url.startswith("http") and self.requests.append(r.url))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._response)
        self.url = server.base + page_path + ".html"
        self.page.goto(self.url, wait_until="load", timeout=60000)  # a loaded 2-core CI machine can be slow
        if settle:
            wait_for_mathjax(self.page)
            self.page.wait_for_load_state("networkidle", timeout=90000)  # MathJax and frames on a busy machine

    @property
    def all_problems(self) -> list[str]:
        return self.problems + self.network_problems

    def _failed(self, request):
        if not self.server.is_local(request.url):
            return
        if "ERR_ABORTED" in (request.failure or "") and self._picture_source(request.url):
            # one of the two sources of a static figure's <picture>, cancelled when the window changed back:
            # Playwright's full-page capture resizes the window for a moment, and the <picture> changes its mind
            # (which source a page shows is checked by test_site_reading.figure_layout_problems)
            return
        if "ERR_ABORTED" in (request.failure or "") and self._frame(request.url):
            # an explorable's frame that was fetched ahead, or asked for by a state passed by, cancelled when the
            # reader moved on (frontend.js; a frame that is asked for and never shows is check_state's failure)
            return
        self.network_problems.append(f"request failed: {request.url} ({request.failure})")

    def _frame(self, url: str) -> bool:
        """Is `url` one of an explorable's frames (<page folder>/nl-frames/<name>/<digest>.png)?"""
        path = self.server.local_file(url, self.site)
        return path is not None and path.suffix == ".png" and path.parent.parent.name == "nl-frames"

    def _picture_source(self, url: str) -> bool:
        """Is `url` a static figure's phone drawing (_images/<wide name>-narrow.png) or the wide one beside it?"""
        path = self.server.local_file(url, self.site)
        return path is not None and path.parent.name == "_images" and (
            path.stem.endswith("-narrow") or path.with_name(f"{path.stem}-narrow.png").is_file())

    def _response(self, response):
        self.urls.append(response.url)
        if response.status >= 400:
            self.network_problems.append(f"HTTP {response.status} for {response.url}")

    def first_load(self) -> tuple[int, int]:
        """(bytes, requests) of everything requested so far (files as served, each URL once)."""
        urls = list(dict.fromkeys(self.requests))
        total = 0
        for url in urls:
            path = self.server.local_file(url, self.site)
            if path is not None:
                total += path.stat().st_size
        return total, len(urls)

    def sizes(self) -> tuple[int, int]:
        """(bytes of the page and its own images/frames, bytes of shared theme/MathJax files under _static),
        of the responses so far."""
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
