"""The Content-Security-Policy of every JupyterLab the project starts: the learners' (`make lab`, the JupyterLab
tests), the instructors' (`make lab-instructor`) and both kinds of server on the classroom hub. Each of their
configuration files imports this module and calls `configure(c)`.

Why: jupyterlab-myst renders the Markdown cells of every notebook, trusted or not, and its `{iframe}` directive
puts the target it is given into an <iframe src> as it is. A `javascript:` target runs at once, on this server's
origin and with the user's session; a `data:` target loads a page of its own (notes/jupyterlab-myst-untrusted-
iframe.md). A notebook a classmate shares, or a submission an instructor opens, is enough.

The policy (lab_policy()) allows scripts only from the server's own files, and an inline script only when its
SHA-256 is that of a static inline script of the pages JupyterLab, Notebook 7 and jupyter_server serve (the few
lines that take the token out of the address bar), computed here from their templates when the server starts. So
no `javascript:` address, event handler attribute or injected <script> runs, whatever renders it; and frames come
only from this server or from blob: URLs, which only a script already running can make. Formgrader's own pages
(instructors only) keep FORMGRADER_POLICY, which must allow inline scripts: its templates carry them with values
filled in.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
from pathlib import Path

# An inline <script> element: no src, and a type that a browser runs (none, or a JavaScript one).
SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
SRC = re.compile(r"\ssrc\s*=", re.IGNORECASE)
TYPE = re.compile(r"""\stype\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)
RUNS = {"", "text/javascript", "application/javascript", "module"}
JINJA = ("{{", "{%", "{#")

# The page templates of the applications the servers run: JupyterLab's page, Notebook 7's pages and
# jupyter_server's own (login, error); (package, folder inside it, file pattern).
TEMPLATES = [("jupyterlab", "static", "index.html"),
             ("notebook", "templates", "*.html"),
             ("jupyter_server", "templates", "*.html")]


def inline_script_hashes(html: str) -> list[str]:
    """The CSP sources ('sha256-...') of the inline scripts of template `html` whose text is fixed (no Jinja in
    them: a script with values filled in is never allowed by hash); in order of appearance, without repeats."""
    found = []
    for m in SCRIPT.finditer(html):
        attrs, body = m.group("attrs"), m.group("body")
        kind = TYPE.search(attrs)
        if SRC.search(attrs) or (kind and kind.group(1).lower() not in RUNS) or any(j in body for j in JINJA):
            continue
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
        source = f"'sha256-{digest}'"
        if source not in found:
            found.append(source)
    return found


def template_files() -> list[Path]:
    """The installed page templates of TEMPLATES (packages that are not installed are left out)."""
    files = []
    for package, folder, pattern in TEMPLATES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            files += sorted((Path(location) / folder).glob(pattern))
    return files


def page_script_hashes() -> list[str]:
    """The hashes of every fixed inline script of the installed page templates."""
    found = []
    for path in template_files():
        for source in inline_script_hashes(path.read_text(encoding="utf-8")):
            if source not in found:
                found.append(source)
    return found


def policy(script_sources: list[str]) -> str:
    """The policy of JupyterLab's pages with `script_sources` (hashes) as their only allowed inline scripts."""
    return "; ".join([
        "default-src 'self'",
        # Scripts: the server's files, the hashed inline scripts, and blob: for the ES modules anywidget imports
        # from code the kernel sent (the live widgets). 'unsafe-eval' because JupyterLab's settings validation
        # (ajv) compiles its JSON schemas into functions. No 'unsafe-inline': javascript: addresses, event
        # handler attributes and <script> elements that a notebook manages to put into the page do not run.
        "script-src " + " ".join(["'self'", *script_sources, "blob:", "'unsafe-eval'"]),
        "style-src 'self' 'unsafe-inline'",       # JupyterLab and its widgets set styles inline
        "img-src 'self' data: blob:",             # figures are data: PNGs; live frames are blob: URLs
        "font-src 'self' data:",
        # The server's API and kernel websockets; blob: lets a page read back data it already holds (the
        # JupyterLab tests read a live frame's PNG bytes this way).
        "connect-src 'self' blob:",
        "media-src 'self' data: blob:",
        "worker-src 'self' blob:",
        # Frames: this server's pages, and blob: for JupyterLab's HTML viewer (an HTML file, a feedback page),
        # which shows the file from a blob: URL that only a script of the page can make. No data: frames (a
        # notebook's Markdown can name one), no other hosts. A blob: or srcdoc frame keeps this policy.
        "frame-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


# Formgrader's pages (instructors only): its templates carry inline scripts with values filled in, and
# nbconvert's page of a submission typesets maths with MathJax 2, which evaluates code. Everything else as above.
FORMGRADER_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "media-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])


def lab_policy() -> str:
    """LAB_POLICY for the installed applications."""
    return policy(page_script_hashes())


def configure(c, formgrader: bool = False) -> str:
    """Send `lab_policy()` with every page of the server configured by `c` (a traitlets config); with
    `formgrader`, Formgrader's pages send FORMGRADER_POLICY instead. Returns the policy."""
    lab = lab_policy()
    settings = dict(c.ServerApp.tornado_settings) if "tornado_settings" in c.ServerApp else {}
    settings["headers"] = {**settings.get("headers", {}), "Content-Security-Policy": lab}
    c.ServerApp.tornado_settings = settings
    if formgrader:
        use_formgrader_policy()
    return lab


def use_formgrader_policy() -> None:
    """Formgrader's handlers (nbgrader's formgrader BaseHandler and its subclasses) send FORMGRADER_POLICY.
    jupyter_server's files handlers add their `sandbox` to whichever policy the handler has."""
    from nbgrader.server_extensions.formgrader import base

    base.BaseHandler.content_security_policy = property(lambda self: FORMGRADER_POLICY)
