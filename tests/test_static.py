"""The static face on the toy explorable: what the writer stages (frames of every state in both layouts, the table,
the shared script and stylesheet), what place_frames.py puts beside a page, and the page in Chromium as a reader
uses it (marker `browser`): controls, presets, value labels, aria-valuetext, alt text, the loading state, the
narrow layout on a phone, Back/Forward, and opening it from disk."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_support import SiteServer
from explorable_support import every_state, pixels, toy

from normlab_core.canvas import DPI, NARROW_SHARPNESS
from normlab_core.interactive import static

ROOT = Path(__file__).resolve().parents[1]


def table(folder: Path) -> dict:
    text = (folder / "table.js").read_text(encoding="utf-8")
    assert text.startswith("normlabTable(") and text.rstrip().endswith(");")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def spec(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" class="nl-spec">(.*?)</script>', page,
                                re.S).group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A page with the toy explorable, its files staged and placed as `make book` does."""
    root = tmp_path_factory.mktemp("site")
    staging = root / "staging"
    html = static.static_html(toy(), folder=staging / "toy")
    page = root / "html" / "page.html"
    page.parent.mkdir()
    head = "<meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
    page.write_text(f"<!doctype html><html><head>{head}</head><body><h1>Toy</h1><p>before</p>"
                    f"{html}<p style='height: 2000px'>after</p></body></html>", encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "place_frames.py"), str(page.parent),
                          str(staging)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return {"root": root, "staging": staging, "html": html, "page": page}


def test_every_state_is_drawn_once_in_both_layouts(site):
    exp, t = toy(), table(site["staging"] / "toy")
    assert t["name"] == "toy" and len(t["frames"]) == len(every_state(exp)) == 32
    for values in every_state(exp)[::5]:
        key = ",".join(str(exp.controls[k].positions().index(v)) for k, v in values.items())
        wide, narrow, rows, alt = t["frames"][key]
        for index, layout in ((wide, False), (narrow, True)):
            png = (site["staging"] / "toy" / t["files"][index]).read_bytes()
            assert t["files"][index] == hashlib.sha256(png).hexdigest()[:20] + ".png"
            assert (pixels(png) == pixels(exp.render(narrow=layout, **values).png)).all()
        f = exp.render(**values)
        assert t["rows"][rows] == [list(r) for r in f.readouts.items()] and t["alts"][alt] == f.alt


def test_the_page_holds_the_spec_and_the_first_frame_only(site):
    html, s = site["html"], spec(site["html"])
    assert s["controls"][0] == {"label": "scale", "kind": "slider", "labels": ["0.5", "1", "2", "4"],
                                "stops": [0.5, 1.0, 2.0, 4.0], "free": [0.0, 10.0, False]}
    assert s["start"] == [1, 2, 0] and [p[:1] + p[2:] for p in s["presets"]] == [["big", [3, 2, 0]],
                                                                                  ["banded", [1, 0, 1]]]
    assert set(s["first"]) == {"wide", "narrow"} and s["wide"] == [648, 297] and s["narrow"] == [360, 450]
    assert "http" not in html and "table.js" not in html and html.count("<img") == 1
    assert '<source media="(max-width: 600px)"' in html and f'alt="{s["first"]["wide"][2]}"' in html
    assert len(html) < 4000


def test_one_script_and_one_stylesheet_for_every_explorable(site):
    js = (site["staging"] / "normlab-explorable.js").read_text(encoding="utf-8")
    source = (ROOT / "normlab_core" / "interactive" / "frontend.js").read_text(encoding="utf-8")
    assert js == "(function () {\n" + source.replace("export default { render };", "boot();") + "})();\n"
    assert "export" not in js and (site["staging"] / "normlab-explorable.css").read_text() == \
        (ROOT / "normlab_core" / "interactive" / "frontend.css").read_text()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to parse JavaScript")
