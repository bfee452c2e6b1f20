"""Make the built site self-contained, then check it.

Two faces:

* A Sphinx extension (listed under `sphinx.local_extensions` in _config.yml): when the HTML build
  finishes it copies the parts of MathJax 2.7 that the site uses from the installed
  `jupyter-server-mathjax` package into `_build/html/_static/mathjax/`, where `mathjax_path`
  points. Nothing is vendored in the repository and nothing is fetched from a CDN.
  It also makes pages lighter: it drops pydata-sphinx-theme's `fontawesome.js` (1.45 MB, loaded by
  every page; the theme's stylesheet draws the same icons from web fonts) and the search scripts
  from pages other than search.html, and cuts the theme's icon CSS and fonts down to the icons the
  site shows (drop_unused_scripts, slim_icons). It moves figures embedded in a page as data: URIs
  into files under _images/ and lets every figure in the text load lazily (light_images), so a
  page's first load carries only the figures near the top. And it links every figure drawn
  by a code cell to its full-size PNG, so that a phone reader can tap a figure to zoom.
* A script, run by `make book` after the build: `python scripts/finish_site.py [_build/html]`.
  It copies MathJax again if it is missing and checks every page: no <script>, <link>, <img>,
  <iframe>, <source> or <embed> loads anything from another host; every <img> has real alt text;
  each page with its images and slider frames stays under 3 MB (theme and MathJax files under
  _static are shared by all pages and not counted); no page loads fontawesome.js. It exits 1 and lists
  the problems when a check fails.
* Both write the book's search index, _static/normlab-searchindex.js (scripts/search_index.py), which
  search.html loads in place of Sphinx's searchindex.js.

Plain <a href> links to other sites are allowed (launch buttons, references).
"""

from __future__ import annotations

import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

PAGE_LIMIT = 3 * 1024 * 1024  # bytes per page, including what it loads
MATHJAX_DIR = "_static/mathjax"

# What MathJax 2.7 loads for config=TeX-AMS-MML_HTMLorMML-full with the HTML-CSS output and
# STIX-Web web fonts (the only fonts the package ships). The accessibility extensions (3.7 MB)
# and the translations are left out: English is built in, and a11y loads only from the menu.
MATHJAX_PARTS = [
    "MathJax.js",
    "LICENSE",
    "config/TeX-AMS-MML_HTMLorMML-full.js",
    "extensions/*.js",
    "extensions/TeX",
    "extensions/HTML-CSS",
    "extensions/MathML",
    "extensions/a11y/accessibility-menu.js",
    "jax/input/TeX",
    "jax/element",
    "jax/output/HTML-CSS",
    "fonts/HTML-CSS/STIX-Web/woff",
]


def mathjax_source() -> Path:
    """The MathJax 2 tree inside the installed jupyter-server-mathjax package."""
    import jupyter_server_mathjax

    root = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
    if not (root / "MathJax.js").is_file():
        raise FileNotFoundError(f"MathJax.js not found under {root}; is jupyter-server-mathjax installed?")
    return root


def copy_mathjax(site: Path) -> Path:
    """Copy the MathJax parts the site needs into site/_static/mathjax (replacing an older copy)."""
    src, dest = mathjax_source(), Path(site) / MATHJAX_DIR
    if dest.exists():
        shutil.rmtree(dest)
    for part in MATHJAX_PARTS:
        matches = sorted(src.glob(part)) if "*" in part else [src / part]
        for path in matches:
            target = dest / path.relative_to(src)
            if path.is_dir():
                shutil.copytree(path, target)
            elif path.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            else:
                raise FileNotFoundError(f"MathJax part {part!r} is missing from {src}")
    return dest


# -- the Sphinx extension ---------------------------------------------------------------------
FONTAWESOME_JS = "_static/scripts/fontawesome.js"
_FONTAWESOME_TAG = re.compile(r'[ \t]*<script[^>]*src="[^"]*scripts/fontawesome\.js[^"]*"[^>]*></script>\n?')
# pydata-sphinx-theme loads Sphinx's search code and the whole search index (~80 kB) on every page,
# for a search-as-you-type box this site does not enable; only search.html needs them.
_SEARCH_TAGS = re.compile(r'[ \t]*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|'
                          r'searchindex\.js|_static/normlab-search\.js(?:\?v=[0-9a-f]+)?)"></script>\n?')


# sphinx-design (a jupyter-book default extension) adds its stylesheet and tab script to every page;
# no page uses a design element (cards, grids, tabs), so both go (62 kB of every first load).
_DESIGN_TAGS = re.compile(r'[ \t]*<(?:link[^>]*href="[^"]*_static/sphinx-design\.min\.css[^"]*"[^>]*>|'
                          r'script[^>]*src="[^"]*_static/design-tabs\.js[^"]*"[^>]*></script>)\n?')
