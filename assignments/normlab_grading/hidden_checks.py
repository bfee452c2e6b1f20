"""The hidden checks of the chapter 23 exercises. They run inside the grading kernel, after the student's cells.

Every hidden-test cell of `source/chapter23/exercises.ipynb` loads this file afresh (from disk, never from
`sys.modules`) and calls `run(<grade id>, globals())`. The file lives outside `source/`, so nbgrader never
releases it; students see only the call.

What the checks rely on, and why:
- References are computed here from first principles in plain Python (lists, int and float arithmetic).
  They never call `normlab_core`, and never call numpy functions that a student's cell could replace
  (`np.allclose = ...` or a patched `normlab_core` changes nothing here).
- Test inputs come from a small integer generator written below, not from numpy's random module, so a
  student cannot shape them by patching numpy; the seeds differ from anything in the visible cells.
- Types are taken from literals (`(0).__class__` is int whatever the name `int` is bound to), and answers
  are converted to plain floats before any comparison, so an object whose `==` is always true gains nothing.
- Parts that ask for a computation check that it was not delegated to `normlab_core`: while the student's
  function runs, the matching `normlab_core` functions have their code swapped for a tripwire.
- A kernel whose input is being rewritten (IPython input or AST transformers, trace hooks) fails the check.

Run-time tampering in the student's kernel cannot be ruled out from inside that kernel (the student's code
runs first, in the same process); `normlab_grading/review.py` looks for it in the submissions instead.
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
import warnings

_INT = (0).__class__
_FLOAT = (0.0).__class__
_STR = "".__class__
_TUPLE = ().__class__
_LIST = [].__class__
_TYPE = _INT.__class__


class HiddenCheckFailed(AssertionError):
    """A hidden check failed; the message says what went wrong without showing the expected values."""


# --- inputs: a 64-bit linear congruential generator (Knuth's MMIX constants), pure Python ---------------

class _Draws:
    def __init__(self, seed: int):
        self.state = (seed * 2654435761 + 12345) % 18446744073709551616

    def unit(self) -> float:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 18446744073709551616
        return (self.state >> 11) / 9007199254740992.0

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.unit()

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return lo + _INT(self.unit() * (hi - lo + 1))

    def choice(self, options):
        return options[self.integer(0, len(options) - 1)]

    def vector(self, n: int, lo: float = -3.0, hi: float = 3.0) -> list:
        return [self.uniform(lo, hi) for _ in range(n)]


# --- plain-Python helpers ----------------------------------------------------------------------------------

def _np():
    return sys.modules["numpy"]


def _array(values, shape=None):
    """A float64 numpy array holding `values` (a flat list), reshaped to `shape`."""
    arr = _np().array(values, dtype="float64")
    return arr if shape is None else arr.reshape(shape)


def _floats(result, shape, what: str) -> list:
    """The answer as a flat list of plain floats; fails if it is not a float array of the given shape."""
    try:
        arr = _np().array(result, dtype="float64")
    except Exception as exc:  # noqa: BLE001 - any failure to convert is the student's answer's problem
        raise HiddenCheckFailed(
            f"{what} did not return an array of numbers ({_TYPE(result).__name__}): {exc}") from None
    if _TUPLE(arr.shape) != _TUPLE(shape):
        raise HiddenCheckFailed(f"{what} returned shape {_TUPLE(arr.shape)} for an input of shape {_TUPLE(shape)}")
    return [_FLOAT(v) for v in arr.reshape(-1).tolist()]


def _is_nan(v: float) -> bool:
    return v != v


def _close(got: list, want: list, rtol: float, atol: float) -> float:
    """Largest |got - want|; raises if any entry is outside atol + rtol * |want| (NaN never passes)."""
    worst = 0.0
    bad = False
    for g, w in zip(got, want, strict=True):
        d = g - w
        d = -d if d < 0 else d
        if _is_nan(d) or d > atol + rtol * (w if w >= 0 else -w):
            bad = True
        if _is_nan(d) or d > worst:
            worst = d
    if bad:
        return worst if not _is_nan(worst) else float("nan")
    return -1.0


def _expect_close(got, want, rtol, atol, message):
    worst = _close(got, want, rtol, atol)
    if worst != -1.0:
        raise HiddenCheckFailed(f"{message}: off by up to {worst:.2e}")


def _sqrt(v: float) -> float:
    return v ** 0.5


def _rows(flat: list, d: int) -> list:
    return [flat[i:i + d] for i in range(0, len(flat), d)]


@contextlib.contextmanager
def _quiet():
    """Run student code without letting it write to stderr (nbgrader scores a check cell with stderr as 0)."""
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stderr(sink), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def _call(what, fn, *args, **kwargs):
    if not callable(fn):
        raise HiddenCheckFailed(f"{what} is not a function (found {_TYPE(fn).__name__})")
    try:
        with _quiet():
            return fn(*args, **kwargs)
    except HiddenCheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001
        raise HiddenCheckFailed(f"{what} raised {_TYPE(exc).__name__} on a hidden case: {exc}") from None


def _need(ns: dict, name: str):
    if name not in ns:
        raise HiddenCheckFailed(f"`{name}` is not defined: run the answer cell that defines it")
    return ns[name]


# --- tampering with the kernel --------------------------------------------------------------------------

_TRUSTED = ("IPython.", "ipykernel.", "matplotlib", "ipywidgets", "comm", "jupyter", "debugpy", "nbgrader")


def _foreign(callables) -> list:
    out = []
    for c in callables:
        module = getattr(c, "__module__", None) or getattr(_TYPE(c), "__module__", "") or ""
        if not module.startswith(_TRUSTED):
            out.append(getattr(c, "__name__", repr(c)))
    return out


def check_kernel() -> None:
    """Fail if the kernel rewrites the cells it runs or traces them."""
    problems = []
    if sys.gettrace() is not None or sys.getprofile() is not None:
        problems.append("a trace or profile hook is installed")
    shell = None
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:  # noqa: BLE001 - not running under IPython: nothing to inspect
        shell = None
    if shell is not None:
        for attr in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
            found = _foreign(getattr(shell, attr, []) or [])
            if found:
                problems.append(f"{attr} contains {found}")
        events = getattr(shell, "events", None)
        for name, callbacks in (getattr(events, "callbacks", {}) or {}).items():
            found = _foreign(callbacks)
            if found:
                problems.append(f"the {name!r} event runs {found}")
    if problems:
        raise HiddenCheckFailed("the grading kernel was modified at run time (" + "; ".join(problems) + "), so "
                                "its checks cannot be trusted; an instructor will look at this submission")


# --- delegation to normlab_core ------------------------------------------------------------------------

def _tripwire_code(name: str, freevars: tuple):
    """A code object that records `name` in __normlab_tripped__ and raises; it has the given free variables,
    so it can replace the code of a closure (a decorated function) too."""
    outer = "".join(f"    {v} = None\n" for v in freevars)
    touch = f"        ({', '.join(freevars)},)\n" if freevars else ""
    source = (f"def _outer():\n{outer}    def _tripwire(*args, **kwargs):\n{touch}"
              f"        __normlab_tripped__.append({name!r})\n"
              f"        raise RuntimeError('this part must be computed without normlab_core.{name}')\n"
              f"    return _tripwire\n")
    scope: dict = {}
    exec(compile(source, "<tripwire>", "exec"), scope)  # noqa: S102
    code = scope["_outer"]().__code__
    return code if code.co_freevars == freevars else None


def _core_functions(modules: tuple[str, ...]) -> list:
    """The functions defined in the given normlab_core submodules (and their classes), with their names."""
    found = []
    for modname in modules:
        module = sys.modules.get(f"normlab_core.{modname}")
        if module is None:
            continue
        for name, obj in list(vars(module).items()):
            if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__:
                found.append((f"{modname}.{name}", obj))
            elif isinstance(obj, type) and obj.__module__ == module.__name__:
                for attr, meth in list(vars(obj).items()):
                    if isinstance(meth, types.FunctionType):
                        found.append((f"{modname}.{name}.{attr}", meth))
    return found


@contextlib.contextmanager
def _tripwires(modules: tuple[str, ...], tripped: list):
    """Swap the code of normlab_core's functions in `modules` for a tripwire that records the call."""
    saved = []
    try:
        for qualname, fn in _core_functions(modules):
            code = _tripwire_code(qualname, fn.__code__.co_freevars)
            if code is None:
                continue
            saved.append((fn, fn.__code__))
            fn.__globals__["__normlab_tripped__"] = tripped
            fn.__code__ = code
        yield
    finally:
        for fn, code in saved:
            fn.__code__ = code
            fn.__globals__.pop("__normlab_tripped__", None)


