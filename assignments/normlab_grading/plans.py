"""The plans of the chapter 23 checks: for every check cell (grade id), the calls to make in the student's
sandbox and how to judge what each returns.

Each check has two kinds of cases:
- visible cases, on the inputs of the notebook's own check cell (the failure message may show what was
  expected: those values are public);
- hidden cases, on inputs drawn from the course seed (the message says what failed, never an expected value,
  an input or the seed).

What is fair to a correct answer:
- where a number is asked for, any real scalar passes (`float`, `int`, `np.float64`, `np.float32`, a 0-d
  array); where an array is asked for, any array-like of real numbers of the right shape; where counts are
  asked for, any integers (`int` or NumPy's integer types), but not floats;
- tolerances are relative to the size of the reference (or of the input, for differences that rounding
  makes of that size), never exact equality where a different but correct order of operations rounds
  differently; hidden constant vectors hold values whose mean every summation order computes exactly;
- the reference solution passes for any seed (`tests/test_grading_judge.py` checks 500 of them).

A new check cell needs a plan here, in CHECKS: a release with a check cell that has none is refused when the
exercises are built and when they are graded (`unplanned`).

To change the hidden inputs for your course, set `c.NormlabGrading.seed` in nbgrader_config.py, or change
COURSE_SEED below, in your private copy of the course.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from normlab_grading.decode import CheckFailed, array, expect_close, flatten, integer, kind, real, show, value_of
from normlab_grading.draws import Draws, draws_for
from normlab_grading.references import (
    average,
    backward_reference,
    counts,
    function_gradient,
    layer_norm_row,
    magnitudes,
    ratio,
    schedule,
    stack_grad_norms,
    stored_solved,
    warm_steps,
)
from normlab_grading.wire import arr, call, get

COURSE_SEED = 57_221_903  # every hidden input follows from it: change it in a private copy of the course


@dataclasses.dataclass
class Case:
    request: dict
    verify: object          # verify(result) -> None; raises CheckFailed
    hidden: bool = True


@dataclasses.dataclass
class Plan:
    grade_id: str
    part: str
    cases: list
    tripwire: tuple = ()

    def calls(self) -> list:
        return [c.request for c in self.cases]

    def counts(self) -> tuple[int, int]:
        hidden = sum(c.hidden for c in self.cases)
        return len(self.cases) - hidden, hidden


@dataclasses.dataclass
class Context:
    """What the checks depend on besides the answers: the seed, and the notebook's public inputs (the values
    its locked data cells compute: `x_check`, `gamma_check`, `dy_check`, `x_input`, `weights`)."""

    seed: int = COURSE_SEED
    data: dict = dataclasses.field(default_factory=dict)



# --- the checks, one per check cell ------------------------------------------------------------------------

ALL_CORE = ("norms", "stats", "backward", "gradcheck", "opcount", "residual", "moments")
EPS_CYCLE = (0.0, 1e-8, 1e-5, 1e-2, 1.0)   # hidden cases go through these in turn, so every seed has each
LN_RTOL = 1e-7   # LayerNorm outputs, relative to the largest |output| (rounding of a one-pass variance fits)
ZERO = 1e-6      # "zero" for LayerNorm of a constant vector: far below the O(1) entries of a real output


def _ex1_cases(draws: Draws, n: int):
    for i in range(n):
        d = draws.integer(2, 40)
        centre, spread = draws.uniform(-20.0, 20.0), draws.uniform(0.01, 3.0)
        yield [centre + spread * v for v in draws.vector(d)], EPS_CYCLE[i % len(EPS_CYCLE)]


def _check_vector(fn: str, x: list, eps: float, want: list, message: str, visible=False) -> Case:
    def verify(result):
        got = array(value_of(result, fn), (len(x),), fn)
        expect_close(got, want, LN_RTOL, message, visible=visible)

    return Case(call(fn, arr(x), eps=eps), verify, hidden=not visible)


def _check_zeros(fn: str, x: list, eps: float, message: str, visible=False) -> Case:
    def verify(result):
        got = array(value_of(result, fn), (len(x),), fn)
        if not all(abs(v) <= ZERO for v in got):  # NaN fails too
            raise CheckFailed(f"{message}: returned {show(got)}" if visible else message)

    return Case(call(fn, arr(x), eps=eps), verify, hidden=not visible)


def plan_ex1_function(ctx: Context) -> Plan:
    x = [1.0, 2.0, 3.0, 4.0]
    cases = [_check_vector("layer_norm_vector", x, eps, layer_norm_row(x, eps),
                           f"1(a): layer_norm_vector([1, 2, 3, 4], eps={eps:g})", visible=True) for eps in (1e-5, 0.5)]
    cases.append(_check_zeros("layer_norm_vector", [5.0] * 4, 1e-5,
                              "1(a): layer_norm_vector([5, 5, 5, 5], eps=1e-5) should give four zeros", visible=True))
    draws = draws_for(ctx.seed, "test_ex1_function")
    for row, eps in _ex1_cases(draws, 20):
        cases.append(_check_vector("layer_norm_vector", row, eps, layer_norm_row(row, eps),
                                   f"1(a): wrong result for a hidden vector of length {len(row)} with eps={eps:g}"))
    for i in range(5):
        d, value, eps = draws.integer(2, 30), float(draws.integer(-100, 100)), (1e-8, 1e-5, 1.0)[i % 3]
        cases.append(_check_zeros("layer_norm_vector", [value] * d, eps,
                                  f"1(a): a hidden constant vector of length {d} with eps={eps:g} should give zeros"))
    return Plan("test_ex1_function", "1(a)", cases, ALL_CORE)


def _all_nan(desc_result, fn, n, message):
    got = array(value_of(desc_result, fn), (n,), fn)
    if not all(math.isnan(v) for v in got):
        raise CheckFailed(message)


def plan_ex1_results(ctx: Context) -> Plan:
    def with_eps(result):
        got = array(value_of(result, "with_eps"), (4,), "with_eps")
        if not all(abs(v) <= ZERO for v in got):
            raise CheckFailed(f"1(b): with_eps is {show(got)}, but LayerNorm with eps=1e-5 gives four zeros for "
                              "the constant vector")

    def without_eps(result):
        _all_nan(result, "without_eps", 4, "1(b): without_eps should hold what LayerNorm without eps gives for the "
                 "constant vector; store what your function returns (run the call and look)")

    cases = [Case(get("with_eps"), with_eps, False), Case(get("without_eps"), without_eps, False)]
    draws = draws_for(ctx.seed, "test_ex1_results")
    for _ in range(4):
        # Quarter-integers: the sum of d of them is exact in any order, so every correct mean is exactly
        # the value and every deviation exactly 0 (random reals would make this depend on rounding).
        d, value = draws.integer(2, 12), draws.integer(-200, 200) / 4.0
        message = ("1(b): your layer_norm_vector does not give these results on other constant vectors; the "
                   "answers must come from running your function")
        cases.append(Case(call("layer_norm_vector", arr([value] * d), eps=0.0),
                          lambda r, d=d, m=message: _all_nan(r, "layer_norm_vector", d, m)))
        cases.append(_check_zeros("layer_norm_vector", [value] * d, 1e-5, message))
    return Plan("test_ex1_results", "1(b)", cases)


def _pair(result, n, what="deviations_and_scale"):
    desc = value_of(result, what)
    if desc.get("t") not in ("tuple", "list") or len(desc.get("items", [])) != 2 or desc.get("len", 2) != 2:
        raise CheckFailed(f"1(c): {what} must return a pair (numerator, denominator), got {kind(desc)}")
    num = array(desc["items"][0], (n,), "the numerator of deviations_and_scale")
    den = real(desc["items"][1], "the denominator of deviations_and_scale")
    return num, den


def plan_ex1_why(ctx: Context) -> Plan:
    def visible(result):
        num, den = _pair(result, 4)
        expect_close(num, [-1.5, -0.5, 0.5, 1.5], 1e-9, "1(c): for x = [1, 2, 3, 4] the numerator", visible=True)
        expect_close([den], [math.sqrt(1.5)], 1e-9, "1(c): for x = [1, 2, 3, 4] and eps = 0.25 the denominator",
                     visible=True)

    def zero_over_zero(result):
        desc = value_of(result, "zero_over_zero")
        if desc.get("t") == "str":
            ok = desc["v"].strip().lower() == "nan"
        else:
            try:
                ok = math.isnan(real(desc, "zero_over_zero"))
            except CheckFailed:
                ok = False
        if not ok:
            raise CheckFailed('1(c): zero_over_zero is not what IEEE 754 gives for 0.0 / 0.0 (set it to "nan" or '
                              '"inf", whichever you observe)')

    cases = [Case(call("deviations_and_scale", arr([1.0, 2.0, 3.0, 4.0]), 0.25), visible, False),
             Case(get("zero_over_zero"), zero_over_zero, False)]
    draws = draws_for(ctx.seed, "test_ex1_why")
    for row, eps in _ex1_cases(draws, 12):
        centre = average(row)
        want_num = [v - centre for v in row]
        want_den = math.sqrt(math.fsum(c * c for c in want_num) / len(row) + eps)
        size = max(abs(v) for v in row)  # x - mean rounds at the scale of x, not of the (small) deviations

        def verify(result, row=row, eps=eps, want_num=want_num, want_den=want_den, size=size):
            num, den = _pair(result, len(row))
            expect_close(num, want_num, 1e-9, f"1(c): wrong numerator for a hidden vector with eps={eps:g}",
                         scale=size)
            expect_close([den], [want_den], LN_RTOL, f"1(c): wrong denominator for a hidden vector with eps={eps:g}")

        cases.append(Case(call("deviations_and_scale", arr(row), eps), verify))
    return Plan("test_ex1_why", "1(c)", cases)


def _ex2_case(draws: Draws, i: int, batch: bool):
    lead = [draws.integer(1, 4) for _ in range(draws.integer(0, 2) if batch else 0)]
    d = draws.integer(2, 24)
    shape = (*lead, d)
    size = math.prod(shape)
    scale = draws.uniform(0.1, 5.0)
    x = [scale * v for v in draws.vector(size)]
    dy = draws.vector(size)
    gamma = None if i % 3 == 0 else draws.vector(d, -2.0, 2.0)
    return shape, x, dy, gamma, EPS_CYCLE[i % len(EPS_CYCLE)]


BACKWARD_RTOL = 1e-8


def _backward_case(shape, x, dy, gamma, eps, message, visible=False) -> Case:
    want = backward_reference(shape, x, dy, gamma, eps)

    def verify(result):
        got = array(value_of(result, "rmsnorm_backward"), shape, "rmsnorm_backward")
        expect_close(got, want, BACKWARD_RTOL, message, shape=shape, visible=visible)

    g = None if gamma is None else arr(gamma)
    return Case(call("rmsnorm_backward", arr(dy, shape), arr(x, shape), g, eps=eps), verify, hidden=not visible)


def _flat(a) -> list:
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def _visible_data(ctx: Context, *names):
    missing = [n for n in names if n not in ctx.data]
    if missing:
        raise KeyError(f"the notebook's data cells did not define {missing}")
    return [ctx.data[n] for n in names]


def plan_ex2_backward(ctx: Context) -> Plan:
    x, gamma, dy = _visible_data(ctx, "x_check", "gamma_check", "dy_check")
    shape = tuple(np.shape(x))
    cases = [
        _backward_case(shape, _flat(x), _flat(dy), _flat(gamma), 1e-5,
                       "2(a): rmsnorm_backward(dy_check, x_check, gamma_check, eps=1e-5)", visible=True),
        _backward_case(shape, _flat(x), _flat(dy), None, 0.0,
                       "2(a): rmsnorm_backward(dy_check, x_check, None, eps=0.0)", visible=True),
    ]
    draws = draws_for(ctx.seed, "test_ex2_backward")
    for i in range(6):
        shape_i, xi, dyi, gi, eps = _ex2_case(draws, i, batch=False)
        cases.append(_backward_case(shape_i, xi, dyi, gi, eps,
                                    f"2(a): wrong gradient for a hidden row of {shape_i[-1]}, "
                                    f"{'no gamma' if gi is None else 'with gamma'}, eps={eps:g}"))
    return Plan("test_ex2_backward", "2(a)", cases, ("backward", "gradcheck"))


def plan_ex2_hidden(ctx: Context) -> Plan:
    one = [float(v) for v in range(1, 6)]
    batch = [float(v) for v in range(1, 31)]
    cases = [
        _backward_case((5,), one, [1.0] * 5, None, 1e-5, "2(a): rmsnorm_backward(np.ones(5), np.arange(1.0, 6.0))",
                       visible=True),
        _backward_case((2, 3, 5), batch, [1.0] * 30, None, 1e-5,
                       "2(a): a batch of shape (2, 3, 5) (rows are independent: reduce over the last axis only)",
                       visible=True),
    ]
    draws = draws_for(ctx.seed, "test_ex2_hidden")
    for i in range(25):
        shape, x, dy, gamma, eps = _ex2_case(draws, i, batch=True)
        cases.append(_backward_case(shape, x, dy, gamma, eps,
                                    f"2(a): wrong gradient for a hidden input of shape {shape}, "
                                    f"{'no gamma' if gamma is None else 'with gamma'}, eps={eps:g}"))
    return Plan("test_ex2_hidden", "2(a)", cases, ("backward", "gradcheck"))


_FUNCTIONS = {
    "sin": (np.sin, np.cos),
    "square": (lambda v: v * v, lambda v: 2 * v),
}


def _fd_case(function: str, x: list, dy: list, shape, message: str, visible=False) -> Case:
    xa, dya = np.array(x).reshape(shape), np.array(dy).reshape(shape)
    xa, dya = np.array(x).reshape(shape), np.array(dy).reshape(shape)
    values, want = function_gradient(function, xa, dya)
    # Central differences with h = 1e-6: truncation ~h^2, rounding ~1e-16 * |L| / h with L = sum(dy * f(x)).
    # Allow 1e-8 * (1 + sum|dy * f(x)|), 45 times that rounding; a one-sided difference is off by ~h.
    tol = 1e-8 * (1.0 + float(np.abs(dya * values).sum()))
    want_flat = _flat(want)

    def verify(result):
        got = array(value_of(result, "central_difference"), shape, "central_difference")
        after = result.get("args_after", {}).get("1")
        if after is None or flatten(after, "x")[0] != [float(v) for v in x]:
            raise CheckFailed("2(b): central_difference changed the caller's x; move the entries of a copy")
        expect_close(got, want_flat, 1.0, message, scale=tol, shape=shape, visible=visible)

    return Case(call("central_difference", {"function": function}, arr(x, shape), arr(dy, shape), keep=[1]), verify,
                hidden=not visible)


def plan_ex2_central_difference(ctx: Context) -> Plan:
    cases = [
        _fd_case("sin", [0.3, -1.2, 2.0], [1.0, 2.0, -0.5], (3,),
                 "2(b): for f = sin at x = [0.3, -1.2, 2.0] with dy = [1, 2, -0.5] (expected dy * cos(x); a one-sided "
                 "difference is not accurate enough)", visible=True),
        _fd_case("square", [v / 4 for v in range(6)], [1.0] * 6, (2, 3),
                 "2(b): for f(x) = x**2 on a 2 x 3 array with dy = 1 (expected 2x)", visible=True),
    ]
    draws = draws_for(ctx.seed, "test_ex2_central_difference")
    for _ in range(4):
        shape = (draws.integer(1, 3), draws.integer(2, 5))
        size = shape[0] * shape[1]
        x, dy = draws.vector(size, -1.5, 1.5), draws.vector(size)
        cases.append(_fd_case("cube", x, dy, shape, f"2(b): wrong gradient of a hidden cubic on shape {shape}"))
        cases.append(_fd_case("scaled", x, dy, shape, f"2(b): wrong gradient of a hidden function on shape {shape}"))
    return Plan("test_ex2_central_difference", "2(b)", cases, ("gradcheck", "backward"))


def plan_ex2_check(ctx: Context) -> Plan:
    def stored(result):
        value = real(value_of(result, "max_abs_diff"), "2(c): max_abs_diff")
        if not 0.0 < value < 1e-6:
            raise CheckFailed(f"2(c): max_abs_diff is {value:.1e}; your two gradients should agree to well under "
                              "1e-6 but not exactly (a gap of 0 means both sides were computed the same way)")

    draws = draws_for(ctx.seed, "test_ex2_check")
    shape = (2, 6)
    x, dy, gamma = draws.vector(12), draws.vector(12), draws.vector(6, 0.5, 1.5)
    args = (arr(dy, shape), arr(x, shape), arr(gamma), 1e-5)
    # how much too large each function is made: drawn like the inputs, so no answer can count on a constant
    spoil = {name: round(draws.uniform(1.75, 3.0), 3) for name in ("rmsnorm_backward", "central_difference")}

    # gradient_gap is judged against what the student's own rmsnorm_backward returns on the same inputs (a case
    # before the others asks for it), and the true gradient for the numeric side: a correct central difference
    # agrees with it to ~1e-10, far inside the tolerance. With one of the two functions made `spoil` times too
    # large, the gap must be what that gives, so that telling the spoiled calls apart earns nothing.
    truth = np.array(backward_reference(shape, x, dy, gamma, 1e-5))
    seen: dict = {}   # the student's analytic gradient, set by the first call for each submission judged

    def own_backward(result):
        seen["analytic"] = None
        try:
            seen["analytic"] = np.array(array(value_of(result, "rmsnorm_backward"), shape, "rmsnorm_backward"))
        except CheckFailed:
            pass

    def gap_of(expected, problem):
        def verify(result):
            gap = real(value_of(result, "gradient_gap"), "2(c): gradient_gap")
            analytic = seen.get("analytic")
            if analytic is None or not np.all(np.isfinite(analytic)):   # judged against the true gradient
                analytic = truth
            want = float(np.max(np.abs(expected(analytic))))
            if not (gap > 0.0 and abs(gap - want) <= 1e-3 * want + 1e-6):
                raise CheckFailed(problem(gap, want))
        return verify

    def not_honest(gap, want):
        if want < 1e-6:
            what = "exactly 0" if gap == 0 else "a gap not between 0 and 1e-6"
            return (f"2(c): gradient_gap gives {what} on hidden inputs where your two gradients should agree to "
                    "well under 1e-6 but not exactly")
        return ("2(c): gradient_gap on hidden inputs is not the largest |analytic - numeric| that your two "
                "functions give there")

    honest = gap_of(lambda a: a - truth, not_honest)
    cases = [Case(get("max_abs_diff"), stored, False), Case(call("rmsnorm_backward", *args), own_backward),
             Case(call("gradient_gap", *args), honest)]
    for name, expected in (("rmsnorm_backward", lambda a: spoil["rmsnorm_backward"] * a - truth),
                           ("central_difference", lambda a: a - spoil["central_difference"] * truth)):
        cases.append(Case(call("gradient_gap", *args, replace={name: spoil[name]}),
                          gap_of(expected, lambda gap, want, name=name: (
                              f"2(c): gradient_gap does not change when {name} is wrong as it should; it must "
                              "compute both gradients with your functions and compare them"))))
    return Plan("test_ex2_check", "2(c)", cases)


def _ex3_stack(draws: Draws, rows: int, width: int, depth: int, gain: float):
    x = [draws.vector(width) for _ in range(rows)]
    # uniform(-a, a) has standard deviation a / sqrt(3): pick a for a standard deviation of gain / sqrt(width)
    a = gain / math.sqrt(width) * math.sqrt(3.0)
    ws = [[draws.vector(width, -a, a) for _ in range(width)] for _ in range(depth)]
    return x, ws


def _magnitude_values(result_desc, depth, what) -> list:
    return array(result_desc, (depth,), what)


def _stack_cases(x, ws, message) -> list:
    out = []
    for normalize in (False, True):
        want = magnitudes(x, ws, normalize)

        def verify(result, want=want, normalize=normalize):
            got = _magnitude_values(value_of(result, "layer_magnitudes"), len(ws), "layer_magnitudes")
            expect_close(got, want, 1e-6, f"{message}, normalize={normalize}", scale=1.0)
            for g, w in zip(got, want, strict=True):
                if not abs(g - w) <= 1e-6 * abs(w):
                    raise CheckFailed(f"{message}, normalize={normalize}: off by more than the relative tolerance "
                                      "1e-6")

        out.append(Case(call("layer_magnitudes", arr(x), [arr(w) for w in ws], normalize), verify))
    return out


def _relative_each(got, want, message):
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if not abs(g - w) <= 1e-6 * abs(w):
            raise CheckFailed(f"{message}: the magnitude after layer {k + 1} is {g:.7g}, expected {w:.7g}. The "
                              "magnitude is the root mean square over all entries; ReLU comes before the LayerNorm.")


def plan_ex3_visible(ctx: Context) -> Plan:
    x, weights = _visible_data(ctx, "x_input", "weights")
    depth = len(weights)
    cases = []
    for name, normalize in (("plain", False), ("normed", True)):
        want = magnitudes(x, weights, normalize)

        def verify(result, name=name, want=want, normalize=normalize):
            got = array(value_of(result, name), (depth,), name)
            _relative_each(got, want, f"3: {name} ({'with' if normalize else 'without'} LayerNorm)")

        cases.append(Case(get(name), verify, False))
    draws = draws_for(ctx.seed, "test_ex3_visible")
    cases += _stack_cases(*_ex3_stack(draws, 6, 10, 4, 2.0), "3: wrong magnitudes for a hidden stack of 4 layers of "
                          "width 10")
    return Plan("test_ex3_visible", "3", cases)


def plan_ex3_hidden(ctx: Context) -> Plan:
    x, weights = _visible_data(ctx, "x_input", "weights")
    x2, w3 = np.asarray(x)[:2], list(weights)[:3]
    want = magnitudes(x2, w3, True)

    def visible(result):
        got = array(value_of(result, "layer_magnitudes"), (3,), "layer_magnitudes")
        _relative_each(got, want, "3: layermagnitudes(x_input[:2], weights[:3], normalize=True)")

    cases = [Case(call("layer_magnitudes", arr(x2), [arr(w) for w in w3], True), visible, False)]
    draws = draws_for(ctx.seed, "test_ex3_hidden")
    for rows, width, depth, gain in ((1, 8, 3, 2.0), (5, 12, 6, 0.5), (3, 16, 5, 1.0)):
        cases += _stack_cases(*_ex3_stack(draws, rows, width, depth, gain),
                              f"3: wrong magnitudes for a hidden stack of {depth} layers of width {width}")
    return Plan("test_ex3_hidden", "3", cases)


def _count_case(name: str, norm: str, d: int, visible=False) -> Case:
    want = counts(norm, d)

    def verify(result):
        desc = value_of(result, f"{name}({d})")
        items = desc.get("items", [])
        if desc.get("t") not in ("tuple", "list") or len(items) != 2 or desc.get("len", 2) != 2:
            raise CheckFailed(f"4(a): {name}({d}) must return a tuple (multiplications, additions), got {kind(desc)}")
        got = tuple(integer(item, f"4(a): {name}({d})") for item in items)
        if got != want:
            if visible:
                raise CheckFailed(f"4(a): {name}({d}) returned {got}, expected {want}. Go through the numbered steps "
                                  f"of the convention and count each one for D = {d}.")
            raise CheckFailed(f"4(a): {name}({d}) is not the count under the stated convention")

    return Case(call(name, d), verify, hidden=not visible)


def _count_cases(sizes, visible=()) -> list:
    return [_count_case(name, norm, d, visible=d in visible)
            for name, norm in (("layer_norm_ops", "layer"), ("rms_norm_ops", "rms")) for d in sizes]


def plan_ex4_small(ctx: Context) -> Plan:
    return Plan("test_ex4_small", "4(a)", _count_cases((4, 5), visible=(4,)), ("opcount",))


def plan_ex4_counts(ctx: Context) -> Plan:
    draws = draws_for(ctx.seed, "test_ex4_counts")
    sizes = (512, 1, 2, 3, 17, 1000, draws.integer(30, 300), draws.integer(1000, 5000))
    return Plan("test_ex4_counts", "4(a)", _count_cases(sizes, visible=(512,)), ("opcount",))


RATIO_RTOL = 1e-6  # a ratio of two counts: a float32 result is still the right ratio; a count off by one is not


def plan_ex4_speedup(ctx: Context) -> Plan:
    def stored(result):
        value = real(value_of(result, "speedup_512"), "4(b): speedup_512")
        expect_close([value], [ratio(512)], RATIO_RTOL,
                     "4(b): speedup_512 is not the ratio of the counted totals at D = 512 (LayerNorm's over RMSNorm's)")

    cases = [Case(get("speedup_512"), stored, False)]
    draws = draws_for(ctx.seed, "test_ex4_speedup")
    for d in (8, 100, draws.integer(200, 900), draws.integer(1000, 9000)):
        def verify(result, d=d):
            value = real(value_of(result, f"counted_speedup({d})"), f"4(b): counted_speedup({d})")
            expect_close([value], [ratio(d)], RATIO_RTOL,
                         f"4(b): counted_speedup({d}) is not the ratio of the counted totals")
        cases.append(Case(call("counted_speedup", d), verify))
    return Plan("test_ex4_speedup", "4(b)", cases)


# --- exercise 7: the warm-up and cosine schedule -------------------------------------------------------------

RATE_RTOL = 1e-6   # relative to the peak: cos() of any library, and float32, pass; a step off by one does not


def _rate_case(step: int, steps: int, peak: float, warmup: float, message: str, visible=False) -> Case:
    want = schedule(step, steps, peak, warmup)
    where = f"learning_rate({step}, {steps}, {peak!r}, {warmup!r})"
    label = f"7: {where}" if visible else "7: learning_rate"   # a hidden case never shows its inputs

    def verify(result):
        got = real(value_of(result, label), label)
        expect_close([got], [want], RATE_RTOL, label if visible else f"7: {message}", scale=peak, visible=visible)

    return Case(call("learning_rate", step, steps, peak, warmup), verify, hidden=not visible)


VISIBLE_RUN = (500, 1e-2, 0.15)             # the stored runs of "Does it train?"
VISIBLE_STEPS = (0, 37, 74, 75, 287, 499)
SHORT_RUN = (10, 3e-3, 0.3)                 # the second check cell's run


def plan_ex7_visible(ctx: Context) -> Plan:
    cases = [_rate_case(s, *VISIBLE_RUN, "", visible=True) for s in VISIBLE_STEPS]
    cases += [_rate_case(s, 500, 1e-2, 0.0, "", visible=True) for s in (0, 499)]
    draws = draws_for(ctx.seed, "test_ex7_visible")
    for s in (draws.integer(1, 73), draws.integer(76, 498)):
        cases.append(_rate_case(s, *VISIBLE_RUN, "the 500-step run with 15 % warm-up is wrong at some step"))
    return Plan("test_ex7_visible", "7", cases, ("training",))


def _hidden_runs(draws: Draws) -> list:
    """(steps, peak, warmup) of the hidden runs: short ones, ones without warm-up, and random ones whose
    warm-up length round(warmup * steps) is never a tie (so that every way of rounding agrees)."""
    runs = [(1, 1e-3, 0.0), (2, 5e-3, 0.0), (2, 5e-3, 0.3), (3, 2e-2, 0.34), (7, 1e-2, 0.15), (4, 1e-3, 0.75)]
    while len(runs) < 18:
        steps = draws.integer(20, 3000)
        warmup = 0.0 if len(runs) % 4 == 0 else round(draws.uniform(0.01, 0.6), 3)
        peak = float(f"{10 ** draws.uniform(-4, -1):.3g}")
        frac = warmup * steps - math.floor(warmup * steps)
        if abs(frac - 0.5) > 1e-6:
            runs.append((steps, peak, warmup))
    return runs


def plan_ex7_hidden(ctx: Context) -> Plan:
    cases = [_rate_case(s, *SHORT_RUN, "", visible=True) for s in range(SHORT_RUN[0])]
    draws = draws_for(ctx.seed, "test_ex7_hidden")
    for steps, peak, warmup in _hidden_runs(draws):
        n = warm_steps(steps, warmup)
        picks = {0, n - 1, n, n + 1, steps - 1, draws.integer(0, steps - 1), draws.integer(0, steps - 1)}
        for s in sorted(p for p in picks if 0 <= p < steps):
            size = "a very short run (under 10 steps)" if steps < 10 else "a longer run"
            kind = "without warm-up" if warmup == 0 else "with warm-up"
            phase = "warm-up" if s < n else "decay"
            cases.append(_rate_case(s, steps, peak, warmup, f"{size} {kind} is wrong in its {phase}"))
    return Plan("test_ex7_hidden", "7", cases, ("training",))


# --- exercise 8: where the norm sits -------------------------------------------------------------------------

GRAD_RTOL = 1e-6          # relative to each layer's norm: any order of the sums passes, a missing term does not
EX8_RUN = ("post", 12, 3e-3, 0.0)   # the configuration 8(b) asks about: placement, depth, peak rate, warm-up


def _grads_case(x, ws, dy, placement: str, message: str) -> Case:
    want = stack_grad_norms(x, ws, dy, placement)

    def verify(result):
        got = array(value_of(result, "grad_norms"), (len(ws),), "grad_norms")
        for g, w in zip(got, want, strict=True):
            if not abs(g - w) <= GRAD_RTOL * abs(w):   # NaN fails too
                raise CheckFailed(message)

    return Case(call("grad_norms", arr(x), [arr(w) for w in ws], arr(dy), placement), verify)


def plan_ex8_grads(ctx: Context) -> Plan:
    x, ws, dy = _visible_data(ctx, "x_stack", "w_stack", "dy_stack")
    cases = []
    for name, placement in (("post_norms", "post"), ("pre_norms", "pre")):
        want = stack_grad_norms(x, ws, dy, placement)

        def stored(result, name=name, want=want):
            got = array(value_of(result, name), (len(want),), name)
            bad = [k + 1 for k, (g, w) in enumerate(zip(got, want, strict=True)) if not abs(g - w) <= GRAD_RTOL * w]
            if bad:
                raise CheckFailed(f"8(a): {name} on the fixed stack differs at layers {bad} (layer 1 is nearest the "
                                  "input)")

        cases.append(Case(get(name), stored, False))
    draws = draws_for(ctx.seed, "test_ex8_grads")
    for i in range(8):
        rows, width, depth = draws.integer(1, 6), draws.integer(2, 12), draws.integer(1, 8)
        gain = draws.uniform(0.3, 2.0) / math.sqrt(width)
        x = [draws.vector(width) for _ in range(rows)]
        ws = [[draws.vector(width, -gain * math.sqrt(3.0), gain * math.sqrt(3.0)) for _ in range(width)]
              for _ in range(depth)]
        dy = [draws.vector(width) for _ in range(rows)]
        placement = ("pre", "post")[i % 2]
        cases.append(_grads_case(x, ws, dy, placement,
                                 f"8(a): wrong gradient norms for a hidden {placement}-norm stack of {depth} layers"))
    return Plan("test_ex8_grads", "8(a)", cases, ("backward",))   # the way back runs through 2(a)'s function


def plan_ex8_observed(ctx: Context) -> Plan:
    solved, seeds = stored_solved(*EX8_RUN)
    if seeds == 0:
        raise KeyError(f"the stored runs hold no grid cell {EX8_RUN}: run `make experiments`")

    def guess(result):
        value = integer(value_of(result, "predicted_solved"), "8(b): predicted_solved")
        if not 0 <= value <= 3:
            raise CheckFailed(f"8(b): predicted_solved is {value}; a count of seeds runs from 0 to 3")

    def observed(result):
        value = integer(value_of(result, "observed_solved"), "8(b): observed_solved")
        if value != solved:
            raise CheckFailed(f"8(b): observed_solved is {value}, but that is not what the stored grid shows for "
                              "post-norm at depth 12, peak rate 3e-3, no warm-up; read the grid again")

    return Plan("test_ex8_observed", "8(b)", [Case(get("predicted_solved"), guess, False),
                                              Case(get("observed_solved"), observed, False)])


CHECKS = {
    "test_ex1_function": plan_ex1_function,
    "test_ex1_results": plan_ex1_results,
    "test_ex1_why": plan_ex1_why,
    "test_ex2_backward": plan_ex2_backward,
    "test_ex2_hidden": plan_ex2_hidden,
    "test_ex2_central_difference": plan_ex2_central_difference,
    "test_ex2_check": plan_ex2_check,
    "test_ex3_visible": plan_ex3_visible,
    "test_ex3_hidden": plan_ex3_hidden,
    "test_ex4_small": plan_ex4_small,
    "test_ex4_counts": plan_ex4_counts,
    "test_ex4_speedup": plan_ex4_speedup,
    "test_ex7_visible": plan_ex7_visible,
    "test_ex7_hidden": plan_ex7_hidden,
    "test_ex8_grads": plan_ex8_grads,
    "test_ex8_observed": plan_ex8_observed,
}



def unplanned(check_ids) -> list:
    """The grade ids of check cells that have no plan here (a course with one must not be built or graded)."""
    return [gid for gid in check_ids if gid not in CHECKS]
