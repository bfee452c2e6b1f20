"""Forward passes: LayerNorm and RMSNorm over the last axis, BatchNorm over axis 0.

The functions below are the reference code the book shows and the tests check against the reference programs.
Inputs of a million elements or more are routed (by the `@blocked.rows` decorator) through a
cache-blocked version in blocked.py that gives bit-for-bit the same results, faster.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import blocked
from ._checks import as_float_array, check_eps, check_param
from .stats import row_mean


def _warn_if_zero(denom_sq: np.ndarray, what: str) -> None:
    """Warn (RuntimeWarning) when some row has a zero denominator, i.e. the output is 0/0."""
    zero = int(np.count_nonzero(denom_sq == 0))
    if zero:
        warnings.warn(
            f"{what} is zero in {zero} row(s) and eps is 0: those outputs are 0/0 = NaN "
            "(a positive eps keeps the division finite)",
            RuntimeWarning,
            stacklevel=4,
        )


def _safe_rsqrt(denom_sq: np.ndarray) -> np.ndarray:
    """1/sqrt(denom_sq), giving inf (not a numpy warning) where denom_sq is 0."""
    with np.errstate(divide="ignore"):
        return 1 / np.sqrt(denom_sq)


@blocked.rows(center=True)
def layer_norm_stats(x, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Normalized x_hat (same shape as x) and std_inv (shape x.shape[:-1] + (1,)), over the last axis."""
    x = as_float_array(x)
    eps = check_eps(eps)
    dev = x - row_mean(x)
    var = row_mean(dev * dev)
    denom_sq = var + x.dtype.type(eps)
    _warn_if_zero(denom_sq, "the variance")
    std_inv = _safe_rsqrt(denom_sq)
    with np.errstate(invalid="ignore"):
        x_hat = dev * std_inv
    return x_hat, std_inv


@blocked.rows(center=True)
def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of x (..., D) over the last axis: gamma * (x - mean) / sqrt(var + eps) + beta."""
    x = as_float_array(x)
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype)
    beta = check_param(beta, "beta", x.shape[-1], x.dtype)
    y, _ = layer_norm_stats.__wrapped__(x, eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


@blocked.rows(center=False)
def rms_norm_stats(x, eps: float = 1e-5, *, sum_dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """x / rms (same shape as x) and rms = sqrt(mean(x**2) + eps) (shape x.shape[:-1] + (1,)).

    `sum_dtype` is the accumulator of the mean of squares (default float64; see `row_mean`).
    """
    x = as_float_array(x)
    eps = check_eps(eps)
    denom_sq = row_mean(x * x, sum_dtype=sum_dtype) + x.dtype.type(eps)
    _warn_if_zero(denom_sq, "the mean square")
    rms = np.sqrt(denom_sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / rms, rms


@blocked.rows(center=False)
def rms_norm(x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """RMSNorm of x (..., D) over the last axis: gamma * x / sqrt(mean(x**2) + eps)."""
    x = as_float_array(x)
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype)
    y, _ = rms_norm_stats.__wrapped__(x, eps)
    return y if gamma is None else y * gamma


def batch_norm(x, eps: float = 1e-5) -> np.ndarray:
    """BatchNorm without learned parameters: normalize x (N, ...) over axis 0, per feature."""
    x = as_float_array(x)
    moved = np.moveaxis(x, 0, -1)
    return np.moveaxis(layer_norm(moved, eps=eps), -1, 0)
