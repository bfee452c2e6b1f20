"""The published book in a real browser (Debian's chromium through Playwright): the checks of a page and
of its explorables, and the tests of what they cannot see on one page load.

Reads the site `make book` built in _build/html, served on 127.0.0.1 (conftest.py: one server and one
Chromium per test process). Every page of _toc.yml is opened once at 1280x900 by
tests/test_site_reading.py::test_page_on_a_laptop, which runs the checks defined here: each page must load
with no console error, no failed request and no request to another host (those are blocked and
reported); equations must be typeset by the site's own MathJax (check_math); images have alt text
(check_images); every static slider must change the frame and its value label (check_controls); the page
with its images and frames must stay under 3 MB; the exercises page must not show solutions
(solution_problems); explorables fit a phone and a laptop (fit_problems) and their controls and presets
show what Python draws (check_combinations). A sizes report goes to _build/screenshots/report.txt.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from browser_support import ROOT, SCREENSHOTS, Tab, toc_pages, wait_for_mathjax

from normlab_core.canvas import NARROW_SHARPNESS
from normlab_core.interactive.static import NEUTRAL

pytestmark = pytest.mark.browser

PAGES = toc_pages()
SECTION_PAGES = [p for p in PAGES if p.startswith("notebooks/")]
EXERCISES = "notebooks/10_exercises"
REPORT: dict[str, dict] = {}


# -- typesetting --------------------------------------------------------------------------------
WAIT_FOR_MATHJAX = """() => new Promise(resolve => {
  const ready = () => window.MathJax && MathJax.isReady && MathJax.Hub;
  const go = () => MathJax.Hub.Queue(() => resolve(true));
  if (ready()) { go(); return; }
  const t = setInterval(() => { if (ready()) { clearInterval(t); go(); } }, 50);
})"""

MATH_STATE = """() => {
  const math = Array.from(document.querySelectorAll('span.math.notranslate, div.math.notranslate'));
  const untypeset = math.filter(el => !el.querySelector('.MathJax, .MathJax_Display, .MathJax_SVG, .MathJax_CHTML'))
                        .map(el => el.textContent.slice(0, 80));
  const hasError = n => !!n && (n.type === 'merror' || (n.data || []).some(hasError));
  const errors = window.MathJax && MathJax.Hub
    ? MathJax.Hub.getAllJax().filter(j => hasError(j.root)).map(j => j.originalText.slice(0, 80)) : [];
  const rendered = document.querySelectorAll('.MathJax, .MathJax_Display').length;
  return {count: math.length, untypeset, errors, rendered};
}"""


def check_math(v: Tab) -> int:
    count = v.page.evaluate("() => document.querySelectorAll('span.math.notranslate, div.math.notranslate').length")
    if not count:
        return 0
    try:
        v.page.wait_for_function("() => window.MathJax && MathJax.isReady === true", timeout=20000)
        v.page.evaluate(WAIT_FOR_MATHJAX)
    except Exception as e:  # noqa: BLE001 - report, don't crash the page check
        v.problems.append(f"MathJax did not start: {e}")
        return count
    state = v.page.evaluate(MATH_STATE)
    if state["untypeset"]:
        v.problems.append(f"{len(state['untypeset'])} of {count} equations not typeset, e.g. {state['untypeset'][:3]}")
    if state["errors"]:
        v.problems.append(f"TeX errors in: {state['errors'][:5]}")
    if not state["rendered"]:
        v.problems.append("page has math but MathJax rendered nothing")
    return count


# -- sliders ------------------------------------------------------------------------------------
FRAME_STATE = """(root) => ({
  src: root.getAttribute('data-frame') || root.querySelector('img.nl-frame').getAttribute('src'),
  loaded: root.querySelector('img.nl-frame').complete && root.querySelector('img.nl-frame').naturalWidth > 0,
  alt: root.querySelector('img.nl-frame').getAttribute('alt') || '',
  readouts: (root.querySelector('.nl-readouts') || {}).textContent || '',
})"""
OUTPUT_TEXT = "el => { const o = el.parentElement.querySelector('output'); return o && o.textContent; }"


def check_controls(v: Tab) -> tuple[int, int]:
    """Move every slider one step with the keyboard (and pick another option of every select):
    the frame or the readouts must change, the frame must still load, and a slider's value label must change."""
    roots = v.page.locator(".normlab-explorable")
    n_sliders = 0
    for i in range(roots.count()):
        root = roots.nth(i)
        name = root.get_attribute("data-explorable") or f"explorable #{i}"
        first = root.evaluate(FRAME_STATE)
        if not first["alt"].strip():
            v.problems.append(f"{name}: the frame has no alt text")
        sliders = root.locator("input[type=range]")
        for j in range(sliders.count()):
            n_sliders += 1
            s = sliders.nth(j)
            label = s.get_attribute("aria-label") or f"slider {j}"
            before = root.evaluate(FRAME_STATE)
            label_before = s.evaluate(OUTPUT_TEXT)
            at_max = s.evaluate("el => +el.value >= +el.max")
            s.focus()
            v.page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            try:  # the new frame is fetched on demand: give it time to arrive
                root.evaluate(WAIT_FOR_FRAME)
            except Exception:  # noqa: BLE001 - reported below as a frame that does not load
                pass
            after = root.evaluate(FRAME_STATE)
            label_after = s.evaluate(OUTPUT_TEXT)
            if after["src"] == before["src"] and after["readouts"] == before["readouts"]:
                v.problems.append(f"{name}: moving '{label}' changed neither the frame nor the readouts")
            if not after["loaded"]:
                v.problems.append(f"{name}: after moving '{label}' the frame does not load")
            if label_after is None:
                v.problems.append(f"{name}: '{label}' has no <output> value label")
            elif label_after == label_before:
                v.problems.append(f"{name}: moving '{label}' did not change its value label ({label_after!r})")
        selects = root.locator("select")
        for j in range(selects.count()):
            sel = selects.nth(j)
            label = sel.get_attribute("aria-label") or f"select {j}"
            options = sel.evaluate("el => Array.from(el.options).map(o => o.value)")
            current = sel.input_value()
            other = next((o for o in options if o != current), None)
            if other is None:
                continue
            before = root.evaluate(FRAME_STATE)
            sel.select_option(other)
            after = root.evaluate(FRAME_STATE)
            # a choice such as the storage dtype may change only the printed digits, not the picture
            if after["src"] == before["src"] and after["readouts"] == before["readouts"]:
                v.problems.append(f"{name}: choosing another '{label}' changed neither the frame nor the readouts")
    return roots.count(), n_sliders


