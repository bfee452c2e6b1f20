"""Section 23.2's BatchNorm contrast: training and inference modes with running statistics, the padding mask, the
leak from later positions to earlier ones, and the long correlated sequences, each checked against something
independent of normlab_core: plain float64 loops, algebraic identities, closed forms, the `autograd` package's
Jacobian and float64 finite differences.

The running statistics follow torch.nn.BatchNorm1d's documented definition: new = (1 - momentum) * old +
momentum * batch, the batch normalized with its biased variance and the running variance fed the unbiased one.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import jacobian

from normlab_core import batch_norm, layer_norm
from normlab_core.examples import POS_MEAN, POS_STD, long_sequences
from normlab_core.norms import (
    batch_norm_eval,
    batch_norm_masked,
    batch_norm_sequences,
    batch_norm_train,
    future_influence,
    running_stats,
)

EPS = 1e-5


def loop_train(x, run_mean, run_var, momentum, eps):
    """Training-mode BatchNorm by explicit loops over tokens, one feature at a time (float64 Python sums)."""
    flat = [[float(v) for v in row] for row in np.asarray(x, dtype=np.float64).reshape(-1, np.shape(x)[-1])]
    n, d = len(flat), len(flat[0])
    y = [[0.0] * d for _ in range(n)]
    new_mean, new_var = [], []
    for j in range(d):
        col = [row[j] for row in flat]
        mu = sum(col) / n
        ss = sum((v - mu) ** 2 for v in col)
        for i in range(n):
            y[i][j] = (col[i] - mu) / (ss / n + eps) ** 0.5
        new_mean.append((1 - momentum) * run_mean[j] + momentum * mu)
        new_var.append((1 - momentum) * run_var[j] + momentum * ss / (n - 1))
    return np.array(y).reshape(np.shape(x)), np.array(new_mean), np.array(new_var)


def loop_eval(x, run_mean, run_var, eps):
    """Inference-mode BatchNorm by an explicit loop over every entry."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        j = idx[-1]
        out[idx] = (x[idx] - run_mean[j]) / (run_var[j] + eps) ** 0.5
    return out


@pytest.mark.parametrize("shape", [(2, 3), (5, 4), (3, 7, 2), (2, 3, 4, 5)])
@pytest.mark.parametrize("momentum", [0.0, 0.1, 0.37, 1.0])
def test_training_mode_matches_a_loop(shape, momentum):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(1.5, 3.0, shape)
    mean0, var0 = rng.normal(size=shape[-1]), rng.uniform(0.5, 2.0, shape[-1])
    y, mean, var = batch_norm_train(x, mean0, var0, momentum, EPS)
    want_y, want_mean, want_var = loop_train(x, mean0, var0, momentum, EPS)
    np.testing.assert_allclose(y, want_y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(var, want_var, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("shape", [(6, 3), (4, 9, 5)])
def test_training_mode_gives_every_feature_zero_mean_and_unit_variance(shape):
    x = np.random.default_rng(1).normal(-4.0, 7.0, shape)
    y, _, _ = batch_norm_train(x, np.zeros(shape[-1]), np.ones(shape[-1]), 0.1, eps=0.0)
    flat = y.reshape(-1, shape[-1])
    np.testing.assert_allclose(flat.mean(axis=0), 0.0, atol=1e-13)
    np.testing.assert_allclose(flat.var(axis=0), 1.0, rtol=1e-12)


def test_running_statistics_of_repeated_batches_follow_the_geometric_series():
    rng = np.random.default_rng(2)
    batch = rng.normal(3.0, 2.0, (4, 16, 3))
    m, k = 0.2, 25
    mean, var = running_stats([batch] * k, momentum=m)
    flat = batch.reshape(-1, 3)
    kept = (1 - m) ** k                        # the weight left on the starting values 0 and 1
    np.testing.assert_allclose(mean, (1 - kept) * flat.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, kept + (1 - kept) * flat.var(axis=0, ddof=1), rtol=1e-12)


def test_momentum_one_stores_the_batch_and_momentum_zero_keeps_the_old_values():
    x = np.random.default_rng(3).normal(size=(10, 2))
    _, mean, var = batch_norm_train(x, [5.0, -5.0], [9.0, 0.5], momentum=1.0)
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(var, x.var(axis=0, ddof=1), rtol=1e-13)
    _, mean, var = batch_norm_train(x, [5.0, -5.0], [9.0, 0.5], momentum=0.0)
    np.testing.assert_array_equal(mean, [5.0, -5.0])
    np.testing.assert_array_equal(var, [9.0, 0.5])


def test_inference_mode_matches_a_loop_and_ignores_the_rest_of_the_batch():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 5, 4))
    mean, var = rng.normal(size=4), rng.uniform(0.1, 3.0, 4)
    np.testing.assert_allclose(batch_norm_eval(x, mean, var), loop_eval(x, mean, var, EPS), rtol=1e-13)
    other = x.copy()
    other[1:] = rng.normal(size=(2, 5, 4))     # new company for example 0
    np.testing.assert_array_equal(batch_norm_eval(other, mean, var)[0], batch_norm_eval(x, mean, var)[0])


def test_training_mode_output_of_a_token_changes_with_its_batch_and_differs_from_inference():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 8, 3))
    other = x.copy()
    other[1:] = rng.normal(size=(3, 8, 3))
    mean, var = running_stats(rng.normal(size=(50, 4, 8, 3)))
    a = batch_norm_train(x, mean, var)[0][0]
    b = batch_norm_train(other, mean, var)[0][0]
    assert np.max(np.abs(a - b)) > 1e-3
    assert np.max(np.abs(a - batch_norm_eval(x, mean, var)[0])) > 1e-3


