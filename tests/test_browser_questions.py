""""Check yourself" in the built book, in Chromium: every section page shows its questions, built by the page's
own script from the declaration (normlab_core/questions); a right and a wrong answer get their feedback and the
explanation; the answers come back after a reload and after Back; everything works from the keyboard alone; print
shows every answer. Needs the built site (`make book`)."""

from __future__ import annotations

import pytest

from normlab_core import questions as Q
from scripts.add_question_cells import sections

PAGES = {label: f"notebooks/{stem}" for stem, label in sections().items()}
SECTION = "23.4"     # the section the interaction tests answer
pytestmark = pytest.mark.browser


def block(tab, label):
    root = tab.page.locator(f'div.nl-questions[data-section="{label}"]')
    root.locator(".nl-q-item").first.wait_for(state="attached", timeout=20000)
    return root


def item(root, qid):
    return root.locator(f'.nl-q-item[data-question="{qid}"]')


def wrong_option(q):
    return next(i for i in range(len(q.options)) if i != q.answer)


@pytest.mark.parametrize("label", list(PAGES))
def test_every_section_page_builds_its_questions(visit, label):
    """The page carries its section's questions, in order, with real radio buttons and inputs that have labels."""
    tab = visit(PAGES[label])
    root = block(tab, label)
    want = Q.questions(label)
    got = root.evaluate("""r => Array.from(r.querySelectorAll('.nl-q-item')).map(f => ({
        id: f.dataset.question, legend: f.querySelector('legend').textContent,
        radios: f.querySelectorAll('input[type=radio]').length,
        unlabelled: Array.from(f.querySelectorAll('input')).filter(i => !i.labels || !i.labels.length).length,
        live: f.querySelector('.nl-q-feedback').getAttribute('aria-live')}))""")
    assert [g["id"] for g in got] == [q.id for q in want]
    for g, q in zip(got, want, strict=True):
        assert q.prompt in g["legend"]
        assert g["radios"] == len(getattr(q, "options", ()))
        assert g["unlabelled"] == 0 and g["live"] == "polite"
    assert not tab.all_problems, "\n".join(tab.all_problems)


def test_answers_get_feedback_and_survive_reload_and_back(visit):
    tab = visit(PAGES[SECTION])
    page = tab.page
    page.evaluate("() => localStorage.clear()")
    page.wait_for_load_state("networkidle")   # no font or frame still in flight: a reload would abort it
    page.reload(wait_until="load")
    root = block(tab, SECTION)
    qs = Q.questions(SECTION)
    choice = next(q for q in qs if isinstance(q, Q.Choice))
    number = next(q for q in qs if isinstance(q, Q.Number))
    # a wrong choice: feedback names the right answer, explanation shown
    c = item(root, choice.id)
    c.locator("input[type=radio]").nth(wrong_option(choice)).check()
    c.locator("button.nl-q-check").click()
    assert c.get_attribute("data-state") == "wrong"
    assert choice.key() in c.locator(".nl-q-feedback").inner_text()
    assert c.locator(".nl-q-explain").is_visible()
    assert choice.explain in c.locator(".nl-q-explain").inner_text()
    # a right number, typed and checked with Enter
    n = item(root, number.id)
    assert not n.locator(".nl-q-explain").is_visible()
    n.locator("input").fill(f"{number.answer:.6g}")
    n.locator("input").press("Enter")
    assert n.get_attribute("data-state") == "right"
    assert n.locator(".nl-q-feedback").inner_text().startswith("Right")
    # a wrong number
    n.locator("button.nl-q-reset").click()
    assert n.get_attribute("data-state") == "" and not n.locator(".nl-q-explain").is_visible()
    n.locator("input").fill(str(number.answer + 10 * number.tol + 1))
    n.locator("button.nl-q-check").click()
    assert n.get_attribute("data-state") == "wrong"

    def kept(what):
        root = block(tab, SECTION)
        c, n = item(root, choice.id), item(root, number.id)
        assert c.get_attribute("data-state") == "wrong", what
        assert c.locator("input[type=radio]").nth(wrong_option(choice)).is_checked(), what
        assert n.get_attribute("data-state") == "wrong", what
        assert n.locator("input").input_value() == str(number.answer + 10 * number.tol + 1), what
        assert c.locator(".nl-q-explain").is_visible(), what

    page.wait_for_load_state("networkidle")   # no font or frame still in flight: a reload would abort it
    page.reload(wait_until="load")
    kept("a reload")
    page.goto(tab.server.base + "book/glossary.html", wait_until="load")
    page.go_back(wait_until="load")
    kept("Back")
    # (requests MathJax had under way when the page was left are cancelled: only the page's own errors count here)
    assert not tab.problems, "\n".join(tab.problems)


def test_questions_answer_from_the_keyboard_alone(visit):
    """Tab to a question's radio buttons, pick with the arrow keys, Tab to Check, press Space; type a number and
    press Enter. Focus is visible on every stop."""
    tab = visit(PAGES[SECTION])
    page = tab.page
    page.evaluate("() => localStorage.clear()")
    page.wait_for_load_state("networkidle")   # no font or frame still in flight: a reload would abort it
    page.reload(wait_until="load")
    root = block(tab, SECTION)
    qs = Q.questions(SECTION)
    choice = next(q for q in qs if isinstance(q, Q.Choice))
    c = item(root, choice.id)
    c.scroll_into_view_if_needed()
    # start from the element before the question's first radio, then only keys
    c.locator("legend").evaluate("l => { l.tabIndex = -1; l.focus(); }")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.type") == "radio"
    for _ in range(choice.answer):
        page.keyboard.press("ArrowDown")
    if choice.answer == 0:
        page.keyboard.press("Space")
    assert page.evaluate("() => document.activeElement.value") == str(choice.answer)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "nl-q-check"
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Space")
    assert c.get_attribute("data-state") == "right"
    number = next(q for q in qs if isinstance(q, Q.Number))
    n = item(root, number.id)
    n.locator("legend").evaluate("l => { l.tabIndex = -1; l.focus(); }")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.tagName") == "INPUT"
    page.keyboard.type(f"{number.answer:.6g}")
    page.keyboard.press("Enter")
    assert n.get_attribute("data-state") == "right"
    assert not tab.all_problems, "\n".join(tab.all_problems)


def test_print_shows_every_answer_and_explanation(visit):
    tab = visit(PAGES[SECTION])
    page = tab.page
    page.evaluate("() => localStorage.clear()")
    page.wait_for_load_state("networkidle")   # no font or frame still in flight: a reload would abort it
    page.reload(wait_until="load")
    root = block(tab, SECTION)
    page.emulate_media(media="print")
    for q in Q.questions(SECTION):
        it = item(root, q.id)
        assert it.locator(".nl-q-explain").is_visible(), q.id
        assert f"Answer: {q.key()}" in it.locator(".nl-q-explain").inner_text()
        assert not it.locator("button.nl-q-check").is_visible()
    page.emulate_media(media="screen")
    assert not item(root, Q.questions(SECTION)[0].id).locator(".nl-q-explain").is_visible()
