"""RMSNorm: each row of x divided by its root mean square, then gamma (one scale per feature, no shift)."""

from __future__ import annotations

import numpy as np

from ..stats import row_mean

NAME = "RMSNorm"
PARAMS = ("gamma",)
SETTINGS = ("eps", "sum_dtype")
PER_TOKEN = True


def init(dim: int) -> dict:
    """Starting parameters: gamma ones (dim,)."""
    return {"gamma": np.ones(dim)}


def forward(x, gamma, eps=1e-5, sum_dtype=None):
    """y = gamma * x / sqrt(mean(x**2) + eps) over the last axis of x (..., D); gamma (D,)."""
    rms = np.sqrt(row_mean(x * x, sum_dtype=sum_dtype) + eps)
    x_hat = x / rms
    y = x_hat * gamma
    return y, (x_hat, rms, gamma)


def backward(dy, cache):
    """(dx (..., D), dgamma (D,)) from dy (..., D) and forward's cache."""
    x_hat, rms, gamma = cache
    g = dy * gamma
    dx = (g - x_hat * row_mean(g * x_hat)) / rms
    return dx, np.sum(dy * x_hat, axis=tuple(range(dy.ndim - 1)))


def jvp(x, dx, gamma, eps=1e-5, sum_dtype=None):
    """(y, dy): forward's y and its change along dx, both (..., D), with gamma held fixed."""
    y, (x_hat, rms, _) = forward(x, gamma, eps, sum_dtype)
    return y, gamma * ((dx - x_hat * row_mean(x_hat * dx, sum_dtype=sum_dtype)) / rms)   # only the RMS's change goes