def test_masked_batch_norm_uses_the_real_tokens_only_whatever_the_padding():
    rng = np.random.default_rng(6)
    lengths = np.array([3, 7, 5])
    mask = np.arange(9)[None, :] < lengths[:, None]
    x = rng.normal(2.0, 1.5, (3, 9, 4))
    real = x[mask]
    want = np.array([[(real[i, j] - real[:, j].mean()) / np.sqrt(real[:, j].var() + EPS) for j in range(4)]
                     for i in range(len(real))])
    padded = np.where(mask[..., None], x, 0.0)
    junk = np.where(mask[..., None], x, rng.normal(50.0, 9.0, x.shape))
    for filler in (padded, junk):
        y = batch_norm_masked(filler, mask)
        np.testing.assert_allclose(y[mask], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(y[~mask], 0.0)
    # unmasked, the filler changes the real tokens' outputs, and differently for different filler
    assert np.max(np.abs(batch_norm_sequences(padded)[mask] - want)) > 1e-2
    assert np.max(np.abs(batch_norm_sequences(junk)[mask] - batch_norm_sequences(padded)[mask])) > 1e-2


def bn_feature0_autograd(x0):
    """BatchNorm of feature 0 over all B*T tokens, in autograd's numpy (x0: the (B*T,) column)."""
    mu = anp.mean(x0)
    return (x0 - mu) / anp.sqrt(anp.mean((x0 - mu) ** 2) + EPS)


@pytest.mark.parametrize("b, t, d", [(1, 5, 3), (3, 6, 4), (2, 11, 2)])
def test_future_influence_matches_autograd_and_the_closed_form(b, t, d):
    x = np.random.default_rng(b * t * d).normal(0.5, 2.0, (b, t, d))
    source = t - 1
    bn_d, ln_d = future_influence(x, source, delta=1e-5)
    col = x[..., 0].reshape(-1)
    jac = jacobian(bn_feature0_autograd)(col)      # (B*T, B*T)
    np.testing.assert_allclose(bn_d, jac[:t, source], rtol=1e-6, atol=1e-9)
    y = batch_norm_sequences(x)[..., 0].reshape(-1)
    s, n = np.sqrt(col.var() + EPS), col.size
    closed = ((np.arange(t) == source) - (1 + y[:t] * y[source]) / n) / s
    np.testing.assert_allclose(bn_d, closed, rtol=1e-6, atol=1e-9)
    assert np.all(bn_d[:source] != 0)                 # every earlier position hears the last token
    np.testing.assert_array_equal(ln_d[:source], 0.0)  # LayerNorm: not a single bit moves
    assert ln_d[source] != 0


def test_changing_a_future_token_moves_earlier_batch_norm_outputs_but_not_layer_norm():
    x = np.random.default_rng(7).normal(size=(2, 10, 4))
    moved = x.copy()
    moved[0, 9] += 3.0
    assert np.min(np.abs(batch_norm_sequences(moved)[:, :9] - batch_norm_sequences(x)[:, :9])) > 0
    np.testing.assert_array_equal(layer_norm(moved)[:, :9], layer_norm(x)[:, :9])
    np.testing.assert_array_equal(layer_norm(moved)[1], layer_norm(x)[1])


def test_a_single_token_normalizes_to_zero_and_training_mode_refuses_it():
    token = np.array([[1.0, -2.0, 3.5]])
    np.testing.assert_array_equal(batch_norm(token), 0.0)
    with pytest.raises(ValueError, match="at least 2"):
        batch_norm_train(token, np.zeros(3), np.ones(3))


@pytest.mark.parametrize("rho", [0.0, 0.6, 0.9])
def test_long_sequences_have_the_positions_statistics_and_the_neighbour_correlation(rho):
    x = long_sequences(60, rho, features=3, n_draws=30, batch=40, seed=11)
    assert x.shape == (30, 40, 60, 3)
    np.testing.assert_array_equal(x[:, 0], np.broadcast_to(x[0, 0], x[:, 0].shape))
    pos = np.arange(60) % POS_MEAN.size
    z = (x[:, 1:] - POS_MEAN[pos][:, None]) / POS_STD[pos][:, None]  # standardized, tracked example left out
    np.testing.assert_allclose(z.mean(axis=(0, 1, 3)), 0.0, atol=0.1)
    np.testing.assert_allclose(z.std(axis=(0, 1, 3)), 1.0, atol=0.1)
    lag1 = np.mean(z[:, :, 1:] * z[:, :, :-1])
    assert abs(lag1 - rho) < 0.02


@pytest.mark.parametrize("call, exc, words", [
    (lambda: batch_norm_train(np.ones((3, 2)), [0, 0], [1, 1], momentum=1.5), ValueError, "momentum"),
    (lambda: batch_norm_train(np.ones((3, 2)), [0, 0], [1, 1], momentum=True), TypeError, "momentum"),
    (lambda: batch_norm_train(np.ones((3, 2)), [0, 0, 0], [1, 1], momentum=0.1), ValueError, "running_mean"),
    (lambda: batch_norm_eval(np.ones((3, 2)), [0, 0], [1, -1]), ValueError, "running_var"),
    (lambda: batch_norm_masked(np.ones((2, 3, 2)), np.ones((2, 3))), ValueError, "mask"),
    (lambda: batch_norm_masked(np.ones((2, 3, 2)), np.zeros((2, 3), bool)), ValueError, "mask"),
    (lambda: future_influence(np.ones((2, 3, 2)), 3), ValueError, "source"),
    (lambda: running_stats([]), ValueError, "batches"),
])
def test_bad_input_is_refused_by_name(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
