"""The geometry of LayerNorm and RMSNorm (normlab_core/geometry.py), checked three ways: the algebra of the
projection P = I - 11^T / D, brute force (an explicit matrix product, and a basis found by numpy's SVD), and the
library's own norms, which the geometric picture must reproduce on random vectors of several sizes D."""

from __future__ import annotations

import numpy as np
import pytest

from normlab_core import layer_norm, rms_norm
from normlab_core.geometry import (
    along_ones,
    angle_to_ones,
    angle_to_plane,
    centring_matrix,
    layer_norm_radius,
    plane_basis,
    project,
    rms_norm_radius,
    to_sphere,
)

SIZES = [1, 2, 3, 5, 16, 64]


def rows(d: int, n: int = 40, seed: int = 0) -> np.ndarray:
    """n random vectors of size d: mixed scales, and an offset along 1 of either sign."""
    rng = np.random.default_rng(seed + d)
    scale = 10.0 ** rng.uniform(-2, 2, (n, 1))
    return scale * rng.normal(size=(n, d)) + rng.uniform(-30, 30, (n, 1))


# -- the projection -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", SIZES)
def test_centring_matrix_is_symmetric_idempotent_and_kills_1(d):
    p = centring_matrix(d)
    assert p.shape == (d, d)
    np.testing.assert_allclose(p, p.T, atol=0)
    np.testing.assert_allclose(p @ p, p, atol=1e-15)
    np.testing.assert_allclose(p @ np.ones(d), 0, atol=1e-15)
    assert np.trace(p) == pytest.approx(d - 1)          # a projection's trace is its rank: the plane has D - 1 dims
    v = rows(d)[0] - rows(d)[0].mean()
    np.testing.assert_allclose(p @ v, v, atol=1e-12)    # a vector already in the plane is left where it is


@pytest.mark.parametrize("d", SIZES)
def test_x_minus_its_mean_is_p_times_x(d):
    x = rows(d)
    np.testing.assert_allclose(project(x), x @ centring_matrix(d), rtol=0, atol=1e-12)   # P x, P symmetric
    by_hand = np.array([[sum((float(i == j) - 1 / d) * row[j] for j in range(d)) for i in range(d)] for row in x])
    np.testing.assert_allclose(project(x), by_hand, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", SIZES)
def test_x_splits_into_its_projection_and_its_part_along_1(d):
    x = rows(d)
    unit = np.ones(d) / np.sqrt(d)
    np.testing.assert_allclose(project(x) + along_ones(x)[:, None] * unit, x, atol=1e-11)
    np.testing.assert_allclose(np.sum(project(x), axis=-1), 0, atol=1e-11)
    np.testing.assert_allclose(along_ones(x), x.mean(axis=-1) * np.sqrt(d), rtol=1e-12)


@pytest.mark.parametrize("d", [2, 3, 5, 16])
def test_plane_basis_is_orthonormal_spans_the_plane_and_rebuilds_p(d):
    b = plane_basis(d)
    assert b.shape == (d - 1, d)
    np.testing.assert_allclose(b @ b.T, np.eye(d - 1), atol=1e-14)
    np.testing.assert_allclose(b @ np.ones(d), 0, atol=1e-14)
    np.testing.assert_allclose(b.T @ b, centring_matrix(d), atol=1e-14)
    _, s, vt = np.linalg.svd(centring_matrix(d))        # brute force: the plane from numpy's SVD of P
    plane = vt[s > 0.5]
    np.testing.assert_allclose(plane.T @ plane, b.T @ b, atol=1e-12)


def test_plane_basis_at_d_3_is_the_figures_pair():
    b = plane_basis(3)
    np.testing.assert_allclose(b[0], np.array([1, -1, 0]) / np.sqrt(2))
    np.testing.assert_allclose(b[1], np.array([1, 1, -2]) / np.sqrt(6))


# -- the angles -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3, 5, 64])
def test_angles_against_the_dot_product_formula(d):
    x = rows(d)
    cos = x @ np.ones(d) / (np.linalg.norm(x, axis=-1) * np.sqrt(d))
    np.testing.assert_allclose(angle_to_ones(x), np.arccos(cos), atol=1e-7)
    np.testing.assert_allclose(angle_to_plane(x) + angle_to_ones(x), np.pi / 2, atol=1e-15)
    assert np.all(np.sign(angle_to_plane(x)) == np.sign(x.mean(axis=-1)))


def test_angle_edge_cases():
    assert angle_to_plane(np.ones(4)) == pytest.approx(np.pi / 2)
    assert angle_to_plane(-np.ones(4)) == pytest.approx(-np.pi / 2)
    assert angle_to_plane([1.0, -1.0, 0.0]) == 0
    assert np.isnan(angle_to_plane(np.zeros(3))) and np.isnan(angle_to_ones(np.zeros(3)))


# -- the norms as projection and scaling ------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3, 5, 16, 64])
def test_layer_norm_with_eps_0_is_the_projection_scaled_onto_the_sphere(d):
    x = rows(d)
    y = layer_norm(x, eps=0.0)
    np.testing.assert_allclose(y, to_sphere(project(x)), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.sqrt(d), rtol=1e-12)
    np.testing.assert_allclose(y @ np.ones(d), 0, atol=1e-10)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 16, 64])
