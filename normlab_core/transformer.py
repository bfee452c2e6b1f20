"""A tiny decoder-only transformer in numpy, with its backward pass written out by hand.

The model reads `x SEP reverse(x)` (training.reversal_batch) and is scored on the reversed half only.
Every layer has two residual sublayers, causal self-attention and a GELU MLP, wired in one of three ways:

- post: h = Norm(h + F(h))          (the 2017 transformer; with `deepnorm`, Norm(alpha * h + F(h)))
- pre:  h = h + F(Norm(h))          (GPT-2 onwards)
- peri: h = h + Norm(F(Norm(h)))    (a norm before and after each sublayer)

Norm is any per-token norm of normlab_core.norms (LayerNorm, RMSNorm, DyT = gamma * tanh(alpha * x) + beta),
looked up by name in its registry; its forward and backward are that norm's plain module.
Parameters are a flat dict of arrays, so an optimizer or a gradient check can loop over them.
Shapes: B sequences, S = 2 * seq_len positions read, D = d_model, H heads of size K = D / H, V = vocab.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from . import norms
from ._checks import check_choice, check_eps, check_positive_int

PLACEMENTS = ("post", "pre", "peri")
DYT_ALPHA = norms.dyt.ALPHA   # DyT's starting alpha (Zhu et al. 2025 use 0.5 outside their largest language models)


@dataclass(frozen=True)
class Config:
    """The model's size and its variant; `final_norm` None means on for pre and peri, off for post."""

    depth: int
    d_model: int = 32
    heads: int = 4
    d_ff: int = 128
    vocab: int = 16
    seq_len: int = 8
    placement: str = "post"
    norm: str = "layer_norm"
    qk_norm: bool = False
    deepnorm: bool = False
    final_norm: bool | None = None
    eps: float = 1e-5
    dyt_alpha: float = DYT_ALPHA

    def __post_init__(self):
        for name in ("depth", "d_model", "heads", "d_ff", "vocab", "seq_len"):
            check_positive_int(getattr(self, name), name)
        check_choice(self.placement, "placement", PLACEMENTS)
        check_eps(self.eps)
        norms.get(self.norm, per_token=True)
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of heads ({self.heads})")
        for name in ("qk_norm", "deepnorm"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.deepnorm and self.placement != "post":
            raise ValueError("deepnorm rescales a post-norm residual; it needs placement='post', "
                             f"got {self.placement!r}")
        if isinstance(self.dyt_alpha, bool) or not isinstance(self.dyt_alpha, (int, float)) \
                or not math.isfinite(self.dyt_alpha) or self.dyt_alpha <= 0:
            raise ValueError(f"dyt_alpha must be a finite number > 0, got {self.dyt_alpha!r}")
        if self.dyt_alpha != DYT_ALPHA and self.norm != "dyt":
            raise ValueError(f"dyt_alpha is DyT's starting alpha; it needs norm='dyt', got norm={self.norm!r}")
        if self.final_norm is None:
            object.__setattr__(self, "final_norm", self.placement != "post")
        elif not isinstance(self.final_norm, bool):
            raise TypeError(f"final_norm must be True, False or None, got {self.final_norm!r}")

    @property
    def sep(self) -> int:
        """The separator token's id (one past the data tokens 0 .. vocab-1)."""
        return self.vocab

    @property
    def alpha(self) -> float:
        """DeepNorm's up-weighting of the residual, (2 * depth) ** 0.25; 1 without deepnorm."""
        return (2 * self.depth) ** 0.25 if self.deepnorm else 1.0

    @property
    def beta(self) -> float:
        """DeepNorm's down-scaling of the value, output and MLP weights at init, (8 * depth) ** -0.25; else 1."""
        return (8 * self.depth) ** -0.25 if self.deepnorm else 1.0


# -- parameters --------------------------------------------------------------------------------------------------

def xavier(rng, fan_in: int, fan_out: int, gain: float = 1.0) -> np.ndarray:
    """A (fan_in, fan_out) matrix, uniform in +-gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio 2010)."""
    limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out))


