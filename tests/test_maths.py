"""The maths layer of normlab_core (stats, norms, backward, residual, gradcheck, moments, precision, opcount), one
topic per section, each checked against something independent of the code under test: the reference programs'
printed figures, exact rational arithmetic, float64 finite differences, the `autograd` package, algebraic
identities (hypothesis), the number formats' definitions, or counts made by hand.

Sections:
  1. The reference programs' printed figures (23-1 .. 23-7), digit for digit in float32
  2. Statistics: mean_var, the one-pass variance, spread in standard deviations
  3. Forward norms and their gradients: algebraic properties, shapes and dtypes (hypothesis)
  4. Derivatives in float64 against oracles that share no code with normlab_core
  5. Low-precision formats against their defining formulas and brute force
  6. Counting arithmetic: the loops compute the norms, and the tallies match counts by hand
  7. Bad input fails loudly, with a message that names the argument, what it got and what is allowed
"""
# ruff: noqa: UP031

from __future__ import annotations

import warnings
from fractions import Fraction

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import normlab_core as nl
from normlab_core import (
    Affine,
    batch_norm,
    layer_norm,
    layer_norm_backward,
    layer_norm_backward_saved,
    layer_norm_param_grads,
    layer_norm_stats,
    mean_var,
    numerical_gradient,
    rms_norm,
    rms_norm_backward,
    rms_norm_param_grad,
    rms_norm_stats,
    run_stack,
    sensitivity,
    sensitivity_curve,
    stack_curves,
)
from normlab_core.moments import one_pass_var, span_in_std
from normlab_core.opcount import Counted, count_ops
from normlab_core.precision import bfloat16_round, grid, levels_between, round_to, spacing

# ==============================================================================================================
# 1. The reference programs' printed figures (23-1 .. 23-7), digit for digit in float32
# The expected strings are the printed output of the reference programs' C listings, kept here as data: they are
# the independent oracle. Numbers are formatted with the listings' own printf formats, hence %-formatting.
# ==============================================================================================================

F32 = np.float32

# ---- the chapter's inputs -----------------------------------------------------------------------
A = np.array([100.0, 102.0, 98.0, 101.0, 99.0, 103.0], dtype=F32)
B = np.array([0.001, 0.003, -0.001, 0.002, 0.000, 0.004], dtype=F32)
COMPARE_INPUTS = {
    "zero-centered": [-2.0, -1.0, 0.0, 1.0, 2.0],
    "positive-offset": [8.0, 9.0, 10.0, 11.0, 12.0],
    "mixed": [3.0, -1.0, 0.5, 2.0, -0.5],
}
X0_STACK = np.array([1.0, 2.0, 3.0, 4.0], dtype=F32)
DEPTHS = (1, 2, 4, 8, 16, 32)
X_BACK = np.array([1.0, 3.0, 2.0, 5.0, 4.0], dtype=F32)
UP_BACK = np.array([0.1, -0.2, 0.3, -0.1, 0.2], dtype=F32)

# ---- what the listings print (copied from their output) -------------------------------------------
PRINTED_120 = [
    "Vector a: mean=100.50  var=2.92  std=1.71",
    "Vector b: mean=0.0015  var=0.00000292  std=0.001708",
]
PRINTED_121 = {
    "output": "[-0.2928, +0.8783, -1.4638, +0.2928, -0.8783, +1.4638]",
    "mean": "Output mean: 0.000000, expect ~0",
    "var": "Output var:  0.999997, expect ~1",
    "saved": "mean=100.50  std_inv=0.5855, saved for backward",
}
PRINTED_122 = {
    "output": "[+0.9949, +1.0148, +0.9750, +1.0048, +0.9849, +1.0247]",
    "rms": "Output RMS: 1.000000, expect ~1",
}
PRINTED_123 = {
    "zero-centered": ("[-1.414, -0.707, +0.000, +0.707, +1.414]", "[-1.414, -0.707, +0.000, +0.707, +1.414]"),
    "positive-offset": ("[-1.414, -0.707, +0.000, +0.707, +1.414]", "[+0.792, +0.891, +0.990, +1.089, +1.188]"),
    "mixed": ("[+1.463, -1.197, -0.200, +0.798, -0.865]", "[+1.762, -0.587, +0.294, +1.174, -0.294]"),
}
PRINTED_124 = [
    "      1    2.000   0.35068   6.660     1.177",
    "      2    2.000   0.33034   7.844     1.349",
    "      4    2.000   0.29258  10.214     1.682",
    "      8    2.000   0.22851  14.960     2.315",
    "     16    2.000   0.13783  24.466     3.494",
    "     32    2.000   0.04951  43.507     5.653",
]
PRINTED_125 = {
    "normalized": "[-1.4142, +0.0000, -0.7071, +1.4142, +0.7071]",
    "gradient": "[-0.0424, -0.1838, +0.1344, -0.0424, +0.1343]",
    "checks": [
        "dim 0: analytical=-0.0424  numerical=-0.0425  match=yes",
        "dim 1: analytical=-0.1838  numerical=-0.1839  match=yes",
        "dim 2: analytical=+0.1344  numerical=+0.1341  match=yes",
        "dim 3: analytical=-0.0424  numerical=-0.0426  match=yes",
        "dim 4: analytical=+0.1343  numerical=+0.1344  match=yes",
    ],
}


def vec(v, fmt: str) -> str:
    """A vector the way the listings print it: [a, b, c]."""
    return "[" + ", ".join(fmt % float(e) for e in v) + "]"


# ---- figure 23-1 (listing 120): mean and variance of two vectors at different scales ----------------
def test_listing_120_stats_vector_a():
    mean, var = mean_var(A)
    assert mean.dtype == F32 and var.dtype == F32
    line = "Vector a: mean=%.2f  var=%.2f  std=%.2f" % (mean, var, np.sqrt(var))
    assert line == PRINTED_120[0]


def test_listing_120_stats_vector_b():
    mean, var = mean_var(B)
    line = "Vector b: mean=%.4f  var=%.8f  std=%.6f" % (mean, var, np.sqrt(var))
    assert line == PRINTED_120[1]


# ---- figure 23-2 (listing 121): LayerNorm of the chapter's vector -----------------------------------
def test_listing_121_layer_norm_output():
    y = layer_norm(A)
    assert y.dtype == F32
    assert vec(y, "%+.4f") == PRINTED_121["output"]


def test_listing_121_output_mean_and_variance():
    out_mean, out_var = mean_var(layer_norm(A))
    assert "Output mean: %.6f, expect ~0" % out_mean == PRINTED_121["mean"]
    # 0.999997, not 1: eps = 1e-5 against a variance of 2.9167 shrinks the output variance by var/(var+eps)
    assert "Output var:  %.6f, expect ~1" % out_var == PRINTED_121["var"]


def test_listing_121_saved_statistics():
    mean, _ = mean_var(A)
    _, std_inv = layer_norm_stats(A)
    assert std_inv.shape == (1,)
    assert "mean=%.2f  std_inv=%.4f, saved for backward" % (mean, std_inv[0]) == PRINTED_121["saved"]


# ---- figure 23-3 (listing 122): RMSNorm of the same vector ------------------------------------------
def test_listing_122_rms_norm_output():
    y = rms_norm(A)
    assert y.dtype == F32
    assert vec(y, "%+.4f") == PRINTED_122["output"]


def test_listing_122_output_rms():
    y = rms_norm(A).astype(np.float64)
    out_rms = np.sqrt(np.mean(y * y))
    assert "Output RMS: %.6f, expect ~1" % out_rms == PRINTED_122["rms"]


# ---- figure 23-4 (listing 123): LayerNorm vs RMSNorm on three inputs ---------------------------------
@pytest.mark.parametrize("name", list(COMPARE_INPUTS))
def test_listing_123_compare(name):
    x = np.array(COMPARE_INPUTS[name], dtype=F32)
    ln_line, rms_line = PRINTED_123[name]
    assert vec(layer_norm(x), "%+.3f") == ln_line
    assert vec(rms_norm(x), "%+.3f") == rms_line


# ---- figures 23-5 / 23-6 (listing 124): post-norm vs pre-norm with depth -----------------------------
def norm_f32(v: np.ndarray) -> np.float32:
    """Euclidean norm summed one term at a time in float32, as the listing does."""
    s = F32(0)
    for e in v.astype(F32):
        s = F32(s + e * e)
    return np.sqrt(s)


@pytest.mark.parametrize("row", range(len(DEPTHS)))
def test_listing_124_depth_table(row):
    depth = DEPTHS[row]
    out_post = run_stack(X0_STACK, depth, "post")
    out_pre = run_stack(X0_STACK, depth, "pre")
    assert out_post.dtype == F32 and out_pre.dtype == F32
    s_post = sensitivity(X0_STACK, depth, "post", method="finite_difference")
    s_pre = sensitivity(X0_STACK, depth, "pre", method="finite_difference")
    line = "  %5d  %7.3f  %8.5f %7.3f  %8.3f" % (depth, norm_f32(out_post), s_post, norm_f32(out_pre), s_pre)
    assert line == PRINTED_124[row]


