"""One state per explorable, for the quick loop (`make check`): each explorable of the catalog draws its default
state in the wide layout from its declared inputs, with a readout for every row it declares and alt text.
tests/test_catalog.py draws every state in both layouts and checks what they show; this is its one-state smoke
layer, so that a change that breaks an explorable fails within the first minute."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from normlab_core.figures import catalog, get

NAMES = list(catalog())


@pytest.mark.parametrize("name", NAMES)
def test_the_default_state_draws_with_its_readouts_and_alt_text(name):
    exp = get(name)
    frame = exp.render(**exp.defaults())
    width, height = Image.open(io.BytesIO(frame.png)).size
    assert width > 200 and height > 100, f"{name}: a {width}x{height} frame"
    assert frame.alt.strip(), f"{name}: no alt text"
    assert frame.readouts and all(isinstance(v, str) and v.strip() for v in frame.readouts.values()), (
        f"{name}: empty readouts {frame.readouts!r}; run `pytest tests/test_catalog.py -k {name}` for the details")
