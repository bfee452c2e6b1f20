"""The norm registry (normlab_core/norms): every registered module against independent references, and a new norm
added as one module plus one registry entry, used by the transformer, the residual stacks and the figures.

References: each norm's formula written again here in `autograd.numpy` (its forward and, by reverse mode, its
gradients), float64 central differences for every backward, and the adjoint identity <J v, w> = <v, J^T w> that
ties each module's jvp (J v) to its backward (J^T w).
"""

from __future__ import annotations

import re
import types

import autograd.numpy as anp
import matplotlib
import numpy as np
import pytest
from autograd import grad

from normlab_core import norms, residual
from normlab_core.stats import row_mean
from normlab_core.training import reversal_batch
from normlab_core.transformer import Config, init_params, loss_and_grads

matplotlib.use("Agg")

# -- references, written independently of the modules ------------------------------------------------------------


def _ln(x, gamma, beta, eps):
    mu = anp.mean(x, axis=-1, keepdims=True)
    return gamma * (x - mu) / anp.sqrt(anp.mean((x - mu) ** 2, axis=-1, keepdims=True) + eps) + beta


def _rms(x, gamma, eps):
    return gamma * x / anp.sqrt(anp.mean(x ** 2, axis=-1, keepdims=True) + eps)


def _dyt(x, gamma, beta, alpha):
    return gamma * anp.tanh(alpha * x) + beta


def _bn(x, gamma, beta, eps):
    mu = anp.mean(x, axis=0, keepdims=True)
    return gamma * (x - mu) / anp.sqrt(anp.mean((x - mu) ** 2, axis=0, keepdims=True) + eps) + beta


REFERENCE = {"layer_norm": _ln, "rms_norm": _rms, "dyt": _dyt, "batch_norm": _bn}
EPS = 1e-3       # large enough that the finite differences below see a smooth function


def _case(name: str, seed: int = 0, shape=(3, 4, 6)):
    """(module, x, params, settings) for `name`: random parameters around their starting values (BatchNorm takes
    x (N, D), so its x is (N * ..., D))."""
    module = norms.get(name)
    if not module.PER_TOKEN:
        shape = (int(np.prod(shape[:-1])), shape[-1])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 1.7 + 0.4
    params = [v + 0.3 * rng.standard_normal(v.shape) for v in module.init(shape[-1]).values()]
    return module, x, params, norms.settings(module, eps=EPS)


def _reference_args(module, params, settings):
    return [*params, *settings.values()]


def test_every_registered_norm_has_a_reference_here_and_the_names_are_the_stored_data_names():
    from normlab_core import data

    assert set(REFERENCE) == set(norms.REGISTRY)
    assert data.BASE["norm"] in norms.names(per_token=True)
    stored = {r["config"].get("norm", data.BASE["norm"]) for r in data.load().runs if "config" in r}
    assert stored and stored <= set(norms.names(per_token=True)), stored


