"""DyT (Dynamic Tanh, Zhu et al. 2025): gamma * tanh(alpha * x) + beta, elementwise, with a learned alpha.

It computes no statistic of the row, so it has no eps: alpha takes eps's place in forward's arguments.
"""

from __future__ import annotations

import numpy as np

NAME = "DyT"
PARAMS = ("gamma", "beta", "alpha")
SETTINGS = ()
PER_TOKEN = True
ALPHA = 0.5       # the starting alpha (Zhu et al. 2025 use 0.5 outside their largest language models)
CONFIG = {"alpha": "dyt_alpha"}   # the transformer's Config field that sets a starting parameter


def init(dim: int) -> dict:
    """Starting parameters: gamma ones (dim,), beta zeros (dim,), alpha (1,) = ALPHA."""
    return {"gamma": np.ones(dim), "beta": np.zeros(dim), "alpha": np.full(1, ALPHA)}


def forward(x, gamma, beta, alpha):
    """y = gamma * tanh(alpha * x) + beta for x (..., D); gamma, beta (D,), alpha (1,) or a number."""
    t = np.tanh(alpha * x)
    y = t * gamma + beta
    return y, (x, t, gamma, alpha)


def backward(dy, cache):
    """(dx (..., D), dgamma (D,), dbeta (D,), dalpha (alpha's shape)) from dy (..., D) and forward's cache."""
    x, t, gamma, alpha = cache
    lead = tuple(range(dy.ndim - 1))
    du = dy * gamma * (1 - t * t)            # d tanh(u) / du = 1 - tanh(u)^2, with u = alpha * x
    dalpha = np.sum(du * x).reshape(np.shape(alpha))
    return du * alpha, np.sum(dy * t, axis=lead), np.sum(dy, axis=lead), dalpha


def jvp(x, dx, gamma, beta, alpha):
    """(y, dy): forward's y and its change along dx, both (..., D), with gamma, beta and alpha held fixed."""
    y, (_, t, _, _) = forward(x, gamma, beta, alpha)
    return y, gamma * (1 - t * t) * alpha * dx
