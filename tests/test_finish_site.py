"""scripts/finish_site.py's page rewriting, on a small made-up site (no build needed)."""

from __future__ import annotations

import base64
import importlib.util
import shutil
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("finish_site", ROOT / "scripts" / "finish_site.py")
finish_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(finish_site)


def tiny_png() -> bytes:
    """A valid 1x1 PNG, built here (signature, IHDR, IDAT, IEND)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    ihdr = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) \
        + chunk(b"IEND", b"")


def test_light_images_moves_data_uris_to_files_and_marks_figures_lazy(tmp_path):
    png = tiny_png()
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    page = tmp_path / "notebooks" / "07.html"
    page.parent.mkdir()
    page.write_text(
        f"<img src='../_static/logo.png' alt='logo'>\n"
        f"<figure><img src='{uri}' alt='a figure' style='max-width:100%'></figure>\n"
        f'<img class="nl-frame" src="nl-frames/x/1.png" width="648" height="297" alt="a frame">\n'
        f"<script>var t = '<img>';</script>\n", encoding="utf-8")
    moved, marked = finish_site.light_images(tmp_path)
    assert (moved, marked) == (1, 2)
    text = page.read_text(encoding="utf-8")
    assert "data:image" not in text
    files = list((tmp_path / "_images").glob("nl-*.png"))
    assert len(files) == 1 and files[0].read_bytes() == png
    assert f"src='../_images/{files[0].name}' alt='a figure' style='max-width:100%' loading=\"lazy\"" in text
    assert 'alt="a frame" loading="lazy" decoding="async">' in text
    assert "<img src='../_static/logo.png' alt='logo'>" in text  # theme chrome stays eager
    assert "'<img>'" in text  # markup inside scripts without a src is left alone
    assert finish_site.light_images(tmp_path) == (0, 0)
    assert page.read_text(encoding="utf-8") == text


def test_slim_own_assets_strips_comments_and_keeps_the_code(tmp_path):
    static = tmp_path / "_static"
    static.mkdir()
    (static / "normlab-book.js").write_text(
        '/* header\n * comment */\n(function () {\n  // a comment line\n  var url = "http://x"; // kept: after code\n'
        '  return 1;\n})();\n', encoding="utf-8")
    (static / "normlab-book.css").write_text("/* a rule */\n.a { content: \"x\"; }\n", encoding="utf-8")
    saved = finish_site.slim_own_assets(tmp_path)
    js = (static / "normlab-book.js").read_text(encoding="utf-8")
    assert js == '(function () {\n  var url = "http://x"; // kept: after code\n  return 1;\n})();\n'
    assert (static / "normlab-book.css").read_text(encoding="utf-8") == '.a { content: "x"; }\n'
    assert saved > 30 and finish_site.slim_own_assets(tmp_path) == 0


# -- taking the book along: header links, footer, citation file --------------------------------------------
HEADER = '<div class="article-header-buttons">\n<button class="theme-switch-button"></button>\n</div>'


def made_up_site(tmp_path: Path) -> Path:
    """Two pages (the landing page and a section), the section's notebook under _sources, a footer."""
    site = tmp_path / "html"
    footer = ('<footer class="bd-footer-content"><p class="nl-licence">Code: MIT License. Cite as described in '
              '<a class="nl-citation-file" href="CITATION.cff">CITATION.cff</a>.</p></footer>')
    for rel, body in [("book/intro.html", 'clone <span class="nl-repository">the repository</span>; '
                                          '<span class="nl-pdf">the whole book</span>'),
                      ("notebooks/04_layer_norm.html", "<p>LayerNorm</p>")]:
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(f"<html><body>{HEADER}<article>{body}</article>{footer}</body></html>",
                                encoding="utf-8")
    (site / "_sources" / "notebooks").mkdir(parents=True)
    (site / "_sources" / "notebooks" / "04_layer_norm.ipynb").write_text("{}", encoding="utf-8")
    return site


