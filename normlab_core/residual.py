"""Residual stacks in pre-norm and post-norm placement, and how sensitive their output is to the input."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import norms
from ._checks import as_float_array, check_choice, check_eps, check_positive_int, result_dtype

PLACEMENTS = ("pre", "post", "none")
METHODS = ("exact", "finite_difference")


@dataclass(frozen=True)
class Affine:
    """The stand-in sublayer F(v) = gain * v + bias, elementwise on v (..., D)."""

    gain: float = 0.5
    bias: float = 0.1

    def __post_init__(self):
        for name in ("gain", "bias"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"Affine {name} must be a real number, as in Affine(gain=0.5, bias=0.1); "
                                f"got {type(value).__name__} {value!r}")
            if not np.isfinite(value):
                raise ValueError(f"Affine {name} must be finite, got {value!r}")

    def __call__(self, v: np.ndarray) -> np.ndarray:
        return self.gain * v + self.bias

    def jvp(self, v: np.ndarray, dv: np.ndarray) -> np.ndarray:
        """Directional derivative of F at v along dv (same shape as v)."""
        return self.gain * dv


def stack_norm(h: np.ndarray, eps: float, norm: str = "rms_norm") -> np.ndarray:
    """The stack's norm (a name of normlab_core.norms) of h (..., D) over the last axis, at its starting parameters
    (gamma 1, no learned shift), in h's dtype; its sums run in h's dtype, as the residual-stack reference program's."""
    module = norms.get(norm)
    params = norms.start(module, h.shape[-1], h.dtype)
    return module.forward(h, *params, **norms.settings(module, eps=eps, sum_dtype=h.dtype))[0]


def stack_norm_jvp(h: np.ndarray, dh: np.ndarray, eps: float, norm: str = "rms_norm"):
    """The stack's norm y of h (..., D) and its directional derivative dy along dh: (y, dy), float64 (exact path)."""
    module = norms.get(norm)
    return module.jvp(h, dh, *norms.start(module, h.shape[-1]), **norms.settings(module, eps=eps))


def layer(h, placement, sublayer, eps, norm="rms_norm"):
    """One residual layer: pre is h + F(norm(h)), post is norm(h + F(h)), none is h + F(h)."""
    if placement == "pre":
        return h + sublayer(stack_norm(h, eps, norm))
    if placement == "post":
        return stack_norm(h + sublayer(h), eps, norm)
    return h + sublayer(h)


def layer_jvp(h, dh, placement, sublayer, eps, norm="rms_norm"):
    """One residual layer and its directional derivative: (h_next, dh_next)."""
    if placement == "pre":
        n, dn = stack_norm_jvp(h, dh, eps, norm)
        return h + sublayer(n), dh + sublayer.jvp(n, dn)
    if placement == "post":
        return stack_norm_jvp(h + sublayer(h), dh + sublayer.jvp(h, dh), eps, norm)
    return h + sublayer(h), dh + sublayer.jvp(h, dh)


def _options(depth, placement, eps, sublayer, norm="rms_norm"):
    """Validate the shared options of the stack functions."""
    check_positive_int(depth, "depth")
    check_choice(placement, "placement", PLACEMENTS)
    norms.get(norm, per_token=True)
    eps = check_eps(eps)
    if sublayer is None:
        sublayer = Affine()
    if not callable(sublayer):
        raise TypeError(f"sublayer must be callable (v -> F(v)), got {type(sublayer).__name__}")
    if not isinstance(sublayer, Affine):
        sublayer = _ShapeChecked(sublayer)
    return eps, sublayer


class _ShapeChecked:
    """A learner's sublayer, with a clear error when F(v) does not have v's shape."""

    def __init__(self, fn):
        self.fn = fn
        if hasattr(fn, "jvp"):
            self.jvp = fn.jvp

    def __call__(self, v):
        out = np.asarray(self.fn(v))
        if out.shape != np.shape(v):
            raise ValueError(f"sublayer must return an array of its input's shape {np.shape(v)} "
                             f"(F maps a (..., D) stream to (..., D)), got shape {out.shape}")
        return out


def run_stack(x0, depth: int, placement: str, *, eps: float = 1e-6, sublayer=None,
              final_norm: bool = False, norm: str = "rms_norm") -> np.ndarray:
    """Output (..., D) of `depth` residual layers on x0 (..., D), in x0's dtype, with the per-token norm `norm`."""
    out_dtype = result_dtype(x0)
    h = as_float_array(x0, "x0")
    eps, sublayer = _options(depth, placement, eps, sublayer, norm)
    for _ in range(depth):
        h = layer(h, placement, sublayer, eps, norm)
    return (stack_norm(h, eps, norm) if final_norm else h).astype(out_dtype, copy=False)


