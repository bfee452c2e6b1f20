"""The book's search index: the text of every section of the built site, for book/assets/normlab-search.js.

Sphinx's own index (searchindex.js) keeps stemmed words split at every hyphen and every symbol, per page:
"QK-norm" is the two words "qk" and "norm", "warm-up" is "warm" and "up", ε and σ are no words at all, and
it cannot tell which section of a page names a term. This module reads each page of _build/html once the
build is done and writes `_static/normlab-searchindex.js`: for every section (a page's <section> with an
id, up to its next sub-section), its title, its prose with maths read as plain symbols (\\epsilon -> ε, as
normlab-search.js's plainMath reads it), its code and printed output apart, and the phrases it sets in bold
or italics (where a term is defined). The script is loaded by search.html with a <script> tag, so search
works from file:// too (no fetch); normlab-search.js matches the query against these texts and ranks them.

`python scripts/search_index.py [_build/html]` writes the index of a built site (finish_site.py calls
write_index as part of `make book`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

INDEX_FILE = "_static/normlab-searchindex.js"
# Pages that collect what the sections teach; they rank after the sections unless only they have the query.
BACK_MATTER = ("book/glossary", "book/references")

# -- maths as plain text (a port of plainMath in book/assets/normlab-search.js; tests/test_search.py
#    checks that the two read every formula of the book alike) --------------------------------------------
SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "eta": "η",
    "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ",
    "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ",
    "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "ell": "ℓ", "partial": "∂", "sum": "Σ", "prod": "Π", "sqrt": "√", "cdot": "·", "cdots": "⋯", "ldots": "…",
    "dots": "…", "times": "×", "approx": "≈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠",
    "neq": "≠", "in": "∈", "to": "→", "rightarrow": "→", "leftarrow": "←", "infty": "∞", "odot": "⊙",
    "nabla": "∇", "pm": "±", "mp": "∓", "top": "⊤", "lVert": "‖", "rVert": "‖", "Vert": "‖", "|": "‖",
    "lvert": "|", "rvert": "|", "langle": "⟨", "rangle": "⟩", "ll": "≪", "gg": "≫", "propto": "∝",
    "equiv": "≡", "sim": "∼", "circ": "∘", "ast": "∗", "star": "⋆", "forall": "∀", "exists": "∃", "mid": "|",
}
BINARY = re.compile(r"^(sum|prod|cdot|times|approx|le|leq|ge|geq|ne|neq|in|to|rightarrow|leftarrow|pm|mp|ll|gg|"
                    r"propto|equiv|sim|mid)$")
NAMED = re.compile(r"^(max|min|log|exp|ln|det|arg|argmax|argmin|sup|inf|lim|tanh|sin|cos|sign|Var|var|mean|std|"
                   r"diag)$")
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "bar": "\u0304", "overline": "\u0304", "tilde": "\u0303",
           "widetilde": "\u0303", "vec": "\u20d7", "dot": "\u0307", "ddot": "\u0308", "check": "\u030c"}
SUB = dict(zip("0123456789+-ijknmlt", "₀₁₂₃₄₅₆₇₈₉₊₋ᵢⱼₖₙₘₗₜ", strict=True))
SUP = dict(zip("0123456789+-niT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿⁱᵀ", strict=True))


def _script(body: str, table: dict, mark: str) -> str:
    """x_j, x^2, x_{ij} as small characters when every character has one, else x_(..)."""
    if all(c in table for c in body):
        return "".join(table[c] for c in body)
    return mark + (f"({body})" if len(body) > 1 else body)


def plain_math(tex: str) -> str:
    """A plain-text reading of a TeX formula that keeps its symbols (the same as plainMath in JS)."""
    s = re.sub(r"\\[)\]]$", "", re.sub(r"^\\[(\[]", "", tex.strip()))

    def group(g: str) -> str:
        return f"({g})" if len(g) > 1 else g

    def delimiter(m):
        d = m.group(1)
        return re.sub(r"^\\", "", d) if d and d != "." else ""

    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])\s*(\\[{}|]|[()\[\]|.])?", delimiter, s)
    s = re.sub(r"\\(?:text|mathrm|mathbf|mathit|mathsf|operatorname|boldsymbol|textbf|textit)\s*\{([^{}]*)\}",
               r"\1", s)

    def accent(m):
        name, g, one = m.group(1), m.group(2), m.group(3)
        if name not in ACCENTS:
            return m.group(0)
        body = g if g is not None else one
        body = re.sub(r"^\\([A-Za-z]+)", lambda c: SYMBOLS.get(c.group(1)) or c.group(1), body)
        chars = body.strip()
        return chars[0] + ACCENTS[name] + chars[1:] if chars else ""

    for _ in range(4):
        s = re.sub(r"\\([A-Za-z]+)\s*(?:\{([^{}]*)\}|(\\[A-Za-z]+|[A-Za-z0-9]))", accent, s)
        s = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}",
                   lambda m: group(m.group(1)) + "/" + group(m.group(2)), s)
        s = re.sub(r"\\sqrt\s*\{([^{}]*)\}", lambda m: "√" + group(m.group(1)), s)

    def command(m):
        name = m.group(1)
        sym = SYMBOLS[name] if name in SYMBOLS else (name if NAMED.match(name) else "")
        return f" {sym} " if BINARY.match(name) else sym

    s = re.sub(r"\\([A-Za-z]+|\|)", command, s)
    s = re.sub(r"\s*_\{([^{}]*)\}|\s*_(\S)", lambda m: _script(m.group(1) if m.group(1) is not None else m.group(2),
                                                              SUB, "_"), s)
    s = re.sub(r"\s*\^\{([^{}]*)\}|\s*\^(\S)", lambda m: _script(m.group(1) if m.group(1) is not None else m.group(2),
                                                                SUP, "^"), s)
    s = re.sub(r"\\[,;:! ]|~", " ", s)
    s = re.sub(r"[{}$\\&]", "", s)
    return re.sub(r"\s+", " ", s).strip()


# -- the sections of a page -------------------------------------------------------------------------------
# Not text of a section: buttons, navigation, the print-only title and contents, explorables' hidden data
# (the same list as NOT_TEXT in normlab-search.js).
NOT_TEXT = (".bd-header-article, .prev-next-area, .prev-next-footer, .copybtn, .headerlink, #jb-print-docs-body, "
            "nav, script, style, .nl-data, .nl-ghost, .MathJax_Preview, .nl-screen-only")
CODE = ".cell_input, .cell_output pre, div.highlight"
EMPHASIS = ("strong", "b", "em", "i", "dfn", "dt")
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = {"p", "div", "section", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th", "pre",
           "figure", "figcaption", "blockquote", "br", "h1", "h2", "h3", "h4", "h5", "h6", "details", "summary"}
_NO_SPACE_BEFORE = re.compile(r" ([,.;:!?)])")


def _clean(text: str) -> str:
    return _NO_SPACE_BEFORE.sub(r"\1", re.sub(r"\s+", " ", text)).strip()


def _text(node, parts: list[str], code: list[str] | None, in_code: bool = False) -> None:
    """Append the text under `node` to `parts` (code to `code`), stopping at nested <section>s."""
    from bs4 import NavigableString, Tag

    for child in node.children:
        if isinstance(child, NavigableString):
            if type(child).__name__ in ("Comment", "Doctype", "ProcessingInstruction", "Declaration"):
                continue
            (code if in_code and code is not None else parts).append(str(child))
        elif isinstance(child, Tag):
            if child.name == "section" and child.get("id"):
                continue
            block = child.name in _BLOCKS
            target = code if in_code and code is not None else parts
            if block:
                target.append(" ")
            _text(child, parts, code, in_code or child.get("data-nl-code") == "1")
            if block:
                target.append(" ")


def page_sections(html: str, docname: str) -> dict:
    """The page's title and its sections as [anchor, title, prose, code, emphasised phrases] lists (the
    page's own text before its first sub-section has the anchor "")."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("[role=main]") or soup.body or soup
    for el in main.select(NOT_TEXT):
        el.decompose()
    for el in main.select(".math, script[type^='math/tex']"):
        el.replace_with(" " + plain_math(el.get_text()) + " ")
    # a line of nothing but links to the previous and next sections ("← 23.4 ... · 23.6 ... →")
    for p in main.select("p"):
        own = "".join(str(c) for c in p.children if isinstance(c, str))
        if re.search("[←→]", p.get_text()) and p.find("a") and not re.search("[A-Za-z0-9]", own):
            p.decompose()
    for el in main.select(CODE):
        el["data-nl-code"] = "1"
    h1 = main.find("h1")
    title = _clean(h1.get_text()) if h1 else docname
    sections = []

    def add(node, anchor: str) -> None:
        heading = None
        for child in node.children:
            if getattr(child, "name", None) in HEADINGS:
                heading = child
                break
            if getattr(child, "name", None) and child.get_text(strip=True):
                break
        head = _clean(heading.get_text()) if heading is not None else ""
        if heading is not None:
            heading.extract()
        prose, code = [], []
        _text(node, prose, code)
        emphasis = []
        for el in node.find_all(EMPHASIS):
            if el.find_parent("section") is node or (el.find_parent("section") is None and node is main):
                phrase = _clean(el.get_text())
                if phrase and len(phrase) <= 60 and phrase not in emphasis:
                    emphasis.append(phrase)
        sections.append([anchor, head, _clean("".join(prose)), _clean("".join(code)), emphasis])

    top = main.find("section", id=True)
    if top is None:
        add(main, "")
        return {"title": title, "sections": sections}
    for i, sec in enumerate(main.find_all("section", id=True)):
        add(sec, "" if i == 0 and sec.find_parent("section") is None else "#" + sec["id"])
    return {"title": title, "sections": [s for s in sections if s[1] or s[2] or s[3]]}


