"""The book's static figures on a phone: show_figure stages a figure's narrow drawing while the book is built, named
by the digest of the wide PNG the page shows; scripts/place_frames.py wraps that figure in a <picture> whose
narrow source a screen up to 600 px wide takes (checked in Chromium at 390x844 and 1280x900, marker `browser`).
Every figure function the notebooks pass to show_figure draws both layouts."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from normlab_core import display
from normlab_core.figures.diagrams import pre_post_wiring
from normlab_core.figures.style import DPI, NARROW_IN, SHARPNESS, blank_figure, house_style
from normlab_core.figures.training_runs import grad_norm_figure, update_size_figure

_spec = importlib.util.spec_from_file_location("place_frames",
                                               Path(__file__).parents[1] / "scripts" / "place_frames.py")
place_frames = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(place_frames)
narrow_figures = place_frames.narrow_figures


def lines(narrow: bool = False):
    """A small figure of two panels, side by side or stacked."""
    fig = blank_figure(NARROW_IN, 4.0) if narrow else blank_figure()
    with house_style():
        for i, ax in enumerate(fig.subplots(2 if narrow else 1, 1 if narrow else 2).ravel()):
            ax.plot([0, 1], [i, 1 - i])
    return fig


@pytest.fixture
def shown(monkeypatch):
    """What show_figure displays: a list of (kind, data) for each display() call."""
    import IPython.display

    out = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **k: out.append(
        ("image", obj.data) if isinstance(obj, IPython.display.Image) else ("html", obj.data)))
    return out


def test_the_book_stages_the_narrow_drawing_under_the_wide_pngs_digest(monkeypatch, tmp_path, shown):
    monkeypatch.setenv("NORMLAB_STATIC", "1")
    monkeypatch.setenv("NORMLAB_FRAMES", str(tmp_path))
    display.show_figure(lines)
    (kind, wide), = shown
    staged = list((tmp_path / display.NARROW_FIGURES).glob("*.png"))
    assert kind == "image" and [p.name for p in staged] == [hashlib.sha256(wide).hexdigest() + ".png"]
    with Image.open(staged[0]) as narrow, Image.open(io.BytesIO(wide)) as im:
        assert narrow.size[0] == round(NARROW_IN * DPI * SHARPNESS) and im.size[0] == round(7.2 * DPI)
    # with alt text: an HTML figure whose data: URI holds the PNG the digest names
    display.show_figure(lines, alt="two lines", caption="Lines.")
    kind, page = shown[-1]
    data = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", page).group(1))
    assert kind == "html" and data == wide and "two lines" in page and "Lines." in page


def test_jupyterlab_draws_the_wide_figure_only(monkeypatch, tmp_path, shown):
    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    monkeypatch.setenv("NORMLAB_FRAMES", str(tmp_path))
    calls = []
    display.show_figure(lambda narrow=False: calls.append(narrow) or lines(narrow))
    assert calls == [False] and shown[0][0] == "image" and not (tmp_path / display.NARROW_FIGURES).exists()
    display.show_figure(lines(), alt="a finished Figure")          # a Figure, as before
    assert shown[-1][0] == "image"
    with pytest.raises(TypeError, match="arguments are for a drawing function"):
        display.show_figure(lines(), 3)


def panel_boxes(fig):
    fig.canvas.draw()
    return [ax.get_position() for ax in fig.axes]


def test_each_static_figure_stacks_its_panels_in_the_narrow_layout():
    per_layer = {(p, d): np.linspace(1, 2, d) for p in ("post", "pre") for d in (6, 12, 24)}
    change = {v: np.ones((3, 4)) * k for k, v in enumerate(("post", "pre", "peri", "deepnorm"), 1)}
    for draw, args in ((grad_norm_figure, (per_layer, [6, 12, 24], "mlp.w2")), (pre_post_wiring, (2,)),
                       (update_size_figure, ([1, 2, 4, 8], change))):
        wide, narrow = draw(*args), draw(*args, narrow=True)
        assert narrow.get_figwidth() == NARROW_IN and wide.get_figwidth() > 2 * NARROW_IN, draw.__name__
        boxes = panel_boxes(narrow)
        for upper, lower in zip(boxes, boxes[1:], strict=False):   # one column, top to bottom, no overlap
            assert upper.y0 >= lower.y1 and upper.x1 - upper.x0 > 0.6, draw.__name__
        if len(boxes) > 1:
            wide_boxes = panel_boxes(wide)
            assert all(a.x1 <= b.x0 for a, b in zip(wide_boxes, wide_boxes[1:], strict=False)), draw.__name__


def staged_site(tmp_path):
    """A built page with a Sphinx figure, an HTML figure moved out of its data: URI, and one with no narrow."""
    site, staging = tmp_path / "html", tmp_path / "staging"
    (site / "_images").mkdir(parents=True)
    (site / "notebooks").mkdir()
    (staging / "_figures").mkdir(parents=True)
    digests = []
    for i, size in enumerate([(594, 400), (594, 300)]):
        wide, narrow = io.BytesIO(), io.BytesIO()
        Image.new("RGB", (648, 270), (i, 0, 0)).save(wide, "PNG")
        Image.new("RGB", size, (0, i, 0)).save(narrow, "PNG")
        digest = hashlib.sha256(wide.getvalue()).hexdigest()
        (staging / "_figures" / f"{digest}.png").write_bytes(narrow.getvalue())
        digests.append(digest)
    other = "ab" * 32   # a figure with no narrow drawing
    Image.new("RGB", (648, 270)).save(site / "_images" / f"{other}.png")
    for i, digest in enumerate(digests):   # the wide files, as Sphinx and light_images name them
        name = f"{digest}.png" if i == 0 else f"nl-{digest[:20]}.png"
        Image.new("RGB", (648, 270), (i, 0, 0)).save(site / "_images" / name)
    page = site / "notebooks" / "page.html"
    page.write_text(
        f'<a class="nl-zoom" href="../_images/{digests[0]}.png"><img alt="first" src="../_images/{digests[0]}.png" '
        f'loading="lazy"/></a>\n<figure><img src=\'../_images/nl-{digests[1][:20]}.png\' alt=\'second\'></figure>\n'
        f'<img alt="none" src="../_images/{other}.png">', encoding="utf-8")
    return site, staging, page, digests, other


def test_place_frames_wraps_figures_that_have_a_narrow_drawing(tmp_path):
    site, staging, page, (first, second), other = staged_site(tmp_path)
    assert narrow_figures(site, staging) == 2
    html = page.read_text(encoding="utf-8")
    want = (f'<a class="nl-zoom" href="../_images/{first}.png"><picture><source media="(max-width: 600px)" '
            f'srcset="../_images/{first}-narrow.png 2x" width="297" height="200"><img alt="first" '
            f'src="../_images/{first}.png" loading="lazy"/></picture></a>')
    assert want in html
    assert (f'<picture><source media="(max-width: 600px)" srcset="../_images/nl-{second[:20]}-narrow.png 2x" '
            f'width="297" height="150"><img src=\'../_images/nl-{second[:20]}.png\' alt=\'second\'></picture>') in html
    assert f'<img alt="none" src="../_images/{other}.png">' in html and html.count("<picture>") == 2
    for name, digest in ((f"{first}-narrow.png", first), (f"nl-{second[:20]}-narrow.png", second)):
        assert (site / "_images" / name).read_bytes() == (staging / "_figures" / f"{digest}.png").read_bytes()
    assert narrow_figures(site, staging) == 0 and page.read_text(encoding="utf-8") == html   # idempotent


@pytest.mark.browser
def test_a_phone_takes_the_narrow_figure_and_a_laptop_the_wide(tmp_path, browser):
    from browser_support import SiteServer

    site, staging, page, (first, second), other = staged_site(tmp_path)
    narrow_figures(site, staging)
    head = "<meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
    style = "<style>img {max-width: 100%; height: auto} figure {margin: 0}</style>"
    page.write_text(f"<!doctype html><html><head>{head}{style}</head><body>{page.read_text(encoding='utf-8')}"
                    "</body></html>", encoding="utf-8")
    with SiteServer(site) as server:
        for size, narrow in (({"width": 390, "height": 844}, True), ({"width": 1280, "height": 900}, False)):
            context = browser.new_context(viewport=size)
            p = context.new_page()
            p.goto(server.base + "notebooks/page.html", wait_until="load")
            p.evaluate("() => Promise.all(Array.from(document.images).map(i => (i.loading = 'eager', i.decode())))")
            got = p.evaluate("() => Array.from(document.images).map(i => [i.alt, i.currentSrc.split('/').pop(), "
                             "i.clientWidth])")
            context.close()
            if narrow:
                assert got == [["first", f"{first}-narrow.png", 297], ["second", f"nl-{second[:20]}-narrow.png", 297],
                               ["none", f"{other}.png", 390 - 16]], got
            else:
                assert got == [["first", f"{first}.png", 648], ["second", f"nl-{second[:20]}.png", 648],
                               ["none", f"{other}.png", 648]], got
