"""The complete LayerNorm/RMSNorm backward pass (section 23.8): parameter gradients, the (x, mean, rstd) cache and
its memory count, checked against float64 central differences, algebraic identities and the other backward paths."""

from __future__ import annotations

import numpy as np
import pytest

from normlab_core import (
    layer_norm,
    layer_norm_backward,
    layer_norm_backward_from_cache,
    layer_norm_backward_saved,
    layer_norm_cache_bytes,
    layer_norm_forward,
    layer_norm_param_grads,
    layer_norm_stats,
    numerical_gradient,
    rms_norm,
    rms_norm_param_grad,
)
from normlab_core import transformer as tf

SHAPES = [(5,), (3, 6), (2, 3, 4), (4, 2, 7)]
EPSES = [1e-5, 0.0, 1e-1]


def case(shape, seed, eps=1e-5, scale=1.0, offset=0.0):
    """x, dy, gamma, beta in float64 for one shape (fixed seed)."""
    rng = np.random.default_rng(4200 + seed)
    d = shape[-1]
    x = scale * (rng.normal(size=shape) + offset)
    return x, rng.normal(size=shape), rng.normal(1.0, 0.4, size=d), rng.normal(0.0, 0.5, size=d)


def close(got, want, rtol):
    """Agreement relative to the largest entry of want (entries near 0 are fine)."""
    err = np.max(np.abs(np.asarray(got) - want))
    assert err <= rtol * max(np.max(np.abs(want)), 1e-300), (err, np.max(np.abs(want)))


# ---- against float64 central differences ------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", EPSES)
def test_cached_backward_matches_finite_differences(shape, eps):
    x, dy, gamma, beta = case(shape, len(shape), eps, scale=2.0, offset=1.5)
    _, cache = layer_norm_forward(x, gamma, beta, eps)
    dx, dgamma, dbeta = layer_norm_backward_from_cache(dy, cache, gamma)
    close(dx, numerical_gradient(lambda z: layer_norm(z, gamma, beta, eps), x, dy, h=1e-5), 1e-6)
    close(dgamma, numerical_gradient(lambda g: layer_norm(x, g, beta, eps), gamma, dy, h=1e-5), 1e-8)
    close(dbeta, numerical_gradient(lambda b: layer_norm(x, gamma, b, eps), beta, dy, h=1e-5), 1e-8)


@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm_param_grads_match_finite_differences(shape):
    x, dy, gamma, beta = case(shape, 10 + len(shape), scale=0.3, offset=-4.0)
    dgamma, dbeta = layer_norm_param_grads(dy, x)
    close(dgamma, numerical_gradient(lambda g: layer_norm(x, g, beta), gamma, dy, h=1e-4), 1e-8)
    close(dbeta, numerical_gradient(lambda b: layer_norm(x, gamma, b), beta, dy, h=1e-4), 1e-8)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", EPSES)
def test_rms_norm_param_grad_matches_finite_differences(shape, eps):
    x, dy, gamma, _ = case(shape, 20 + len(shape), eps, offset=0.7)
    got = rms_norm_param_grad(dy, x, eps)
    close(got, numerical_gradient(lambda g: rms_norm(x, g, eps), gamma, dy, h=1e-5), 1e-8)


def test_a_wrong_param_gradient_fails_the_check():
    """The finite-difference comparison can fail: dgamma summed over x instead of x_hat is caught."""
    x, dy, gamma, beta = case((3, 6), 30, offset=2.0)
    num = numerical_gradient(lambda g: layer_norm(x, g, beta), gamma, dy, h=1e-5)
    wrong = np.sum(dy * x, axis=0)
    with pytest.raises(AssertionError):
        close(wrong, num, 1e-6)


# ---- algebraic identities -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
def test_input_gradient_sums_to_zero_and_is_orthogonal_to_x_hat(shape):
    x, dy, gamma, beta = case(shape, 40 + len(shape), scale=5.0, offset=3.0)
    _, cache = layer_norm_forward(x, gamma, beta, eps=0.0)
    dx, _, _ = layer_norm_backward_from_cache(dy, cache, gamma)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) / x.std(axis=-1, keepdims=True)
    size = np.max(np.abs(dx)) * np.max(np.abs(x_hat)) * shape[-1]
    assert np.max(np.abs(dx.sum(axis=-1))) <= 1e-12 * size
    assert np.max(np.abs(np.sum(dx * x_hat, axis=-1))) <= 1e-12 * size


