"""Slider, Choice and Preset: the controls of an explorable, shared by the live widget and the static page.

Both faces offer exactly the same positions: `control.positions()`. A slider with explicit `stops`
offers those values and nothing else, so what the reader picks is the exact value the figure is drawn at.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

MAX_DIGITS = 12  # significant digits a value label may grow to while telling stops apart


def _fmt(v, digits: int = 3) -> str:
    """A number as a label: ints as they are, floats to `digits` significant digits ('g' style)."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if v == 0:
        return "0"
    return f"{v:.{digits}g}"


def _tidy(v: float) -> float:
    """Drop float noise from a generated position (0.30000000000000004 -> 0.3)."""
    return float(f"{v:.12g}")


@dataclass
class Slider:
    """A numeric control from lo to hi; an int value makes an integer slider, scale="log" a log one.

    `stops` is the explicit, ascending list of values both faces offer (the default must be one of them).
    Without it, `steps` positions are spread over [lo, hi] (log-spaced on a log slider) with the default
    among them. A log slider cannot reach 0 by its scale; `zero=True` adds an explicit 0 as its first stop.
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
    stops: list | None = None

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
        if self.stops is not None:
            stops = list(self.stops)
            if len(stops) < 2:
                raise ValueError(f"stops needs at least two values, got {stops!r}")
            bad = [s for s in stops if not self.allows(s)]
            if bad:
                allowed = f"[{self.lo}, {self.hi}]" + (" or 0" if self.zero else "")
                kind = "whole numbers in " if self.integer else ""
                raise ValueError(f"stops {bad!r} are not {kind}{allowed}")
            if any(b <= a for a, b in zip(stops, stops[1:], strict=False)):
                raise ValueError(f"stops must be strictly ascending, got {stops!r}")
            if self.value not in stops:
                raise ValueError(f"the default value {self.value!r} must be one of the stops {stops!r}")
            self.stops = [int(s) for s in stops] if self.integer else stops
        self._digits = None

    @property
    def integer(self) -> bool:
        """True when the slider takes whole numbers (its default value is an int)."""
        return isinstance(self.value, numbers.Integral) and not isinstance(self.value, bool)

    def allows(self, v) -> bool:
        """Whether v is a value this slider can take (a whole number, on an integer slider)."""
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return False
        if not math.isfinite(v):
            return False
        if self.integer and not float(v).is_integer():
            return False
        return (self.zero and v == 0) or self.lo <= v <= self.hi

    def digits(self) -> int:
        """Significant digits the labels need (at least 3): every position shown exactly (1.024, not 1.02),
        or, for a position no short decimal holds, at least every position distinct and the default exact."""
        if self._digits is None:
            pos = self.positions()

            def ok(d, every):
                shown = [_fmt(v, d) for v in pos]
                exact = [float(t) == v for t, v in zip(shown, pos, strict=True)]
                return (len(set(shown)) == len(shown) and float(_fmt(self.value, d)) == self.value
                        and (all(exact) or not every))

            self._digits = next((d for d in range(3, MAX_DIGITS + 1) if ok(d, True)),
                                next((d for d in range(3, MAX_DIGITS + 1) if ok(d, False)), MAX_DIGITS))
        return self._digits

    def format(self, v) -> str:
        """The slider's value as its label shows it."""
        return self.fmt(v) if self.fmt else _fmt(v, self.digits())

    def positions(self, n: int | None = None) -> list:
        """The values both faces offer, ascending: `stops` when given; otherwise n (default `steps`) values
        from lo to hi (log-spaced on a log slider) with the default among them and 0 first if zero."""
        if self.stops is not None:
            return list(self.stops)
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
            vals = [_tidy(v) for v in vals]
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


@dataclass
class Preset:
    """A named state the prose discusses: `values` sets some controls (the rest keep their defaults);
    `notice` is one line saying what to look at in that state."""

    values: dict
    notice: str

    def __post_init__(self):
        if not isinstance(self.values, dict):
            raise TypeError(f"Preset values must be a dict of control name -> value, got {type(self.values).__name__}")
        if not isinstance(self.notice, str) or not self.notice.strip():
            raise ValueError("a Preset needs a one-line notice saying what to look at")
        if "\n" in self.notice.strip():
            raise ValueError(f"a Preset notice is one line, got {self.notice!r}")
        self.values = dict(self.values)
