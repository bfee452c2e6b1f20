"""Check yourself, 23.2 The problem: per-layer gains compound over depth; which axis BatchNorm and LayerNorm
average over."""

import math

import numpy as np

from ..residual import growth
from . import Choice, Number

SECTION, NOTEBOOK = "23.2", "02_the_problem"
GAIN_UP, GAIN_DOWN, DEPTH = 1.1, 0.95, 24
UP = float(growth(GAIN_UP, DEPTH)[-1])
# the first depth at which a gain of 0.95 has shrunk the stream to a tenth, found by running the stack
_down = growth(GAIN_DOWN, 200)
TENTH = int(np.argmax(_down <= 0.1))

QUESTIONS = [
    Number(
        "23.2-gain-up",
        f"Every layer multiplies the residual stream by {GAIN_UP:g}. By what factor has it grown after {DEPTH} "
        "layers?",
        answer=UP, tol=0.1, shown=f"{UP:.2f}",
        explain=f"{GAIN_UP:g} to the power {DEPTH} is {UP:.2f}: a ten per cent change per layer, barely visible in "
                f"one layer, becomes a factor of about ten. {DEPTH} × 0.1 = {DEPTH * 0.1:g} would be the additive "
                "guess."),
    Number(
        "23.2-gain-down",
        f"Now every layer multiplies the stream by {GAIN_DOWN:g}. After how many layers is it a tenth of its size "
        "for the first time?",
        answer=TENTH, tol=0.5, shown=f"{TENTH}", unit="layers",
        explain=f"Solve {GAIN_DOWN:g}^L = 0.1: L = ln 0.1 / ln {GAIN_DOWN:g} = "
                f"{math.log(0.1) / math.log(GAIN_DOWN):.1f}, "
                f"so layer {TENTH} is the first below a tenth. Small gains below 1 fade a signal as surely as gains "
                "above 1 blow it up."),
    Choice(
        "23.2-axes",
        "Activations form a tensor of shape batch × position × feature. Over which entries does each norm take "
        "its mean and variance?",
        options=("BatchNorm: all examples and positions, per feature. LayerNorm: all features, per token.",
                 "BatchNorm: all features, per token. LayerNorm: all examples and positions, per feature.",
                 "Both: all features, per token.",
                 "Both: all examples and positions, per feature."),
        answer=0,
        explain="BatchNorm pools each feature over the whole batch, so a token's output depends on its batch-mates. "
                "LayerNorm measures one token's own vector, so it does not.",
        why=("", "The two are swapped.", "That is LayerNorm only.", "That is BatchNorm only.")),
    Choice(
        "23.2-batchmates",
        "You change one other sequence in the batch and leave a token alone. Whose output for that token changes?",
        options=("BatchNorm's only", "LayerNorm's only", "Both", "Neither"),
        answer=0,
        explain="BatchNorm's mean and variance include the changed sequence, so every token's output moves. "
                "LayerNorm's statistics never leave the token.",
        why=("", "LayerNorm reads only the token's own features.",
             "LayerNorm reads only the token's own features.", "BatchNorm pools the whole batch.")),
]
