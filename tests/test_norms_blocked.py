"""The row-blocked path (blocked.py) gives bit-for-bit the plain (whole-array) path's results, errors and warnings.

The plain path is the reference: it is the code checked against the chapter's printed figures elsewhere.
Here both paths run on the same inputs (the blocked one forced on small arrays by lowering its threshold,
with blocks that do not divide the row count) and their outputs must agree in every bit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from normlab_core import blocked as fast
from normlab_core.norms import layer_norm, layer_norm_stats, rms_norm, rms_norm_stats

SHAPES = [(3001, 17), (257, 1000), (6, 9000), (40, 7, 33), (1, 20000)]  # 9000, 20000 > numpy's 8192 buffer
DTYPES = [np.float32, np.float64]


def _bits(a: np.ndarray) -> bytes:
    return a.dtype.str.encode() + str(a.shape).encode() + np.ascontiguousarray(a).tobytes()


def _run(fn, *args, blocked: bool, block_bytes: int = 5000, **kw):
    """fn(*args, **kw) on the blocked or the plain path; returns (result, [warning texts], blocks taken)."""
    calls = []
    real = fast.run_blocked

    def spy(*a, **k):
        out = real(*a, **k)
        calls.append(out is not None)
        return out

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(fast, "BLOCK_MIN_SIZE", 1 if blocked else 1 << 62)
        mp.setattr(fast, "BLOCK_BYTES", block_bytes)
        mp.setattr(fast, "run_blocked", spy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(*args, **kw)
    finally:
        mp.undo()
    return out, [f"{w.category.__name__}: {w.message}" for w in caught], calls


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    # an offset and mixed scales make the float64 row sums of float32 data round differently per row
    x = rng.standard_normal(shape) * rng.uniform(0.01, 100, shape[:-1] + (1,)) + rng.uniform(-50, 50)
    d = shape[-1]
    return x.astype(dtype), rng.uniform(0.5, 1.5, d).astype(dtype), rng.uniform(-1, 1, d).astype(dtype)


def _same(fn, *args, **kw):
    """Run both paths, assert the blocked path was taken and agrees bit for bit; return the plain result."""
    plain, w_plain, calls_plain = _run(fn, *args, blocked=False, **kw)
    blocked, w_blocked, calls_blocked = _run(fn, *args, blocked=True, **kw)
    assert calls_plain == []
    assert calls_blocked == [True], "the blocked path was not taken"
    plain_t = plain if isinstance(plain, tuple) else (plain,)
    blocked_t = blocked if isinstance(blocked, tuple) else (blocked,)
    assert [_bits(a) for a in blocked_t] == [_bits(a) for a in plain_t]
    assert w_blocked == w_plain
    return plain


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_blocked_equals_plain_bitwise(shape, dtype):
    x, gamma, beta = _data(shape, dtype)
    _same(layer_norm, x)
    _same(layer_norm, x, gamma, beta, eps=1e-3)
    _same(layer_norm, x, None, beta)
    _same(layer_norm_stats, x)
    _same(rms_norm, x)
    _same(rms_norm, x, gamma, eps=0.5)
    _same(rms_norm_stats, x)
    _same(rms_norm_stats, x, sum_dtype=dtype)  # the residual stack's accumulator


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_bytes", [1, 4 * 17 * 5, 10**9])  # one row, 5 (or 2) rows, everything at once
def test_block_size_does_not_matter(block_bytes, dtype):
    x, gamma, beta = _data((3001, 17), dtype, seed=1)
    plain, _, _ = _run(layer_norm, x, gamma, beta, blocked=False)
    blocked, _, calls = _run(layer_norm, x, gamma, beta, blocked=True, block_bytes=block_bytes)
    assert calls == [True]
    assert _bits(blocked) == _bits(plain)


def test_default_threshold_takes_blocked_path_on_large_input():
    x, gamma, beta = _data((520, 2048), np.float32, seed=2)  # 1.06M elements, above BLOCK_MIN_SIZE
    assert x.size >= fast.BLOCK_MIN_SIZE
    assert fast.blockable(x)
    y = layer_norm(x, gamma, beta)
    # reference: the plain path, spelled out with the library's row_mean (float64 sums, rounded once)
    from normlab_core.stats import row_mean

    dev = x - row_mean(x)
    ref = dev * (1 / np.sqrt(row_mean(dev * dev) + np.float32(1e-5))) * gamma + beta
    assert y.dtype == np.float32
    assert _bits(y) == _bits(ref)
    # and the float64 value agrees to float32 precision (an independent check of the arithmetic)
    x64 = x.astype(np.float64)
    exact = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, exact, rtol=0, atol=2e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_same_error(bad, dtype):
    x, _, _ = _data((300, 17), dtype)
    x[123, 4] = bad
    x[299, 16] = bad
    for fn in (layer_norm, layer_norm_stats, rms_norm, rms_norm_stats):
        with pytest.raises(ValueError, match="contains 2 NaN or infinite value"):
            _run(fn, x, blocked=True)
    # x's error comes before an eps error, as on the plain path
    for blocked in (False, True):
        with pytest.raises(ValueError, match="NaN or infinite"):
            _run(layer_norm, x, eps=-1.0, blocked=blocked)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_variance_rows_with_eps_zero(dtype):
    x, _, _ = _data((300, 17), dtype)
    x[[5, 77]] = 3.0  # constant rows: variance 0
    x[[9]] = 0.0      # zero row: mean square 0
    for fn in (layer_norm, layer_norm_stats, rms_norm, rms_norm_stats):
        out = _run(fn, x, eps=0.0, blocked=True)[0]
        ref = _run(fn, x, eps=0.0, blocked=False)[0]
        out, ref = (out if isinstance(out, tuple) else (out,)), (ref if isinstance(ref, tuple) else (ref,))
        assert [_bits(a) for a in out] == [_bits(a) for a in ref]
    y, w, _ = _run(layer_norm, x, eps=0.0, blocked=True)
    assert np.isnan(y[[5, 77, 9]]).all() and np.isfinite(np.delete(y, [5, 77, 9], axis=0)).all()
    assert w == ["RuntimeWarning: the variance is zero in 3 row(s) and eps is 0: those outputs are 0/0 = NaN "
                 "(a positive eps keeps the division finite)"]


def test_overflowing_float32_values_same_result_and_warnings():
    x, _, _ = _data((300, 17), np.float32)
    x[10] *= np.float32(1e30)  # x * x overflows float32 in this row
    _same_warned = []
    for fn in (layer_norm, rms_norm):
        plain, w_plain, _ = _run(fn, x, blocked=False)
        blocked, w_blocked, _ = _run(fn, x, blocked=True)
        assert _bits(blocked) == _bits(plain)
        assert w_blocked == w_plain
        _same_warned += w_plain
    assert any("overflow" in w for w in _same_warned)  # the case is really exercised


def test_inputs_that_stay_on_the_plain_path():
    x, _, _ = _data((300, 17), np.float32)
    for arr in (x.T, x[:, ::2], x.astype(">f4"), x.tolist(), x.astype(np.float16)):
        _, _, calls = _run(layer_norm, arr, blocked=True)
        assert calls == []
    np.testing.assert_array_equal(_run(layer_norm, x.T.copy(), blocked=True)[0],
                                  _run(layer_norm, x.T, blocked=True)[0])