def _no_delegation(part: str, modules: tuple[str, ...], thunk):
    """Run thunk() with tripwires; fail if it reached normlab_core's own implementation."""
    tripped: list = []
    with _tripwires(modules, tripped):
        try:
            result = thunk()
        except HiddenCheckFailed:
            if not tripped:
                raise
            result = None
    if tripped:
        raise HiddenCheckFailed(
            f"{part} calls normlab_core's own implementation (normlab_core.{tripped[0]}); this part asks "
            "you to write the computation yourself, so it scores 0. Replace the call with your own code.")
    return result


# --- references, from first principles -------------------------------------------------------------------

def _layer_norm_row(row: list, eps: float) -> list:
    n = len(row)
    mean = sum(row) / n
    centred = [v - mean for v in row]
    var = sum(c * c for c in centred) / n
    scale = _sqrt(var + eps)
    return [c / scale for c in centred]


def _rms_backward_row(dy: list, x: list, gamma, eps: float) -> list:
    n = len(x)
    g = [d * (1.0 if gamma is None else gamma[i]) for i, d in enumerate(dy)]
    r = _sqrt(sum(v * v for v in x) / n + eps)
    dot = sum(gi * xi for gi, xi in zip(g, x, strict=True))
    # y_i = gamma_i x_i / r, dr/dx_j = x_j / (n r): dL/dx_j = g_j / r - x_j * sum_i(g_i x_i) / (n r^3)
    return [gj / r - xj * dot / (n * r * r * r) for gj, xj in zip(g, x, strict=True)]


