"""Low-precision storage: round values to float16 or bfloat16 and count the levels those formats offer.

float16 comes from numpy.  bfloat16 (1 sign bit, 8 exponent bits, 7 mantissa bits) is emulated without
a new dependency: a bfloat16 number is the top half of a float32 bit pattern, so rounding a float32 to
bfloat16 is rounding its 32-bit pattern to a multiple of 2**16, to nearest with ties to even.

Every function returns float64 arrays that hold exactly the rounded values, so the arithmetic that
follows (means, errors) is not itself rounded again.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._checks import as_float_array, check_choice

FORMATS = ("float64", "float32", "float16", "bfloat16")
SIXTEEN_BIT = ("float16", "bfloat16")


def bfloat16_round(x) -> np.ndarray:
    """x rounded to the nearest bfloat16 (ties to even), returned as float64.

    x is first rounded to float32 (exact for float32 input; for float64 input this is a double
    rounding, which can differ from a direct float64 -> bfloat16 rounding by one bfloat16 step when x
    lies within half a float32 step of a bfloat16 tie).  Values beyond the largest bfloat16 (about
    3.39e38) round to +-inf, as hardware conversions do.
    """
    with np.errstate(over="ignore"):
        x32 = np.asarray(as_float_array(x, min_ndim=0), dtype=np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    keep_lsb = (bits >> 16) & 1           # lowest bit that survives: decides ties (to even)
    rounded = ((bits + 0x7FFF + keep_lsb) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return out.astype(np.float64)


def round_to(x, fmt: str) -> np.ndarray:
    """x stored in format fmt ("float64", "float32", "float16" or "bfloat16"), read back as float64.

    Overflow is not hidden: a value beyond the format's range becomes +-inf (numpy's float16
    conversion and the bfloat16 rounding both do this).
    """
    check_choice(fmt, "format", FORMATS)
    x = as_float_array(x, min_ndim=0)
    if fmt == "bfloat16":
        return bfloat16_round(x)
    with np.errstate(over="ignore"):
        return x.astype(fmt).astype(np.float64)


@lru_cache(maxsize=4)
def grid(fmt: str) -> np.ndarray:
    """Every finite value of a 16-bit format, sorted ascending, -0 and +0 merged (read-only float64)."""
    check_choice(fmt, "format", SIXTEEN_BIT)
    patterns = np.arange(2**16, dtype=np.uint32)
    if fmt == "float16":
        values = patterns.astype(np.uint16).view(np.float16)
    else:
        values = (patterns << 16).view(np.float32)
    values = values[np.isfinite(values)].astype(np.float64)
    values = np.unique(values)  # sorts and merges -0 with +0
    values.setflags(write=False)
    return values


def levels_between(lo, hi, fmt: str) -> int:
    """How many distinct values of the 16-bit format fmt lie in the closed interval [lo, hi]."""
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise TypeError(f"levels_between needs finite real numbers for lo and hi, got {name}={v!r}")
    lo, hi = float(lo), float(hi)
    if lo > hi:
        raise ValueError(f"levels_between needs lo <= hi, got lo={lo} hi={hi}")
    g = grid(fmt)
    return int(np.searchsorted(g, hi, side="right") - np.searchsorted(g, lo, side="left"))


def spacing(x, fmt: str) -> np.ndarray:
    """Gap between round_to(|x|, fmt) and the next larger value of fmt (one unit in the last place), float64."""
    check_choice(fmt, "format", FORMATS)
    r = round_to(np.abs(as_float_array(x, min_ndim=0)), fmt)
    if fmt == "bfloat16":
        # a bfloat16 keeps the float32 exponent and drops 16 mantissa bits: its step is 2**16 float32 steps
        return np.spacing(r.astype(np.float32)).astype(np.float64) * 2.0**16
    with np.errstate(over="ignore"):
        return np.spacing(r.astype(fmt)).astype(np.float64)