def _seed(x0: np.ndarray, component: int) -> np.ndarray:
    """float64 tangent (D,) that is 1 at `component` and 0 elsewhere."""
    if x0.ndim != 1:
        raise ValueError(f"x0 must be one vector of shape (D,), got shape {x0.shape}")
    n = x0.shape[0]
    if isinstance(component, bool) or not isinstance(component, (int, np.integer)) or not -n <= component < n:
        raise ValueError(f"component must be an index into x0's {n} entries, got {component!r}")
    seed = np.zeros(n)
    seed[component] = 1.0
    return seed


def stack_curves(x0, max_depth: int, placement: str, *, component: int = 0, eps: float = 1e-6,
                 sublayer=None, final_norm: bool = False, norm: str = "rms_norm") -> tuple[np.ndarray, np.ndarray]:
    """(|out|, exact ||d out / d x0[component]||) at depths 1..max_depth, each (max_depth,), one float64 pass.

    A sensitivity beyond float64's range (each layer multiplies it by up to (1 + a) / sqrt(eps) when the stream's
    RMS is near 0) is inf from there on, or NaN where inf meets 0; no warning is raised for it."""
    x0 = as_float_array(x0, "x0")
    eps, sublayer = _options(max_depth, placement, eps, sublayer, norm)
    if not hasattr(sublayer, "jvp"):
        raise TypeError("the exact method needs a sublayer with a .jvp(v, dv) method, such as Affine")
    dh = _seed(x0, component)
    h = x0.astype(np.float64)
    outs, tangents = np.empty((max_depth, h.size)), np.empty((max_depth, h.size))
    with np.errstate(over="ignore", invalid="ignore"):
        for d in range(max_depth):
            h, dh = layer_jvp(h, dh, placement, sublayer, eps, norm)
            outs[d], tangents[d] = stack_norm_jvp(h, dh, eps, norm) if final_norm else (h, dh)
        return np.sqrt(np.add.reduce(outs * outs, axis=1)), np.sqrt(np.add.reduce(tangents * tangents, axis=1))


def sensitivity_curve(x0, max_depth: int, placement: str, *, component: int = 0, eps: float = 1e-6,
                      sublayer=None, final_norm: bool = False, norm: str = "rms_norm") -> np.ndarray:
    """Exact ||d out / d x0[component]|| (float64) at depths 1..max_depth, shape (max_depth,), one pass."""
    return stack_curves(x0, max_depth, placement, component=component, eps=eps, sublayer=sublayer,
                        final_norm=final_norm, norm=norm)[1]


def sensitivity(x0, depth: int, placement: str, *, method: str = "exact", component: int = 0,
                h: float = 1e-3, eps: float = 1e-6, final_norm: bool = False, sublayer=None,
                norm: str = "rms_norm") -> float:
    """||d out / d x0[component]|| for a stack of `depth` layers; x0 has shape (D,)."""
    check_choice(method, "method", METHODS)
    x0 = as_float_array(x0, "x0")
    if method == "exact":
        return float(sensitivity_curve(x0, depth, placement, component=component, eps=eps,
                                       sublayer=sublayer, final_norm=final_norm, norm=norm)[-1])
    if isinstance(h, bool) or not isinstance(h, (int, float, np.floating)) or not (np.isfinite(h) and h > 0):
        raise ValueError(f"h must be a finite number > 0, got {h!r}")
    _seed(x0, component)
    step = x0.dtype.type(h)
    nudged = x0.copy()
    nudged[component] += step
    options = dict(eps=eps, sublayer=sublayer, final_norm=final_norm, norm=norm)
    diff = (run_stack(nudged, depth, placement, **options) - run_stack(x0, depth, placement, **options)) / step
    return float(np.sqrt(np.sum(diff * diff)))


def growth(gain: float, depth: int, x0=None) -> np.ndarray:
    """|h_l| / |h_0| for l = 0..depth of a running sum that every layer multiplies by `gain` (the sublayer adds
    back (gain - 1) times the stream), computed with the unnormalized stack on x0 (default [1, 2, 3, 4])."""
    x0 = as_float_array([1.0, 2.0, 3.0, 4.0] if x0 is None else x0, "x0")
    norms = stack_curves(x0, depth, "none", sublayer=Affine(gain - 1.0, 0.0))[0]
    return np.concatenate([[1.0], norms / np.sqrt(np.sum(x0 * x0))])