_DESIGN_USE = re.compile(r'class="[^"]*\bsd-')


def drop_unused_scripts(site: Path) -> int:
    """Remove from every page the <script> that loads fontawesome.js (1.45 MB: it only redraws the
    theme's icons as SVG, which the theme's stylesheet already draws from Font Awesome's web fonts,
    see slim_icons) and delete the file; remove the search scripts from every page but search.html,
    and sphinx-design's stylesheet and script from pages with no design element (normlab-search.js, the
    book's own search code, counts as a search script).
    Returns the number of pages changed."""
    site = Path(site)
    changed = 0
    for page in site.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        new = _FONTAWESOME_TAG.sub("", text)
        if not _DESIGN_USE.search(new):
            new = _DESIGN_TAGS.sub("", new)
        if page.relative_to(site).as_posix() != "search.html":
            new = _SEARCH_TAGS.sub("", new)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    for path in (site / FONTAWESOME_JS).parent.glob("fontawesome.js*"):
        path.unlink()
    return changed


THEME_CSS = "_static/styles/pydata-sphinx-theme.css"
FONT_DIR = "_static/vendor/fontawesome/webfonts"
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:(?:before|after),?)+)\{content:"([^"]*)"\}')
_ICON_NAME = re.compile(r"\bfa-([a-z0-9-]+)")
_FONT_FACE = re.compile(r"(@font-face\{[^}]*?)src:url\(\.\./vendor/fontawesome/webfonts/(fa-[a-z]+-\d+)\.woff2\)"
                        r"[^}]*\}")
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")


def _icon_codepoints(css: str) -> set[int]:
    """Private-use code points (where icon fonts keep their glyphs) that a stylesheet can draw:
    escapes such as \\f0c9 and literal characters, in `content:` rules and --pst-icon-* variables."""
    codes = {int(h, 16) for h in _CSS_ESCAPE.findall(css)} | {ord(c) for c in css}
    return {c for c in codes if 0xE000 <= c <= 0xF8FF}


def slim_icons(site: Path) -> tuple[int, int]:
    """Keep only the Font Awesome icons the site can show. pydata-sphinx-theme.css carries a rule
    for each of ~1900 icons (~85 kB) and points at three full web fonts (solid 152 kB, brands
    115 kB, regular 25 kB); the pages show a dozen icons. Rules of icons that no page and no theme
    script names are removed, and each font is replaced by a subset (made with fontTools from the
    TrueType file the theme ships) holding only the glyphs the site's stylesheets can still draw.
    Returns (bytes of CSS removed, code points kept); (0, 0) when already done or not applicable."""
    site = Path(site)
    css_path = site / THEME_CSS
    if not css_path.is_file() or ".normlab.woff" in css_path.read_text(encoding="utf-8"):
        return 0, 0
    css = css_path.read_text(encoding="utf-8")
    used = set()
    for path in list(site.rglob("*.html")) + list((site / "_static" / "scripts").glob("*.js")):
        used.update(_ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))

    def keep_or_drop(m: re.Match) -> str:
        names = re.findall(r"\.fa-([a-z0-9-]+):", m.group(1))
        return "" if used.isdisjoint(names) else m.group(0)

    slim = _ICON_RULE.sub(keep_or_drop, css)
    codes = _icon_codepoints(slim)
    for other in (site / "_static").rglob("*.css"):
        if other != css_path and "mathjax" not in other.parts:
            codes |= _icon_codepoints(other.read_text(encoding="utf-8", errors="replace"))

    def subset_face(m: re.Match) -> str:
        ttf = site / FONT_DIR / f"{m.group(2)}.ttf"
        if not ttf.is_file():
            return m.group(0)
        from fontTools import subset

        options = subset.Options()
        options.flavor = "woff"  # zlib; woff2 would need the brotli module
        options.layout_features = ["*"]
        options.notdef_outline = True
        font = subset.load_font(str(ttf), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(codes))
        subsetter.subset(font)
        name = f"{m.group(2)}.normlab.woff"
        subset.save_font(font, str(site / FONT_DIR / name), options)
        return f'{m.group(1)}src:url(../vendor/fontawesome/webfonts/{name}) format("woff")}}'

    slim = _FONT_FACE.sub(subset_face, slim)
    if slim == css:
        return 0, 0
    css_path.write_text(slim, encoding="utf-8")
    return len(css) - len(slim), len(codes)


