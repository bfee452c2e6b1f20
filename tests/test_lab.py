"""The live face in a real JupyterLab (Debian's chromium through Playwright), used as a learner uses it.

Starts `jupyter lab` from the project's .venv on 127.0.0.1 (free port, token, a temporary copy of the
section notebooks, so nothing is saved into the repository; requests to other hosts are blocked and
reported). For every section notebook 01-09: Run All; no cell may end with an error or write to stderr.
Then, for every live explorable the notebook shows (found through `normlab_core.live.views()`), every
slider visits all of its stops by keyboard on its handle, every toggle button is clicked, every preset
button (`.nl-preset`) is clicked. After each step:

- the value the kernel drew (`LiveExplorable.drawn`) equals the expected state EXACTLY (types too): the
  stop the control was moved to, every other control where it was left (nothing resets), the preset;
- the page shows that state's readouts, alt text and every control's value label, and its frame, as
  rendered independently by a fresh Explorable in a worker process: the same PNG (by checksum), or else
  the kernel's last frame, differing from the fresh one in at most 0.2% of its pixels (anti-aliasing
  of a few glyphs may depend on the state drawn before); the image changes whenever the frame differs
  from the previous state's;
- the widget shows no error message.

Also: the image is drawn at 2x its display width; title, controls and figure fit in the notebook area of a
1280x900 window; at the end no cell output has an error, the server log
has no traceback, the page had no script error and made no off-site request. One screenshot per
explorable goes to _build/screenshots/lab-<name>.png. Marker `lab`; skips without chromium, fails under
NORMLAB_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import re
import time

import pytest
from browser_support import SCREENSHOTS, chromium_or_skip
from lab_support import (
    JS_KERNEL_EXEC,
    SECTION_NOTEBOOKS,
    LabPage,
    LabServer,
    expected_views,
    launch_chromium,
    plan,
)

pytestmark = pytest.mark.lab

STEP_TIMEOUT_MS = 15000  # one step: the kernel draws, the browser shows the new frame and readouts

# The explorables the kernel holds, with the last values each one drew, exactly (floats via repr in JSON).
DRAWN = """
import base64 as _b64, json as _json, normlab_core.live as _live
def _key(png):
    src = "data:image/png;base64," + _b64.b64encode(png).decode("ascii")
    return f"{len(src)}:{src[-48:]}"
for _v in _live.views(): _v.wait()
print(_json.dumps([[_v.explorable.name, _v.drawn, _key(_v.png)] for _v in _live.views()],
                  default=lambda o: o.item()))
