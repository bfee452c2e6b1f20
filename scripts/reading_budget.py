"""The reading budgets of the book, measured on the built site: `python -m scripts.reading_budget [_build/html]`
(`make reading-budget`).

Every page of _toc.yml is opened in Chromium (scripts/browser.py) at 1280x900 with every folded block closed
(the "Check the figures" admonitions and the cells whose code or whole cell is hidden), and its *main line* is read:
the prose a reader meets without opening anything. Code, printed outputs, maths, explorables and folded blocks are
not prose. Per page it measures

* words: whitespace-separated tokens with a letter or a digit in them;
* screens: the page's height divided by 900;
* first figure: where the first figure or explorable starts, in screens from the top (a picture in the article
  that is shown without opening anything);
* number sentences: sentences with four or more numbers (section and figure names such as 23.4 and 23-2, and
  digits glued to a word such as float32 or GPT-2, are not numbers);
* source mentions: "reference text" and "reference program(s)";

and the core total: the words of the intro and sections 23.1-23.9 (the pages whose title starts 23.1 ... 23.9).

The budgets (BUDGETS): the core at most 10,000 words; no section over 1,500 words or 10 screens (the exercises
page: SCREENS_PER_EXERCISE screens per exercise of the source notebook, so it grows with them); the first figure
or explorable within the first two screens; at most one sentence with four or more numbers and at most two source
mentions per section. The reference pages (REFERENCE_PAGES: looked up, not read through) have no per-page budget.

Pages not yet rewritten exceed them. NOT_YET_REWRITTEN declares each (page, budget) pair still allowed to be over,
and only those: the script exits 1 when any other pair is over, and also when a declared pair is no longer over
(remove it from the list: the list only shrinks). tests/test_reading_budget.py runs the same check.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scripts.toc import toc_pages

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1280, "height": 900}
CORE = "core"   # the name of the core total in the table and in NOT_YET_REWRITTEN

# budget name -> (limit, what it means)
BUDGETS = {
    "words": (1500, "words of prose in the main line"),
    "screens": (10, "page height in screens of 900 px"),
    "first figure": (2, "screens down to the first figure or explorable"),
    "number sentences": (1, "main-line sentences with four or more numbers"),
    "source mentions": (2, 'main-line mentions of "reference text" or "reference program(s)"'),
    "wide code": (0, "lines of code shown open that are wider than the column"),
}
CORE_WORDS = 10_000
# The exercises page holds every exercise of the source notebook, so its screens grow with them: eight exercises
# filled a section's ten screens, and each exercise is allowed that share (the words budget stays a section's).
EXERCISES_PAGE = "notebooks/10_exercises"
SCREENS_PER_EXERCISE = 1.25
# Pages a reader looks things up in rather than reads through: no per-page budget.
REFERENCE_PAGES = ("book/glossary", "book/instructors", "book/references")

# (page, budget) pairs still over their budget because the page has not been rewritten yet. The check fails when a
# pair outside this list is over, and when a pair of this list is no longer over: then delete its line.
NOT_YET_REWRITTEN: set[tuple[str, str]] = set()


def exercise_count() -> int:
    """How many exercises the source notebook of the assignment holds (its "## Exercise N" headings)."""
    import nbformat

    from scripts.make_exercises import ASSIGNMENT, COURSE, NOTEBOOK, exercise_of_cells

    source = nbformat.read(COURSE / "source" / ASSIGNMENT / NOTEBOOK, as_version=4)
    return len({n for n in exercise_of_cells(source) if n is not None})


def limit(page: str, budget: str) -> float:
    """The page's limit for this budget: BUDGETS', but the exercises page's screens are per exercise."""
    if page == EXERCISES_PAGE and budget == "screens":
        return SCREENS_PER_EXERCISE * exercise_count()
    return BUDGETS[budget][0]


