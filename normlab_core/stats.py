"""Row statistics: mean and biased variance along one axis, and a vector's length."""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_axis


def row_mean(v: np.ndarray, axis: int = -1, sum_dtype=None) -> np.ndarray:
    """Mean of v along `axis` (kept as size 1), summed in `sum_dtype` (default float64), in v's dtype.

    float32 input keeps float32 elementwise arithmetic, but by default its sums run in float64 and
    are rounded once, as the reference programs do with their C `double` accumulators.
    """
    acc = np.float64 if sum_dtype is None else sum_dtype
    return (np.sum(v, axis=axis, keepdims=True, dtype=acc) / v.shape[axis]).astype(v.dtype, copy=False)


def mean_var(x, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance (divide by n) of x along `axis`; shapes drop that axis.

    Statistics come back in the computing dtype: float32 for float32 and float16 input (float16 could not hold
    the variance of [0, 1000]), float64 otherwise.
    """
    x = as_float_array(x)
    axis = check_axis(axis, x.ndim)
    mean = row_mean(x, axis)
    dev = x - mean
    var = row_mean(dev * dev, axis)
    return np.squeeze(mean, axis=axis), np.squeeze(var, axis=axis)


def length(v, axis: int = -1) -> np.ndarray:
    """Euclidean length sqrt(sum(v * v)) along `axis` (dropped), in v's dtype.

    The sum is numpy's own, in a fixed order, so float32 lengths come out the same on every CPU; np.linalg.norm
    hands the sum to the BLAS library, whose kernels (and so the last digits) differ between machines.
    """
    v = np.asarray(v)
    if v.dtype.kind not in "biuf":
        raise TypeError(f"v must hold real numbers, got dtype {v.dtype}")
    v = v.astype(np.result_type(v.dtype, np.float32), copy=False)   # integers -> float64, float16 -> float32
    return np.sqrt(np.sum(v * v, axis=check_axis(axis, max(v.ndim, 1)) if v.ndim else None))
