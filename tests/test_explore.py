"""The explorable mechanism, for every catalog entry: renders, static page, live widget, catalog laziness."""

from __future__ import annotations

import html
import json
import random
import re
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

from normlab_core.controls import Choice, Preset, Slider
from normlab_core.explore import Explorable, catalog, try_this, try_this_markdown
from normlab_core.live import readouts_html, views
from normlab_core.static import grid, static_html

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


# ---- the live widget ----------------------------------------------------------------------------------------
def shown_readouts(w) -> str:
    """The readouts table the live widget shows now (without the hidden table that keeps its height), as
    normlab_core/live_frame.js builds it from the rows the kernel sent (the same table as readouts_html)."""
    return readouts_html(dict(w.frame.readouts))


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
    assert w.png.startswith(PNG_MAGIC)
    assert w.message.value == ""
    both_changed = False
    for key, widget in w.controls.items():
        for v in other_widget_values(widget):
            before_img, before_txt = w.png, shown_readouts(w)
            widget.value = v
            assert w.wait(), "redraw did not finish"
            assert w.message.value == "", w.message.value
            png, readouts = exp.render(**w.current_values())
            assert w.png == png
            assert shown_readouts(w) == readouts_html(readouts)
            changed = (w.png != before_img, shown_readouts(w) != before_txt)
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
    assert w.drawn == w.current_values()
    png, readouts = exp.render(**w.current_values())
    assert w.png == png
    assert shown_readouts(w) == readouts_html(readouts)


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

    return Explorable("toy_failing", {"a": Slider(0.0, 1.0, 0.2, stops=[0.0, 0.2, 0.3, 0.9])}, setup, update)


def test_drawing_error_is_shown_in_the_widget(no_thread_errors):
    exp = _failing(0.5)
    w = exp.live()
    good = w.png
    assert good.startswith(PNG_MAGIC) and w.message.value == ""
    w.controls["a"].value = 0.9
    assert w.wait()
    assert "Could not draw" in w.message.value
    assert "ZeroDivisionError" in w.message.value and "refuses a &gt; 0.5" in w.message.value
    assert w.png == good  # the last good image stays
    assert w.drawn == {"a": 0.2}  # the last values actually drawn
    w.controls["a"].value = 0.3
    assert w.wait()
    assert w.message.value == ""
    assert "0.30" in shown_readouts(w)


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


# ---- controls: exact stops and labels that tell them apart --------------------------------------------------
def test_stops_are_exactly_the_positions_both_faces_offer():
    s = Slider(-0.5, 0.5, 0.1, stops=[-0.5, -0.25, 0.0, 0.1, 0.25, 0.5])
    assert s.positions() == [-0.5, -0.25, 0.0, 0.1, 0.25, 0.5]
    assert s.positions(41) == s.positions()  # a requested count does not override explicit stops
    assert Slider(1, 256, 32, scale="log", stops=[1, 2, 4, 8, 16, 32, 64, 128, 256]).positions()[5] == 32


@pytest.mark.parametrize("kwargs, words", [
    ({"lo": 0.0, "hi": 1.0, "value": 0.3, "stops": [0.0, 0.25, 0.5]}, "must be one of the stops"),
    ({"lo": 0.0, "hi": 1.0, "value": 0.5, "stops": [0.0, 0.5, 0.5, 1.0]}, "strictly ascending"),
    ({"lo": 0.0, "hi": 1.0, "value": 0.5, "stops": [1.0, 0.5]}, "strictly ascending"),
    ({"lo": 0.0, "hi": 1.0, "value": 0.5, "stops": [0.0, 0.5, 2.0]}, "[2.0] are not"),
    ({"lo": 0, "hi": 10, "value": 4, "stops": [2, 2.5, 4]}, "whole numbers"),
    ({"lo": 0.0, "hi": 1.0, "value": 0.5, "stops": [0.5]}, "at least two"),
    ({"lo": 1e-3, "hi": 1.0, "value": 0.01, "scale": "log", "stops": [0.0, 0.01, 0.1]}, "[0.0] are not"),
])
def test_bad_stops_are_refused_with_a_reason(kwargs, words):
    with pytest.raises(ValueError) as err:
        Slider(**kwargs)
    assert words in str(err.value)


