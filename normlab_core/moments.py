"""Variance two ways, and spread in units of the standard deviation (section 23.3).

`stats.mean_var` is the two-pass method: find the mean first, then average the squared deviations.
`one_pass_var` is the shortcut E[x^2] - E[x]^2, which needs only one sweep over the data but subtracts
two large, nearly equal numbers when the mean is large compared with the spread; in float32 that
cancellation throws away most of the digits. The sums run left to right in `acc_dtype` so the
rounding is the same on every machine.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_sum_dtype
from .stats import mean_var


def one_pass_var(x, acc_dtype=None) -> np.ndarray:
    """Biased variance of x over the last axis as mean(x*x) - mean(x)**2, every step in `acc_dtype`.

    `acc_dtype` defaults to x's dtype (float32 input -> float32 squares, sums and subtraction).
    The result can be wrong in most of its digits, or even negative, when |mean| >> std.
    """
    x = as_float_array(x)
    acc = check_sum_dtype(acc_dtype, "acc_dtype") or x.dtype
    xa = x.astype(acc)
    n = acc.type(x.shape[-1])
    sum_x = np.cumsum(xa, axis=-1, dtype=acc)[..., -1]         # cumsum adds strictly left to right
    sum_sq = np.cumsum(xa * xa, axis=-1, dtype=acc)[..., -1]
    mean = sum_x / n
    return sum_sq / n - mean * mean


def span_in_std(x) -> np.ndarray:
    """(max - min) / std over the last axis: how many standard deviations the values cover."""
    x = as_float_array(x)
    _, var = mean_var(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.max(x, axis=-1) - np.min(x, axis=-1)) / np.sqrt(var)
