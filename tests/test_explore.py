"""The explorable mechanism, for every catalog entry: renders, static page, live widget, catalog laziness."""

from __future__ import annotations

import base64
import json
import random
import re
import subprocess
import sys
import textwrap
import threading
import warnings
from functools import cache

import pytest

from normlab_core.controls import Choice, Slider
from normlab_core.explore import Explorable, catalog
from normlab_core.live import readouts_html

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAMES = list(catalog())


def sliders(exp):
    return {k: c for k, c in exp.controls.items() if isinstance(c, Slider)}


def random_values(exp, rng: random.Random) -> dict:
    """A random value for every control: uniform (log-uniform on log sliders), a random option for a Choice."""
    out = {}
    for k, c in exp.controls.items():
        if isinstance(c, Choice):
            out[k] = rng.choice(c.options)
        elif c.scale == "log" and c.integer:
            out[k] = min(int(c.hi), max(int(c.lo), round(c.lo * (c.hi / c.lo) ** rng.random())))
        elif c.scale == "log":
            out[k] = c.lo * (c.hi / c.lo) ** rng.random()
        elif c.integer:
            out[k] = rng.randint(int(c.lo), int(c.hi))
        else:
            out[k] = rng.uniform(c.lo, c.hi)
    return out


def edge_settings(exp) -> list[dict]:
    """Each slider at lo and at hi (and 0 where offered), each Choice option, the rest at defaults."""
    out = [{}]
    for k, c in exp.controls.items():
        if isinstance(c, Slider):
            lo = int(c.lo) if c.integer else c.lo
            hi = int(c.hi) if c.integer else c.hi
            out += [{k: lo}, {k: hi}] + ([{k: 0}] if c.zero else [])
        else:
            out += [{k: o} for o in c.options]
    return out


# ---- rendering --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_renders_at_defaults_edges_and_random_values(name):
    exp = catalog()[name]
    rng = random.Random(1234)
    settings = edge_settings(exp) + [random_values(exp, rng) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for values in settings:
            png, readouts = exp.render(**values)
            assert png.startswith(PNG_MAGIC), values
            assert isinstance(readouts, dict) and readouts, values
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in readouts.items()), readouts
            assert isinstance(exp.alt(**values), str) and exp.alt(**values)
        assert exp.render(small=True)[0].startswith(PNG_MAGIC)


@pytest.mark.parametrize("name", NAMES)
def test_same_values_give_the_same_frame(name):
    """Rendering is a function of the values: going away and coming back redraws the same image."""
    exp = catalog()[name]
    first = exp.frame()
    for values in edge_settings(exp)[1:3]:
        exp.frame(**values)
    assert exp.frame() == first


@pytest.mark.parametrize("name", NAMES)
def test_frame_reuses_one_figure(name):
    from normlab_core import explorables

    exp = explorables.build()[name]  # a fresh object, not shared with other tests
    assert exp._fig is None
    exp.frame()
    fig = exp._fig
    assert fig is not None
    for values in edge_settings(exp)[1:]:
        exp.frame(**values)
        assert exp._fig is fig