def _magnitudes(x_rows: list, ws: list, normalize: bool) -> list:
    h = [list(r) for r in x_rows]
    out = []
    for w in ws:
        width = len(w[0])
        h = [[max(0.0, sum(row[k] * w[k][j] for k in range(len(row)))) for j in range(width)] for row in h]
        if normalize:
            h = [_layer_norm_row(row, 1e-5) for row in h]
        total = sum(v * v for row in h for v in row)
        out.append(_sqrt(total / (len(h) * width)))
    return out


class _Tally:
    """A number that counts the arithmetic done on it under the exercise's convention."""

    def __init__(self, counts: dict, value: float = 1.0):
        self.counts, self.value = counts, value

    def _op(self, kind, other, value):
        self.counts[kind] += 1
        return _Tally(self.counts, value)

    def _v(self, o):
        return o.value if isinstance(o, _Tally) else o

    def __add__(self, o):
        return self._op("add", o, self.value + self._v(o))

    def __sub__(self, o):
        return self._op("add", o, self.value - self._v(o))

    def __mul__(self, o):
        return self._op("mul", o, self.value * self._v(o))

    def __truediv__(self, o):
        return self._op("mul", o, self.value / self._v(o))

    def __rtruediv__(self, o):
        return self._op("mul", o, self._v(o) / self.value)


