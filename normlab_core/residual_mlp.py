"""A small residual network of MLP blocks, wired with no norm, post-norm or pre-norm, trained by plain gradient descent
on a fixed regression task; the spread of its activations and gradients layer by layer (section 23.2).

The stream is h_0 = x (B, WIDTH). Layer i adds an MLP block F_i (the transformer's GELU MLP, Xavier weights):
none h + F(h), post LN(h + F(h)), pre h + F(LN(h)) with one more LN before the read-out, as pre-norm models have.
The read-out is a linear map to OUTPUTS numbers and the loss is sum((out - y)**2) / (2 B).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_choice, check_positive_int
from .transformer import Config, linear, linear_backward, mlp, mlp_backward, norm, norm_backward, norm_params, xavier

WIRINGS = ("none", "post", "pre")
WIDTH, HIDDEN, OUTPUTS = 32, 64, 4
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
BATCH, PROBE = 64, 256                   # a training batch; the fixed batch the quantiles are measured on
TASK_SEED, PROBE_SEED = 230, 231
BLOWN = 1e8                              # a loss above this (or not finite) ends a run: it has blown up
NORM = Config(depth=1)                   # the norm the layers use: the transformer's LayerNorm and its eps


_RNG = np.random.default_rng(TASK_SEED)
TEACHER = (_RNG.normal(size=(WIDTH, 16)) / np.sqrt(WIDTH), _RNG.normal(size=(16, OUTPUTS)) / np.sqrt(16))


def teacher(x: np.ndarray) -> np.ndarray:
    """The targets (B, OUTPUTS) of inputs x (B, WIDTH): a fixed random tanh layer, the same for every run."""
    a, b = TEACHER
    return np.tanh(2 * x @ a) @ b


def batch(rng, size: int = BATCH) -> tuple[np.ndarray, np.ndarray]:
    """Inputs x (size, WIDTH), standard normal, and their targets (size, OUTPUTS)."""
    x = rng.normal(size=(size, WIDTH))
    return x, teacher(x)


def init(depth: int, wiring: str, seed: int = 0) -> dict:
    """The starting parameters: per layer w1 (WIDTH, HIDDEN), w2 (HIDDEN, WIDTH), zero biases, the norms' gamma 1 and
    beta 0, and the read-out (WIDTH, OUTPUTS)."""
    check_positive_int(depth, "depth")
    check_choice(wiring, "wiring", WIRINGS)
    rng = np.random.default_rng(seed)
    p = {}
    for i in range(depth):
        pre = f"layer{i}."
        p[pre + "w1"], p[pre + "b1"] = xavier(rng, WIDTH, HIDDEN), np.zeros(HIDDEN)
        p[pre + "w2"], p[pre + "b2"] = xavier(rng, HIDDEN, WIDTH), np.zeros(WIDTH)
        if wiring != "none":
            p.update(norm_params(NORM, pre + "ln.", WIDTH))
    if wiring == "pre":
        p.update(norm_params(NORM, "final.ln.", WIDTH))
    p["out.w"], p["out.b"] = xavier(rng, WIDTH, OUTPUTS), np.zeros(OUTPUTS)
    return p


def depth_of(p: dict) -> int:
    return sum(1 for k in p if k.endswith(".w1"))


def forward(p: dict, wiring: str, x: np.ndarray):
    """(out (B, OUTPUTS), stream: the residual stream h_0 .. h_L, each (B, WIDTH), cache for backward)."""
    h, stream, caches = x, [x], []
    for i in range(depth_of(p)):
        pre = f"layer{i}."
        if wiring == "pre":
            n, nc = norm(h, p, pre + "ln.", NORM)
            f, fc = mlp(n, p, pre)
            h = h + f
        elif wiring == "post":
            f, fc = mlp(h, p, pre)
            h, nc = norm(h + f, p, pre + "ln.", NORM)
        else:
            (f, fc), nc = mlp(h, p, pre), None
            h = h + f
        caches.append((nc, fc))
        stream.append(h)
    top, final = (norm(h, p, "final.ln.", NORM) if wiring == "pre" else (h, None))
    return linear(top, p["out.w"], p["out.b"]), stream, (caches, final, top)


def backward(dout: np.ndarray, p: dict, wiring: str, cache) -> tuple[dict, list]:
    """(grads of every parameter, [dL/dh_0 .. dL/dh_L] each (B, WIDTH)) from dout = dL/dout (B, OUTPUTS)."""
    caches, final, top = cache
    grads = {}
    dh, grads["out.w"], grads["out.b"] = linear_backward(dout, top, p["out.w"])
    if wiring == "pre":
        dh = norm_backward(dh, final, p, "final.ln.", NORM, grads)
    dstream = [dh]
    for i in reversed(range(len(caches))):
        pre, (nc, fc) = f"layer{i}.", caches[i]
        if wiring == "pre":
            dh = dh + norm_backward(mlp_backward(dh, fc, p, pre, grads), nc, p, pre + "ln.", NORM, grads)
        elif wiring == "post":
            ds = norm_backward(dh, nc, p, pre + "ln.", NORM, grads)
            dh = ds + mlp_backward(ds, fc, p, pre, grads)
        else:
            dh = dh + mlp_backward(dh, fc, p, pre, grads)
        dstream.append(dh)
    return grads, dstream[::-1]


def loss_and_grads(p: dict, wiring: str, x: np.ndarray, y: np.ndarray):
    """(loss, grads, stream, dstream) of sum((out - y)**2) / (2 B) on one batch."""
    out, stream, cache = forward(p, wiring, x)
    diff = out - y
    grads, dstream = backward(diff / x.shape[0], p, wiring, cache)
    return float(np.sum(diff * diff) / (2 * x.shape[0])), grads, stream, dstream


def bands(p: dict, wiring: str, x: np.ndarray, y: np.ndarray) -> dict:
    """QUANTILES of |h_l| and of |dL/dh_l| over the batch's entries, layer by layer: each (len(QUANTILES), L + 1)."""
    _, _, stream, dstream = loss_and_grads(p, wiring, x, y)
    q = np.array(QUANTILES)
    return {"act": np.quantile(np.abs(np.stack(stream)), q, axis=(1, 2)),
            "grad": np.quantile(np.abs(np.stack(dstream)), q, axis=(1, 2))}