def test_a_log_slider_with_zero_may_stop_at_zero():
    s = Slider(1e-8, 1.0, 1e-5, scale="log", zero=True, stops=[0.0, 1e-8, 1e-5, 1e-2, 1.0])
    assert s.positions()[0] == 0.0 and s.format(0.0) == "0"


def test_labels_show_the_default_exactly_and_tell_every_stop_apart():
    offset = Slider(-100.0, 200.0, 100.5, step=0.5)
    assert offset.format(100.5) == "100.5"  # not "100" or "101"
    assert "162.5" in [offset.format(v) for v in offset.positions()]
    gain = Slider(0.8, 1.2, 1.0, stops=[0.977, 0.99, 1.0, 1.01, 1.024, 1.05])
    assert [gain.format(v) for v in gain.positions()] == ["0.977", "0.99", "1", "1.01", "1.024", "1.05"]
    tiny = Slider(1e-4, 10.0, 1.0, scale="log", zero=True, stops=[0.0, 4e-4, 1e-3, 1.78e-3, 1.0])
    labels = [tiny.format(v) for v in tiny.positions()]
    assert [float(t) for t in labels] == tiny.positions()


def test_generated_positions_hold_the_default_exactly_and_no_float_noise():
    s = Slider(0.0, 0.9, 0.35)
    pos = s.positions()
    assert 0.35 in pos and pos == sorted(pos)
    assert all(float(f"{v:.12g}") == v for v in pos)  # 0.3, not 0.30000000000000004
    assert Slider(0, 100, 37).positions().count(37) == 1


@pytest.mark.parametrize("name", NAMES)
def test_catalog_labels_are_distinct_and_exact(name):
    for key, c in catalog()[name].controls.items():
        labels = [c.format(v) for v in c.positions()]
        assert len(set(labels)) == len(labels), f"{key}: two stops look the same: {labels}"
        if isinstance(c, Slider) and c.fmt is None:
            assert float(c.format(c.value)) == c.value, f"{key}: the default {c.value!r} shows as {c.format(c.value)}"


# ---- presets ----------------------------------------------------------------------------------------------
def _toy(presets=None, **kw):
    def setup(fig):
        ax = fig.subplots()
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.1, 1.1)
        (line,) = ax.plot([0, 1], [0, 0])
        return {"line": line, "animated": [line]}

    def update(art, a, mode):
        y = a if mode == "flat" else 1 - a
        art["line"].set_ydata([a, y])
        return {"a": repr(a), "mode": mode, "ends": f"{a:.3f} to {y:.3f}"}

    controls = {"a": Slider(0.0, 1.0, 0.2, stops=[0.0, 0.1, 0.2, 0.7], label="a value"),
                "mode": Choice(["flat", "tilted"], "flat", label="mode")}
    return Explorable("toy_presets", controls, setup, update, presets=presets,
                      alt=lambda a, mode: f"a line from {a:g}, {mode}", **kw)


def test_presets_are_kept_in_order_and_fill_in_defaults():
    exp = _toy({"tilted": Preset({"mode": "tilted"}, "the line tilts"),
                "a 0.7": Preset({"a": 0.7, "mode": "tilted"}, "both ends move")})
    assert list(exp.presets) == ["tilted", "a 0.7"]
    assert exp.preset_values("tilted") == {"a": 0.2, "mode": "tilted"}
    assert exp.preset_values("a 0.7") == {"a": 0.7, "mode": "tilted"}
    with pytest.raises(ValueError, match="no preset 'a 0.8'.*'tilted', 'a 0.7'"):
        exp.preset_values("a 0.8")
    assert _toy().presets == {}


def test_a_preset_value_is_stored_as_the_stop_itself():
    exp = _toy({"zero": Preset({"a": 0}, "a at zero")})
    v = exp.preset_values("zero")["a"]
    assert v == 0.0 and isinstance(v, float)


@pytest.mark.parametrize("presets, error, words", [
    ({"x": Preset({"b": 1.0}, "n")}, ValueError, "unknown control(s) ['b']"),
    ({"x": Preset({"a": 0.3}, "n")}, ValueError, "not exactly one of that control's positions"),
    ({"x": Preset({"a": 0.1 + 1e-12}, "n")}, ValueError, "not exactly one"),
    ({"x": Preset({"mode": "round"}, "n")}, ValueError, "not exactly one"),
    ({"x": {"a": 0.1}}, TypeError, "must be a Preset"),
    ({"": Preset({"a": 0.1}, "n")}, ValueError, "non-empty string"),
    ([Preset({"a": 0.1}, "n")], TypeError, "dict of label"),
])
def test_bad_presets_are_refused_at_construction(presets, error, words):
    with pytest.raises(error) as err:
        _toy(presets)
    assert words in str(err.value)