_DATA_IMG = re.compile(r"""(<img\b[^>]*?\bsrc=)(['"])data:image/png;base64,([A-Za-z0-9+/=\s]+)\2""")
_IMG_TAG = re.compile(r"<img\b[^>]*>")


def light_images(site: Path) -> tuple[int, int]:
    """Move PNG figures embedded as data: URIs into _images/nl-<hash>.png, and mark every <img> that is
    not theme chrome (under _static/) loading="lazy" decoding="async". Returns (moved, marked).

    A lazy image is fetched when it comes near the screen, so a page's first load holds the
    figures near its top only. Idempotent: running it again changes nothing."""
    import base64
    import hashlib
    import os

    site = Path(site)
    images = site / "_images"
    moved = marked = 0
    for page in site.rglob("*.html"):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        rel_images = Path(os.path.relpath(images, page.parent)).as_posix()

        def to_file(m, rel_images=rel_images):
            nonlocal moved
            data = base64.b64decode("".join(m.group(3).split()))
            name = f"nl-{hashlib.sha256(data).hexdigest()[:20]}.png"
            images.mkdir(exist_ok=True)
            if not (images / name).is_file():
                (images / name).write_bytes(data)
            moved += 1
            return f"{m.group(1)}{m.group(2)}{rel_images}/{name}{m.group(2)}"

        def lazy(m):
            nonlocal marked
            tag = m.group(0)
            src = re.search(r"""\bsrc=(['"])(.*?)\1""", tag)
            if " loading=" in tag or src is None or "_static/" in src.group(2) or src.group(2).startswith("data:"):
                return tag
            marked += 1
            end = "/>" if tag.endswith("/>") else ">"
            return tag[: -len(end)].rstrip() + ' loading="lazy" decoding="async"' + end

        new = _IMG_TAG.sub(lazy, _DATA_IMG.sub(to_file, text))
        if new != text:
            page.write_text(new, encoding="utf-8")
    return moved, marked


OWN_ASSETS = ["normlab-book.css", "normlab-book.js", "normlab-search.js"]
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/\n?", re.S)
_LINE_COMMENT = re.compile(r"^[ \t]*//[^\n]*\n", re.M)


def slim_own_assets(site: Path) -> int:
    """Strip the comments from the book's own stylesheet and scripts as served (_static/normlab-*): block
    comments, and JS comments on lines of their own (a // after code, possibly inside a string, is left
    alone). Their sources in book/assets keep every comment. Returns the bytes saved; idempotent."""
    saved = 0
    for name in OWN_ASSETS:
        path = Path(site) / "_static" / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        slim = _BLOCK_COMMENT.sub("", text)
        if name.endswith(".js"):
            slim = _LINE_COMMENT.sub("", slim)
        if slim != text:
            path.write_text(slim, encoding="utf-8")
            saved += len(text.encode("utf-8")) - len(slim.encode("utf-8"))
    return saved


def write_search_index(site: Path) -> Path:
    """The book's search index (scripts/search_index.py): _static/normlab-searchindex.js, loaded by
    search.html in place of Sphinx's searchindex.js."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("search_index", Path(__file__).with_name("search_index.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_index(Path(site))


def _on_build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        copy_mathjax(Path(app.outdir))
        slim_own_assets(Path(app.outdir))
        drop_unused_scripts(Path(app.outdir))
        slim_icons(Path(app.outdir))
        light_images(Path(app.outdir))
        write_search_index(Path(app.outdir))
        write_question_assets(Path(app.outdir))


def _link_figures(app, doctree, docname) -> None:
    """Make each figure (a code cell's plot or an image in the text) a link to its own full-size
    file ("tap to zoom"): on a phone the page shows the figure at screen width, the link opens it at
    full size. Sphinx writes such links itself only for images with a size option."""
    from docutils import nodes
    from sphinx.util.osutil import relative_uri

    if app.builder.format != "html":
        return
    imgpath = relative_uri(app.builder.get_target_uri(docname), "_images")
    for node in list(doctree.findall(nodes.image)):
        if isinstance(node.parent, nodes.reference):
            continue
        uri = node.get("uri", "")
        if uri not in app.env.images:
            continue
        ref = nodes.reference("", "", internal=True, refuri=f"{imgpath}/{app.env.images[uri][1]}",
                              classes=["nl-zoom"])
        node.replace_self(ref)
        ref.append(node)


def _is_thebe_asset(asset) -> bool:
    text = f"{getattr(asset, 'filename', asset) or ''} {getattr(asset, 'attributes', {}).get('body', '')}"
    return "thebe" in text.lower()


def _drop_thebe_assets(app, pagename, templatename, context, doctree) -> None:
    """sphinx_thebe (always loaded by jupyter-book) adds its script, stylesheet and a CDN URL to
    every page even with thebe off; the book has no thebe, so leave them out."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [a for a in context[key] if not _is_thebe_asset(a)]


def _drop_thebe_nodes(app, doctree, docname) -> None:
    """Remove the <script type="text/x-thebe-config"> and kernelName nodes sphinx_thebe appends."""
    from docutils import nodes

    for node in list(doctree.findall(nodes.raw)):
        if "x-thebe-config" in node.astext() or "kernelName =" in node.astext():
            node.parent.remove(node)


# A tiny inline icon: without any <link rel="icon"> the browser asks for /favicon.ico, which a
# static host may not have (a 404 on every page).
FAVICON = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
           "%3Crect width='16' height='16' rx='3' fill='%232a6f97'/%3E"
           "%3Cpath d='M4 12V4l8 8V4' stroke='white' stroke-width='2' fill='none'/%3E%3C/svg%3E")


