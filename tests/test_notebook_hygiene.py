"""Stored notebooks are clean: executed in order in a fresh python3 kernel, no errors, small, no machine paths,
and every one of them is in the book's table of contents."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from toc_support import toc_pages

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
MAX_BYTES = 1024 * 1024
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|root|home|tmp)(/|\b)")
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]+")
DISPLAYS = re.compile(r"(?<![\w.])(print|show|show_figure|show_source)\(")
EXPLORABLE_SHOW = re.compile(r"(?<![\w.])show\(")

ids = [p.stem for p in NOTEBOOKS]


def fix(path: Path) -> str:
    """The command that rewrites a notebook's stored outputs (a failing check's message ends with it)."""
    if path.stem.startswith("10_"):
        return "; regenerate it: make exercises"
    return f"; refresh its outputs: MPLBACKEND=Agg .venv/bin/python scripts/refresh_notebooks.py notebooks/{path.name}"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def tags(cell: dict) -> list:
    return cell.get("metadata", {}).get("tags", [])


def skipped(cell: dict) -> bool:
    return "nbval-skip" in tags(cell)


def source(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def output_texts(cell: dict):
    """Every text an output carries (stream text, tracebacks, text/* and JSON data), base64 payloads removed."""
    for out in cell.get("outputs", []):
        chunks = []
        if "text" in out:
            chunks.append(out["text"])
        chunks += out.get("traceback", [])
        for mime, value in out.get("data", {}).items():
            if mime.startswith("image/"):
                continue
            chunks.append(value if isinstance(value, (str, list)) else json.dumps(value))
        for chunk in chunks:
            yield DATA_URI.sub("data:BASE64", "".join(chunk) if isinstance(chunk, list) else chunk)


def test_every_page_of_the_table_of_contents_is_in_the_repository():
    """The book is _toc.yml's list of pages (tests take their notebooks from it); each one is a file here."""
    missing = [page for page in toc_pages() if not any((ROOT / f"{page}{ext}").is_file() for ext in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists pages that are not in the repository: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_listed_in_the_table_of_contents(path):
    assert f"notebooks/{path.stem}" in toc_pages(), f"{path.name} is not in _toc.yml, so no test or build sees it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_size_and_kernel(path):
    assert path.stat().st_size <= MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    nb = load(path)
    assert nb["nbformat"] == 4
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"]["kernelspec"].get("language", "python") == "python"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_executed_in_order_from_one(path):
    cells = code_cells(load(path))
    counts = [c["execution_count"] for c in cells if c.get("execution_count") is not None]
    assert counts, f"{path.name} has never been executed{fix(path)}"
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: execution counts {counts}{fix(path)}"
    for i, c in enumerate(cells):
        if skipped(c) or not source(c).strip():
            continue
        assert c.get("execution_count") is not None, f"{path.name}: code cell {i} was not executed{fix(path)}"
        for out in c.get("outputs", []):
            if "execution_count" in out:
                assert out["execution_count"] == c["execution_count"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_outputs_are_stored_and_clean(path):
    cells = code_cells(load(path))
    for i, c in enumerate(cells):
        if skipped(c):
            continue
        outs = c.get("outputs", [])
        if DISPLAYS.search(source(c)):
            assert outs, f"{path.name}: code cell {i} prints or shows something but has no stored output{fix(path)}"
        for out in outs:
            assert out["output_type"] != "error", (
                f"{path.name}: code cell {i} stored an error: {out.get('ename')}{fix(path)}")
        for text in output_texts(c):
            assert "Traceback (most recent call last)" not in text, f"{path.name}: cell {i} shows a traceback"
            m = MACHINE_PATH.search(text)
            near = text[max(0, m.start() - 40):m.end() + 40] if m else ""
            assert not m, f"{path.name}: cell {i} output shows a machine path near {near!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_sources_follow_the_book_conventions(path):
    nb = load(path)
    for i, c in enumerate(code_cells(nb)):
        src = source(c)
        assert "pyplot" not in src and "%matplotlib" not in src, f"{path.name}: cell {i} uses pyplot"
        assert "/work/shared" not in src, f"{path.name}: cell {i} reads the source material at run time"
        assert not MACHINE_PATH.search(src), f"{path.name}: cell {i} hard-codes a machine path"
        if EXPLORABLE_SHOW.search(src) and not skipped(c):
            assert "nbval-ignore-output" in tags(c), f"{path.name}: cell {i} calls show(...) untagged"
    widgets = nb["metadata"].get("widgets", {})
    assert not widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state"), (
        f"{path.name} stores widget state (execute with --ExecutePreprocessor.store_widget_state=False)")


ONLY_DISPLAYS = re.compile(r"^\s*(show|try_this|show_figure)\((?:[^()]|\([^()]*\))*\)\s*$", re.S)
SECTIONS = [p for p in NOTEBOOKS if not p.stem.startswith("10_")]


@pytest.mark.parametrize("path", SECTIONS, ids=[p.stem for p in SECTIONS])
def test_display_cells_hide_their_code_in_the_book(path):
    """A cell that only shows an explorable, its Try-this steps or a figure is plumbing: the book hides its code
    (remove-input), JupyterLab still shows it. One call per cell, so the notebook's own variables can be passed."""
    for i, c in enumerate(code_cells(load(path))):
        src = source(c)
        if ONLY_DISPLAYS.match(src):
            assert "remove-input" in tags(c), f"{path.name}: code cell {i} ({src.strip()[:40]}) shows code"
        if EXPLORABLE_SHOW.search(src):
            calls = re.findall(r"(?<![\w.])(show|try_this)\(", src)
            assert len(calls) == 1, f"{path.name}: cell {i}: one call per cell"


def test_prose_names_no_catalog_entry():
    """Readers never see the mechanism's catalog names ("the explorable pre_post_fd_error") in the prose."""
    from normlab_core.figures import catalog

    names = list(catalog())
    for path in SECTIONS:
        for i, c in enumerate(load(path)["cells"]):
            if c["cell_type"] == "markdown":
                hits = [n for n in names if n in source(c)]
                assert not hits, f"{path.name}: markdown cell {i} names {hits}"


@pytest.mark.parametrize("path", SECTIONS, ids=[p.stem for p in SECTIONS])
def test_figure_captions_and_alt_text_live_outside_the_code(path):
    for i, c in enumerate(code_cells(load(path))):
        assert "alt=" not in source(c) and "caption=" not in source(c), f"{path.name}: cell {i} carries alt/caption"