def _sum_tallies(values):
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def _counts(norm: str, d: int) -> tuple:
    """(multiplications, additions) of one row of d numbers, by running the convention's steps on tallies."""
    c = {"mul": 0, "add": 0}
    xs = [_Tally(c, float(i % 5) - 1.5) for i in range(d)]
    gamma = [_Tally(c, 1.25)] * d
    if norm == "layer":
        beta = [_Tally(c, 0.5)] * d
        mean = _sum_tallies(xs) / d
        dev = [x - mean for x in xs]
        var = _sum_tallies([v * v for v in dev]) / d
        inv = 1.0 / _Tally(c, _sqrt((var + 1e-5).value))  # the square root is free
        [gamma[i] * (dev[i] * inv) + beta[i] for i in range(d)]
    else:
        ms = _sum_tallies([x * x for x in xs]) / d
        inv = 1.0 / _Tally(c, _sqrt((ms + 1e-5).value))
        [gamma[i] * (xs[i] * inv) for i in range(d)]
    return c["mul"], c["add"]


# --- the checks, one per grade cell -----------------------------------------------------------------------

_ALL_CORE = ("norms", "stats", "backward", "gradcheck", "blocked", "opcount", "residual", "moments")


def _ex1_cases(draws: _Draws, n_cases: int):
    for _ in range(n_cases):
        d = draws.integer(2, 40)
        centre, spread = draws.uniform(-20.0, 20.0), draws.uniform(0.01, 3.0)
        yield [centre + spread * v for v in draws.vector(d)], draws.choice([0.0, 1e-8, 1e-5, 1e-2, 1.0])


def check_ex1_function(ns: dict) -> str:
    fn = _need(ns, "layer_norm_vector")
    draws = _Draws(81_301)

    def run_all():
        for row, eps in _ex1_cases(draws, 20):
            got = _floats(_call("layer_norm_vector", fn, _array(row), eps=eps), (len(row),), "layer_norm_vector")
            _expect_close(got, _layer_norm_row(row, eps), 1e-9, 1e-12,
                          f"1(a): wrong result for a hidden vector of length {len(row)} with eps={eps:g}")
        for _ in range(5):
            d, value, eps = draws.integer(2, 30), float(draws.integer(-100, 100)), draws.choice([1e-8, 1e-5, 1.0])
            got = _floats(_call("layer_norm_vector", fn, _array([value] * d), eps=eps), (d,), "layer_norm_vector")
            if any(v != 0.0 for v in got):
                raise HiddenCheckFailed(f"1(a): a constant vector with eps={eps:g} must give exact zeros")
        return 25

    n = _no_delegation("1(a)", _ALL_CORE, run_all)
    return f"1(a): {n} hidden cases passed"


def check_ex1_results(ns: dict) -> str:
    with_eps = _floats(_need(ns, "with_eps"), (4,), "with_eps")
    without_eps = _floats(_need(ns, "without_eps"), (4,), "without_eps")
    if any(v != 0.0 for v in with_eps):
        raise HiddenCheckFailed("1(b): with_eps is not what LayerNorm gives for the constant vector")
    if not all(_is_nan(v) for v in without_eps):
        raise HiddenCheckFailed("1(b): without_eps is not what LayerNorm gives for the constant vector")
    # The two answers must be what the student's own function gives, on other constant vectors too.
    fn = _need(ns, "layer_norm_vector")
    draws = _Draws(40_417)
    for _ in range(4):
        d, value = draws.integer(2, 12), draws.uniform(-50.0, 50.0)
        zero = _floats(_call("layer_norm_vector", fn, _array([value] * d), eps=0.0), (d,), "layer_norm_vector")
        tiny = _floats(_call("layer_norm_vector", fn, _array([value] * d), eps=1e-5), (d,), "layer_norm_vector")
        if not all(_is_nan(v) for v in zero) or any(v != 0.0 for v in tiny):
            raise HiddenCheckFailed("1(b): your layer_norm_vector does not give these results on other constant "
                                    "vectors; the answers must come from running your function")
    return "1(b): hidden cases passed"


