"""The book cites through one BibTeX file (book/references.bib) and sphinxcontrib-bibtex's roles: every cited key
exists, every entry is cited, no plain author-year citation is left (scripts/cite_roles.py converts them), a
citation links to its entry in the generated list, and a mistyped key fails the build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts import cite_roles  # noqa: E402

BIB = ROOT / "book" / "references.bib"
ROLE = re.compile(r"\{cite:[a-z]+\}`([^`]*)`")
FIX = ("run `python -m scripts.cite_roles` and add any work it reports to book/references.bib (it converts the "
       "exercises' source, not notebooks/10_exercises.ipynb: then run `make exercises`)")


def sources() -> dict:
    """Each book page's text and each notebook's (and the exercises' source's) Markdown, by path."""
    out = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("book/*.md"))}
    for p in sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("assignments/source/chapter23/*.ipynb")):
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        out[p.relative_to(ROOT).as_posix()] = "\n".join("".join(c["source"]) for c in cells
                                                        if c["cell_type"] == "markdown")
    return out


def cited() -> dict:
    """key -> the pages citing it."""
    out: dict = {}
    for path, text in sources().items():
        for m in ROLE.finditer(text):
            for key in m.group(1).split(","):
                out.setdefault(key.strip(), set()).add(path)
    return out


def test_every_cited_key_is_in_the_bib():
    keys = set(cite_roles.read_bib())
    unknown = {k: sorted(v) for k, v in cited().items() if k not in keys}
    assert not unknown, f"cited but not in book/references.bib: {unknown}"


def test_every_bib_entry_is_cited_somewhere():
    entries = cite_roles.read_bib()
    assert len(entries) >= 80
    uncited = sorted(set(entries) - set(cited()))
    assert not uncited, f"entries of book/references.bib that no page cites (cite them or remove them): {uncited}"


def test_no_plain_citation_is_left_in_any_page():
    entries = cite_roles.read_bib()
    for path, text in sources().items():
        problems: list = []
        assert cite_roles.convert_text(text, entries, problems) == text, f"{path} has plain citations: {FIX}"
        assert not problems, f"{path}: {problems}: {FIX}"


def test_same_author_same_year_works_have_distinct_labels():
    entries = cite_roles.read_bib()
    labels = {}
    for key, e in entries.items():
        first = e["authors"][0]
        label = (first, "et al." if len(e["authors"]) > 2 else tuple(e["authors"][1:]), e["year"])
        labels.setdefault(label, []).append(key)
    assert not {k: v for k, v in labels.items() if len(v) > 1}
    assert entries["Liu2020Admin"]["year"] != entries["Liu2020RAdam"]["year"]


# -- scripts/cite_roles.py ------------------------------------------------------------------------------------

def test_cite_roles_leaves_the_book_copy_of_the_exercises_to_make_exercises():
    from scripts.make_exercises import TARGET

    files = cite_roles.default_files()
    assert TARGET not in files and TARGET.exists()
    assert ROOT / "assignments" / "source" / "chapter23" / "exercises.ipynb" in files
    assert ROOT / "notebooks" / "05_rms_norm.ipynb" in files


def test_cite_roles_converts_the_three_forms_and_tells_works_apart():
    entries = cite_roles.read_bib()
    text = ("Pre-norm needs none (Xiong et al., 2020). As Zhang and Sennrich (2019) show, and "
            "(Ba et al., 2016; Zhang and Sennrich, 2019). In the paper that introduced RAdam, Liu et al. (2020) "
            "argue. The Admin paper (Liu et al., 2020a, EMNLP) too. `Ba et al. (2016)` stays code. "
            "Since Xiong et al. (2020) it is known; van Laarhoven (2017) said so.")
    problems: list = []
    out = cite_roles.convert_text(text, entries, problems)
    assert not problems
    assert out == ("Pre-norm needs none {cite:p}`Xiong2020`. As {cite:t}`ZhangSennrich2019` show, and "
                   "{cite:p}`Ba2016,ZhangSennrich2019`. In the paper that introduced RAdam, {cite:t}`Liu2020RAdam` "
                   "argue. The Admin paper ({cite:alp}`Liu2020Admin`, EMNLP) too. `Ba et al. (2016)` stays code. "
                   "Since {cite:t}`Xiong2020` it is known; {cite:t}`vanLaarhoven2017` said so.")
    assert cite_roles.convert_text(out, entries, problems) == out and not problems  # idempotent


def test_cite_roles_reports_what_it_cannot_resolve_and_exits_1(tmp_path):
    page = tmp_path / "page.md"
    text = "Unknown (Smith et al., 2031). Ambiguous: Liu et al. (2020) found it. Known (Ba et al., 2016).\n"
    page.write_text(text, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "scripts.cite_roles", str(page)], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 1
    assert "Smith et al., 2031" in r.stderr and "Liu et al. (2020)" in r.stderr
    assert page.read_text(encoding="utf-8") == text.replace("(Ba et al., 2016)", "{cite:p}`Ba2016`")


# -- what Sphinx makes of the roles (a two-page project built with the book's settings) -----------------------

def build(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    src = tmp_path / "src"
    src.mkdir()
    (src / "references.bib").write_text(BIB.read_text(encoding="utf-8"), encoding="utf-8")
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config["sphinx"]["config"]
    assert config["bibtex_bibfiles"] == ["book/references.bib"]
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'scripts')!r})\n"
        "from finish_site import register_citation_styles\nregister_citation_styles()\n"
        "extensions = ['myst_parser', 'sphinxcontrib.bibtex']\n"
        "bibtex_bibfiles = ['references.bib']\n"
        f"bibtex_reference_style = {sphinx['bibtex_reference_style']!r}\n"
        f"bibtex_default_style = {sphinx['bibtex_default_style']!r}\n"
        "root_doc = 'index'\n", encoding="utf-8")
    (src / "index.md").write_text("# Index\n\n```{toctree}\npage\nreferences\n```\n", encoding="utf-8")
    (src / "page.md").write_text(f"# Page\n\n{page}\n", encoding="utf-8")
    refs = (ROOT / "book" / "references.md").read_text(encoding="utf-8")
    (src / "references.md").write_text("# References\n\n" + refs[refs.index("```{bibliography}"):], encoding="utf-8")
    # the other pages' citations, so that the generated list holds every entry as in the book
    keys = ",".join(sorted(cited()))
    (src / "index.md").write_text(f"# Index\n\n{{cite:p}}`{keys}`\n\n```{{toctree}}\npage\nreferences\n```\n",
                                  encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True)


def test_a_citation_links_to_its_entry_and_the_list_holds_every_entry(tmp_path):
    r = build(tmp_path, "Two papers: {cite:t}`Liu2020Admin` and {cite:p}`Liu2020RAdam`.")
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "out" / "page.html").read_text(encoding="utf-8")
    refs = (tmp_path / "out" / "references.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="reference internal" href="references\.html#([^"]+)"', page)
    assert len(links) == 2 and len(set(links)) == 2
    for anchor in links:
        assert f'id="{anchor}"' in refs
    text = re.sub(r"<[^>]+>", "", page)
    assert "Two papers: Liu et al. (2020a) and (Liu et al., 2020b)." in text
    assert "[Liu et al., 2020a]" in re.sub(r"<[^>]+>", "", refs)  # the list labels its entries the same way
    listed = re.findall(r'<div class="citation" id="id\d+" role="doc-biblioentry">', refs)
    assert len(listed) == len(cite_roles.read_bib())


def test_a_mistyped_key_fails_the_build(tmp_path):
    r = build(tmp_path, "A typo: {cite:p}`Xiong202`.")
    assert r.returncode != 0
    assert "Xiong202" in r.stderr


@pytest.mark.book
def test_the_built_references_page_lists_every_entry():
    refs = ROOT / "_build" / "html" / "book" / "references.html"
    if not refs.is_file():
        pytest.skip("no built site: run `make book`")
    html = refs.read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    for key, e in cite_roles.read_bib().items():
        assert e["title"].split(":")[0][:40] in text.replace("&amp;", "&"), key
