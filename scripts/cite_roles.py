"""Turn the book's plain author-year citations into sphinxcontrib-bibtex roles, using book/references.bib.

    python -m scripts.cite_roles [FILE ...]      (default: book/*.md, notebooks/*.ipynb and the exercises' source;
                                                  not notebooks/10_exercises.ipynb, which `make exercises` writes)

"(Xiong et al., 2020)" and "(Ba et al., 2016; Zhang and Sennrich, 2019)" become {cite:p}`Xiong2020` and
{cite:p}`Ba2016,ZhangSennrich2019`; "Xiong et al. (2020)" becomes {cite:t}`Xiong2020`; a citation inside a
parenthesis that also holds other words, "(the Admin paper: Liu et al., 2020a, EMNLP)", becomes {cite:alp}`...`
(author and year without brackets). A citation names its work by the first author's surname (or the
organisation), the other authors or "et al.", and the year; works that share all of these are told apart by
the year's letter ("2020a") or else by a word of the entry's `keywords` field in the same sentence ("RAdam").
Only notebooks' Markdown cells change; code spans, maths and existing roles are left alone. Running it twice
changes nothing. Prints every citation it cannot resolve and exits 1 if there is any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"
DEFAULT_GLOBS = ["book/*.md", "notebooks/*.ipynb", "assignments/source/chapter23/*.ipynb"]

_WORD = r"(?:[A-Z][\w'’-]*|[A-Z]\.)"
_PERSON = rf"{_WORD}(?:\s{_WORD})*"
_WHO = rf"{_PERSON}(?:(?:,\s{_PERSON})*,?\sand\s{_PERSON}|\set\sal\.)?"
_YEAR = r"(?:19|20)\d\d[a-z]?|n\.d\.(?:-[a-z])?"
CITE_IN_PARENS = re.compile(rf"(?P<who>{_WHO}),\s(?P<year>{_YEAR})(?![\w-])")
CITE_NARRATIVE = re.compile(rf"(?P<who>{_WHO})\s\((?P<year>{_YEAR})\)")
PARENS = re.compile(r"\(([^()]*)\)")
# what is never touched: code spans, maths, roles, link targets
_PROTECT = re.compile(r"\{[\w:]+\}`[^`]*`|``[^`]*``|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]+\$|\]\([^)\s]*\)", re.S)


def read_bib(path: Path = BIB) -> dict:
    """key -> {'authors': [surname or organisation, ...], 'year': str, 'title': str, 'keywords': [str]}."""
    text = path.read_text(encoding="utf-8")
    entries = {}
    for m in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", text, re.S):
        key, body = m.group(1), m.group(2)
        fields = {f.group(1).lower(): f.group(2) for f in re.finditer(r"(\w+)\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\}", body)}
        authors = []
        for name in re.split(r"\s+and\s+", fields.get("author", "")):
            name = name.strip()
            if name == "others":
                authors.append("others")
            elif name.startswith("{"):
                authors.append(name.strip("{}"))
            else:
                authors.append(name.split(",")[0].strip())
        entries[key] = {"authors": authors, "year": fields.get("year", ""),
                        "title": fields.get("title", "").strip("{}"),
                        "keywords": [w.strip() for w in fields.get("keywords", "").split(",") if w.strip()]}
    return entries


def _names(who: str) -> tuple[list[str], bool]:
    """The persons a citation names and whether it ends in 'et al.'."""
    etal = who.endswith("et al.")
    who = who[: -len("et al.")].strip() if etal else who
    return [p.strip() for p in re.split(r",\s|,?\sand\s", who) if p.strip()], etal


def _fits(entry: dict, persons: list[str], etal: bool) -> int:
    """How many leading words of the citation's first person precede the entry's first author (-1: no fit)."""
    authors = entry["authors"]
    first = persons[0]
    last = authors[0]
    tail = last.split()[-1] if not last[:1].isupper() else last  # "van Laarhoven" -> "Laarhoven"
    if not (first == tail or first.endswith(" " + tail)):
        return -1
    if etal:
        ok = len(authors) >= 3
    else:
        ok = len(authors) == len(persons) and "others" not in authors and all(
            p.split()[-1] == (a.split()[-1]) for p, a in zip(persons[1:], authors[1:], strict=False))
    return len(first[: len(first) - len(tail)].split()) if ok else -1


def resolve(who: str, year: str, sentence: str, entries: dict, at: int = 0) -> tuple[str | None, int]:
    """(key, number of leading words of `who` that are not part of the citation) or (None, 0)."""
    persons, etal = _names(who)
    found = []
    for key, e in entries.items():
        if not (e["year"] == year or (re.fullmatch(r"\d{4}|n\.d\.", year) and re.fullmatch(
                re.escape(year) + r"-?[a-z]?", e["year"]))):
            continue
        skip = _fits(e, persons, etal)
        if skip >= 0:
            found.append((key, skip))
    if len(found) > 1:  # the work whose keyword stands nearest the citation
        def distance(key):
            hits = [abs(m.start() - at) for w in entries[key]["keywords"]
                    for m in re.finditer(rf"(?<![\w-]){re.escape(w)}(?![\w-])", sentence)]
            return min(hits, default=None)
        scored = sorted((d, k, s) for k, s in found if (d := distance(k)) is not None)
        clear = scored and (len(scored) == 1 or scored[0][0] < scored[1][0])
        found = [(k, s) for d, k, s in scored[:1]] if clear else []
    return found[0] if len(found) == 1 else (None, 0)


def _sentence(text: str, start: int, end: int) -> tuple[str, int]:
    """The text around a citation (200 characters each side) and the citation's place in it."""
    begin = max(0, start - 200)
    return text[begin: end + 200], start - begin


