"""How sure a comparison over a few seeds is: percentile bootstrap intervals over seeds.

Each seed is one draw of the initialization (and data order). A bootstrap resamples the seeds with replacement,
recomputes the statistic on each resample, and reports the middle `level` of those values. With 3 to 10 seeds the
interval is rough, and a little too narrow, but it says which differences the data can and cannot resolve.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.9      # the middle 90 % of the resampled statistic
DRAWS = 4000     # resamples; the intervals' ends move by well under 1 % between bootstrap seeds


def _check(values, name: str) -> np.ndarray:
    """values as a 1-d float array of finite numbers, at least one (else ValueError naming `name`)."""
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-empty 1-d list of finite numbers, got {values!r}") from None
    if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a non-empty 1-d list of finite numbers, got {values!r}")
    return v


def _check_level(level) -> float:
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number between 0 and 1 (exclusive), got {level!r}")
    return float(level)


def resampled_means(values, draws: int = DRAWS, seed: int = 0) -> np.ndarray:
    """Means of `draws` resamples (with replacement) of `values` (n,): shape (draws,)."""
    v = _check(values, "values")
    idx = np.random.default_rng(seed).integers(0, v.size, size=(draws, v.size))
    return v[idx].mean(axis=1)


def mean_interval(values, level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean of `values` over seeds and its percentile bootstrap interval."""
    level = _check_level(level)
    means = resampled_means(values, seed=seed)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(np.mean(_check(values, "values"))), float(lo), float(hi)


def ratio_interval(num, den, level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """(ratio, low, high): mean(num) / mean(den) and its bootstrap interval, the seeds of each side resampled on
    their own (two placements at one seed are two different models, not a pair)."""
    level = _check_level(level)
    n, d = _check(num, "num"), _check(den, "den")
    if np.any(d <= 0) or np.any(n < 0):
        raise ValueError(f"ratio_interval needs num >= 0 and den > 0, got num {num!r} and den {den!r}")
    ratios = resampled_means(n, seed=seed) / resampled_means(d, seed=seed + 1)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(n.mean() / d.mean()), float(lo), float(hi)


def overlap(a: tuple, b: tuple) -> bool:
    """Whether two (estimate, low, high) intervals overlap: if they do, the data do not order the two."""
    return max(a[1], b[1]) <= min(a[2], b[2])
