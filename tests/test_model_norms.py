"""The page "What models actually do" (book/models.md) and its data (normlab_core/data/model_norms.json).

The table on the page is parsed back from the Markdown and compared with the data cell by cell; every cell names
sources that exist, every source has its entry in book/references.bib, and every value a cell
claims from code or configuration is shown by a line copied from that file at the cited commit (stored in the data
as `quotes`), which the test reads independently of the cell's text.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from test_references import ROLE

from scripts import cite_roles
from scripts import model_norms_page as mnp

ROOT = Path(__file__).resolve().parents[1]

DATA = mnp.load()
PAGE = (ROOT / "book" / "models.md").read_text(encoding="utf-8")
KEYS = [c["key"] for c in DATA["columns"]]
NUMBER = re.compile(r"\b\d+(?:\.\d+)?e-0*\d+\b")
MODELS = ["GPT-2", "LLaMA 1", "LLaMA 2", "LLaMA 3", "Gemma 2", "OLMo 2", "Qwen2.5", "DeepSeek-V3"]


def page_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(header cells, body rows) of the first pipe table in `text`, read straight from the Markdown."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| Model |"))
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip().strip("|").split("|")])
    header, rule, body = rows[0], rows[1], rows[2:]
    assert all(set(c) <= {"-", ":"} for c in rule), rule
    return header, body


def numbers(text: str) -> set[float]:
    return {float(n) for n in NUMBER.findall(text)}


def bibliography() -> list[str]:
    """Each entry of book/references.bib as 'Title' (the title is what a source's `bib` string must carry)."""
    return [e["title"] for e in cite_roles.read_bib().values()]


def test_the_rows_are_the_models_asked_for_in_order():
    assert [m["model"] for m in DATA["models"]] == MODELS
    assert len({m["id"] for m in DATA["models"]}) == len(MODELS)


def test_page_table_equals_the_data():
    header, body = page_table(PAGE)
    assert header == ["Model"] + [c["label"] for c in DATA["columns"]]
    assert [row[0] for row in body] == [m["model"] for m in DATA["models"]]
    for row, m in zip(body, DATA["models"], strict=True):
        assert row[1:] == [m[k]["text"] for k in KEYS], m["model"]


def test_generated_part_of_the_page_is_up_to_date():
    """Notes and sources too: the block between the markers is exactly what the script writes from the data."""
    assert mnp.splice(PAGE, mnp.render(DATA)) == PAGE, "run python -m scripts.model_norms_page"
    assert PAGE.count(mnp.BEGIN) == 1 and PAGE.count(mnp.END) == 1


def test_the_table_check_catches_a_changed_cell():
    changed = copy.deepcopy(DATA)
    changed["models"][1]["epsilon"]["text"] = "1e-5"
    page = mnp.splice(PAGE, mnp.render(changed))
    header, body = page_table(page)
    assert body[1][1:] != [DATA["models"][1][k]["text"] for k in KEYS]
    assert mnp.splice(PAGE, mnp.render(DATA)) != page


def test_every_cell_names_sources_that_exist():
    for m in DATA["models"]:
        assert m["note"].strip() and m["version"].strip(), m["model"]
        for k in KEYS:
            cell = m[k]
            assert cell["text"].strip(), (m["model"], k)
            assert cell["sources"], f"{m['model']} / {k} names no source"
            assert set(cell["sources"]) <= set(DATA["sources"]), (m["model"], k)
            for q in cell["quotes"]:
                assert q["source"] in cell["sources"], (m["model"], k, q)


def test_every_source_says_where_it_was_read():
    for sid, src in DATA["sources"].items():
        assert src["kind"] in {"code", "paper", "discussion"}, sid
        if src["kind"] == "code":
            assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), sid
            assert src["url"] == f"https://github.com/{src['repo']}/blob/{src['commit']}/{src['path']}", sid
        elif src["kind"] == "paper":
            assert src["section"].strip() and src["url"].startswith("https://"), sid
        else:
            assert src["url"].startswith("https://"), sid


def test_every_source_has_its_entry_in_the_bibliography():
    titles = bibliography()
    for sid, src in DATA["sources"].items():
        title = mnp.title(src["bib"])
        found = [t for t in titles if t == title or t.startswith(title + ":")]
        assert len(found) == 1, f"{sid}: {title!r} is not (once) a title in book/references.bib"