def test_with_eps_the_gradient_leans_on_x_hat_by_the_predicted_amount():
    """With eps > 0, dx . x_hat = s * (g . x_hat) * eps / (var + eps) per row, not 0."""
    eps = 0.05
    x, dy, gamma, beta = case((4, 6), 50, eps)
    _, cache = layer_norm_forward(x, gamma, beta, eps)
    dx, _, _ = layer_norm_backward_from_cache(dy, cache, gamma)
    var = x.var(axis=-1)
    s = 1 / np.sqrt(var + eps)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * s[:, None]
    want = s * np.sum(dy * gamma * x_hat, axis=-1) * eps / (var + eps)
    np.testing.assert_allclose(np.sum(dx * x_hat, axis=-1), want, rtol=1e-10, atol=1e-14)
    assert np.min(np.abs(want)) > 1e-4          # not a test that passes by being zero


@pytest.mark.parametrize("shape", SHAPES)
def test_scaling_gamma_and_beta_together_moves_the_loss_by_dy_dot_y(shape):
    """d/dc of L(c gamma, c beta) at c = 1 is gamma . dgamma + beta . dbeta, and equals sum(dy * y)."""
    x, dy, gamma, beta = case(shape, 60 + len(shape))
    y, cache = layer_norm_forward(x, gamma, beta)
    _, dgamma, dbeta = layer_norm_backward_from_cache(dy, cache, gamma)
    np.testing.assert_allclose(gamma @ dgamma + beta @ dbeta, np.sum(dy * y), rtol=1e-12)


def test_dbeta_ignores_x_and_a_uniform_upstream_gives_dgamma_summing_to_zero():
    x, dy, gamma, beta = case((5, 6), 70)
    _, c1 = layer_norm_forward(x, gamma, beta)
    _, c2 = layer_norm_forward(3 * x + 7, gamma, beta)
    assert np.array_equal(layer_norm_backward_from_cache(dy, c1, gamma)[2],
                          layer_norm_backward_from_cache(dy, c2, gamma)[2])
    # the same dy = c everywhere: dgamma sums to c times the sum of all of x_hat, and every row of x_hat sums to 0
    _, dgamma, _ = layer_norm_backward_from_cache(np.full((5, 6), 0.7), c1, gamma)
    assert abs(dgamma.sum()) <= 1e-12 and np.max(np.abs(dgamma)) > 0.1


# ---- the cache and the three ways to keep what the backward pass needs -------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_recomputing_x_hat_from_the_cache_gives_the_cached_paths_gradient_bit_for_bit(dtype):
    x, dy, gamma, beta = case((3, 16, 48), 80, scale=4.0, offset=2.0)
    x, dy, gamma, beta = (a.astype(dtype) for a in (x, dy, gamma, beta))
    _, cache = layer_norm_forward(x, gamma, beta)
    dx, dgamma, dbeta = layer_norm_backward_from_cache(dy, cache, gamma)
    x_hat, std_inv = layer_norm_stats(x)                    # the path that keeps x_hat (and rstd)
    assert np.array_equal(dx, layer_norm_backward_saved(dy * gamma, x_hat, std_inv))
    assert np.array_equal(dgamma, np.sum(dy * x_hat, axis=(0, 1)))
    assert np.array_equal(dbeta, np.sum(dy, axis=(0, 1)))
    assert np.array_equal(dx, layer_norm_backward(dy, x, gamma))      # the path that keeps nothing
    assert all(np.array_equal(a, b) for a, b in zip((dgamma, dbeta), layer_norm_param_grads(dy, x), strict=True))
    assert dx.dtype == dgamma.dtype == dbeta.dtype == dtype


def test_forward_output_and_cache_match_numpy():
    x, _, gamma, beta = case((2, 3, 10), 90, eps=1e-3, offset=5.0)
    y, (x_c, mean, rstd) = layer_norm_forward(x, gamma, beta, eps=1e-3)
    assert np.array_equal(y, layer_norm(x, gamma, beta, eps=1e-3))
    assert x_c is x or np.array_equal(x_c, x)
    np.testing.assert_allclose(mean, x.mean(axis=-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-3), rtol=1e-13)
    assert mean.shape == rstd.shape == (2, 3, 1)


