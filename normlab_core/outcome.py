"""The label of a training run, read from its held-out accuracy trajectory: solved, learning or stuck.

The held-out set is fixed (the same sequences for every run), so "chance" is a number of that set: the best
token accuracy of any predictor that ignores the tokens it is given and answers one fixed token at each answer
position. A model at chance scores at most that (it may score less: it often settles on one token everywhere). The
noise of an accuracy measured on `n` held-out answer tokens is the binomial standard deviation at that ceiling.

- **solved**: the last held-out accuracy is above `SOLVED`;
- **learning**: not solved, the last accuracy is more than `ABOVE_SIGMAS` standard deviations above the chance
  ceiling, and it rose by more than `RISE_SIGMAS` standard deviations over the last `RISE_WINDOW` of the steps;
- **stuck**: everything else: at chance, or above it but no longer rising;
- **diverged**: the run produced a NaN or an infinity (no stored run did).

`label(...)` applies the rule; `Rule` holds its thresholds for one held-out set, and `rule()` builds the one every
stored run is evaluated on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SOLVED = 0.99          # held-out token accuracy above which the task counts as solved
ABOVE_SIGMAS = 3.0     # "clearly above chance": this many standard deviations above the chance ceiling
RISE_SIGMAS = 2.0      # "still rising": the accuracy gained at least this many standard deviations ...
RISE_WINDOW = 0.4      # ... over this last fraction of the steps trained (steps 300 to 500 of a 500-step run)
LABELS = ("solved", "learning", "stuck", "diverged")


@dataclass(frozen=True)
class Rule:
    """The thresholds of the labelling rule for one held-out set."""

    ceiling: float      # the best accuracy of a predictor that ignores its input (one token per answer position)
    n_tokens: int       # answer tokens in the held-out set

    @property
    def sigma(self) -> float:
        """The binomial standard deviation of an accuracy near the ceiling, measured on n_tokens tokens."""
        return math.sqrt(self.ceiling * (1 - self.ceiling) / self.n_tokens)

    @property
    def learning_above(self) -> float:
        """The accuracy above which a run is clearly above chance."""
        return self.ceiling + ABOVE_SIGMAS * self.sigma

    @property
    def min_rise(self) -> float:
        """The gain over the last RISE_WINDOW of the steps that counts as still rising."""
        return RISE_SIGMAS * self.sigma


def chance_ceiling(answers) -> float:
    """Best accuracy on `answers` (sequences x answer positions, integer tokens) of a predictor that answers one
    fixed token at each position, whatever the input: the sum over positions of the commonest token's count."""
    answers = np.asarray(answers)
    if answers.ndim != 2 or answers.size == 0 or not np.issubdtype(answers.dtype, np.integer):
        raise ValueError(f"answers must be a non-empty 2-d integer array, got shape {answers.shape} of {answers.dtype}")
    best = sum(np.bincount(answers[:, j] - answers.min()).max() for j in range(answers.shape[1]))
    return float(best / answers.size)


@lru_cache(maxsize=8)
def rule(seq_len: int = 8, vocab: int = 16) -> Rule:
    """The rule for the held-out set of the reversal task (training.held_out) with this length and vocabulary."""
    from .training import held_out  # training imports this module
    from .transformer import Config

    tokens = held_out(Config(depth=1, seq_len=seq_len, vocab=vocab))
    answers = tokens[:, seq_len + 1:]
    return Rule(chance_ceiling(answers), int(answers.size))


def label(eval_steps, eval_accuracy, diverged: bool = False, the_rule: Rule | None = None) -> str:
    """The outcome of a run from its held-out accuracy at the steps `eval_steps` (step 0 first, the last
    evaluation at the end of training): "solved", "learning", "stuck" or "diverged"."""
    steps = np.asarray(eval_steps, dtype=float)
    acc = np.array([math.nan if a is None else a for a in eval_accuracy], dtype=float)
    if steps.shape != acc.shape or steps.ndim != 1:
        raise ValueError(f"eval_steps and eval_accuracy must be 1-d of one length, got {steps.shape} and {acc.shape}")
    if diverged or acc.size == 0 or not math.isfinite(acc[-1]):
        return "diverged"
    r = the_rule or rule()
    if acc[-1] > SOLVED:
        return "solved"
    earlier = acc[steps <= steps[-1] * (1 - RISE_WINDOW)]
    rise = acc[-1] - earlier[-1] if earlier.size and steps[-1] > 0 else -math.inf
    if acc[-1] > r.learning_above and rise > r.min_rise:
        return "learning"
    return "stuck"