def test_the_classic_script_parses_as_a_script_and_the_module_as_a_module(tmp_path):
    """node --check reads a .cjs file as a classic (CommonJS) script, where any import or export is a syntax error,
    and a .mjs file as an ES module: the book's script must be the one, frontend.js the other."""
    (tmp_path / "book.cjs").write_text(static.script(), encoding="utf-8")
    (tmp_path / "frontend.mjs").write_text((static.HERE / "frontend.js").read_text(encoding="utf-8"))
    for name in ("book.cjs", "frontend.mjs"):
        out = subprocess.run(["node", "--check", str(tmp_path / name)], capture_output=True, text=True)
        assert out.returncode == 0, (name, out.stderr)
    (tmp_path / "module-as-script.cjs").write_text((static.HERE / "frontend.js").read_text(encoding="utf-8"))
    assert subprocess.run(["node", "--check", str(tmp_path / "module-as-script.cjs")], capture_output=True).returncode


@pytest.mark.parametrize("change", ["a second export", "an import", "no export", "code after the export"])
def test_a_frontend_the_classic_script_cannot_be_built_from_is_refused(tmp_path, monkeypatch, change):
    source = (static.HERE / "frontend.js").read_text(encoding="utf-8")
    edited = {"a second export": source.replace("function boot()", "export function boot()"),
              "an import": "import x from './x.js';\n" + source,
              "no export": source.replace(static.EXPORT, "export default { render: render };"),
              "code after the export": source + "boot();\n"}[change]
    assert edited != source
    (tmp_path / "frontend.js").write_text(edited, encoding="utf-8")
    monkeypatch.setattr(static, "HERE", tmp_path)
    with pytest.raises(ValueError, match="frontend.js must end with"):
        static.script()


def test_place_frames_copies_what_the_page_lists_and_reports_what_is_missing(site, tmp_path):
    placed = site["page"].parent / "nl-frames"
    assert sorted(p.name for p in placed.iterdir()) == ["normlab-explorable.css", "normlab-explorable.js", "toy"]
    assert {p.name for p in (placed / "toy").iterdir()} == set(table(site["staging"] / "toy")["files"]) | {"table.js"}
    staging = tmp_path / "staging"
    staging.mkdir()
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "place_frames.py"), str(site["page"].parent),
                          str(staging)], capture_output=True, text=True)
    assert out.returncode == 1 and "was not rendered" in out.stderr


def test_the_static_book_offers_stops_only(tmp_path):
    with pytest.raises(ValueError, match="stops only"):
        static.static_html(toy(), folder=tmp_path / "toy", scale=2.5)


# -- in the browser -----------------------------------------------------------------------------------------------
STATE = """r => ({state: r.dataset.state, src: r.querySelector('img.nl-frame').getAttribute('src'),
  alt: r.querySelector('img.nl-frame').alt, label: r.querySelector('output').textContent,
  valuetext: Array.from(r.querySelectorAll('input[type=range]')).map(i => i.getAttribute('aria-valuetext')),
  rows: Array.from(r.querySelectorAll('.nl-current tr')).map(tr => tr.textContent),
  loading: r.classList.contains('nl-loading'), natural: r.querySelector('img.nl-frame').naturalWidth,
  pressed: Array.from(r.querySelectorAll('button[aria-pressed=true]')).map(b => b.dataset.preset)})"""


def settle(page, root, state: str) -> dict:
    page.wait_for_function("([r, s]) => r.dataset.state === s && r.dataset.shown === s && "
                           "r.querySelector('img.nl-frame').complete", arg=[root, state], timeout=10000)
    return root.evaluate(STATE)