def test_a_preset_needs_a_dict_and_a_one_line_notice():
    with pytest.raises(TypeError, match="dict"):
        Preset([("a", 1)], "n")
    with pytest.raises(ValueError, match="notice"):
        Preset({"a": 1}, "  ")
    with pytest.raises(ValueError, match="one line"):
        Preset({"a": 1}, "first\nsecond")


def test_try_this_lists_the_presets_in_order():
    exp = _toy({"tilted": Preset({"mode": "tilted"}, "the line tilts"),
                "a 0.7": Preset({"a": 0.7}, "the line rises")})
    lines = try_this_markdown(exp).splitlines()
    assert lines[0].startswith("**Try this**")
    assert [ln for ln in lines if ln.startswith("- ")] == ["- **tilted**: the line tilts",
                                                           "- **a 0.7**: the line rises"]
    with pytest.raises(ValueError, match="no presets"):
        try_this_markdown(_toy())


@pytest.mark.parametrize("name", NAMES)
def test_catalog_entry_is_small_enough_to_pre_render_whole(name):
    exp = catalog()[name]
    assert len(exp.controls) <= 3, f"{name} has {len(exp.controls)} controls; split it (at most 3)"
    grid(exp)  # raises when the combinations exceed max_frames
    assert exp.presets, f"{name} has no presets"
    md = try_this(name).data
    assert md == try_this_markdown(exp) == try_this(name).data  # deterministic
    for label, p in exp.presets.items():
        assert f"- **{label}**: {p.notice}" in md


@pytest.mark.parametrize("name", NAMES)
def test_adjacent_stops_are_not_dead(name):
    """Moving a slider one stop (the others at their defaults) changes the frame or the readouts."""
    exp = catalog()[name]
    for key, c in exp.controls.items():
        if not isinstance(c, Slider):
            continue
        stops = c.positions()
        shown = [exp.render(**{key: v}) for v in stops]
        for i in range(len(stops) - 1):
            assert shown[i] != shown[i + 1], f"{key} = {stops[i]!r} and {stops[i + 1]!r}: same frame and readouts"


# ---- live face: exact values, presets, alt text ------------------------------------------------------------
def live_image_alt(w) -> str:
    return w.frame.alt