# ---- figure 23-7 (listing 125): the LayerNorm backward pass and its numerical check ------------------
def test_listing_125_normalized():
    x_hat, _ = layer_norm_stats(X_BACK)
    assert vec(x_hat, "%+.4f") == PRINTED_125["normalized"]


def test_listing_125_gradient():
    grad = layer_norm_backward(UP_BACK, X_BACK)
    assert grad.dtype == F32
    assert vec(grad, "%+.4f") == PRINTED_125["gradient"]


def test_listing_125_numerical_check():
    grad = layer_norm_backward(UP_BACK, X_BACK)
    num = numerical_gradient(lambda z: layer_norm(z), X_BACK, UP_BACK, h=1e-4)
    assert num.dtype == F32
    lines = [
        "dim %d: analytical=%+.4f  numerical=%+.4f  match=%s"
        % (i, grad[i], num[i], "yes" if abs(grad[i] - num[i]) < 0.001 else "NO")
        for i in range(X_BACK.size)
    ]
    assert lines == PRINTED_125["checks"]


# ==============================================================================================================
# 2. Statistics: mean_var, the one-pass variance, spread in standard deviations
# Against numpy and exact rational arithmetic.
# ==============================================================================================================

CHAPTER_A = [100.0, 102.0, 98.0, 101.0, 99.0, 103.0]


def exact_var(values) -> Fraction:
    xs = [Fraction(float(v)) for v in values]
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


def test_one_pass_var_float64_is_exact_on_small_integers():
    assert one_pass_var(np.array(CHAPTER_A)) == pytest.approx(float(exact_var(CHAPTER_A)), rel=1e-14)


def test_one_pass_var_float32_loses_digits_at_the_chapter_offset():
    exact = float(exact_var(CHAPTER_A))                     # 35/12 = 2.91666...
    got = float(one_pass_var(np.array(CHAPTER_A, dtype=np.float32)))
    assert exact == pytest.approx(35 / 12)
    assert abs(got - exact) > 1e-4                           # cancellation: wrong in the 4th digit
    assert got == pytest.approx(2.9169922, abs=1e-7)         # sum of squares rounded to float32 steps


@pytest.mark.parametrize("offset", [1e4, 1e5])
def test_one_pass_var_float32_collapses_at_large_offsets(offset):
    shape = np.array(CHAPTER_A) - 100.5
    x = (offset + shape).astype(np.float32)
    exact = float(exact_var(x))
    assert abs(float(one_pass_var(x)) - exact) / exact > 0.5


def test_span_in_std_matches_closed_form_and_is_scale_free():
    expected = 5 / np.sqrt(35 / 12)
    assert span_in_std(np.array(CHAPTER_A)) == pytest.approx(expected, rel=1e-12)
    b = (np.array(CHAPTER_A) - 99.0) / 1000.0
    assert span_in_std(b) == pytest.approx(expected, rel=1e-9)


def test_span_in_std_of_constant_row_is_nan():
    assert np.isnan(span_in_std(np.full(4, 5.0)))


# ==============================================================================================================
# 3. Forward norms and their gradients: algebraic properties, shapes and dtypes (hypothesis)
# ==============================================================================================================

PROPS = settings(max_examples=40, deadline=None)
ELEMENTS = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)
# upstream gradients: tiny magnitudes are flushed to 0 so that squared sums in the bounds cannot underflow
UPSTREAM = st.floats(-10, 10, allow_subnormal=False).map(lambda v: 0.0 if abs(v) < 1e-100 else v)


@st.composite
def shapes(draw, min_d=2):
    d = draw(st.integers(min_d, 12))
    lead = draw(st.sampled_from([(), (1,), (3,), (2, 3)]))
    return (*lead, d)


@st.composite
def spread_rows(draw, min_d=2):
    """float64 arrays (..., D) whose every row has a spread that is not tiny next to its size."""
    x = draw(hnp.arrays(np.float64, draw(shapes(min_d)), elements=ELEMENTS))
    std = np.std(x, axis=-1)
    size = np.max(np.abs(x), axis=-1)
    assume(np.all(std >= 1e-2 * np.maximum(size, 1.0)))
    return x


def row_scale(x):
    """max |x| over the array divided by the smallest row std: how much rounding the norms amplify."""
    return (np.max(np.abs(x)) + 1.0) / np.min(np.std(x, axis=-1))


# ---- invariances -----------------------------------------------------------------------------------
@PROPS
@given(x=spread_rows(), c=st.floats(-1e3, 1e3))
def test_layer_norm_ignores_an_added_constant(x, c):
    tol = 1e-12 * (row_scale(x) + abs(c) / np.min(np.std(x, axis=-1)))
    np.testing.assert_allclose(layer_norm(x + c, eps=0), layer_norm(x, eps=0), rtol=0, atol=tol)


@PROPS
@given(x=spread_rows(), s=st.floats(1e-3, 1e3), eps=st.sampled_from([0.0, 1e-5, 0.5]))
def test_layer_norm_ignores_a_positive_scale(x, s, eps):
    # with eps > 0 the identity is LN(s x, s^2 eps) = LN(x, eps): eps is measured in squared input units
    tol = 1e-12 * row_scale(x)
    np.testing.assert_allclose(layer_norm(s * x, eps=s * s * eps), layer_norm(x, eps=eps), rtol=0, atol=tol)
    if eps == 0:
        np.testing.assert_allclose(layer_norm(s * x, eps=0), layer_norm(x, eps=0), rtol=0, atol=tol)


@PROPS
@given(x=spread_rows(), s=st.floats(1e-3, 1e3), eps=st.sampled_from([0.0, 1e-5, 0.5]))
def test_rms_norm_ignores_a_positive_scale(x, s, eps):
    np.testing.assert_allclose(rms_norm(s * x, eps=s * s * eps), rms_norm(x, eps=eps), rtol=1e-12, atol=1e-14)


@PROPS
@given(x=spread_rows())
def test_rms_norm_changes_sign_with_the_input_and_layer_norm_too(x):
    np.testing.assert_allclose(rms_norm(-x), -rms_norm(x), rtol=1e-14, atol=0)
    np.testing.assert_allclose(layer_norm(-x), -layer_norm(x), rtol=0, atol=1e-12 * row_scale(x))


@PROPS
@given(x=spread_rows(), eps=st.sampled_from([0.0, 1e-5, 1.0]))
def test_layer_norm_equals_rms_norm_on_zero_mean_rows(x, eps):
    centred = x - np.mean(x, axis=-1, keepdims=True)
    np.testing.assert_allclose(layer_norm(centred, eps=eps), rms_norm(centred, eps=eps),
                               rtol=0, atol=1e-12 * row_scale(x))


@PROPS
@given(x=spread_rows())
def test_layer_norm_output_has_zero_mean_and_unit_variance(x):
    m, v = mean_var(layer_norm(x, eps=0))
    np.testing.assert_allclose(m, 0, atol=1e-12 * row_scale(x))
    np.testing.assert_allclose(v, 1, atol=1e-12 * row_scale(x))


@PROPS
@given(x=spread_rows(), eps=st.sampled_from([0.0, 1e-5, 0.5]))
def test_rms_norm_output_has_the_expected_rms(x, eps):
    y = rms_norm(x, eps=eps)
    ms = np.mean(x * x, axis=-1)
    np.testing.assert_allclose(np.mean(y * y, axis=-1), ms / (ms + eps), rtol=1e-12)


# ---- the LayerNorm input gradient lives in the plane orthogonal to 1 and x_hat ----------------------
@PROPS
@given(data=st.data(), eps=st.sampled_from([0.0, 1e-5, 0.5]))
def test_layer_norm_gradient_rows_sum_to_zero_and_are_orthogonal_to_x_hat(data, eps):
    x = data.draw(spread_rows(min_d=3))
    dy = data.draw(hnp.arrays(np.float64, x.shape, elements=UPSTREAM))
    dx = layer_norm_backward(dy, x, eps=eps)
    x_hat, std_inv = layer_norm_stats(x, eps)
    size = std_inv * np.sqrt(np.sum(dy * dy, axis=-1, keepdims=True)) * x.shape[-1] + 1e-300
    np.testing.assert_array_less(np.abs(np.sum(dx, axis=-1, keepdims=True)), 1e-12 * size + 1e-300)
    # exactly orthogonal when eps = 0; with eps > 0 the leftover is sum(dy * x_hat) * std_inv * eps / (var + eps)
    var = np.var(x, axis=-1, keepdims=True)
    leftover = np.sum(dy * x_hat, axis=-1, keepdims=True) * std_inv * eps / (var + eps)
    dot = np.sum(dx * x_hat, axis=-1, keepdims=True)
    np.testing.assert_array_less(np.abs(dot - leftover), 1e-10 * size + 1e-300)