# Inline CSS (so that no file under a _static/ folder of the repository is needed):
# - the static sliders' controls sit on one line; give each label room;
# - MathJax 2 names its own inner element span.math, which the theme styles for MathJax 3 with
#   overflow:hidden; on an inline-block that moves the baseline, so inline symbols float high.
SITE_CSS = """<style>
.MathJax span.math { overflow: visible; max-width: none; }
.normlab-explorable .nl-control { display: inline-block; margin: 0 1.5em 0.4em 0; white-space: nowrap; }
.normlab-explorable .nl-control output { display: inline-block; min-width: 3.5em; margin-left: 0.3em; }
.normlab-explorable input[type=range] { vertical-align: middle; }
</style>"""


def _add_head(app, pagename, templatename, context, doctree) -> None:
    if not context.get("favicon_url"):
        context["favicon_url"] = FAVICON
    context["metatags"] = context.get("metatags", "") + "\n" + SITE_CSS


def whole_streams(outputs: list) -> list:
    """A cell's outputs with all the text of each stream (stdout, stderr) in its first output, joined exactly.

    The kernel sends what a cell prints in chunks, cut wherever its output timer fires, sometimes in the middle of
    a line (under load: between the parts of one print()). myst-nb's own merge (nb_merge_streams) strips each
    chunk's end and adds a newline, which breaks such a line in two on the page, and it writes the merged text into
    the executed notebook's first output in place. Here the chunks are joined as nbval joins them, into copies;
    myst-nb's merge then sees one output per stream and only tidies it (trailing space, backspaces, the order of
    stdout and stderr)."""
    import copy

    from myst_nb.core import utils

    merged, first = [], {}
    for out in outputs:
        if out["output_type"] == "stream" and out["name"] in first:
            first[out["name"]]["text"] += out["text"]
            continue
        out = copy.deepcopy(out)
        if out["output_type"] == "stream":
            first[out["name"]] = out
        merged.append(out)
    return utils.coalesce_streams(merged)


def _join_streams_whole() -> None:
    from myst_nb.core import render

    if getattr(render.coalesce_streams, "__name__", "") != "whole_streams":
        render.coalesce_streams = whole_streams


# "Check yourself" (normlab_core/questions): a page that carries a question block loads the questions' script and
# stylesheet, written into _static from normlab_core/questions when the build finishes (one source for both faces).
def _add_questions(app, pagename, templatename, context, doctree) -> None:
    if 'class="nl-questions"' in context.get("body", ""):
        from normlab_core.questions.assets import SCRIPT_NAME, STYLE_NAME

        app.add_css_file(STYLE_NAME)
        app.add_js_file(SCRIPT_NAME, loading_method="defer")


def write_question_assets(site: Path) -> list[Path]:
    """The questions' classic script and stylesheet in the site's _static folder."""
    from normlab_core.questions.assets import write

    return write(Path(site) / "_static")


def setup(app):
    _join_streams_whole()
    register_citation_styles()
    app.connect("html-page-context", _add_head)
    app.connect("html-page-context", _add_questions)
    app.connect("build-finished", _on_build_finished)
    app.connect("html-page-context", _drop_thebe_assets, priority=900)
    app.connect("doctree-resolved", _drop_thebe_nodes, priority=900)
    app.connect("doctree-resolved", _link_figures, priority=950)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


