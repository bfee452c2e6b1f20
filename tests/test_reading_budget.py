"""The reading budgets (scripts/reading_budget.py) hold on the built site, as a ratchet.

A page over a budget that NOT_YET_REWRITTEN does not declare fails; so does a declared (page, budget) pair that is no
longer over (its line must go, so the list only shrinks). The counting rules are checked first without a browser, on
sentences whose counts are known by hand."""

from __future__ import annotations

import re

import nbformat
import pytest

from scripts import reading_budget as rb
from scripts.toc import toc_pages


def test_words_are_tokens_with_a_letter_or_digit():
    assert rb.word_count(["LayerNorm takes its mean — over one token.", "x = 3"]) == 9


def test_numbers_skip_section_names_and_digits_in_words():
    s = "In 23.4 float32 gives 0.999997, GPT-2 and DeepSeek-V3 agree, and 1,000 steps of 1e-5 at depth 32 remain."
    assert rb.numbers_in(s) == ["0.999997", "1,000", "1e-5", "32"]


def test_sentences_with_four_numbers_are_found_and_others_are_not():
    texts = ["The norm grows from 6.660 at depth 1 to 43.507 at depth 32. It stays flat at 2.",
             "Version 23.4 of figure 23-2 shows three layers."]
    assert rb.number_sentences(texts) == ["The norm grows from 6.660 at depth 1 to 43.507 at depth 32."]


def test_source_mentions():
    assert rb.source_mentions(["The reference text says so; the reference programs print it.",
                               "A Reference Program ran.", "The reference is elsewhere."]) == 3


def _page(name, **kw):
    values = {"title": "23.5 x", "words": 100, "screens": 3.0, "first_figure": 0.5}
    values.update(kw)
    return rb.Page(name=name, **values)


def test_budgets_and_the_ratchet():
    pages = [_page("book/intro", title="normlab", words=900, first_figure=None),
             _page("notebooks/05_rms_norm", words=1600, screens=12.0, first_figure=2.5,
                   number_sentences=["a", "b"], source_mentions=3),
             _page("book/glossary", title="Glossary", words=50000, first_figure=None),
             *[_page(f"notebooks/0{n}_x", title=f"23.{n} x", words=1400) for n in (1, 2, 3, 4, 6, 7)]]
    over = rb.over_budget(pages, "book/intro")
    assert over == {("book/intro", "first figure"), ("notebooks/05_rms_norm", "words"),
                    ("notebooks/05_rms_norm", "screens"), ("notebooks/05_rms_norm", "first figure"),
                    ("notebooks/05_rms_norm", "number sentences"), ("notebooks/05_rms_norm", "source mentions"),
                    (rb.CORE, "words")}
    assert rb.verdict(over, allowed=over) == []
    # an undeclared pair over budget fails; a declared pair within its budget fails and says to remove it
    problems = rb.verdict(over - {("book/intro", "first figure")}, allowed=over - {(rb.CORE, "words")})
    assert len(problems) == 2
    assert any("core" in p and "10000" in p for p in problems)
    assert any("remove ('book/intro', 'first figure') from NOT_YET_REWRITTEN" in p for p in problems)


def test_code_wider_than_the_column_is_over_its_budget_and_says_how_to_fix_it():
    page = rb.page_from("notebooks/05_rms_norm", {"texts": ["A short page."], "figure": 10, "height": 900,
                                                  "title": "23.5 RMSNorm", "wide": ["EPS = 1e-5  # a long line"]})
    assert page.values()["wide code"] == 1 and page.over() == ["wide code"]
    problems = rb.verdict({("notebooks/05_rms_norm", "wide code")}, allowed=set())
    assert len(problems) == 1 and "wrap those lines" in problems[0]
    assert "'EPS = 1e-5  # a long line'" in rb.table([page], "book/intro")


def test_the_exercises_page_has_its_screens_per_exercise_of_the_source(monkeypatch):
    """A new exercise in the source notebook gives the exercises page room for it; other pages keep ten screens."""
    from scripts.make_exercises import ASSIGNMENT, COURSE, NOTEBOOK

    source = nbformat.read(COURSE / "source" / ASSIGNMENT / NOTEBOOK, as_version=4)
    headings = sorted(int(m.group(1)) for c in source.cells if c.cell_type == "markdown"
                      if (m := re.match(r"## Exercise (\d+)", c.source)))
    assert rb.exercise_count() == len(headings) >= 8
    page = _page(rb.EXERCISES_PAGE, title="23.10 Exercises", screens=10.8)
    monkeypatch.setattr(rb, "exercise_count", lambda: 8)
    assert page.over() == ["screens"]                                   # 10.8 > 8 * 1.25
    problem = rb.verdict({(rb.EXERCISES_PAGE, "screens")}, allowed=set())[0]
    assert "budget of 10 page height" in problem and "per exercise" in problem, problem
    monkeypatch.setattr(rb, "exercise_count", lambda: 9)
    assert page.over() == []                                            # 10.8 <= 9 * 1.25
    assert _page("notebooks/05_rms_norm", screens=10.8).over() == ["screens"]


def test_the_declared_pages_are_pages_of_the_book():
    pages = set(toc_pages()) | {rb.CORE}
    assert {page for page, _ in rb.NOT_YET_REWRITTEN} <= pages
    assert {budget for _, budget in rb.NOT_YET_REWRITTEN} <= set(rb.BUDGETS)


@pytest.mark.browser
def test_every_page_is_within_its_reading_budget_or_declared(browser, site):
    """One page load per page at 1280x900 (scripts/reading_budget.measure); the table is printed on failure."""
    root = toc_pages()[0]
    pages = rb.measure(site, browser=browser)
    problems = rb.verdict(rb.over_budget(pages, root))
    assert not problems, ("reading budgets (see `make reading-budget` for the table):\n" + rb.table(pages, root)
                          + "\n\n" + "\n".join(problems))
