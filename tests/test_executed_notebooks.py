"""The stored outputs of every notebook are what the book's own execution printed (`make test-book`, after `make book`).

`make book` executes every notebook of `_toc.yml` once, in a fresh kernel (myst-nb, `execute_notebooks: inline`), and
keeps each executed copy in `_build/jupyter_execute/`. Instead of executing them all a second time, this test compares
those copies with the notebooks as stored in the repository, cell by cell, the way nbval compares (`make
test-notebooks` and `make test-determinism` still run nbval itself):

- every output field except nbval's skipped ones (metadata, execution counts, widget model ids, PNG images) is
  compared after the substitutions of tests/nbval_sanitize.cfg, each MIME type's values in order;
- cells tagged `nbval-ignore-output` are executed but not compared, cells tagged `nbval-skip` are not compared;
- and no executed cell holds an error.

The book runs with NORMLAB_STATIC=1, which changes only what `show()` puts out (a static explorable instead of a live
widget), and every such cell is tagged `nbval-ignore-output`; the test checks that too, so that the two executions
compare the same things. Marker `book`: needs the built site (skips without it, fails under NORMLAB_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import configparser
import os
import re
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "jupyter_execute"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
# nbval's own list (nbval.plugin.IPyNbFile.skip_compare, without --nbdime): fields that are never compared
SKIP_COMPARE = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}

pytestmark = pytest.mark.book


def toc_notebooks() -> list[Path]:
    """The notebooks the book is built from, in the order of _toc.yml."""
    from browser_support import toc_pages

    return [ROOT / f"{p}.ipynb" for p in toc_pages() if (ROOT / f"{p}.ipynb").is_file()]


def sanitizers() -> list[tuple[re.Pattern, str]]:
    """The regex substitutions nbval applies (tests/nbval_sanitize.cfg), in the file's order."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(SANITIZE)
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def flatten(outputs: list, subs) -> dict[str, list]:
    """nbval's comparison form of a cell's outputs: field (or MIME type) -> the sanitized values, in order."""
    def clean(v):
        if isinstance(v, str):
            for pattern, replace in subs:
                v = pattern.sub(replace, v)
        return v

    flat: dict[str, list] = defaultdict(list)
    for out in outputs:
        if out.get("output_type") == "stream":   # a stream is keyed by its name (stdout, stderr), as nbval does
            flat[out["name"]].append(clean(out["text"]))
            continue
        for key, value in out.items():
            if key in SKIP_COMPARE:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP_COMPARE:
                        text = data if isinstance(data, str) else "".join(data)
                        flat[mime].append(clean(screen_wording(text) if mime == "text/markdown" else text))
            else:
                flat[key].append(clean(value))
    return dict(flat)


def merged_streams(outputs: list) -> list:
    """A cell's outputs with each stream's chunks joined into its first output, as nbval joins them (the kernel cuts
    what a cell prints into chunks wherever its output timer fires; the book joins them so too:
    scripts/finish_site.whole_streams)."""
    merged: list = []
    first: dict[str, dict] = {}
    for out in outputs:
        if out.get("output_type") == "stream" and out["name"] in first:
            first[out["name"]]["text"] += out["text"]
            continue
        out = dict(out)
        if out.get("output_type") == "stream":
            first[out["name"]] = out
        merged.append(out)
    return merged


# The static book words the first line of a "Try this" list for print as well (display.try_this_markdown with
# printable=True: one wording shown on screen, the other on paper); JupyterLab gets the screen's alone.
PRINT_WORDING = re.compile(r"<span class='nl-screen-only'>(.*?)</span><span class='nl-print-only' hidden>.*?</span>",
                           re.S)


def screen_wording(text: str) -> str:
    return PRINT_WORDING.sub(r"\1", text)


def executed_copy(path: Path) -> Path:
    return EXECUTED / path.relative_to(ROOT)