"""

# The PNG a view last drew, base64 (fetched only when it differs from the frame rendered here).
PNG_OF = "import base64, normlab_core.live as L; print(base64.b64encode(L.views()[{}].png).decode('ascii'))"

# Pixels of a frame that may differ from the one rendered in a fresh process: the same state drawn after
# another one can differ in the anti-aliasing of a few glyphs (blitting over a cached background).
PIXEL_TOLERANCE = 0.002

# What one explorable's widget shows: the image (the PNG bytes behind its blob: URL, keyed as
# lab_support.src_key does), the visible readouts table (not the hidden one that keeps the height steady), each
# control's value label, the alt text, the widget's text, and the image's bitmap and display widths.
JS_STATE = """async (root) => {
  const img = root.querySelector('img.nl-frame') || root.querySelector('img');
  const url = img ? img.src : '';
  window.__nlKeys = window.__nlKeys || new Map();
  if (url && !window.__nlKeys.has(url)) {
    let key = 'unreadable:' + url;
    try {
      const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
      let bin = '';
      for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode(...bytes.subarray(i, i + 8192));
      const data = 'data:image/png;base64,' + btoa(bin);
      key = data.length + ':' + data.slice(-48);
    } catch (err) { /* a revoked URL: the image was replaced meanwhile */ }
    window.__nlKeys.set(url, key);
  }
  const src = url ? window.__nlKeys.get(url) : '';
  const table = root.querySelector('.nl-current table') || root.querySelector('table');
  const rows = table ? Array.from(table.querySelectorAll('tr')).map(tr => [
      (tr.querySelector('th') || {}).textContent, (tr.querySelector('td') || {}).textContent]) : [];
  const controls = Array.from(root.querySelectorAll('.widget-slider, .widget-toggle-buttons, .widget-dropdown'))
    .map(el => {
      if (el.matches('.widget-toggle-buttons')) {
        const on = el.querySelector('.widget-toggle-button.mod-active');
        return on ? on.textContent.trim() : null;
      }
      const r = el.querySelector('.widget-readout');
      return r ? r.textContent.trim() : null;
    });
  return {src, alt: img ? img.alt : null, readouts: rows, controls,
          text: root.textContent, natural: img ? img.naturalWidth : 0,
          shown: img ? img.getBoundingClientRect().width : 0};
}"""

# Wait (up to a timeout) until the widget shows `want` (its frame, or when the frame must change from
# `before`, at least another frame), then ask the kernel what it drew.
JS_STEP = f"""async ([root, want, code, timeout, before, changes]) => {{
  const state = {JS_STATE};
  const same = s => (s.src === want.src || !changes || s.src !== before) && s.alt === want.alt &&
    JSON.stringify(s.readouts) === JSON.stringify(want.readouts) &&
    JSON.stringify(s.controls) === JSON.stringify(want.controls);
  const t0 = performance.now();
  let s = await state(root);
  while (!same(s) && performance.now() - t0 < timeout) {{
    await new Promise(r => setTimeout(r, 15));
    s = await state(root);
  }}
  const k = await ({JS_KERNEL_EXEC})(code);
  return {{s, k}};
}}"""


# Scroll the widget to the top of the notebook; how tall its title, controls and figure are, and how much
# of the notebook a 1280x900 window shows.
JS_FIT = """(root) => {
  const box = root.closest('.jp-WindowedPanel-outer') || root.closest('.jp-Notebook');
  root.scrollIntoView({block: 'start'});
  const img = root.querySelector('img.nl-frame') || root.querySelector('img');
  return {need: img.getBoundingClientRect().bottom - root.getBoundingClientRect().top, have: box.clientHeight};
}"""


# Wait (at most 2 s) until the notebook's scroll position and the widget's place on the screen have stayed the
# same for six animation frames in a row (about 0.1 s): JupyterLab may still be scrolling after Run All.
JS_SETTLED = """async (root) => {
  const box = root.closest('.jp-WindowedPanel-outer') || root.closest('.jp-Notebook');
  let last = null, same = 0;
  const t0 = performance.now();
  while (same < 6 && performance.now() - t0 < 2000) {
    await new Promise(r => requestAnimationFrame(r));
    const now = `${box.scrollTop}:${root.getBoundingClientRect().top}`;
    same = now === last ? same + 1 : 0;
    last = now;
  }
}"""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def same(a: dict, b: dict) -> bool:
    """Equal values of equal types (1 != 1.0 here: the kernel must draw the stop itself)."""
    return a.keys() == b.keys() and all(type(a[k]) is type(b[k]) and a[k] == b[k] for k in a)


@pytest.fixture(scope="module")
def expected():
    """name -> future of expected_views(name), computed in one worker process while JupyterLab runs."""
    chromium_or_skip()  # before starting any work
    os.environ.setdefault("MPLBACKEND", "Agg")
    from normlab_core import explore

    pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    futures = {name: pool.submit(expected_views, name) for name in explore.catalog()}
    yield futures
    pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="module")
def lab(expected):
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with LabServer() as server, sync_playwright() as pw:
        browser = launch_chromium(pw, executable)
        page = LabPage(browser, server)
        yield page, server
        page.close()
        browser.close()


def state_of(root) -> dict:
    return root.evaluate(JS_STATE)


def pixel_difference(page: LabPage, index: int, exp, state: dict) -> float:
    """Share of pixels in which the kernel's last frame differs from a fresh render of `state` here."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    from normlab_core import explorables

    shown = base64.b64decode(page.kernel(PNG_OF.format(index)).strip())
    fresh = explorables.build()[exp.name]
    png = fresh.frame(**fresh.values(**state))
    a, b = (np.asarray(Image.open(io.BytesIO(p)).convert("RGB")) for p in (shown, png))
    if a.shape != b.shape:
        return 1.0
    return float(np.any(a != b, axis=2).mean())