def hrefs(page: Path) -> list[str]:
    import re

    return re.findall(r'href="([^"]*)"', page.read_text(encoding="utf-8"))


def resolves(page: Path, href: str) -> bool:
    return (page.parent / href).resolve().is_file()


def test_header_links_the_notebook_and_shows_the_pdf_and_repository_only_when_they_exist(tmp_path):
    site = made_up_site(tmp_path)
    intro, section = site / "book" / "intro.html", site / "notebooks" / "04_layer_norm.html"
    settings = {"repository": "", "version": "0.1.0", "date": "2026-01-02"}
    finish_site.add_header_links(site, settings)
    for page in (intro, section):
        assert not [h for h in hrefs(page) if h.endswith(".pdf")], "a PDF link before there is a PDF"
        assert all(resolves(page, h) for h in hrefs(page) if not h.endswith(".cff")), hrefs(page)
    assert "../_sources/notebooks/04_layer_norm.ipynb" in hrefs(section)
    assert not [h for h in hrefs(intro) if h.endswith(".ipynb")]  # the landing page is not a notebook
    assert '<span class="nl-repository">the repository</span>' in intro.read_text(encoding="utf-8")
    assert "Repository" not in section.read_text(encoding="utf-8")

    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(b"%PDF-1.4 made up")
    settings["repository"] = "https://example.org/normlab"
    import shutil

    shutil.copy(pdf, site / finish_site.PDF_NAME)
    finish_site.add_header_links(site, settings)
    finish_site.add_header_links(site, settings)  # idempotent: one block, not two
    for page in (intro, section):
        pdf_links = [h for h in hrefs(page) if h.endswith(".pdf")]
        assert pdf_links and all(resolves(page, h) for h in pdf_links), pdf_links
        assert page.read_text(encoding="utf-8").count('class="nl-get"') == 1
        assert "https://example.org/normlab" in hrefs(page)
    assert '<a class="nl-repository reference external" href="https://example.org/normlab">the repository</a>' \
        in intro.read_text(encoding="utf-8")


def test_publish_pdf_copies_the_pdf_into_the_site_and_links_it(tmp_path):
    site = made_up_site(tmp_path)
    pdf = tmp_path / "pdf" / "normlab.pdf"
    pdf.parent.mkdir()
    pdf.write_bytes(b"%PDF-1.4 another")
    target = finish_site.publish_pdf(site, pdf)
    assert target.read_bytes() == pdf.read_bytes()
    section = site / "notebooks" / "04_layer_norm.html"
    assert "../normlab.pdf" in hrefs(section) and resolves(section, "../normlab.pdf")


def test_footer_gives_version_date_and_a_working_citation_link(tmp_path):
    site = made_up_site(tmp_path)
    finish_site.publish_files(site)
    assert (site / "CITATION.cff").read_bytes() == (ROOT / "CITATION.cff").read_bytes()
    settings = finish_site.book_settings()
    finish_site.add_edition(site, settings)
    finish_site.add_edition(site, settings)
    section = site / "notebooks" / "04_layer_norm.html"
    text = section.read_text(encoding="utf-8")
    assert "../CITATION.cff" in hrefs(section) and resolves(section, "../CITATION.cff")
    assert "../CITATION.cff" in hrefs(site / "book" / "intro.html")
    import re

    version = re.search(r"(?m)^version: (\S+)", (ROOT / "CITATION.cff").read_text(encoding="utf-8")).group(1)
    assert text.count('<p class="nl-edition">') == 1
    assert f"Version {version}, built {settings['date']}." in text


def test_build_date_follows_source_date_epoch_then_the_last_commit(tmp_path):
    import subprocess

    assert finish_site.build_date(ROOT, {"SOURCE_DATE_EPOCH": "0"}) == "1970-01-01"
    assert finish_site.build_date(ROOT, {"SOURCE_DATE_EPOCH": "1700000000"}) == "2023-11-14"
    last = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d"],
                          capture_output=True, text=True, env={"TZ": "UTC"}).stdout.strip()
    if last:
        assert finish_site.build_date(ROOT, {}) == last
    import pytest

    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH.*'yesterday'"):
        finish_site.build_date(ROOT, {"SOURCE_DATE_EPOCH": "yesterday"})