def test_citations_on_the_page_name_listed_works():
    keys = set(cite_roles.read_bib())
    cited = {k.strip() for m in ROLE.finditer(PAGE) for k in m.group(1).split(",")}
    assert cited and cited <= keys, sorted(cited - keys)


def test_quoted_lines_show_the_values():
    """Each stored line of code or configuration contains the part that shows the cell's value."""
    count = 0
    for m in DATA["models"]:
        for k in KEYS:
            for q in m[k]["quotes"]:
                assert q["value"] and q["value"] in q["excerpt"], (m["model"], k, q)
                assert q["line"] >= 0
                count += 1
    assert count >= 40


def test_epsilon_cells_agree_with_their_quoted_lines():
    """Every epsilon a quoted line shows is one the cell states; every epsilon the cell states is shown by a quoted
    line, or the cell cites a discussion that reports it (a checkpoint file this book could not open)."""
    for m in DATA["models"]:
        cell = m["epsilon"]
        stated = numbers(cell["text"])
        shown = set().union(*(numbers(q["excerpt"]) for q in cell["quotes"])) if cell["quotes"] else set()
        assert stated, m["model"]
        assert shown <= stated, (m["model"], shown, stated)
        reported = any(DATA["sources"][s]["kind"] == "discussion" for s in cell["sources"])
        assert stated <= shown or reported, (m["model"], stated - shown)


def test_a_few_values_against_the_released_lines():
    """Spot checks of single values against the copied lines themselves (not the cells' wording)."""
    rows = {m["id"]: m for m in DATA["models"]}

    def excerpts(model, key):
        return [q["excerpt"] for q in rows[model][key]["quotes"]]

    assert "def norm(x, scope, *, axis=-1, epsilon=1e-5):" in excerpts("gpt2", "epsilon")
    assert any("(x - u)" in e for e in excerpts("gpt2", "norm"))                   # LayerNorm centres
    for model in ("llama1", "llama2", "llama3", "qwen25", "deepseekv3"):           # RMSNorm: no mean subtracted
        assert excerpts(model, "norm"), model
        assert all(("rsqrt" in e or "rms_norm" in e) and "- u" not in e for e in excerpts(model, "norm")), model
    assert "layer_norm_eps: 1e-6" in excerpts("olmo2", "epsilon")
    assert "norm_after: true" in excerpts("olmo2", "placement")
    assert "attention_layer_norm: true" in excerpts("olmo2", "qk_norm")
    assert any("(1 + scale)" in e for e in excerpts("gemma2", "norm"))
    assert any("post_attention_norm" in e for e in excerpts("gemma2", "placement"))
    assert "use_qk_norm: bool = False" in excerpts("gemma2", "qk_norm")
    assert any("q_proj" in e and "bias=True" in e for e in excerpts("qwen25", "bias"))
    assert any("o_proj" in e and "bias=False" in e for e in excerpts("qwen25", "bias"))
    assert any("kv_norm = RMSNorm" in e for e in excerpts("deepseekv3", "placement"))


@pytest.mark.parametrize("model", MODELS)
def test_each_model_has_its_note_and_sources_on_the_page(model):
    assert f"**{model}** (" in PAGE
    assert f"- **{model}**\n  - " in PAGE


def test_page_is_in_the_table_of_contents_after_does_it_train():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "- file: notebooks/11_does_it_train\n      - file: book/models\n" in toc
    assert PAGE.startswith("# What models actually do\n")


# -- the figure (scripts/models_figure.py) ---------------------------------------------------------------------------
FIGURE = re.compile(r"```\{figure\} (\S+)\n:alt: (.+)\n")
# the alt text's clauses, "Label: who", and the column of the figure each describes
ALT_PLACES = {"Sublayer input": "input", "Sublayer output": "output",
              "Stream after each addition (post-norm)": "stream", "Final norm": "final", "Queries and keys": "qk"}