# -- citations: the styles _config.yml names for sphinxcontrib-bibtex ------------------------------------
def _author_year_label(entry) -> str:
    """'Xiong et al., 2020', 'Zhang and Sennrich, 2019', 'PyTorch Contributors, n.d.-b' (braces of an
    organisation's name dropped)."""
    people = entry.persons.get("author", [])
    names = [" ".join(p.prelast_names + p.last_names).replace("{", "").replace("}", "") for p in people]
    others = len(people) > 2 or any(str(p) == "others" for p in people)
    who = f"{names[0]} et al." if others else " and ".join(names)
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def register_citation_styles() -> None:
    """Register 'author_year_round' (citations read "Xiong et al. (2020)" and "(Xiong et al., 2020)", in round
    brackets) and 'plain_author_year' (pybtex's plain list, each entry labelled by the same author and year)."""
    import pybtex.plugin
    import sphinxcontrib.bibtex.plugin
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle
    from sphinxcontrib.bibtex.style.referencing import BracketStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

    class RoundAuthorYear(AuthorYearReferenceStyle):
        def __init__(self, **kwargs):
            for kind in ("textual", "parenthetical", "author", "label", "year"):
                kwargs.setdefault(f"bracket_{kind}", BracketStyle(left="(", right=")"))
            super().__init__(**kwargs)

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            for entry in sorted_entries:
                yield _author_year_label(entry)

    class PlainAuthorYear(PlainStyle):
        default_label_style = "author_year"

    pybtex.plugin.register_plugin("pybtex.style.labels", "author_year", AuthorYearLabels, force=True)
    pybtex.plugin.register_plugin("pybtex.style.formatting", "plain_author_year", PlainAuthorYear, force=True)
    sphinxcontrib.bibtex.plugin.register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_round",
                                                RoundAuthorYear, force=True)


# -- taking the book along: header links, footer edition, citation file ----------------------------------------
ROOT = Path(__file__).resolve().parent.parent
PDF_NAME = "normlab.pdf"
CITATION_FILE = "CITATION.cff"


def build_date(root: Path = ROOT, env: dict | None = None) -> str:
    """The build's date (YYYY-MM-DD, UTC), the same for every build of one commit: SOURCE_DATE_EPOCH when set,
    else the date of the last commit (git), else today."""
    import datetime as dt
    import os
    import subprocess

    env = os.environ if env is None else env
    epoch = (env.get("SOURCE_DATE_EPOCH") or "").strip()
    if epoch:
        if not epoch.isdigit():
            raise ValueError(f"SOURCE_DATE_EPOCH must be a whole number of seconds, got {epoch!r}")
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).strftime("%Y-%m-%d")
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%ct"], capture_output=True,
                             text=True, timeout=30, check=True).stdout.strip()
        if out.isdigit():
            return dt.datetime.fromtimestamp(int(out), dt.timezone.utc).strftime("%Y-%m-%d")
    except (OSError, subprocess.SubprocessError):
        pass
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")


def book_settings(root: Path = ROOT) -> dict:
    """What the pages say about the book itself: the repository's address (repository.url in _config.yml, ''
    while it is not settled), the version (CITATION.cff, else pyproject.toml) and the build date."""
    import yaml

    root = Path(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    url = str(((config.get("repository") or {}).get("url")) or "").strip()
    if url and urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"repository.url in _config.yml must be an http(s) address or empty, got {url!r}")
    version = ""
    cff = root / CITATION_FILE
    if cff.is_file():
        version = str((yaml.safe_load(cff.read_text(encoding="utf-8")) or {}).get("version") or "")
    if not version and (root / "pyproject.toml").is_file():
        m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (root / "pyproject.toml").read_text(encoding="utf-8"))
        version = m.group(1) if m else ""
    return {"repository": url, "version": version, "date": build_date(root), "hub": hub_settings(config)}


def hub_settings(config: dict) -> dict:
    """The class's JupyterHub from _config.yml's `classroom_hub` block ({} when jupyterhub_url is empty): the hub's
    address, the git repository it clones (classroom_hub.repository, else repository.url), the branch and the
    folder of each student's home it clones into."""
    block = config.get("classroom_hub") or {}
    if not isinstance(block, dict):
        raise TypeError(f"classroom_hub in _config.yml must be a mapping, got {type(block).__name__}")
    hub = str(block.get("jupyterhub_url") or "").strip().rstrip("/")
    if not hub:
        return {}
    if urlsplit(hub).scheme not in ("http", "https") or not urlsplit(hub).netloc:
        raise ValueError(f"classroom_hub.jupyterhub_url in _config.yml must be an http(s) address or empty, "
                         f"got {hub!r}")
    repo = str(block.get("repository") or (config.get("repository") or {}).get("url") or "").strip()
    if not repo:
        raise ValueError("classroom_hub.repository in _config.yml is empty (and so is repository.url): the hub "
                         "needs a git address to clone the notebooks from")
    branch = str(block.get("branch") or (config.get("repository") or {}).get("branch") or "main").strip()
    folder = str(block.get("folder") or "normlab").strip().strip("/")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", folder) or folder in (".", ".."):
        raise ValueError(f"classroom_hub.folder in _config.yml must be one folder name (letters, digits, '.', "
                         f"'_', '-'), got {folder!r}")
    return {"url": hub, "repository": repo, "branch": branch, "folder": folder}