def norm_params(cfg: Config, prefix: str, dim: int) -> dict:
    """The learned parameters of one norm over `dim` features, at the norm's starting values (DyT's alpha from
    cfg.dyt_alpha), each named prefix + its name."""
    module = norms.get(cfg.norm)
    start = module.init(dim)
    for param, field in getattr(module, "CONFIG", {}).items():   # e.g. DyT's alpha from cfg.dyt_alpha
        start[param] = np.full_like(start[param], float(getattr(cfg, field)))
    return {prefix + name: value for name, value in start.items()}


def check_norm_fields(registry: dict) -> None:
    """Refuse, at import, a norm whose CONFIG names no Config field or a field another norm sets, or whose parameter
    has the name of a Config field (it would read as that field's value): each starting value has one home."""
    fields = {f.name for f in dataclasses.fields(Config)}
    owner: dict = {}
    for key, module in registry.items():
        for param, field in getattr(module, "CONFIG", {}).items():
            if param not in module.PARAMS or field not in fields or field in owner:
                raise ValueError(f"norm {key!r}: CONFIG {param!r} -> {field!r} must map one of its PARAMS "
                                 f"{module.PARAMS} to a Config field no other norm sets (taken: {sorted(owner)})")
            owner[field] = key
        clash = sorted(set(module.PARAMS) & fields)
        if clash:
            raise ValueError(f"norm {key!r} has parameters named like Config fields {clash}; rename them")


check_norm_fields(norms.REGISTRY)


def layer_names(cfg: Config) -> list[str]:
    """The norms of one layer: each sublayer's norm, and for peri also the norm after it."""
    names = ["attn.norm.", "mlp.norm."]
    if cfg.placement == "peri":
        names += ["attn.norm_out.", "mlp.norm_out."]
    return names


def init_params(cfg: Config, seed: int = 0, dtype=np.float64) -> dict:
    """Every parameter by name, Xavier-uniform matrices and zero biases, from one seed."""
    rng = np.random.default_rng(seed)
    D, F, V, S, K = cfg.d_model, cfg.d_ff, cfg.vocab, 2 * cfg.seq_len, cfg.d_model // cfg.heads
    p = {"tok_emb": xavier(rng, V + 1, D), "pos_emb": xavier(rng, S, D)}
    for i in range(cfg.depth):
        pre = f"layer{i}."
        p[pre + "attn.wq"], p[pre + "attn.wk"] = xavier(rng, D, D), xavier(rng, D, D)
        p[pre + "attn.wv"], p[pre + "attn.wo"] = xavier(rng, D, D, cfg.beta), xavier(rng, D, D, cfg.beta)
        p[pre + "mlp.w1"], p[pre + "mlp.w2"] = xavier(rng, D, F, cfg.beta), xavier(rng, F, D, cfg.beta)
        for name, size in (("attn.bq", D), ("attn.bk", D), ("attn.bv", D), ("attn.bo", D),
                           ("mlp.b1", F), ("mlp.b2", D)):
            p[pre + name] = np.zeros(size)
        for name in layer_names(cfg):
            p.update(norm_params(cfg, pre + name, D))
        if cfg.qk_norm:
            p.update(norm_params(cfg, pre + "attn.q_norm.", K))
            p.update(norm_params(cfg, pre + "attn.k_norm.", K))
    if cfg.final_norm:
        p.update(norm_params(cfg, "final_norm.", D))
    p["head.w"], p["head.b"] = xavier(rng, D, V), np.zeros(V)
    return {k: v.astype(dtype) for k, v in p.items()}


# -- building blocks: each forward returns (output, cache) and each backward takes (d output, cache) --------------

def linear(x, w, b):
    """x (..., I) @ w (I, O) + b (O,) -> (..., O)."""
    return x @ w + b


def linear_backward(dy, x, w):
    """(dx (..., I), dw (I, O), db (O,)) of y = x @ w + b, given dy (..., O)."""
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])       # (N, I), (N, O) with N = B * S
    return dy @ w.T, x2.T @ dy2, dy2.sum(axis=0)


def norm(x, p, prefix, cfg):
    """The configured norm of x (..., N) over its last axis, with parameters p[prefix + ...]: (y, cache)."""
    module = norms.get(cfg.norm)
    params = [p[prefix + name] for name in module.PARAMS]
    return module.forward(x, *params, **norms.settings(module, eps=cfg.eps))