def toc_docnames(root: Path) -> list[str]:
    """The pages of _toc.yml in reading order (the root first), as scripts/toc.py reads them (loaded by its path:
    this runs inside the Sphinx build, where only scripts/ itself is importable)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("normlab_toc", Path(__file__).with_name("toc.py"))
    toc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toc)
    return toc.toc_pages(Path(root) / "_toc.yml")


def build_index(site: Path, docnames: list[str]) -> dict:
    """{"pages": [[docname, title, back matter 0/1], ...], "sections": [[page, anchor, title, prose, code,
    emphasis], ...]} for the pages of `docnames` that the site has."""
    pages, sections = [], []
    for name in docnames:
        path = Path(site) / f"{name}.html"
        if not path.is_file():
            continue
        page = page_sections(path.read_text(encoding="utf-8"), name)
        for s in page["sections"]:
            sections.append([len(pages)] + s)
        pages.append([name, page["title"], int(name in BACK_MATTER)])
    return {"pages": pages, "sections": sections}


_INDEX_TAG = '<script src="_static/normlab-searchindex.js"></script>'
_SPHINX_INDEX_TAG = re.compile(r'<script src="searchindex\.js"[^>]*></script>')


def write_index(site: Path, root: Path | None = None) -> Path:
    """Write the index of the built site to _static/normlab-searchindex.js and let search.html load it in
    place of Sphinx's searchindex.js (normlab-search.js does the searching). Idempotent."""
    site = Path(site)
    root = Path(root) if root else Path(__file__).resolve().parent.parent
    index = build_index(site, toc_docnames(root))
    out = site / INDEX_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(index, ensure_ascii=False, separators=(",", ":"))
    out.write_text(f"window.NORMLAB_SEARCH = {data};\nif (window.normlabSearchReady) window.normlabSearchReady();\n",
                   encoding="utf-8")
    search = site / "search.html"
    if search.is_file():
        text = search.read_text(encoding="utf-8")
        if _INDEX_TAG not in text:
            new, n = _SPHINX_INDEX_TAG.subn(_INDEX_TAG, text)
            if n == 0:
                new = text.replace("</body>", _INDEX_TAG + "\n</body>")
            search.write_text(new, encoding="utf-8")
    return out


if __name__ == "__main__":
    site = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html")
    path = write_index(site)
    print(f"search_index: {path} ({path.stat().st_size / 1024:.0f} kB)")
