"""Counting arithmetic: LayerNorm and RMSNorm written as plain loops over a number type that tallies
every operation done on it (sections 23.5 and 23.9).

Convention: one operation is one scalar addition, subtraction, multiplication, division or square
root; a pass is one loop over the D elements. LayerNorm keeps its centred values from the variance
pass (so x - mean is computed once) and both norms apply their learned parameters.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ._checks import check_positive_int


class Counted:
    """A float that adds one to a shared tally for every arithmetic operation it takes part in."""

    tally: Counter = Counter()

    def __init__(self, value):
        self.value = float(value)

    @staticmethod
    def _plain(other) -> float:
        return other.value if isinstance(other, Counted) else float(other)

    @classmethod
    def _record(cls, kind: str, result: float) -> Counted:
        cls.tally[kind] += 1
        return cls(result)

    def __add__(self, other):
        return self._record("add/sub", self.value + self._plain(other))

    def __radd__(self, other):
        return self._record("add/sub", self._plain(other) + self.value)

    def __sub__(self, other):
        return self._record("add/sub", self.value - self._plain(other))

    def __rsub__(self, other):
        return self._record("add/sub", self._plain(other) - self.value)

    def __mul__(self, other):
        return self._record("mul", self.value * self._plain(other))

    def __rmul__(self, other):
        return self._record("mul", self._plain(other) * self.value)

    def __truediv__(self, other):
        return self._record("div", self.value / self._plain(other))

    def __rtruediv__(self, other):
        return self._record("div", self._plain(other) / self.value)


def counted_sqrt(c: Counted) -> Counted:
    """Square root of a Counted value, tallied as one 'sqrt'."""
    return Counted._record("sqrt", math.sqrt(c.value))


def layer_norm_loops(x: list, gamma: list, beta: list, eps: float) -> tuple[list, int]:
    """LayerNorm of one vector x (length D) as explicit loops; returns (output list, passes over x)."""
    n = len(x)
    total = 0.0
    for v in x:                                        # pass 1: sum for the mean
        total = total + v
    mean = total / n
    centred, sum_sq = [], 0.0
    for v in x:                                        # pass 2: centred values and their squares
        c = v - mean
        centred.append(c)
        sum_sq = sum_sq + c * c
    inv_std = 1.0 / counted_sqrt(sum_sq / n + eps)
    out = [g * (c * inv_std) + b for c, g, b in zip(centred, gamma, beta, strict=True)]   # pass 3: output
    return out, 3


def rms_norm_loops(x: list, gamma: list, eps: float) -> tuple[list, int]:
    """RMSNorm of one vector x (length D) as explicit loops; returns (output list, passes over x)."""
    n = len(x)
    sum_sq = 0.0
    for v in x:                                        # pass 1: sum of squares
        sum_sq = sum_sq + v * v
    inv_rms = 1.0 / counted_sqrt(sum_sq / n + eps)
    out = [g * (v * inv_rms) for v, g in zip(x, gamma, strict=True)]                       # pass 2: output
    return out, 2


def count_ops(norm: str, d: int, eps: float = 1e-5, seed: int = 1) -> dict:
    """Tally of one forward pass of norm ("layer_norm" or "rms_norm") on a random vector of length d.

    Returns {"ops": {kind: count}, "total": int, "passes": int, "output": ndarray (d,), "x": ndarray (d,)}.
    """
    check_positive_int(d, "d")
    x = np.random.default_rng(seed).normal(size=d)
    xs = [Counted(v) for v in x]
    Counted.tally.clear()
    if norm == "layer_norm":
        out, passes = layer_norm_loops(xs, [1.0] * d, [0.0] * d, eps)
    elif norm == "rms_norm":
        out, passes = rms_norm_loops(xs, [1.0] * d, eps)
    else:
        raise ValueError(f"unknown norm {norm!r}; allowed: 'layer_norm', 'rms_norm'")
    ops = dict(sorted(Counted.tally.items()))
    return {"ops": ops, "total": sum(ops.values()), "passes": passes,
            "output": np.array([o.value for o in out]), "x": x}
