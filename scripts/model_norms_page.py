"""Write the generated part of book/models.md (table, notes, sources) from normlab_core/data/model_norms.json.

The table is the page's main line; the notes and the sources fold away into "Check the figures" blocks.

    python -m scripts.model_norms_page           rewrite the part between the two markers of the page
    python -m scripts.model_norms_page --check   exit 1 if the page differs from what the data gives

Only the text between BEGIN and END is written; the introduction and the discussion around it are the page's own.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "normlab_core" / "data" / "model_norms.json"
PAGE = ROOT / "book" / "models.md"
BEGIN = ("<!-- model-norms:begin. Written by scripts/model_norms_page.py from normlab_core/data/model_norms.json; "
         "edit the data, not this part. -->")
END = "<!-- model-norms:end -->"
FORMAT, VERSION = "normlab-model-norms", 1


def load(path: Path = DATA) -> dict:
    """The stored table: {"columns", "sources", "models", ...}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} file of version {VERSION}: got {data.get('format')!r} "
                         f"version {data.get('version')!r}")
    return data


def citation(bib: str) -> str:
    """'Alec Radford, Jeffrey Wu and others (2019). Title' -> 'Radford et al., 2019'; an organisation stays whole."""
    who, year = re.match(r"(.+?) \((\d{4}|n\.d\.)\)\.", bib).groups()
    names = re.split(r", | and ", who)
    if len(names) == 1:
        return f"{who}, {year}"
    last = names[0].split()[-1]
    if len(names) == 2 and names[1] != "others":
        return f"{last} and {names[1].split()[-1]}, {year}"
    if names[0].startswith("Team "):   # "Team OLMo, Pete Walsh, ...": the team is the first author
        last = names[0]
    return f"{last} et al., {year}"


def title(bib: str) -> str:
    """The title part of a bibliography entry."""
    return bib.split("). ", 1)[1]


def table(data: dict) -> list[str]:
    """The Markdown table: one row per model, one column per data column."""
    keys = [c["key"] for c in data["columns"]]
    lines = ["| Model | " + " | ".join(c["label"] for c in data["columns"]) + " |",
             "|" + "---|" * (len(keys) + 1)]
    for m in data["models"]:
        lines.append(f"| {m['model']} | " + " | ".join(m[k]["text"] for k in keys) + " |")
    return lines


def notes(data: dict) -> list[str]:
    """One paragraph per model: which release the row describes, then its note."""
    out = []
    for m in data["models"]:
        out += [f"**{m['model']}** ({m['version']}). {m['note']}", ""]
    return out[:-1]


def source_text(src: dict, lines: list[int]) -> str:
    """One source as the page names it: file and commit for code, section for papers, thread for discussions."""
    if src["kind"] == "code":
        at = f", line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}" if lines else ""
        name = src["path"].rsplit("/", 1)[-1]   # the link holds the whole path; a long one would not fit a phone
        return f"[`{src['repo']}`, `{name}`]({src['url']}) at commit `{src['commit'][:10]}`{at}: {src['what']}."
    if src["kind"] == "paper":
        who, year = citation(src["bib"]).rsplit(", ", 1)
        return f"{who} ({year}), *{title(src['bib'])}*, {src['section']}."
    end = "" if src["bib"].endswith("?") else "."
    return f"[{src['bib'].split(' (')[0]}, {src['what']}]({src['url']}): *{title(src['bib'])}*{end}"


def sources(data: dict) -> list[str]:
    """Per model, every source its cells cite, in first-cited order, with the lines quoted from each file."""
    keys = [c["key"] for c in data["columns"]]
    out = []
    for m in data["models"]:
        order, lines = [], {}
        for k in keys:
            for sid in m[k]["sources"]:
                if sid not in order:
                    order.append(sid)
            for q in m[k]["quotes"]:
                if q["line"] and q["line"] not in lines.setdefault(q["source"], []):
                    lines[q["source"]].append(q["line"])
        out.append(f"- **{m['model']}**")
        out += [f"  - {source_text(data['sources'][sid], sorted(lines.get(sid, [])))}" for sid in order]
    return out


def folded(lines: list[str]) -> list[str]:
    """`lines` inside a folded "Check the figures" block (a MyST dropdown admonition), closed on screen."""
    return ["````{admonition} Check the figures", ":class: dropdown", "", *lines, "````"]


def render(data: dict) -> str:
    """The generated block, markers included."""
    parts = [BEGIN, "", *table(data), "", "## Model by model", "",
             "What each row describes, and what the code shows beyond the table:", "",
             *folded(notes(data)), "", "## Where each value was read", "",
             "Each cell rests on a released file at a fixed commit, or on a section of a paper:", "",
             *folded(["Line numbers are those of the file at the commit named; a file read through a search index, "
                      "without its line numbers, has none.", "", *sources(data)]), "", END]
    from scripts import cite_roles  # the citations as the rest of the book writes them: roles on book/references.bib

    problems: list = []
    text = cite_roles.convert_text("\n".join(parts), cite_roles.read_bib(), problems)
    if problems:
        raise ValueError(f"data: citations that book/references.bib cannot resolve: {problems}")
    return text


def splice(page: str, block: str) -> str:
    """`page` with the text from BEGIN to END replaced by `block`."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"page: the markers {BEGIN[:24]}... and {END} are missing or out of order")
    return page[:start] + block + page[end + len(END):]


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    new = splice(page, render(load()))
    if "--check" in argv:
        if new != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python -m scripts.model_norms_page")
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