@PROPS
@given(data=st.data())
def test_rms_norm_gradient_is_orthogonal_to_x_when_eps_is_zero(data):
    x = data.draw(spread_rows())
    dy = data.draw(hnp.arrays(np.float64, x.shape, elements=UPSTREAM))
    dx = rms_norm_backward(dy, x, eps=0)
    dot = np.sum(dx * x, axis=-1)
    bound = 1e-12 * np.sqrt(np.sum(dy * dy, axis=-1)) * np.sqrt(np.sum(x * x, axis=-1)) * x.shape[-1]
    _, rms = rms_norm_stats(x, 0)
    np.testing.assert_array_less(np.abs(dot), bound / rms[..., 0] + 1e-300)


# ---- shapes: (D,), (N, D) and (B, T, D) are row-wise the same computation ---------------------------
@PROPS
@given(data=st.data())
def test_batched_shapes_agree_row_by_row(data):
    d = data.draw(st.integers(2, 9))
    b, t = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    x = data.draw(hnp.arrays(np.float64, (b, t, d), elements=ELEMENTS))
    assume(np.all(np.std(x, axis=-1) >= 1e-2 * np.maximum(np.max(np.abs(x), axis=-1), 1.0)))
    dy = data.draw(hnp.arrays(np.float64, (b, t, d), elements=UPSTREAM))
    gamma = data.draw(hnp.arrays(np.float64, (d,), elements=st.floats(-3, 3)))
    beta = data.draw(hnp.arrays(np.float64, (d,), elements=st.floats(-3, 3)))
    flat, dflat = x.reshape(b * t, d), dy.reshape(b * t, d)
    full = {
        "ln": layer_norm(x, gamma, beta),
        "rms": rms_norm(x, gamma),
        "ln_bwd": layer_norm_backward(dy, x, gamma),
        "rms_bwd": rms_norm_backward(dy, x, gamma),
    }
    np.testing.assert_allclose(layer_norm(flat, gamma, beta).reshape(x.shape), full["ln"], rtol=1e-13, atol=1e-13)
    for i in range(b):
        for j in range(t):
            row, drow = x[i, j], dy[i, j]
            np.testing.assert_allclose(layer_norm(row, gamma, beta), full["ln"][i, j], rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(rms_norm(row, gamma), full["rms"][i, j], rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(layer_norm_backward(drow, row, gamma), full["ln_bwd"][i, j],
                                       rtol=1e-11, atol=1e-11)
            np.testing.assert_allclose(rms_norm_backward(drow, row, gamma), full["rms_bwd"][i, j],
                                       rtol=1e-11, atol=1e-11)
    # parameter gradients are sums of the per-row contributions
    dg, db = layer_norm_param_grads(dy, x)
    np.testing.assert_allclose(dg, sum(layer_norm_param_grads(dflat[k], flat[k])[0] for k in range(b * t)),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(db, dflat.sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rms_norm_param_grad(dy, x),
                               sum(rms_norm_param_grad(dflat[k], flat[k]) for k in range(b * t)),
                               rtol=1e-10, atol=1e-10)


# ---- BatchNorm is LayerNorm over the other axis ------------------------------------------------------
@PROPS
@given(x=spread_rows(), eps=st.sampled_from([0.0, 1e-5, 0.5]))
def test_batch_norm_is_layer_norm_of_the_transpose(x, eps):
    x2 = np.atleast_2d(x).reshape(-1, x.shape[-1]).T  # (D, rows): columns are the rows drawn above
    np.testing.assert_allclose(batch_norm(x2, eps=eps), layer_norm(x2.T, eps=eps).T, rtol=1e-13, atol=1e-13)


@PROPS
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.5]))
def test_batch_norm_normalizes_each_feature_over_the_batch(data, eps):
    shape = data.draw(st.sampled_from([(4, 3), (5, 2, 3), (2, 6)]))
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-100, 100)))
    want = (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + eps)
    np.testing.assert_allclose(batch_norm(x, eps=eps), want, rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(x))))


