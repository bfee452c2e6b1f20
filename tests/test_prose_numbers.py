"""Every precise number the section notebooks state in prose is one their own code printed.

A sentence such as "post-norm falls to 0.04951 at depth 32" is a claim about a computation. If the computation
changes and the stored outputs are refreshed, the sentence must change too; this test makes that impossible to
forget. It reads the stored notebooks (no kernel) and checks, for notebooks/01… to 09… (the exercises notebook 10 is
generated from assignments/ and has its own tests):

What is a *prose number*
    Every decimal number in a markdown cell, written as digits (``0.04951``, ``1,000``, ``85.9`` in ``85.9%``,
    ``1e-5``) or as a mantissa times a power of ten in maths (``2.6\\times10^{-8}``), with three or more
    significant digits. Significant digits are counted the usual way: leading zeros never count, trailing zeros
    count after a decimal point (``2.000`` has four, ``0.490`` three) but not in an integer (``1000`` has one,
    ``4096`` four). A number that is all zeros (``0.000000``) claims as many digits as it has decimals.
    Numbers with one or two significant digits (``0.45 %``, ``1.1``, ``10^{-5}``) are not checked: they are
    settings, round constants or deliberately rounded figures, and matching them against every printed digit
    would prove nothing.

Numbers inside maths count
    ``$1.1^{24} = 9.8497$`` states a computed value just as plain text does, so text between ``$`` signs is
    scanned too. Exact constants written in maths are short (``35/12``, ``\\sqrt{2}``, ``2^{-24}``,
    ``10^{-5}``) and fall under the three-digit threshold by themselves; that is the principle, not a list.

What is not a prose number
    Text in code spans and links' targets (code, file names), MyST roles such as ``{cite:p}``, the book's own
    identifiers ``23.1`` ... ``23.10`` (sections) and ``23-1`` ... ``23-7`` (figures), digits that are part of a
    word (``float32``, ``GPT-2``, ``DeepSeek-V3``, ``12D^2``), and years (a four-digit integer from 1900 to 2099,
    as in "the 2017 transformer").

Marked approximate
    A number right after "about", "around", "roughly", "approximately", "nearly", "almost", "some", "close to",
    "≈", "~", ``\\approx`` or ``\\sim`` (optionally with a ``$``, a sign or ``\\pm`` between) is a rounded description,
    not a citation of printed digits, and is exempt.

Appears in an output
    The number must equal, after rounding to the number of decimals it is written with (in its own power of ten),
    some number printed by a code cell of the same notebook: stream text, ``text/plain`` or ``text/markdown``
    data. The printed number must have at least as many decimals as the prose one, so "0.975" may cite a printed
    "0.9750" or "0.97498" but "0.9750" may not cite a printed "0.975". Signs are ignored: prose writes "−1.04"
    with a typographic minus or "falls by 1.04", outputs write "-1.04".

Each failure names the notebook, the cell, the number and the sentence it sits in.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from toc_support import toc_notebooks

ROOT = Path(__file__).resolve().parent.parent
# The book's notebooks whose prose is not scanned here, and why; every other notebook of _toc.yml is.
NOT_SCANNED = {"10_exercises": "its numbers set the exercises (the hidden checks' sizes, the points), not results"}
SECTION_NOTEBOOKS = [p for p in toc_notebooks() if p.stem not in NOT_SCANNED]

MIN_SIGNIFICANT = 3

# Things removed before scanning (replaced by a space so the text around them stays apart).
_STRIP = [
    # fenced code; a MyST directive's fence (````{admonition} Check the figures) holds prose, so only its fence
    # and option lines go
    re.compile(r"^(`{3,})(?!`)(?![ \t]*\{)[^\n]*\n.*?^\1[ \t]*$", re.S | re.M),
    re.compile(r"^(?:`{3,}[ \t]*(?:\{[\w:-]+\}[^\n]*)?|:[\w-]+:[^\n]*)$", re.M),
    re.compile(r"\{[a-z:]+\}`[^`]*`"),              # MyST roles: {cite:p}`key`, {ref}`x`
    re.compile(r"`[^`]*`"),                         # code spans
    re.compile(r"\]\([^)]*\)"),                     # link targets: [text](target)
    re.compile(r"<[^>]+>"),                         # html tags and comments
    re.compile(r"(?<![\w.])23[.-]\d{1,2}(?![\d.]\d)"),  # section (23.7) and figure (23-5) identifiers
]

_APPROX = re.compile(
    r"(?:\babout|\baround|\broughly|\bapproximately|\bnearly|\balmost|\bsome|\bclose to|≈|~|\\approx|\\sim)"
    r"(?:\s|\$|\\,|\{|\\pm|±|[−+-])*$"
)

# A number: digits with optional thousands separators, decimals and exponent, not glued to a word before it
# and not followed by a letter (12D, 2nd) other than an exponent 'e'.
_NUMBER = re.compile(
    r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+−]?\d+)?(?![\w])"
    r"(?:\s*\\times\s*10\^\{?[-−]?\d+\}?)?"
)
_TIMES_TEN = re.compile(r"\s*\\times\s*10\^\{?([-−]?\d+)\}?$")
_YEAR = re.compile(r"^(19|20)\d\d$")


@dataclass(frozen=True)
class Quantity:
    """A written number: its digits as written, their significant count, and the value of one unit in the
    last written place (the quantum)."""

    text: str
    value: Decimal
    quantum: Decimal
    significant: int


def parse_number(text: str) -> Quantity:
    """Read '0.04951', '1,000', '2.6e-04' or '2.6\\times10^{-8}' (as matched by _NUMBER)."""
    exp10 = 0
    m = _TIMES_TEN.search(text)
    body = text[: m.start()] if m else text
    if m:
        exp10 = int(m.group(1).replace("−", "-"))
    body = body.replace(",", "").replace("−", "-")
    mantissa, _, e = body.lower().partition("e")
    if e:
        exp10 += int(e)
    digits = mantissa.replace(".", "")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    stripped = digits.lstrip("0")
    if not stripped:
        significant = decimals
    elif "." in mantissa:
        significant = len(stripped)
    else:
        significant = len(stripped.rstrip("0"))
    value = Decimal(mantissa).scaleb(exp10)
    quantum = Decimal(1).scaleb(exp10 - decimals)
    return Quantity(text, abs(value), quantum, significant)


def numbers_in(text: str):
    """(match start, Quantity) for every number in a piece of text, prose or output."""
    for m in _NUMBER.finditer(text):
        yield m.start(), parse_number(m.group(0))


def prose_text(markdown: str) -> str:
    """Markdown with code, link targets, roles and the book's identifiers blanked out (same length)."""
    for pattern in _STRIP:
        markdown = pattern.sub(lambda m: " " * len(m.group(0)), markdown)
    return markdown