def fd_curves(x0, max_depth: int, placement: str, steps, *, eps: float = 1e-6, sublayer=None,
              component: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Forward-difference sensitivities ||(out(x0 + h e) - out(x0)) / h|| at depths 1..max_depth for each step h,
    in x0's dtype, as the reference program measures them: shape (len(steps), max_depth); and each step as taken
    (x0[component] + h rounded to x0's dtype, minus x0[component])."""
    x0 = as_float_array(x0, "x0")
    eps, sublayer = _options(max_depth, placement, eps, sublayer)
    _seed(x0, component)
    steps = np.asarray(steps, dtype=x0.dtype)
    rows = np.repeat(x0[None, :], len(steps) + 1, axis=0)
    rows[1:, component] += steps
    taken = (rows[1:, component] - x0[component]).astype(np.float64)
    out = np.empty((len(steps), max_depth))
    for d in range(max_depth):                     # every row is its own stack, one layer at a time
        rows = layer(rows, placement, sublayer, eps)
        diff = (rows[1:] - rows[0]) / steps[:, None]
        out[:, d] = np.sqrt(np.sum(diff * diff, axis=1))
    return out, taken


def depth_curves(norm: str = "rms_norm", x0=None, max_depth: int = 64, *, eps: float = 1e-6, sublayer=None) -> dict:
    """{"pre": (|out|, sensitivity), "post": (...)} at depths 1..max_depth for a stack on x0 (default [1, 2, 3, 4])
    with the per-token norm `norm` (a name of normlab_core.norms); exact, float64."""
    x0 = [1.0, 2.0, 3.0, 4.0] if x0 is None else x0
    return {p: stack_curves(x0, max_depth, p, eps=eps, norm=norm, sublayer=sublayer) for p in ("pre", "post")}


def random_linear_curves(width: int, max_depth: int, stacks: int, *, norm: str = "layer_norm", eps: float = 1e-6,
                         seed: int = 0) -> np.ndarray:
    """Exact sensitivities ||d out / d x0[0]|| at depths 1..max_depth of `stacks` post-norm stacks
    h <- Norm(h + W_l h), each layer with its own random linear sublayer W_l (entries N(0, 1/width), no bias),
    on a standard normal input of `width` features; float64, shape (stacks, max_depth). Stack k draws its input
    and matrices from default_rng([seed, k])."""
    check_positive_int(width, "width")
    check_positive_int(max_depth, "max_depth")
    check_positive_int(stacks, "stacks")
    norms.get(norm, per_token=True)
    eps = check_eps(eps)
    out = np.empty((stacks, max_depth))
    for k in range(stacks):
        rng = np.random.default_rng([seed, k])
        h = rng.standard_normal(width)
        dh = np.zeros(width)
        dh[0] = 1.0
        for d in range(max_depth):
            w = rng.standard_normal((width, width)) / np.sqrt(width)
            h, dh = stack_norm_jvp(h + w @ h, dh + w @ dh, eps, norm)
            out[k, d] = np.sqrt(np.sum(dh * dh))
    return out


def identity_path_curves(width: int, max_depth: int, stacks: int, *, norm: str = "layer_norm", eps: float = 1e-6,
                         seed: int = 0) -> tuple:
    """The stacks of random_linear_curves (same seeds, same draws), split by route: per depth, the exact
    sensitivity (as there), the part that took the identity path in every layer (the norms' Jacobians alone,
    no W), and the product of ||h|| / ||h + W h|| over the layers; each float64 of shape (stacks, max_depth)."""
    check_positive_int(width, "width")
    check_positive_int(max_depth, "max_depth")
    check_positive_int(stacks, "stacks")
    norms.get(norm, per_token=True)
    eps = check_eps(eps)
    full, path, ratio = (np.empty((stacks, max_depth)) for _ in range(3))
    for k in range(stacks):
        rng = np.random.default_rng([seed, k])
        h = rng.standard_normal(width)
        dh = np.zeros(width)
        dh[0] = 1.0
        di, shrink = dh.copy(), 1.0
        for d in range(max_depth):
            w = rng.standard_normal((width, width)) / np.sqrt(width)
            v = h + w @ h
            shrink *= np.linalg.norm(h) / np.linalg.norm(v)
            _, di = stack_norm_jvp(v, di, eps, norm)       # the identity route: through the norm only
            h, dh = stack_norm_jvp(v, dh + w @ dh, eps, norm)
            full[k, d], path[k, d], ratio[k, d] = np.linalg.norm(dh), np.linalg.norm(di), shrink
    return full, path, ratio