# -- reading the main line of a loaded page (in the browser) -----------------------------------------------------
# Not prose: code, outputs, maths, explorables, folded blocks, and the page's furniture.
NOT_PROSE = ", ".join([
    "pre", ".cell_input", ".cell_output", "div.highlight", ".math", ".MathJax", ".MathJax_Display",
    ".MathJax_Preview", ".MJX_Assistive_MathML", "mjx-container", "script", "style", "noscript",
    ".normlab-explorable", ".nl-questions", "details", ".admonition.toggle", ".admonition.dropdown", ".headerlink",
    ".prev-next-area", ".prev-next-footer", "nav", "#jb-print-docs-body", ".nl-print-only", ".nl-back-to-top",
    "button", ".toggle-details",
])
# A figure: a picture of the article shown without opening anything (an explorable counts by its frame).
FIGURES = "img, svg.nl-figure, .normlab-explorable, figure"
BLOCKS = "p, li, dt, dd, td, th, figcaption, h1, h2, h3, h4, h5, h6, caption, blockquote, div"

READ = """([notProse, figures, blocks]) => {
  const article = document.querySelector('article.bd-article') || document.body;
  // every folded block closed, as a first reading finds them
  article.querySelectorAll('details[open]').forEach(d => { d.open = false; });
  article.querySelectorAll('.admonition.toggle:not(.toggle-hidden) button.toggle-button').forEach(b => b.click());
  const texts = [];
  let current = [];
  const flush = () => { const t = current.join('').replace(/\\s+/g, ' ').trim(); if (t) texts.push(t); current = []; };
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) { current.push(child.data); continue; }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;
      if (child.matches(notProse)) { current.push(' '); continue; }
      if (!child.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true})) continue;
      const block = child.matches(blocks);
      if (block) flush();
      walk(child);
      if (block) flush();
    }
  };
  walk(article);
  flush();
  let figure = null;
  for (const el of article.querySelectorAll(figures)) {
    if (el.closest('details, .admonition.toggle, .admonition.dropdown, button, a.headerlink')) continue;
    if (!el.checkVisibility({visibilityProperty: true})) continue;
    const box = el.getBoundingClientRect();
    if (box.width < 40 || box.height < 40) continue;   // an icon, not a figure
    figure = box.top + window.scrollY;
    break;
  }
  // "Check yourself" (the questions at the end, and their heading) is not reading: its height is left out
  let questions = 0;
  for (const q of article.querySelectorAll('.nl-questions')) questions += (q.closest('div.cell') || q).offsetHeight;
  const asked = article.querySelector('section#check-yourself > h2');
  if (questions && asked) questions += asked.offsetHeight;
  const height = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight) - questions;
  const title = (article.querySelector('h1') || {textContent: ''}).textContent.replace(/[#\\s]+$/, '').trim();
  // code a reader sees without opening anything, cut off at the column's edge (printed output may scroll)
  const wide = [];
  for (const pre of article.querySelectorAll('pre')) {
    if (pre.closest('.cell_output, .output, details, .admonition.dropdown, .normlab-explorable')) continue;
    if (!pre.checkVisibility({visibilityProperty: true}) || pre.scrollWidth <= pre.clientWidth + 1) continue;
    const longest = pre.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '');
    wide.push(longest.trim().slice(0, 60));
  }
  return {texts, figure, height, title, wide};
}"""