def exercise(page: LabPage, root, index: int, exp, views: list[dict]) -> tuple[int, list[str]]:
    """Take every step of plan(exp) on the widget `root` (the kernel's views()[index]); (steps, failures)."""
    failures = []
    steps = plan(exp)
    elements = root.query_selector_all(".widget-slider, .widget-toggle-buttons, .widget-dropdown")
    if len(elements) != len(exp.controls):
        return 0, [f"{len(elements)} controls on the page, the explorable has {list(exp.controls)}"]
    presets = {b.text_content().strip(): b for b in root.query_selector_all(".nl-preset")}
    if list(presets) != list(exp.presets or {}):
        failures.append(f"preset buttons {list(presets)}, expected {list(exp.presets or {})}")
        steps = [s for s in steps if s[1] != "preset"]
    focused = None
    before, previous = state_of(root)["src"], None
    for (what, kind, ci, arg, state), want in zip(steps, views, strict=False):
        before_src = before
        if kind == "key":
            if focused != ci:
                elements[ci].query_selector(".noUi-handle").focus()
                focused = ci
            page.page.keyboard.press(arg)
        elif kind == "click":
            elements[ci].query_selector_all(".widget-toggle-button")[arg].click()
            focused = None
        elif kind == "preset":
            presets[arg].click()
            focused = None
        changes = previous is not None and want["src"] != previous["src"]
        r = page.page.evaluate(JS_STEP, [root, want, DRAWN, STEP_TIMEOUT_MS, before, changes])
        shown, k = r["s"], r["k"]
        before, previous = shown["src"], want
        if k["status"] != "ok" or k["err"]:
            failures.append(f"{what}: asking the kernel what it drew failed: {k['err']}")
            continue
        name, got, kernel_src = json.loads(k["out"].strip().splitlines()[-1])[index]
        assert name == exp.name, f"views()[{index}] is {name}, the page's widget {index} is {exp.name}"
        if not same(got, state):
            failures.append(f"{what}: the kernel drew {got}, expected exactly {state}")
        if changes and shown["src"] == before_src:
            failures.append(f"{what}: the image did not change (the frame at {state} differs from the last one)")
        elif shown["src"] != want["src"]:
            if shown["src"] != kernel_src:
                failures.append(f"{what}: the image shown is not the kernel's last frame")
            else:
                diff = pixel_difference(page, index, exp, state)
                if diff > PIXEL_TOLERANCE:
                    failures.append(f"{what}: the image differs from the frame drawn here at {state} "
                                    f"in {diff:.2%} of its pixels")
        for key in ("readouts", "controls", "alt"):
            if shown[key] != want[key]:
                failures.append(f"{what}: {key} shown {shown[key]!r}, expected {want[key]!r}")
        for bad in ("Could not draw", "Traceback"):
            if bad in shown["text"]:
                failures.append(f"{what}: the widget says {shown['text'][:300]!r}")
                break
        if kind == "none" and shown["natural"] < 1.9 * shown["shown"]:
            failures.append(f"the image is {shown['natural']} px wide, shown at {shown['shown']:.0f} CSS px "
                            "(should be drawn at 2x)")
    return len(steps), failures


@pytest.mark.parametrize("nb", SECTION_NOTEBOOKS)
def test_lab_notebook(lab, expected, nb):
    from normlab_core import explore

    page, server = lab
    page.problems.clear()
    t0 = time.monotonic()
    page.open(nb)
    try:
        page.run_all()
        problems = page.output_problems()
        assert not problems, f"{nb}: after Run All:\n" + "\n".join(problems)
        t_run = time.monotonic() - t0

        shown = [row[0] for row in json.loads(page.kernel(DRAWN).strip().splitlines()[-1])]
        roots = page.page.query_selector_all(".jp-NotebookPanel:not(.lm-mod-hidden) .normlab-live")
        assert len(roots) == len(shown), f"{nb}: {len(roots)} live widgets on the page, the kernel made {shown}"
        failures, total = [], 0
        for i, (name, root) in enumerate(zip(shown, roots, strict=True)):
            classes = root.get_attribute("class").split()
            assert f"nl-{slug(name)}" in classes, f"{nb}: widget {i} has classes {classes}, expected nl-{slug(name)}"
            root.evaluate(JS_FIT)
            root.evaluate(JS_SETTLED)  # JupyterLab may still scroll to the active cell after Run All
            fit = root.evaluate(JS_FIT)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.page.screenshot(path=str(SCREENSHOTS / f"lab-{slug(name)}.png"))
            if fit["need"] > fit["have"]:
                failures.append(f"{name}: title, controls and figure take {fit['need']:.0f} px, the notebook shows "
                                f"{fit['have']:.0f} px of a 1280x900 window")
            n, bad = exercise(page, root, i, explore.get(name), expected[name].result(timeout=600))
            total += n
            failures += [f"{name}: {b}" for b in bad]
        print(f"{nb}: ran in {t_run:.1f} s; {len(shown)} explorables, {total} steps in "
              f"{time.monotonic() - t0 - t_run:.1f} s")
        problems = page.output_problems()
        assert not failures, f"{nb}: {len(failures)} failures in {total} steps:\n" + "\n".join(failures[:40])
        assert not problems, f"{nb}: after moving the controls:\n" + "\n".join(problems)
        assert not page.problems, f"{nb}: in the page:\n" + "\n".join(page.problems)
        tracebacks = [line for line in server.log().splitlines() if "Traceback" in line]
        assert not tracebacks, f"{nb}: the server log has a traceback:\n" + server.log()[-3000:]
    finally:
        page.close_notebook()