def train(depth: int, wiring: str, lr: float, steps: int, seed: int = 0) -> dict:
    """Plain gradient descent (fresh batches from `seed`): the loss of each step, the bands at the start and at the
    last step whose loss stayed finite and below BLOWN, that step, and the step the run blew up at (None if never)."""
    check_positive_int(steps, "steps")
    if not (isinstance(lr, (int, float)) and np.isfinite(lr) and lr > 0):
        raise ValueError(f"train: lr must be a finite number > 0, got {lr!r}")
    p = init(depth, wiring, seed)
    probe = batch(np.random.default_rng(PROBE_SEED), PROBE)
    rng = np.random.default_rng(1000 + seed)
    start, losses, blown, last = bands(p, wiring, *probe), [], None, p
    with np.errstate(all="ignore"):
        for step in range(steps):
            loss, grads, _, _ = loss_and_grads(p, wiring, *batch(rng))
            if not np.isfinite(loss) or loss > BLOWN:
                blown, p = step, last      # back to the weights of the last finite loss
                break
            losses.append(loss)
            if step == steps - 1:
                break                      # the bands below are of the weights this loss was measured at
            last = {k: v.copy() for k, v in p.items()}
            for k, g in grads.items():
                p[k] -= lr * g
        end = bands(p, wiring, *probe)
    return {"loss": np.array(losses), "start": start, "end": end, "end_step": len(losses) - 1, "blown": blown}