# ---- statistics --------------------------------------------------------------------------------------
@PROPS
@given(x=hnp.arrays(np.float64, shapes(min_d=1), elements=ELEMENTS), axis=st.sampled_from([-1, 0]))
def test_mean_var_matches_numpy(x, axis):
    mean, var = mean_var(x, axis=axis)
    np.testing.assert_allclose(mean, np.mean(x, axis=axis), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(var, np.var(x, axis=axis, ddof=0), rtol=1e-12, atol=1e-9)
    assert mean.shape == var.shape == np.mean(x, axis=axis).shape
    assert mean.dtype == var.dtype == np.float64


# ---- dtypes ------------------------------------------------------------------------------------------
X_INT = np.array([[1, 3, 2, 5], [4, -1, 0, 2]])
X_BOOL = np.array([[True, False, True], [False, False, True]])


def all_outputs(x):
    """Every public array-valued function of x (with a matching upstream), as a name -> array dict."""
    dy = np.ones(x.shape, dtype=x.dtype) if x.dtype.kind == "f" else np.ones(x.shape)
    return {
        "layer_norm": layer_norm(x),
        "rms_norm": rms_norm(x),
        "batch_norm": batch_norm(x),
        "mean": mean_var(x)[0],
        "var": mean_var(x)[1],
        "layer_norm_backward": layer_norm_backward(dy, x),
        "rms_norm_backward": rms_norm_backward(dy, x),
        "ln_dgamma": layer_norm_param_grads(dy, x)[0],
        "rms_dgamma": rms_norm_param_grad(dy, x),
        "run_stack": run_stack(x, 3, "pre"),
    }


STATISTICS = ("mean", "var")   # per-row statistics: float16 input gives float32 (float16 cannot hold var([0, 1000]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_dtypes_are_kept(dtype):
    outs = all_outputs(X_INT.astype(dtype))
    for name, out in outs.items():
        want = np.float32 if dtype == np.float16 and name in STATISTICS else dtype
        assert out.dtype == want, name


def test_float16_is_computed_in_float32_and_rounded_once():
    x16 = np.array([[1.0, 3.0, 2.0, 5.0], [4.0, -1.0, 0.0, 2.25]], dtype=np.float16)
    x32 = x16.astype(np.float32)
    np.testing.assert_array_equal(layer_norm(x16), layer_norm(x32).astype(np.float16))
    np.testing.assert_array_equal(rms_norm(x16), rms_norm(x32).astype(np.float16))
    x_hat, std_inv = layer_norm_stats(x16)
    assert x_hat.dtype == np.float16 and std_inv.dtype == np.float32
    np.testing.assert_array_equal(std_inv, layer_norm_stats(x32)[1])
    _, rms = rms_norm_stats(x16)
    assert rms.dtype == np.float32


@pytest.mark.parametrize("x", [X_INT, X_INT.astype(np.int8), X_INT.astype(np.uint16) + 1, X_BOOL],
                         ids=["int64", "int8", "uint16", "bool"])
def test_integers_and_booleans_become_float64(x):
    outs = all_outputs(x)
    ref = all_outputs(x.astype(np.float64))
    for name, out in outs.items():
        assert out.dtype == np.float64, name
        np.testing.assert_array_equal(out, ref[name], err_msg=name)


def test_python_lists_are_float64():
    assert layer_norm([1, 2, 3]).dtype == np.float64
    assert rms_norm([[1.0, 2.0], [3.0, 4.0]]).dtype == np.float64


@PROPS
@given(x=spread_rows())
def test_float32_mode_agrees_with_float64_to_float32_precision(x):
    x32 = x.astype(np.float32)
    x64 = x32.astype(np.float64)  # same numbers, so only the arithmetic differs
    tol = 1e-5 * row_scale(x64)
    np.testing.assert_allclose(layer_norm(x32), layer_norm(x64), rtol=0, atol=tol)
    np.testing.assert_allclose(rms_norm(x32), rms_norm(x64), rtol=1e-5, atol=1e-6)


# ==============================================================================================================
# 4. Derivatives in float64 against oracles that share no code with normlab_core
# Central differences written here, and the `autograd` package; the residual stacks' exact sensitivity too.
# ==============================================================================================================

MAX_DEPTH = 32
SUBLAYERS = [(0.5, 0.1), (1.0, -0.3), (0.2, 0.0), (1.5, 0.5), (-0.4, 0.2)]
X0S = {
    "chapter": (np.array([1.0, 2.0, 3.0, 4.0]), 0),
    "random7": (np.random.default_rng(7).normal(0.3, 1.5, size=7), 2),
}


# ---- residual stacks: exact sensitivity vs central differences of run_stack ---------------------------
def central_sensitivity(x0, depth, placement, component, **options) -> float:
    """||d out / d x0[component]|| by the five-point central difference of run_stack, float64 throughout.

    Fourth order in the step: a stack whose hidden state passes near 0 (where RMSNorm bends sharply)
    needs more than the plain two-point difference to agree with the exact value to 1e-6.
    """
    h = 1e-5 * max(1.0, abs(x0[component]))

    def at(k):
        shifted = x0.copy()
        shifted[component] += k * h
        return run_stack(shifted, depth, placement, **options)

    diff = (at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * h)
    return float(np.sqrt(np.sum(diff * diff)))


@pytest.mark.parametrize("x0_name", list(X0S))
@pytest.mark.parametrize("final_norm", [False, True])
@pytest.mark.parametrize("gain,bias", SUBLAYERS)
@pytest.mark.parametrize("placement", ["pre", "post", "none"])
def test_exact_sensitivity_matches_central_differences_at_every_depth(placement, gain, bias, final_norm, x0_name):
    x0, component = X0S[x0_name]
    sub = Affine(gain, bias)
    opts = dict(sublayer=sub, final_norm=final_norm)
    norms, curve = stack_curves(x0, MAX_DEPTH, placement, component=component, **opts)
    assert curve.shape == norms.shape == (MAX_DEPTH,)
    assert np.array_equal(sensitivity_curve(x0, MAX_DEPTH, placement, component=component, **opts), curve)
    for depth in range(1, MAX_DEPTH + 1):
        fd = central_sensitivity(x0, depth, placement, component, **opts)
        assert curve[depth - 1] == pytest.approx(fd, rel=1e-6, abs=1e-8 * max(1.0, abs(gain) + 1) ** depth), depth
        out = run_stack(x0, depth, placement, **opts)
        assert norms[depth - 1] == pytest.approx(np.linalg.norm(out), rel=1e-12), depth
        exact = sensitivity(x0, depth, placement, method="exact", component=component, **opts)
        assert exact == pytest.approx(curve[depth - 1], rel=1e-12, abs=0), depth


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_sensitivity_depends_on_component(placement):
    """Different input components give different sensitivities (the component argument is honoured)."""
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    got = [sensitivity(x0, 4, placement, component=c) for c in range(4)]
    want = [central_sensitivity(x0, 4, placement, c) for c in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len({round(g, 9) for g in got}) > 1


def test_post_norm_sensitivity_fades_and_pre_norm_holds():
    """The chapter's qualitative claim, in float64 with the exact method."""
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    post = sensitivity_curve(x0, 64, "post")
    pre = sensitivity_curve(x0, 64, "pre")
    assert post[-1] < 0.1 * post[0]
    assert np.all(pre >= 1.0)


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_random_linear_stack_sensitivity_matches_central_differences(norm):
    """random_linear_curves against float64 central differences of the same stack, rebuilt here from its seeds."""
    from normlab_core.residual import random_linear_curves

    width, depth = 8, 12
    got = random_linear_curves(width, depth, 2, norm=norm, seed=3)
    normalize = nl.layer_norm if norm == "layer_norm" else (lambda v, eps: nl.rms_norm(v, eps=eps))
    for k in range(2):
        rng = np.random.default_rng([3, k])
        x0 = rng.standard_normal(width)
        ws = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(depth)]

        def stack(x, n, ws=ws):
            for w in ws[:n]:
                x = normalize(x + w @ x, eps=1e-6)
            return x

        e = np.zeros(width)
        e[0] = 1e-6
        want = [np.linalg.norm((stack(x0 + e, n) - stack(x0 - e, n)) / 2e-6) for n in range(1, depth + 1)]
        np.testing.assert_allclose(got[k], want, rtol=1e-6)


def test_random_linear_stack_does_not_fade_like_the_biased_toy():
    """Without a constant bias a post-norm stack has no fixed point to fall towards: over 96 layers the geometric
    mean sensitivity of 20 random stacks stays within a factor 2 of its depth-1 value, while the toy stack's
    falls by 0.9375 per layer."""
    from normlab_core.residual import random_linear_curves

    curves = random_linear_curves(64, 96, 20)
    geo = np.exp(np.log(curves).mean(axis=0))
    assert 0.5 < geo[-1] / geo[0] < 2
    toy = sensitivity_curve(np.array([1.0, 2.0, 3.0, 4.0]), 192, "post")
    assert toy[-1] / toy[0] < 1e-3
    with pytest.raises(ValueError, match="stacks"):
        random_linear_curves(4, 3, 0)


def test_identity_route_is_the_product_of_the_norms_jacobians_alone():
    """identity_path_curves splits random_linear_curves' stacks by route: the whole sensitivity is theirs, the
    identity route is e0 carried through each layer's LayerNorm Jacobian alone (central differences of LN at the
    layer's input, W skipped), and the ratio is the running product of ||h|| / ||h + W h||.
    Fix: normlab_core/residual.py, identity_path_curves."""
    from normlab_core.residual import identity_path_curves, random_linear_curves

    width, depth = 8, 10
    full, path, shrink = identity_path_curves(width, depth, 2, seed=5)
    np.testing.assert_allclose(full, random_linear_curves(width, depth, 2, seed=5), rtol=1e-12)
    for k in range(2):
        rng = np.random.default_rng([5, k])
        h = rng.standard_normal(width)
        route, prod = np.eye(width)[0], 1.0
        for d in range(depth):
            v = h + (rng.standard_normal((width, width)) / np.sqrt(width)) @ h
            step = 1e-6 * route / np.linalg.norm(route)
            route = np.linalg.norm(route) * (nl.layer_norm(v + step, eps=1e-6)
                                             - nl.layer_norm(v - step, eps=1e-6)) / 2e-6
            prod *= np.linalg.norm(h) / np.linalg.norm(v)
            h = nl.layer_norm(v, eps=1e-6)
            assert np.linalg.norm(route) == pytest.approx(path[k, d], rel=1e-6)
            assert shrink[k, d] == pytest.approx(prod, rel=1e-12)
    assert path[:, -1].max() < 0.2 * full[:, -1].min()     # the straight route fades, the whole far less


def test_the_toy_stack_with_layernorm_hands_on_its_first_output():
    """With F(v) = a v + b and LayerNorm, LN(h + F(h)) = LN((1 + a) h) = LN(h) up to eps: the post-norm toy stack's
    output is LN(x0) at every depth, and its sensitivity is flat."""
    from normlab_core.residual import Affine, run_stack, stack_curves

    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    sub = Affine(0.5, 0.1)
    first = run_stack(x0, 1, "post", sublayer=sub, norm="layer_norm")
    np.testing.assert_allclose(first, nl.layer_norm(x0, eps=1e-6), atol=1e-6)
    np.testing.assert_allclose(run_stack(x0, 64, "post", sublayer=sub, norm="layer_norm"), first, atol=1e-6)
    _, sens = stack_curves(x0, 64, "post", sublayer=sub, norm="layer_norm")
    np.testing.assert_allclose(sens, sens[0], rtol=1e-6)


def test_finite_difference_method_close_to_exact_in_float64():
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    for placement in ("pre", "post", "none"):
        fd = sensitivity(x0, 8, placement, method="finite_difference", h=1e-7)
        assert fd == pytest.approx(sensitivity(x0, 8, placement), rel=1e-5)


# ---- norm backward passes: numerical_gradient and autograd ------------------------------------------
def ln_autograd(x, gamma, beta, eps):
    mu = anp.mean(x, axis=-1, keepdims=True)
    var = anp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return gamma * (x - mu) / anp.sqrt(var + eps) + beta


def rms_autograd(x, gamma, eps):
    return gamma * x / anp.sqrt(anp.mean(x * x, axis=-1, keepdims=True) + eps)


SHAPES = [(5,), (1, 6), (3, 8), (2, 3, 4), (4, 2, 16)]
CASES = [
    # (shape, seed, scale, offset in units of scale, eps, with gamma)
    (shape, seed, scale, offset, eps, with_gamma)
    for seed, (shape, scale, offset, eps, with_gamma) in enumerate(
        [
            (SHAPES[0], 1.0, 0.0, 1e-5, False),
            (SHAPES[1], 100.0, 3.0, 1e-5, True),
            (SHAPES[2], 1e-2, -2.0, 1e-5, True),
            (SHAPES[3], 1.0, 50.0, 0.0, True),
            (SHAPES[4], 3.0, 0.5, 0.1, False),
            (SHAPES[0], 0.1, 1.0, 1e-3, True),
            (SHAPES[2], 10.0, 0.0, 0.0, False),
            (SHAPES[3], 1e-3, 0.0, 1e-6, True),
        ]
    )
]
IDS = [f"{c[0]}-scale{c[2]:g}-off{c[3]:g}-eps{c[4]:g}-{'gamma' if c[5] else 'nogamma'}" for c in CASES]


def make_case(shape, seed, scale, offset, eps, with_gamma):
    rng = np.random.default_rng(1000 + seed)
    d = shape[-1]
    x = scale * (rng.normal(size=shape) + offset)
    dy = rng.normal(size=shape)
    gamma = rng.normal(1.0, 0.5, size=d) if with_gamma else None
    beta = rng.normal(0.0, 0.5, size=d)
    return x, dy, gamma, beta, eps, scale


def tol_close(got, want, rtol):
    """Relative agreement measured against the size of the whole array (entries near 0 are fine)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == np.float64
    err = np.max(np.abs(got - want))
    assert err <= rtol * max(np.max(np.abs(want)), 1e-300), (err, np.max(np.abs(want)))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_layer_norm_backward(case):
    x, dy, gamma, beta, eps, scale = make_case(*case)
    got = layer_norm_backward(dy, x, gamma, eps=eps)
    g = np.ones(x.shape[-1]) if gamma is None else gamma
    want = grad(lambda z: anp.sum(dy * ln_autograd(z, g, beta, eps)))(x)
    tol_close(got, want, 1e-9)
    num = numerical_gradient(lambda z: layer_norm(z, gamma, beta, eps=eps), x, dy, h=1e-5 * scale)
    tol_close(got, num, 1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_layer_norm_backward_saved_matches_backward(case):
    x, dy, gamma, _, eps, _ = make_case(*case)
    x_hat, std_inv = layer_norm_stats(x, eps)
    g = dy if gamma is None else dy * gamma
    np.testing.assert_allclose(layer_norm_backward_saved(g, x_hat, std_inv),
                               layer_norm_backward(dy, x, gamma, eps=eps), rtol=1e-12, atol=0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_layer_norm_param_grads(case):
    x, dy, gamma, beta, eps, _ = make_case(*case)
    g = np.ones(x.shape[-1]) if gamma is None else gamma
    dgamma, dbeta = layer_norm_param_grads(dy, x, eps=eps)
    assert dgamma.shape == dbeta.shape == (x.shape[-1],)
    tol_close(dgamma, grad(lambda gg: anp.sum(dy * ln_autograd(x, gg, beta, eps)))(g), 1e-9)
    tol_close(dbeta, grad(lambda bb: anp.sum(dy * ln_autograd(x, g, bb, eps)))(beta), 1e-12)
    tol_close(dgamma, numerical_gradient(lambda gg: layer_norm(x, gg, beta, eps=eps), g, dy), 1e-6)
    tol_close(dbeta, numerical_gradient(lambda bb: layer_norm(x, g, bb, eps=eps), beta, dy), 1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rms_norm_backward(case):
    x, dy, gamma, _, eps, scale = make_case(*case)
    got = rms_norm_backward(dy, x, gamma, eps=eps)
    g = np.ones(x.shape[-1]) if gamma is None else gamma
    want = grad(lambda z: anp.sum(dy * rms_autograd(z, g, eps)))(x)
    tol_close(got, want, 1e-9)
    num = numerical_gradient(lambda z: rms_norm(z, gamma, eps=eps), x, dy, h=1e-5 * scale)
    tol_close(got, num, 1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rms_norm_param_grad(case):
    x, dy, gamma, _, eps, _ = make_case(*case)
    g = np.ones(x.shape[-1]) if gamma is None else gamma
    dgamma = rms_norm_param_grad(dy, x, eps=eps)
    assert dgamma.shape == (x.shape[-1],)
    tol_close(dgamma, grad(lambda gg: anp.sum(dy * rms_autograd(x, gg, eps)))(g), 1e-9)
    tol_close(dgamma, numerical_gradient(lambda gg: rms_norm(x, gg, eps=eps), g, dy), 1e-6)


def test_forward_passes_match_autograd_reference():
    """The reference formulas used above agree with the library's forward passes (so they test the same map)."""
    x, _, gamma, beta, eps, _ = make_case(*CASES[1])
    np.testing.assert_allclose(layer_norm(x, gamma, beta, eps=eps), ln_autograd(x, gamma, beta, eps), rtol=1e-12)
    np.testing.assert_allclose(rms_norm(x, gamma, eps=eps), rms_autograd(x, gamma, eps), rtol=1e-12)


def test_dropping_the_mean_terms_gives_a_wrong_gradient():
    """The backward pass is not 'std_inv * dy': the two correction terms change the answer (a test that can fail)."""
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    dy = np.array([0.1, -0.2, 0.3, -0.1, 0.2])
    _, std_inv = layer_norm_stats(x)
    naive = std_inv * dy
    got = layer_norm_backward(dy, x)
    assert np.max(np.abs(got - naive)) > 1e-2
    want = grad(lambda z: anp.sum(dy * ln_autograd(z, 1.0, 0.0, 1e-5)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-9)


# ==============================================================================================================
# 5. Low-precision formats against their defining formulas and brute force
# ==============================================================================================================

def formula_values(exp_bits: int, man_bits: int) -> np.ndarray:
    """Every finite value of a binary format from sign * (1 + m/2**p) * 2**(e - bias), plus subnormals."""
    bias = 2 ** (exp_bits - 1) - 1
    m = np.arange(2**man_bits, dtype=np.float64)
    vals = [m / 2**man_bits * 2.0 ** (1 - bias)]  # subnormals and zero
    for e in range(1, 2**exp_bits - 1):
        vals.append((1 + m / 2**man_bits) * 2.0 ** (e - bias))
    pos = np.concatenate(vals)
    return np.unique(np.concatenate([-pos, pos]))


def brute_nearest_even(x: float, table: np.ndarray, man_bits: int, emin: int) -> float:
    """Nearest table value to x; on a tie the one whose last mantissa bit is 0 (found by exact scaling)."""
    i = np.searchsorted(table, x)
    cands = [table[j] for j in (i - 1, i) if 0 <= j < table.size]
    dists = [abs(c - x) for c in cands]
    best = [c for c, d in zip(cands, dists, strict=True) if d == min(dists)]
    if len(best) == 1:
        return best[0]

    def last_bit(v):
        if v == 0:
            return 0
        e = max(np.floor(np.log2(abs(v))), emin)  # subnormals share the smallest exponent
        return int(abs(v) / 2.0 ** (e - man_bits)) & 1

    return [c for c in best if last_bit(c) == 0][0]


def test_grids_match_the_format_definitions():
    np.testing.assert_array_equal(grid("float16"), formula_values(5, 10))
    np.testing.assert_array_equal(grid("bfloat16"), formula_values(8, 7))


def test_bfloat16_ties_go_to_even_by_hand():
    # 1 + 2**-8 is halfway between 1 and 1 + 2**-7: the even neighbour is 1
    # 1 + 3 * 2**-8 is halfway between 1 + 2**-7 and 1 + 2**-6: the even neighbour is 1 + 2**-6
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-20], dtype=np.float32)
    np.testing.assert_array_equal(bfloat16_round(x), [1.0, 1 + 2**-6, -1.0, 1 + 2**-7])