def check_ex1_why(ns: dict) -> str:
    fn = _need(ns, "deviations_and_scale")
    draws = _Draws(55_003)
    for row, eps in _ex1_cases(draws, 12):
        result = _call("deviations_and_scale", fn, _array(row), eps)
        if not isinstance(result, (_TUPLE, _LIST)) or len(result) != 2:
            raise HiddenCheckFailed("1(c): deviations_and_scale must return a pair (numerator, denominator)")
        num = _floats(result[0], (len(row),), "the numerator of deviations_and_scale")
        (den,) = _floats([result[1]], (1,), "the denominator of deviations_and_scale")
        mean = sum(row) / len(row)
        want_num = [v - mean for v in row]
        want_den = _sqrt(sum(c * c for c in want_num) / len(row) + eps)
        _expect_close(num, want_num, 1e-9, 1e-9, f"1(c): wrong numerator for a hidden vector with eps={eps:g}")
        _expect_close([den], [want_den], 1e-9, 1e-15, f"1(c): wrong denominator for a hidden vector with eps={eps:g}")
    answer = _need(ns, "zero_over_zero")
    if _TYPE(answer) is not _STR or answer.strip().lower() != "nan":
        raise HiddenCheckFailed("1(c): zero_over_zero is not what IEEE 754 gives for 0.0 / 0.0")
    return "1(c): hidden cases passed"


def _ex2_cases(draws: _Draws, n_cases: int, with_batch: bool):
    for _ in range(n_cases):
        lead = [draws.integer(1, 4) for _ in range(draws.integer(0, 2 if with_batch else 0))]
        d = draws.integer(2, 24)
        shape = (*lead, d)
        size = d
        for n in lead:
            size *= n
        scale = draws.uniform(0.1, 5.0)
        x = [scale * v for v in draws.vector(size)]
        dy = draws.vector(size)
        gamma = None if draws.unit() < 0.3 else draws.vector(d, -2.0, 2.0)
        eps = draws.choice([0.0, 1e-6, 1e-5, 1e-2, 1.0])
        yield shape, x, dy, gamma, eps


def _backward_reference(shape, x, dy, gamma, eps) -> list:
    d = shape[-1]
    out = []
    for xr, dr in zip(_rows(x, d), _rows(dy, d), strict=True):
        out.extend(_rms_backward_row(dr, xr, gamma, eps))
    return out


def _check_backward(ns: dict, seed: int, n_cases: int, with_batch: bool) -> int:
    fn = _need(ns, "rmsnorm_backward")
    draws = _Draws(seed)

    def run_all():
        for shape, x, dy, gamma, eps in _ex2_cases(draws, n_cases, with_batch):
            g = None if gamma is None else _array(gamma)
            got = _floats(_call("rmsnorm_backward", fn, _array(dy, shape), _array(x, shape), g, eps=eps), shape,
                          "rmsnorm_backward")
            _expect_close(got, _backward_reference(shape, x, dy, gamma, eps), 1e-8, 1e-11,
                          f"2(a): wrong gradient for a hidden input of shape {shape}, "
                          f"{'no gamma' if gamma is None else 'with gamma'}, eps={eps:g}")
        return n_cases

    return _no_delegation("2(a)", ("backward", "gradcheck"), run_all)


def check_ex2_backward(ns: dict) -> str:
    n = _check_backward(ns, 23_011, 6, with_batch=False)
    return f"2(a): {n} hidden single-row cases passed"


def check_ex2_hidden(ns: dict) -> str:
    n = _check_backward(ns, 70_919, 25, with_batch=True)
    return f"2(a): {n} hidden batched cases passed"


