"""Finite-difference gradients, the independent check of every backward pass."""

from __future__ import annotations

import numbers

import numpy as np

from ._checks import as_float_array, check_same_shape


def numerical_gradient(f, x, upstream, h: float = 1e-5) -> np.ndarray:
    """Central differences of sum(upstream * f(x)) w.r.t. x; same shape and dtype as x."""
    if not callable(f):
        raise TypeError(f"f must be a function of one array, got {type(f).__name__}")
    if isinstance(h, bool) or not isinstance(h, numbers.Real) or not (np.isfinite(h) and h > 0):
        raise ValueError(f"h must be a finite number > 0, got {h!r}")
    x = as_float_array(x)
    upstream = as_float_array(upstream, "upstream").astype(x.dtype, copy=False)
    step = x.dtype.type(h)
    grad = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        x_plus, x_minus = x.copy(), x.copy()
        x_plus[idx] += step
        x_minus[idx] -= step
        f_plus = np.asarray(f(x_plus))
        f_minus = np.asarray(f(x_minus))
        check_same_shape(f_plus, upstream, "f(x)", "upstream")
        grad[idx] = np.sum(upstream * (f_plus - f_minus) / (2 * step))
    return grad
