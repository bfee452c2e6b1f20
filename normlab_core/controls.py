"""Slider and Choice: the controls of an explorable, shared by the live widget and the static page."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field


def _fmt(v) -> str:
    """Short human-readable number: ints as is, floats to 3 significant digits."""
    if isinstance(v, int):
        return str(v)
    if v == 0:
        return "0"
    return f"{v:.0e}" if (abs(v) < 1e-3 or abs(v) >= 1e4) else f"{v:.3g}"


@dataclass
class Slider:
    """A numeric control from lo to hi; an int value makes an integer slider, scale="log" a log one.

    A log slider cannot reach 0 by sliding; `zero=True` adds an explicit 0 as its leftmost stop.
    `steps` is how many positions the static (pre-rendered) book offers.
    """

    lo: float
    hi: float
    value: float
    step: float | None = None
    scale: str = "linear"
    label: str = ""
    zero: bool = False
    steps: int = 9
    fmt: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.scale not in ("linear", "log"):
            raise ValueError(f"scale must be 'linear' or 'log', got {self.scale!r}")
        if not self.lo < self.hi:
            raise ValueError(f"a slider needs lo < hi, got lo={self.lo} hi={self.hi}")
        if self.scale == "log" and self.lo <= 0:
            raise ValueError(f"a log slider needs lo > 0 (use zero=True to offer 0), got lo={self.lo}")
        if self.zero and self.scale != "log":
            raise ValueError("zero=True is for log sliders; a linear slider reaches 0 by its range")
        if not self.allows(self.value):
            raise ValueError(f"value {self.value} is outside [{self.lo}, {self.hi}]")
        if self.steps < 2:
            raise ValueError(f"steps must be >= 2, got {self.steps}")

    @property
    def integer(self) -> bool:
        """True when the slider takes whole numbers (its default value is an int)."""
        return isinstance(self.value, int) and not isinstance(self.value, bool)

    def allows(self, v) -> bool:
        """Whether v is a value this slider can take (a whole number, on an integer slider)."""
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return False
        if self.integer and not float(v).is_integer():
            return False
        return (self.zero and v == 0) or self.lo <= v <= self.hi

    def format(self, v) -> str:
        """The slider's value as its label shows it."""
        return self.fmt(v) if self.fmt else _fmt(v)

    def positions(self, n: int | None = None) -> list:
        """n values from lo to hi (log-spaced on a log slider), with the default among them and 0 first if zero."""
        n = n or self.steps
        if self.scale == "log":
            a, b = math.log10(self.lo), math.log10(self.hi)
            vals = [10 ** (a + (b - a) * i / (n - 1)) for i in range(n)]
            vals = [float(f"{v:.3g}") for v in vals]
        else:
            vals = [self.lo + (self.hi - self.lo) * i / (n - 1) for i in range(n)]
            if self.step:
                vals = [min(self.hi, max(self.lo, self.lo + round((v - self.lo) / self.step) * self.step))
                        for v in vals]
        if self.integer:
            vals = [int(round(v)) for v in vals]
        if self.value != 0 or not self.zero:
            nearest = min(range(len(vals)), key=lambda i: abs(vals[i] - self.value))
            vals[nearest] = self.value
        vals = sorted(set(vals))
        if self.zero:
            vals = [0.0 if not self.integer else 0] + [v for v in vals if v != 0]
        return vals


@dataclass
class Choice:
    """A control that picks one of a few options (a toggle is a Choice of two)."""

    options: list
    value: object
    label: str = ""
    labels: list | None = None

    def __post_init__(self):
        self.options = list(self.options)
        if self.labels is not None and len(self.labels) != len(self.options):
            raise ValueError("labels must name every option")
        if len(self.options) < 2:
            raise ValueError("a Choice needs at least two options")
        if self.value not in self.options:
            raise ValueError(f"value {self.value!r} is not one of the options {self.options!r}")

    def allows(self, v) -> bool:
        """Whether v is one of the options."""
        return v in self.options

    def format(self, v) -> str:
        """The option as the control shows it."""
        return str(v) if self.labels is None else str(self.labels[self.options.index(v)])

    def positions(self, n: int | None = None) -> list:
        """Every option, in order."""
        return list(self.options)
