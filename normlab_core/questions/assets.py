"""The questions' script and stylesheet as the book's pages load them (scripts/finish_site.py writes them into the
site's _static folder): frontend.js as a classic script, by the same rule as the explorables' (its only module
statement is its last line, EXPORT), and frontend.css as it is."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent
EXPORT = "export default { render };"
SCRIPT_NAME = "normlab-questions.js"
STYLE_NAME = "normlab-questions.css"
BOOT = 'if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot); else boot();'


def classic_script() -> str:
    """frontend.js in a scope of its own, its last statement replaced by booting the page's question blocks.
    ValueError if the file has any other import or export statement, or EXPORT is not its last statement."""
    js = (HERE / "frontend.js").read_text(encoding="utf-8")
    body, found, tail = js.rpartition(EXPORT)
    if not found or tail.strip() or re.search(r"^\s*(import|export)\b", body, re.M):
        raise ValueError(f"normlab_core/questions/frontend.js must end with {EXPORT!r} and have no other import or "
                         "export statement, so that the book's classic script can be built from it")
    return "(function () {\n" + body + BOOT + tail + "})();\n"


def stylesheet() -> str:
    """frontend.css, the questions' screen style in both faces."""
    return (HERE / "frontend.css").read_text(encoding="utf-8")


def write(static: Path) -> list[Path]:
    """Write both into `static` (a site's _static folder); returns their paths."""
    static.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in ((SCRIPT_NAME, classic_script()), (STYLE_NAME, stylesheet())):
        (static / name).write_text(text, encoding="utf-8")
        out.append(static / name)
    return out
