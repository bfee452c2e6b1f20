"""Check yourself, 23.5 RMSNorm: divide by the root mean square, skip the centring."""

import numpy as np

from ..norms import rms_norm
from . import Choice, Number

SECTION, NOTEBOOK = "23.5", "05_rms_norm"
EPS = 1e-5
MEAN, STD = 3.0, 4.0
X = np.array([MEAN + STD, MEAN - STD])           # mean 3, standard deviation 4
RMS = float(X[0] / rms_norm(X, eps=0.0)[0])      # x / rms_norm(x) with gamma = 1 is the RMS itself
FORMS = ("x / √(mean(x²) + ε)", "(x − mean(x)) / √(var(x) + ε)", "x / √(var(x) + ε)")
FAR = rms_norm(np.array([-1.0, 2.0, -3.0, 1.0]) + 1e4, eps=EPS)

QUESTIONS = [
    Choice(
        "23.5-formula",
        "Which is RMSNorm, before γ?",
        options=FORMS,
        answer=0,
        explain="RMSNorm divides by the root mean square and does not subtract the mean; (x − mean) / √(var + ε) "
                "is LayerNorm.",
        why=("", "That is LayerNorm: it centres first.",
             "Dividing by the spread without centring matches neither norm.")),
    Number(
        "23.5-rms",
        f"A vector has mean {MEAN:g} and standard deviation {STD:g}. What is its root mean square?",
        answer=RMS, tol=0.01, shown=f"{RMS:g}",
        explain=f"The mean square is the mean squared plus the variance: {MEAN:g}² + {STD:g}² = {MEAN**2 + STD**2:g}, "
                f"so the RMS is {RMS:g}. It is never smaller than the standard deviation, and it equals it only "
                "when the mean is 0."),
    Choice(
        "23.5-far",
        "Predict: add 10000 to every entry of a small vector. What does RMSNorm (γ = 1) output?",
        options=("Every entry close to 1.", "The same as before the offset.", "Every entry close to 0.",
                 "Entries spread as widely as LayerNorm's."),
        answer=0,
        explain=f"The offset dominates the RMS, so every entry is divided by about itself: here the outputs lie "
                f"between {FAR.min():.5f} and {FAR.max():.5f}. The shape survives only in the last digits; LayerNorm "
                "would have removed the offset and kept it.",
        why=("", "RMSNorm does not subtract the mean, so the offset stays in.",
             "Each entry is divided by a number close to itself.", "That is what LayerNorm does."),
        then="move the offset slider of the first explorable to its far end."),
]
