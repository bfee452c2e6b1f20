"""The book's search: scripts/search_index.py (the index `make book` writes) and book/assets/normlab-search.js
(matching, ranking, snippets).

Without a build: the index's reading of maths and of a page's sections, on made-up HTML; the matching and ranking
of normlab-search.js on a made-up index, run by node (skipped without node).
With the built site (marker `browser`, Debian's chromium): a reader types each term into search.html's box, and
the first result must be the page that names the term, every highlight a whole match; over file:// as over
http; the Python and the JS reading of every formula of the book agree. Screenshots of the results at 1280x900
and 390x844 go to _build/screenshots/<size>/search__<term>.png.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("search_index", ROOT / "scripts" / "search_index.py")
search_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(search_index)
SEARCH_JS = ROOT / "book" / "assets" / "normlab-search.js"


# -- the index (Python) ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tex, plain", [
    (r"\(\hat x_j\)", "x\u0302ⱼ"),
    (r"\frac{x_j - \mu}{\sqrt{\sigma^2 + \epsilon}}", "(xⱼ - μ)/(√(σ² + ε))"),
    (r"\gamma \odot \hat{x} + \beta", "γ ⊙ x\u0302 + β"),
    (r"\varepsilon", "ε"),
    (r"\left\| x \right\|_2", "| x |₂"),
    (r"\lVert x \rVert", "‖ x ‖"),
    (r"\mathrm{Norm}(h + F(h))", "Norm(h + F(h))"),
    (r"x_{ab}", "x_(ab)"),
    (r"a \le b", "a ≤ b"),
])
def test_plain_math_reads_formulas_with_their_symbols(tex, plain):
    assert search_index.plain_math(tex) == plain


PAGE = """<html><body><nav>Contents: QK-norm</nav><main role="main"><div class="bd-header-article">menu</div>
<section id="the-page"><h1>23.9 A page<a class="headerlink" href="#the-page">#</a></h1>
<p>Opening text with <span class="math notranslate nohighlight">\\(\\epsilon\\)</span> , said once.</p>
<p><a href="a.html">← 23.8 Before</a> · <a href="b.html">23.10 After →</a></p>
<section id="warm-up-first"><h2>Warm-up first</h2>
<p>A <strong>warm-up</strong> raises the learning rate; <em>updates</em> settle.</p>
<div class="cell docutils container"><div class="cell_input"><pre>lr = warmup(0.1)</pre></div>
<div class="cell_output"><pre>0.1</pre></div></div>
<section id="deeper"><h3>Deeper</h3><p>Nested text.</p></section>
</section></section><script>var hidden = "QK-norm";</script></main></body></html>"""


def test_page_sections_split_prose_code_and_definitions():
    page = search_index.page_sections(PAGE, "notebooks/09_x")
    assert page["title"] == "23.9 A page"
    anchors = [s[0] for s in page["sections"]]
    assert anchors == ["", "#warm-up-first", "#deeper"]
    top, warm, deeper = page["sections"]
    # the top section: its own text only, maths read as symbols, no navigation, no heading, no prev/next line
    assert top[1] == "23.9 A page"
    assert top[2] == "Opening text with ε, said once."
    assert warm[1] == "Warm-up first"
    assert warm[2] == "A warm-up raises the learning rate; updates settle."
    assert warm[3] == "lr = warmup(0.1) 0.1"
    assert warm[4] == ["warm-up", "updates"]
    assert deeper[1:4] == ["Deeper", "Nested text.", ""]
    assert all("QK-norm" not in s[2] and "menu" not in s[2] for s in page["sections"])


def test_write_index_replaces_sphinx_index_on_search_page(tmp_path):
    site = tmp_path / "html"
    (site / "notebooks").mkdir(parents=True)
    (site / "notebooks" / "09_x.html").write_text(PAGE, encoding="utf-8")
    (site / "search.html").write_text('<html><body><script src="searchindex.js"></script></body></html>',
                                      encoding="utf-8")
    (tmp_path / "_toc.yml").write_text("root: notebooks/09_x\n", encoding="utf-8")
    for _ in range(2):  # idempotent
        out = search_index.write_index(site, tmp_path)
    text = (site / "search.html").read_text(encoding="utf-8")
    assert text.count("normlab-searchindex.js") == 1 and 'src="searchindex.js"' not in text
    body = out.read_text(encoding="utf-8")
    data = json.loads(body[body.index("{"): body.rindex("}") + 1])
    assert data["pages"] == [["notebooks/09_x", "23.9 A page", 0]]
    assert [s[1] for s in data["sections"]] == ["", "#warm-up-first", "#deeper"]


# -- matching and ranking (normlab-search.js, in node) -------------------------------------------------------
NODE = shutil.which("node")
node_only = pytest.mark.skipif(NODE is None, reason="node is not installed")

# A made-up book: a page that names "norm" often, one whose heading names QK-norm, a glossary that defines it.
TINY = {
    "pages": [["notebooks/a", "23.6 Comparing norms", 0], ["notebooks/b", "Does it train?", 0],
              ["book/glossary", "Glossary", 1], ["notebooks/c", "23.4 Layer normalization", 0]],
    "sections": [
        [0, "", "23.6 Comparing norms", "The norm of x, the norm of y, a norm and a norm again; norm updates.", "",
         []],
        [1, "", "Does it train?", "A model trains with a warm-up; updates start small.", "", []],
        [1, "#qk-norm", "QK-norm", "QK-norm normalizes queries and keys; with QK-norm and a warm-up it trains.",
         "qk_norm=True", ["QK-norm"]],
        [2, "#qk-norm", "QK-norm", "Normalizing queries and keys.", "", ["QK-norm"]],
        [2, "#sigma", "Sigma", "A sum Σ is not σ.", "", []],
        [3, "", "23.4 Layer normalization", "It divides by √(σ² + ε) and scales by γ.", "", ["ε"]],
    ],
}


def run_js(calls: list[list], index: dict = TINY) -> list:
    """[[query, ...]] -> for each query its ranked results as [docname+anchor, [[highlighted text], ...]]."""
    script = f"""
