"""one_pass_var and span_in_std against exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest

from normlab_core.moments import one_pass_var, span_in_std

CHAPTER_A = [100.0, 102.0, 98.0, 101.0, 99.0, 103.0]


def exact_var(values) -> Fraction:
    xs = [Fraction(float(v)) for v in values]
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


def test_one_pass_var_float64_is_exact_on_small_integers():
    assert one_pass_var(np.array(CHAPTER_A)) == pytest.approx(float(exact_var(CHAPTER_A)), rel=1e-14)


def test_one_pass_var_float32_loses_digits_at_the_chapter_offset():
    exact = float(exact_var(CHAPTER_A))                     # 35/12 = 2.91666...
    got = float(one_pass_var(np.array(CHAPTER_A, dtype=np.float32)))
    assert exact == pytest.approx(35 / 12)
    assert abs(got - exact) > 1e-4                           # cancellation: wrong in the 4th digit
    assert got == pytest.approx(2.9169922, abs=1e-7)         # sum of squares rounded to float32 steps


@pytest.mark.parametrize("offset", [1e4, 1e5])
def test_one_pass_var_float32_collapses_at_large_offsets(offset):
    shape = np.array(CHAPTER_A) - 100.5
    x = (offset + shape).astype(np.float32)
    exact = float(exact_var(x))
    assert abs(float(one_pass_var(x)) - exact) / exact > 0.5


def test_span_in_std_matches_closed_form_and_is_scale_free():
    expected = 5 / np.sqrt(35 / 12)
    assert span_in_std(np.array(CHAPTER_A)) == pytest.approx(expected, rel=1e-12)
    b = (np.array(CHAPTER_A) - 99.0) / 1000.0
    assert span_in_std(b) == pytest.approx(expected, rel=1e-9)


def test_span_in_std_of_constant_row_is_nan():
    assert np.isnan(span_in_std(np.full(4, 5.0)))
