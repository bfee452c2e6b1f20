"""Check yourself, 23.6 Comparing the two: LayerNorm ignores an offset, RMSNorm does not; on centred input they
agree."""

import numpy as np

from ..norms import layer_norm, rms_norm
from . import Choice, Number

SECTION, NOTEBOOK = "23.6", "06_comparing"
EPS = 1e-5
X = np.array([7.0, -1.0])                        # mean 3, standard deviation 4
KEEP = float(np.std(rms_norm(X, eps=0.0)) / np.std(layer_norm(X, eps=0.0)))

QUESTIONS = [
    Choice(
        "23.6-centred",
        "A token's vector has mean exactly 0. How do LayerNorm's and RMSNorm's outputs compare (γ = 1, β = 0)?",
        options=("They are the same.", "RMSNorm's is larger.", "RMSNorm's is smaller.", "LayerNorm's is all zeros."),
        answer=0,
        explain="With mean 0 there is nothing to subtract, and the variance equals the mean square, so the two "
                "formulas are one.",
        why=("", "The RMS equals the standard deviation when the mean is 0.",
             "The RMS equals the standard deviation when the mean is 0.",
             "Only a vector with all entries equal comes out as zeros.")),
    Choice(
        "23.6-offset",
        "Predict: add 10 to every entry of a centred vector. Which norm's output changes?",
        options=("RMSNorm's only", "LayerNorm's only", "Both", "Neither"),
        answer=0,
        explain="LayerNorm takes the offset out with the mean. RMSNorm divides by a root mean square that grows with "
                "the offset, so its outputs crowd towards 1.",
        why=("", "LayerNorm subtracts the mean, offset included.", "LayerNorm subtracts the mean, offset included.",
             "RMSNorm has no centring step."),
        then="move the offset slider of the first explorable away from 0."),
    Number(
        "23.6-keep",
        "A vector has mean 3 and standard deviation 4. What fraction of LayerNorm's output spread does RMSNorm's "
        "output keep (ratio of the two outputs' standard deviations)?",
        answer=KEEP, tol=0.01, shown=f"{KEEP:.2f}",
        explain=f"LayerNorm divides the deviations by σ = 4, RMSNorm by the RMS, √(3² + 4²) = 5. The ratio is "
                f"σ / RMS = {KEEP:.2f}: the larger the mean next to the spread, the less spread RMSNorm leaves."),
]