# -- counting (plain Python, tested without a browser) ------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF]")
# a number: digits with decimals or thousands separators, or a mantissa with an exponent; not glued to a word
# (float32, GPT-2, DeepSeek-V3) and not a section or figure name (23.4, 23-2)
_NUMBER = re.compile(r"(?<![\w\-\u2011.])(?:\d+(?:[.,]\d+)*(?:e[-+\u2212]?\d+)?)(?![\w\-\u2011]*[A-Za-z])")
_NAME = re.compile(r"(?<![\w.])23[.\-\u2011]\d{1,2}(?![\d])")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z\u0391-\u03A9(\[\"'\u201c])")
_SOURCE = re.compile(r"\breference\s+(?:text|programs?)\b", re.I)


def word_count(texts: list[str]) -> int:
    return sum(1 for t in texts for token in t.split() if _WORD.search(token))


def sentences(text: str) -> list[str]:
    """The sentences of one block of prose (split after . ! ? before a capital or an opening bracket)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def numbers_in(sentence: str) -> list[str]:
    return _NUMBER.findall(_NAME.sub(" ", sentence))


def number_sentences(texts: list[str], at_least: int = 4) -> list[str]:
    """The sentences with `at_least` numbers or more."""
    return [s for t in texts for s in sentences(t) if len(numbers_in(s)) >= at_least]


def source_mentions(texts: list[str]) -> int:
    return sum(len(_SOURCE.findall(t)) for t in texts)


@dataclass
class Page:
    name: str
    title: str
    words: int
    screens: float
    first_figure: float | None   # in screens from the top; None: no figure
    number_sentences: list[str] = field(default_factory=list)
    source_mentions: int = 0
    wide_code: list[str] = field(default_factory=list)   # the longest line of each code block cut off

    def values(self) -> dict:
        return {"words": self.words, "screens": self.screens, "first figure": self.first_figure,
                "number sentences": len(self.number_sentences), "source mentions": self.source_mentions,
                "wide code": len(self.wide_code)}

    def over(self) -> list[str]:
        """The budgets this page exceeds (none for a reference page)."""
        if self.name in REFERENCE_PAGES:
            return []
        out = []
        for budget, value in self.values().items():
            if value is None or value > limit(self.name, budget):   # no figure at all is over the first-figure budget
                out.append(budget)
        return out


def page_from(name: str, read: dict) -> Page:
    texts = read["texts"]
    return Page(name=name, title=read["title"], words=word_count(texts),
                screens=round(read["height"] / VIEWPORT["height"], 1),
                first_figure=None if read["figure"] is None else round(read["figure"] / VIEWPORT["height"], 2),
                number_sentences=number_sentences(texts), source_mentions=source_mentions(texts),
                wide_code=list(read.get("wide", [])))


def is_core(page: Page, root: str) -> bool:
    """The intro (the book's root page) and the sections 23.1 to 23.9, told by their titles."""
    return page.name == root or re.match(r"23\.[1-9](?!\d)", page.title) is not None


def core_words(pages: list[Page], root: str) -> int:
    return sum(p.words for p in pages if is_core(p, root))


def over_budget(pages: list[Page], root: str) -> set[tuple[str, str]]:
    """Every (page, budget) pair over its budget, with (CORE, "words") for the core total."""
    out = {(p.name, b) for p in pages for b in p.over()}
    if core_words(pages, root) > CORE_WORDS:
        out.add((CORE, "words"))
    return out


def verdict(over: set[tuple[str, str]], allowed: set[tuple[str, str]] = NOT_YET_REWRITTEN) -> list[str]:
    """What is wrong, as sentences: pairs over budget that are not declared, declared pairs no longer over."""
    problems = []
    for page, budget in sorted(over - allowed):
        most = CORE_WORDS if page == CORE else limit(page, budget)
        advice = ("wrap those lines (77 characters fit) or fold the cell (tag hide-input or hide-cell)"
                  if budget == "wide code" else
                  "shorten the main line or fold the checking into a 'Check the figures' block")
        if page == EXERCISES_PAGE and budget == "screens":
            advice = (f"{SCREENS_PER_EXERCISE} screens per exercise: fold what an exercise shows open (data, "
                      "hints) into a hidden cell or a dropdown")
        problems.append(f"{page}: over its budget of {most:g} {BUDGETS[budget][1] if page != CORE else 'core words'}"
                        f" ({budget}); {advice}")
    for page, budget in sorted(allowed - over):
        problems.append(f"{page}: now within its '{budget}' budget; remove ({page!r}, {budget!r}) from "
                        "NOT_YET_REWRITTEN in scripts/reading_budget.py")
    return problems


def table(pages: list[Page], root: str) -> str:
    head = ("| page | words | screens | first figure | number sentences | source mentions | wide code | "
            "over budget |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---|"]
    for p in pages:
        fig = "none" if p.first_figure is None else f"{p.first_figure:.1f}"
        over = ", ".join(p.over()) if p.name not in REFERENCE_PAGES else "(reference page)"
        lines.append(f"| {p.name} | {p.words} | {p.screens:.1f} | {fig} | {len(p.number_sentences)} | "
                     f"{p.source_mentions} | {len(p.wide_code)} | {over} |")
    total = core_words(pages, root)
    lines.append(f"| **core** (intro, 23.1-23.9) | {total} | | | | | | "
                 f"{'words' if total > CORE_WORDS else ''} |")
    lines.append("")
    lines.append(f"Budgets: core <= {CORE_WORDS} words; per section words <= {BUDGETS['words'][0]}, screens <= "
                 f"{BUDGETS['screens'][0]} (the exercises page: {SCREENS_PER_EXERCISE} per exercise), "
                 f"first figure <= {BUDGETS['first figure'][0]} screens, sentences with 4+ "
                 f"numbers <= {BUDGETS['number sentences'][0]}, 'reference text/program' <= "
                 f"{BUDGETS['source mentions'][0]}, code blocks shown open with a line wider than the column <= "
                 f"{BUDGETS['wide code'][0]}.")
    for p in pages:
        if p.wide_code and p.name not in REFERENCE_PAGES:
            lines.append(f"- {p.name}: code wider than the column: " + "; ".join(repr(w) for w in p.wide_code[:4]))
    return "\n".join(lines)


# -- measuring a site -------------------------------------------------------------------------------------------------
def read_page(page, url: str) -> dict:
    """The main line of the page at `url`, loaded in a Playwright page at 1280x900 (MathJax done)."""
    page.goto(url, wait_until="load", timeout=90000)
    page.evaluate("""() => new Promise(resolve => {
      if (!document.querySelector('script[src*="mathjax/MathJax.js"]')) { resolve(); return; }
      const t0 = Date.now();
      const poll = () => {
        if (window.MathJax && MathJax.isReady && MathJax.Hub) { MathJax.Hub.Queue(resolve); return; }
        if (Date.now() - t0 > 30000) { resolve(); return; }
        setTimeout(poll, 50);
      };
      poll();
    })""")
    # every figure loaded, so that the page has its final height (lazy figures below the fold would not be yet)
    page.evaluate("""() => Promise.all(Array.from(document.images).map(img => {
      img.loading = 'eager';
      const done = img.complete ? Promise.resolve() : new Promise(r => {
        img.addEventListener('load', r, {once: true}); img.addEventListener('error', r, {once: true}); });
      return done.then(() => img.decode()).catch(() => null);
    }))""")
    return page.evaluate(READ, [NOT_PROSE, FIGURES, BLOCKS])


def measure(site: Path, pages: list[str] | None = None, browser=None) -> list[Page]:
    """Every page of _toc.yml (or `pages`) of the built `site`, measured (one page load each). `browser`: a
    running Playwright browser to use, else one is launched (scripts/browser.py)."""
    from scripts.browser import SiteServer, confine, driven_browser, launch

    names = pages or toc_pages()
    problems: list[str] = []
    out = []
    with SiteServer(Path(site)) as server:
        def run(b):
            context = b.new_context(viewport=VIEWPORT, color_scheme="light")
            confine(context, (server.base,), problems)
            tab = context.new_page()
            for name in names:
                if not (Path(site) / f"{name}.html").is_file():
                    raise FileNotFoundError(f"{site}/{name}.html is missing: run `make book`")
                out.append(page_from(name, read_page(tab, server.base + name + ".html")))
            context.close()

        if browser is not None:
            run(browser)
        else:
            from playwright.sync_api import sync_playwright

            executable = driven_browser()
            if executable is None:
                raise RuntimeError("no Chromium found: apt-get install chromium (scripts/browser.py)")
            with sync_playwright() as pw:
                b = launch(pw, executable)
                try:
                    run(b)
                finally:
                    b.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--sentences", action="store_true", help="also list the sentences with 4+ numbers")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"reading_budget: {site} has no index.html; run `make book` first", file=sys.stderr)
        return 1
    root = toc_pages()[0]
    pages = measure(site)
    print(table(pages, root))
    if args.sentences:
        for p in pages:
            for s in p.number_sentences:
                print(f"{p.name}: {s}")
    problems = verdict(over_budget(pages, root))
    if problems:
        print("\nreading_budget: " + "\n".join(problems), file=sys.stderr)
        return 1
    print("\nreading_budget: every page within its budget or declared as not yet rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