def check_images(v: Tab) -> None:
    bad = v.page.evaluate("""() => Array.from(document.querySelectorAll('article img, main img'))
        .filter(img => { const a = (img.getAttribute('alt') || '').trim();
                         return !a || /\\.(png|svg|jpe?g|gif)$/i.test(a); })
        .map(img => (img.getAttribute('src') || '').slice(0, 60))""")
    for src in bad:
        v.problems.append(f"image without real alt text: {src}")
    h1 = v.page.evaluate("() => Array.from(document.querySelectorAll('article h1')).map(h => h.textContent.trim())")
    if len(h1) != 1:
        v.problems.append(f"expected exactly one <h1> heading in the article, found {h1}")


# -- the tests ----------------------------------------------------------------------------------
def test_toc_lists_the_whole_chapter():
    assert PAGES[0] == "book/intro"
    numbers = [re.match(r"notebooks/(\d\d)_", p).group(1) for p in SECTION_PAGES]
    # 23.1-23.10, then "Does it train?" and "Norms in 16 bits" (going further)
    assert numbers == [f"{k:02d}" for k in range(1, 13)], SECTION_PAGES
    assert PAGES[-2:] == ["book/instructors", "book/references"]


def test_index_leads_to_the_landing_page(visit):
    v = visit("index")
    v.page.wait_for_url(re.compile(r"book/intro\.html$"), timeout=10000)
    assert v.page.locator("article h1").first.inner_text().strip().startswith("normlab")
    assert not v.all_problems, "\n".join(v.all_problems)


def test_book_has_math_and_sliders(site):
    """Guard against a build in which static mode or MathJax silently did nothing (reads the HTML)."""
    total_sliders = total_math = 0
    for page_path in SECTION_PAGES:
        html = (site / f"{page_path}.html").read_text(encoding="utf-8")
        total_sliders += len(re.findall(r'<div class="normlab-explorable"[^>]* data-dir="nl-frames/', html))
        total_math += len(re.findall(r'class="math notranslate', html))
        assert "application/vnd.jupyter.widget-view+json" not in html and "jupyter-widgets" not in html, \
            f"{page_path} contains live-widget output; the book must be built with NORMLAB_STATIC=1"
    assert total_sliders > 0, "no static explorable on any section page"
    assert total_math > 0, "no equation on any section page"


