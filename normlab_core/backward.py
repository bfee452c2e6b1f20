"""Backward passes of LayerNorm and RMSNorm (input and parameter gradients).

Gradients come back in the dtype of x (float16 input is computed in float32 and rounded back at the end).
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_param, check_positive_int, check_same_shape, result_dtype
from .norms import layer_norm_stats, rms_norm_stats
from .stats import row_mean


def layer_norm_backward_saved(g, x_hat, std_inv) -> np.ndarray:
    """dL/dx (..., D) from g = dL/dx_hat, the saved x_hat (..., D) and std_inv (..., 1)."""
    out_dtype = result_dtype(x_hat)
    g, x_hat, std_inv = _check_saved(g, x_hat, std_inv)
    return _input_grad(g, x_hat, std_inv).astype(out_dtype, copy=False)


def _input_grad(g, x_hat, std_inv):
    """The LayerNorm input gradient, row by row: std_inv * (g - mean(g) - x_hat * mean(g * x_hat))."""
    mean_g = row_mean(g)
    mean_gx = row_mean(g * x_hat)
    return std_inv * (g - mean_g - x_hat * mean_gx)


def _check_saved(g, x_hat, std_inv):
    """Check the saved tensors as the forward functions check x: finite numbers, x_hat (..., D), g like x_hat,
    std_inv (..., 1) as layer_norm_stats returns it; all in x_hat's computing dtype."""
    x_hat = as_float_array(x_hat, "x_hat")
    g = as_float_array(g, "g").astype(x_hat.dtype, copy=False)
    check_same_shape(g, x_hat, "g", "x_hat")
    std_inv = as_float_array(std_inv, "std_inv", min_ndim=0).astype(x_hat.dtype, copy=False)
    want = x_hat.shape[:-1] + (1,)
    if std_inv.shape != want:
        raise ValueError(f"std_inv must have shape {want} (x_hat's shape with its last axis 1, as "
                         f"layer_norm_stats returns it), got {std_inv.shape}")
    if np.any(std_inv < 0):
        raise ValueError("std_inv holds negative values; it is 1 / sqrt(var + eps), which is positive")
    return g, x_hat, std_inv


def _upstream(dy, x, gamma, func):
    """Check dy against x and fold gamma into it: returns (x, dL/dx_hat)."""
    x = as_float_array(x)
    dy = as_float_array(dy, "dy").astype(x.dtype, copy=False)
    check_same_shape(dy, x, "dy", "x")
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype, func)
    return x, (dy if gamma is None else dy * gamma)


def layer_norm_backward(dy, x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """dL/dx (..., D) of y = layer_norm(x, gamma, beta, eps) given dy = dL/dy (..., D)."""
    out_dtype = result_dtype(x)
    x, g = _upstream(dy, x, gamma, "layer_norm_backward")
    x_hat, std_inv = layer_norm_stats(x, eps)
    return _input_grad(g, x_hat, std_inv).astype(out_dtype, copy=False)


def layer_norm_param_grads(dy, x, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """(dL/dgamma, dL/dbeta), each (D,), summed over every leading axis of dy and x (..., D)."""
    out_dtype = result_dtype(x)
    x, dy = _upstream(dy, x, None, "layer_norm_param_grads")
    x_hat, _ = layer_norm_stats(x, eps)
    lead = tuple(range(x.ndim - 1))
    return np.sum(dy * x_hat, axis=lead).astype(out_dtype), np.sum(dy, axis=lead).astype(out_dtype)


def layer_norm_forward(x, gamma=None, beta=None, eps: float = 1e-5) -> tuple[np.ndarray, tuple]:
    """(y, cache) of layer_norm on x (..., D): cache = (x, mean, rstd), mean and rstd (..., 1), 2 numbers a row."""
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype, "layer_norm_forward")
    beta = check_param(beta, "beta", x.shape[-1], x.dtype, "layer_norm_forward")
    x_hat, rstd = layer_norm_stats(x, eps)
    y = x_hat if gamma is None else x_hat * gamma
    y = y if beta is None else y + beta
    return y.astype(out_dtype, copy=False), (x.astype(out_dtype, copy=False), row_mean(x), rstd)


def layer_norm_backward_from_cache(dy, cache, gamma=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx (..., D), dgamma (D,), dbeta (D,)) from dy (..., D) and layer_norm_forward's cache; x_hat is recomputed."""
    x, mean, rstd = _check_cache(cache)
    out_dtype = result_dtype(cache[0])
    dy = as_float_array(dy, "dy").astype(x.dtype, copy=False)
    check_same_shape(dy, x, "dy", "cache x")
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype, "layer_norm_backward_from_cache")
    g = dy if gamma is None else dy * gamma
    x_hat = (x - mean) * rstd                          # D numbers a row, rebuilt from x and the 2 cached ones
    lead = tuple(range(x.ndim - 1))
    dx, dgamma, dbeta = _input_grad(g, x_hat, rstd), np.sum(dy * x_hat, axis=lead), np.sum(dy, axis=lead)
    return tuple(a.astype(out_dtype, copy=False) for a in (dx, dgamma, dbeta))