def sentence_around(text: str, pos: int) -> str:
    """The sentence (or list item) containing text[pos], on one line."""
    starts = [m.end() for m in re.finditer(r"(?<![\d.])[.!?](?=\s)|\n\s*\n|\n\s*[-*] |\n\d+\. ", text[:pos])]
    start = starts[-1] if starts else 0
    end_m = re.compile(r"[.!?](?=\s|$)|\n\s*\n").search(text, pos)
    end = end_m.end() if end_m else len(text)
    return " ".join(text[start:end].split())


def is_approximate(text: str, pos: int) -> bool:
    return bool(_APPROX.search(text[max(0, pos - 30):pos]))


def output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]) if isinstance(out["text"], list) else out["text"])
        for kind in ("text/plain", "text/markdown"):
            data = out.get("data", {}).get(kind)
            if data is not None:
                parts.append("".join(data) if isinstance(data, list) else data)
    return "\n".join(parts)


def printed_numbers(nb: dict) -> list[Quantity]:
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            found += [q for _, q in numbers_in(output_text(cell))]
    return found


def cites(prose: Quantity, printed: Quantity) -> bool:
    """True if `printed` rounds to `prose` at prose's precision and is printed at least that precisely."""
    if printed.quantum > prose.quantum:
        return False
    return abs(printed.value - prose.value) * 2 <= prose.quantum