def _solution_lines() -> list[str]:
    """Code lines of the reference solutions in the nbgrader source (when it is present)."""
    lines = []
    for nb in sorted((ROOT / "assignments" / "source").rglob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            inside = False
            for line in "".join(cell.get("source", [])).splitlines():
                s = line.strip()
                if "BEGIN SOLUTION" in s:
                    inside = True
                elif "END SOLUTION" in s:
                    inside = False
                elif inside and len(s) >= 20 and not s.startswith("#"):
                    lines.append(s)
    return lines


def solution_problems(v: Tab, site: Path) -> list[str]:
    """What the exercises page (open in `v`) shows of the reference solutions and hidden tests."""
    problems = []
    html = (site / f"{EXERCISES}.html").read_text(encoding="utf-8")
    text = v.page.locator("article").inner_text()
    if v.page.locator("article div.cell").count() < 1:
        problems.append("the exercises page has no code cells")
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        if marker in html:
            problems.append(f"the exercises page contains {marker!r}")
    shown = {line.strip() for line in text.splitlines()}
    leaked = [s for s in _solution_lines() if s in shown]  # whole lines: a test cell may share a substring
    if leaked:
        problems.append(f"reference-solution code on the exercises page: {leaked[:5]}")
    return problems


# -- explorables: every combination reachable, readouts equal to Python's, presets, layout ---------------------
STATE = """(root) => {
  const img = root.querySelector('img.nl-frame');
  const r = root.querySelector('.nl-readouts').getBoundingClientRect();
  return {
    controls: Array.from(root.querySelectorAll('[data-i]')).map(el => +el.value),
    labels: Array.from(root.querySelectorAll('[data-i]')).map(el => {
      const o = el.parentElement.querySelector('output');
      return o ? o.textContent : el.options[el.selectedIndex].textContent; }),
    rows: Array.from(root.querySelectorAll('.nl-current tr')).map(tr =>
      [tr.querySelector('th').textContent, tr.querySelector('td').textContent]),
    src: img.getAttribute('src'), alt: img.getAttribute('alt'),
    pressed: Array.from(root.querySelectorAll('button[data-preset][aria-pressed=true]')).map(b => b.dataset.preset),
    valuetext: Array.from(root.querySelectorAll('input[type=range]')).map(el => el.getAttribute('aria-valuetext')),
    readoutsHeight: r.height,
  };
}"""
IMAGE_LOADED = """(root) => { const img = root.querySelector('img.nl-frame');
  return img.complete && img.naturalWidth > 0 && root.dataset.frame && root.dataset.shown === root.dataset.state &&
    (img.currentSrc || img.src).endsWith(root.dataset.frame); }"""

WAIT_FOR_FRAME = f"""(root) => new Promise((ok, fail) => {{
  const t0 = Date.now();
  (function wait() {{
    if (({IMAGE_LOADED})(root)) {{ ok(true); }}
    else if (Date.now() - t0 > 10000) {{ fail('timeout'); }}
    else {{ setTimeout(wait, 20); }}
  }})();
}})"""


def explorable_counts() -> dict[str, int]:
    """How many static explorables each section page shows (read from the built HTML; {} before a build)."""
    from browser_support import SITE

    # the element's class attribute, not the bare name (23.10's text mentions the name without showing one)
    return {p: (SITE / f"{p}.html").read_text(encoding="utf-8").count('class="normlab-explorable')
            for p in SECTION_PAGES if (SITE / f"{p}.html").is_file()}


def explorable_pages() -> list[str]:
    """Section pages that show at least one static explorable (read from the built HTML; [] before a build)."""
    return [p for p, n in explorable_counts().items() if n]


class Expected:
    """What Python says an explorable shows at a given state (cached: each render costs tens of ms)."""

    def __init__(self, name: str):
        from normlab_core.figures import catalog

        self.exp = catalog()[name]
        self.positions = [c.positions() for c in self.exp.controls.values()]
        self._cache: dict = {}

    def values(self, state: list[int]) -> dict:
        return {k: p[i] for (k, p), i in zip(zip(self.exp.controls, self.positions, strict=True), state,
                                               strict=True)}

    def at(self, state: list[int]) -> dict:
        key = tuple(state)
        if key not in self._cache:
            from normlab_core.interactive.static import packed

            values = self.values(state)
            f = self.exp.render(**values)
            self._cache[key] = {
                "file": hashlib.sha256(packed(f.png)).hexdigest()[:20] + ".png",
                "rows": [[str(k), str(v)] for k, v in f.readouts.items()],
                "labels": [c.format(values[k]) for k, c in self.exp.controls.items()],
                "alt": f.alt,
            }
        return self._cache[key]


def move(v: Tab, root, i: int, target: int) -> None:
    """Put control i at position `target` as a reader would: arrow keys on a slider, a pick on a select."""
    el = root.locator(f"[data-i='{i}']")
    if el.evaluate("el => el.tagName") == "SELECT":
        el.select_option(str(target))
        return
    el.focus()
    current = int(el.input_value())
    key = "ArrowRight" if target > current else "ArrowLeft"
    for _ in range(abs(target - current)):
        v.page.keyboard.press(key)


def check_state(v: Tab, root, name: str, expected: Expected, state: list[int], what: str) -> dict:
    try:   # the readouts and alt text come with their frame
        root.evaluate(WAIT_FOR_FRAME)
    except Exception:  # noqa: BLE001 - reported as a problem of the page
        v.problems.append(f"{name}: after {what} the frame {root.get_attribute('data-frame')} did not load")
    got = root.evaluate(STATE)
    want = expected.at(state)
    if got["controls"] != state:
        v.problems.append(f"{name}: after {what} the controls are at {got['controls']}, expected {state}")
        return got
    if got["rows"] != want["rows"]:
        v.problems.append(f"{name}: after {what} the readouts show {got['rows']}, Python says {want['rows']}")
    if got["labels"] != want["labels"]:
        v.problems.append(f"{name}: after {what} the value labels are {got['labels']}, expected {want['labels']}")
    if got["alt"] != want["alt"]:
        v.problems.append(f"{name}: after {what} the alt text is {got['alt']!r}, expected {want['alt']!r}")
    sliders = [t for t, c in zip(want["labels"], expected.exp.controls.values(), strict=True) if hasattr(c, "stops")]
    if got["valuetext"] != sliders:
        v.problems.append(f"{name}: after {what} the sliders' aria-valuetext is {got['valuetext']}, they show "
                          f"{sliders}")
    if got["src"].rsplit("/", 1)[-1] != want["file"]:
        v.problems.append(f"{name}: after {what} the page shows frame {got['src']}, Python draws {want['file']}")
    return got


def check_first_load_of_explorables(v: Tab) -> None:
    """Right after loading: frames load on demand, at most the shown one per explorable (figures below the
    first screen load lazily, when the reader scrolls to them; WAIT_FOR_FRAME in check_combinations checks
    that each one arrives), and the page's own files are within 1.5 MB."""
    roots = v.page.locator(".normlab-explorable")
    n_frames_at_load = sum("/nl-frames/" in u and u.endswith(".png") for u in v.urls)
    if n_frames_at_load > roots.count():
        v.problems.append(f"first load fetched {n_frames_at_load} frames for {roots.count()} explorables")
    own, _ = v.sizes()
    if own > 1.5 * 2**20:
        v.problems.append(f"first load is {own / 2**20:.2f} MB (limit 1.5 MB)")


# The caption under an explorable's figure: the explanation of the preset shown, or the neutral one.
CAPTION = "r => r.querySelector('figcaption.nl-caption .nl-caption-text').textContent"


def check_combinations(v: Tab, page_path: str) -> None:
    """Random moves of every control: each control stays where it was put, and the readouts, labels and alt
    text are Python's at those values; every preset button sets every control, shows Python's readouts and puts
    its explanation under the figure (away from every preset, the neutral caption)."""
    import random

    roots = v.page.locator(".normlab-explorable")
    for r in range(roots.count()):
        root = roots.nth(r)
        name = root.get_attribute("data-explorable")
        expected = Expected(name)
        sizes = [len(p) for p in expected.positions]
        state = root.evaluate(STATE)["controls"]
        heights = {round(root.evaluate(STATE)["readoutsHeight"])}
        rng = random.Random(f"{page_path}/{name}")
        for step in range(10):
            i = rng.randrange(len(sizes))
            target = rng.choice([j for j in range(sizes[i]) if j != state[i]])
            move(v, root, i, target)
            state[i] = target
            got = check_state(v, root, name, expected, state, f"move {step + 1} (control {i} to {target})")
            heights.add(round(got["readoutsHeight"]))
            if got["controls"] != state:
                break
        presets = root.evaluate("r => JSON.parse(r.querySelector('.nl-spec').textContent).presets")
        data = dict((label, parts) for label, _, parts in presets)
        notices = {label: notice for label, notice, _ in presets}
        at = [notice for _, notice, parts in presets if parts == state]   # the caption after the random moves
        if (shown := root.evaluate(CAPTION)) != (at[0] if at else NEUTRAL):
            v.problems.append(f"{name}: at {state} the caption reads {shown!r}, expected {at[0] if at else NEUTRAL!r}")
        labels = root.evaluate("r => Array.from(r.querySelectorAll('button[data-preset]')).map(b => b.dataset.preset)")
        if labels != list(expected.exp.presets):
            v.problems.append(f"{name}: preset buttons {labels}, expected {list(expected.exp.presets)}")
        for label in labels:
            root.locator(f"button[data-preset={json.dumps(label)}]").click()
            want = expected.exp.preset_values(label)
            state = [p.index(want[k]) for k, p in zip(expected.exp.controls, expected.positions, strict=True)]
            if data[label] != state:
                v.problems.append(f"{name}: preset {label!r} is stored as {data[label]}, Python says {state}")
            got = check_state(v, root, name, expected, state, f"preset {label!r}")
            heights.add(round(got["readoutsHeight"]))
            if label not in got["pressed"]:
                v.problems.append(f"{name}: preset {label!r} is not shown as pressed")
            if (shown := root.evaluate(CAPTION)) != notices[label]:
                v.problems.append(f"{name}: preset {label!r} is explained under the figure as {shown!r}, its notice "
                                  f"is {notices[label]!r} (normlab_core/interactive/frontend.js captionOf)")
        if max(heights) - min(heights) > 1:
            v.problems.append(f"{name}: the readouts' height changed with the values: {sorted(heights)} px")


FIT = """(root) => {
  const box = root.getBoundingClientRect();
  const over = Array.from(root.querySelectorAll('.nl-control, .nl-name, output, input, select, button, img'))
    .filter(el => el.getClientRects().length)   // shown at all
    .filter(el => el.getBoundingClientRect().right > box.right + 1 || el.getBoundingClientRect().left < box.left - 1)
    .map(el => el.tagName + ' ' + (el.textContent || el.getAttribute('aria-label') || '').slice(0, 30));
  const cut = Array.from(root.querySelectorAll('.nl-name, button[data-preset], output'))
    .filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.textContent.slice(0, 30));
  const top = root.querySelector('.nl-controls').getBoundingClientRect().top;
  const img = root.querySelector('img.nl-frame').getBoundingClientRect();
  return {scroll: root.scrollWidth, client: root.clientWidth, over, cut, span: img.bottom - top,
          imgWidth: img.width};
}"""


def fit_problems(page, width: int, height: int) -> list[str]:
    """The explorables of a page loaded at width x height: nothing sticks out or is cut off, and on a laptop
    the controls and the figure fit in one view."""
    problems = []
    roots = page.locator(".normlab-explorable")
    for r in range(roots.count()):
        root = roots.nth(r)
        name = root.get_attribute("data-explorable")
        fit = root.evaluate(FIT)
        where = f"{name} at {width}x{height}"
        if fit["scroll"] > fit["client"]:
            problems.append(f"{where}: scrollWidth {fit['scroll']} > clientWidth {fit['client']}")
        if fit["over"]:
            problems.append(f"{where}: sticks out of the explorable: {fit['over'][:4]}")
        if fit["cut"]:
            problems.append(f"{where}: text cut off: {fit['cut'][:4]}")
        if width == 1280 and fit["span"] > height:
            problems.append(f"{where}: controls to the bottom of the figure take {fit['span']:.0f} px "
                            f"(more than the {height} px view)")
        if width <= 600:
            problems += narrow_problems(root, where)
        shot(root, f"{width}x{height}", name)
    if width <= 600:
        page.evaluate("() => window.scrollTo(0, 0)")
    return problems


def shot(root, size: str, name: str) -> None:
    """A screenshot of one explorable, its figure loaded: _build/screenshots/<size>/static-<name>.png."""
    root.scroll_into_view_if_needed()
    try:
        root.evaluate(WAIT_FOR_FRAME)
    except Exception:  # noqa: BLE001 - fit_problems and narrow_problems report a figure that does not load
        pass
    # the page's sticky header (and a focused skip link) would lie over the explorable's title: hidden for the shot
    hide = ("(on) => document.querySelectorAll('.bd-header, .bd-header-article, .skip-link')"
            ".forEach(e => e.style.visibility = on)")
    root.page.evaluate(hide, "hidden")
    (SCREENSHOTS / size).mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SCREENSHOTS / size / f"static-{name}.png"))
    root.page.evaluate(hide, "")