def _mask(text: str) -> str:
    """`text` with code spans, maths, roles and link targets blanked out (same length, so places agree)."""
    return _PROTECT.sub(lambda m: "\0" * len(m.group(0)), text)


def _apply(text: str, edits: list) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def convert_text(text: str, entries: dict, problems: list, where: str = "") -> str:
    """The text with its citations as roles; unresolved citations are appended to `problems`."""
    edits = []
    masked = _mask(text)
    for m in PARENS.finditer(masked):
        inner = m.group(1)
        cites = list(CITE_IN_PARENS.finditer(inner))
        if not cites:
            continue
        context, at = _sentence(text, m.start(), m.end())
        keys, out, bad = [], [], False
        for c in cites:
            key, skip = resolve(c["who"], c["year"], context, entries, at=at + 1 + c.start())
            if key is None:
                problems.append(f"{where}{c.group(0)}")
                bad = True
                continue
            lead = " ".join(c["who"].split()[:skip])
            keys.append(key)
            out.append((c.start() + (len(lead) + 1 if lead else 0), c.end(), key))
        if bad:
            continue
        rest = _apply(inner, [(s, e, "") for s, e, _ in out])
        if re.fullmatch(r"[\s;,]*", rest):
            edits.append((m.start(), m.end(), f"{{cite:p}}`{','.join(keys)}`"))
        else:
            original = text[m.start() + 1:m.end() - 1]
            roles = [(s, e, f"{{cite:alp}}`{k}`") for s, e, k in out]
            edits.append((m.start() + 1, m.end() - 1, _apply(original, roles)))
    text = _apply(text, edits)

    edits = []
    for m in CITE_NARRATIVE.finditer(_mask(text)):
        context, at = _sentence(text, m.start(), m.end())
        key, skip = resolve(m["who"], m["year"], context, entries, at=at)
        if key is None:
            problems.append(f"{where}{m.group(0)}")
            continue
        lead = " ".join(m["who"].split()[:skip])
        edits.append((m.start(), m.end(), (lead + " " if lead else "") + f"{{cite:t}}`{key}`"))
    text = _apply(text, edits)
    # a surname's particle ("van Laarhoven") stays in front of the role, which prints it itself
    return re.sub(r"\b(van|von|de|der) (\{cite:[a-z]+\}`(\w+)`)", lambda m: m.group(2) if entries.get(
        m.group(3), {}).get("authors", [""])[0].startswith(m.group(1) + " ") else m.group(0), text)


def convert_file(path: Path, entries: dict, problems: list) -> bool:
    """Convert one page or notebook in place. Returns whether it changed."""
    raw = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if path.suffix == ".md":
        new = convert_text(raw, entries, problems, f"{rel}: ")
    elif path.suffix == ".ipynb":
        nb = json.loads(raw)
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            src = "".join(cell["source"])
            conv = convert_text(src, entries, problems, f"{rel} ({cell.get('id', '?')}): ")
            if conv != src:
                cell["source"] = conv.splitlines(keepends=True)
        new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if json.loads(raw) == nb:
            new = raw
    else:
        raise ValueError(f"path: expected a .md or .ipynb file, got {path}")
    if new != raw:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def default_files() -> list[Path]:
    """DEFAULT_GLOBS' files, less the book's copy of the exercises: `make exercises` writes it from the source."""
    from scripts.make_exercises import TARGET

    return sorted(p for g in DEFAULT_GLOBS for p in ROOT.glob(g) if p != TARGET)


def main(argv: list[str]) -> int:
    entries = read_bib()
    paths = [Path(a).resolve() for a in argv[1:]] or default_files()
    problems: list[str] = []
    changed = [p for p in paths if convert_file(p, entries, problems)]
    for p in changed:
        print(f"cite_roles: converted {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}")
    for p in problems:
        print(f"cite_roles: cannot resolve {p} (no single entry of book/references.bib fits: add the work, "
              "or tell works apart by the year's letter, e.g. 2020a)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
