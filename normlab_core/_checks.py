"""Input checks shared by the public API: one place that says what is allowed."""

from __future__ import annotations

import numbers

import numpy as np

_REJECTED_KINDS = {
    "U": "strings",
    "S": "bytes",
    "O": "Python objects",
    "c": "complex numbers",
    "V": "structured records",
    "M": "datetimes",
    "m": "timedeltas",
}


def as_float_array(x, name: str = "x", *, min_ndim: int = 1) -> np.ndarray:
    """Return x as a float32 or float64 array; raise on empty, non-finite or non-numeric input."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:  # ragged lists and the like
        raise TypeError(f"{name} must be a rectangular array of real numbers ({err})") from None
    kind = arr.dtype.kind
    if kind in _REJECTED_KINDS:
        raise TypeError(
            f"{name} holds {_REJECTED_KINDS[kind]} (dtype {arr.dtype}); "
            "allowed are real numbers: float32, float64, or integers/booleans (promoted to float64)"
        )
    if kind in "biu":
        arr = arr.astype(np.float64)
    elif kind == "f" and arr.dtype.itemsize < 4:
        arr = arr.astype(np.float32)
    elif kind == "f" and arr.dtype.itemsize > 8:
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got a scalar of shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one element per row")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); only finite numbers are allowed")
    return arr


def check_eps(eps) -> float:
    """Return eps as a float; it must be a finite real number >= 0."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number >= 0, got {type(eps).__name__} {eps!r}")
    eps = float(eps)
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    return eps


def check_param(p, name: str, dim: int, dtype) -> np.ndarray | None:
    """Return a (D,) parameter vector (gamma or beta) in the input's dtype, or None."""
    if p is None:
        return None
    arr = as_float_array(p, name)
    if arr.shape != (dim,):
        raise ValueError(f"{name} must have shape ({dim},) to match the last axis of x, got {arr.shape}")
    return arr.astype(dtype, copy=False)


def check_same_shape(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    """Raise ValueError unless a and b have the same shape."""
    if a.shape != b.shape:
        raise ValueError(f"{name_a} has shape {a.shape} but {name_b} has shape {b.shape}; they must match")


def check_positive_int(n, name: str, lo: int = 1) -> int:
    """Return n as an int >= lo."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be a whole number >= {lo}, got {type(n).__name__} {n!r}")
    if n < lo:
        raise ValueError(f"{name} must be >= {lo}, got {n}")
    return int(n)


def check_choice(value, name: str, allowed) -> str:
    """Raise ValueError unless value is one of allowed."""
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(map(repr, allowed))}")
    return value
