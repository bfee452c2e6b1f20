"""The chapter's example inputs, in one place (float64; cast with .astype(np.float32) for the float32 figures)."""

from __future__ import annotations

import numpy as np

# Sections 23.3-23.5: vector a = [100, 102, 98, 101, 99, 103] is 100.5 + CHAPTER_SHAPE,
# and vector b = [0.001, 0.003, -0.001, 0.002, 0.000, 0.004] is 0.0015 + 0.001 * CHAPTER_SHAPE.
CHAPTER_SHAPE = np.array([-0.5, 1.5, -2.5, 0.5, -1.5, 2.5])
VECTOR_A = 100.5 + CHAPTER_SHAPE
VECTOR_B = np.array([0.001, 0.003, -0.001, 0.002, 0.000, 0.004])

# Section 23.7: the input of the pre-norm / post-norm depth experiment (D = 4).
STACK_INPUT = np.array([1.0, 2.0, 3.0, 4.0])

# Section 23.6: the zero-centred and mixed inputs (the offset input is CENTRED + 10).
CENTRED = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
MIXED = np.array([3.0, -1.0, 0.5, 2.0, -0.5])

# Section 23.8: the gradient check's input and upstream gradient dL/dy.
BACKWARD_INPUT = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
BACKWARD_UPSTREAM = np.array([0.1, -0.2, 0.3, -0.1, 0.2])

# Section 23.2: batches of sequences whose positions have their own statistics (BatchNorm against LayerNorm).
POS_MEAN = np.array([4.0, -1.0, 0.0, 1.5, -2.5, 0.5])   # the mean of position t
POS_STD = np.array([0.5, 1.0, 2.0, 1.0, 3.0, 1.5])      # and its standard deviation
N_DRAWS, MAX_BATCH, FEATURES = 40, 64, 8                 # batches drawn, examples per batch, features per token


def activations(seed: int = 23) -> np.ndarray:
    """(N_DRAWS, MAX_BATCH, T, FEATURES) activations: batch k, example b, position t, feature d. Position t has mean
    POS_MEAN[t] and std POS_STD[t]; example 0 is the same ("tracked") example in every batch."""
    z = np.random.default_rng(seed).standard_normal((N_DRAWS, MAX_BATCH, POS_MEAN.size, FEATURES))
    z[:, 0] = z[0, 0]
    return POS_MEAN[None, None, :, None] + POS_STD[None, None, :, None] * z


BATCHES = activations()


def long_sequences(seq_len: int, rho: float = 0.0, *, features: int = 4, n_draws: int = N_DRAWS,
                   batch: int = MAX_BATCH, seed: int = 23) -> np.ndarray:
    """(n_draws, batch, seq_len, features) activations like `activations`, with position t following position
    t % 6's statistics and neighbouring tokens correlated by rho (an AR(1) chain); example 0 is tracked."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((seq_len, n_draws, batch, features))
    z = np.empty_like(e)
    z[0] = e[0]
    for t in range(1, seq_len):                       # each z[t] stays standard normal, correlated rho with z[t-1]
        z[t] = rho * z[t - 1] + np.sqrt(1 - rho * rho) * e[t]
    z = np.moveaxis(z, 0, 2)
    z[:, 0] = z[0, 0]
    pos = np.arange(seq_len) % POS_MEAN.size
    return POS_MEAN[pos][None, None, :, None] + POS_STD[pos][None, None, :, None] * z

# Section 23.6: 41 values drawn once from a standard normal (seed 0), centred, scaled to std 1 and sorted, so a plot
# of them reads as a smooth rising curve. Unevenly spaced on purpose: an evenly spaced ramp can line up with a
# format's evenly spaced levels at particular offsets and look misleadingly exact there.
_draw = np.sort(np.random.default_rng(0).standard_normal(41))
UNEVEN = (_draw - _draw.mean()) / _draw.std()