global.window = {{}}; global.document = {{ readyState: "complete" }};
require({json.dumps(str(SEARCH_JS))});
const S = window.normlab.search, index = {json.dumps(index, ensure_ascii=False)};
const out = {json.dumps(calls)}.map(q => S.rank(index, q).map(r => {{
  const snip = S.snippetOf(index, r);
  return [index.pages[r.page][0] + index.sections[r.section][1], snip.spans.map(x => snip.text.slice(x[0], x[1]))];
}}));
process.stdout.write(JSON.stringify(out));
"""
    done = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@node_only
def test_hyphenated_terms_match_whole():
    qk, warm, norm = run_js(["QK-norm", "warm-up", "norm"])
    # "QK-norm" is not "norm": the comparison page, full of "norm", is not a result
    assert [r[0] for r in qk] == ["notebooks/b#qk-norm", "book/glossary#qk-norm"]
    assert qk[0][1] == ["QK-norm", "QK-norm"]
    # "warm-up" never highlights "up" (in "updates") on its own
    assert [r[0].split("#")[0] for r in warm] == ["notebooks/b"]
    assert all(h.lower() == "warm-up" for r in warm for h in r[1])
    # a plain word still finds itself inside a compound and its inflections, after the page that names it most
    assert norm[0][0] == "notebooks/a" and set(norm[0][1]) == {"norm"}
    inside = dict(norm)["notebooks/b#qk-norm"]
    assert set(inside) == {"norm", "normalizes"}


@node_only
def test_symbols_and_their_names_find_each_other():
    eps, epsilon, sigma, sigma_name = run_js(["ε", "epsilon", "σ", "sigma"])
    assert [r[0] for r in eps] == ["notebooks/c"] == [r[0] for r in epsilon]
    assert eps[0][1] == ["ε"] == epsilon[0][1]
    # σ is not Σ: the glossary's sum sign is no match, its σ is, after the section page
    assert [r[0] for r in sigma] == ["notebooks/c", "book/glossary#sigma"]
    assert sigma[1][1] == ["σ"]
    assert [r[0] for r in sigma_name] == ["notebooks/c", "book/glossary#sigma"]


@node_only
def test_page_title_and_inflections_rank_first():
    layer, variants = run_js(["LayerNorm", "QKNorm"])
    assert layer[0][0] == "notebooks/c"  # "Layer normalization" in the title
    assert variants[0][0] == "notebooks/b#qk-norm"  # QKNorm is QK-norm written without the hyphen


@node_only
def test_back_matter_comes_last_unless_it_alone_has_the_term():
    (queries,) = run_js(["queries"])
    assert [r[0] for r in queries] == ["notebooks/b#qk-norm", "book/glossary#qk-norm"]
    (sum_sign,) = run_js(["Σ"])
    assert [r[0] for r in sum_sign] == ["book/glossary#sigma"]


# -- the built site, in Chromium ------------------------------------------------------------------------------
# The page each term should open first, and why (independent of the ranking code): where the glossary's
# "Matters in" sends the reader, or the page whose text has the term most often and defines it in bold.
EXPECTED = {
    "QK-norm": "notebooks/11_does_it_train",  # 22 mentions, bold where part (d) describes it; models.md has 8
    "warm-up": "notebooks/11_does_it_train",  # glossary "Warm-up": Matters in: Does it train?
    "DeepNorm": "notebooks/11_does_it_train",  # the only page that describes it; references only cite it
    "ε": "notebooks/04_layer_norm",  # ε most often (35 times in 23.4's source), its sections on epsilon
    "σ": "notebooks/04_layer_norm",  # σ most often (27 times in 23.4's source)
    "epsilon": "notebooks/04_layer_norm",
    "pre-norm": "notebooks/07_pre_post_norm",  # glossary "Pre-norm and post-norm": 23.7, the whole section
}
# What a highlight of each term may read (whole words, whole compounds, whole symbols with the accents on them:
# σ̂ is a σ with a hat; a Greek letter's name is the letter spelled out, as code spells it).
MARKS = "[\u0300-\u036f\u20d0-\u20ff]*"
WHOLE = {
    "QK-norm": r"qk[-\s]?norm(?:s|alization|alized)?",
    "warm-up": r"warm[-\s]?ups?",
    "DeepNorm": r"deep[-\s]?norm(?:s|alization)?",
    "ε": rf"[εϵ]{MARKS}|(?i:epsilons?)",
    "σ": rf"σ{MARKS}|(?i:sigmas?)",
    "epsilon": rf"[εϵ]{MARKS}|(?i:epsilons?)",
    "pre-norm": r"pre[-\s]?norm(?:s|alization|alized)?",
}

RESULTS = """() => Array.from(document.querySelectorAll('#search-results li')).map(li => {
  const ctx = li.querySelector('p.context');
  return {href: li.querySelector('a').getAttribute('href'), title: li.querySelector('a').innerText,
          snippet: ctx ? ctx.textContent : '',
          marks: Array.from(li.querySelectorAll('.highlighted')).map(m => {
            const text = ctx.textContent, before = [], all = Array.from(ctx.childNodes);
            let at = 0;
            for (const n of all) { if (n === m) break; at += n.textContent.length; }
            return {text: m.textContent, before: text.slice(Math.max(0, at - 1), at),
                    after: text.slice(at + m.textContent.length, at + m.textContent.length + 1)};
          })};
})"""


def _type_search(page, term: str) -> list[dict]:
    """Type `term` into search.html's own box and press Enter, as a reader does; the results once shown."""
    box = page.locator("#main-content input[name=q], .bd-search-container input[name=q]").last
    box.fill(term)
    box.press("Enter")
    page.wait_for_function("() => /Search finished|did not match/i.test((document.getElementById('search-results')"
                           " || {}).textContent || '')", timeout=20000)
    return page.evaluate(RESULTS)


