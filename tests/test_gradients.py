"""Derivatives in float64, checked against oracles that do not share code with normlab_core:
central differences written here, and the `autograd` package."""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad

from normlab_core import (
    Affine,
    layer_norm,
    layer_norm_backward,
    layer_norm_backward_saved,
    layer_norm_param_grads,
    layer_norm_stats,
    numerical_gradient,
    rms_norm,
    rms_norm_backward,
    rms_norm_param_grad,
    run_stack,
    sensitivity,
    sensitivity_curve,
    stack_curves,
)

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