def test_building_the_catalog_renders_nothing():
    """In a fresh interpreter: importing every section module and building the catalog creates no Figure."""
    code = textwrap.dedent("""
        import matplotlib.figure
        made = []
        original = matplotlib.figure.Figure.__init__
        def counting(self, *a, **k):
            made.append(1)
            original(self, *a, **k)
        matplotlib.figure.Figure.__init__ = counting
        from normlab_core.explore import catalog
        entries = catalog()
        assert entries, "empty catalog"
        assert all(e._fig is None for e in entries.values())
        print(len(entries), len(made))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    n_entries, n_figures = map(int, res.stdout.split())
    assert n_entries == len(NAMES)
    assert n_figures == 0


def test_catalog_names_are_stable_snake_case():
    for name, exp in catalog().items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
        assert exp.name == name


# ---- the static page --------------------------------------------------------------------------------------
@cache
def static_page(name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return catalog()[name].static()


@pytest.mark.parametrize("name", NAMES)
def test_static_page(name):
    exp = catalog()[name]
    page = static_page(name)
    assert "http://" not in page and "https://" not in page
    assert len(page.encode("utf-8")) <= 3 * 1024 * 1024
    n_sliders = sum(isinstance(c, Slider) for c in exp.controls.values())
    n_choices = sum(isinstance(c, Choice) for c in exp.controls.values())
    assert len(re.findall(r"<input[^>]*type=['\"]range['\"]", page)) == n_sliders
    assert len(re.findall(r"<select\b", page)) == n_choices
    payload = re.search(r'<script type="application/json" class="nl-data">(.*?)</script>', page, re.S).group(1)
    data = json.loads(payload)
    images = data["images"]
    assert len(set(images)) >= 2, "a static explorable needs at least two distinct frames"
    for uri in images:
        assert uri.startswith("data:image/png;base64,")
        assert base64.b64decode(uri.split(",", 1)[1]).startswith(PNG_MAGIC)
    # every frame points to an image, and the default frame exists
    assert all(0 <= f[0] < len(images) for f in data["frames"].values())
    assert ",".join(map(str, data["defaults"])) in data["frames"]
    # every <option> of every select is a Choice option
    assert len(re.findall(r"<option\b", page)) == sum(len(c.options) for c in exp.controls.values()
                                                     if isinstance(c, Choice))


# ---- the live widget ----------------------------------------------------------------------------------------
def other_widget_values(widget) -> list:
    """Values of a control widget other than its current one: its two ends (or the other options)."""
    import ipywidgets as w

    if isinstance(widget, (w.SelectionSlider, w.ToggleButtons)):
        vals = [v for _, v in widget.options] if isinstance(widget.options[0], tuple) else list(widget.options)
        vals = [vals[0], vals[-1]] if isinstance(widget, w.SelectionSlider) else vals
    else:
        vals = [widget.min, widget.max]
    return [v for v in vals if v != widget.value]


@pytest.fixture
def no_thread_errors():
    """Fail the test if a widget's worker thread dies with an exception."""
    errors = []
    old = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    yield errors
    threading.excepthook = old
    assert not errors, errors


@pytest.mark.parametrize("name", NAMES)
def test_live_widget_follows_its_controls(name, no_thread_errors):
    exp = catalog()[name]
    w = exp.live()
    assert bytes(w.image.value).startswith(PNG_MAGIC)
    assert w.message.value == ""
    both_changed = False
    for key, widget in w.controls.items():
        for v in other_widget_values(widget):
            before_img, before_txt = bytes(w.image.value), w.readout.value
            widget.value = v
            assert w.wait(), "redraw did not finish"
            assert w.message.value == "", w.message.value
            png, readouts = exp.render(**w.current_values())
            assert bytes(w.image.value) == png
            assert w.readout.value == readouts_html(readouts)
            changed = (bytes(w.image.value) != before_img, w.readout.value != before_txt)
            assert any(changed), f"moving {key} to {v!r} changed neither the image nor the readouts"
            both_changed |= all(changed)
        widget.value = exp.controls[key].value
        assert w.wait()
    assert both_changed, "no control changes both the image and the readouts"


@pytest.mark.parametrize("name", NAMES)
def test_live_burst_ends_on_the_last_value(name, no_thread_errors):
    exp = catalog()[name]
    w = exp.live()
    key, widget = next((k, c) for k, c in w.controls.items() if isinstance(exp.controls[k], Slider))
    import ipywidgets as iw

    if isinstance(widget, iw.SelectionSlider):
        seq = [v for _, v in widget.options]
    else:
        lo, hi = widget.min, widget.max
        seq = [lo + (hi - lo) * i / 49 for i in range(50)]
        if isinstance(widget, iw.IntSlider):
            seq = [int(round(v)) for v in seq]
    burst = [seq[(7 * i) % len(seq)] for i in range(50)]
    burst[-1] = seq[len(seq) // 3] if seq[len(seq) // 3] != burst[-2] else seq[-1]
    for v in burst:
        widget.value = v
    assert w.wait(), "redraw did not finish"
    assert w.current_values()[key] == widget.value
    png, readouts = exp.render(**w.current_values())
    assert bytes(w.image.value) == png
    assert w.readout.value == readouts_html(readouts)


def _failing(threshold):
    def update(art, a):
        art["line"].set_ydata([a, a])
        if a > threshold:
            raise ZeroDivisionError(f"the toy explorable refuses a > {threshold:g}")
        return {"a": f"{a:.2f}"}

    def setup(fig):
        ax = fig.subplots()
        ax.set_ylim(0, 1)
        (line,) = ax.plot([0, 1], [0, 0])
        return {"line": line, "animated": [line]}

    return Explorable("toy_failing", {"a": Slider(0.0, 1.0, 0.2)}, setup, update)


def test_drawing_error_is_shown_in_the_widget(no_thread_errors):
    exp = _failing(0.5)
    w = exp.live()
    good = bytes(w.image.value)
    assert good.startswith(PNG_MAGIC) and w.message.value == ""
    w.controls["a"].value = 0.9
    assert w.wait()
    assert "Could not draw" in w.message.value
    assert "ZeroDivisionError" in w.message.value and "refuses a &gt; 0.5" in w.message.value
    assert bytes(w.image.value) == good  # the last good image stays
    w.controls["a"].value = 0.3
    assert w.wait()
    assert w.message.value == ""
    assert "0.30" in w.readout.value


def test_drawing_error_at_the_defaults_does_not_raise(no_thread_errors):
    exp = _failing(0.1)
    w = exp.live()  # the first draw happens in the constructor
    assert "Could not draw" in w.message.value


def test_warnings_in_update_become_a_note():
    def update(art, a):
        warnings.warn(f"something odd at a={a:g}", RuntimeWarning, stacklevel=2)
        return {"a": str(a)}

    exp = Explorable("toy_warn", {"a": Slider(0.0, 1.0, 0.5)}, lambda fig: {"animated": []}, update, blit=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, readouts = exp.render(a=0.25)
    assert readouts["note"] == "something odd at a=0.25"