NARROW = """(root) => { const img = root.querySelector('img.nl-frame');
  const spec = JSON.parse(root.querySelector('.nl-spec').textContent);
  return {natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
          want: Math.round(SHARPNESS * spec.narrow[0]), css: spec.narrow[0], src: img.currentSrc || img.src,
          file: spec.first.narrow[0]}; }""".replace("SHARPNESS", str(NARROW_SHARPNESS))


def narrow_problems(root, where: str) -> list[str]:
    """On a screen up to 600 px wide, an explorable shows its narrow layout, at a size where its smallest text
    (8 pt, drawn at 90 dpi) stays at least 9 CSS px high; its figure loads once scrolled to."""
    root.scroll_into_view_if_needed()
    try:
        root.evaluate(WAIT_FOR_FRAME)
    except Exception:  # noqa: BLE001 - reported below
        return [f"{where}: the figure did not load once scrolled to"]
    n = root.evaluate(NARROW)
    problems = []
    if n["natural"] != n["want"] or not n["src"].endswith(n["file"]):
        problems.append(f"{where}: shows {n['src'][-40:]} ({n['natural']} px), not the narrow layout {n['file']}")
    if n["shown"] < 0.9 * n["css"]:
        problems.append(f"{where}: the narrow figure is shown {n['shown']:.0f} px wide: its 8 pt text is under 9 px")
    return problems