def test_bfloat16_overflow_and_extremes():
    top = grid("bfloat16")[-1]
    assert top == (2 - 2**-7) * 2.0**127
    assert bfloat16_round(np.float32(top)) == top
    assert np.isinf(bfloat16_round(np.finfo(np.float32).max))  # beyond the halfway point above `top`
    assert bfloat16_round(np.float32(0.0)) == 0.0


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-(2.0**127), max_value=2.0**127))
def test_bfloat16_round_is_the_nearest_representable(x):
    assert bfloat16_round(np.float32(x)) == brute_nearest_even(float(np.float32(x)), grid("bfloat16"), 7, -126)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, min_value=-65000, max_value=65000))
def test_float16_round_is_the_nearest_representable(x):
    assert round_to(x, "float16") == brute_nearest_even(x, formula_values(5, 10), 10, -14)


def test_round_to_keeps_higher_precisions():
    x = np.array([0.1, 1 / 3, 100.5])
    np.testing.assert_array_equal(round_to(x, "float64"), x)
    np.testing.assert_array_equal(round_to(x, "float32"), x.astype(np.float32).astype(np.float64))
    assert np.isinf(round_to(70000.0, "float16"))
    with pytest.raises(ValueError, match="format"):
        round_to(x, "float8")


def test_levels_between_counts_by_hand():
    # [1, 2] holds 2**p values of the binade [1, 2) plus 2 itself
    assert levels_between(1, 2, "bfloat16") == 2**7 + 1
    assert levels_between(1, 2, "float16") == 2**10 + 1
    assert levels_between(0, 0, "float16") == 1
    assert levels_between(1.001, 1.002, "bfloat16") == 0
    with pytest.raises(ValueError):
        levels_between(2, 1, "float16")


def test_spacing_by_hand():
    np.testing.assert_array_equal(spacing([1.0, 0.75, 100.0], "bfloat16"), [2**-7, 2**-8, 2**-1])
    np.testing.assert_array_equal(spacing([1.0, 0.75], "float16"), [2**-10, 2**-11])
    assert spacing(1.0, "float32") == 2.0**-23