def test_float16_input_keeps_float16_gradients():
    x, dy, gamma, beta = (a.astype(np.float16) for a in case((2, 8), 95))
    _, cache = layer_norm_forward(x, gamma, beta)
    out = layer_norm_backward_from_cache(dy, cache, gamma)
    assert [a.dtype for a in out] == [np.float16] * 3
    ref = layer_norm_backward(dy.astype(np.float64), x.astype(np.float64), gamma.astype(np.float64))
    np.testing.assert_allclose(out[0].astype(np.float64), ref, atol=2e-2 * np.max(np.abs(ref)))


def test_the_tiny_transformer_gets_the_same_parameter_gradients():
    """normlab_core/transformer.py keeps (x_hat, std_inv); its dgamma, dbeta and dx equal the cache path's."""
    cfg = tf.Config(depth=1, d_model=8, heads=2)
    x, dy, gamma, beta = case((2, 5, 8), 100, offset=1.0)
    p = {"n.gamma": gamma, "n.beta": beta}
    y, saved = tf.norm(x, p, "n.", cfg)
    grads = {}
    dx = tf.norm_backward(dy, saved, p, "n.", cfg, grads)
    y2, cache = layer_norm_forward(x, gamma, beta, cfg.eps)
    dx2, dgamma, dbeta = layer_norm_backward_from_cache(dy, cache, gamma)
    assert np.array_equal(y, y2)
    np.testing.assert_allclose(dx, dx2, rtol=0, atol=1e-15 * np.max(np.abs(dx)) * 8)
    np.testing.assert_allclose(grads["n.gamma"], dgamma, rtol=1e-14)
    np.testing.assert_allclose(grads["n.beta"], dbeta, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cache_bytes_are_the_bytes_of_the_arrays_each_path_keeps(dtype):
    rows, width = 6, 12
    x = np.random.default_rng(1).normal(size=(rows, width)).astype(dtype)
    got = layer_norm_cache_bytes(rows, width, np.dtype(dtype).itemsize)
    _, (_, mean, rstd) = layer_norm_forward(x)
    x_hat, std_inv = layer_norm_stats(x)
    assert got["mean and rstd"] == mean.nbytes + rstd.nbytes
    assert got["x_hat and rstd"] == x_hat.nbytes + std_inv.nbytes
    assert got["nothing"] == 0
    assert got["x_hat and rstd"] == (width + 1) / 2 * got["mean and rstd"]


# ---- bad input ------------------------------------------------------------------------------------------

def test_bad_cache_and_arguments_are_refused_with_a_reason():
    x, dy, gamma, _ = case((3, 4), 110)
    _, (xc, mean, rstd) = layer_norm_forward(x)
    with pytest.raises(TypeError, match="cache must be the tuple"):
        layer_norm_backward_from_cache(dy, [xc, mean, rstd])
    with pytest.raises(TypeError, match="of length 2"):
        layer_norm_backward_from_cache(dy, (xc, mean))
    with pytest.raises(ValueError, match=r"cache mean must have shape \(3, 1\)"):
        layer_norm_backward_from_cache(dy, (xc, mean.ravel(), rstd))
    with pytest.raises(ValueError, match="cache rstd holds negative"):
        layer_norm_backward_from_cache(dy, (xc, mean, -rstd))
    with pytest.raises(ValueError, match="cache rstd contains 1 NaN"):
        layer_norm_backward_from_cache(dy, (xc, mean, np.where(np.arange(3)[:, None] == 1, np.nan, rstd)))
    with pytest.raises(ValueError, match="dy has shape"):
        layer_norm_backward_from_cache(dy[:2], (xc, mean, rstd))
    with pytest.raises(ValueError, match="gamma must have shape"):
        layer_norm_backward_from_cache(dy, (xc, mean, rstd), gamma[:3])
    with pytest.raises(ValueError, match="pass it by name"):
        layer_norm_forward(x, 1e-5)
    with pytest.raises(ValueError, match="rows must be >= 1"):
        layer_norm_cache_bytes(0, 4)
    with pytest.raises(TypeError, match="width must be a whole number"):
        layer_norm_cache_bytes(4, 7.5)