def test_an_explorable_works_from_file_urls(browser, site):
    """Opened straight from disk (file://, no server): the first frame shows and moving a control loads another."""
    pages = explorable_pages()
    if not pages:
        pytest.fail("no page with an explorable in the built site")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto((site / f"{pages[0]}.html").as_uri(), wait_until="load")
        root = page.locator(".normlab-explorable").first
        root.scroll_into_view_if_needed()  # its figure loads lazily, when it comes near the screen
        root.evaluate(WAIT_FOR_FRAME)
        assert root.evaluate(IMAGE_LOADED)
        before = root.evaluate(STATE)
        root.locator("[data-i='0']").focus()
        page.keyboard.press("End" if before["controls"][0] == 0 else "Home")
        root.evaluate(WAIT_FOR_FRAME)   # the new state's frame (its table.js loads on this first touch)
        after = root.evaluate(STATE)
        assert after["controls"][0] != before["controls"][0]
        assert (after["src"], after["rows"]) != (before["src"], before["rows"])
        assert root.evaluate(IMAGE_LOADED)
    finally:
        context.close()


def test_default_frame_returns_after_moving_away_before_it_loaded(visit):
    """The page's own image loads lazily. Moving a control before it has loaded (the explorable still far
    below the screen) and back again must show the default frame once the reader scrolls there (a
    detached lazy image never loads, so it must not be reused)."""
    counts = explorable_counts()
    page = max(explorable_pages(), key=lambda p: counts[p])   # its last explorable is far below the first screen
    v = visit(page)
    roots = v.page.locator(".normlab-explorable")
    assert roots.count(), f"{page} shows no explorable"
    root = roots.nth(roots.count() - 1)
    start = root.evaluate("r => r.querySelector('img.nl-frame').getAttribute('src')")
    loaded = root.evaluate("""r => { const img = r.querySelector('img.nl-frame');
      return img.complete && img.naturalWidth > 0; }""")
    assert loaded is False, "the test needs an explorable whose picture has not loaded yet (lazy, off screen)"
    move = """(r, back) => { const el = r.querySelector('[data-i]');
      if (!back) { r.dataset.was = el.value; el.value = String(+el.value === 0 ? 1 : 0); }
      else { el.value = r.dataset.was; }
      el.dispatchEvent(new Event('input')); }"""
    root.evaluate(move, False)
    root.evaluate(WAIT_FOR_FRAME)  # the other frame arrives and replaces the page's own image
    root.evaluate(move, True)
    root.scroll_into_view_if_needed()
    root.evaluate(WAIT_FOR_FRAME)
    assert root.evaluate("r => r.querySelector('img.nl-frame').getAttribute('src')") == start
    assert not v.all_problems, "\n".join(v.all_problems)


