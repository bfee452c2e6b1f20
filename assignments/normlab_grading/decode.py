"""Reading the answers that came back from the sandbox, and comparing them, in the grader's own words.

The values are plain data in the format of `wire`; this module turns them into numbers or a `CheckFailed`
whose message says what is wrong. While a hidden case is judged (`hidden_case`), the messages quote nothing
the student's code produced on the hidden inputs: no exception type or message, no class, dtype or shape of
what it returned, no number it returned; only what the grader itself says about the case.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from normlab_grading import wire


class CheckFailed(AssertionError):
    """A check failed; the message says what went wrong (expected values only for visible cases)."""


_HIDDEN = [False]   # True while a hidden case is judged


@contextlib.contextmanager
def hidden_case(hidden: bool):
    """Judge one case: hidden or visible, which decides what the messages may quote."""
    _HIDDEN[0] = bool(hidden)
    try:
        yield
    finally:
        _HIDDEN[0] = False


def kind(desc: dict) -> str:
    return wire.kind(desc, coarse=_HIDDEN[0])


def value_of(result: dict, what: str) -> dict:
    """The described value of a call or a name; fails with the reason if there is none."""
    if "missing" in result:
        raise CheckFailed(f"`{result['missing']}` is not defined: run the answer cell that defines it")
    if "notcallable" in result:
        raise CheckFailed(f"{what} is not a function (found {kind(result['notcallable'])})")
    if "error" in result and _HIDDEN[0]:
        raise CheckFailed(f"{what} raised an exception on this hidden case (the grader never shows what a hidden "
                          "case raised; call your function on inputs like these to see it)")
    if "error" in result:
        err = result["error"]
        message = str(err.get("message", ""))[:300]
        raise CheckFailed(f"{what} raised {err.get('type', 'an error')}" + (f": {message}" if message else ""))
    if "value" not in result or not isinstance(result["value"], dict):
        raise CheckFailed(f"{what} returned nothing the grader could read")
    return result["value"]


def real(desc: dict, what: str) -> float:
    """Any real scalar (see wire.number)."""
    value = wire.number(desc)
    if value is None:
        raise CheckFailed(f"{what} must be a real number, got {kind(desc)}")
    return value


def integer(desc: dict, what: str) -> int:
    """An integer (see wire.whole); not a float."""
    value = wire.whole(desc)
    if value is None:
        raise CheckFailed(f"{what} must return integers, got {kind(desc)}")
    return value


def flatten(desc: dict, what: str):
    """(flat list of floats, shape) of an array-like of real numbers."""
    try:
        return wire.flat(desc)
    except wire.NotNumbers as exc:
        raise CheckFailed(exc.template.format(what=what, kind=kind(exc.desc))) from None


def array(desc: dict, shape: tuple, what: str) -> list:
    """The answer as a flat list of floats; fails unless it is an array-like of reals of this shape."""
    values, got = flatten(desc, what)
    if tuple(got) != tuple(shape) and _HIDDEN[0]:
        raise CheckFailed(f"{what} returned an array of the wrong shape")
    if tuple(got) != tuple(shape):
        raise CheckFailed(f"{what} returned shape {tuple(got)} where {tuple(shape)} was expected")
    return values


def _worst(got: list, want: list) -> float:
    """The largest |got - want|; NaN where one is NaN and the other is not (NaN against NaN counts as 0), inf
    where infinities differ."""
    g = np.array(got, dtype=np.float64)
    w = np.array(want, dtype=np.float64)
    if g.shape != w.shape:
        raise CheckFailed("a result of the wrong length")
    gnan, wnan = np.isnan(g), np.isnan(w)
    if np.any(gnan != wnan):
        return math.nan
    both = ~(gnan | wnan)
    g, w = g[both], w[both]
    ginf, winf = np.isinf(g), np.isinf(w)
    if np.any((ginf | winf) & (g != w)):
        return math.inf
    finite = ~(ginf | winf)
    return float(np.max(np.abs(g[finite] - w[finite]), initial=0.0))


def close(got: list, want: list, rtol: float, scale: float | None = None) -> float | None:
    """None if every entry of got is within rtol * scale of want (scale: the largest |want|, unless given);
    otherwise the largest difference relative to that scale."""
    if scale is None:
        scale = max((abs(w) for w in want if math.isfinite(w)), default=0.0)
    scale = max(scale, 1e-300)
    worst = _worst(got, want)
    if math.isnan(worst) or worst > rtol * scale:
        return worst / scale
    return None


def show(values: list, shape=None) -> str:
    shown = np.round(np.array(values, dtype=np.float64), 6)
    if shape is not None and len(shape) > 1:
        shown = shown.reshape(shape)
    return np.array2string(shown, separator=", ", threshold=24)


def expect_close(got, want, rtol, message, *, scale=None, shape=None, visible=False) -> None:
    off = close(got, want, rtol, scale)
    if off is not None:
        if visible:
            raise CheckFailed(f"{message}: returned {show(got, shape)}, expected {show(want, shape)}")
        if math.isnan(off):
            how = "NaN where a number was expected (or a number where NaN was)"
        elif _HIDDEN[0]:   # no number the student's code chose: only which side of 10 % it is
            how = f"off by more than the allowed {rtol:.0e} of its size" + (
                " (by more than 10 % of it)" if off > 0.1 else "")
        else:
            how = f"off by up to {off:.1e} of its size (allowed: {rtol:.0e})"
        raise CheckFailed(f"{message}: {how}")