@dataclass(frozen=True)
class ProseNumber:
    cell: int
    quantity: Quantity
    sentence: str
    approximate: bool


def prose_numbers(nb: dict) -> list[ProseNumber]:
    """Every prose number with MIN_SIGNIFICANT or more significant digits in the notebook's markdown cells."""
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        text = prose_text(src)
        for pos, q in numbers_in(text):
            if q.significant < MIN_SIGNIFICANT or _YEAR.match(q.text):
                continue
            found.append(ProseNumber(index, q, sentence_around(src, pos), is_approximate(text, pos)))
    return found


def unbacked(nb: dict) -> list[ProseNumber]:
    """The prose numbers that are neither marked approximate nor printed by any code cell of nb."""
    printed = printed_numbers(nb)
    missing = []
    for item in prose_numbers(nb):
        if item.approximate:
            continue
        if not any(cites(item.quantity, p) for p in printed):
            missing.append(item)
    return missing


def report(name: str, missing: list[ProseNumber]) -> str:
    lines = [f"{name}: {len(missing)} prose number(s) not printed by any code cell and not marked approximate"]
    for item in missing:
        lines.append(f"  cell {item.cell}: {item.quantity.text!r} in: {item.sentence}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# The checker itself, on synthetic notebooks: it must be able to fail.

def _nb(markdown: str, printed: str) -> dict:
    return {"cells": [
        {"cell_type": "markdown", "source": markdown, "metadata": {}},
        {"cell_type": "code", "source": "print(...)", "metadata": {}, "execution_count": 1,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]},
    ]}


def test_checker_flags_a_number_no_output_prints():
    nb = _nb("Post-norm falls to 0.04951 at depth 32. Pre-norm reaches 5.653.", "0.04929 5.653\n")
    missing = unbacked(nb)
    assert [m.quantity.text for m in missing] == ["0.04951"]
    assert missing[0].sentence == "Post-norm falls to 0.04951 at depth 32."
    assert "0.04951" in report("synthetic", missing)


def test_checker_accepts_rounded_citations_but_not_invented_precision():
    nb = _nb("It runs from 0.975 to 1.025, and 0.9750 is its minimum.", "[0.975, +1.0247]\n")
    assert [m.quantity.text for m in unbacked(nb)] == ["0.9750"]     # 0.975 printed; 0.9750 claims a digit more
    nb = _nb("It runs from 0.975 to 1.025, and 0.9750 is its minimum.", "[+0.97498357, +1.0247]\n")
    assert unbacked(nb) == []                                        # 0.97498357 rounds to 0.975 and to 0.9750


def test_checker_reads_maths_scientific_notation_and_separators():
    nb = _nb("Down to $2.6\\times10^{-8}$ at 256, or $1.1^{24} = 9.8497$; $3,145,728$ weights; $4.57$.",
             "2.598e-08  256  9.8497  3,145,728\n")
    assert [m.quantity.text for m in unbacked(nb)] == ["4.57"]


def test_checker_exemptions():
    nb = _nb("Section 23.7 and figure 23-5 (the 2017 paper): `0.123456` in code, float32, GPT-2, about 0.0017, "
             "$\\approx 6.02$, roughly 43%, a gain of 1.1 and $10^{-5}$; [link](file_0.12345.ipynb).", "")
    assert unbacked(nb) == []


def test_significant_digit_rule():
    assert [parse_number(t).significant for t in ("0.04951", "2.000", "1000", "4096", "0.000000", "1,000")] == \
        [4, 4, 1, 4, 6, 1]
    q = parse_number("2.6\\times10^{-8}")
    assert q.value == Decimal("2.6e-8") and q.quantum == Decimal("1e-9")