# ==============================================================================================================
# 6. Counting arithmetic: the loops compute the norms, and the tallies match counts by hand
# ==============================================================================================================

@pytest.mark.parametrize("d", [1, 6, 512])
def test_layer_norm_tally_matches_hand_count(d):
    # sum (D adds), centre (D subs), square-and-sum (D muls, D adds), scale (D muls), gamma (D muls),
    # beta (D adds), + eps (1 add); divisions: mean, mean square, reciprocal; one square root
    got = count_ops("layer_norm", d)
    assert got["ops"] == {"add/sub": 4 * d + 1, "div": 3, "mul": 3 * d, "sqrt": 1}
    assert got["passes"] == 3


@pytest.mark.parametrize("d", [1, 6, 512])
def test_rms_norm_tally_matches_hand_count(d):
    got = count_ops("rms_norm", d)
    assert got["ops"] == {"add/sub": d + 1, "div": 2, "mul": 3 * d, "sqrt": 1}
    assert got["passes"] == 2


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_loops_compute_the_library_norm(norm):
    got = count_ops(norm, 37, eps=1e-3, seed=5)
    np.testing.assert_allclose(got["output"], getattr(nl, norm)(got["x"], eps=1e-3), rtol=1e-12, atol=1e-14)


def test_counted_records_each_operator_once():
    Counted.tally.clear()
    a, b = Counted(3.0), Counted(2.0)
    r = (1 - a) * b / 4 + 2 / b
    assert r.value == pytest.approx((1 - 3.0) * 2.0 / 4 + 2 / 2.0)
    assert Counted.tally == {"add/sub": 2, "mul": 1, "div": 2}


def test_unknown_norm_is_rejected():
    with pytest.raises(ValueError, match="unknown norm"):
        count_ops("batch_norm", 4)


# ==============================================================================================================
# 7. Bad input fails loudly, with a message that names the argument, what it got and what is allowed
# ==============================================================================================================

X = np.array([[1.0, 3.0, 2.0, 5.0], [4.0, 0.0, 1.0, 2.0]])
DY = np.ones_like(X)

def ones_like_input(x):
    """An upstream gradient for x; any shape will do when x itself is malformed (x is checked first)."""
    try:
        return np.ones(np.shape(x))
    except ValueError:
        return np.ones(2)


# Every public function that takes an input array x (..., D), called with that x in position `x`.
ARRAY_FUNCS = {
    "layer_norm": lambda x: nl.layer_norm(x),
    "layer_norm_stats": lambda x: nl.layer_norm_stats(x),
    "rms_norm": lambda x: nl.rms_norm(x),
    "rms_norm_stats": lambda x: nl.rms_norm_stats(x),
    "batch_norm": lambda x: nl.batch_norm(x),
    "mean_var": lambda x: nl.mean_var(x),
    "layer_norm_backward": lambda x: nl.layer_norm_backward(ones_like_input(x), x),
    "layer_norm_param_grads": lambda x: nl.layer_norm_param_grads(ones_like_input(x), x),
    "rms_norm_backward": lambda x: nl.rms_norm_backward(ones_like_input(x), x),
    "rms_norm_param_grad": lambda x: nl.rms_norm_param_grad(ones_like_input(x), x),
    "run_stack": lambda x: nl.run_stack(x, 2, "pre"),
    "numerical_gradient": lambda x: nl.numerical_gradient(nl.layer_norm, x, ones_like_input(x)),
}
# Functions with an eps argument.
EPS_FUNCS = {
    "layer_norm": lambda eps: nl.layer_norm(X, eps=eps),
    "layer_norm_stats": lambda eps: nl.layer_norm_stats(X, eps),
    "rms_norm": lambda eps: nl.rms_norm(X, eps=eps),
    "rms_norm_stats": lambda eps: nl.rms_norm_stats(X, eps),
    "batch_norm": lambda eps: nl.batch_norm(X, eps=eps),
    "layer_norm_backward": lambda eps: nl.layer_norm_backward(DY, X, eps=eps),
    "layer_norm_param_grads": lambda eps: nl.layer_norm_param_grads(DY, X, eps=eps),
    "rms_norm_backward": lambda eps: nl.rms_norm_backward(DY, X, eps=eps),
    "rms_norm_param_grad": lambda eps: nl.rms_norm_param_grad(DY, X, eps=eps),
    "run_stack": lambda eps: nl.run_stack(X[0], 2, "post", eps=eps),
    "sensitivity": lambda eps: nl.sensitivity(X[0], 2, "post", eps=eps),
    "stack_curves": lambda eps: nl.stack_curves(X[0], 2, "post", eps=eps),
}


def funcs(table):
    return pytest.mark.parametrize("name", list(table))


# ---- the input array ---------------------------------------------------------------------------------
@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("empty", [[], np.zeros((3, 0)), np.zeros((0, 4))], ids=["list", "3x0", "0x4"])
def test_empty_input_is_rejected(name, empty):
    with pytest.raises(ValueError, match="empty"):
        ARRAY_FUNCS[name](empty)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(name, bad):
    x = X.copy()
    x[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        ARRAY_FUNCS[name](x)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize(
    "bad,what",
    [
        (["a", "b", "c"], "strings"),
        (np.array([1.0, 2.0, None], dtype=object), "Python objects"),
        ([[1, 2], {3: 4}], "Python objects|rectangular"),
        (np.array([1 + 2j, 3.0]), "complex"),
        ([[1.0, 2.0], [3.0]], "rectangular|Python objects"),
        (b"abc", "bytes|dimension"),
    ],
    ids=["strings", "objects", "dict-inside", "complex", "ragged", "bytes"],
)
def test_non_numeric_input_is_a_type_error(name, bad, what):
    err = TypeError if name != "numerical_gradient" or not isinstance(bad, bytes) else (TypeError, ValueError)
    with pytest.raises(err, match=what):
        ARRAY_FUNCS[name](bad)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("scalar", [3.0, np.float32(2.0), 7])
def test_scalar_input_is_rejected(name, scalar):
    with pytest.raises(ValueError, match="scalar|dimension"):
        ARRAY_FUNCS[name](scalar)


# ---- eps -----------------------------------------------------------------------------------------------
@funcs(EPS_FUNCS)
@pytest.mark.parametrize("eps", [-1e-5, -1.0, float("nan"), float("inf")])
def test_bad_eps_value(name, eps):
    with pytest.raises(ValueError, match="eps"):
        EPS_FUNCS[name](eps)


@funcs(EPS_FUNCS)
@pytest.mark.parametrize("eps", ["1e-5", None, [1e-5], True, 1e-5j], ids=["str", "None", "list", "bool", "complex"])
def test_non_number_eps_is_a_type_error(name, eps):
    with pytest.raises(TypeError, match="eps"):
        EPS_FUNCS[name](eps)


def test_numpy_scalar_and_int_eps_are_accepted():
    np.testing.assert_allclose(nl.layer_norm(X, eps=np.float32(0.5)), nl.layer_norm(X, eps=0.5), rtol=1e-7)
    np.testing.assert_array_equal(nl.layer_norm(X, eps=1), nl.layer_norm(X, eps=1.0))


# ---- parameters and upstream gradients --------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), (5,), (1, 4), (2, 4), ()])
@pytest.mark.parametrize(
    "call",
    [
        lambda p: nl.layer_norm(X, gamma=p),
        lambda p: nl.layer_norm(X, beta=p),
        lambda p: nl.rms_norm(X, gamma=p),
        lambda p: nl.layer_norm_backward(DY, X, gamma=p),
        lambda p: nl.rms_norm_backward(DY, X, gamma=p),
    ],
    ids=["ln-gamma", "ln-beta", "rms-gamma", "ln-bwd-gamma", "rms-bwd-gamma"],
)
def test_parameter_shape_must_be_d(call, shape):
    with pytest.raises(ValueError, match=r"(gamma|beta) must (be an array of|have) shape \(D,\) = \(4,\)"):
        call(np.ones(shape))


@pytest.mark.parametrize(
    "call",
    [nl.layer_norm_backward, nl.rms_norm_backward, nl.layer_norm_param_grads, nl.rms_norm_param_grad],
)
@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 4), (2, 4, 1)])
def test_upstream_shape_must_match_x(call, shape):
    with pytest.raises(ValueError, match="dy has shape"):
        call(np.ones(shape), X)


@pytest.mark.parametrize(
    "call",
    [nl.layer_norm_backward, nl.rms_norm_backward, nl.layer_norm_param_grads, nl.rms_norm_param_grad],
)
def test_upstream_is_checked_like_an_input(call):
    with pytest.raises(ValueError, match="dy contains 1 NaN"):
        call(np.where(X == 0.0, np.nan, 1.0), X)
    with pytest.raises(TypeError, match="dy holds strings"):
        call(np.full(X.shape, "a"), X)