def hub_link(notebook: str, hub: dict) -> str:
    """The nbgitpuller address that opens `notebook` (its path in the repository, "notebooks/04_layer_norm.ipynb")
    in JupyterLab on the class's hub, after cloning or updating the repository into ~/<folder>; '' with no hub."""
    from urllib.parse import urlencode

    if not hub:
        return ""
    query = urlencode({"repo": hub["repository"], "branch": hub["branch"], "targetpath": hub["folder"],
                       "urlpath": f"lab/tree/{hub['folder']}/{notebook}"}, safe="/")
    return f"{hub['url']}/hub/user-redirect/git-pull?{query}"


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in Path(site).rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


def _rel(page: Path, site: Path, target: str) -> str:
    import os

    return Path(os.path.relpath(Path(site) / target, page.parent)).as_posix()


def _write_if_changed(page: Path, text: str, new: str) -> bool:
    """Write a page through a temporary file and a rename, so that a reader (a browser test) never sees half."""
    if new == text:
        return False
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(page)
    return True


def publish_files(site: Path, root: Path = ROOT) -> list[str]:
    """Copy CITATION.cff into the site (the footer links it). The section notebooks are in the site already:
    Sphinx copies each page's source into _sources/ (notebooks/NN_x.ipynb as stored, outputs included)."""
    copied = []
    src = Path(root) / CITATION_FILE
    if src.is_file():
        shutil.copy2(src, Path(site) / CITATION_FILE)
        copied.append(CITATION_FILE)
    return copied


_GET_BLOCK = re.compile(r'<span class="nl-get"[^>]*>.*?</span><!--/nl-get-->\n?', re.S)
_HEADER_BUTTONS = '<div class="article-header-buttons">'


def header_links(page: Path, site: Path, settings: dict) -> str:
    """The header's links for one page: the PDF edition (only when it is in the site), the page's notebook
    (section pages) and, when _config.yml names a class JupyterHub, the notebook opened there (hub_link), and the
    repository (only when its address is set)."""
    import html as html_lib

    site = Path(site)
    rel = page.relative_to(site).with_suffix("")
    links = []
    if (site / PDF_NAME).is_file():
        links.append(f'<a class="btn btn-sm nl-get-link nl-get-pdf" href="{_rel(page, site, PDF_NAME)}" download '
                     f'title="The whole book as one PDF, with bookmarks">PDF</a>')
    notebook = Path("_sources") / rel.with_suffix(".ipynb")
    if (site / notebook).is_file():
        href = _rel(page, site, notebook.as_posix())
        links.append(f'<a class="btn btn-sm nl-get-link nl-get-notebook" href="{href}" '
                     f'download="{rel.name}.ipynb" title="This section as a Jupyter notebook ({rel.name}.ipynb); '
                     f'to run it, see &quot;Run it in JupyterLab&quot; on the first page">.ipynb</a>')
        hub = hub_link(rel.with_suffix(".ipynb").as_posix(), settings.get("hub") or {})
        if hub:
            # a phone shows "JupyterHub" only (normlab-book.css hides .nl-get-wide); the name stays whole
            links.append(f'<a class="btn btn-sm nl-get-link nl-get-hub" href="{html_lib.escape(hub)}" '
                         f'aria-label="Open in your class\'s JupyterHub" title="Copies the book\'s notebooks into '
                         f'your home folder on the class\'s JupyterHub (or updates them) and opens this one">'
                         f'<span class="nl-get-wide">Open in your class\'s&nbsp;</span>JupyterHub</a>')
    if settings.get("repository"):
        links.append(f'<a class="btn btn-sm nl-get-link nl-get-repository" '
                     f'href="{html_lib.escape(settings["repository"])}" title="The source repository">Repository</a>')
    if not links:
        return ""
    return ('<span class="nl-get" role="group" aria-label="Downloads and links">' + "".join(links)
            + "</span><!--/nl-get-->\n")


# Words of the text that link to the repository or the PDF when there is one (<span class="nl-repository">,
# <span class="nl-pdf"> in book/intro.md) and stay plain words otherwise.
_PLACEHOLDER = re.compile(r'<(?:span|a) class="nl-(repository|pdf)"[^>]*>(.*?)</(?:span|a)>', re.S)