@pytest.mark.parametrize("size", ["1280x900", "390x844"])
def test_header_download_links_are_on_screen_and_download(reader, size):
    """A section's header shows its download links inside the screen, and each one fetches its file."""
    w, h = map(int, size.split("x"))
    r = reader("notebooks/04_layer_norm", viewport={"width": w, "height": h}, phone=w < 600)
    links = r.page.evaluate("""() => Array.from(document.querySelectorAll('.article-header-buttons a.nl-get-link'))
      .map(a => { const b = a.getBoundingClientRect();
                  return {text: a.textContent.trim(), href: a.href, left: b.left, right: b.right, top: b.top,
                          shown: a.checkVisibility()}; })""")
    assert any(link["text"] == ".ipynb" for link in links), links
    for link in links:
        assert link["shown"] and link["left"] >= 0 and link["right"] <= w and link["top"] >= 0, (size, link)
        if r.server.is_local(link["href"]):
            import urllib.request

            with urllib.request.urlopen(urllib.request.Request(link["href"], method="HEAD"), timeout=30) as got:
                assert got.status == 200, (link, got.status)
    assert not r.all_problems, "\n".join(r.all_problems)


def several_explorables_page() -> str:
    """A section page that shows two explorables or more (23.6 when it does)."""
    pages = [p for p, n in explorable_counts().items() if n >= 2]
    if not pages:
        pytest.fail("no page of the built site shows two explorables")
    return next((p for p in pages if p.startswith("notebooks/06_")), pages[0])


