"""Forward passes: LayerNorm and RMSNorm over the last axis, BatchNorm over axis 0.

Large inputs (at least `BLOCK_MIN_SIZE` elements, C-contiguous float32/float64) are processed a block
of rows at a time, each block small enough to stay in the CPU's L2 cache while its few passes run, with
scratch buffers reused across blocks.  Each row is reduced by exactly the same numpy call as on the
plain path (a float64 sum of that row, divided by D), so every output is bit-for-bit the plain path's
(tests/test_norms_blocked.py checks it).  Anything unusual inside a block (a floating-point overflow, a
zero denominator, a non-finite input) makes the function redo the work on the plain path, which gives
the documented warnings and errors.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._checks import as_float_array, check_eps, check_param
from .stats import row_mean

BLOCK_MIN_SIZE = 1 << 20      # elements: smaller inputs take the plain path (its passes fit in cache anyway)
BLOCK_BYTES = 256 * 1024      # bytes of input per block of rows; the block, its output and one scratch fit in L2


def _warn_if_zero(denom_sq: np.ndarray, what: str) -> None:
    """Warn (RuntimeWarning) when some row has a zero denominator, i.e. the output is 0/0."""
    zero = int(np.count_nonzero(denom_sq == 0))
    if zero:
        warnings.warn(
            f"{what} is zero in {zero} row(s) and eps is 0: those outputs are 0/0 = NaN "
            "(a positive eps keeps the division finite)",
            RuntimeWarning,
            stacklevel=3,
        )


def _safe_rsqrt(denom_sq: np.ndarray) -> np.ndarray:
    """1/sqrt(denom_sq), giving inf (not a numpy warning) where denom_sq is 0."""
    with np.errstate(divide="ignore"):
        return 1 / np.sqrt(denom_sq)


# -- input handling shared by both paths --------------------------------------------------------------

def _blockable(x) -> bool:
    """Whether x can take the blocked path as it is: a large C-contiguous native float32/float64 ndarray."""
    return (type(x) is np.ndarray and x.ndim >= 1 and x.size >= BLOCK_MIN_SIZE and x.flags.c_contiguous
            and x.dtype in (np.dtype(np.float32), np.dtype(np.float64)))


def _take(x) -> tuple[np.ndarray, bool]:
    """(x as a float array, deferred). deferred=True: x is blockable and its finiteness is not yet checked
    (the blocked loop checks it for free from the row sums; `as_float_array` raises its usual error)."""
    if _blockable(x):
        return x, True
    return as_float_array(x), False


def _checked(x: np.ndarray, deferred: bool, check, *args):
    """check(*args), but if it raises and x's own check is deferred, x's error comes first (plain order)."""
    try:
        return check(*args)
    except (TypeError, ValueError):
        if deferred:
            as_float_array(x)
        raise


# -- the plain path: whole-array numpy expressions ----------------------------------------------------

def _layer_norm_plain(x: np.ndarray, eps: float):
    """(x_hat, std_inv, denom_sq) of a checked x."""
    dev = x - row_mean(x)
    var = row_mean(dev * dev)
    denom_sq = var + x.dtype.type(eps)
    std_inv = _safe_rsqrt(denom_sq)
    with np.errstate(invalid="ignore"):
        x_hat = dev * std_inv
    return x_hat, std_inv, denom_sq


def _rms_norm_plain(x: np.ndarray, eps: float, sum_dtype):
    """(x / rms, rms, denom_sq) of a checked x."""
    denom_sq = row_mean(x * x, sum_dtype=sum_dtype) + x.dtype.type(eps)
    rms = np.sqrt(denom_sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / rms, rms, denom_sq


# -- the blocked path ---------------------------------------------------------------------------------

def _block_rows(d: int, itemsize: int) -> int:
    """Rows per block: about BLOCK_BYTES of input, at least one row."""
    return max(1, BLOCK_BYTES // (d * itemsize))


def _blocked(x: np.ndarray, eps: float, *, center: bool, gamma=None, beta=None, sum_dtype=None):
    """(y, per-row stat) of LayerNorm (center=True; stat = std_inv) or RMSNorm (stat = rms), a block of rows
    at a time, with gamma and beta applied; None when the plain path must redo it (see the module docstring).

    Per row this performs the plain path's operations in the same order and precision: the row mean is
    np.add.reduce over the row in the accumulator dtype, divided by D as np.mean does, rounded once.
    """
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    n = x2.shape[0]
    rows = min(n, _block_rows(d, x.itemsize))
    dtype = x.dtype
    acc = np.dtype(np.float64 if sum_dtype is None else sum_dtype)
    count = np.intp(d)  # np.mean divides by an intp count
    eps_t = dtype.type(eps)
    y = np.empty_like(x2)
    stat = np.empty((n, 1), dtype)
    sums = np.empty((n, 1), acc)          # the first row sum of every row, kept for the finiteness check
    mean = np.empty((rows, 1), dtype)
    var_acc = np.empty((rows, 1), acc)
    scratch = np.empty((rows, d), dtype)
    try:
        # Raise on any floating-point trouble (then the plain path redoes everything and warns as documented).
        with np.errstate(divide="raise", over="raise", invalid="raise"):
            for start in range(0, n, rows):
                stop = min(start + rows, n)
                k = stop - start
                xb, yb, sb, st = x2[start:stop], y[start:stop], sums[start:stop], stat[start:stop]
                mb, vb, qb = mean[:k], var_acc[:k], scratch[:k]
                if center:
                    np.add.reduce(xb, axis=1, dtype=acc, keepdims=True, out=sb)
                    np.true_divide(sb, count, out=mb, casting="unsafe")  # divided in acc, rounded once
                    np.subtract(xb, mb, out=yb)            # dev = x - mean
                    np.multiply(yb, yb, out=qb)            # dev * dev
                    np.add.reduce(qb, axis=1, dtype=acc, keepdims=True, out=vb)
                    total = vb
                else:
                    np.multiply(xb, xb, out=qb)            # x * x
                    np.add.reduce(qb, axis=1, dtype=acc, keepdims=True, out=sb)
                    total = sb
                np.true_divide(total, count, out=mb, casting="unsafe")  # the row mean, rounded once to x's dtype
                np.add(mb, eps_t, out=mb)                  # denom_sq = var + eps (or mean square + eps)
                if center:
                    np.sqrt(mb, out=mb)
                    np.true_divide(1, mb, out=st)          # std_inv = 1 / sqrt(denom_sq)
                    np.multiply(yb, st, out=yb)            # x_hat = dev * std_inv
                else:
                    np.sqrt(mb, out=st)                    # rms
                    np.true_divide(xb, st, out=yb)         # x / rms
                if gamma is not None:
                    np.multiply(yb, gamma, out=yb)
                if beta is not None:
                    np.add(yb, beta, out=yb)
    except FloatingPointError:
        return None
    if not np.all(np.isfinite(sums)):  # a NaN/inf in x makes its row sum non-finite: raise x's usual error
        as_float_array(x)
        return None
    return y.reshape(x.shape), stat.reshape(x.shape[:-1] + (1,))


# -- public API ---------------------------------------------------------------------------------------

def layer_norm_stats(x, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Normalized x_hat (same shape as x) and std_inv (shape x.shape[:-1] + (1,)), over the last axis."""
    x, deferred = _take(x)
    eps = _checked(x, deferred, check_eps, eps)
    if deferred:
        done = _blocked(x, eps, center=True)
        if done is not None:
            return done
        x = as_float_array(x)
    x_hat, std_inv, denom_sq = _layer_norm_plain(x, eps)
    _warn_if_zero(denom_sq, "the variance")
    return x_hat, std_inv


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of x (..., D) over the last axis: gamma * (x - mean) / sqrt(var + eps) + beta."""
    x, deferred = _take(x)
    gamma = _checked(x, deferred, check_param, gamma, "gamma", x.shape[-1], x.dtype)
    beta = _checked(x, deferred, check_param, beta, "beta", x.shape[-1], x.dtype)
    eps = _checked(x, deferred, check_eps, eps)
    if deferred:
        done = _blocked(x, eps, center=True, gamma=gamma, beta=beta)
        if done is not None:
            return done[0]
        x = as_float_array(x)
    y, _, denom_sq = _layer_norm_plain(x, eps)
    _warn_if_zero(denom_sq, "the variance")
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def rms_norm_stats(x, eps: float = 1e-5, *, sum_dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """x / rms (same shape as x) and rms = sqrt(mean(x**2) + eps) (shape x.shape[:-1] + (1,)).

    `sum_dtype` is the accumulator of the mean of squares (default float64; see `row_mean`).
    """
    x, deferred = _take(x)
    eps = _checked(x, deferred, check_eps, eps)
    if deferred:
        done = _blocked(x, eps, center=False, sum_dtype=sum_dtype)
        if done is not None:
            return done
        x = as_float_array(x)
    y, rms, denom_sq = _rms_norm_plain(x, eps, sum_dtype)
    _warn_if_zero(denom_sq, "the mean square")
    return y, rms


def rms_norm(x, gamma=None, eps: float = 1e-5) -> np.ndarray:
    """RMSNorm of x (..., D) over the last axis: gamma * x / sqrt(mean(x**2) + eps)."""
    x, deferred = _take(x)
    gamma = _checked(x, deferred, check_param, gamma, "gamma", x.shape[-1], x.dtype)
    eps = _checked(x, deferred, check_eps, eps)
    if deferred:
        done = _blocked(x, eps, center=False, gamma=gamma)
        if done is not None:
            return done[0]
        x = as_float_array(x)
    y, _, denom_sq = _rms_norm_plain(x, eps, None)
    _warn_if_zero(denom_sq, "the mean square")
    return y if gamma is None else y * gamma


def batch_norm(x, eps: float = 1e-5) -> np.ndarray:
    """BatchNorm without learned parameters: normalize x (N, ...) over axis 0, per feature."""
    x = as_float_array(x)
    moved = np.moveaxis(x, 0, -1)
    return np.moveaxis(layer_norm(moved, eps=eps), -1, 0)