def norm_backward(dy, cache, p, prefix, cfg, grads):
    """dx (..., N) of `norm`; adds its parameter gradients to grads."""
    module = norms.get(cfg.norm)
    dx, *dparams = module.backward(dy, cache)
    for name, d in zip(module.PARAMS, dparams, strict=True):
        grads[prefix + name] = d
    return dx


GELU_C = math.sqrt(2 / math.pi)


def gelu(a):
    """GELU in its tanh form (as GPT-2 uses), elementwise: (0.5 a (1 + t), t) with t = tanh(sqrt(2/pi) (a +
    0.044715 a^3)); the backward pass reuses t."""
    t = np.tanh(GELU_C * a * (1 + 0.044715 * a * a))
    return 0.5 * a * (1 + t), t


def gelu_backward(dy, a, t):
    """dL/da of gelu(a), given dy = dL/d gelu(a) and gelu's t; same shape as a."""
    return dy * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * a * a))


def mlp(x, p, prefix):
    """GELU MLP of x (B, S, D): (output (B, S, D), cache)."""
    a = linear(x, p[prefix + "w1"], p[prefix + "b1"])
    g, t = gelu(a)
    return linear(g, p[prefix + "w2"], p[prefix + "b2"]), (x, a, t, g)


def mlp_backward(dy, cache, p, prefix, grads):
    """dx (B, S, D) of `mlp`; adds its parameter gradients to grads."""
    x, a, t, g = cache
    dg, grads[prefix + "w2"], grads[prefix + "b2"] = linear_backward(dy, g, p[prefix + "w2"])
    da = gelu_backward(dg, a, t)
    dx, grads[prefix + "w1"], grads[prefix + "b1"] = linear_backward(da, x, p[prefix + "w1"])
    return dx


def split_heads(x, heads):
    """(B, S, D) -> (B, H, S, K)."""
    B, S, D = x.shape
    return x.reshape(B, S, heads, D // heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    """(B, H, S, K) -> (B, S, H * K)."""
    B, H, S, K = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, S, H * K)


def attention(x, p, prefix, cfg, stats):
    """Causal multi-head self-attention of x (B, S, D): (output (B, S, D), cache); records the largest logit."""
    q = split_heads(linear(x, p[prefix + "wq"], p[prefix + "bq"]), cfg.heads)
    k = split_heads(linear(x, p[prefix + "wk"], p[prefix + "bk"]), cfg.heads)
    v = split_heads(linear(x, p[prefix + "wv"], p[prefix + "bv"]), cfg.heads)
    q_cache = k_cache = None
    if cfg.qk_norm:
        q, q_cache = norm(q, p, prefix + "q_norm.", cfg)
        k, k_cache = norm(k, p, prefix + "k_norm.", cfg)
    S, K = x.shape[1], q.shape[-1]
    logits = q @ k.transpose(0, 1, 3, 2) / math.sqrt(K)           # (B, H, S, S)
    causal = np.tril(np.ones((S, S), dtype=bool))
    logits = np.where(causal, logits, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True, initial=-np.inf)  # (B, H, S, 1); initial: same max, faster
    stats["max_logit"] = max(stats["max_logit"], float(row_max.max()))
    att = np.exp(logits - row_max)
    att /= att.sum(axis=-1, keepdims=True)
    y = merge_heads(att @ v)
    out = linear(y, p[prefix + "wo"], p[prefix + "bo"])
    return out, (x, q, k, v, q_cache, k_cache, att, y)