def test_gamma_with_nan_is_rejected():
    with pytest.raises(ValueError, match="gamma contains"):
        nl.layer_norm(X, gamma=[1.0, np.nan, 1.0, 1.0])


# ---- residual stacks ---------------------------------------------------------------------------------------
STACK_FUNCS = {
    "run_stack": lambda depth, placement: nl.run_stack(X[0], depth, placement),
    "sensitivity": lambda depth, placement: nl.sensitivity(X[0], depth, placement),
    "sensitivity_fd": lambda depth, placement: nl.sensitivity(X[0], depth, placement, method="finite_difference"),
    "sensitivity_curve": lambda depth, placement: nl.sensitivity_curve(X[0], depth, placement),
    "stack_curves": lambda depth, placement: nl.stack_curves(X[0], depth, placement),
}


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("depth", [0, -3])
def test_depth_below_one(name, depth):
    with pytest.raises(ValueError, match="depth must be >= 1|max_depth"):
        STACK_FUNCS[name](depth, "pre")


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("depth", [2.0, 1.5, "3", True, None])
def test_depth_not_a_whole_number(name, depth):
    with pytest.raises(TypeError, match="depth"):
        STACK_FUNCS[name](depth, "pre")


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("placement", ["Pre", "middle", "", None, 1])
def test_unknown_placement(name, placement):
    with pytest.raises(ValueError, match="unknown placement"):
        STACK_FUNCS[name](3, placement)


@pytest.mark.parametrize("method", ["exact ", "fd", "autograd", None])
def test_unknown_method(method):
    with pytest.raises(ValueError, match="unknown method"):
        nl.sensitivity(X[0], 3, "pre", method=method)


@pytest.mark.parametrize("method", ["exact", "finite_difference"])
def test_sensitivity_needs_one_vector_and_a_valid_component(method):
    with pytest.raises(ValueError, match=r"one vector of shape \(D,\)"):
        nl.sensitivity(X, 3, "pre", method=method)
    for component in (4, -5, 1.0, True, "0"):
        with pytest.raises(ValueError, match="component"):
            nl.sensitivity(X[0], 3, "pre", method=method, component=component)


@pytest.mark.parametrize("h", [0.0, -1e-3, float("nan"), float("inf"), "0.1", True])
def test_bad_finite_difference_step(h):
    with pytest.raises(ValueError, match="h must be"):
        nl.sensitivity(X[0], 3, "pre", method="finite_difference", h=h)
    with pytest.raises(ValueError, match="h must be"):
        nl.numerical_gradient(nl.layer_norm, X, DY, h=h)


def test_sublayer_must_be_callable_and_exact_needs_jvp():
    with pytest.raises(TypeError, match="sublayer must be callable"):
        nl.run_stack(X[0], 2, "pre", sublayer=3.0)
    with pytest.raises(TypeError, match="jvp"):
        nl.sensitivity(X[0], 2, "pre", sublayer=lambda v: 0.5 * v)
    # a plain function is fine for the finite-difference method
    assert nl.sensitivity(X[0], 2, "none", method="finite_difference", sublayer=lambda v: 0.5 * v) > 0


def test_numerical_gradient_checks_its_function_and_upstream():
    with pytest.raises(TypeError, match="f must be a function"):
        nl.numerical_gradient("layer_norm", X, DY)
    with pytest.raises(ValueError, match="upstream"):
        nl.numerical_gradient(nl.layer_norm, X, np.ones((2, 3)))


# ---- eps = 0 on a degenerate row: NaN for that row only, and a warning that says why -----------------------
def only_our_warnings(record):
    """Every recorded warning is the library's RuntimeWarning (no stray numpy 'invalid value' ones)."""
    msgs = [str(w.message) for w in record]
    assert msgs and all("is zero" in m and "eps is 0" in m for m in msgs), msgs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: nl.layer_norm(x, eps=0),
        lambda x: nl.layer_norm_stats(x, eps=0)[0],
        lambda x: nl.layer_norm(x, gamma=np.full(4, 2.0), beta=np.ones(4), eps=0),
        lambda x: nl.layer_norm_backward(np.ones_like(x), x, eps=0),
        lambda x: nl.batch_norm(x.T, eps=0).T,
    ],
    ids=["layer_norm", "stats", "affine", "backward", "batch_norm"],
)
def test_zero_variance_row_with_eps_zero(call, dtype):
    x = np.array([[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 2.0, 5.0], [-2.0, -2.0, -2.0, -2.0]], dtype=dtype)
    with pytest.warns(RuntimeWarning, match="variance is zero in 2 row") as record:
        y = call(x)
    only_our_warnings(record)
    assert np.all(np.isnan(y[0])) and np.all(np.isnan(y[2]))
    assert np.all(np.isfinite(y[1]))


def test_zero_variance_row_with_positive_eps_is_finite_and_silent():
    x = np.array([[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 2.0, 5.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = nl.layer_norm(x)
    np.testing.assert_array_equal(y[0], 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: nl.rms_norm(x, eps=0),
        lambda x: nl.rms_norm_stats(x, eps=0)[0],
        lambda x: nl.rms_norm(x, gamma=np.full(4, 2.0), eps=0),
        lambda x: nl.rms_norm_backward(np.ones_like(x), x, eps=0),
    ],
    ids=["rms_norm", "stats", "gamma", "backward"],
)
def test_all_zero_row_in_rms_norm_with_eps_zero(call, dtype):
    x = np.array([[1.0, 3.0, 2.0, 5.0], [0.0, 0.0, 0.0, 0.0]], dtype=dtype)
    with pytest.warns(RuntimeWarning, match="mean square is zero in 1 row") as record:
        y = call(x)
    only_our_warnings(record)
    assert np.all(np.isnan(y[1]))
    assert np.all(np.isfinite(y[0]))


# ---- issue 22's faults: each one now gets an error naming the argument, what it got and what is allowed ----
@pytest.mark.parametrize(
    "call,func",
    [
        (lambda: nl.layer_norm(X, 1e-5), "layer_norm"),
        (lambda: nl.rms_norm(X, 1e-5), "rms_norm"),
        (lambda: nl.layer_norm_backward(DY, X, 1e-5), "layer_norm_backward"),
        (lambda: nl.rms_norm_backward(DY, X, 1e-5), "rms_norm_backward"),
    ],
    ids=["layer_norm", "rms_norm", "layer_norm_backward", "rms_norm_backward"],
)
def test_eps_passed_where_gamma_goes_says_pass_it_by_name(call, func):
    with pytest.raises(ValueError) as err:
        call()
    msg = str(err.value)
    assert f"If you meant eps, pass it by name: {func}(x, eps=1e-05)" in msg, msg
    assert "got the single number 1e-05" in msg and "shape (D,) = (4,)" in msg


def test_a_number_for_gamma_names_the_shape_and_the_fix():
    with pytest.raises(ValueError) as err:
        nl.layer_norm(X, gamma=2.0)
    msg = str(err.value)
    assert "gamma must be an array of shape (D,) = (4,)" in msg and "got the single number 2.0" in msg
    assert "np.full(4, 2.0)" in msg
    # and the suggested fix works
    np.testing.assert_array_equal(nl.layer_norm(X, gamma=np.full(4, 2.0)), 2.0 * nl.layer_norm(X))


def test_layer_norm_stats_still_takes_eps_second():
    np.testing.assert_array_equal(nl.layer_norm_stats(X, 0.5)[0], nl.layer_norm(X, eps=0.5))


@pytest.mark.parametrize("dtype,values", [
    (np.float32, [1e19, -1e19, 3e19]),             # squares overflow float32 (max 3.4e38)
    (np.float32, [3e38, -3e38, 1e38, 2e38]),        # near the largest float32
    (np.float64, [1e160, -1e160, 3e160]),           # squares overflow float64 (max 1.8e308)
    (np.float64, [1.7e308, -1.7e308, 1e308]),       # even the sum and the mean overflow unscaled
])
def test_huge_but_finite_inputs_normalize_correctly(dtype, values):
    x = np.array(values, dtype=dtype)
    exact = np.array([float(v) for v in (np.array(values) / max(abs(v) for v in values))])  # same shape, small
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no overflow warning, no silent zeros
        y_ln, y_rms = nl.layer_norm(x), nl.rms_norm(x)
        x_hat, std_inv = nl.layer_norm_stats(x)
        _, rms = nl.rms_norm_stats(x)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y_ln, nl.layer_norm(exact, eps=0), rtol=tol, atol=tol)
    np.testing.assert_allclose(y_rms, nl.rms_norm(exact, eps=0), rtol=tol, atol=tol)
    assert np.max(np.abs(y_ln)) > 1 and np.max(np.abs(y_rms)) > 1 and y_ln.dtype == dtype   # not zeros
    # the statistics are on the input's scale: std_inv * std = 1, rms = sqrt(mean(x^2))
    xs = np.array(values, dtype=np.float64) / max(abs(v) for v in values)
    scale = max(abs(v) for v in values)
    assert float(std_inv[0]) * np.std(xs) * scale == pytest.approx(1.0, rel=tol * 10)
    assert float(rms[0]) == pytest.approx(np.sqrt(np.mean(xs * xs)) * scale, rel=tol * 10)


@pytest.mark.parametrize("dtype,k", [(np.float64, 1000), (np.float64, 1070), (np.float32, 80), (np.float32, 140)])
def test_tiny_inputs_with_eps_zero_normalize_like_their_scaled_up_copy(dtype, k):
    """Both norms are scale-invariant at eps = 0: x * 2**-k must give x's output, even where the squares of
    x * 2**-k underflow to zero (k = 1070 and 140 put the entries themselves among the subnormals; there the
    statistics may pass the largest float: 1 / std is then inf, as its true value is)."""
    x = np.array([[1.0, 2.0, -1.5, 0.25], [3.0, 3.0, 3.0, -3.0]], dtype=dtype)
    tiny = x * np.ldexp(dtype(1), -k)                   # exact: a power of two
    assert np.all(tiny != 0) and np.all(tiny * tiny == 0)   # the plain formula would divide by zero
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no 0/0 warning: these rows are not zero
        np.testing.assert_array_equal(nl.layer_norm(tiny, eps=0), nl.layer_norm(x, eps=0))
        np.testing.assert_array_equal(nl.rms_norm(tiny, eps=0), nl.rms_norm(x, eps=0))
        _, rms = nl.rms_norm_stats(tiny, eps=0)
    # the statistics stay on the input's scale: rms of the tiny rows is rms of x times 2**-k, where representable
    want = np.sqrt(np.mean(np.asarray(x, np.float64) ** 2, axis=-1, keepdims=True)) * 2.0 ** -k
    np.testing.assert_allclose(rms.astype(np.float64), want.astype(dtype).astype(np.float64), rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype,eps", [(np.float64, 1e-5), (np.float64, 1e-300), (np.float32, 1e-5),
                                       (np.float32, 1e-40)])