def alt_models(who: str) -> set[str]:
    """The models an alt-text clause names: 'none', 'every model', 'every model but A and B', 'A only', 'A and B'."""
    if who == "none":
        return set()
    every = who.startswith("every model")
    named = who.removeprefix("every model").removeprefix(" but ").removesuffix(" only")
    names = {n for n in re.split(r", | and ", named) if n}
    assert names <= set(MODELS), f"the alt text names an unknown model: {names - set(MODELS)}"
    return set(MODELS) - names if every else names


def page_figure() -> tuple[str, str]:
    found = FIGURE.findall(PAGE)
    assert len(found) == 1, "book/models.md should show one figure, near the top"
    return found[0]


def test_the_page_shows_the_generated_figure_first():
    from scripts import models_figure

    path, alt = page_figure()
    assert (ROOT / "book" / path).resolve() == models_figure.OUT
    before = PAGE[:PAGE.index("```{figure}")]
    assert len(before.split()) < 120, "the figure should come right after the opening paragraph"
    assert len(alt.split()) >= 40
    # drawn at 100 dpi for screens, it would print under 200 ppi: on paper the table below carries the same facts
    assert ":figclass: nl-screen-only\n" in PAGE[PAGE.index("```{figure}"):PAGE.index("```{figure}") + 2000]


def test_the_figure_grid_agrees_with_the_alt_text():
    """The alt text on the page says, per column, which models have a norm there; the grid the figure draws from the
    data agrees clause by clause (run python -m scripts.models_figure and edit the alt text when the data change)."""
    from scripts import models_figure

    rows = models_figure.grid(DATA)
    clauses = dict(c.split(": ", 1) for c in re.split(r"\.\s+", page_figure()[1].rstrip(".")) if ": " in c)
    for label, place in ALT_PLACES.items():
        assert alt_models(clauses[label]) == {r["model"] for r in rows if r["places"][place]}, label
    for kind in models_figure.NORMS:
        assert alt_models(clauses[kind]) == {r["model"] for r in rows if r["norm"] == kind}, kind
    assert [r["year"] for r in rows] == sorted(r["year"] for r in rows), "rows are oldest first"


def test_the_figure_grid_against_the_released_lines():
    """Places read from the table's wording, checked against lines copied from the released code and configs."""
    from scripts import models_figure

    rows = {r["model"]: r for r in models_figure.grid(DATA)}
    quotes = {m["model"]: " ".join(q["excerpt"] for k in KEYS for q in m[k]["quotes"]) for m in DATA["models"]}
    assert "norm_after: true" in quotes["OLMo 2"] and "attention_layer_norm: true" in quotes["OLMo 2"]
    assert rows["OLMo 2"]["places"] == {"input": False, "output": True, "stream": False, "final": True, "qk": True}
    assert "post_attention_norm" in quotes["Gemma 2"]
    assert rows["Gemma 2"]["places"]["input"] and rows["Gemma 2"]["places"]["output"]
    assert "(x - u)" in quotes["GPT-2"] and rows["GPT-2"]["norm"] == "LayerNorm"
    assert rows["GPT-2"]["year"] == 2019 and rows["DeepSeek-V3"]["year"] == 2024


def test_the_figure_refuses_wording_it_cannot_place():
    from scripts import models_figure

    changed = copy.deepcopy(DATA)
    changed["models"][0]["placement"]["text"] = "somewhere else"
    with pytest.raises(ValueError, match="GPT-2.*placement names no norm"):
        models_figure.grid(changed)
    changed = copy.deepcopy(DATA)
    changed["models"][0]["norm"]["text"] = "BatchNorm"
    with pytest.raises(ValueError, match="norm should start with one of"):
        models_figure.grid(changed)
    changed["models"][0]["version"] = "no year here"
    with pytest.raises(ValueError, match="version should name one year"):
        models_figure.year(changed["models"][0])


def test_the_figure_is_drawn_to_be_shown_at_its_size(tmp_path):
    """At most 420 px wide, like the landing figure, so that a phone shows it at 0.8 of its pixels or more."""
    from PIL import Image

    from scripts import models_figure

    out = tmp_path / "figure.png"
    assert models_figure.draw(out, DATA) == models_figure.grid(DATA)
    width, height = Image.open(out).size
    assert 300 <= width <= 420 and height >= 250, (width, height)