def test_back_forward_and_reload_bring_back_every_explorable_of_a_page(visit):
    """Two explorables moved one after the other: after leaving the page and coming Back, after Forward and Back
    again, and after a reload, both show what they showed (controls, frame, readouts, alt text, aria-valuetext:
    Python's at those stops), and the others stay at their start."""
    page_path = several_explorables_page()
    v = visit(page_path)
    roots = v.page.locator(".normlab-explorable")
    names = [roots.nth(r).get_attribute("data-explorable") for r in range(roots.count())]
    starts = [roots.nth(r).evaluate("r => JSON.parse(r.querySelector('.nl-spec').textContent).start")
              for r in range(roots.count())]
    want = {}
    for r in (0, 1):   # A, then B: the one moved last
        root, expected = roots.nth(r), Expected(names[r])
        root.scroll_into_view_if_needed()
        state = list(starts[r])
        for i in range(min(2, len(state))):   # two controls (or the one there is) moved off their start
            state[i] = 0 if state[i] else 1
            move(v, root, i, state[i])
        got = check_state(v, root, names[r], expected, state, "moving it")
        want[names[r]] = {k: got[k] for k in ("controls", "labels", "rows", "src", "alt", "valuetext")}
    assert not v.all_problems, "\n".join(v.all_problems)
    assert v.page.evaluate("() => Object.keys(history.state.normlab).sort()") == sorted(want)

    def settled() -> None:   # MathJax and everything else the page loads: leaving before would cancel it
        wait_for_mathjax(v.page)
        v.page.wait_for_load_state("networkidle", timeout=90000)

    def shown(what: str) -> None:
        settled()
        roots = v.page.locator(".normlab-explorable")
        for r, name in enumerate(names):
            root = roots.nth(r)
            root.scroll_into_view_if_needed()
            if name not in want:
                assert root.evaluate(STATE)["controls"] == starts[r], f"{name} after {what}: not touched"
                continue
            check_state(v, root, name, Expected(name), want[name]["controls"], what)
            got = root.evaluate(STATE)
            assert {k: got[k] for k in want[name]} == want[name], f"{name} after {what}"
        assert not v.all_problems, "\n".join(v.all_problems)

    v.page.goto(v.server.base + "book/glossary.html", wait_until="load")
    settled()
    v.page.go_back(wait_until="load")
    shown("Back")
    v.page.go_forward(wait_until="load")
    assert v.page.url.endswith("book/glossary.html")
    settled()
    v.page.go_back(wait_until="load")
    shown("Forward and Back")
    v.page.reload(wait_until="load")
    shown("a reload")


