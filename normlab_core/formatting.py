"""How the book writes numbers, below every other layer (it imports nothing of normlab_core): `number` for controls,
readouts and notices, `fmt_vector` for vectors as the reference programs print them, and `ratio`, a quotient that
is NaN where there is none, so a notebook prints nan and says why."""

from __future__ import annotations

import math
import numbers

import numpy as np


def number(v, digits: int = 4) -> str:
    """A number as the book writes it (controls, readouts, notices): whole numbers as they are, others to `digits`
    significant digits with trailing zeros dropped and a short exponent beyond 1e-4 .. 10**digits (1e-5, 2.5e7)."""
    if isinstance(v, (bool, np.bool_, numbers.Integral)):
        return str(v if isinstance(v, (bool, np.bool_)) else int(v))
    v = float(v)
    if not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    text = f"{v:.{digits}g}" if v else "0"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def fmt_vector(v, spec: str = "+.4f") -> str:
    """A vector as the reference programs print it: fmt_vector(y, "+.4f") -> "[-0.2928, +0.8783, ...]"."""
    return "[" + ", ".join(format(float(a), spec) for a in v) + "]"


def ratio(a, b) -> float:
    """a / b as a float, and NaN where b is 0 (there is no ratio: a notebook prints nan and says why), without an
    exception or a warning. NaN in, NaN out."""
    a, b = float(a), float(b)
    return a / b if b != 0 else math.nan