@pytest.mark.parametrize("name", NAMES)
def test_live_controls_send_back_the_exact_stops(name, no_thread_errors):
    """The browser moves a selection widget by index; the kernel must get (and draw) the stop itself."""
    exp = catalog()[name]
    w = exp.live()
    for key, widget in w.controls.items():
        stops = exp.controls[key].positions()
        for i in range(len(stops)):
            widget.index = i  # what the front end sends
            got = w.current_values()[key]
            assert got == stops[i] and repr(got) == repr(stops[i])
        widget.index = len(stops) // 2
        assert w.wait()
        assert repr(w.drawn[key]) == repr(stops[len(stops) // 2])
        assert w.drawn == w.current_values()
        assert live_image_alt(w) == exp.alt(**w.drawn)
        widget.value = exp.controls[key].value
        assert w.wait()


@pytest.mark.parametrize("name", NAMES)
def test_live_preset_buttons_set_every_control_and_draw_once(name, no_thread_errors):
    exp = catalog()[name]
    w = exp.live()
    assert list(w.buttons) == list(exp.presets)
    for label, button in w.buttons.items():
        assert "nl-preset" in button._dom_classes and button.description == label
        before = w.draws
        button.click()
        assert w.wait()
        expected = exp.preset_values(label)
        assert w.draws == before + 1, f"preset {label!r} drew {w.draws - before} times"
        assert w.current_values() == expected and w.drawn == expected
        assert [repr(v) for v in w.drawn.values()] == [repr(v) for v in expected.values()]
        png, readouts = exp.render(**expected)
        assert w.png == png and shown_readouts(w) == readouts_html(readouts)
        assert live_image_alt(w) == exp.alt(**expected)


def test_live_view_classes_size_and_registry(no_thread_errors):
    exp = _toy({"tilted": Preset({"mode": "tilted"}, "the line tilts")})
    first, second = exp.live(), exp.live(a=0.7)
    assert views()[-2:] == [first, second]
    assert {"normlab-live", "nl-toy-presets"} <= set(first._dom_classes)
    assert second.drawn == {"a": 0.7, "mode": "flat"}
    with pytest.raises(ValueError, match="not one of the positions"):
        exp.live(a=0.5)  # in range, but not a stop the controls can show
    width = int.from_bytes(first.png[16:20], "big")  # PNG IHDR
    assert width == 2 * exp.css_width
    assert first.frame.png == first.png
    assert (first.frame.width, first.frame.height) == (exp.css_width, round(exp.size[1] * exp.css_width / exp.size[0]))
    assert first.frame.layout.max_width == f"{exp.css_width}px"
    # the readouts keep the height of the largest table shown so far: the hidden table holds every row label
    # shown and every text shape of each (digits written as 0)
    assert "<table class='normlab-readouts'>" in first.frame.ghost
    for label, text in first.frame.readouts:
        assert html.escape(label) in first.frame.ghost
        assert html.escape(re.sub("[0-9]", "0", text)) in first.frame.ghost


def test_live_frame_is_one_message_with_the_png_as_binary(no_thread_errors):
    """A new frame reaches the browser as one comm message: PNG bytes as a binary buffer, alt text and readouts
    in its state; and moving a control is not echoed back (ipywidgets' echo_update)."""
    exp = _toy({})
    w = exp.live()
    sent = []
    w.frame._send = lambda msg, buffers=None: sent.append((msg, buffers))
    w.controls["a"].index = 3   # 0.7 (the default is 0.2)
    assert w.wait()
    frames = [(m, b) for m, b in sent if m.get("method") == "update"]
    assert len(frames) == 1, sent
    msg, buffers = frames[0]
    assert msg["buffer_paths"] == [["png"]] and bytes(buffers[0]) == w.png
    assert msg["state"]["key"] == "3,0"   # the stop index of each control: a = 0.7, mode = flat
    assert msg["state"]["alt"] == exp.alt(**w.drawn)
    assert msg["state"]["readouts"] == [[str(k), str(v)] for k, v in exp.render(**w.drawn)[1].items()]
    echoed = []
    w.controls["a"]._send = lambda msg, buffers=None: echoed.append(msg)
    w.controls["a"].set_state({"index": 1})   # what a message from the browser does
    assert w.wait()
    assert not [m for m in echoed if m.get("method") == "echo_update"], echoed
    assert w.drawn["a"] == exp.controls["a"].positions()[1]


def test_live_view_sends_the_likeliest_next_frame_ahead(no_thread_errors, monkeypatch):
    """After a move, the kernel sends the browser the frame one more stop along (a custom message the browser
    keeps, live_frame.js): exactly the frame a fresh render gives, keyed by the control indices; never a frame
    it sent before; nothing with NORMLAB_PREFETCH=0."""
    exp = _toy({})
    w = exp.live()
    ahead = []
    w.frame._send = lambda msg, buffers=None: ahead.append((msg, buffers)) if msg.get("method") == "custom" else None
    w.controls["a"].index = 1   # 0.2 -> 0.1: moving down, so the likeliest next state is a = 0.0
    assert w.wait(ahead=True)
    # then mode "tilted"; a = 0.2 (back up) is not sent again: the browser was shown it
    assert [m["content"]["key"] for m, _ in ahead] == ["0,0", "1,1"], ahead
    for (msg, buffers), state in zip(ahead, [{"a": 0.0, "mode": "flat"}, {"a": 0.1, "mode": "tilted"}], strict=True):
        content = msg["content"]
        assert content["method"] == "ahead"
        png, readouts = exp.render(**state)
        assert bytes(buffers[0]) == png
        assert content["readouts"] == [[str(k), str(v)] for k, v in readouts.items()]
        assert content["alt"] == exp.alt(**state)
    w.controls["a"].index = 0   # the frame sent ahead; the next one down does not exist, back up was shown
    assert w.wait(ahead=True)
    w.controls["a"].index = 1
    assert w.wait(ahead=True)
    keys = [m["content"]["key"] for m, _ in ahead]
    assert len(keys) == len(set(keys)), keys

    up = exp.live(a=0.0)
    sent_up = []
    up.frame._send = lambda msg, buffers=None: sent_up.append(msg) if msg.get("method") == "custom" else None
    up.controls["a"].index = 1   # moving up: the next two stops first (0.2, 0.7), then the other control
    assert up.wait(ahead=True)
    assert [m["content"]["key"] for m in sent_up] == ["2,0", "3,0", "1,1"]

    monkeypatch.setenv("NORMLAB_PREFETCH", "0")
    quiet = exp.live()
    sent = []
    quiet.frame._send = lambda msg, buffers=None: sent.append(msg)
    quiet.controls["a"].index = 1
    assert quiet.wait(ahead=True)
    assert [m for m in sent if m.get("method") == "custom"] == []


# ---- static face --------------------------------------------------------------------------------------------
def static_data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" class="nl-data">(.*?)</script>', page, re.S)
                      .group(1))


def test_static_face_offers_every_combination(tmp_path):
    exp = _toy({"tilted": Preset({"mode": "tilted"}, "the line tilts"),
                "a 0.7": Preset({"a": 0.7}, "the line rises")})
    page = static_html(exp, folder=tmp_path)
    data = static_data(page)
    assert "http://" not in page and "https://" not in page and "data:image" not in page
    stops, modes = exp.controls["a"].positions(), exp.controls["mode"].positions()
    assert data["sizes"] == [len(stops), len(modes)]
    assert len(data["frames"]) == len(stops) * len(modes)
    for i, a in enumerate(stops):
        for j, mode in enumerate(modes):
            f_img, f_read, f_alt = data["frames"][i * len(modes) + j]
            png, readouts = exp.render(a=a, mode=mode)
            row = data["readouts"][f_read]  # values under data["rkeys"], or [label, value] pairs
            pairs = [tuple(kv) if isinstance(kv, list) else (k, kv) for k, kv in zip(data["rkeys"], row, strict=True)]
            assert pairs == [(str(k), str(v)) for k, v in readouts.items()]
            assert data["alts"][f_alt] == exp.alt(a=a, mode=mode)
            stored = (tmp_path / data["files"][f_img]).read_bytes()
            assert stored.startswith(PNG_MAGIC)
            assert int.from_bytes(stored[16:20], "big") == 2 * exp.css_width
    # identical frames would share one file: no two files hold the same image
    assert len(data["files"]) == len({(tmp_path / f).read_bytes() for f in data["files"]})
    assert data["labels"] == [[exp.controls["a"].format(v) for v in stops], ["flat", "tilted"]]
    assert data["presets"] == {"tilted": [stops.index(0.2), 1], "a 0.7": [stops.index(0.7), 0]}
    assert data["defaults"] == [stops.index(0.2), 0]
    assert re.findall(r'<button type="button" data-preset="([^"]*)"', page) == ["tilted", "a 0.7"]
    assert len(re.findall(r"data-i='\d'", page)) == 2
    assert 'class="nl-readouts" aria-live="polite"' in page
    default_src = re.search(r'<img class="nl-frame" src="([^"]+)"', page).group(1)
    assert default_src == data["dir"] + data["files"][data["frames"][data["defaults"][0] * 2][0]]
    assert data["dir"] == "nl-frames/toy_presets/"


def test_static_face_refuses_more_combinations_than_max_frames(tmp_path):
    exp = _toy(max_frames=7)
    with pytest.raises(ValueError, match="8 combinations .* exceed max_frames=7.*split"):
        static_html(exp, folder=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing rendered


@pytest.mark.parametrize("name", NAMES)
def test_a_frame_does_not_depend_on_the_frames_drawn_before(name):
    """Two fresh objects draw the same states in opposite orders: every frame is the same (the static page
    renders in grid order, the live face and the tests in any order)."""
    from normlab_core import explorables

    exp = catalog()[name]
    rng = random.Random(name)
    states = [{k: rng.choice(c.positions()) for k, c in exp.controls.items()} for _ in range(4)]
    states += [{k: c.positions()[-1] for k, c in exp.controls.items()},
               {k: c.positions()[0] for k, c in exp.controls.items()}]
    one, two = explorables.build()[name], explorables.build()[name]
    forward = [one.render(small=True, **s) for s in states]
    backward = [two.render(small=True, **s) for s in reversed(states)][::-1]
    for s, a, b in zip(states, forward, backward, strict=True):
        assert a == b, f"{name} at {s} draws differently depending on the frames drawn before"
