"""A row's statistics computed in a low-precision format, one rounded operation at a time (section 23.6).

`precision.round_to` stores finished values in float16 or bfloat16. Here the arithmetic itself is done in the
format: every addition, product, division and square root is worked out exactly (in float64, which holds the exact
result of one float16, bfloat16 or float32 operation or rounds it correctly) and then rounded to the format, as
hardware that computes in that format does. Overflow gives inf and 0/0 gives NaN, which are passed on, not raised.

Three ways to get the variance of a row, the same formula in exact arithmetic but not in floating point:

- `var_one_pass`: mean(x*x) - mean(x)**2, one sweep (`moments.one_pass_var` is the same, in numpy's own dtypes);
- `var_two_pass`: the mean first, then the mean of the squared deviations from it (two sweeps);
- `var_welford`: Welford's running update of the mean and of the sum of squared deviations (one sweep).

Sums run left to right, so the rounding is the same on every machine.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_choice, check_eps
from .precision import FORMATS, round_to


def to_format(v, fmt: str) -> np.ndarray:
    """v (any shape) rounded to fmt and read back as float64; inf and NaN stay as they are."""
    check_choice(fmt, "format", FORMATS)
    v = np.array(v, dtype=np.float64)
    finite = np.isfinite(v)
    if finite.any():
        v[finite] = round_to(v[finite], fmt)
    return v


def _row(x, fmt: str) -> np.ndarray:
    """x (..., D) checked and stored in fmt (the values the format holds before any arithmetic)."""
    return to_format(as_float_array(x, min_ndim=1), fmt)


def _sum(x: np.ndarray, fmt: str) -> np.ndarray:
    """Sum of the stored values x (..., D) over the last axis, left to right, each partial sum rounded to fmt."""
    total = np.zeros(x.shape[:-1])
    with np.errstate(invalid="ignore"):          # inf + (-inf) is NaN, as in the format
        for k in range(x.shape[-1]):
            total = to_format(total + x[..., k], fmt)
    return total


def _mean(x: np.ndarray, fmt: str) -> np.ndarray:
    """Mean of the stored values x (..., D): _sum, then one division by D rounded to fmt: shape (...)."""
    with np.errstate(invalid="ignore"):
        return to_format(_sum(x, fmt) / to_format(x.shape[-1], fmt), fmt)


def sum_in(x, fmt: str) -> np.ndarray:
    """Sum of x (..., D) over the last axis, left to right, each partial sum rounded to fmt: shape (...)."""
    return _sum(_row(x, fmt), fmt)


def mean_in(x, fmt: str) -> np.ndarray:
    """Mean of x (..., D) over the last axis: sum_in, then one rounded division by D: shape (...)."""
    return _mean(_row(x, fmt), fmt)


def var_one_pass(x, fmt: str) -> np.ndarray:
    """Biased variance of x (..., D) as mean(x*x) - mean(x)**2, every operation in fmt: shape (...)."""
    x = _row(x, fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        mean_sq = _mean(to_format(x * x, fmt), fmt)
        m = _mean(x, fmt)
        return to_format(mean_sq - to_format(m * m, fmt), fmt)


def var_two_pass(x, fmt: str) -> np.ndarray:
    """Biased variance of x (..., D): the mean first, then the mean of (x - mean)**2, every operation in fmt."""
    x = _row(x, fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        dev = to_format(x - _mean(x, fmt)[..., None], fmt)
        return _mean(to_format(dev * dev, fmt), fmt)


def var_welford(x, fmt: str) -> np.ndarray:
    """Biased variance of x (..., D) by Welford's update (one sweep), every operation in fmt: shape (...).

    After k values: d = x_k - m; m = m + d / k; M2 = M2 + d * (x_k - m); the variance is M2 / D."""
    x = _row(x, fmt)
    m, m2 = np.zeros(x.shape[:-1]), np.zeros(x.shape[:-1])
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(x.shape[-1]):
            d = to_format(x[..., k] - m, fmt)
            m = to_format(m + to_format(d / to_format(k + 1, fmt), fmt), fmt)
            m2 = to_format(m2 + to_format(d * to_format(x[..., k] - m, fmt), fmt), fmt)
        return to_format(m2 / to_format(x.shape[-1], fmt), fmt)


def layer_norm_in(x, fmt: str, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of x (..., D) with the mean, two-pass variance, eps and division all in fmt: shape (..., D)."""
    x, e = _row(x, fmt), to_format(check_eps(eps), fmt)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        dev = to_format(x - _mean(x, fmt)[..., None], fmt)
        std = to_format(np.sqrt(to_format(var_two_pass(x, fmt) + e, fmt)), fmt)
        return to_format(dev / std[..., None], fmt)


def rms_norm_in(x, fmt: str, eps: float = 1e-5) -> np.ndarray:
    """RMSNorm of x (..., D) with the mean square, eps and division all in fmt: shape (..., D)."""
    x, e = _row(x, fmt), to_format(check_eps(eps), fmt)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        rms = to_format(np.sqrt(to_format(_mean(to_format(x * x, fmt), fmt) + e, fmt)), fmt)
        return to_format(x / rms[..., None], fmt)


def significant_bits(v, fmt: str = "float16") -> int:
    """How many significant bits the 16-bit format fmt keeps for the number v once stored (0 if it rounds to 0)."""
    check_choice(fmt, "format", ("float16", "bfloat16"))
    stored = abs(float(to_format(v, fmt)))
    if stored == 0:
        return 0
    smallest_normal = 2.0**-14 if fmt == "float16" else float(np.finfo(np.float32).tiny)
    full = 11 if fmt == "float16" else 8
    if stored >= smallest_normal:
        return full
    step = smallest_normal * 2.0 ** (1 - full)        # the subnormals' fixed spacing
    return int(np.floor(np.log2(stored / step))) + 1
