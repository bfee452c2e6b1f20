"""Bad settings of the explorable mechanism (controls, explorables, the catalog) fail loudly, with a message that
names the problem. (The maths layer's bad-input tests are in test_maths.py; these belong with the mechanism's own
tests, tests/test_explore.py, once the mechanism's rework settles.)"""

from __future__ import annotations

import pytest

from normlab_core.controls import Choice, Slider
from normlab_core.explore import Explorable, get


# ---- controls and explorables ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lo=0.0, hi=1.0, value=0.5, scale="ln"), "scale must be"),
        (dict(lo=1.0, hi=1.0, value=1.0), "lo < hi"),
        (dict(lo=2.0, hi=1.0, value=1.5), "lo < hi"),
        (dict(lo=0.0, hi=1.0, value=0.5, scale="log"), "log slider needs lo > 0"),
        (dict(lo=-1.0, hi=1.0, value=0.5, scale="log"), "log slider needs lo > 0"),
        (dict(lo=0.0, hi=1.0, value=0.5, zero=True), "zero=True is for log sliders"),
        (dict(lo=0.0, hi=1.0, value=1.5), "outside"),
        (dict(lo=1e-3, hi=1.0, value=0.0, scale="log"), "outside"),
        (dict(lo=0.0, hi=1.0, value=0.5, steps=1), "steps must be >= 2"),
    ],
)
def test_slider_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Slider(**kwargs)


def test_log_slider_with_zero_accepts_zero():
    s = Slider(1e-3, 1.0, 0.0, scale="log", zero=True)
    assert s.allows(0) and not s.allows(1e-4) and s.positions()[0] == 0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(options=["a"], value="a"), "at least two options"),
        (dict(options=[], value=None), "at least two options"),
        (dict(options=["a", "b"], value="c"), "not one of the options"),
        (dict(options=["a", "b"], value="a", labels=["A"]), "labels must name every option"),
    ],
)
def test_choice_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Choice(**kwargs)


def _toy():
    return Explorable(
        "toy",
        {"a": Slider(0.0, 1.0, 0.5), "n": Slider(1, 10, 3), "kind": Choice(["x", "y"], "x")},
        setup=lambda fig: {"animated": []},
        update=lambda art, a, n, kind: {"a": str(a)},
    )


@pytest.mark.parametrize(
    "values,match",
    [
        (dict(b=1.0), r"no control\(s\) \['b'\]"),
        (dict(a=0.5, zz=1), r"no control\(s\) \['zz'\]"),
        (dict(a=1.5), "a=1.5 is outside"),
        (dict(a=-0.01), "a=-0.01 is outside"),
        (dict(n=11), "n=11 is outside"),
        (dict(kind="z"), "kind='z' is outside"),
        (dict(n=2.5), "n=2.5 is outside"),
        (dict(a="0.5"), "a='0.5' is outside"),
        (dict(a=None), "a=None is outside"),
    ],
)
def test_explorable_values_errors(values, match):
    exp = _toy()
    with pytest.raises(ValueError, match=match):
        exp.values(**values)
    with pytest.raises(ValueError, match=match):
        exp.render(**values)
    assert exp._fig is None  # refused before drawing anything


def test_explorable_values_merges_defaults():
    assert _toy().values(a=1.0) == {"a": 1.0, "n": 3, "kind": "x"}


def test_integer_slider_values_arrive_as_int():
    got = _toy().values(n=7.0)["n"]
    assert got == 7 and type(got) is int


def test_unknown_catalog_name():
    with pytest.raises(KeyError, match="no explorable named 'nope'"):
        get("nope")
