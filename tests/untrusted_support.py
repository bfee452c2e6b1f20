"""An untrusted notebook whose Markdown cells try to run script in the JupyterLab that opens it, and the checks that
nothing ran: shared by tests/test_lab_untrusted.py (the learners' and the instructors' JupyterLab) and
tests/test_classroom.py (the hub's).

Every payload calls `payload(base, tag)`: it adds `tag` to `top.__pwned`, logs "PWNED <tag>" to the console and
asks the server for `<base>pwned-<tag>` (an image request, which a data: page may make too). Any of the three is a
script that ran. The cells cover what jupyterlab-myst renders from a notebook's Markdown (its bundled directives
and roles): `{iframe}` with `javascript:` and `data:` targets in both fence forms, `{figure}`/`{image}`, a
`{card}` link, raw HTML of every kind (script, event handlers, srcdoc and javascript: frames, object/embed),
`[links](javascript:...)`, a `{mermaid}` click, a `{raw}` block, and an `{eval}` whose stored result is HTML.
"""

from __future__ import annotations

import base64
import json
import re

MARKER = "END-OF-UNTRUSTED-NOTEBOOK"
NAME = "untrusted.ipynb"
OFFSITE = "https://elsewhere.invalid/"


def payload(base: str, tag: str) -> str:
    """JavaScript without spaces or double quotes that leaves the three traces of `tag`."""
    return ("void(function(t){try{top.__pwned=(top.__pwned||[]).concat([t])}catch(e){}"
            f"try{{document.createElement('img').src='{base}pwned-'+t}}catch(e){{}}"
            f"console.log('PWNED'+String.fromCharCode(32)+t)}})('{tag}')")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def cells(base: str) -> list[str]:
    """The Markdown of each cell, payloads aimed at the server at `base` (ending in /)."""
    def p(tag):
        return payload(base, tag)

    def data_page(tag):
        return "data:text/html;base64," + _b64(f"<script>{p(tag)}</script>")

    return [
        "# Notes from a classmate\n\nThe frames below are a diagram.",
        f"```{{iframe}} javascript:{p('iframe-js-backticks')}\n```",
        f":::{{iframe}} javascript:{p('iframe-js-colons')}\n:::",
        f"```{{iframe}} {data_page('iframe-data-backticks')}\n```",
        f":::{{iframe}} data:text/html,<script>{p('iframe-data-colons')}</script>\n:::",
        f"```{{iframe}} {OFFSITE}\n```",
        f"```{{figure}} javascript:{p('figure-js')}\nA figure.\n```",
        f"```{{figure}} {data_page('figure-data')}\nA figure.\n```",
        "```{image} data:image/svg+xml;base64,"
        + _b64(f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{p('image-svg')}\"/>") + "\n```",
        f"<script>{p('html-script')}</script>\n\n"
        f"<img src=\"x\" onerror=\"{p('html-onerror')}\">\n\n"
        f"<svg onload=\"{p('html-svg')}\"></svg>\n\n"
        f"<iframe srcdoc=\"<script>{p('html-srcdoc')}</script>\"></iframe>\n\n"
        f"<iframe src=\"javascript:{p('html-iframe-js')}\"></iframe>\n\n"
        f"<object data=\"{data_page('html-object')}\"></object>\n\n"
        f"<embed src=\"{data_page('html-embed')}\">\n\n"
        f"<details open ontoggle=\"{p('html-ontoggle')}\"><summary>s</summary>d</details>",
        f"[a link](javascript:{p('link-markdown')}) and <a href=\"javascript:{p('link-html')}\">another</a>",
        f":::{{card}} A card\n:link: javascript:{p('card-link')}\nText.\n:::",
        "```{mermaid}\ngraph TD\n  A-->B\n  click A href \"javascript:" + p("mermaid-click") + "\"\n```",
        f"```{{raw}} html\n<img src=\"x\" onerror=\"{p('raw-html')}\">\n```",
        "The value is {eval}`answer`.",
        MARKER,
    ]


def notebook(base: str) -> str:
    """The notebook's JSON (nbformat 4.4, no signature: JupyterLab opens it untrusted). The `{eval}` cell carries
    a stored result as jupyterlab-myst stores it, whose HTML would run script if it were shown as HTML."""
    md = cells(base)
    nb_cells = []
    for text in md:
        cell = {"cell_type": "markdown", "metadata": {}, "source": text}
        if "{eval}" in text:
            html = f"<img src=\"x\" onerror=\"{payload(base, 'eval-html')}\">"
            cell["metadata"]["user_expressions"] = [
                {"expression": "answer", "result": {"status": "ok", "metadata": {},
                                                    "data": {"text/html": html, "text/plain": "42"}}}]
        nb_cells.append(cell)
    nb_cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": "answer = 42"})
    return json.dumps({"cells": nb_cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                     "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 4}, indent=1)


# Waits until the notebook's last Markdown cell is rendered; then every iframe of the notebook has been created.
JS_RENDERED = """(marker) => Array.from(document.querySelectorAll(
  '.jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown, .jp-Notebook .jp-MarkdownCell .myst'))
  .some(e => e.textContent.includes(marker))"""

# Clicks every javascript: link of the notebook (a reader would); returns how many there were.
JS_CLICK_LINKS = """() => {
  const links = Array.from(document.querySelectorAll('.jp-Notebook a[href]'))
    .filter(a => /^\\s*javascript:/i.test(a.getAttribute('href')));
  for (const a of links) a.click();
  return links.length;
}"""

# The notebook's kernel is connected and idle.
JS_KERNEL_IDLE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""

# The notebook's frames, objects and embeds: the start of each one's address.
JS_FRAMES = """() => Array.from(document.querySelectorAll('.jp-Notebook :is(iframe, object, embed)'))
  .map(f => (f.getAttribute('src') || f.getAttribute('data') || (f.hasAttribute('srcdoc') ? 'srcdoc' : ''))
  .slice(0, 40))"""

PWNED = re.compile(r"pwned-([\w-]+)")


class Traces:
    """What a page reports that a payload ran: requests for pwned-*, "PWNED" console lines, page errors. Attach to
    a Playwright browser context before the notebook opens."""

    def __init__(self, context):
        self.requests: list[str] = []
        self.console: list[str] = []
        self.refused: list[str] = []
        context.on("request", self._request)
        context.on("page", self._page)
        for page in context.pages:
            self._page(page)

    def _page(self, page):
        page.on("console", self._console)

    def _request(self, request):
        m = PWNED.search(request.url)
        if m and not request.url.startswith(("data:", "javascript:")):
            self.requests.append(m.group(1))

    def _console(self, msg):
        text = msg.text
        if text.startswith("PWNED"):
            self.console.append(text)
        elif "Content Security Policy" in text or "Content-Security-Policy" in text:
            self.refused.append(text[:160])


def ran(page, traces: Traces, server_log: str = "") -> list[str]:
    """Every trace of a payload that ran: `top.__pwned` (a `javascript:` frame shares the page's origin; a `data:`
    page does not, and leaves the other traces), the requests and console lines of the browser context, and (when
    given) the server's log of requests."""
    found = []
    flags = page.evaluate("() => window.__pwned || []")
    found += [f"window.__pwned: {flags}"] if flags else []
    found += [f"request for pwned-{t}" for t in traces.requests]
    found += [f"console: {t}" for t in traces.console]
    found += [f"server log: pwned-{t}" for t in sorted(set(PWNED.findall(server_log)))]
    return found
