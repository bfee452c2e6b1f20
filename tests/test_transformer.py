"""The tiny transformer: hand-written gradients against float64 central differences for every variant, and the
forward pass against properties it must have (causality, normalized streams, DeepNorm's constants)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from normlab_core import norms
from normlab_core.training import reversal_batch
from normlab_core.transformer import (
    PLACEMENTS,
    Config,
    evaluate,
    forward,
    init_params,
    layer_cosines,
    loss_and_grads,
    split_tokens,
)

TINY = dict(depth=2, d_model=8, heads=2, d_ff=12, vocab=5, seq_len=3)

# Every placement with every per-token norm of the registry, and each switch (qk_norm, deepnorm, final_norm)
# with more than one norm.
VARIANTS = [dict(placement=p, norm=n) for p in PLACEMENTS for n in norms.names(per_token=True)]
VARIANTS += [
    dict(placement="pre", norm="layer_norm", qk_norm=True),
    dict(placement="post", norm="rms_norm", qk_norm=True),
    dict(placement="peri", norm="dyt", qk_norm=True),
    dict(placement="post", norm="layer_norm", deepnorm=True),
    dict(placement="post", norm="rms_norm", deepnorm=True, qk_norm=True),
    dict(placement="post", norm="layer_norm", final_norm=True),
    dict(placement="pre", norm="rms_norm", final_norm=False),
]


def _name(v: dict) -> str:
    return "-".join(f"{k}={val}" for k, val in v.items())


def jittered_params(cfg: Config, seed: int = 1) -> dict:
    """init_params with every gain, shift and bias moved away from its plain start (1 or 0), so that no gradient
    is checked only at a special point."""
    p = init_params(cfg, seed)
    rng = np.random.default_rng(seed + 100)
    for k, v in p.items():
        if not k.endswith(("wq", "wk", "wv", "wo", "w1", "w2", "emb", "head.w")):
            p[k] = v + 0.3 * rng.normal(size=v.shape)
    return p


def directional(f, p: dict, key: str, direction: np.ndarray, h: float = 1e-3) -> float:
    """d/dt f(p with p[key] + t * direction) at t = 0, by the fourth-order central difference."""
    base = p[key]

    def at(t):
        p[key] = base + t * direction
        try:
            return f(p)
        finally:
            p[key] = base

    return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)


def structurally_zero(key: str, cfg: Config) -> bool:
    """Parameters whose gradient is exactly zero: the same vector added to every key (the key bias, or with
    QK-norm the normalized keys' shift beta) adds a constant to each query's logits, and softmax ignores it."""
    return key.endswith("attn.k_norm.beta") or (key.endswith("attn.bk") and not cfg.qk_norm)


@pytest.mark.parametrize("variant", VARIANTS, ids=_name)
def test_gradients_match_central_differences(variant):
    """Each parameter array's gradient, along a random unit direction, agrees with float64 central differences
    of the loss to a relative error of 1e-6 (the differences' own error is about 1e-9 at this step: halving the
    step divides it by 16)."""
    cfg = Config(**TINY, **variant)
    p = jittered_params(cfg)
    tokens = reversal_batch(np.random.default_rng(5), 4, cfg.seq_len, cfg.vocab)
    loss, grads = loss_and_grads(p, cfg, tokens)
    assert set(grads) == set(p)
    assert all(grads[k].shape == p[k].shape for k in p)
    rng = np.random.default_rng(9)
    worst = 0.0
    for key in sorted(p):
        direction = rng.normal(size=p[key].shape)
        direction /= np.linalg.norm(direction)
        analytic = float(np.sum(grads[key] * direction))
        if structurally_zero(key, cfg):
            assert np.abs(grads[key]).max() < 1e-12, key
            continue
        numeric = directional(lambda q: loss_and_grads(q, cfg, tokens)[0], p, key, direction)
        rel = abs(numeric - analytic) / max(abs(numeric), abs(analytic))
        worst = max(worst, rel)
        assert rel <= 1e-6, f"{key}: analytic {analytic:.10g}, central differences {numeric:.10g}"
    assert math.isfinite(loss) and worst <= 1e-6


def test_every_coordinate_of_one_variant():
    """One variant checked coordinate by coordinate (not only along directions): every parameter array's whole
    gradient is within 1e-6 (relative, as a vector) of its float64 central differences."""
    cfg = Config(depth=1, d_model=4, heads=2, d_ff=6, vocab=3, seq_len=2, placement="peri", qk_norm=True)
    p = jittered_params(cfg)
    tokens = reversal_batch(np.random.default_rng(2), 3, cfg.seq_len, cfg.vocab)
    _, grads = loss_and_grads(p, cfg, tokens)
    for key in sorted(p):
        if structurally_zero(key, cfg):
            assert np.abs(grads[key]).max() < 1e-12, key
            continue
        numeric = np.zeros_like(p[key])
        for idx in np.ndindex(p[key].shape):
            unit = np.zeros_like(p[key])
            unit[idx] = 1.0
            numeric[idx] = directional(lambda q: loss_and_grads(q, cfg, tokens)[0], p, key, unit)
        gap = np.linalg.norm(numeric - grads[key])
        assert gap <= 1e-6 * np.linalg.norm(numeric), key


def test_float32_parameters_keep_float32():
    cfg = Config(**TINY)
    p = init_params(cfg, 0, dtype=np.float32)
    loss, grads = loss_and_grads(p, cfg, reversal_batch(np.random.default_rng(0), 2, 3, 5))
    assert all(g.dtype == np.float32 for g in grads.values())
    p64 = init_params(cfg, 0)
    loss64, _ = loss_and_grads(p64, cfg, reversal_batch(np.random.default_rng(0), 2, 3, 5))
    assert abs(loss - loss64) < 1e-5


def test_causal_attention_never_looks_ahead():
    """Changing the token at position t changes no logit at an earlier answer position."""
    cfg = Config(**TINY, placement="pre")
    p = init_params(cfg, 3)
    tokens = reversal_batch(np.random.default_rng(1), 2, cfg.seq_len, cfg.vocab)
    inputs, _ = split_tokens(tokens, cfg)
    base, _ = forward(p, cfg, inputs, {})
    S = inputs.shape[1]
    for t in range(cfg.seq_len, S):
        changed = inputs.copy()
        changed[:, t] = (changed[:, t] + 1) % cfg.vocab
        logits, _ = forward(p, cfg, changed, {})
        answer_pos = t - cfg.seq_len          # logits[:, j] is read at input position seq_len + j
        np.testing.assert_array_equal(logits[:, :answer_pos], base[:, :answer_pos])
        assert np.abs(logits[:, answer_pos:] - base[:, answer_pos:]).max() > 0


def test_post_norm_stream_has_rms_one_and_pre_norm_stream_grows():
    """With LayerNorm at its start (gamma 1, beta 0) every post-norm layer hands on rows of mean 0 and variance
    var / (var + eps), so RMS 1 to about 1e-5; the pre-norm stream only adds, and grows with depth."""
    tokens = reversal_batch(np.random.default_rng(0), 8)
    post, pre = {}, {}
    evaluate(init_params(Config(depth=6, placement="post"), 0), Config(depth=6, placement="post"), tokens, post)
    evaluate(init_params(Config(depth=6, placement="pre"), 0), Config(depth=6, placement="pre"), tokens, pre)
    np.testing.assert_allclose(post["resid_rms"], 1.0, atol=1e-4)
    assert all(b > a for a, b in zip(pre["resid_rms"], pre["resid_rms"][1:], strict=False))


def test_deepnorm_constants_and_scaled_weights():
    cfg = Config(depth=6, placement="post", deepnorm=True)
    assert cfg.alpha == pytest.approx(12 ** 0.25) and cfg.beta == pytest.approx(48 ** -0.25)
    plain, deep = init_params(Config(depth=6, placement="post"), 4), init_params(cfg, 4)
    for name in ("attn.wv", "attn.wo", "mlp.w1", "mlp.w2"):
        np.testing.assert_allclose(deep[f"layer3.{name}"], cfg.beta * plain[f"layer3.{name}"])
    for name in ("attn.wq", "attn.wk"):
        np.testing.assert_array_equal(deep[f"layer3.{name}"], plain[f"layer3.{name}"])


def test_xavier_uniform_limits():
    p = init_params(Config(depth=1), 0)
    w1 = p["layer0.mlp.w1"]
    limit = math.sqrt(6 / (32 + 128))
    assert np.abs(w1).max() <= limit and np.abs(w1).max() > 0.95 * limit
    assert abs(np.std(w1) - limit / math.sqrt(3)) < 0.02 * limit


def test_attention_logit_and_stream_records():
    cfg = Config(depth=3, placement="pre")
    stats = {}
    loss_and_grads(init_params(cfg, 0), cfg, reversal_batch(np.random.default_rng(0), 4), stats)
    assert len(stats["resid_rms"]) == len(stats["resid_max"]) == 3
    assert all(m >= r for m, r in zip(stats["resid_max"], stats["resid_rms"], strict=True))
    assert 0 < stats["max_logit"] < 10


def test_final_norm_default_follows_placement():
    assert Config(depth=1, placement="post").final_norm is False
    assert Config(depth=1, placement="pre").final_norm is True
    assert Config(depth=1, placement="peri").final_norm is True
    assert Config(depth=1, placement="post", final_norm=True).final_norm is True


@pytest.mark.parametrize("kwargs, error", [
    (dict(depth=0), ValueError),
    (dict(depth=2, placement="middle"), ValueError),
    (dict(depth=2, norm="batch_norm"), ValueError),
    (dict(depth=2, d_model=30, heads=4), ValueError),
    (dict(depth=2, placement="pre", deepnorm=True), ValueError),
    (dict(depth=2, qk_norm=1), TypeError),
    (dict(depth=2.0), TypeError),
    (dict(depth=2, norm="dyt", dyt_alpha=0.0), ValueError),
    (dict(depth=2, norm="dyt", dyt_alpha=float("nan")), ValueError),
    (dict(depth=2, norm="dyt", dyt_alpha="1"), ValueError),
    (dict(depth=2, dyt_alpha=2.0), ValueError),      # a starting alpha means nothing without DyT
])
def test_config_refuses_bad_values(kwargs, error):
    with pytest.raises(error):
        Config(**kwargs)


def test_tokens_are_checked():
    cfg = Config(**TINY)
    p = init_params(cfg, 0)
    with pytest.raises(ValueError, match="integer array"):
        loss_and_grads(p, cfg, np.zeros((2, 5)))
    with pytest.raises(ValueError, match="token ids"):
        loss_and_grads(p, cfg, np.full((2, 7), 9))


def _silenced(cfg, seed=0):
    """Parameters whose sublayers add nothing: the attention and MLP output matrices and biases are zero."""
    p = init_params(cfg, seed)
    for name in p:
        if name.endswith(("attn.wo", "attn.bo", "mlp.w2", "mlp.b2")):
            p[name] = np.zeros_like(p[name])
    return p


def test_layer_cosines_of_layers_that_add_nothing():
    tokens = reversal_batch(np.random.default_rng(3), 5)
    # Pre-norm: a sublayer that adds zero passes the stream on unchanged, so every cosine is 1.
    cfg = Config(depth=3, placement="pre")
    assert np.allclose(layer_cosines(_silenced(cfg), cfg, tokens), 1.0, atol=1e-12)
    # Post-norm: the stream becomes LayerNorm(h) (gamma 1, beta 0), and LayerNorm of that is itself up to eps. For a
    # token h with mean m, h . (h - m 1) = |h - m 1|^2, so the first layer's cosine is |h - m 1| / |h|, averaged.
    cfg = Config(depth=2, placement="post")
    p = _silenced(cfg)
    inputs, _ = split_tokens(tokens, cfg)
    h = p["tok_emb"][inputs] + p["pos_emb"][: inputs.shape[1]]
    centred = h - h.mean(axis=-1, keepdims=True)
    want = np.mean(np.linalg.norm(centred, axis=-1) / np.linalg.norm(h, axis=-1))
    got = layer_cosines(p, cfg, tokens)
    assert got[0] == pytest.approx(want, rel=1e-6) and got[1] == pytest.approx(1.0, abs=1e-6)


def test_layer_cosines_show_pre_norm_layers_turning_the_stream_less_with_depth():
    cfg = Config(depth=12, placement="pre")
    cos = layer_cosines(init_params(cfg, 0), cfg, reversal_batch(np.random.default_rng(0), 16))
    assert cos.shape == (12,) and np.all((cos > -1) & (cos < 1))
    assert cos[-1] > cos[0] and np.mean(cos[-4:]) > np.mean(cos[:4])


def test_dyt_alpha_sets_every_norms_starting_alpha_and_the_default_is_unchanged():
    base = init_params(Config(depth=2, norm="dyt"), 0)
    wide = init_params(Config(depth=2, norm="dyt", dyt_alpha=2.0), 0)
    alphas = [k for k in base if k.endswith(".alpha")]
    assert alphas and all(base[k][0] == 0.5 and wide[k][0] == 2.0 for k in alphas)
    assert all(np.array_equal(base[k], wide[k]) for k in base if k not in alphas)