def check_ex2_central_difference(ns: dict) -> str:
    fn = _need(ns, "central_difference")
    draws = _Draws(11_113)

    def cube(v):
        return v * v * v

    def scaled(v):
        return v * (v * v).sum()

    def run_all():
        for _ in range(4):
            shape = (draws.integer(1, 3), draws.integer(2, 5))
            size = shape[0] * shape[1]
            x, dy = draws.vector(size, -1.5, 1.5), draws.vector(size)
            arr = _array(x, shape)
            got = _floats(_call("central_difference", fn, cube, arr, _array(dy, shape)), shape, "central_difference")
            if _floats(arr, shape, "x") != x:
                raise HiddenCheckFailed("2(b): central_difference changed the caller's x")
            _expect_close(got, [3.0 * v * v * w for v, w in zip(x, dy, strict=True)], 0.0, 1e-7,
                          f"2(b): wrong gradient of a hidden cubic on shape {shape}")
            s, sdy = sum(v * v for v in x), sum(v * w for v, w in zip(x, dy, strict=True))
            got = _floats(_call("central_difference", fn, scaled, _array(x, shape), _array(dy, shape)), shape,
                          "central_difference")
            _expect_close(got, [w * s + 2.0 * sdy * v for v, w in zip(x, dy, strict=True)], 0.0, 1e-6,
                          f"2(b): wrong gradient of a hidden function on shape {shape}")
        return 8

    n = _no_delegation("2(b)", ("gradcheck", "backward"), run_all)
    return f"2(b): {n} hidden cases passed"


def check_ex2_check(ns: dict) -> str:
    gap_fn = _need(ns, "gradient_gap")
    answer = _need(ns, "max_abs_diff")
    if _TYPE(answer) is not _FLOAT or not 0.0 < answer < 1e-6:
        raise HiddenCheckFailed("2(c): max_abs_diff must be a float strictly between 0 and 1e-6")
    draws = _Draws(6_007)
    shape = (2, 6)
    x, dy, gamma = draws.vector(12), draws.vector(12), draws.vector(6, 0.5, 1.5)

    def gap():
        value = _call("gradient_gap", gap_fn, _array(dy, shape), _array(x, shape), _array(gamma), 1e-5)
        (v,) = _floats([value], (1,), "gradient_gap")
        return v

    honest = gap()
    if not 0.0 < honest < 1e-6:
        raise HiddenCheckFailed(f"2(c): gradient_gap gives {honest:.2e} on hidden inputs where your two gradients "
                                "should agree to well under 1e-6 but not exactly")
    # The gap must really compare the two functions: break each one in turn and watch the gap grow.
    for name in ("rmsnorm_backward", "central_difference"):
        original = _need(ns, name)

        def broken(*args, _original=original, **kwargs):
            return 1.5 * _np().asarray(_original(*args, **kwargs))

        ns[name] = broken
        try:
            spoiled = gap()
        finally:
            ns[name] = original
        if not spoiled > 1e-3:
            raise HiddenCheckFailed(f"2(c): gradient_gap does not change when {name} is wrong; it must compute "
                                    f"both gradients with your functions and compare them")
    return "2(c): hidden cases passed"


def _ex3_case(draws: _Draws, rows: int, width: int, depth: int, gain: float):
    x = [draws.vector(width) for _ in range(rows)]
    # uniform(-a, a) has standard deviation a / sqrt(3); pick a for a standard deviation of gain / sqrt(width)
    a = gain / _sqrt(width) * _sqrt(3.0)
    ws = [[draws.vector(width, -a, a) for _ in range(width)] for _ in range(depth)]
    return x, ws


def _check_magnitudes(ns: dict, cases) -> int:
    fn = _need(ns, "layer_magnitudes")
    n = 0
    for x, ws in cases:
        for normalize in (False, True):
            x_arr = _array([v for r in x for v in r], (len(x), len(x[0])))
            w_arrs = [_array([v for r in w for v in r], (len(w), len(w[0]))) for w in ws]
            result = _call("layer_magnitudes", fn, x_arr, w_arrs, normalize)
            if _TYPE(result).__name__ != "ndarray" or str(getattr(result, "dtype", "")) != "float64":
                raise HiddenCheckFailed("3: layer_magnitudes must return a float64 numpy array")
            got = _floats(result, (len(ws),), "layer_magnitudes")
            _expect_close(got, _magnitudes(x, ws, normalize), 1e-6, 0.0,
                          f"3: wrong magnitudes for a hidden stack of {len(ws)} layers of width {len(x[0])}, "
                          f"normalize={normalize}")
            n += 1
    return n


