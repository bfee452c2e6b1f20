"""A faster route for large inputs: LayerNorm / RMSNorm a block of rows at a time, bit-identical to norms.py.

Inputs of at least `BLOCK_MIN_SIZE` elements (C-contiguous float32/float64 ndarrays) are processed in
blocks of rows small enough to stay in the CPU's L2 cache while their few passes run, with scratch buffers
reused across blocks.  Each row is reduced by the same numpy call as the plain code in norms.py (a sum of
that row in the accumulator dtype, divided by D as np.mean does, rounded once), so every output is
bit-for-bit the plain path's (tests/test_norms_blocked.py checks it).  The finiteness check of the input
comes free from the row sums.  Anything unusual (invalid parameters, a non-finite input, an overflow, a
zero denominator) hands the call back to the plain function, which raises or warns as documented.

`rows(center=...)` is the decorator that routes a public function of norms.py through here.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ._checks import as_float_array, check_eps, check_param

BLOCK_MIN_SIZE = 1 << 20      # elements: smaller inputs take the plain path (its passes fit in cache anyway)
BLOCK_BYTES = 256 * 1024      # bytes of input per block of rows; the block, its output and one scratch fit in L2


def blockable(x) -> bool:
    """Whether x can take the blocked path as it is: a large C-contiguous native float32/float64 ndarray."""
    return (type(x) is np.ndarray and x.ndim >= 1 and x.size >= BLOCK_MIN_SIZE and x.flags.c_contiguous
            and x.dtype in (np.dtype(np.float32), np.dtype(np.float64)))


def _block_rows(d: int, itemsize: int) -> int:
    """Rows per block: about BLOCK_BYTES of input, at least one row."""
    return max(1, BLOCK_BYTES // (d * itemsize))


def run_blocked(x: np.ndarray, eps: float, *, center: bool, gamma=None, beta=None, sum_dtype=None):
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



def rows(*, center: bool):
    """Decorator: send large inputs of a norms.py function (LayerNorm if center else RMSNorm) through
    `run_blocked`, falling back to the decorated plain function whenever the blocked path declines."""

    def decorate(fn):
        sig = inspect.signature(fn)
        stats = fn.__name__.endswith("_stats")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            p = bound.arguments
            x = p["x"]
            if blockable(x):
                try:
                    eps = check_eps(p["eps"])
                    gamma = check_param(p.get("gamma"), "gamma", x.shape[-1], x.dtype)
                    beta = check_param(p.get("beta"), "beta", x.shape[-1], x.dtype)
                except (TypeError, ValueError):
                    return fn(*args, **kwargs)  # the plain function raises, in its own order
                done = run_blocked(x, eps, center=center, gamma=gamma, beta=beta, sum_dtype=p.get("sum_dtype"))
                if done is not None:
                    return done if stats else done[0]
            return fn(*args, **kwargs)

        return wrapper

    return decorate
