"""BatchNorm: each feature (column) of x normalized over the examples of the batch (axis 0), then gamma and beta.

A token's output depends on the other examples of its batch (section 23.2), so it is no per-token norm: the
transformer and the residual stacks do not take it.
"""

from __future__ import annotations

import numpy as np

from ..stats import row_mean

NAME = "BatchNorm"
PARAMS = ("gamma", "beta")
SETTINGS = ("eps", "sum_dtype")
PER_TOKEN = False


def init(dim: int) -> dict:
    """Starting parameters: gamma ones (dim,), beta zeros (dim,)."""
    return {"gamma": np.ones(dim), "beta": np.zeros(dim)}


def forward(x, gamma, beta, eps=1e-5, sum_dtype=None):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta per feature of x (N, D), over axis 0; gamma, beta (D,)."""
    mean = row_mean(x, axis=0, sum_dtype=sum_dtype)
    xc = x - mean
    var = row_mean(xc * xc, axis=0, sum_dtype=sum_dtype)
    rstd = 1 / np.sqrt(var + eps)
    x_hat = xc * rstd
    y = x_hat * gamma + beta
    return y, (x_hat, rstd, gamma)


def backward(dy, cache):
    """(dx (N, D), dgamma (D,), dbeta (D,)) from dy (N, D) and forward's cache."""
    x_hat, rstd, gamma = cache
    g = dy * gamma
    dx = rstd * (g - row_mean(g, axis=0) - x_hat * row_mean(g * x_hat, axis=0))
    return dx, np.sum(dy * x_hat, axis=0), np.sum(dy, axis=0)


def jvp(x, dx, gamma, beta, eps=1e-5, sum_dtype=None):
    """(y, dy): forward's y and its change along dx, both (N, D), with gamma and beta held fixed."""
    y, (x_hat, rstd, _) = forward(x, gamma, beta, eps, sum_dtype)
    c = dx - row_mean(dx, axis=0, sum_dtype=sum_dtype)
    return y, gamma * (rstd * (c - x_hat * row_mean(x_hat * c, axis=0, sum_dtype=sum_dtype)))