def link_placeholders(text: str, page: Path, site: Path, settings: dict) -> str:
    import html as html_lib

    def fill(m):
        kind, words = m.group(1), m.group(2)
        if kind == "repository" and settings.get("repository"):
            url = html_lib.escape(settings["repository"])
            return f'<a class="nl-repository reference external" href="{url}">{words}</a>'
        if kind == "pdf" and (Path(site) / PDF_NAME).is_file():
            return f'<a class="nl-pdf reference internal" href="{_rel(page, site, PDF_NAME)}" download>{words}</a>'
        return f'<span class="nl-{kind}">{words}</span>'

    return _PLACEHOLDER.sub(fill, text)


def add_header_links(site: Path, settings: dict) -> int:
    """Put header_links() into every page's header (replacing what an earlier run put there) and fill the
    text's placeholders (link_placeholders). Run again by make_pdf.py once the PDF is in the site. Returns the
    number of pages changed."""
    changed = 0
    for page in _pages(site):
        text = page.read_text(encoding="utf-8")
        new = link_placeholders(text, page, site, settings)
        if _HEADER_BUTTONS in new:
            block = _HEADER_BUTTONS + "\n" + header_links(page, site, settings)
            new = _GET_BLOCK.sub("", new).replace(_HEADER_BUTTONS, block, 1)
        changed += _write_if_changed(page, text, new)
    return changed


def publish_pdf(site: Path, pdf: Path, root: Path = ROOT) -> Path:
    """Copy the PDF edition into the site as normlab.pdf and link it from every page's header."""
    target = Path(site) / PDF_NAME
    if Path(pdf).resolve() != target.resolve():
        shutil.copy2(pdf, target)
    add_header_links(site, book_settings(root))
    return target


_EDITION = re.compile(r'<p class="nl-edition">.*?</p>\n?', re.S)
_CITE_FILE = re.compile(r'(<a class="nl-citation-file" href=")[^"]*(")')


_FIG_NUMBER = re.compile(r'<span class="caption-number">(?:Fig\.|Figure|Table|Listing) [\d.]+ </span>')


_FOLDED_CELL = re.compile(r'<details class="[^"]*\bhide\b[^"]*">.*?</details>', re.S)
_PRE = re.compile(r"<pre>.*?</pre>", re.S)
_HIGHLIGHT_SPAN = re.compile(r'<span class="[^"]*">|</span>')


def plain_folded_code(html: str) -> str:
    """The code of folded cells without its syntax-colour spans: the same text, a third of the bytes, and the
    checking line stays out of a page's first load (a reader who opens a fold reads it in plain monospace)."""
    def plain(fold):
        return _PRE.sub(lambda pre: _HIGHLIGHT_SPAN.sub("", pre.group(0)), fold.group(0))

    return _FOLDED_CELL.sub(plain, html)


def slim_folded_code(site: Path) -> int:
    """Apply plain_folded_code to every page; the bytes saved."""
    saved = 0
    for page in site.rglob("*.html"):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        new = plain_folded_code(text)
        if new != text:
            saved += len(text) - len(new)
            page.write_text(new, encoding="utf-8")
    return saved


def drop_figure_numbers(site: Path) -> int:
    """Remove Sphinx's "Fig. N" from the captions: a caption carries its own label ("Figure 23-5: ...", the
    reference text's numbering) or none, and no page refers to a figure by Sphinx's number. (jupyter-book turns
    numfig on and keeps it on whatever _config.yml says.) Returns the number of pages changed."""
    changed = 0
    for page in _pages(site):
        text = page.read_text(encoding="utf-8")
        changed += _write_if_changed(page, text, _FIG_NUMBER.sub("", text))
    return changed


def add_edition(site: Path, settings: dict) -> int:
    """The footer of every page: the version and the build date after the licence line, and the link to
    CITATION.cff made relative to the page. Returns the number of pages changed."""
    changed = 0
    version = f"Version {settings['version']}, built {settings['date']}." if settings.get("version") \
        else f"Built {settings['date']}."
    for page in _pages(site):
        text = page.read_text(encoding="utf-8")
        new = _EDITION.sub("", text)
        new = _CITE_FILE.sub(lambda m, page=page: m.group(1) + _rel(page, site, CITATION_FILE) + m.group(2), new)
        end = new.find("</p>", new.find('<p class="nl-licence"'))
        if '<p class="nl-licence"' in new and end >= 0:
            new = new[: end + 4] + f'\n<p class="nl-edition">{version}</p>' + new[end + 4:]
        changed += _write_if_changed(page, text, new)
    return changed


