"""normlab_core.precision against independent references: the formats' defining formulas and brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normlab_core.precision import bfloat16_round, grid, levels_between, round_to, spacing


def formula_values(exp_bits: int, man_bits: int) -> np.ndarray:
    """Every finite value of a binary format from sign * (1 + m/2**p) * 2**(e - bias), plus subnormals."""
    bias = 2 ** (exp_bits - 1) - 1
    m = np.arange(2**man_bits, dtype=np.float64)
    vals = [m / 2**man_bits * 2.0 ** (1 - bias)]  # subnormals and zero
    for e in range(1, 2**exp_bits - 1):
        vals.append((1 + m / 2**man_bits) * 2.0 ** (e - bias))
    pos = np.concatenate(vals)
    return np.unique(np.concatenate([-pos, pos]))


def brute_nearest_even(x: float, table: np.ndarray, man_bits: int, emin: int) -> float:
    """Nearest table value to x; on a tie the one whose last mantissa bit is 0 (found by exact scaling)."""
    i = np.searchsorted(table, x)
    cands = [table[j] for j in (i - 1, i) if 0 <= j < table.size]
    dists = [abs(c - x) for c in cands]
    best = [c for c, d in zip(cands, dists, strict=True) if d == min(dists)]
    if len(best) == 1:
        return best[0]

    def last_bit(v):
        if v == 0:
            return 0
        e = max(np.floor(np.log2(abs(v))), emin)  # subnormals share the smallest exponent
        return int(abs(v) / 2.0 ** (e - man_bits)) & 1

    return [c for c in best if last_bit(c) == 0][0]


def test_grids_match_the_format_definitions():
    np.testing.assert_array_equal(grid("float16"), formula_values(5, 10))
    np.testing.assert_array_equal(grid("bfloat16"), formula_values(8, 7))


def test_bfloat16_ties_go_to_even_by_hand():
    # 1 + 2**-8 is halfway between 1 and 1 + 2**-7: the even neighbour is 1
    # 1 + 3 * 2**-8 is halfway between 1 + 2**-7 and 1 + 2**-6: the even neighbour is 1 + 2**-6
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-20], dtype=np.float32)
    np.testing.assert_array_equal(bfloat16_round(x), [1.0, 1 + 2**-6, -1.0, 1 + 2**-7])


def test_bfloat16_overflow_and_extremes():
    top = grid("bfloat16")[-1]
    assert top == (2 - 2**-7) * 2.0**127
    assert bfloat16_round(np.float32(top)) == top
    assert np.isinf(bfloat16_round(np.finfo(np.float32).max))  # beyond the halfway point above `top`
    assert bfloat16_round(np.float32(0.0)) == 0.0


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-(2.0**127), max_value=2.0**127))
def test_bfloat16_round_is_the_nearest_representable(x):
    assert bfloat16_round(np.float32(x)) == brute_nearest_even(float(np.float32(x)), grid("bfloat16"), 7, -126)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, min_value=-65000, max_value=65000))
def test_float16_round_is_the_nearest_representable(x):
    assert round_to(x, "float16") == brute_nearest_even(x, formula_values(5, 10), 10, -14)


def test_round_to_keeps_higher_precisions():
    x = np.array([0.1, 1 / 3, 100.5])
    np.testing.assert_array_equal(round_to(x, "float64"), x)
    np.testing.assert_array_equal(round_to(x, "float32"), x.astype(np.float32).astype(np.float64))
    assert np.isinf(round_to(70000.0, "float16"))
    with pytest.raises(ValueError, match="format"):
        round_to(x, "float8")


def test_levels_between_counts_by_hand():
    # [1, 2] holds 2**p values of the binade [1, 2) plus 2 itself
    assert levels_between(1, 2, "bfloat16") == 2**7 + 1
    assert levels_between(1, 2, "float16") == 2**10 + 1
    assert levels_between(0, 0, "float16") == 1
    assert levels_between(1.001, 1.002, "bfloat16") == 0
    with pytest.raises(ValueError):
        levels_between(2, 1, "float16")


def test_spacing_by_hand():
    np.testing.assert_array_equal(spacing([1.0, 0.75, 100.0], "bfloat16"), [2**-7, 2**-8, 2**-1])
    np.testing.assert_array_equal(spacing([1.0, 0.75], "float16"), [2**-10, 2**-11])
    assert spacing(1.0, "float32") == 2.0**-23
