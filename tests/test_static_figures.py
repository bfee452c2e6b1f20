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
from normlab_core.figures.s08_backward import jacobian_figure
from normlab_core.figures.style import (
    DPI,
    FIGURE_SHARPNESS,
    NARROW_IN,
    NARROW_SHARPNESS,
    WIDTH_IN,
    blank_figure,
    house_style,
)
from normlab_core.figures.training_runs import grad_norm_figure, grid_overview_figure, update_size_figure

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
        assert narrow.size[0] == round(NARROW_IN * DPI * NARROW_SHARPNESS)
        assert im.size[0] == round(7.2 * DPI * FIGURE_SHARPNESS)
    # with alt text: an HTML figure whose data: URI holds the PNG the digest names
    display.show_figure(lines, alt="two lines", caption="Lines.")
    kind, page = shown[-1]
    data = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", page).group(1))
    assert kind == "html" and data == wide and "two lines" in page and "Lines." in page


def test_the_book_publishes_its_figures_in_256_colours_that_look_the_same(monkeypatch, tmp_path, shown):
    """Both drawings the book publishes are palette PNGs of the explorables' house palette, within 1.5 levels of
    the full-colour drawing on average (white itself may come out one level darker, 254, as in the frames) and
    all but a few antialiased edge pixels within 40, in at most half the bytes."""
    from normlab_core.figures.diagrams import pre_post_wiring

    monkeypatch.setenv("NORMLAB_STATIC", "1")
    monkeypatch.setenv("NORMLAB_FRAMES", str(tmp_path))
    display.show_figure(pre_post_wiring, 2)
    (_, wide), = shown
    (narrow,) = (tmp_path / display.NARROW_FIGURES).glob("*.png")
    for png, fig, dpi in ((wide, pre_post_wiring(2), DPI * FIGURE_SHARPNESS),
                          (narrow.read_bytes(), pre_post_wiring(2, narrow=True), DPI * NARROW_SHARPNESS)):
        full = display.figure_png(fig, dpi=dpi)
        with Image.open(io.BytesIO(png)) as im, Image.open(io.BytesIO(full)) as ref:
            assert im.mode == "P" and im.size == ref.size
            diff = np.abs(np.asarray(im.convert("RGB"), float) - np.asarray(ref.convert("RGB"), float))
        assert diff.mean() < 1.5 and np.percentile(diff, 99.9) < 40, (diff.mean(), np.percentile(diff, 99.9))
        assert len(png) < len(full) / 2, (len(png), len(full))


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
                       (update_size_figure, ([1, 2, 4, 8], change)),
                       (grid_overview_figure, ([2, 6], {"pre": [(3, 3), (3, 3)], "post": [(3, 3), (1, 3)]})),
                       (jacobian_figure, ({"one": np.eye(3), "two": -np.eye(3)},))):
        wide, narrow = draw(*args), draw(*args, narrow=True)
        assert narrow.get_figwidth() == NARROW_IN and wide.get_figwidth() == WIDTH_IN > 1.5 * NARROW_IN, draw.__name__
        boxes = panel_boxes(narrow)
        for upper, lower in zip(boxes, boxes[1:], strict=False):   # one column, top to bottom, no overlap
            assert upper.y0 >= lower.y1 and upper.x1 - upper.x0 > 0.6, draw.__name__
        if len(boxes) > 1:
            wide_boxes = panel_boxes(wide)
            assert all(a.x1 <= b.x0 for a, b in zip(wide_boxes, wide_boxes[1:], strict=False)), draw.__name__


def test_the_gradient_figure_shades_the_seeds_interval_around_their_mean():
    """Each placement's band brackets its mean line at every layer, shrinks to the line when the seeds agree, and
    is drawn only when the seeds are given (notebook 11 passes them), the line then being their mean."""
    rng = np.random.default_rng(3)
    per_seed = {(p, d): np.exp(rng.normal(0, 0.3, size=(5, d))) for p in ("post", "pre") for d in (6, 12)}
    per_seed["pre", 12] = np.tile(per_seed["pre", 12][:1], (5, 1))       # five seeds that agree
    per_layer = {k: v.mean(axis=0) for k, v in per_seed.items()}
    for narrow in (False, True):
        fig = grad_norm_figure(per_seed, [6, 12], "mlp.w2", narrow=narrow)
        for ax, d in zip(fig.axes, (6, 12), strict=True):   # the lines: the seeds' means, as without the seeds
            np.testing.assert_array_equal(ax.lines[0].get_ydata(), per_layer["post", d])
            np.testing.assert_array_equal(ax.lines[1].get_ydata(), per_layer["pre", d])
        for ax, d in zip(fig.axes, (6, 12), strict=True):
            bands = ax.collections
            assert len(bands) == 2, "one band per placement"
            for band, p in zip(bands, ("post", "pre"), strict=True):
                ys = band.get_paths()[0].vertices[:, 1]
                lo, hi = ys[1:d + 1], ys[d + 2:2 * d + 2][::-1]    # fill_between's path: low side, then high back
                mean = per_layer[p, d]
                assert np.all(lo <= mean * (1 + 1e-12)) and np.all(mean <= hi * (1 + 1e-12)), (p, d)
                if (p, d) == ("pre", 12):
                    np.testing.assert_allclose(lo, mean, rtol=1e-12)
                    np.testing.assert_allclose(hi, mean, rtol=1e-12)
                else:
                    assert np.all(hi - lo > 0), (p, d)
    assert not any(ax.collections for ax in grad_norm_figure(per_layer, [6, 12], "mlp.w2").axes)