PRIORITY = {"VeryLow": 0, "Low": 1, "Medium": 2, "High": 3, "VeryHigh": 4}


def test_on_a_slow_link_the_frame_asked_for_comes_before_frames_fetched_ahead(browser, server):
    """At 400 kbit/s (100 ms latency, emulated by Chromium), a slider moved twice: the first frame asked for is
    fetched with a higher priority than the frames fetched ahead after it is shown, at most two of those are on
    their way at once, and when the reader moves on, those still on their way are cancelled, so that no frame
    fetched ahead arrives before the second frame asked for."""
    from browser_support import DESKTOP

    page_path = several_explorables_page()
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        events = []   # (what, request id, url, priority), in the order Chromium reports them
        cdp.on("Network.requestWillBeSent", lambda e: events.append(
            ("sent", e["requestId"], e["request"]["url"], e["request"].get("initialPriority"))))
        cdp.on("Network.loadingFinished", lambda e: events.append(("done", e["requestId"], None, None)))
        cdp.on("Network.loadingFailed", lambda e: events.append(
            ("cancelled" if e.get("canceled") else "failed", e["requestId"], None, None)))
        page.goto(server.base + page_path + ".html", wait_until="load")
        root = page.locator(".normlab-explorable").first
        root.scroll_into_view_if_needed()
        root.evaluate(WAIT_FOR_FRAME)
        cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 100,
                                                     "downloadThroughput": 400_000 / 8,
                                                     "uploadThroughput": 400_000 / 8})
        start = len(events)
        slider = root.locator("input[type=range]").first
        at, top = int(slider.input_value()), int(slider.get_attribute("max"))
        assert top >= 2, "the test needs a slider with three stops or more"
        key = "ArrowRight" if at + 2 <= top else "ArrowLeft"
        slider.focus()
        frames = []
        for _ in range(2):   # the second move as soon as the first frame is shown: frames ahead are on their way
            page.keyboard.press(key)
            root.evaluate(WAIT_FOR_FRAME.replace("10000", "120000"))
            frames.append(server.base.rstrip("/") + root.evaluate(
                "r => new URL(r.dataset.frame, location.href).pathname"))
        for _ in range(1200):   # until every frame request made so far has finished or failed
            requests = {e[1]: e for e in events[start:] if e[0] == "sent" and "/nl-frames/" in e[2]
                        and e[2].endswith(".png")}
            if set(requests) <= {e[1] for e in events if e[0] != "sent"}:
                break
            page.wait_for_timeout(100)
        log = [e for e in events[start:] if e[1] in requests]
    finally:
        context.close()
    end = {e[1]: (i, e[0]) for i, e in enumerate(log) if e[0] != "sent"}
    assert set(end) == set(requests), "a frame request never ended"
    [first] = [r for r, e in requests.items() if e[2] == frames[0]]
    [second] = [r for r, e in requests.items() if e[2] == frames[1] and end[r][1] == "done"]
    ahead = [r for r in requests if r not in (first, second) and log.index(requests[r]) > end[first][0]]
    assert ahead, "no frame was fetched ahead after the first frame was shown"
    assert all(PRIORITY[requests[first][3]] > PRIORITY[requests[r][3]] for r in ahead), \
        [(requests[r][2].rsplit("/", 1)[1], requests[r][3]) for r in [first, *ahead]]
    on_the_way, most = set(), 0
    for what, r, _, _ in log:
        if r in ahead:
            (on_the_way.add if what == "sent" else on_the_way.discard)(r)
            most = max(most, len(on_the_way))
    assert most <= 2, f"{most} frames fetched ahead at once"
    early = [requests[r][2] for r in ahead if end[r][0] < end[second][0] and end[r][1] == "done"]
    assert not early, f"frames fetched ahead arrived before the frame asked for: {early}"
    cancelled = [r for r in ahead if end[r][1] == "cancelled" and end[r][0] < end[second][0]]
    assert cancelled, "no frame fetched ahead was cancelled when the reader moved on"