def test_rms_norm_with_eps_0_is_x_scaled_onto_the_sphere_and_keeps_its_part_along_1(d):
    x = rows(d)
    y = rms_norm(x, eps=0.0)
    np.testing.assert_allclose(y, to_sphere(x), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.sqrt(d), rtol=1e-12)
    np.testing.assert_allclose(angle_to_plane(y), angle_to_plane(x), atol=1e-12)   # the same ray from 0
    np.testing.assert_allclose(along_ones(y), np.sqrt(d) * along_ones(x) / np.linalg.norm(x, axis=-1), rtol=1e-11)


@pytest.mark.parametrize("eps", [1e-5, 1e-2, 1.0, 10.0])
@pytest.mark.parametrize("d", [2, 3, 16])
def test_radius_formulas_with_eps_match_the_norms(d, eps):
    x = rows(d)
    np.testing.assert_allclose(np.linalg.norm(layer_norm(x, eps=eps), axis=-1), layer_norm_radius(x, eps),
                               rtol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(rms_norm(x, eps=eps), axis=-1), rms_norm_radius(x, eps), rtol=1e-12)
    assert np.all(layer_norm_radius(x, eps) < np.sqrt(d)) and np.all(rms_norm_radius(x, eps) < np.sqrt(d))
    # eps changes the length only: the directions stay those of P x and x
    np.testing.assert_allclose(to_sphere(layer_norm(x, eps=eps)), to_sphere(project(x)), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(to_sphere(rms_norm(x, eps=eps)), to_sphere(x), rtol=1e-12)


def test_radius_formulas_by_hand():
    x = np.array([1.0, 2.0, 6.0])                         # mean 3, var 14/3, mean square 41/3
    assert layer_norm_radius(x, 0.0) == pytest.approx(np.sqrt(3))
    assert layer_norm_radius(x, 1.0) == pytest.approx(np.sqrt(3 * (14 / 3) / (14 / 3 + 1)))
    assert rms_norm_radius(x, 1.0) == pytest.approx(np.sqrt(3 * (41 / 3) / (41 / 3 + 1)))
    with np.errstate(all="ignore"):
        assert np.isnan(layer_norm_radius(np.full(3, 2.0), 0.0))   # a constant row with eps = 0: 0/0
    assert layer_norm_radius(np.full(3, 2.0), 1e-5) == 0


# -- bad input ------------------------------------------------------------------------------------------------------
def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="d must be >= 1"):
        centring_matrix(0)
    with pytest.raises(TypeError, match="d must be a whole number"):
        plane_basis(2.5)
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        layer_norm_radius([1.0, 2.0], -1.0)
    with pytest.raises(TypeError, match="x holds strings"):
        project(["a", "b"])
