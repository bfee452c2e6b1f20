"""Scale invariance: a LayerNorm after a linear layer W makes the loss blind to the size of W.

The toy model is h = X @ W.T (N rows of D_in -> D_out features), y = layer_norm(h) with no gamma or beta, and the loss
L(W) = sum((y - T)**2) / (2 N) against targets T. Multiplying W by c > 0 multiplies h by c, which the norm divides
away (exactly when eps = 0). So L(c W) = L(W), the gradient is orthogonal to W, it shrinks like 1/c, and a plain
gradient step turns W by an angle that shrinks like 1/c**2: the effective learning rate is lr / |W|**2.

With large effective steps (a short W, weak weight decay) the path of gradient descent is chaotic: a change in the
last bit of W ends 300 steps later somewhere else. So the products here add their terms in one fixed order instead of
calling BLAS, whose order depends on the processor and the thread count: every machine gets the same bits.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_eps, check_positive_int
from .backward import _input_grad
from .norms import layer_norm, layer_norm_stats


def loss(w, x, t, eps: float = 0.0) -> float:
    """L(W) = sum((layer_norm(x @ w.T) - t)**2) / (2 N); w (D_out, D_in), x (N, D_in), t (N, D_out)."""
    w, x, t = _checked(w, x, t)
    y = layer_norm(ordered_matmul(x, w.T), eps=check_eps(eps))
    return float(np.sum((y - t) ** 2) / (2 * x.shape[0]))


def loss_grad(w, x, t, eps: float = 0.0) -> np.ndarray:
    """dL/dW (D_out, D_in) of `loss`, through LayerNorm's backward pass."""
    w, x, t = _checked(w, x, t)
    return _grad(w, x, t, check_eps(eps))


def _grad(w, x, t, eps):
    """loss_grad on checked arrays: one pass of LayerNorm's statistics serves the forward and the backward."""
    x_hat, std_inv = layer_norm_stats(ordered_matmul(x, w.T), eps)      # y = x_hat: no gamma, no beta
    return ordered_matmul(_input_grad((x_hat - t) / x.shape[0], x_hat, std_inv).T, x)


def ordered_matmul(a, b):
    """a @ b for a (n, k) and b (k, m), adding the k terms in order 0, 1, ...: the same bits on every machine."""
    out = a[:, :1] * b[:1, :]
    for i in range(1, a.shape[1]):
        out = out + a[:, i:i + 1] * b[i:i + 1, :]
    return out


def ordered_norm(a) -> float:
    """|a|, the Euclidean length of an array read as a vector, summed in one fixed order (not by BLAS)."""
    return float(np.sqrt(np.add.reduce(np.square(np.ravel(a)))))


def toy(seed: int = 48, d: int = 8, n: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The section's toy layer from one seed: w (d, d) normal / sqrt(d), then inputs x (n, d) and targets t (n, d)."""
    rng = np.random.default_rng(check_positive_int(seed, "seed", lo=0))
    d, n = check_positive_int(d, "d"), check_positive_int(n, "n")
    w = rng.normal(size=(d, d)) / np.sqrt(d)
    return w, rng.normal(size=(n, d)), rng.normal(size=(n, d))


def effective_lr(w, lr: float) -> float:
    """lr / |W|**2: how far a step of learning rate lr turns a scale-invariant W, per unit of its unit gradient."""
    return float(lr / np.sum(np.square(as_float_array(w, "w"))))


def angle(a, b) -> float:
    """The angle in radians between two arrays of one shape, read as vectors."""
    a, b = np.ravel(a) / ordered_norm(a), np.ravel(b) / ordered_norm(b)
    # 2 atan(|a - b| / |a + b|) of the unit vectors: accurate for small angles too, where arccos is not
    return float(2 * np.arctan2(ordered_norm(a - b), ordered_norm(a + b)))


def sgd(w, x, t, lr: float, steps: int, weight_decay: float = 0.0, eps: float = 0.0) -> dict:
    """Plain gradient descent W <- W - lr (dL/dW + weight_decay W): per step, |W| and the angle W turned by."""
    w, x, t = _checked(w, x, t)
    eps, steps = check_eps(eps), check_positive_int(steps, "steps")
    for name, v in (("lr", lr), ("weight_decay", weight_decay)):
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
            raise ValueError(f"sgd: {name} must be a finite number >= 0, got {v!r}")
    norms, turns = [ordered_norm(w)], []
    for _ in range(steps):
        new = w - lr * (_grad(w, x, t, eps) + weight_decay * w)
        turns.append(angle(w, new))
        norms.append(ordered_norm(new))
        w = new
    return {"norm": np.array(norms), "turn": np.array(turns), "w": w}


def _checked(w, x, t):
    """w (D_out, D_in), x (N, D_in), t (N, D_out) as float arrays, or a ValueError naming the shapes."""
    w, x, t = as_float_array(w, "w"), as_float_array(x, "x"), as_float_array(t, "t")
    if w.ndim != 2 or x.ndim != 2 or t.ndim != 2:
        raise ValueError(f"w, x and t must be 2-D, got shapes {w.shape}, {x.shape} and {t.shape}")
    if x.shape[1] != w.shape[1] or t.shape != (x.shape[0], w.shape[0]):
        raise ValueError(f"shapes do not fit: w {w.shape} needs x (N, {w.shape[1]}) and t (N, {w.shape[0]}), "
                         f"got x {x.shape} and t {t.shape}")
    return w, x, t
