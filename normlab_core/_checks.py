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


def check_param(p, name: str, dim: int, dtype, func: str = "layer_norm") -> np.ndarray | None:
    """Return a (D,) parameter vector (gamma or beta) in the input's dtype, or None.

    A single number is refused with a message that says what was probably meant: eps passed by position
    (layer_norm(x, 1e-5) puts 1e-5 where gamma goes), or one scale for every feature.
    """
    if p is None:
        return None
    if isinstance(p, numbers.Real) or (isinstance(p, np.ndarray) and p.ndim == 0):
        value = float(p)
        raise ValueError(
            f"{func}: {name} must be an array of shape (D,) = ({dim},), one value per feature of x, "
            f"got the single number {value!r}. If you meant eps, pass it by name: {func}(x, eps={value!r}); "
            f"for the same {name} on every feature, pass np.full({dim}, {value!r})"
        )
    arr = as_float_array(p, name)
    if arr.shape != (dim,):
        raise ValueError(f"{func}: {name} must have shape (D,) = ({dim},) to match the last axis of x, "
                         f"got shape {arr.shape}")
    return arr.astype(dtype, copy=False)


def result_dtype(x) -> np.dtype:
    """The dtype returned for input x: float16 and float32 stay (float16 is computed in float32), others float64.

    Call it before checking x."""
    try:
        dtype = np.asarray(x).dtype
    except (ValueError, TypeError):       # ragged lists and the like: as_float_array raises the error
        return np.dtype(np.float64)
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return dtype
    return np.dtype(np.float64)


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


ACCUMULATORS = ("float16", "float32", "float64")


def check_sum_dtype(value, name: str = "sum_dtype"):
    """Return None (the default accumulator) or the float dtype to sum in: float16, float32 or float64."""
    if value is None:
        return None
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or dtype.name not in ACCUMULATORS:
        raise ValueError(f"{name} must be None (the default) or one of {', '.join(ACCUMULATORS)} "
                         f"(a name or a numpy dtype), got {value!r}")
    return dtype


def check_axis(axis, ndim: int, name: str = "axis") -> int:
    """Return axis as an int in [-ndim, ndim)."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {type(axis).__name__} {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} axis/axes: "
                         f"allowed are {-ndim} to {ndim - 1}")
    return int(axis)
