"""Backward passes of LayerNorm and RMSNorm (input and parameter gradients)."""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_param, check_same_shape
from .norms import layer_norm_stats, rms_norm_stats
from .stats import row_mean


def layer_norm_backward_saved(g, x_hat, std_inv) -> np.ndarray:
    """dL/dx (..., D) from g = dL/dx_hat, the saved x_hat (..., D) and std_inv (..., 1)."""
    mean_g = row_mean(g)
    mean_gx = row_mean(g * x_hat)
    return std_inv * (g - mean_g - x_hat * mean_gx)


def _upstream(dy, x, gamma):
    """Check dy against x and fold gamma into it: returns (x, dL/dx_hat, gamma)."""
    x = as_float_array(x)
    dy = as_float_array(dy, "dy").astype(x.dtype, copy=False)
    check_same_shape(dy, x, "dy", "x")
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype)
    return x, (dy if gamma is None else dy * gamma)


def layer_norm_backward(dy, x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """dL/dx (..., D) of y = layer_norm(x, gamma, beta, eps) given dy = dL/dy (..., D)."""
    x, g = _upstream(dy, x, gamma)
    x_hat, std_inv = layer_norm_stats(x, eps)
    return layer_norm_backward_saved(g, x_hat, std_inv)


def layer_norm_param_grads(dy, x, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """(dL/dgamma, dL/dbeta), each (D,), summed over every leading axis of dy and x (..., D)."""
    x, dy = _upstream(dy, x, None)
    x_hat, _ = layer_norm_stats(x, eps)
    lead = tuple(range(x.ndim - 1))
    return np.sum(dy * x_hat, axis=lead), np.sum(dy, axis=lead)


def rms_norm_backward(dy, x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """dL/dx (..., D) of y = rms_norm(x, gamma, eps) given dy = dL/dy (..., D)."""
    x, g = _upstream(dy, x, gamma)
    x_hat, rms = rms_norm_stats(x, eps)
    mean_gx = row_mean(g * x_hat)
    return (g - x_hat * mean_gx) / rms


def rms_norm_param_grad(dy, x, eps: float = 1e-5) -> np.ndarray:
    """dL/dgamma (D,) of rms_norm, summed over every leading axis of dy and x (..., D)."""
    x, dy = _upstream(dy, x, None)
    x_hat, _ = rms_norm_stats(x, eps)
    return np.sum(dy * x_hat, axis=tuple(range(x.ndim - 1)))
