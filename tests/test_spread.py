"""normlab_core.spread: bootstrap intervals over seeds, checked against the exact bootstrap distribution found by
enumerating every resample. If a test fails, fix normlab_core/spread.py and run
`.venv/bin/pytest -p no:cacheprovider tests/test_spread.py -q`."""

import itertools

import numpy as np
import pytest

from normlab_core import spread


def exact_means(values):
    """Every resample with replacement of `values`, each as likely as the others: their means."""
    return np.array([np.mean(c) for c in itertools.product(values, repeat=len(values))])


def test_two_seeds_give_the_interval_between_them():
    # The mean of a resample of (a, b) is a, (a+b)/2 or b with chances 1/4, 1/2, 1/4: the middle 90 % spans a..b.
    mean, lo, hi = spread.mean_interval([1.0, 3.0])
    assert (mean, lo, hi) == (2.0, 1.0, 3.0)


@pytest.mark.parametrize("values", [[1.0, 2.0, 10.0], [0.58, 0.60, 1.17], [5.0, 5.5, 6.0, 9.0]])
def test_the_interval_holds_about_its_level_of_the_exact_bootstrap_distribution(values):
    _, lo, hi = spread.mean_interval(values, level=0.9)
    inside = np.mean((exact_means(values) >= lo) & (exact_means(values) <= hi))
    assert 0.85 <= inside <= 0.98


def test_equal_values_leave_no_spread_and_the_ratio_is_exact():
    assert spread.mean_interval([0.3, 0.3, 0.3]) == pytest.approx((0.3, 0.3, 0.3))
    assert spread.ratio_interval([2.0, 2.0], [1.0, 1.0]) == pytest.approx((2.0, 2.0, 2.0))


def test_the_ratio_interval_contains_its_estimate_and_widens_with_scatter():
    r, lo, hi = spread.ratio_interval([1.0, 1.2, 2.4], [0.5, 0.5, 0.5])
    assert lo < r < hi and r == pytest.approx(np.mean([1.0, 1.2, 2.4]) / 0.5)
    exact = exact_means([1.0, 1.2, 2.4]) / 0.5          # the denominator has no scatter: only num's resamples count
    assert np.mean((exact >= lo) & (exact <= hi)) >= 0.85
    narrow = spread.ratio_interval([1.5, 1.5, 1.6], [0.5, 0.5, 0.5])
    assert narrow[2] - narrow[1] < hi - lo


def test_overlap():
    assert spread.overlap((1, 0.5, 2), (3, 1.9, 4)) and not spread.overlap((1, 0.5, 1.8), (3, 1.9, 4))


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [[1.0, 2.0]], "abc"])
def test_bad_values_raise_value_error_naming_the_argument(bad):
    with pytest.raises(ValueError, match="values"):
        spread.mean_interval(bad)


def test_bad_level_and_nonpositive_denominator_raise():
    with pytest.raises(ValueError, match="level"):
        spread.mean_interval([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="den"):
        spread.ratio_interval([1.0], [0.0])


def test_the_update_size_figure_shades_the_bootstrap_interval_not_the_range():
    """The shaded band of each variant is the 90 % bootstrap interval of its mean over seeds (one far seed widens
    a range far more than the interval of the mean)."""
    from matplotlib.collections import PolyCollection

    from normlab_core.figures.training_runs import update_size_figure

    rows = np.array([[1.0, 1.0], [1.1, 1.2], [0.9, 0.8], [1.0, 5.0]])
    fig = update_size_figure([1, 2], {"post": rows})
    (band,) = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    ys = band.get_paths()[0].vertices[:, 1]
    _, lo, hi = spread.mean_interval(rows[:, 1])
    assert ys.max() == pytest.approx(hi) and ys.max() < 5.0
    assert ys.min() == pytest.approx(min(spread.mean_interval(rows[:, 0])[1], lo))
