"""The checking line folds away on screen and comes back on paper and in search (marker `browser`, the built site).

Two kinds of folded block: the "Check the figures" admonitions (MyST `:class: dropdown`, folded by
sphinx-togglebutton) and the code cells tagged hide-cell or hide-input (myst-nb's <details>). On a built page that
has both (23.9), at 1280x900 and 390x844:

* on screen every one is closed, and the text inside is not shown;
* the keyboard opens and closes one (Tab stop, Enter);
* in print every one is open: in print media with the print stylesheet alone (no script), after the page's
  `beforeprint` handlers, and in the PDF Chromium prints (the text inside is in it);
* the search box finds a word that is only inside a folded block, and the page opened from that result shows it.
"""

from __future__ import annotations

import io
import re

import pytest
from browser_support import DESKTOP, PHONE

pytestmark = pytest.mark.browser

PAGE = "notebooks/09_key_takeaways"

# The state of the page's folded blocks: how many of each kind, how many are closed, and whether a sample of the
# text inside the first admonition is shown (rendered with a size and not hidden).
FOLDS = """() => {
  const article = document.querySelector('article.bd-article');
  const adm = Array.from(article.querySelectorAll('.admonition.dropdown'));
  const cells = Array.from(article.querySelectorAll('div.cell details.hide'));
  const inside = adm.length ? adm[0].querySelector('.admonition-title ~ *') : null;
  const code = cells.length ? cells[0].querySelector('.cell_input, .cell_output') : null;
  const shown = el => !!el && el.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true}) &&
                      el.getBoundingClientRect().height > 0;
  return {admonitions: adm.length, cells: cells.length,
          closedAdmonitions: adm.filter(a => a.classList.contains('toggle-hidden')).length,
          closedCells: cells.filter(d => !d.open).length,
          titles: Array.from(new Set(adm.map(a => a.querySelector('.admonition-title').textContent.trim()))),
          insideShown: shown(inside), codeShown: shown(code),
          insideText: inside ? inside.textContent : ''};
}"""


def _folds(page) -> dict:
    return page.evaluate(FOLDS)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_folded_blocks_are_closed_on_screen_and_open_in_print(reader, size):
    r = reader(PAGE, viewport=DESKTOP if size == "desktop" else PHONE, phone=size == "phone")
    page = r.page
    f = _folds(page)
    assert f["admonitions"] >= 5 and f["cells"] >= 5, f"{PAGE} should fold its checking line: {f}"
    assert f["titles"] == ["Check the figures"], f"every folded admonition is titled the same: {f['titles']}"
    assert f["closedAdmonitions"] == f["admonitions"] and f["closedCells"] == f["cells"], f
    assert not f["insideShown"] and not f["codeShown"], "a closed block shows its content on screen"
    # a folded admonition takes little room: its title bar only
    height = page.evaluate(
        "() => document.querySelector('article .admonition.dropdown').getBoundingClientRect().height")
    assert height < 90, f"a closed 'Check the figures' block is {height:.0f} px tall"

    # print media, the stylesheet alone: everything is shown
    page.emulate_media(media="print")
    f = _folds(page)
    assert f["insideShown"] and f["codeShown"], f"print layout hides folded content (stylesheet alone): {f}"
    # the page's own print handlers open every block, and put them back afterwards
    page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    f = _folds(page)
    assert f["closedAdmonitions"] == 0 and f["closedCells"] == 0, f"beforeprint left blocks closed: {f}"
    page.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    f = _folds(page)
    assert f["closedAdmonitions"] == f["admonitions"] and f["closedCells"] == f["cells"], (
        f"after printing the blocks should be closed again: {f}")
    assert not r.all_problems, r.all_problems


def test_the_keyboard_opens_and_closes_a_folded_block(reader):
    page = reader(PAGE).page
    button = page.locator("article .admonition.dropdown button.toggle-button").first
    button.focus()
    assert page.evaluate("() => document.activeElement.classList.contains('toggle-button')")
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    page.keyboard.press("Enter")
    assert _folds(page)["insideShown"], "Enter on the focused 'Check the figures' button does not open it"
    assert button.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Enter")
    assert not _folds(page)["insideShown"], "Enter again does not close it"
    assert outline != "none" or page.evaluate(
        "() => getComputedStyle(document.activeElement).outlineStyle") != "none", "no focus ring"
    summary = page.locator("article div.cell details.hide > summary").first
    summary.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.querySelector('article div.cell details.hide').open")


def test_the_pdf_of_a_page_holds_its_folded_text(reader):
    """Chromium's own print of the page (as scripts/make_pdf.py prints it) has the folded text in it."""
    from pypdf import PdfReader

    page = reader(PAGE).page
    inside = _folds(page)["insideText"]
    words = re.findall(r"[A-Za-z]{6,}", inside)[:6]
    assert words, inside
    page.evaluate("() => window.normlab.openFolds()")
    pdf = page.pdf(format="A4", print_background=True, prefer_css_page_size=True)
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages))
    missing = [w for w in words if w not in text]
    assert not missing, f"the printed page lacks folded words {missing}"
    code = page.evaluate("() => document.querySelector('article div.cell details.hide .cell_input').textContent")
    token = max(re.findall(r"[A-Za-z_]{8,}", code), key=len)
    assert token in text.replace(" ", "") or token in text, f"the printed page lacks the folded code ({token})"


def test_search_finds_text_inside_a_folded_block_and_the_page_shows_it(reader):
    page = reader(PAGE).page
    # a word of the folded text that the main line of the page does not have
    words = page.evaluate("""() => {
      const article = document.querySelector('article.bd-article');
      const folded = Array.from(article.querySelectorAll('.admonition.dropdown')).map(a => a.textContent).join(' ');
      const clone = article.cloneNode(true);
      clone.querySelectorAll('.admonition.dropdown, details, pre, .math, script').forEach(e => e.remove());
      const main = clone.textContent.toLowerCase();
      return Array.from(new Set(folded.match(/[A-Za-z]{7,}/g) || [])).filter(w => !main.includes(w.toLowerCase()));
    }""")
    assert words, "no word found only inside the folded blocks"
    term = words[0]
    search = reader("search").page
    box = search.locator("#main-content input[name=q], .bd-search-container input[name=q]").last
    box.fill(term)
    box.press("Enter")
    search.wait_for_function("() => /Search finished|did not match/i.test((document.getElementById('search-results')"
                             " || {}).textContent || '')", timeout=20000)
    link = search.locator(f"#search-results a[href^='{PAGE}.html']").first
    assert link.count(), f"searching {term!r} (only in a folded block of {PAGE}) does not list that page"
    link.click()
    search.wait_for_url(re.compile(re.escape(PAGE) + r"\.html"), timeout=20000)
    search.wait_for_load_state("load")
    search.wait_for_timeout(300)
    shown = search.evaluate("""() => Array.from(document.querySelectorAll('article .highlighted')).some(m =>
      m.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true}))""")
    assert shown, f"the page opened from the result for {term!r} keeps the found text folded away"
