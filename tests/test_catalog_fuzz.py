"""Fuzz every catalog entry over its whole control space: no exception, no warning, honest readouts."""

from __future__ import annotations

import itertools
import math
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normlab_core.controls import Choice, Slider
from normlab_core.explore import catalog

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAMES = list(catalog())
NON_FINITE = re.compile(r"\b(nan|inf|-inf|\+inf)\b", re.IGNORECASE)
EXPLAINS = re.compile(r"0/0|\bzero\b|NaN:|overflow", re.IGNORECASE)


def edges(c: Slider) -> list:
    vals = [int(c.lo), int(c.hi)] if c.integer else [c.lo, c.hi]
    return vals + ([0] if c.zero else [])


def control_strategy(c):
    if isinstance(c, Choice):
        return st.sampled_from(c.options)
    if c.integer:
        inner = st.integers(int(c.lo), int(c.hi))
    elif c.scale == "log":
        inner = st.floats(math.log10(c.lo), math.log10(c.hi)).map(lambda e: min(c.hi, max(c.lo, 10.0 ** e)))
    else:
        inner = st.floats(c.lo, c.hi, allow_nan=False)
    # the stops both faces offer and the edges (lo, hi, and 0 where offered) come up often; anything in range
    # otherwise (a notebook may call render() with any value the slider allows)
    return st.one_of(st.sampled_from(c.positions()), st.sampled_from(edges(c)), inner)


def check_render(exp, values):
    """Render with warnings as errors; readouts are strings, and a NaN/inf readout comes with its reason."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png, readouts = exp.render(**values)
    assert png.startswith(PNG_MAGIC)
    assert readouts, values
    for k, v in readouts.items():
        assert isinstance(k, str) and isinstance(v, str), (k, v)
    text = " ".join(f"{k} {v}" for k, v in readouts.items())
    if NON_FINITE.search(text):
        assert "note" in readouts or EXPLAINS.search(text), (
            f"{exp.name} at {values} shows a non-finite readout without saying why: {readouts}")


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_control_values(name, data):
    exp = catalog()[name]
    values = {k: data.draw(control_strategy(c), label=k) for k, c in exp.controls.items()}
    check_render(exp, values)


@pytest.mark.parametrize("name", NAMES)
def test_every_corner_of_the_sliders(name):
    """All sliders at lo together, all at hi together, all at 0 where offered, for every Choice combination."""
    exp = catalog()[name]
    sliders = {k: c for k, c in exp.controls.items() if isinstance(c, Slider)}
    choices = {k: c for k, c in exp.controls.items() if isinstance(c, Choice)}
    corners = [
        {k: edges(c)[0] for k, c in sliders.items()},
        {k: edges(c)[1] for k, c in sliders.items()},
        {k: (0 if c.zero else edges(c)[0]) for k, c in sliders.items()},
        {k: (edges(c)[i % 2]) for i, (k, c) in enumerate(sliders.items())},
        {k: (edges(c)[(i + 1) % 2]) for i, (k, c) in enumerate(sliders.items())},
    ]
    for combo in itertools.product(*[c.options for c in choices.values()]):
        for corner in corners:
            check_render(exp, {**corner, **dict(zip(choices, combo, strict=True))})
