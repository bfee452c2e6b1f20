"""A submission whose every output, cell and answer tries to run script in the page that shows it.

Shared by the grading tests that render the graded notebook (tests/test_grading_inert.py: the HTML of
Formgrader's and the feedback's templates, without a browser) and the Chromium test of Formgrader's manual
grading page and the feedback page (tests/test_grading_browser.py). Every payload calls `PAYLOAD(tag)`: it
records the tag in `window.__pwned` and asks the Jupyter server, with the instructor's xsrf cookie, to write
`pwned-<tag>.txt` into the course folder, which is what a script in Formgrader could do to nbgrader_config.py.
What must stay visible is marked: the written answer's words, the text of the outputs and a 4x3 PNG.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib


def payload(tag: str) -> str:
    """JavaScript that leaves a trace of `tag` in the page and on the server."""
    return ("(window.__pwned=(window.__pwned||[]).concat(['TAG']),"
            "fetch('/api/contents/pwned-TAG.txt',{method:'PUT',credentials:'same-origin',"
            "headers:{'Content-Type':'application/json','X-XSRFToken':"
            "((document.cookie.match(/_xsrf=([^;]+)/)||[])[1]||'')},"
            "body:JSON.stringify({type:'file',format:'text',content:'TAG'})}))").replace("TAG", tag)


def png(width: int = 4, height: int = 3) -> bytes:
    """A small opaque red PNG, written by hand (no imaging library)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


ANSWER_WORDS = "KANN divides by the standard deviation plus epsilon"
SHOWN = ("plain text of the html output", "printed line kept", "the error message is kept")

ANSWER = f"""{ANSWER_WORDS}, as in $\\sigma + \\epsilon$ with $a < b$.

<script>{payload('md-script')}</script>
<img src="nowhere.png" onerror="{payload('md-onerror')}">
<svg onload="{payload('md-svg')}"></svg>
<iframe srcdoc="<script>parent.{payload('md-iframe')}</script>"></iframe>
[click me](javascript:{payload('md-link')}) and [again](JaVaScRiPt&#58;{payload('md-link2')})
<a href="javascript:{payload('md-a')}">a link</a>
Maths that would carry markup: $\\text{{<img src=x onerror="{payload('md-math-text')}">}}$ and
$\\href{{javascript:{payload('md-math-href')}}}{{x}}$.
"""

OUTPUTS_CELL = f"""
import base64
from IPython.display import Image, display
display({{"text/html": "<script>{payload('html-script')}</script><b>bold</b>",
          "text/plain": "{SHOWN[0]}"}}, raw=True)
display({{"text/html": "<img src=x onerror=\\"{payload('html-onerror')}\\">"}}, raw=True)
display({{"application/javascript": "{payload('javascript')}"}}, raw=True)
display({{"image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg' onload=\\"{payload('svg-onload')}\\">"
                           "<script>{payload('svg-script')}</script></svg>"}}, raw=True)
display({{"text/markdown": "<img src=x onerror=\\"{payload('markdown-output')}\\">"}}, raw=True)
display({{"text/latex": "<img src=x onerror=\\"{payload('latex-output')}\\">"}}, raw=True)
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "x", "version_major": 2,
                                                        "version_minor": 0}}}}, raw=True)
display({{"image/png": "AAAA\\" onerror=\\"{payload('png-attribute')}"}}, raw=True)
display(Image(data=base64.b64decode({base64.b64encode(png()).decode()!r})))
print("{SHOWN[1]} <script>{payload('stream')}</script>")
"""

ERROR_CELL = f"""raise ValueError("{SHOWN[2]} <img src=x onerror=\\"{payload('error')}\\">")"""

RAW = f"<script>{payload('raw')}</script>"
OWN_MARKDOWN = f"My notes <script>{payload('own-markdown')}</script>"
TAG = f'x"><script>{payload("tag")}</script>'


def hostile(notebook: dict, answer_id: str = "ex5_answer", after: str = "ex1_function") -> dict:
    """`notebook` (nbformat 4, plain JSON) with the hostile answer, cells and outputs added after `after`."""
    nb = json.loads(json.dumps(notebook))
    cells = []
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid == answer_id:
            cell["source"] = ANSWER
            cell.setdefault("metadata", {})["tags"] = [TAG]
            cell["attachments"] = {"a.svg": {"image/svg+xml": f"<svg onload=\"{payload('attachment')}\"/>"}}
        cells.append(cell)
        if gid == after:
            cells += [
                {"cell_type": "code", "id": f'c1"><script>{payload("id")}</script>'[:60], "execution_count": None,
                 "metadata": {"tags": [TAG]}, "outputs": [], "source": OUTPUTS_CELL},
                {"cell_type": "code", "id": "hostile-error", "execution_count": None, "metadata": {},
                 "outputs": [], "source": ERROR_CELL},
                {"cell_type": "raw", "id": "hostile-raw", "metadata": {"format": "text/html"}, "source": RAW},
                {"cell_type": "markdown", "id": "hostile-markdown", "metadata": {"tags": [TAG]},
                 "source": OWN_MARKDOWN},
            ]
    nb["cells"] = cells
    return nb