def _mark_problems(term: str, results: list[dict]) -> list[str]:
    """Highlights that are not whole matches of the term, and whole matches in a snippet left unmarked."""
    problems = []
    symbol = term in ("ε", "σ", "epsilon")
    whole = re.compile(rf"^(?:{WHOLE[term]})$", 0 if symbol else re.I)
    letter = re.compile(r"[\w\u0370-\u03ff]")
    for r in results:
        for m in r["marks"]:
            if not whole.match(m["text"]):
                problems.append(f"{term!r}: {r['title']!r} highlights {m['text']!r}, not a whole {term}")
            elif not symbol and (letter.match(m["before"] or " ")
                                                       or letter.match(m["after"] or " ")):
                problems.append(f"{term!r}: {r['title']!r} highlights {m['text']!r} inside a longer word "
                                f"({m['before']!r}…{m['after']!r})")
        # every whole match shown in the snippet is highlighted (brute force over the snippet's text)
        pattern = re.compile(rf"(?<![\w-])(?:{WHOLE[term]})(?![\w]|-\w)", re.I) if not symbol else \
            re.compile(rf"{WHOLE[term].split('|')[0]}|(?<!\w)(?:{WHOLE[term].split('|')[1]})(?!\w)")
        shown = len(pattern.findall(r["snippet"]))
        if shown != len(r["marks"]):
            problems.append(f"{term!r}: {r['title']!r} shows {shown} whole matches but highlights "
                            f"{len(r['marks'])}: {r['snippet']!r}")
    return problems


