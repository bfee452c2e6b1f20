"""Algebraic properties of the norms, their gradients and their dtypes, driven by hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from normlab_core import (
    batch_norm,
    layer_norm,
    layer_norm_backward,
    layer_norm_param_grads,
    layer_norm_stats,
    mean_var,
    rms_norm,
    rms_norm_backward,
    rms_norm_param_grad,
    rms_norm_stats,
    run_stack,
)

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


@pytest.mark.parametrize("dtype,expected", [(np.float32, np.float32), (np.float64, np.float64),
                                            (np.float16, np.float32)])
def test_float_dtypes_are_kept(dtype, expected):
    outs = all_outputs(X_INT.astype(dtype))
    for name, out in outs.items():
        assert out.dtype == expected, name


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