def require_build() -> None:
    if not EXECUTED.is_dir():
        msg = "the book is not built (_build/jupyter_execute is missing): run `make book` first"
        if os.environ.get("NORMLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


def differences(stored, executed, subs) -> list[str]:
    """How the executed notebook's outputs differ from the stored ones, as nbval would report them."""
    problems = []
    code = [(i, c) for i, c in enumerate(stored.cells) if c.cell_type == "code"]
    ran = [c for c in executed.cells if c.cell_type == "code"]
    if len(code) != len(ran):
        return [f"{len(code)} code cells stored, {len(ran)} executed"]
    for (i, cell), got in zip(code, ran, strict=True):
        if cell.source != got.source:
            problems.append(f"cell {i}: the executed copy has other source (the build is older than the notebook)")
            continue
        tags = set(cell.metadata.get("tags", []))
        if "nbval-skip" in tags:
            continue
        errors = [o for o in got.get("outputs", []) if o.get("output_type") == "error"]
        if errors and "raises-exception" not in tags:
            problems.append(f"cell {i}: {errors[0].get('ename')}: {errors[0].get('evalue')}")
            continue
        if "nbval-ignore-output" in tags:
            continue
        if "show(" in cell.source and "nbval-ignore-output" not in tags:
            problems.append(f"cell {i} shows an explorable but is not tagged nbval-ignore-output")
        want = flatten(merged_streams(cell.get("outputs", [])), subs)
        have = flatten(merged_streams(got.get("outputs", [])), subs)
        if want.keys() != have.keys():
            problems.append(f"cell {i}: output fields {sorted(have)}, stored {sorted(want)}")
            continue
        for key in want:
            if want[key] != have[key]:
                a, b = "\n".join(map(str, want[key])), "\n".join(map(str, have[key]))
                at = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
                problems.append(f"cell {i}, {key}: stored ...{a[max(0, at - 60):at + 60]!r}...\n"
                                f"    executed ...{b[max(0, at - 60):at + 60]!r}...")
    return problems


def test_the_book_is_built_from_every_notebook():
    require_build()
    missing = [str(p.relative_to(ROOT)) for p in toc_notebooks() if not executed_copy(p).is_file()]
    assert toc_notebooks(), "no notebooks found in _toc.yml"
    assert not missing, f"the build has no executed copy of {missing}"


@pytest.mark.parametrize("path", toc_notebooks(), ids=lambda p: p.stem)
def test_stored_outputs_are_what_the_book_printed(path):
    require_build()
    if not executed_copy(path).is_file():
        pytest.fail(f"{executed_copy(path)} is missing: is {path.name} in _toc.yml and the build current?")
    stored = nbformat.read(path, as_version=4)
    executed = nbformat.read(executed_copy(path), as_version=4)
    problems = differences(stored, executed, sanitizers())
    fix = ("make exercises" if path.stem.startswith("10_") else
           f"MPLBACKEND=Agg .venv/bin/python scripts/refresh_notebooks.py notebooks/{path.name}")
    assert not problems, (f"{path.name}: the stored outputs differ from the book's execution (if the new output is "
                          f"right, refresh them: {fix}; then `make book`):\n" + "\n".join(problems[:20]))


def test_the_comparison_sees_a_changed_number_and_ignores_what_nbval_ignores():
    """The comparison itself, on a made-up pair: a changed digit is found; an address, a widget id, a PNG and an
    ignored cell are not differences; split stdout chunks equal the merged text."""
    def nb(text, png, addr, ignored):
        cells = [nbformat.v4.new_code_cell("print(x)", outputs=[
                     nbformat.v4.new_output("stream", name="stdout", text=text[:3]),
                     nbformat.v4.new_output("stream", name="stdout", text=text[3:])]),
                 nbformat.v4.new_code_cell("f", outputs=[nbformat.v4.new_output(
                     "display_data", data={"image/png": png, "text/plain": f"<Figure at {addr}>"})]),
                 nbformat.v4.new_code_cell("show('a')", metadata={"tags": ["nbval-ignore-output"]},
                                           outputs=[nbformat.v4.new_output("stream", name="stdout", text=ignored)])]
        return nbformat.v4.new_notebook(cells=cells)

    subs = sanitizers()
    base = nb("mean 0.125\n", "AAAA", "0x7f00", "one")
    assert differences(base, nb("mean 0.125\n", "BBBB", "0x1234", "two"), subs) == []
    found = differences(base, nb("mean 0.126\n", "AAAA", "0x7f00", "one"), subs)
    assert len(found) == 1 and "stdout" in found[0] and "0.126" in found[0]
    assert "error" not in " ".join(found)
