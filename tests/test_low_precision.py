"""Norms in 16 bits (going further from 23.6), a norm's statistics in low precision: float16 facts by brute
force over every bit pattern, the format-by-format arithmetic of normlab_core.statistics_precision against numpy's
own float16/float32 arithmetic and exact rational arithmetic, and the compare_variance explorable's readouts
against values recomputed here."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from normlab_core import statistics_precision as sp
from normlab_core.examples import UNEVEN, VECTOR_A
from normlab_core.moments import one_pass_var
from normlab_core.norms import layer_norm, rms_norm
from normlab_core.precision import grid

ALL_F16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)   # every bit pattern
FINITE_F16 = ALL_F16[np.isfinite(ALL_F16)]
NOTEBOOK_OFFSETS = (0.0, 1.0, 10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4)   # the explorable's stops and the table's


def exact_var(row) -> Fraction:
    """The biased variance of the float64 values row, in exact rational arithmetic."""
    xs = [Fraction(float(v)) for v in row]
    m = sum(xs) / len(xs)
    return sum((v - m) ** 2 for v in xs) / len(xs)


# -- float16 facts, by brute force ------------------------------------------------------------------------------
def test_float16_range_by_brute_force():
    pos = FINITE_F16[FINITE_F16 > 0].astype(np.float64)
    normal = pos[[bool((p >> 10) & 0x1F) for p in FINITE_F16[FINITE_F16 > 0].view(np.uint16)]]  # exponent field != 0
    assert pos.min() == 2.0**-24 == float(np.finfo(np.float16).smallest_subnormal)
    assert normal.min() == 2.0**-14 == float(np.finfo(np.float16).smallest_normal)
    assert pos.max() == 65504.0 == float(np.finfo(np.float16).max)
    assert np.array_equal(np.unique(np.abs(FINITE_F16.astype(np.float64))), np.unique(np.abs(grid("float16"))))


def test_library_epsilons_in_float16():
    tiny, sub = 2.0**-14, 2.0**-24
    for eps in (1e-5, 1e-6):
        stored = float(np.float16(eps))
        assert 0 < stored < tiny and stored != eps                  # subnormal, and not eps itself
        m = Fraction(stored) / Fraction(sub)
        assert m.denominator == 1 and sp.significant_bits(eps) == int(m).bit_length() < 11
    assert float(np.float16(1e-8)) == 0.0 and sp.significant_bits(1e-8) == 0
    # the threshold: half the smallest subnormal rounds to 0 (a tie, to even), anything above it to 2**-24
    assert float(np.float16(sub / 2)) == 0.0 and float(np.float16(np.nextafter(sub / 2, 1))) == sub
    assert sp.significant_bits(1e-3) == 11 and sp.significant_bits(2.0**-14) == 11


def test_significant_bits_of_every_positive_subnormal():
    subs = FINITE_F16[(FINITE_F16 > 0) & (FINITE_F16 < 2.0**-14)].astype(np.float64)
    assert subs.size == 1023
    for v in subs:
        assert sp.significant_bits(v) == int(round(v * 2**24)).bit_length()


def test_a_float16_square_is_inf_exactly_when_the_magnitude_is_at_least_256():
    with np.errstate(over="ignore"):
        squares = FINITE_F16 * FINITE_F16                            # numpy's own float16 multiply
    overflow = np.isinf(squares)
    assert np.array_equal(overflow, np.abs(FINITE_F16) >= 256)
    below = np.float16(np.nextafter(np.float16(256), np.float16(0)))
    assert float(below) == 255.875 and float(below * below) == 65472.0
    assert np.array_equal(sp.to_format(FINITE_F16.astype(np.float64) ** 2, "float16"), squares.astype(np.float64))


# -- the emulated arithmetic against numpy's own dtypes ------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_one_rounded_operation_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 4, 4000)).astype(dtype)
    b = (rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 4, 4000)).astype(dtype)
    fmt = np.dtype(dtype).name
    A, B = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(over="ignore"):
        for got, want in ((A + B, a + b), (A - B, a - b), (A * B, a * b), (A / B, a / b)):
            assert np.array_equal(sp.to_format(got, fmt), want.astype(np.float64))


def test_bfloat16_rounding_is_to_the_nearest_grid_value():
    g = grid("bfloat16")
    v = np.random.default_rng(6).uniform(-300, 300, 2000)
    near = g[np.abs(g[None, :] - v[:, None]).argmin(axis=1)]
    assert np.array_equal(sp.to_format(v, "bfloat16"), near)


@pytest.mark.parametrize("fmt", ["float16", "float32"])
def test_one_pass_matches_moments_one_pass_var(fmt):
    rows = np.array([o + UNEVEN for o in NOTEBOOK_OFFSETS]).astype(fmt)
    got = sp.var_one_pass(rows.astype(np.float64), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        want = one_pass_var(rows, acc_dtype=fmt)
    assert np.array_equal(got, want.astype(np.float64), equal_nan=True)


def _native_two_pass(row, dtype):
    t = dtype(0)
    for v in row:
        t = dtype(t + v)
    m = dtype(t / dtype(len(row)))
    s = dtype(0)
    for v in row:
        d = dtype(v - m)
        s = dtype(s + dtype(d * d))
    return s / dtype(len(row))


def _native_welford(row, dtype):
    m = m2 = dtype(0)
    for k, v in enumerate(row, start=1):
        d = dtype(v - m)
        m = dtype(m + dtype(d / dtype(k)))
        m2 = dtype(m2 + dtype(d * dtype(v - m)))
    return dtype(m2 / dtype(len(row)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_two_pass_and_welford_match_a_scalar_loop_in_numpys_dtype(dtype):
    fmt = np.dtype(dtype).name
    with np.errstate(over="ignore", invalid="ignore"):
        for off in NOTEBOOK_OFFSETS:
            row = (off + UNEVEN).astype(dtype)
            for ours, theirs in ((sp.var_two_pass, _native_two_pass), (sp.var_welford, _native_welford)):
                got, want = float(ours(row.astype(np.float64), fmt)), float(theirs(row, dtype))
                assert got == want or (math.isnan(got) and math.isnan(want)), (fmt, off, ours.__name__, got, want)


def test_sum_in_float64_agrees_with_fsum_and_the_variances_with_exact_arithmetic():
    rng = np.random.default_rng(7)
    for off in NOTEBOOK_OFFSETS:
        row = off + UNEVEN + 1e-3 * rng.standard_normal(UNEVEN.size)
        assert abs(float(sp.sum_in(row, "float64")) - math.fsum(row)) <= 64 * np.spacing(math.fsum(np.abs(row)))
        exact = float(exact_var(row))
        assert abs(float(sp.var_two_pass(row, "float64")) / exact - 1) < 1e-13
        assert abs(float(sp.var_welford(row, "float64")) / exact - 1) < 1e-11
        bound = 41 * 2.0**-52 * (off * off + 1) / exact               # one-pass: cancellation of mean(x*x) ~ off**2
        assert abs(float(sp.var_one_pass(row, "float64")) / exact - 1) < 4 * bound + 1e-14


# -- what the notebook says ---------------------------------------------------------------------------------
def test_one_pass_fails_in_float32_where_two_pass_and_welford_hold():
    rows = np.array([o + UNEVEN for o in NOTEBOOK_OFFSETS]).astype(np.float32).astype(np.float64)
    exact = np.array([float(exact_var(r)) for r in rows])
    err = {f.__name__: np.abs(f(rows, "float32") / exact - 1) for f in (sp.var_one_pass, sp.var_two_pass,
                                                                         sp.var_welford)}
    assert err["var_one_pass"][NOTEBOOK_OFFSETS.index(300.0)] > 1e-3            # digits lost at offset 300
    assert float(sp.var_one_pass(rows[-1], "float32")) < 0                       # and a negative variance at 1e4
    assert err["var_two_pass"].max() < 1e-6 and err["var_welford"].max() < 1e-2
    assert err["var_one_pass"].max() > 1


def test_float16_one_pass_overflows_and_two_pass_does_not_at_offset_100():
    row = sp.to_format(100 + UNEVEN, "float16")
    assert np.isinf(sp.var_one_pass(row, "float16"))
    assert np.isfinite(sp.var_two_pass(row, "float16")) and np.isfinite(sp.var_welford(row, "float16"))
    assert not np.isfinite(sp.var_one_pass(VECTOR_A + 200, "float16"))      # squares near 300**2 overflow


def test_norms_of_a_constant_row_with_eps_stored_in_float16():
    flat = np.full(5, 10.0)
    assert np.isnan(sp.layer_norm_in(flat, "float16", 1e-8)).all()       # 1e-8 -> 0, then 0 / 0
    assert (sp.layer_norm_in(flat, "float16", 1e-5) == 0).all()          # a subnormal eps still keeps it finite
    assert (sp.layer_norm_in(flat, "float32", 1e-8) == 0).all()
    assert np.isnan(sp.rms_norm_in(np.zeros(5), "float16", 1e-8)).all()
    assert (sp.rms_norm_in(flat, "float16", 1e-8) == 1).all()
    x = np.array([3.0, -1.0, 0.5, 2.0, -0.5])
    assert np.allclose(sp.layer_norm_in(x, "float64", 1e-5), layer_norm(x, eps=1e-5), rtol=0, atol=1e-15)
    assert np.allclose(sp.rms_norm_in(x, "float64", 1e-5), rms_norm(x, eps=1e-5), rtol=0, atol=1e-15)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="format 'float8'"):
        sp.to_format(1.0, "float8")
    with pytest.raises(ValueError, match="eps"):
        sp.layer_norm_in([1.0, 2.0], "float16", eps=-1.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        sp.var_two_pass([1.0, np.nan], "float32")


# -- the explorable -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("offset", [10.0, 300.0, 1e4])
def test_explorable_readouts_agree_with_recomputed_values(offset, fmt):
    from normlab_core.figures import get
    from normlab_core.formatting import number

    frame = get("compare_variance").render(offset=offset, fmt=fmt)
    shape = (UNEVEN - UNEVEN.mean()) / UNEVEN.std()
    row = sp.to_format(offset + shape, fmt)
    exact = float(exact_var(row))
    assert frame.readouts["exact variance (row as stored)"].startswith(number(exact, 6))
    for name, f in (("one-pass", sp.var_one_pass), ("two-pass", sp.var_two_pass), ("Welford", sp.var_welford)):
        v = float(f(row, fmt))
        text = frame.readouts[name]
        if not math.isfinite(v):
            assert "undefined" in text
        elif exact == 0:
            assert "constant" in text
        else:
            assert text.startswith(number(v, 6)) and f"relative error {number(abs(v / exact - 1), 2)}" in text
            assert f"{name} {number(v / exact, 3)}" in frame.alt
