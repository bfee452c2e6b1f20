"""The browser that the PDF edition, the benches and the tests drive, and the local server they read a site from.

Debian's Chromium through Playwright; no browser is ever downloaded. `driven_browser()` picks the executable,
`launch()` starts it headless with the arguments every caller uses, and `SiteServer` serves a folder on
127.0.0.1 from a daemon thread."""

from __future__ import annotations

import functools
import http.server
import os
import re
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = Path("/usr/bin/chromium")
# Debian's chromium-headless-shell (.ci/run installs it): the same Blink, V8 and Skia as the browser without its
# windowing and UI layers, about an eighth less CPU for the same page; the tests drive it where it is installed.
HEADLESS_SHELL = Path("/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-gpu"]


def driven_browser() -> Path | None:
    """The browser to drive: $NORMLAB_CHROMIUM if set, else Debian's chromium-headless-shell, else its chromium;
    None when none of them can be run."""
    given = os.environ.get("NORMLAB_CHROMIUM")
    for path in [Path(given)] if given else [HEADLESS_SHELL, CHROMIUM]:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def launch(playwright, executable: str | Path):
    """Chromium at `executable`, headless, with CHROMIUM_ARGS, through a running Playwright."""
    return playwright.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS, headless=True)


LOCAL_SCHEMES = ("data:", "blob:", "about:")   # URLs that never leave the page


def confine(target, allowed: tuple[str, ...], problems: list[str]) -> None:
    """Route the requests of a Playwright page or context: one whose URL starts with an `allowed` prefix (or is a
    data:, blob: or about: URL) goes through untouched; any other is aborted and reported in `problems`. The
    browser itself tells the two apart (a regular expression, which Playwright hands to it), so an allowed request
    never waits for this process, as every request of a page did when each was routed here and let through."""
    elsewhere = re.compile("^(?!" + "|".join(re.escape(prefix) for prefix in allowed + LOCAL_SCHEMES) + ")")

    def route(r):
        problems.append(f"blocked request to another host: {r.request.url}")
        r.abort()

    target.route(elsewhere, route)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the browser dropped a request it no longer needed (a page or context closed mid-file)
        super().handle_error(request, client_address)


class SiteServer:
    """Serves `directory` over http://127.0.0.1:<free port>/ (`base`) from a daemon thread; a context manager."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = _Server(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        host, port = self.httpd.server_address[:2]
        self.base = f"http://{host}:{port}/"
        self.netloc = f"{host}:{port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def is_local(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("data", "blob", "about") or (parts.scheme == "http" and parts.netloc == self.netloc)

    def local_file(self, url: str, site: Path) -> Path | None:
        """The file a local URL is served from (None for data:/about: URLs)."""
        parts = urlsplit(url)
        if parts.scheme != "http":
            return None
        path = site / parts.path.lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        return path if path.is_file() else None
