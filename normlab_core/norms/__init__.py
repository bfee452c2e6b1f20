"""The norms: one plain module per norm, one registry of them, and the checked public functions.

Each module of this package (one per norm, each named once in REGISTRY) holds one norm's plain formulas:
`forward(x, *params, **settings) -> (y, cache)`, `backward(dy, cache) -> (dx, *dparams)` and
`jvp(x, dx, *params, **settings) -> (y, dy)`, with PARAMS (the learned parameters, in that order), SETTINGS (the
fixed ones it takes by name: eps, sum_dtype), `init(dim)` (the starting parameters), NAME and PER_TOKEN. REGISTRY
names each module once; the transformer, the residual stacks, the figures and the experiments look norms up here
(`get`). A new norm is one module plus one line of REGISTRY.

The public functions below (layer_norm, rms_norm, batch_norm and friends) check their input and wrap the plain
formulas. Dtypes: float32 and float64 input is computed in its own dtype (sums in float64, as the reference
programs' C `double` accumulators do); integers and booleans become float64; float16 input is computed in float32
and the normalized output comes back as float16, while the per-row statistics (std_inv, rms) stay float32.

A row whose squares would overflow or underflow is first divided by a power of two near its largest entry
(`row_scale`), with eps divided by its square: float32 values near 1e19 or float64 values near 1e160 normalize
correctly, and so do rows of float64 values near 1e-300 with eps = 0. Dividing by a power of two is exact, so
for every other input the results are bit for bit those of the plain formula.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .._checks import as_float_array, check_eps, check_param, check_positive_int, check_sum_dtype, result_dtype
from . import batchnorm, dyt, layernorm, rmsnorm

REGISTRY = {
    "layer_norm": layernorm,
    "rms_norm": rmsnorm,
    "dyt": dyt,
    "batch_norm": batchnorm,
}


def names(per_token: bool = False) -> list[str]:
    """The registered names, in REGISTRY's order; with per_token, only the norms that treat each row on its own."""
    return [name for name, module in REGISTRY.items() if module.PER_TOKEN or not per_token]


def get(name, per_token: bool = False, what: str = "norm"):
    """The module REGISTRY names `name`; ValueError naming the argument `what` and the allowed names otherwise
    (with per_token, only norms that normalize each row on its own are allowed)."""
    allowed = names(per_token)
    if not isinstance(name, str) or name not in allowed:
        if isinstance(name, str) and name in REGISTRY:   # registered, but it mixes the rows of a batch
            raise ValueError(f"{what} {name!r} ({REGISTRY[name].NAME}) normalizes across the examples of a batch, "
                             f"so it is no per-token norm; allowed: {', '.join(map(repr, allowed))}")
        raise ValueError(f"unknown {what} {name!r}; allowed: {', '.join(map(repr, allowed))}")
    return REGISTRY[name]


def settings(module, **values) -> dict:
    """The fixed settings among `values` (eps=..., sum_dtype=...) that module's forward and jvp take."""
    return {key: values[key] for key in module.SETTINGS if key in values}


def start(module, dim: int, dtype=np.float64) -> tuple:
    """module's learned parameters for `dim` features at their starting values (module.init(dim): gamma ones, beta
    zeros, DyT's alpha 0.5) in `dtype`, in PARAMS order: the norm of a model that learns nothing, such as the
    residual stacks."""
    values = module.init(dim)
    return tuple(np.asarray(values[name], dtype) for name in module.PARAMS)


# Settings a norm may take by name (its forward's keywords): what the callers above pass.
KNOWN_SETTINGS = ("eps", "sum_dtype")
REQUIRED = ("NAME", "PARAMS", "SETTINGS", "PER_TOKEN", "init", "forward", "backward", "jvp")