def test_tiny_inputs_with_a_positive_eps_follow_the_scaled_formula(dtype, eps):
    """Scaling x by 2**-k and eps by 2**-2k leaves both norms unchanged; for tiny rows the library must agree
    with the same identity worked the other way, in float64 on the scaled-up copy."""
    k = 1000 if dtype == np.float64 else 120
    x = np.array([1.0, 2.0, -1.5, 0.25], dtype=dtype)
    tiny = x * np.ldexp(dtype(1), -k)
    e_up = float(eps) * 2.0 ** (2 * k) if dtype == np.float32 else None   # float32: the eps of the scaled-up copy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got_ln, got_rms = nl.layer_norm(tiny, eps=eps), nl.rms_norm(tiny, eps=eps)
    if dtype == np.float32:
        want_ln = nl.layer_norm(x.astype(np.float64), eps=e_up)
        want_rms = nl.rms_norm(x.astype(np.float64), eps=e_up)
        np.testing.assert_allclose(got_ln, want_ln, rtol=1e-5, atol=1e-30)
        np.testing.assert_allclose(got_rms, want_rms, rtol=1e-5, atol=1e-30)
    else:   # eps of the scaled-up copy: 1e-5 * 2**2000 overflows, so eps wins: y = x_tiny / sqrt(eps) (var ~ 0)
        dev = tiny - np.mean(tiny)
        np.testing.assert_allclose(got_ln, dev / np.sqrt(eps + np.mean(dev * dev)), rtol=1e-12, atol=0)
        np.testing.assert_allclose(got_rms, tiny / np.sqrt(eps + np.mean(tiny * tiny)), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaling_a_row_first_changes_no_bit_of_ordinary_results(dtype):
    """Rows are divided by a power of two before squaring; that division is exact, so ordinary inputs give
    exactly the plain formula's bits (written out here without the scaling)."""
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(64, 12)) * rng.uniform(0.01, 1e4, (64, 1)) + rng.uniform(-1e3, 1e3, (64, 1))).astype(dtype)
    mean = np.mean(x, axis=-1, keepdims=True, dtype=np.float64).astype(dtype)
    dev = x - mean
    var = np.mean(dev * dev, axis=-1, keepdims=True, dtype=np.float64).astype(dtype)
    plain_ln = dev * (1 / np.sqrt(var + dtype(1e-5)))
    plain_rms = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True, dtype=np.float64).astype(dtype) + dtype(1e-5))
    np.testing.assert_array_equal(nl.layer_norm(x), plain_ln)
    np.testing.assert_array_equal(nl.rms_norm(x), plain_rms)
    np.testing.assert_array_equal(nl.layer_norm_stats(x)[1], 1 / np.sqrt(var + dtype(1e-5)))


@pytest.mark.parametrize(
    "args,err,match",
    [
        (([1.0, 2.0], [0.5, -0.5], [1.0]), None, None),                                   # accepted: lists
        (("abc", [0.5, -0.5], [1.0]), TypeError, "g holds strings"),
        (([1.0, 2.0], [0.5, np.nan], [1.0]), ValueError, "x_hat contains 1 NaN"),
        (([np.inf, 2.0], [0.5, -0.5], [1.0]), ValueError, "g contains 1 NaN or infinite"),
        (([1.0, 2.0], [0.5, -0.5], [np.nan]), ValueError, "std_inv contains 1 NaN"),
        (([1.0, 2.0, 3.0], [0.5, -0.5], [1.0]), ValueError, r"g has shape \(3,\) but x_hat has shape \(2,\)"),
        (([1.0, 2.0], [0.5, -0.5], [[1.0]]), ValueError, r"std_inv must have shape \(1,\)"),
        (([[1.0, 2.0]] * 3, [[0.5, -0.5]] * 3, [1.0, 1.0, 1.0]), ValueError, r"std_inv must have shape \(3, 1\)"),
        (([1.0, 2.0], [0.5, -0.5], [-1.0]), ValueError, "std_inv holds negative values"),
        (([1.0, 2.0], [], [1.0]), ValueError, "x_hat is empty"),
    ],
)
def test_layer_norm_backward_saved_checks_its_inputs_like_the_forward_functions(args, err, match):
    if err is None:
        got = nl.layer_norm_backward_saved(*args)
        np.testing.assert_allclose(got, nl.layer_norm_backward_saved(*(np.array(a) for a in args)))
        return
    with pytest.raises(err, match=match):
        nl.layer_norm_backward_saved(*args)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(gain="a"), TypeError, "Affine gain must be a real number.*got str 'a'"),
    (dict(bias=[0.1]), TypeError, "Affine bias must be a real number.*got list"),
    (dict(gain=True), TypeError, "Affine gain must be a real number"),
    (dict(gain=float("nan")), ValueError, "Affine gain must be finite"),
])
def test_affine_checks_its_numbers(kwargs, err, match):
    with pytest.raises(err, match=match):
        Affine(**kwargs)
    assert Affine(gain=np.float32(2.0), bias=1)(np.ones(2)).tolist() == [3.0, 3.0]


@pytest.mark.parametrize("call", [
    lambda d: nl.rms_norm(X, sum_dtype=d),
    lambda d: nl.rms_norm_stats(X, sum_dtype=d),
    lambda d: one_pass_var(X, acc_dtype=d),
], ids=["rms_norm", "rms_norm_stats", "one_pass_var"])
@pytest.mark.parametrize("dtype", ["int8", "floaty", np.complex64, "float128", 3])
def test_accumulator_dtype_lists_what_is_allowed(call, dtype):
    with pytest.raises(ValueError, match="must be None .* or one of float16, float32, float64"):
        call(dtype)


@pytest.mark.parametrize("axis,err", [(2, ValueError), (-3, ValueError), ("0", TypeError), (1.0, TypeError)])
def test_mean_var_axis_is_checked(axis, err):
    with pytest.raises(err, match="axis"):
        nl.mean_var(X, axis=axis)


def test_a_sublayer_that_changes_the_shape_is_named():
    with pytest.raises(ValueError, match=r"sublayer must return an array of its input's shape \(4,\).*shape \(2,\)"):
        nl.run_stack(X[0], 2, "pre", sublayer=lambda v: v[:2])


@pytest.mark.parametrize("d,err", [(0, ValueError), ("4", TypeError), (2.5, TypeError)])
def test_count_ops_checks_its_length(d, err):
    with pytest.raises(err, match="d must be"):
        count_ops("layer_norm", d)


@pytest.mark.parametrize("lo,hi", [("a", 2.0), (1.0, None), (float("nan"), 1.0), (True, 2.0)])
def test_levels_between_names_its_bounds(lo, hi):
    with pytest.raises(TypeError, match="levels_between needs finite real numbers for lo and hi"):
        levels_between(lo, hi, "float16")