# ----------------------------------------------------------------------------------------------------------
# The real notebooks.

@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=[p.stem for p in SECTION_NOTEBOOKS])
def test_prose_numbers_are_printed_by_the_notebook(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    missing = unbacked(nb)
    assert not missing, report(path.name, missing)


EVAL = re.compile(r"\{eval\}`([^`]+)`")


def inline_expressions(nb: dict) -> list[tuple[int, str]]:
    """(cell index, expression) of every {eval}`...` prose number: computed where it stands, so it follows the
    notebook's parameters (tests/test_parameters.py re-runs them with other values)."""
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            found += [(index, e) for e in EVAL.findall(src)]
    return found


def test_the_check_covers_a_substantial_number_of_prose_numbers():
    """Guards the checker against silently matching nothing (e.g. a broken number pattern)."""
    nbs = [json.loads(p.read_text(encoding="utf-8")) for p in SECTION_NOTEBOOKS]
    literal = sum(sum(not n.approximate for n in prose_numbers(nb)) for nb in nbs)
    inline = sum(len(inline_expressions(nb)) for nb in nbs)
    # the prose as a reader sees it, every inline expression replaced by its stored value
    read = sum(sum(not n.approximate for n in prose_numbers(as_read(nb))) for nb in nbs)
    assert len(SECTION_NOTEBOOKS) >= 9
    # 140 literal ones when written; since issue 22 most are inline expressions, computed from the parameters
    assert read >= 140 and literal + inline >= 140, (read, literal, inline)


@pytest.mark.parametrize("path", SECTION_NOTEBOOKS, ids=[p.stem for p in SECTION_NOTEBOOKS])
def test_inline_prose_numbers_are_stored_with_their_values(path):
    """`make notebooks` stores each {eval} result in the cell's user_expressions metadata (what jupyterlab-myst shows
    before the notebook is run); every expression has one, and it evaluated without error."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for index, expr in inline_expressions(nb):
        meta = nb["cells"][index]["metadata"]
        stored = {item["expression"]: item["result"] for item in meta.get("user_expressions", [])}
        assert expr in stored, f"{path.name} cell {index}: {expr!r} has no stored value (run make notebooks)"
        assert stored[expr].get("status") == "ok", f"{path.name} cell {index}: {expr!r} failed: {stored[expr]}"


def as_read(nb: dict) -> dict:
    """nb with every {eval}`...` of its markdown replaced by the value stored for it (user_expressions), as a
    reader sees the page."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            stored = {item["expression"]: item["result"].get("data", {}).get("text/plain", "")
                      for item in cell.get("metadata", {}).get("user_expressions", [])}
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = EVAL.sub(lambda m, stored=stored: _shown(stored.get(m.group(1), m.group(0))), src)
    return nb


def _shown(text_plain: str) -> str:
    """What a reader sees of a stored result: a string's value without its quotes, anything else as stored."""
    try:
        value = ast.literal_eval(text_plain)
    except (ValueError, SyntaxError):
        return text_plain
    return value if isinstance(value, str) else text_plain


def test_a_changed_output_leaves_the_prose_behind():
    """Change one printed figure of a real notebook (as a changed computation would) and the check fails.
    23.9 computes its figures with {eval}, so the check reads its prose with the stored values in place: every
    figure a reader sees there is printed by a code cell, and a changed output leaves the stored value behind."""
    path = ROOT / "notebooks" / "09_key_takeaways.ipynb"
    original = as_read(json.loads(path.read_text(encoding="utf-8")))
    assert "0.04951" in "".join(c["source"] for c in original["cells"] if c["cell_type"] == "markdown")
    assert unbacked(original) == []
    for cell in original["cells"]:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = [t.replace("0.04951", "0.04957") for t in out["text"]]
    assert "0.04951" in [m.quantity.text for m in unbacked(original)]
