"""LayerNorm: each row of x centred, scaled to unit variance, then gamma and beta (one pair per feature)."""

from __future__ import annotations

import numpy as np

from ..stats import row_mean

NAME = "LayerNorm"
PARAMS = ("gamma", "beta")           # learned, in the order forward takes them after x
SETTINGS = ("eps", "sum_dtype")      # fixed settings, passed by name
PER_TOKEN = True                     # each row (token) is normalized on its own


def init(dim: int) -> dict:
    """Starting parameters: gamma ones (dim,), beta zeros (dim,)."""
    return {"gamma": np.ones(dim), "beta": np.zeros(dim)}


def forward(x, gamma, beta, eps=1e-5, sum_dtype=None):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta over the last axis of x (..., D); gamma, beta (D,)."""
    mean = row_mean(x, sum_dtype=sum_dtype)
    xc = x - mean
    var = row_mean(xc * xc, sum_dtype=sum_dtype)
    rstd = 1 / np.sqrt(var + eps)
    x_hat = xc * rstd
    y = x_hat * gamma + beta
    return y, (x_hat, rstd, gamma)


def backward(dy, cache):
    """(dx (..., D), dgamma (D,), dbeta (D,)) from dy (..., D) and forward's cache."""
    x_hat, rstd, gamma = cache
    g = dy * gamma
    dx = rstd * (g - row_mean(g) - x_hat * row_mean(g * x_hat))
    lead = tuple(range(dy.ndim - 1))
    return dx, np.sum(dy * x_hat, axis=lead), np.sum(dy, axis=lead)


def jvp(x, dx, gamma, beta, eps=1e-5, sum_dtype=None):
    """(y, dy): forward's y and its change along dx, both (..., D), with gamma and beta held fixed."""
    y, (x_hat, rstd, _) = forward(x, gamma, beta, eps, sum_dtype)
    c = dx - row_mean(dx, sum_dtype=sum_dtype)         # the mean's share of the change is removed ...
    return y, gamma * (rstd * (c - x_hat * row_mean(x_hat * c, sum_dtype=sum_dtype)))   # ... and the spread's