def _first_result_problems(term: str, results: list[dict]) -> list[str]:
    if not results:
        return [f"{term!r}: no result"]
    problems = []
    first = results[0]["href"].split("#")[0].removesuffix(".html")
    if first != EXPECTED[term]:
        problems.append(f"{term!r} lists {first} first, not {EXPECTED[term]}: {[r['title'] for r in results[:4]]}")
    if not results[0]["marks"]:
        problems.append(f"{term!r}: the first result's snippet shows no match: {results[0]['snippet']!r}")
    back = [i for i, r in enumerate(results) if r["href"].startswith(("book/glossary", "book/references"))]
    if back and back[0] < len(results) - len(back):
        problems.append(f"{term!r}: the glossary or the references come before a section: "
                        f"{[r['title'] for r in results]}")
    return problems


def _shot(page, size: str, term: str) -> None:
    from browser_support import SCREENSHOTS

    folder = SCREENSHOTS / size
    folder.mkdir(parents=True, exist_ok=True)
    name = {"ε": "epsilon-symbol", "σ": "sigma-symbol"}.get(term, term)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(folder / f"search__{name}.png"))


@pytest.mark.browser
def test_search_terms_first_result_and_whole_highlights(reader):
    """Each term typed into search.html's box (over http, 1280x900): the page that names it first, the glossary
    and the references after every section, each highlight a whole match and every whole match highlighted."""
    r = reader("search")
    problems = []
    for term in EXPECTED:
        results = _type_search(r.page, term)
        problems += _first_result_problems(term, results) + _mark_problems(term, results)
        _shot(r.page, "1280x900", term)
    problems += r.all_problems
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_search_on_a_phone(reader):
    """At 390x844: the same first results, nothing wider than the screen, each result's title and snippet shown."""
    from browser_support import PHONE

    r = reader("search", viewport=PHONE, phone=True)
    problems = []
    for term in ["warm-up", "ε", "QK-norm"]:
        results = _type_search(r.page, term)
        problems += _first_result_problems(term, results)
        wide = r.page.evaluate("() => document.scrollingElement.scrollWidth")
        if wide > PHONE["width"]:
            problems.append(f"{term!r}: the results page is {wide} px wide on a {PHONE['width']} px screen")
        if any(len(x["snippet"]) < 40 for x in results):
            problems.append(f"{term!r}: results without a snippet: {[x['title'] for x in results]}")
        _shot(r.page, "390x844", term)
    problems += r.all_problems
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_search_from_file_url_has_the_same_results(browser, site):
    """Opened from disk, search.html?q=... finds the same first pages, with snippets and highlights, no error."""
    from browser_support import DESKTOP

    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors, requests = [], []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda q: requests.append(q.url))
    try:
        problems = []
        for term in ["QK-norm", "σ"]:
            page.goto((site / "search.html").resolve().as_uri() + "?q=" + term)
            page.wait_for_function("() => /Search finished|did not match/i.test("
                                   "(document.getElementById('search-results') || {}).textContent || '')",
                                   timeout=20000)
            results = page.evaluate(RESULTS)
            problems += _first_result_problems(term, results) + _mark_problems(term, results)
        assert not errors, f"console errors while searching over file://: {errors[:4]}"
        # nothing but the files of the site itself (no page fetched for snippets, nothing from the network)
        outside = [u for u in requests if not u.startswith("file://") and not u.startswith("data:")]
        assert not outside, f"requests beyond the site's files: {outside[:4]}"
        assert not problems, "\n".join(problems)
    finally:
        context.close()


@pytest.mark.browser
def test_python_and_js_read_every_formula_alike(reader, site):
    """The index reads maths in Python (search_index.plain_math), the PDF's bookmarks in JS (plainMath): the two
    readings of every formula in the built pages must be the same."""
    from bs4 import BeautifulSoup

    formulas = set()
    for name in search_index.toc_docnames(ROOT):
        path = site / f"{name}.html"
        if path.is_file():
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            formulas.update(el.get_text() for el in soup.select(".math"))
    formulas = sorted(formulas)
    assert len(formulas) > 200, f"only {len(formulas)} formulas found in the built pages"
    r = reader("search")
    js = r.page.evaluate("texs => texs.map(t => window.normlab.plainMath(t))", formulas)
    differ = [(t, p, j) for t, p, j in zip(formulas, (search_index.plain_math(t) for t in formulas), js, strict=True)
              if p != j]
    assert not differ, f"{len(differ)} formulas read differently (tex, python, js): {differ[:5]}"