def staged_site(tmp_path):
    """A built page with a Sphinx figure, an HTML figure moved out of its data: URI, and one with no narrow."""
    site, staging = tmp_path / "html", tmp_path / "staging"
    (site / "_images").mkdir(parents=True)
    (site / "notebooks").mkdir()
    (staging / "_figures").mkdir(parents=True)
    digests = []
    for i, size in enumerate([(891, 600), (891, 450)]):   # drawn at 3x
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
        Image.new("RGB", (1620, 675), (i, 0, 0)).save(site / "_images" / name)   # drawn at 2.5x
    page = site / "notebooks" / "page.html"
    page.write_text(
        f'<a class="nl-zoom" href="../_images/{digests[0]}.png"><img alt="first" src="../_images/{digests[0]}.png" '
        f'style="width: 648px;" loading="lazy"/></a>\n'
        f'<figure><img src=\'../_images/nl-{digests[1][:20]}.png\' alt=\'second\' width=\'648\'></figure>\n'
        f'<img alt="none" src="../_images/{other}.png">', encoding="utf-8")
    return site, staging, page, digests, other


def test_place_frames_wraps_figures_that_have_a_narrow_drawing(tmp_path):
    site, staging, page, (first, second), other = staged_site(tmp_path)
    assert narrow_figures(site, staging) == 2
    html = page.read_text(encoding="utf-8")
    want = (f'<a class="nl-zoom" href="../_images/{first}.png"><picture><source media="(max-width: 600px)" '
            f'srcset="../_images/{first}-narrow.png 3x" width="297" height="200"><img alt="first" '
            f'src="../_images/{first}.png" width="648" height="270" loading="lazy"/></picture></a>')
    assert want in html
    assert (f'<picture><source media="(max-width: 600px)" srcset="../_images/nl-{second[:20]}-narrow.png 3x" '
            f'width="297" height="150"><img src=\'../_images/nl-{second[:20]}.png\' alt=\'second\' '
            f'width=\'648\'></picture>') in html
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


def test_a_check_prints_its_bound_when_met_and_its_error_when_not():
    """The verdict notebooks print for a round-off check: the bound alone when the error is under it (its digits
    change with the CPU), the error itself otherwise, nan included."""
    assert display.below_bound(3.1e-17, 1e-12) == "below 1e-12"
    assert display.below_bound(2.5e-9, 1e-8, ".0e") == "below 1e-08"
    assert display.below_bound(1e-8, 1e-8, ".0e") == "1.0e-08, ABOVE 1e-08"
    assert display.below_bound(float("nan"), 1e-12) == "nan, ABOVE 1e-12"


def test_the_shared_axis_helpers_against_brute_force():
    from normlab_core.figures.style import index_ticks, one_two_five, vector_label

    rounds = sorted(m * 10.0 ** k for m in (1, 2, 5) for k in range(-6, 8))
    for v in np.geomspace(1.3e-5, 9.1e5, 157):
        assert one_two_five(v) == pytest.approx(min(r for r in rounds if r >= v), rel=1e-12), v
    assert one_two_five(2.0) == 2.0 and one_two_five(0.0) == one_two_five(-3.0) == 1.0
    assert vector_label(np.arange(9) - 2.5) == "[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, ...]"
    assert vector_label([1 / 3, 2], 3) == "[0.333, 2]" and vector_label(np.ones(9), first=None).count("1") == 9
    fig = blank_figure()
    ax = fig.subplots()
    for n, ticks in ((5, [0, 1, 2, 3, 4]), (12, list(range(12))), (20, [0, 2, 4, 6, 8, 10, 12, 14, 16, 18])):
        index_ticks(ax, n)
        assert list(ax.get_xticks()) == ticks


SI_PREFIXED = re.compile(r"\d\s*[qryzafpnuµμmkMGTPEZYRQ]$")   # "40 m", "400 µ", "2 k": read as units


@pytest.mark.parametrize(("name", "values"), [("layer_norm_eps", {"scale": 0.01}), ("layer_norm_eps", {"scale": 1e-4}),
                                              ("layer_norm_spread", {"spread": 1e-3})])
def test_value_axes_write_plain_numbers_without_si_prefixes(name, values):
    """A value axis's ticks read as numbers: at small scales 23.4's input panel wrote "40 m" (EngFormatter)."""
    from normlab_core.figures import get

    exp = get(name)
    for narrow in (False, True):
        exp.render(narrow=narrow, **values)
        fig = exp.figure(narrow=narrow)
        fig.canvas.draw()
        ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels()]
        assert any(t.strip() for t in ticks), name
        prefixed = [t for t in ticks if SI_PREFIXED.search(t.replace("\N{THIN SPACE}", " ").strip())]
        assert not prefixed, f"{name} at {values}: tick labels {prefixed}"


@pytest.mark.parametrize("narrow", [False, True])
def test_the_stream_of_figure_23_5_runs_unbroken_into_every_layer(narrow):
    """Between one layer's top and the next layer's branch point the residual stream is drawn: no gap below
    "layer 2" (the pixels along the trunk there are all line, none background)."""
    from normlab_core.figures import diagrams

    fig = pre_post_wiring(3, narrow=narrow)
    fig.canvas.draw()
    rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float) / 255
    height = rgb.shape[0]
    for ax in fig.axes:
        for layer in (1, 2):
            y0 = diagrams.BOTTOM + layer * diagrams.LAYER_H
            (x, top), (_, bottom) = ax.transData.transform([(diagrams.TRUNK_X, y0 + 0.3),
                                                            (diagrams.TRUNK_X, y0 - 0.15)])
            column = rgb[round(height - top):round(height - bottom), round(x)]
            assert column.size > 3 and column.max(axis=1).max() < 0.75, (narrow, layer, column.max(axis=1).round(2))
