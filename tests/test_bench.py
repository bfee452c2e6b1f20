"""scripts/bench.py's burst measurement (`make bench`): 50 requests of the live face as fast as they come, along
the first slider or, for an explorable with none, its first control; the kernel's last frame shows the last one.
The times are the bench's to report; here only what it measures is checked."""

from __future__ import annotations

import pytest

from normlab_core.figures import catalog
from normlab_core.interactive import Slider
from scripts.bench import bench_burst, burst_keys

WITHOUT_SLIDER = [name for name, exp in catalog().items()
                  if not any(isinstance(c, Slider) for c in exp.controls.values())]


def test_the_catalog_has_an_explorable_without_a_slider_to_measure():
    assert WITHOUT_SLIDER, "no explorable without a slider is left: delete this test and WITHOUT_SLIDER's test"


@pytest.mark.parametrize("name", WITHOUT_SLIDER)
def test_a_burst_on_an_explorable_without_a_slider_moves_its_first_control(name):
    exp = catalog()[name]
    result = bench_burst(exp, n=7)
    first = next(iter(exp.controls))
    assert result["control"] == first and result["positions"] == len(exp.controls[first].positions()), (
        f"{name}: the burst moved {result['control']!r}; it moves the first control where there is no slider "
        "(scripts/bench.py burst_control)")
    assert result["finished"] and result["shows_last_value"], (
        f"{name}: after the burst the live view does not show the last state asked for: {result}")



@pytest.mark.parametrize("stops", range(2, 11))
def test_a_bursts_last_state_is_never_the_one_already_shown(stops):
    """Stepping on from the start round a control's positions ends where it began when the positions divide the
    requests (2 positions, 50 requests): the view would show a frame it holds and the burst measure nothing."""
    keys = burst_keys(["0", "1"], 0, stops, 50)
    assert len(keys) == 50 and keys[-1] != "0,1" and all(k.endswith(",1") for k in keys), (
        f"{stops} positions: the burst's last state is {keys[-1]!r}, the start (scripts/bench.py burst_keys)")