def test_captions_lose_sphinx_figure_numbers(tmp_path):
    page = tmp_path / "notebooks" / "07.html"
    page.parent.mkdir()
    page.write_text('<figcaption><p><span class="caption-number">Fig. 1 </span><span class="caption-text">Figure 23-5: '
                    'post-norm.</span></p></figcaption>', encoding="utf-8")
    assert finish_site.drop_figure_numbers(tmp_path) == 1
    assert page.read_text(encoding="utf-8") == ('<figcaption><p><span class="caption-text">Figure 23-5: post-norm.'
                                                '</span></p></figcaption>')
    assert finish_site.drop_figure_numbers(tmp_path) == 0


def test_a_line_printed_in_two_chunks_stays_one_line_on_the_page():
    """The kernel may cut one print() into chunks (its output timer fires between them); the book joins them
    exactly, where myst-nb's own merge would end the first chunk with a newline."""
    import nbformat
    from myst_nb.core import render, utils

    def chunks():
        return [nbformat.v4.new_output("stream", name="stdout", text="gradient from the saved values:"),
                nbformat.v4.new_output("stream", name="stderr", text="a warning\n"),
                nbformat.v4.new_output("stream", name="stdout", text=" [+0.5, -0.5]\n"),
                nbformat.v4.new_output("display_data", data={"text/plain": "<figure>"})]

    assert utils.coalesce_streams(chunks())[0]["text"] == "gradient from the saved values:\n [+0.5, -0.5]\n"
    outputs = chunks()
    merged = finish_site.whole_streams(outputs)
    assert [(o["output_type"], o.get("name")) for o in merged] == [
        ("stream", "stdout"), ("stream", "stderr"), ("display_data", None)]
    assert merged[0]["text"] == "gradient from the saved values: [+0.5, -0.5]\n"
    assert [o.get("text") for o in outputs] == [o.get("text") for o in chunks()], "the cell's outputs were changed"
    events = []

    class App:   # what Sphinx hands the extension: only its connect() is used
        def connect(self, event, handler, priority=500):
            events.append(event)

    finish_site.setup(App())   # the extension as the book build loads it
    assert render.coalesce_streams is finish_site.whole_streams and "build-finished" in events


# -- the class's JupyterHub: "Open in your class's JupyterHub" on the notebook pages ---------------------------
def toc_files() -> list[str]:
    """Every page of the book, from _toc.yml (root and chapters)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]


def site_of_the_book(tmp_path: Path, hub_block: str) -> tuple[Path, dict]:
    """Every page of _toc.yml as a made-up page, notebooks under _sources as Sphinx puts them, and the settings
    book_settings reads from a made-up _config.yml with `hub_block` in it."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "_config.yml").write_text('title: "made up"\nrepository:\n  url: ""\n  branch: main\n' + hub_block,
                                      encoding="utf-8")
    site = tmp_path / "html"
    for rel in toc_files():
        page = site / f"{rel}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<html><body>{HEADER}<article><p>{rel}</p></article></body></html>", encoding="utf-8")
        if (ROOT / f"{rel}.ipynb").is_file():
            source = site / "_sources" / f"{rel}.ipynb"
            source.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / f"{rel}.ipynb", source)
    settings = finish_site.book_settings(root)
    finish_site.add_header_links(site, settings)
    return site, settings


def hub_hrefs(page: Path) -> list[str]:
    import html

    return [html.unescape(h) for h in hrefs(page) if "/git-pull?" in html.unescape(h)]