@pytest.mark.browser
def test_a_reader_moves_the_controls_of_the_static_page(site, browser):
    exp, t = toy(), table(site["staging"] / "toy")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(site["page"].as_uri())                          # from disk, as a reader may open it
        root = page.locator(".normlab-explorable").element_handle()
        first = settle(page, root, "1,2,0")
        assert first["valuetext"] == ["1", "4"] and first["label"] == "1"
        assert first["rows"] == ["largest |y|5", "marks4"] and first["alt"] == exp.render().alt
        page.locator("input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
        moved = settle(page, root, "2,2,0")
        assert moved["valuetext"] == ["2", "4"] and moved["label"] == "2" and moved["rows"][0] == "largest |y|10"
        assert moved["src"].endswith(t["files"][t["frames"]["2,2,0"][0]]) and moved["alt"] == exp.render(
            scale=2.0).alt and moved["natural"] == 1296
        page.locator("button[data-preset='banded']").click()
        banded = settle(page, root, "1,0,1")
        assert banded["pressed"] == ["banded"] and page.locator("select").input_value() == "1"
        # Back and Forward: the controls come back with the state the page shows
        page.goto((site["page"].parent / "nl-frames" / "toy" / "table.js").as_uri())
        page.go_back()
        root = page.locator(".normlab-explorable").element_handle()
        back = settle(page, root, "1,0,1")
        assert back["valuetext"] == ["1", "0"] and back["pressed"] == ["banded"] and back["rows"] == banded["rows"]
        assert page.locator("select").input_value() == "1"
    finally:
        context.close()
    assert not problems, problems


class _SlowFrames(SiteServer):
    """The site over http, every frame taking 0.6 s to arrive (a slow link)."""

    def __init__(self, directory: Path):
        super().__init__(directory)

        class Handler(self.httpd.RequestHandlerClass.func):
            def do_GET(self):  # noqa: N802 - the base class names it
                if self.path.endswith(".png"):
                    time.sleep(0.6)
                super().do_GET()

        self.httpd.RequestHandlerClass = functools.partial(Handler, directory=str(directory))


@pytest.mark.browser
def test_a_slow_frame_shows_the_loading_state_and_a_phone_gets_the_narrow_layout(site, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        server = _SlowFrames(site["page"].parent).__enter__()
        page.goto(server.base + "page.html")
        root = page.locator(".normlab-explorable").element_handle()
        root.scroll_into_view_if_needed()
        first = settle(page, root, "1,2,0")
        narrow = round(toy().narrow_size[0] * DPI * NARROW_SHARPNESS)   # the narrow layout's pixels, drawn at 3x
        assert first["natural"] == narrow, "a phone shows the narrow layout"
        page.locator("input[type=range]").last.focus()
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("r => r.classList.contains('nl-loading')", arg=root, timeout=2000)
        assert root.evaluate(STATE)["rows"] == first["rows"], "the readouts wait for their frame"
        done = settle(page, root, "1,1,0")
        assert done["rows"][1] == "marks2" and done["natural"] == narrow
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, f"the page is {width} px wide on a 390 px screen"
    finally:
        context.close()
        server.__exit__()


# -- the caption: the explanation of the state shown, under the figure, in both faces ---------------------------
CAPTION = "r => r.querySelector('figcaption.nl-caption .nl-caption-text').textContent"


def test_the_page_carries_the_caption_of_its_first_state(site):
    """Before any script runs (and in a reader without scripts) the caption of the state shown is on the page."""
    exp = toy()
    assert spec(site["html"])["caption"] == static.NEUTRAL   # the toy starts at no preset's state
    assert f'<p class="nl-caption">{static.NEUTRAL}</p>' in site["html"]
    at_big = static.spec(exp, exp.preset_values("big"))
    assert at_big["caption"] == "the line leaves the small axis" and at_big["neutral"] == static.NEUTRAL


@pytest.mark.browser
def test_a_preset_sets_the_caption_and_moving_a_control_off_it_clears_it(site, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(site["page"].as_uri())
        root = page.locator(".normlab-explorable").element_handle()
        settle(page, root, "1,2,0")
        assert root.evaluate(CAPTION) == static.NEUTRAL
        page.locator("button[data-preset='banded']").click()
        settle(page, root, "1,0,1")
        assert root.evaluate(CAPTION) == "no marks, darker band"
        box = page.locator("figcaption.nl-caption").bounding_box()
        img = page.locator("img.nl-frame").bounding_box()
        assert box["y"] >= img["y"] + img["height"] - 1 and box["y"] < img["y"] + img["height"] + 60, (
            "the caption sits right under the figure")
        page.locator("button[data-preset='big']").click()
        settle(page, root, "3,2,0")
        assert root.evaluate(CAPTION) == "the line leaves the small axis"
        page.locator("input[type=range]").last.focus()
        page.keyboard.press("ArrowLeft")                      # off the preset: the neutral caption
        settle(page, root, "3,1,0")
        assert root.evaluate(CAPTION) == static.NEUTRAL
        page.emulate_media(media="print")                     # print: the caption and every preset's explanation
        assert page.locator("figcaption.nl-caption").is_visible()
        notes = page.locator(".nl-preset-notes li").all_text_contents()
        assert notes == ["big: the line leaves the small axis", "banded: no marks, darker band"]
        page.emulate_media(media="screen")
        assert not page.locator(".nl-preset-notes").is_visible()
    finally:
        context.close()
    assert not problems, problems


def test_the_live_face_starts_with_the_caption_of_its_state():
    """The live widget's spec gives the caption of the state it starts at (a preset's notice, computed for the
    learner's inputs) and the neutral one that frontend.js shows away from every preset."""
    from normlab_core.interactive import live

    exp = toy()
    views = [live.LiveView(exp, **exp.preset_values("banded")), live.LiveView(exp, x=[0.0, 4.0, 1.0])]
    try:
        at_banded, own = (v.spec for v in views)
        assert at_banded["caption"] == "no marks, darker band" and at_banded["neutral"] == static.NEUTRAL
        assert own["caption"] == static.NEUTRAL
        assert [p[1] for p in at_banded["presets"]] == ["the line leaves the small axis", "no marks, darker band"]
    finally:
        for v in views:
            v.close()


# The live face's frontend in Chromium: anywidget's render() over a stand-in for the widget's model (the kernel's
# side is tests/test_live.py; the whole JupyterLab round trip, tests/test_lab.py).
LIVE_PAGE = """<!doctype html><meta charset="utf-8"><link rel="stylesheet" href="frontend.css"><div id="w"></div>
<script type="module">
import widget from "./frontend.js";
const spec = JSON.parse(document.getElementById("spec").textContent), sent = [];
const model = { get: (k) => (k === "spec" ? spec : {}), on() {}, off() {}, send: (m) => sent.push(m) };
window.sent = sent;
widget.render({ model, el: document.getElementById("w") });
window.ready = true;
</script>"""


@pytest.mark.browser
def test_the_live_widget_caption_follows_a_preset_and_leaves_it(tmp_path, browser):
    exp = toy()
    for name in ("frontend.js", "frontend.css"):
        shutil.copy(static.HERE / name, tmp_path / name)
    body = json.dumps({**static.spec(exp, exp.defaults()), "keep": 48}).replace("</", "<\\/")
    (tmp_path / "live.html").write_text(LIVE_PAGE + f'<script type="application/json" id="spec">{body}</script>',
                                        encoding="utf-8")
    # (the spec's script comes after the module's: a module script runs once the page is parsed)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems = []
    try:
        with SiteServer(tmp_path) as server:
            page = context.new_page()
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(server.base + "live.html")
            page.wait_for_function("() => window.ready")
            root = page.locator("#w").element_handle()
            assert root.evaluate(CAPTION) == static.NEUTRAL
            page.locator("button[data-preset='big']").click()
            assert root.evaluate(CAPTION) == "the line leaves the small axis"
            assert page.evaluate("() => window.sent.at(-1).want") == "3,2,0"
            page.locator("select").select_option("1")
            assert root.evaluate(CAPTION) == static.NEUTRAL
    finally:
        context.close()
    assert not problems, problems
