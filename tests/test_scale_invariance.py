"""Scale invariance of the weights before a norm (normlab_core.scale_invariance, section 23.8), checked against float64
central differences and against the geometry of a step that is orthogonal to W. If one fails, fix the module, not the
bound: `.venv/bin/pytest tests/test_scale_invariance.py -q` reruns it."""

from __future__ import annotations

import numpy as np
import pytest

from normlab_core.gradcheck import numerical_gradient
from normlab_core.scale_invariance import angle, loss, loss_grad, sgd


def case(seed=0, n=16, d_in=6, d_out=5):
    """w (d_out, d_in), x (n, d_in), t (n, d_out) in float64, fixed seed."""
    rng = np.random.default_rng(4800 + seed)
    return rng.normal(size=(d_out, d_in)), rng.normal(size=(n, d_in)), rng.normal(size=(n, d_out))


@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_gradient_matches_central_differences(seed, eps):
    w, x, t = case(seed)
    numerical = numerical_gradient(lambda v: np.array([loss(v, x, t, eps)]), w, np.ones(1), h=1e-6)
    got = loss_grad(w, x, t, eps)
    assert np.max(np.abs(got - numerical)) <= 1e-7 * np.max(np.abs(numerical)), (got, numerical)


@pytest.mark.parametrize("c", [1e-3, 0.25, 3.0, 1e3])
def test_the_loss_ignores_the_size_of_w_and_the_gradient_shrinks_like_one_over_c(c):
    w, x, t = case(3)
    assert loss(c * w, x, t) == pytest.approx(loss(w, x, t), rel=1e-12)
    np.testing.assert_allclose(loss_grad(c * w, x, t), loss_grad(w, x, t) / c, rtol=1e-9, atol=1e-12 / c)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_the_gradient_is_orthogonal_to_w_exactly_when_eps_is_zero(seed):
    w, x, t = case(seed)
    g = loss_grad(w, x, t)
    assert abs(np.sum(g * w)) <= 1e-12 * np.linalg.norm(g) * np.linalg.norm(w)
    g_eps = loss_grad(w, x, t, eps=0.5)          # a large eps breaks the invariance, and the orthogonality with it
    assert abs(np.sum(g_eps * w)) > 1e-4 * np.linalg.norm(g_eps) * np.linalg.norm(w)


@pytest.mark.parametrize("c", [0.5, 2.0, 10.0])
def test_a_step_turns_w_by_arctan_of_lr_g_over_w_so_the_effective_rate_goes_like_one_over_w_squared(c):
    w, x, t = case(7)
    lr = 0.05
    g = np.linalg.norm(loss_grad(w, x, t))
    turn = sgd(c * w, x, t, lr=lr, steps=1)["turn"][0]
    assert turn == pytest.approx(np.arctan(lr * g / (c ** 2 * np.linalg.norm(w))), rel=1e-9)


def test_without_weight_decay_the_norm_only_grows_by_pythagoras():
    w, x, t = case(8)
    run = sgd(w, x, t, lr=0.5, steps=20)
    w_k = w.copy()
    for k in range(20):
        g = loss_grad(w_k, x, t)
        assert run["norm"][k + 1] ** 2 == pytest.approx(run["norm"][k] ** 2 + 0.25 * np.sum(g * g), rel=1e-12)
        w_k = w_k - 0.5 * g
    assert np.all(np.diff(run["norm"]) > 0)


def test_weight_decay_keeps_w_smaller_and_so_the_steps_larger():
    w, x, t = case(9)
    plain = sgd(w, x, t, lr=0.5, steps=200)
    decayed = sgd(w, x, t, lr=0.5, steps=200, weight_decay=0.05)
    assert decayed["norm"][-1] < 0.8 * plain["norm"][-1]
    assert np.mean(decayed["turn"][-50:]) > np.mean(plain["turn"][-50:])


def test_angle_against_known_angles():
    assert angle(np.array([1.0, 0.0]), np.array([0.0, 2.0])) == pytest.approx(np.pi / 2)
    assert angle(np.eye(2), 3 * np.eye(2)) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((np.ones((2, 3)), np.ones((4, 2)), np.ones((4, 2))), {}, "shapes do not fit"),
    ((np.ones(3), np.ones((4, 3)), np.ones((4, 1))), {}, "must be 2-D"),
])
def test_bad_shapes_are_named(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        loss(*args, **kwargs)


def test_bad_settings_are_named():
    w, x, t = case(0)
    with pytest.raises(ValueError, match="lr must be"):
        sgd(w, x, t, lr=-1.0, steps=1)
    with pytest.raises(TypeError, match="steps"):
        sgd(w, x, t, lr=0.1, steps=1.5)


def test_the_ordered_product_is_the_matrix_product_and_the_same_with_any_blas_order():
    """ordered_matmul against numpy's @ (to rounding) and against an exact sum of Python fractions term by term."""
    from fractions import Fraction

    from normlab_core.scale_invariance import ordered_matmul, ordered_norm

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(5, 7)), rng.normal(size=(7, 4))
    got = ordered_matmul(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-13, atol=1e-14)
    for i in range(5):
        for j in range(4):
            exact = sum(Fraction(a[i, k]) * Fraction(b[k, j]) for k in range(7))
            assert abs(Fraction(got[i, j]) - exact) <= 8 * 2.0 ** -52 * sum(abs(a[i]) * abs(b[:, j]))
    assert ordered_norm(a) == pytest.approx(np.linalg.norm(a), rel=1e-15)


@pytest.mark.parametrize("scale", [0.3, 1.0, 10.0])
def test_layernorm_stretches_no_input_direction_by_more_than_one_over_its_spread(scale):
    """23.8's input side: the Jacobian of LayerNorm (eps = 0) built by central differences of the forward pass
    alone has 2-norm 1 / std(x), so a stream ten times larger passes a change on ten times smaller."""
    from normlab_core.norms import layer_norm

    x = scale * np.random.default_rng(5).normal(size=12)
    h = 1e-6 * scale
    jac = np.stack([(layer_norm(x + h * e, eps=0.0) - layer_norm(x - h * e, eps=0.0)) / (2 * h)
                    for e in np.eye(x.size)], axis=1)
    assert np.linalg.norm(jac, 2) == pytest.approx(1 / np.std(x), rel=1e-6)