def test_every_notebook_page_and_the_exercises_open_in_the_class_hub_when_one_is_configured(tmp_path):
    from urllib.parse import parse_qs, urlsplit

    site, settings = site_of_the_book(tmp_path, 'classroom_hub:\n  jupyterhub_url: "https://hub.example.edu/"\n'
                                                '  repository: "https://git.example.edu/course/normlab.git"\n'
                                                '  branch: spring\n  folder: normlab\n')
    notebooks = [rel for rel in toc_files() if (ROOT / f"{rel}.ipynb").is_file()]
    assert "notebooks/10_exercises" in notebooks and len(notebooks) >= 10, notebooks
    for rel in toc_files():
        page = site / f"{rel}.html"
        links = hub_hrefs(page)
        if rel not in notebooks:
            assert not links and "JupyterHub" not in page.read_text(encoding="utf-8"), rel
            continue
        assert len(links) == 1, f"{rel}: {links} (python scripts/finish_site.py adds the link; see hub_link)"
        text = page.read_text(encoding="utf-8")
        assert 'aria-label="Open in your class\'s JupyterHub"' in text, rel
        assert "Open in your class's&nbsp;</span>JupyterHub</a>" in text, rel
        parts = urlsplit(links[0])
        assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.edu", "/hub/user-redirect/git-pull")
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        assert query == {"repo": "https://git.example.edu/course/normlab.git", "branch": "spring",
                         "targetpath": "normlab", "urlpath": f"lab/tree/normlab/{rel}.ipynb"}, rel
        # the path the link opens is the notebook in the repository the hub clones
        assert (ROOT / query["urlpath"].removeprefix("lab/tree/normlab/")).is_file()
    finish_site.add_header_links(site, settings)   # a second run keeps one link
    assert len(hub_hrefs(site / "notebooks" / "10_exercises.html")) == 1


def test_no_hub_link_without_a_hub_and_the_hub_settings_are_checked(tmp_path):
    site, settings = site_of_the_book(tmp_path, 'classroom_hub:\n  jupyterhub_url: ""\n  repository: ""\n')
    assert settings["hub"] == {}
    for rel in toc_files():
        page = site / f"{rel}.html"
        assert not hub_hrefs(page) and "JupyterHub" not in page.read_text(encoding="utf-8"), rel
    assert finish_site.hub_settings({}) == {}
    # the repository defaults to repository.url
    got = finish_site.hub_settings({"repository": {"url": "https://example.org/n.git", "branch": "main"},
                                    "classroom_hub": {"jupyterhub_url": "https://hub.example.edu"}})
    assert got == {"url": "https://hub.example.edu", "repository": "https://example.org/n.git", "branch": "main",
                   "folder": "normlab"}
    for block, words in [({"jupyterhub_url": "hub.example.edu", "repository": "x"}, "jupyterhub_url"),
                         ({"jupyterhub_url": "https://hub.example.edu"}, "classroom_hub.repository"),
                         ({"jupyterhub_url": "https://h.edu", "repository": "x", "folder": "../up"}, "folder")]:
        with pytest.raises(ValueError, match=words):
            finish_site.hub_settings({"classroom_hub": block})
    with pytest.raises(TypeError, match="classroom_hub"):
        finish_site.hub_settings({"classroom_hub": "https://hub.example.edu"})


def test_folded_code_loses_only_its_colour_spans():
    folded = ('<details class="admonition hide above-input"><div class="highlight"><pre><span class="n">a</span> '
              '<span class="o">=</span> <span class="mi">1</span> <span class="c1"># &lt;b&gt;</span></pre></div>'
              '</details>')
    shown = '<div class="highlight"><pre><span class="n">b</span></pre></div>'
    out = finish_site.plain_folded_code("<p>x</p>" + folded + shown)
    assert '<pre>a = 1 # &lt;b&gt;</pre>' in out          # the same text, escapes kept
    assert out.endswith(shown)                          # code outside a fold keeps its colours
    assert finish_site.plain_folded_code(out) == out    # idempotent