def check_registry(registry: dict) -> None:
    """Refuse, at import, a registered module that lacks part of the contract, takes a setting nobody passes,
    names a parameter twice, or gives a parameter the name of a setting (a collision the callers could not tell
    apart). Each module's CONFIG ({parameter: field of transformer.Config}) is checked by the transformer."""
    for key, module in registry.items():
        missing = [a for a in REQUIRED if not hasattr(module, a)]
        if missing:
            raise TypeError(f"norm {key!r} ({module.__name__}) lacks {missing}; a norm module defines {REQUIRED}")
        unknown = [s for s in module.SETTINGS if s not in KNOWN_SETTINGS]
        if unknown:
            raise ValueError(f"norm {key!r} takes settings {unknown} that no caller passes; allowed: {KNOWN_SETTINGS}")
        params = tuple(module.PARAMS)
        clash = sorted({p for p in params if params.count(p) > 1} | (set(params) & set(KNOWN_SETTINGS)))
        if clash:
            raise ValueError(f"norm {key!r} names {clash} twice or as a setting; give each parameter its own name")


check_registry(REGISTRY)


def row_scale(x: np.ndarray, eps: float) -> np.ndarray:
    """Per-row power of two s (shape x.shape[:-1] + (1,)) with max|x / s| in [1, 2) for a row whose squares could
    overflow or underflow (where eps / s**2 stays finite); 1 for every other row."""
    largest = np.max(np.abs(x), axis=-1, keepdims=True, initial=0)  # initial: same max, faster on short rows
    _, exponent = np.frexp(largest)
    info = np.finfo(x.dtype)
    shift = np.maximum(exponent - 1, 0)                                   # large rows: down to [1, 2)
    tiny = (largest > 0) & (exponent < info.minexp // 2 + info.nmant)     # squares near or below the subnormals
    with np.errstate(over="ignore"):
        eps_up = np.ldexp(x.dtype.type(eps), 2 * (1 - exponent))          # eps / s**2 of a scaled-up row
    shift = np.where(tiny & np.isfinite(eps_up), exponent - 1, shift)    # else eps outweighs x**2 unscaled
    return np.ldexp(x.dtype.type(1), shift)


def warn_if_zero(is_zero: np.ndarray, what: str) -> None:
    """Warn (RuntimeWarning) when some row's denominator is zero (is_zero, bool, one per row): with eps = 0 its
    output is 0/0 = NaN."""
    zero = int(np.count_nonzero(is_zero))
    if zero:
        warnings.warn(
            f"{what} is zero in {zero} row(s) and eps is 0: those outputs are 0/0 = NaN "
            "(a positive eps keeps the division finite)",
            RuntimeWarning,
            stacklevel=3,
        )


def layer_norm_stats(x, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Normalized x_hat (same shape as x) and std_inv (shape x.shape[:-1] + (1,)), over the last axis."""
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    eps = check_eps(eps)
    s = row_scale(x, eps)                              # x / s is exact; its squares neither overflow nor underflow
    with np.errstate(divide="ignore", invalid="ignore"):   # eps = 0 on a constant row: 1/0 and 0 * inf (warned)
        _, (x_hat, std_inv, _) = layernorm.forward(x / s, 1, 0, x.dtype.type(eps) / s / s)   # eps of x / s
    warn_if_zero(np.isinf(std_inv), "the variance")   # 1 / sqrt(0)
    with np.errstate(over="ignore"):                   # a row near the subnormals: 1 / std is past the largest float
        return x_hat.astype(out_dtype, copy=False), std_inv / s


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of x (..., D) over the last axis: gamma * (x - mean) / sqrt(var + eps) + beta."""
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype, "layer_norm")
    beta = check_param(beta, "beta", x.shape[-1], x.dtype, "layer_norm")
    y, _ = layer_norm_stats(x, eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y.astype(out_dtype, copy=False)


def rms_norm_stats(x, eps: float = 1e-5, *, sum_dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """x / rms (same shape as x) and rms = sqrt(mean(x**2) + eps) (shape x.shape[:-1] + (1,)).

    `sum_dtype` is the accumulator of the mean of squares (default float64; see `row_mean`).
    """
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    eps = check_eps(eps)
    sum_dtype = check_sum_dtype(sum_dtype)
    s = row_scale(x, eps)                              # x / s is exact; its squares neither overflow nor underflow
    with np.errstate(divide="ignore", invalid="ignore"):   # eps = 0 on an all-zero row: 0/0 (warned)
        _, (x_hat, rms, _) = rmsnorm.forward(x / s, 1, x.dtype.type(eps) / s / s, sum_dtype=sum_dtype)
    warn_if_zero(rms == 0, "the mean square")
    return x_hat.astype(out_dtype, copy=False), rms * s


def rms_norm(x, gamma=None, eps: float = 1e-5, *, sum_dtype=None) -> np.ndarray:
    """RMSNorm of x (..., D) over the last axis: gamma * x / sqrt(mean(x**2) + eps)."""
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    gamma = check_param(gamma, "gamma", x.shape[-1], x.dtype, "rms_norm")
    y, _ = rms_norm_stats(x, eps, sum_dtype=sum_dtype)
    return (y if gamma is None else y * gamma).astype(out_dtype, copy=False)


def batch_norm(x, eps: float = 1e-5) -> np.ndarray:
    """BatchNorm without learned parameters: normalize x (N, ...) over axis 0, per feature."""
    out_dtype = result_dtype(x)
    x = as_float_array(x)
    moved = np.moveaxis(x, 0, -1)
    return np.moveaxis(layer_norm(moved, eps=eps), -1, 0).astype(out_dtype, copy=False)


def batch_norm_sequences(x, eps: float = 1e-5) -> np.ndarray:
    """BatchNorm of x (..., B, T, D) per feature, pooling every example and position of one batch."""
    x = as_float_array(x, min_ndim=3)
    *lead, b, t, d = x.shape
    flat = np.moveaxis(x.reshape(*lead, b * t, d), -2, 0)       # (B*T, ..., D)
    return np.moveaxis(batch_norm(flat, eps=eps), 0, -2).reshape(x.shape)


def tracked_outputs(batch: int, x=None) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 of example 0 after BatchNorm and after LayerNorm, in each batch of x (N, B, T, D; default
    examples.BATCHES) cut to its first `batch` examples: each (N, T)."""
    from ..examples import BATCHES

    x = BATCHES if x is None else as_float_array(x, min_ndim=4)
    return batch_norm_sequences(x[:, :batch])[:, 0, :, 0], layer_norm(x[:, :batch])[:, 0, :, 0]


def check_momentum(momentum) -> float:
    """Return momentum as a float in [0, 1] (the weight of the new batch in a running statistic)."""
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real):
        raise TypeError(f"momentum must be a real number in [0, 1], got {type(momentum).__name__} {momentum!r}")
    if not 0 <= float(momentum) <= 1:
        raise ValueError(f"momentum must be in [0, 1], got {momentum!r}")
    return float(momentum)


def check_running(mean, var, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Return running_mean and running_var as float64 (D,) arrays; the variance must be >= 0."""
    mean, var = as_float_array(mean, "running_mean"), as_float_array(var, "running_var")
    for name, arr in (("running_mean", mean), ("running_var", var)):
        if arr.shape != (dim,):
            raise ValueError(f"{name} must have shape (D,) = ({dim},), one value per feature of x, got {arr.shape}")
    if np.any(var < 0):
        raise ValueError(f"running_var must be >= 0 in every feature, got a minimum of {float(var.min())!r}")
    return mean.astype(np.float64), var.astype(np.float64)


def batch_norm_train(x, running_mean, running_var, momentum: float = 0.1, eps: float = 1e-5):
    """Training-mode BatchNorm of x (..., D), per feature over all other axes: y (x.shape) and the updated
    running mean and variance (D,), new = (1 - momentum) * old + momentum * batch (unbiased batch variance)."""
    x = as_float_array(x, min_ndim=2)
    eps, momentum = check_eps(eps), check_momentum(momentum)
    flat = x.reshape(-1, x.shape[-1]).astype(np.float64)
    n = flat.shape[0]
    if n < 2:
        raise ValueError(f"x has {n} value per feature; training mode needs at least 2 (its unbiased variance "
                         "divides by n - 1)")
    mean_old, var_old = check_running(running_mean, running_var, x.shape[-1])
    mean = flat.mean(axis=0)
    var = ((flat - mean) ** 2).mean(axis=0)                     # the biased variance normalizes the batch
    y = batch_norm(x.reshape(-1, x.shape[-1]), eps=eps).reshape(x.shape)
    new_mean = (1 - momentum) * mean_old + momentum * mean
    new_var = (1 - momentum) * var_old + momentum * var * n / (n - 1)   # the unbiased one is kept
    return y, new_mean, new_var


def batch_norm_eval(x, running_mean, running_var, eps: float = 1e-5) -> np.ndarray:
    """Inference-mode BatchNorm of x (..., D): (x - running_mean) / sqrt(running_var + eps), whatever the batch."""
    x = as_float_array(x)
    eps = check_eps(eps)
    mean, var = check_running(running_mean, running_var, x.shape[-1])
    if np.any(var + eps == 0):
        raise ValueError("running_var + eps is zero in some feature; give eps > 0")
    return ((x - mean) / np.sqrt(var + eps)).astype(x.dtype, copy=False)


def running_stats(batches, momentum: float = 0.1, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Running mean and variance (D,) after one training-mode step on each batch (..., D) of the iterable
    `batches`, starting from mean 0 and variance 1 (torch.nn.BatchNorm1d's initial values)."""
    mean = var = None
    for batch in batches:
        batch = as_float_array(batch, "batches", min_ndim=2)
        if mean is None:
            mean, var = np.zeros(batch.shape[-1]), np.ones(batch.shape[-1])
        _, mean, var = batch_norm_train(batch, mean, var, momentum, eps)
    if mean is None:
        raise ValueError("batches is empty; running statistics need at least one batch")
    return mean, var


def batch_norm_masked(x, mask, eps: float = 1e-5) -> np.ndarray:
    """BatchNorm of x (..., D) per feature over the tokens where mask (x.shape[:-1], bool) is True; 0 elsewhere."""
    x = as_float_array(x, min_ndim=2)
    eps = check_eps(eps)
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != x.shape[:-1]:
        raise ValueError(f"mask must be a boolean array of shape x.shape[:-1] = {x.shape[:-1]}, "
                         f"got dtype {mask.dtype} and shape {mask.shape}")
    if not mask.any():
        raise ValueError("mask selects no token; at least one must be True")
    y = np.zeros_like(x)
    y[mask] = batch_norm(x[mask], eps=eps)
    return y


def future_influence(x, source: int, delta: float = 1e-4, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Central-difference derivative of example 0's feature-0 output at every position (T,) with respect to
    feature 0 of its token at position `source`, for x (B, T, D): under BatchNorm over batch and positions, and
    under LayerNorm."""
    x = as_float_array(x, min_ndim=3).astype(np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (B, T, D), got {x.shape}")
    source = check_positive_int(source, "source", lo=0)
    if source >= x.shape[1]:
        raise ValueError(f"source must be a position 0 to {x.shape[1] - 1}, got {source}")
    up, down = x.copy(), x.copy()
    up[0, source, 0] += delta
    down[0, source, 0] -= delta
    return tuple((norm(up)[0, :, 0] - norm(down)[0, :, 0]) / (2 * delta)
                 for norm in (lambda z: batch_norm_sequences(z, eps), lambda z: layer_norm(z, eps=eps)))
