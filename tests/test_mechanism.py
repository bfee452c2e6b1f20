"""The interactive mechanism on a toy explorable (tests/explorable_support.py): controls, inputs, presets, errors,
and Explorable.render as a pure function of values and inputs."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from explorable_support import every_state, pixels, text_problems, toy
from matplotlib.lines import Line2D

from normlab_core.display import try_this_markdown
from normlab_core.formatting import number
from normlab_core.interactive import Choice, Explorable, Frame, Preset, Slider, vector


@pytest.mark.parametrize("value, digits, text", [
    (1e-5, 4, "1e-5"), (0.0001, 4, "0.0001"), (2.5e7, 4, "2.5e7"), (0.744681, 4, "0.7447"), (100.5, 4, "100.5"),
    (3, 4, "3"), (np.int64(7), 4, "7"), (0.0, 4, "0"), (-0.0, 4, "0"), (1.0, 4, "1"), (float("nan"), 4, "nan"),
    (float("-inf"), 4, "-inf"), (True, 4, "True"), (123456.0, 4, "1.235e5"), (-3.2e-8, 2, "-3.2e-8")])
def test_one_number_formatter(value, digits, text):
    assert number(value, digits) == text


def test_slider_labels_tell_every_stop_apart_and_show_it_exactly():
    s = Slider([1e-7, 1.0, 1.024, 1.05], 1.024)
    assert [s.format(v) for v in s.positions()] == ["1e-7", "1", "1.024", "1.05"]
    assert Slider([0, 6, 12], 6).integer and not Slider([0.0, 6.0], 6.0).integer


@pytest.mark.parametrize("kwargs, words", [
    (dict(stops=[1.0], value=1.0), "at least two"), (dict(stops=[2.0, 1.0], value=1.0), "ascending"),
    (dict(stops=[1.0, 2.0], value=3.0), "one of the stops"), (dict(stops=[1.0, float("inf")], value=1.0), "finite"),
    (dict(stops=[1.0, 2.0], value=1.0, free=(1.5, 3.0)), "around every stop"),
    (dict(stops=[1.0, 1.0 + 1e-13], value=1.0), "differ within 12 significant digits"),
    (dict(stops=[1, "a"], value=1), "finite")])
def test_bad_sliders_are_refused_with_a_reason(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Slider(**kwargs)


def test_a_slider_takes_its_stops_and_free_values_within_range_only():
    s = Slider([0, 6, 12], 6, free=(0, 48))
    assert s.take(6.0) == 6 and type(s.take(6.0)) is int
    assert s.take(7) == 7 and s.take(7.5) is None and s.take(49) is None and s.take(True) is None
    t = Slider([0.5, 1.0], 1.0)
    assert t.take(1) == 1.0 and type(t.take(1)) is float and t.take(0.7) is None
    assert "any whole number from 0 to 48" in s.allowed() and "any" not in t.allowed()


def test_choices_and_presets_check_what_they_are_given():
    c = Choice([False, True], False, labels=["off", "on"])
    assert c.take(True) is True and c.take(1) is None and c.format(True) == "on"
    with pytest.raises(ValueError, match="one-line notice"):
        Preset({"a": 1}, "two\nlines")
    with pytest.raises(TypeError, match="dict"):
        Preset([1], "x")
    with pytest.raises(ValueError, match="presets set controls"):
        toy(presets={"bad": Preset({"scale": 0.7}, "not a stop")})
    with pytest.raises(ValueError, match="presets set controls"):
        toy(presets={"bad": Preset({"nope": 1}, "no such control")})


def test_render_gives_a_png_readouts_and_alt_text_that_states_the_result():
    exp = toy()
    f = exp.render()
    assert isinstance(f, Frame) and f.png[:8] == b"\x89PNG\r\n\x1a\n"
    assert pixels(f.png).shape == (594, 1296, 3)   # 7.2 x 3.3 in at 2 x 90 dpi
    assert f.readouts == {"largest |y|": "5", "marks": "4"} and f.alt == "x scaled by 1: 4 marks"
    narrow = exp.render(narrow=True)
    assert pixels(narrow.png).shape == (1350, 1080, 3) and narrow[1:] == f[1:]   # 4 x 5 in at 3 x 90 dpi


def test_a_frame_depends_on_its_values_and_inputs_only():
    """Any order of states, limits that change, a legend rebuilt or removed per state: every frame equals the one a
    fresh explorable draws."""
    exp, states = toy(), every_state(toy())
    random.Random(0).shuffle(states)
    seen = {}
    for values in states[:24] + states[:6]:
        key = tuple(sorted(values.items()))
        png = exp.render(**values).png
        assert seen.setdefault(key, png) == png
    for values in states[:6] + [{"kind": "band", "scale": 4.0}]:
        assert toy().render(**values).png == exp.render(**values).png, values


def test_a_legend_with_the_same_words_in_another_colour_is_redrawn():
    """Legends are drawn into the kept background: one whose entries keep their words but change colour (the
    training lab's seed legends) must not show the colour of the state drawn before."""
    def setup(fig, *, narrow):
        ax = fig.subplots()
        return ax, ax.plot([0, 1], [0, 1])[0]

    def update(art, *, colour):
        ax, line = art
        line.set_color(colour)
        ax.legend(handles=[Line2D([], [], color=colour, label="seed 0")], loc="upper left")
        return {}, f"a {colour} line"

    def fresh():
        return Explorable("legend", title="legend", controls={"colour": Choice(["red", "blue"], "red")},
                          setup=setup, update=update)

    exp = fresh()
    exp.render(colour="red")
    assert exp.render(colour="blue").png == fresh().render(colour="blue").png
    assert exp.render(colour="red").png == fresh().render(colour="red").png


def test_an_artist_changed_in_some_states_only_is_drawn_and_reported():
    """The artists update() changes are found by trying every stop and preset; one changed only elsewhere (here:
    by free values above 5) is still drawn, and reported in `late`, which the catalog test keeps empty."""
    def update(art, *, v):
        if v > 5:
            art.set_color("red")
        return {}, "alt"

    exp = Explorable("late", title="late", controls={"v": Slider([0, 1], 0, free=(0, 9))},
                     setup=lambda fig, narrow: fig.subplots().axhspan(0, 1, color="blue"), update=update)
    before = pixels(exp.render(v=1).png)
    assert not exp.late
    assert (pixels(exp.render(v=7).png) != before).any() and exp.late == {"Rectangle(xy=(0, 0), width=1, height=1, "
                                                                          "angle=0)"}
    assert not toy().late


def test_learner_inputs_and_free_values():
    exp = toy()
    own = exp.render(x=[0.0, 10.0], scale=0.5)
    assert own.readouts["largest |y|"] == "2.5"
    assert exp.render(scale=2.5).readouts["largest |y|"] == "12.5"
    assert exp.render(x=np.array([1.0, 2.0, 4.0, 9.0])).png == exp.render().png   # the default input, given
    assert exp.render(x=[1, 2]).png != exp.render().png


@pytest.mark.parametrize("given, error, words", [
    ({"scale": 11.0}, ValueError, r"scale=11.0 is not allowed; scale takes one of the stops 0.5, 1, 2, 4 \(in Jupyter"),
    ({"count": 3.5}, ValueError, "count=3.5 is not allowed"), ({"kind": "odd"}, ValueError, "'plain', 'band'"),
    ({"x": "1, 2"}, TypeError, "x must be a 1-D list or array of 2 to 64 finite numbers; got str"),
    ({"x": [[1.0, 2.0]]}, ValueError, r"got shape \(1, 2\)"), ({"x": [1.0, np.nan]}, ValueError, "non-finite"),
    ({"x": [1.0]}, ValueError, r"got shape \(1,\)"), ({"x": ["a", "b"]}, TypeError, "not numbers"),
    ({"y": 1}, ValueError, r"toy has no control or input named \['y'\]; its controls are \['scale', 'count', "
                           r"'kind'\] and its inputs \['x'\]")])
def test_bad_values_and_inputs_say_what_is_allowed(given, error, words):
    with pytest.raises(error, match=words):
        toy().render(**given)


def test_start_puts_the_controls_where_a_learners_input_needs_them():
    exp = toy(start=lambda x: {"scale": float(np.ptp(x))})
    assert exp.defaults() == {"scale": 1.0, "count": 4, "kind": "plain"}
    assert exp.defaults(x=[0.0, 3.0]) == {"scale": 3.0, "count": 4, "kind": "plain"}
    assert exp.render(x=[0.0, 3.0]).alt == "x scaled by 3: 4 marks"
    assert exp.render(x=[0.0, 3.0], scale=1.0).alt == "x scaled by 1: 4 marks"


def test_warnings_while_drawing_become_a_note():
    def update(art, **values):
        warnings.warn("something to know", stacklevel=1)
        return {"a": "1"}, "alt"

    exp = Explorable("w", title="w", controls={"v": Slider([1, 2], 1)}, setup=lambda fig, narrow: fig.subplots(),
                     update=update)
    assert exp.render().readouts == {"a": "1", "note": "something to know"}


def test_presets_fill_in_the_defaults_and_try_this_lists_them_in_order():
    exp = toy()
    assert exp.preset_values("banded") == {"scale": 1.0, "count": 0, "kind": "band"}
    with pytest.raises(ValueError, match="its presets are"):
        exp.preset_values("nope")
    text = try_this_markdown(exp)
    assert text.index("**big**") < text.index("**banded**") and "the line leaves the small axis" in text


def test_too_many_combinations_and_clashing_names_are_refused():
    with pytest.raises(ValueError, match="exceed max_frames=10"):
        toy(max_frames=10)
    with pytest.raises(ValueError, match="both a control and an input"):
        toy(inputs={"scale": vector([1.0, 2.0])})


def test_the_text_check_finds_overlaps_and_texts_off_the_figure():
    """The catalog's readability check (explorable_support.text_problems) on a figure built to fail it."""
    def setup(fig, narrow):
        ax = fig.subplots()
        ax.set_ylabel("a label")
        return {"ax": ax, "t": ax.text(-0.02, 0.5, "over the ticks", transform=ax.transAxes, ha="right")}

    def update(art, *, v):
        art["t"].set_x(-0.02 if v else 1.2)
        return {}, "alt"

    exp = Explorable("bad", title="bad", controls={"v": Choice([True, False], True)}, setup=setup, update=update)
    exp.render()
    assert any("overlaps" in p and "over the ticks" in p for p in text_problems(exp.figure()))
    exp.render(v=False)
    assert any("'over the ticks' leaves the figure" in p for p in text_problems(exp.figure()))


def test_figure_level_artists_that_update_changes_are_drawn_in_every_frame():
    """A line, patch and text placed on the figure itself (not on an axes) and moved by update() show in the fast
    frames exactly as in a first, full drawing of the same state (they once vanished from the fast frames)."""
    from matplotlib.patches import Rectangle

    def make():
        def setup(fig, *, narrow):
            fig.subplots().plot([0, 1], [0, 1])
            line = Line2D([0.1, 0.9], [0.5, 0.5], transform=fig.transFigure, color="red", lw=6)
            rect = Rectangle((0.02, 0.02), 0.1, 0.1, transform=fig.transFigure, color="blue")
            fig.lines.append(line)
            fig.patches.append(rect)
            return {"line": line, "rect": rect, "text": fig.text(0.5, 0.9, "", color="green", fontsize=20)}

        def update(art, *, v):
            art["line"].set_ydata([v, v])
            art["rect"].set_x(v / 2)
            art["text"].set_text(f"v={v}")
            return {"v": str(v)}, f"the line at height {v}"

        return Explorable("figure_level", title="t", controls={"v": Slider([0.2, 0.5, 0.8], 0.5)}, setup=setup,
                          update=update)

    moved = make()
    for v in (0.2, 0.8, 0.5, 0.2):
        img = pixels(moved.render(v=v).png).astype(int)
        np.testing.assert_array_equal(img, pixels(make().render(v=v).png))
        red = (img[..., 0] > 200) & (img[..., 1] < 80) & (img[..., 2] < 80)
        blue = (img[..., 2] > 200) & (img[..., 0] < 80) & (img[..., 1] < 80)
        assert red.sum() > 100 and blue.sum() > 100, f"v={v}: the figure's own line or patch is missing"
        rows, cols = np.nonzero(red)
        assert abs(rows.mean() - (1 - v) * img.shape[0]) < 0.02 * img.shape[0], f"v={v}: the line is not at v"
        assert abs(np.nonzero(blue)[1].mean() - (v / 2 + 0.05) * img.shape[1]) < 0.02 * img.shape[1]



def test_at_starts_from_a_notebooks_values_with_them_as_stops():
    """A value that is not a stop becomes one (the static book can show it), a stop is not added twice, the
    defaults give the explorable itself, and the frame at() starts from is the one render() draws there."""
    exp = toy(start=lambda x: {"scale": float(np.ptp(x))})
    assert exp.at() is exp and exp.at(x=[1.0, 2.0, 4.0, 9.0]) is exp
    typed = exp.at(scale=3.0)
    assert typed.controls["scale"].stops == [0.5, 1.0, 2.0, 3.0, 4.0] and typed.defaults()["scale"] == 3.0
    assert exp.at(scale=2.0).controls["scale"].stops == [0.5, 1.0, 2.0, 4.0]
    own = exp.at(x=[0.0, 1.5])   # start: scale = ptp(x) = 1.5
    assert own.controls["scale"].value == 1.5 and own.preset_values("banded")["scale"] == 1.5
    assert own.render().png == exp.render(x=[0.0, 1.5], scale=1.5).png
    assert exp.controls["scale"].stops == [0.5, 1.0, 2.0, 4.0]   # the catalog's explorable is left as it was


def test_notices_follow_the_inputs_or_say_they_are_the_defaults():
    presets = {"big": Preset({"scale": 4.0}, lambda x: f"the largest |y| is {4 * np.abs(x - x.mean()).max():g}"),
               "banded": Preset({"kind": "band"}, "a darker band, 4 marks", about_default=True)}
    exp = toy(presets=presets)
    assert exp.presets["big"].notice == "the largest |y| is 20" and exp.presets["banded"].notice.startswith("a dark")
    own = exp.at(x=[0.0, 2.0])
    assert own.presets["big"].notice == "the largest |y| is 4"
    assert own.presets["banded"].notice == "for the default input: a darker band, 4 marks"
    assert "the largest |y| is 4" in try_this_markdown(own)
    with pytest.raises(ValueError, match="one-line notice"):
        toy(presets={"bad": Preset({}, lambda x: "")})