def _check_cache(cache):
    """Check layer_norm_forward's cache: a tuple (x (..., D), mean (..., 1), rstd (..., 1)), rstd not negative."""
    if not isinstance(cache, tuple) or len(cache) != 3:
        raise TypeError(f"cache must be the tuple (x, mean, rstd) that layer_norm_forward returns, got "
                        f"{type(cache).__name__}" + (f" of length {len(cache)}" if isinstance(cache, tuple) else ""))
    x = as_float_array(cache[0], "cache x")
    mean, rstd = (_row_stat(a, name, x) for a, name in ((cache[1], "cache mean"), (cache[2], "cache rstd")))
    if np.any(rstd < 0):
        raise ValueError("cache rstd holds negative values; it is 1 / sqrt(var + eps), which is positive")
    return x, mean, rstd


def _row_stat(a, name, x):
    """Check one per-row statistic: an array of shape x.shape[:-1] + (1,), returned in x's dtype."""
    a = as_float_array(a, name, min_ndim=0).astype(x.dtype, copy=False)
    want = x.shape[:-1] + (1,)
    if a.shape != want:
        raise ValueError(f"{name} must have shape {want} (x's shape with its last axis 1), got {a.shape}")
    return a


def layer_norm_cache_bytes(rows: int, width: int, itemsize: int = 4) -> dict:
    """Bytes a LayerNorm over rows x width keeps for its backward pass besides x, for each choice of what to keep."""
    rows, width = check_positive_int(rows, "rows"), check_positive_int(width, "width")
    itemsize = check_positive_int(itemsize, "itemsize")
    per_row = {"x_hat and rstd": width + 1, "mean and rstd": 2, "nothing": 0}
    return {what: n * rows * itemsize for what, n in per_row.items()}


def rms_norm_backward(dy, x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """dL/dx (..., D) of y = rms_norm(x, gamma, eps) given dy = dL/dy (..., D)."""
    out_dtype = result_dtype(x)
    x, g = _upstream(dy, x, gamma, "rms_norm_backward")
    x_hat, rms = rms_norm_stats(x, eps)
    mean_gx = row_mean(g * x_hat)
    return ((g - x_hat * mean_gx) / rms).astype(out_dtype, copy=False)


def rms_norm_param_grad(dy, x, eps: float = 1e-5) -> np.ndarray:
    """dL/dgamma (D,) of rms_norm, summed over every leading axis of dy and x (..., D)."""
    out_dtype = result_dtype(x)
    x, dy = _upstream(dy, x, None, "rms_norm_param_grad")
    x_hat, _ = rms_norm_stats(x, eps)
    return np.sum(dy * x_hat, axis=tuple(range(x.ndim - 1))).astype(out_dtype)