def attention_backward(dout, cache, p, prefix, cfg, grads):
    """dx (B, S, D) of `attention`; adds its parameter gradients to grads."""
    x, q, k, v, q_cache, k_cache, att, y = cache
    dy, grads[prefix + "wo"], grads[prefix + "bo"] = linear_backward(dout, y, p[prefix + "wo"])
    dy = split_heads(dy, cfg.heads)
    datt = dy @ v.transpose(0, 1, 3, 2)
    dv = att.transpose(0, 1, 3, 2) @ dy
    dlogits = att * (datt - np.sum(datt * att, axis=-1, keepdims=True))  # softmax backward; masked entries stay 0
    dlogits /= math.sqrt(q.shape[-1])
    dq, dk = dlogits @ k, dlogits.transpose(0, 1, 3, 2) @ q
    if cfg.qk_norm:
        dq = norm_backward(dq, q_cache, p, prefix + "q_norm.", cfg, grads)
        dk = norm_backward(dk, k_cache, p, prefix + "k_norm.", cfg, grads)
    dx = 0
    for name, d in (("q", dq), ("k", dk), ("v", dv)):
        dxi, grads[prefix + "w" + name], grads[prefix + "b" + name] = linear_backward(
            merge_heads(d), x, p[prefix + "w" + name])
        dx = dx + dxi
    return dx


# -- one residual sublayer in each placement ----------------------------------------------------------------------

def sublayer(h, p, prefix, kind, cfg, stats):
    """One residual sublayer (kind "attn" or "mlp") of h (B, S, D) in cfg.placement: (new h (B, S, D), cache)."""
    def f(x):
        return attention(x, p, prefix + "attn.", cfg, stats) if kind == "attn" else mlp(x, p, prefix + "mlp.")

    norm_in, norm_out = f"{prefix}{kind}.norm.", f"{prefix}{kind}.norm_out."
    if cfg.placement == "post":                        # Norm(alpha h + F(h)); alpha is 1 without DeepNorm
        u, c_f = f(h)
        out, c_n = norm(cfg.alpha * h + u, p, norm_in, cfg)
        return out, (c_f, c_n, None)
    n, c_n = norm(h, p, norm_in, cfg)                  # pre and peri: the sublayer reads Norm(h) ...
    u, c_f = f(n)
    c_o = None
    if cfg.placement == "peri":                        # ... peri also normalizes what it adds
        u, c_o = norm(u, p, norm_out, cfg)
    return h + u, (c_f, c_n, c_o)


def sublayer_backward(dout, cache, p, prefix, kind, cfg, grads):
    """dh (B, S, D) of `sublayer`; adds its parameter gradients to grads."""
    def f_backward(du):
        if kind == "attn":
            return attention_backward(du, c_f, p, prefix + "attn.", cfg, grads)
        return mlp_backward(du, c_f, p, prefix + "mlp.", grads)

    c_f, c_n, c_o = cache
    norm_in, norm_out = f"{prefix}{kind}.norm.", f"{prefix}{kind}.norm_out."
    if cfg.placement == "post":
        ds = norm_backward(dout, c_n, p, norm_in, cfg, grads)
        return cfg.alpha * ds + f_backward(ds)
    du = dout if c_o is None else norm_backward(dout, c_o, p, norm_out, cfg, grads)
    return dout + norm_backward(f_backward(du), c_n, p, norm_in, cfg, grads)


# -- the whole model ---------------------------------------------------------------------------------------------

def split_tokens(tokens, cfg: Config):
    """(inputs (B, S), targets (B, seq_len)) from tokens (B, 2 * seq_len + 1): the model reads all but the last
    token, and is scored on predicting the reversed half."""
    tokens = np.asarray(tokens)
    want = 2 * cfg.seq_len + 1
    if tokens.ndim != 2 or tokens.shape[1] != want or tokens.dtype.kind not in "iu":
        raise ValueError(f"tokens must be an integer array (batch, {want}) as training.reversal_batch returns, "
                         f"got {tokens.dtype} {tokens.shape}")
    if tokens.min() < 0 or tokens.max() > cfg.sep:
        raise ValueError(f"token ids must lie in 0..{cfg.sep} (the data tokens and SEP = {cfg.sep})")
    return tokens[:, :-1], tokens[:, cfg.seq_len + 1:]


def forward(params, cfg: Config, inputs, stats):
    """Logits (B, seq_len, V) at the answer positions, and the caches for `backward`."""
    S = inputs.shape[1]
    h = params["tok_emb"][inputs] + params["pos_emb"][:S]
    caches = []
    stats.update(max_logit=-np.inf, resid_rms=[], resid_max=[])
    for i in range(cfg.depth):
        for kind in ("attn", "mlp"):
            h, c = sublayer(h, params, f"layer{i}.", kind, cfg, stats)
            caches.append(c)
        stats["resid_rms"].append(float(np.sqrt(np.mean(h * h))))
        stats["resid_max"].append(float(np.max(np.abs(h))))
    c_final = None
    if cfg.final_norm:
        h, c_final = norm(h, params, "final_norm.", cfg)
    answer = h[:, cfg.seq_len:]                                      # reads SEP and x reversed, minus its last
    logits = linear(answer, params["head.w"], params["head.b"])
    return logits, (inputs, caches, c_final, answer, h.shape)


