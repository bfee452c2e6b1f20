"""The geometry of the two norms (section 23.5): centring is the orthogonal projection P = I - 11^T / D onto the
hyperplane orthogonal to the all-ones vector 1, and with eps = 0 LayerNorm puts P x and RMSNorm puts x itself on
the sphere of radius sqrt(D); a positive eps pulls each a little inside it.

Vectors x have shape (..., D), the last axis being the features; everything is computed in float64, and lengths
with `stats.length` (numpy's own sum, the same digits on every CPU).
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_eps, check_positive_int
from .stats import length


def _vectors(x) -> np.ndarray:
    return as_float_array(x).astype(np.float64)


def centring_matrix(d: int) -> np.ndarray:
    """P = I - 11^T / D, shape (D, D): the orthogonal projection onto the hyperplane orthogonal to 1."""
    d = check_positive_int(d, "d")
    return np.eye(d) - np.full((d, d), 1.0 / d)


def project(x) -> np.ndarray:
    """P x for every row of x (..., D), same shape, computed as x - mean(x): x with its component along 1 removed."""
    x = _vectors(x)
    return x - x.mean(axis=-1, keepdims=True)   # equals x @ P (P is symmetric), without P's rounding


def along_ones(x) -> np.ndarray:
    """x . 1 / sqrt(D), shape x.shape[:-1]: the signed length of x's component along the unit vector 1 / sqrt(D)."""
    x = _vectors(x)
    return x.sum(axis=-1) / np.sqrt(x.shape[-1])


def to_sphere(x) -> np.ndarray:
    """sqrt(D) x / |x| for x (..., D), same shape: the point of the sphere of radius sqrt(D) in x's direction."""
    x = _vectors(x)
    with np.errstate(divide="ignore", invalid="ignore"):   # x = 0 has no direction: 0/0 = NaN
        return np.sqrt(x.shape[-1]) * x / length(x)[..., None]


def angle_to_ones(x) -> np.ndarray:
    """Angle in radians between x (..., D) and 1, shape x.shape[:-1]: 0 along 1, pi/2 in the plane (NaN for 0)."""
    return np.pi / 2 - angle_to_plane(x)


def angle_to_plane(x) -> np.ndarray:
    """Signed angle in radians between x (..., D) and the plane orthogonal to 1, shape x.shape[:-1]: positive when
    mean(x) > 0, pi/2 along 1 (NaN for x = 0)."""
    x = _vectors(x)
    up, across = along_ones(x), length(project(x))
    return np.where((up == 0) & (across == 0), np.nan, np.arctan2(up, across))


def layer_norm_radius(x, eps: float = 1e-5) -> np.ndarray:
    """|LayerNorm(x)| = sqrt(D) sqrt(var / (var + eps)) for x (..., D), shape x.shape[:-1] (NaN for 0/0)."""
    x, eps = _vectors(x), check_eps(eps)
    var = np.mean(project(x) ** 2, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(x.shape[-1] * var / (var + eps))


def rms_norm_radius(x, eps: float = 1e-5) -> np.ndarray:
    """|RMSNorm(x)| = sqrt(D) sqrt(ms / (ms + eps)), ms = mean(x**2), for x (..., D), shape x.shape[:-1]."""
    x, eps = _vectors(x), check_eps(eps)
    ms = np.mean(x * x, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(x.shape[-1] * ms / (ms + eps))


def plane_basis(d: int) -> np.ndarray:
    """Orthonormal rows, shape (D - 1, D), spanning the plane orthogonal to 1 (the Helmert basis: row k - 1 is
    (1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1)) with k ones)."""
    d = check_positive_int(d, "d")
    out = np.zeros((d - 1, d))
    for k in range(1, d):
        out[k - 1, :k], out[k - 1, k] = 1.0, -k
        out[k - 1] /= np.sqrt(k * (k + 1))
    return out
