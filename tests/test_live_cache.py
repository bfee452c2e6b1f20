"""The live face's frame cache and drawing ahead, and the text cache of the figures' renderer.

Checked against independent drawings: a second, fresh catalog (its own figures) and matplotlib's own Agg
text drawing (normlab_core.style.TEXT_CACHE = False).
"""

from __future__ import annotations

import pytest

from normlab_core import explorables, live, style
from normlab_core.explore import Slider


def _states(exp, n=6):
    """The defaults, then each control across a few of its positions (others at their defaults)."""
    out = [exp.defaults()]
    for k, c in exp.controls.items():
        for v in c.positions()[:n]:
            out.append({**exp.defaults(), k: v})
    return out


@pytest.mark.parametrize("name", ["overview_norm_output", "scale_offset_standardize", "backward_fd_step"])
def test_cached_text_draws_the_same_pixels_as_matplotlib(name):
    cached, plain = explorables.build()[name], explorables.build()[name]
    try:
        for values in _states(cached):
            style.TEXT_CACHE = True
            a = cached.render(**values)
            style.TEXT_CACHE = False
            b = plain.render(**values)
            assert a == b, f"{name} at {values}: the cached text drawing differs from matplotlib's"
    finally:
        style.TEXT_CACHE = True


def test_cached_frames_equal_fresh_frames_and_are_reused():
    exp, fresh = explorables.build()["pre_post_fd_error"], explorables.build()["pre_post_fd_error"]
    live.clear_cache(exp)
    for values in _states(exp):
        (png, readouts, alt), _hit = live.cached_frame(exp, values)
        assert (png, readouts) == fresh.render(**values)
        assert alt == fresh.alt(**values)
        again, hit = live.cached_frame(exp, values)
        assert hit and again == (png, readouts, alt)
    assert len(live._FRAMES[exp]) == len({live._frame_key(v) for v in _states(exp)})


def test_the_cache_keeps_a_bounded_number_of_frames(monkeypatch):
    exp = explorables.build()["gain_depth"]
    monkeypatch.setattr(live, "CACHE_FRAMES", 3)
    states = _states(exp)[:5]
    for values in states:
        live.cached_frame(exp, values)
    assert [live.is_cached(exp, v) for v in states] == [False, False, True, True, True]


def test_neighbours_continue_the_last_move_first():
    exp = explorables.build()["pre_post_fd_error"]
    stops = exp.controls["h"].positions()
    at = {"h": stops[3], "dtype": "float32"}
    up = live.neighbours(exp, at, "h", +1)
    assert up[:2] == [{**at, "h": stops[4]}, {**at, "h": stops[2]}]
    assert {**at, "dtype": "float64"} in up
    down = live.neighbours(exp, at, "h", -1)
    assert down[0] == {**at, "h": stops[2]}
    # at an end there is only one way to go
    assert live.neighbours(exp, {**at, "h": stops[-1]}, "h", +1)[0] == {**at, "h": stops[-2]}


def test_a_live_view_draws_ahead_and_serves_the_next_move_from_the_cache(monkeypatch):
    monkeypatch.setenv("NORMLAB_PREFETCH", "1")
    exp, fresh = explorables.build()["layer_norm_affine"], explorables.build()["layer_norm_affine"]
    view = exp.live()
    slider = view.controls["gamma"]
    stops = exp.controls["gamma"].positions()
    i = stops.index(slider.value)
    slider.value = stops[i + 1]
    assert view.wait(timeout=60, ahead=True)
    assert view.prefetched >= 1
    assert live.is_cached(exp, {**view.current_values(), "gamma": stops[i + 2]})
    hits = view.cache_hits
    slider.value = stops[i + 2]
    assert view.wait(timeout=60)
    assert view.cache_hits == hits + 1
    assert view.drawn == {**exp.defaults(), "gamma": stops[i + 2]}
    assert (view.png, view.explorable.alt(**view.drawn)) == (fresh.frame(**view.drawn), fresh.alt(**view.drawn))


def test_no_drawing_ahead_when_turned_off(monkeypatch):
    monkeypatch.setenv("NORMLAB_PREFETCH", "0")
    exp = explorables.build()["rms_norm_offset"]
    view = exp.live()
    name = next(k for k, c in exp.controls.items() if isinstance(c, Slider))
    stops = exp.controls[name].positions()
    view.controls[name].value = stops[(stops.index(view.controls[name].value) + 1) % len(stops)]
    assert view.wait(timeout=60, ahead=True)
    assert view.prefetched == 0
