"""What an explorable is driven by: controls (Slider, Choice) over exact stops, presets and the inputs a learner
may pass."""

from __future__ import annotations

import math
import numbers
from collections import namedtuple
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ..formatting import number


@dataclass
class Slider:
    """A control over explicit, ascending `stops` (whole numbers make an integer slider); `value` is one of them.

    `free=(lo, hi)` lets the live face also take any value from lo to hi typed into its value box (whole numbers
    on an integer slider); the static book offers the stops only."""

    stops: list
    value: float
    label: str = ""
    free: tuple | None = None

    def __post_init__(self):
        self.stops = list(self.stops)
        if len(self.stops) < 2 or not all(map(_real, self.stops)) or any(b <= a for a, b in pairwise(self.stops)):
            raise ValueError(f"stops must be at least two finite, strictly ascending numbers, got {self.stops!r}")
        self.integer = all(isinstance(s, numbers.Integral) for s in self.stops)
        self.stops = [int(s) if self.integer else float(s) for s in self.stops]
        if self.value not in self.stops:
            raise ValueError(f"the default value {self.value!r} must be one of the stops {self.stops!r}")
        self.value = self.stops[self.stops.index(self.value)]
        if self.free is not None and not (len(self.free) == 2 and all(map(_real, self.free))
                                          and self.free[0] <= self.stops[0] and self.stops[-1] <= self.free[1]):
            raise ValueError(f"free must be (lo, hi) around every stop, got {self.free!r}")
        # the fewest digits (3 to 12) that write every stop exactly, and so tell them apart
        self.digits = next((d for d in range(3, 13) if all(float(number(s, d)) == s for s in self.stops)), 12)
        if len(set(map(self.format, self.stops))) < len(self.stops):
            raise ValueError(f"stops must differ within 12 significant digits, got {self.stops!r}")

    def positions(self) -> list:
        return list(self.stops)

    def take(self, v):
        """v as this control holds it (the stop itself, or a free value), or None if it is not allowed."""
        if not _real(v):
            return None
        if v in self.stops:
            return self.stops[self.stops.index(v)]
        if self.free is None or not self.free[0] <= v <= self.free[1] or (self.integer and v != int(v)):
            return None
        return int(v) if self.integer else float(v)

    def allowed(self) -> str:
        text = "one of the stops " + ", ".join(map(self.format, self.stops))
        if self.free:
            kind = "whole number" if self.integer else "number"
            text += f" (in JupyterLab: any {kind} from {number(self.free[0])} to {number(self.free[1])})"
        return text

    def format(self, v) -> str:
        return number(v, self.digits if v in self.stops else max(self.digits, 6))


@dataclass
class Choice:
    """A control that picks one of a few `options`, shown as `labels` (default: the options as text)."""

    options: list
    value: object
    label: str = ""
    labels: list | None = None
    free = None

    def __post_init__(self):
        self.options = list(self.options)
        if len(self.options) < 2 or (self.labels is not None and len(self.labels) != len(self.options)):
            raise ValueError("a Choice needs at least two options, and a label for each if labels are given")
        if self.value not in self.options:
            raise ValueError(f"value {self.value!r} is not one of the options {self.options!r}")

    def positions(self) -> list:
        return list(self.options)

    def take(self, v):
        return next((o for o in self.options if o == v and isinstance(o, bool) == isinstance(v, bool)), None)

    def allowed(self) -> str:
        return "one of " + ", ".join(map(repr, self.options))

    def format(self, v) -> str:
        return str(v) if self.labels is None else str(self.labels[self.options.index(v)])


@dataclass
class Preset:
    """A named state the prose discusses: `values` sets some controls (the rest keep their defaults);
    `notice` is one line saying what to look at in that state: a text, or a function of the explorable's inputs
    (`notice(**inputs) -> text`) when it quotes numbers that follow them. `about_default=True` marks a text whose
    numbers hold for the default inputs only: shown with other inputs, it says so."""

    values: dict
    notice: object
    about_default: bool = False

    def __post_init__(self):
        if not isinstance(self.values, dict):
            raise TypeError(f"Preset values must be a dict of control name -> value, got {self.values!r}")
        if callable(self.notice) and self.about_default:
            raise ValueError("a computed notice follows the inputs: it cannot be about the default inputs only")
        if not callable(self.notice):
            _one_line(self.notice)
        self.values = dict(self.values)

    def text(self, inputs: dict, default: bool) -> str:
        """The notice for these inputs (`default`: they are the explorable's default inputs)."""
        if callable(self.notice):
            return _one_line(self.notice(**inputs))
        if self.about_default and not default:
            return f"for the default input: {self.notice.strip()}"
        return self.notice


def _one_line(notice) -> str:
    if not isinstance(notice, str) or not notice.strip() or "\n" in notice.strip():
        raise ValueError(f"a Preset needs a one-line notice saying what to look at, got {notice!r}")
    return notice


# Data an explorable is computed from, which a learner may replace: `default`; `convert`, which returns a value as
# the figure uses it or raises ValueError/TypeError; and `allowed`, what is allowed.
Input = namedtuple("Input", "default convert allowed")


def vector(default, smallest: int = 2, largest: int = 64) -> Input:
    """An Input that takes a 1-D list or array of `smallest` to `largest` finite numbers (as float64)."""
    allowed = f"a 1-D list or array of {smallest} to {largest} finite numbers"

    def convert(v):
        if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__len__"):
            raise TypeError(f"got {type(v).__name__}")
        try:
            a = np.array(v, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"got values that are not numbers ({err})") from None
        if a.ndim != 1 or not smallest <= a.size <= largest:
            raise ValueError(f"got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"got non-finite values {a[~np.isfinite(a)][:3].tolist()}")
        a.setflags(write=False)
        return a

    return Input(convert(default), convert, allowed)


def scalar(default: float, lo: float, hi: float) -> Input:
    """An Input that takes one finite number from lo to hi (as float)."""
    def convert(v):
        if not _real(v) or not lo <= v <= hi:
            raise (ValueError if _real(v) else TypeError)(f"got {v!r}")
        return float(v)

    return Input(convert(default), convert, f"a number from {number(lo)} to {number(hi)}")


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v)