@pytest.mark.parametrize("name", list(REFERENCE))
def test_forward_matches_the_autograd_formula(name):
    module, x, params, settings = _case(name)
    y, _ = module.forward(x, *params, **settings)
    np.testing.assert_allclose(y, REFERENCE[name](x, *_reference_args(module, params, settings)), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_backward_matches_autograd_for_the_input_and_every_parameter(name):
    module, x, params, settings = _case(name, seed=1)
    dy = np.random.default_rng(2).standard_normal(x.shape)
    _, cache = module.forward(x, *params, **settings)
    got = module.backward(dy, cache)
    assert len(got) == 1 + len(module.PARAMS)
    args = [x, *params]

    def loss(*a):
        return anp.sum(dy * REFERENCE[name](*a, *settings.values()))

    for i, (g, a) in enumerate(zip(got, args, strict=True)):
        assert g.shape == np.shape(a), (name, i)
        np.testing.assert_allclose(g, grad(loss, i)(*args), rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_backward_matches_float64_central_differences(name):
    module, x, params, settings = _case(name, seed=3, shape=(4, 5))
    dy = np.random.default_rng(4).standard_normal(x.shape)
    got = module.backward(dy, module.forward(x, *params, **settings)[1])
    args = [x, *params]
    h = 1e-6
    for i, a in enumerate(args):
        want = np.zeros_like(a)
        for j in np.ndindex(a.shape):
            up, down = [v.copy() for v in args], [v.copy() for v in args]
            up[i][j] += h
            down[i][j] -= h
            diff = module.forward(*up, **settings)[0] - module.forward(*down, **settings)[0]
            want[j] = np.sum(dy * diff) / (2 * h)
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_jvp_is_the_adjoint_of_backward_and_gives_forwards_output(name):
    module, x, params, settings = _case(name, seed=5)
    rng = np.random.default_rng(6)
    for _ in range(3):
        v, w = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
        y, jv = module.jvp(x, v, *params, **settings)
        y_fwd, cache = module.forward(x, *params, **settings)
        jtw = module.backward(w, cache)[0]
        np.testing.assert_array_equal(y, y_fwd)
        assert np.sum(jv * w) == pytest.approx(np.sum(v * jtw), rel=1e-11, abs=1e-11)
    h = 1e-6                              # and J v itself is the directional derivative
    up, down = module.forward(x + h * v, *params, **settings)[0], module.forward(x - h * v, *params, **settings)[0]
    fd = (up - down) / (2 * h)
    np.testing.assert_allclose(jv, fd, rtol=1e-6, atol=1e-7)


def test_get_names_the_argument_and_the_allowed_names():
    every = ", ".join(f"'{name}'" for name in norms.REGISTRY)          # every registered name, in REGISTRY's order
    with pytest.raises(ValueError, match=re.escape(f"unknown norm 'group_norm'; allowed: {every}")):
        norms.get("group_norm")
    with pytest.raises(ValueError, match=r"norm 'batch_norm' \(BatchNorm\) normalizes across the examples"):
        norms.get("batch_norm", per_token=True)
    with pytest.raises(ValueError) as unknown:           # an unknown name is not blamed on BatchNorm
        norms.get("group_norm", per_token=True)
    assert "BatchNorm" not in str(unknown.value) and "per-token" not in str(unknown.value)
    with pytest.raises(ValueError, match="unknown norm 'layer'"):
        Config(depth=1, norm="layer")
    with pytest.raises(ValueError, match="unknown norm 'layer'"):
        residual.run_stack([1.0, 2.0], 2, "post", norm="layer")


# -- a new norm: one module and one registry entry -----------------------------------------------------------------


def _centring_module():
    """Mean-only centring, y = gamma * (x - mean(x)) + beta over the last axis: a norm the library does not have."""
    m = types.ModuleType("centring")
    m.NAME, m.PARAMS, m.SETTINGS, m.PER_TOKEN = "mean-centring", ("gamma", "beta"), (), True
    m.init = lambda dim: {"gamma": np.ones(dim), "beta": np.zeros(dim)}

    def forward(x, gamma, beta):
        xc = x - row_mean(x)
        return xc * gamma + beta, (xc, gamma)

    def backward(dy, cache):
        xc, gamma = cache
        g = dy * gamma
        lead = tuple(range(dy.ndim - 1))
        return g - row_mean(g), np.sum(dy * xc, axis=lead), np.sum(dy, axis=lead)

    def jvp(x, dx, gamma, beta):
        return forward(x, gamma, beta)[0], gamma * (dx - row_mean(dx))

    m.forward, m.backward, m.jvp = forward, backward, jvp
    return m


@pytest.fixture
def centring(monkeypatch):
    monkeypatch.setitem(norms.REGISTRY, "centring", _centring_module())
    return "centring"


def test_a_new_norm_trains_in_the_transformer(centring):
    cfg = Config(depth=1, d_model=8, heads=2, d_ff=12, vocab=5, seq_len=3, placement="pre", norm=centring)
    params = init_params(cfg, 0)
    assert {k for k in params if k.startswith("layer0.attn.norm.")} == {"layer0.attn.norm.gamma",
                                                                       "layer0.attn.norm.beta"}
    tokens = reversal_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    loss, grads = loss_and_grads(params, cfg, tokens)
    assert set(grads) == set(params)
    key, h = "layer0.mlp.norm.gamma", 1e-6                   # the new norm's parameter gradient is the real one
    for i in range(3):
        up, down = dict(params), dict(params)
        up[key], down[key] = params[key].copy(), params[key].copy()
        up[key][i] += h
        down[key][i] -= h
        fd = (loss_and_grads(up, cfg, tokens)[0] - loss_and_grads(down, cfg, tokens)[0]) / (2 * h)
        assert grads[key][i] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    step = {k: v - 0.05 * grads[k] for k, v in params.items()}        # one descent step lowers the loss
    assert loss_and_grads(step, cfg, tokens)[0] < loss


def test_a_new_norm_runs_in_the_residual_stacks(centring):
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    out = residual.run_stack(x0, 3, "post", norm=centring)
    h = x0
    for _ in range(3):                                       # post-norm by hand: centre(0.5 h + 0.1 + h)
        v = h + 0.5 * h + 0.1
        h = v - v.mean()
    np.testing.assert_allclose(out, h, rtol=1e-14, atol=1e-14)
    exact = residual.sensitivity_curve(x0, 6, "pre", norm=centring)
    for depth in (1, 6):
        fd = residual.sensitivity(x0, depth, "pre", method="finite_difference", h=1e-6, norm=centring)
        assert exact[depth - 1] == pytest.approx(fd, rel=1e-6)
    curves = residual.depth_curves(centring, x0, 8)
    assert set(curves) == {"pre", "post"} and curves["post"][1].shape == (8,)


def test_a_new_norm_draws_in_the_overview_figure(centring):
    import matplotlib.pyplot as plt

    from normlab_core.examples import STACK_INPUT
    from normlab_core.figures import s09_overview

    fig = plt.figure()
    x0 = np.array(STACK_INPUT, dtype=float)
    art = s09_overview.depth_setup(fig, narrow=False, x0=x0, eps=1e-6)
    out, alt = s09_overview.depth_update(art, norm=centring, placement="pre", depth=4, x0=x0, eps=1e-6)
    plt.close(fig)
    want = residual.sensitivity_curve(x0, 4, "pre", norm=centring, eps=1e-6)[-1]
    assert "with mean-centring" in alt and f"{want:.3g}"[:4] in out["pre-norm"]


# -- the registry's couplings fail loudly -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(norms.REGISTRY))
def test_per_token_is_what_the_norm_does(name):
    """PER_TOKEN is checked by behaviour: a per-token norm gives each row of a batch what it gives that row alone,
    and a norm that is not per token changes a row's output when another row changes."""
    module = norms.REGISTRY[name]
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 5))
    params = norms.start(module, 5)
    settings = norms.settings(module, eps=1e-5)
    together = module.forward(x, *params, **settings)[0]
    alone = np.stack([module.forward(x[i:i + 1], *params, **settings)[0][0] for i in range(6)])
    moved = x.copy()
    moved[1:] += 3.0 * rng.normal(size=(5, 5))
    row0_moves = not np.allclose(module.forward(moved, *params, **settings)[0][0], together[0])
    assert np.allclose(together, alone) == module.PER_TOKEN and row0_moves == (not module.PER_TOKEN), (
        f"{name}.PER_TOKEN is {module.PER_TOKEN}, but its forward {'mixes' if row0_moves else 'keeps apart'} rows")