def cross_entropy(logits, targets):
    """(mean loss, dL/dlogits) of softmax cross-entropy; logits (B, T, V), integer targets (B, T)."""
    shifted = logits - logits.max(axis=-1, keepdims=True, initial=-np.inf)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)
    one_hot = np.eye(logits.shape[-1], dtype=logits.dtype)[targets]
    return float(-picked.mean()), (np.exp(log_probs) - one_hot) / targets.size


def backward(dlogits, cache, params, cfg: Config) -> dict:
    """The gradient of every parameter, given dL/dlogits (B, seq_len, V)."""
    inputs, caches, c_final, answer, shape = cache
    grads = {}
    danswer, grads["head.w"], grads["head.b"] = linear_backward(dlogits, answer, params["head.w"])
    dh = np.zeros(shape, dtype=dlogits.dtype)
    dh[:, cfg.seq_len:] = danswer
    if cfg.final_norm:
        dh = norm_backward(dh, c_final, params, "final_norm.", cfg, grads)
    for i in reversed(range(cfg.depth)):
        for j, kind in reversed(list(enumerate(("attn", "mlp")))):
            dh = sublayer_backward(dh, caches[2 * i + j], params, f"layer{i}.", kind, cfg, grads)
    grads["pos_emb"] = np.zeros_like(params["pos_emb"])
    grads["pos_emb"][: shape[1]] = dh.sum(axis=0)
    grads["tok_emb"] = np.zeros_like(params["tok_emb"])
    np.add.at(grads["tok_emb"], inputs, dh)
    return grads


def loss_and_grads(params, cfg: Config, tokens, stats: dict | None = None) -> tuple[float, dict]:
    """(mean cross-entropy over the reversed half, gradient of every parameter) for tokens (B, 2 seq_len + 1).

    If `stats` is a dict, the forward pass records in it the largest attention logit ("max_logit") and the RMS
    and largest |value| of the residual stream after each layer ("resid_rms", "resid_max", lists of depth).
    """
    inputs, targets = split_tokens(tokens, cfg)
    stats = {} if stats is None else stats
    logits, cache = forward(params, cfg, inputs, stats)
    loss, dlogits = cross_entropy(logits, targets)
    return loss, backward(dlogits, cache, params, cfg)


def evaluate(params, cfg: Config, tokens, stats: dict | None = None) -> tuple[float, float]:
    """(mean loss, token accuracy) on the reversed half of tokens (B, 2 seq_len + 1), forward pass only."""
    inputs, targets = split_tokens(tokens, cfg)
    logits, _ = forward(params, cfg, inputs, {} if stats is None else stats)
    loss, _ = cross_entropy(logits, targets)
    return loss, float(np.mean(logits.argmax(axis=-1) == targets))


def layer_cosines(params, cfg: Config, tokens) -> np.ndarray:
    """(depth,): each layer's output against its input on the residual stream, cosine per token, averaged.

    Near 1 means the layer barely turns the stream. In post-norm the norm sits on the stream itself, so a layer's
    output is a re-normalized sum; in pre-norm the layer only adds to it.
    """
    inputs, _ = split_tokens(tokens, cfg)
    h = params["tok_emb"][inputs] + params["pos_emb"][: inputs.shape[1]]
    stats = {"max_logit": -np.inf}
    out = []
    for i in range(cfg.depth):
        before = h
        for kind in ("attn", "mlp"):
            h, _ = sublayer(h, params, f"layer{i}.", kind, cfg, stats)
        dot = np.sum(before * h, axis=-1)
        out.append(np.mean(dot / (np.linalg.norm(before, axis=-1) * np.linalg.norm(h, axis=-1))))
    return np.array(out)