def check_ex3_visible(ns: dict) -> str:
    draws = _Draws(3_203)
    n = _check_magnitudes(ns, [_ex3_case(draws, 6, 10, 4, 2.0)])
    return f"3: {n} hidden cases passed"


def check_ex3_hidden(ns: dict) -> str:
    draws = _Draws(9_337)
    cases = [_ex3_case(draws, 1, 8, 3, 2.0), _ex3_case(draws, 5, 12, 6, 0.5), _ex3_case(draws, 3, 16, 5, 1.0)]
    n = _check_magnitudes(ns, cases)
    return f"3: {n} hidden cases passed"


def _check_counts(ns: dict, sizes) -> int:
    for name, norm in (("layer_norm_ops", "layer"), ("rms_norm_ops", "rms")):
        fn = _need(ns, name)
        for d in sizes:
            result = _call(name, fn, d)
            if _TYPE(result) is not _TUPLE or len(result) != 2:
                raise HiddenCheckFailed(f"4(a): {name}({d}) must return a tuple of two ints, got "
                                        f"{_TYPE(result).__name__}")
            if not all(_TYPE(n) is _INT for n in result):
                raise HiddenCheckFailed(f"4(a): {name}({d}) must return plain Python ints, got "
                                        f"({', '.join(_TYPE(n).__name__ for n in result)})")
            want = _counts(norm, d)
            if _INT.__ne__(result[0], want[0]) or _INT.__ne__(result[1], want[1]):
                raise HiddenCheckFailed(f"4(a): {name}({d}) is not the count under the stated convention")
    return len(sizes)


def check_ex4_small(ns: dict) -> str:
    _no_delegation("4(a)", ("opcount",), lambda: _check_counts(ns, (4, 5)))
    return "4(a): hidden cases passed"


def check_ex4_counts(ns: dict) -> str:
    draws = _Draws(4_051)
    sizes = (1, 2, 3, 17, 512, 1000, draws.integer(30, 300), draws.integer(1000, 5000))
    n = _no_delegation("4(a)", ("opcount",), lambda: _check_counts(ns, sizes))
    return f"4(a): {2 * n} hidden cases passed"


def check_ex4_speedup(ns: dict) -> str:
    fn = _need(ns, "counted_speedup")
    draws = _Draws(5_121)
    for d in (8, 100, draws.integer(200, 900), draws.integer(1000, 9000)):
        value = _call("counted_speedup", fn, d)
        if _TYPE(value) is not _FLOAT and _TYPE(value).__name__ != "float64":
            raise HiddenCheckFailed(f"4(b): counted_speedup({d}) must return a float, got {_TYPE(value).__name__}")
        (got,) = _floats([value], (1,), "counted_speedup")
        ln, rms = _counts("layer", d), _counts("rms", d)
        _expect_close([got], [(ln[0] + ln[1]) / (rms[0] + rms[1])], 1e-12, 0.0,
                      f"4(b): counted_speedup({d}) is not the ratio of the counted totals")
    return "4(b): hidden cases passed"


CHECKS = {
    "test_ex1_function": check_ex1_function,
    "test_ex1_results": check_ex1_results,
    "test_ex1_why": check_ex1_why,
    "test_ex2_backward": check_ex2_backward,
    "test_ex2_hidden": check_ex2_hidden,
    "test_ex2_central_difference": check_ex2_central_difference,
    "test_ex2_check": check_ex2_check,
    "test_ex3_visible": check_ex3_visible,
    "test_ex3_hidden": check_ex3_hidden,
    "test_ex4_small": check_ex4_small,
    "test_ex4_counts": check_ex4_counts,
    "test_ex4_speedup": check_ex4_speedup,
}

MARK = "hidden checks passed"


def run(grade_id: str, ns: dict) -> None:
    """Run the hidden checks of one grade cell against the notebook's namespace `ns`; print one line on success.

    The line is the record that the hidden checks ran: the grade script flags a full-score check cell
    without it (a cell that was rewritten before it ran).
    """
    check_kernel()
    detail = CHECKS[grade_id](ns)
    print(f"{detail} ({MARK}: {grade_id})")