def _scaled_module(init_alpha):
    """y = alpha * x: a norm with a parameter named alpha that is not DyT's."""
    m = types.ModuleType("scaled")
    m.NAME, m.PARAMS, m.SETTINGS, m.PER_TOKEN = "scaled", ("alpha",), (), True
    m.init = lambda dim: {"alpha": np.full(1, init_alpha(dim))}
    m.forward = lambda x, alpha: (alpha * x, (x, alpha))
    m.backward = lambda dy, cache: (dy * cache[1], np.sum(dy * cache[0]).reshape(1))
    m.jvp = lambda x, dx, alpha: (alpha * x, alpha * dx)
    return m


def test_a_parameter_named_alpha_keeps_its_own_start(monkeypatch):
    """Only a norm that maps a parameter to a Config field (DyT: CONFIG = {"alpha": "dyt_alpha"}) takes its start
    from the Config; another norm's alpha keeps the start its init gives."""
    monkeypatch.setitem(norms.REGISTRY, "scaled", _scaled_module(lambda dim: 3.0))
    params = init_params(Config(depth=1, d_model=8, heads=2, d_ff=12, vocab=5, seq_len=3, norm="scaled"), 0)
    alphas = [v for k, v in params.items() if k.endswith(".alpha")]
    assert alphas and all(v[0] == 3.0 for v in alphas)


def test_the_residual_stacks_start_a_norm_at_its_real_width(monkeypatch):
    """A start that depends on the width (alpha = 1 / D here) reaches the stacks as init(D) gives it."""
    monkeypatch.setitem(norms.REGISTRY, "scaled", _scaled_module(lambda dim: 1.0 / dim))
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    out = residual.run_stack(x0, 1, "post", norm="scaled")
    np.testing.assert_allclose(out, (x0 + 0.5 * x0 + 0.1) / 4, rtol=1e-14)


def test_a_norm_that_collides_with_a_config_field_or_a_setting_is_refused():
    from normlab_core.transformer import check_norm_fields

    clash = _scaled_module(lambda dim: 1.0)
    clash.PARAMS = ("depth",)
    with pytest.raises(ValueError, match=r"parameters named like Config fields \['depth'\]"):
        check_norm_fields({"clash": clash})
    thief = _scaled_module(lambda dim: 1.0)
    thief.CONFIG = {"alpha": "dyt_alpha"}                  # DyT already sets its alpha from dyt_alpha
    with pytest.raises(ValueError, match="a Config field no other norm sets"):
        check_norm_fields({"dyt": norms.REGISTRY["dyt"], "thief": thief})
    twice = _scaled_module(lambda dim: 1.0)
    twice.PARAMS = ("alpha", "eps")
    with pytest.raises(ValueError, match="names \\['eps'\\] twice or as a setting"):
        norms.check_registry({"twice": twice})
    lacking = types.ModuleType("lacking")
    with pytest.raises(TypeError, match="lacks"):
        norms.check_registry({"lacking": lacking})
    check_norm_fields(norms.REGISTRY)                       # the registry as shipped passes
    norms.check_registry(norms.REGISTRY)