# -- the checks -------------------------------------------------------------------------------
RESOURCE_ATTRS = {"script": ["src"], "link": ["href"], "img": ["src"], "iframe": ["src"],
                  "source": ["src", "srcset"], "embed": ["src"], "video": ["src", "poster"],
                  "audio": ["src"], "object": ["data"]}


class _PageScan(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.resources: list[tuple[str, str]] = []  # (tag, url)
        self.images: list[tuple[str, str | None]] = []  # (src, alt)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for name in RESOURCE_ATTRS.get(tag, []):
            if a.get(name):
                # <link rel="canonical"/"prev"/"next"> etc. are navigation, not loads; keep only loads
                if tag == "link" and not _is_loaded_link(a):
                    continue
                self.resources.append((tag, a[name]))
        if tag == "img":
            self.images.append((a.get("src") or "", a.get("alt")))


def _is_loaded_link(attrs: dict) -> bool:
    rel = (attrs.get("rel") or "").lower().split()
    return bool({"stylesheet", "preload", "icon", "shortcut", "modulepreload", "prefetch",
                 "manifest", "apple-touch-icon", "mask-icon"} & set(rel))


def _is_external(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data", "blob")


def _local_size(page: Path, url: str, site: Path) -> int:
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return len(url) if parts.scheme == "data" else 0  # data: URIs are already in the HTML
    target = (page.parent / unquote(parts.path)).resolve()
    try:
        target.relative_to(site.resolve())
    except ValueError:
        return 0
    return target.stat().st_size if target.is_file() else 0


def _is_shared(page: Path, url: str, site: Path) -> bool:
    """Theme and MathJax files under _static are shared by every page (and cached); the 3 MB
    budget is for the page itself: its HTML with the images and slider frames it carries."""
    target = (page.parent / unquote(urlsplit(url).path)).resolve()
    try:
        return target.relative_to(site.resolve()).parts[0] == "_static"
    except (ValueError, IndexError):
        return False


def check_site(site: Path) -> list[str]:
    """Problems found in the built site (an empty list when everything passes)."""
    site = Path(site)
    problems = []
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)
    if not pages:
        return [f"no HTML pages under {site}; run `make book` first"]
    if not (site / MATHJAX_DIR / "MathJax.js").is_file():
        problems.append(f"{MATHJAX_DIR}/MathJax.js is missing from the site")
    if (site / FONTAWESOME_JS).exists():
        problems.append(f"{FONTAWESOME_JS} is still in the site (1.45 MB that no page needs)")
    for page in pages:
        rel = page.relative_to(site)
        text = page.read_text(encoding="utf-8")
        if "scripts/fontawesome.js" in text:
            problems.append(f"{rel}: still loads fontawesome.js")
        scan = _PageScan()
        scan.feed(text)
        size = len(text.encode("utf-8"))
        for tag, url in scan.resources:
            if _is_external(url):
                problems.append(f"{rel}: <{tag}> loads from another host: {url[:120]}")
            elif not url.startswith("data:") and not _is_shared(page, url, site):
                size += _local_size(page, url, site)
        for src, alt in scan.images:
            shown = src[:60] + ("..." if len(src) > 60 else "")
            if alt is None or not alt.strip():
                problems.append(f"{rel}: <img src={shown!r}> has no alt text")
            elif alt.strip() == src.strip() or alt.strip().endswith((".png", ".svg", ".jpg", ".jpeg", ".gif")):
                problems.append(f"{rel}: <img src={shown!r}> has a file name as alt text ({alt[:60]!r})")
        if size > PAGE_LIMIT:
            problems.append(f"{rel}: {size / 2**20:.2f} MB with its images and slider frames "
                            f"(limit {PAGE_LIMIT / 2**20:.0f} MB)")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "_build/html")
    if not site.is_dir():
        print(f"{site} does not exist; run `make book` first", file=sys.stderr)
        return 1
    if not (site / MATHJAX_DIR / "MathJax.js").is_file():
        copy_mathjax(site)
    drop_unused_scripts(site)
    slim_icons(site)
    slim_own_assets(site)
    light_images(site)
    slim_folded_code(site)
    settings = book_settings()
    publish_files(site)
    add_header_links(site, settings)
    add_edition(site, settings)
    drop_figure_numbers(site)
    write_search_index(site)
    write_question_assets(site)
    problems = check_site(site)
    for p in problems:
        print("finish_site:", p, file=sys.stderr)
    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts]
    if problems:
        print(f"finish_site: {len(problems)} problem(s) in {site}", file=sys.stderr)
        return 1
    print(f"finish_site: {len(pages)} pages checked: self-contained, alt text present, each under 3 MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
