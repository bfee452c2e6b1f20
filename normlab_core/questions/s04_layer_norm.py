"""Check yourself, 23.4 Layer normalization: centre, divide, rescale; epsilon's guard and its price."""

import math

import numpy as np

from ..norms import layer_norm, layernorm
from . import Choice, Number

SECTION, NOTEBOOK = "23.4", "04_layer_norm"
EPS = 1e-5
SHAPE = np.array([-1.0, 2.0, -3.0, 1.0, -2.0, 3.0])
_unit = SHAPE / SHAPE.std()
AT_ROOT_EPS = float(np.std(layer_norm(_unit * math.sqrt(EPS), eps=EPS)))   # input std = sqrt(eps)
D = 512
PARAMS = sum(p.size for p in layernorm.init(D).values())   # gamma and beta as the library starts them

QUESTIONS = [
    Choice(
        "23.4-offset",
        "Predict: add 50 to every entry of a token's vector. What does LayerNorm (γ = 1, β = 0) output?",
        options=("The same as before.", "The old output plus 50.", "The old output, a little smaller."),
        answer=0,
        explain="LayerNorm subtracts the mean first, and the mean absorbs the whole offset. The deviations, and so "
                "the output, are exactly what they were.",
        why=("", "The offset goes into the mean and is subtracted again.",
             "The spread, and so the divisor, does not change either."),
        then="move the input's mean in the first explorable; the output stays put."),
    Number(
        "23.4-root-eps",
        f"ε = {EPS:g}. A token's vector has standard deviation √ε. What is the standard deviation of LayerNorm's "
        "output (γ = 1)?",
        answer=AT_ROOT_EPS, tol=0.005, shown=f"{AT_ROOT_EPS:.4f}",
        explain="The output's spread is s / √(s² + ε). At s = √ε that is √ε / √(2ε) = 1/√2 ≈ 0.7071. Well above "
                "√ε the output spread is close to 1; below it, it falls in proportion to s.",
    ),
    Choice(
        "23.4-flat",
        "A token's vector is [5, 5, 5, 5] and ε is positive. What does LayerNorm (γ = 1, β = 0) output?",
        options=("[0, 0, 0, 0]", "[1, 1, 1, 1]", "NaN everywhere", "[5, 5, 5, 5]"),
        answer=0,
        explain="The deviations are all 0 and the divisor is √ε, not 0, so the output is 0 everywhere (then β). "
                "Without ε it would be 0/0, NaN; guarding that case is ε's job.",
        why=("", "The deviations from the mean are 0, and 0 divided by anything positive is 0.",
             "That is what ε = 0 gives; a positive ε keeps the divisor away from 0.",
             "The mean, 5, is subtracted first.")),
    Number(
        "23.4-params",
        f"How many parameters does a LayerNorm over D = {D} features learn?",
        answer=PARAMS, tol=0.5, shown=f"{PARAMS}",
        explain=f"One γ and one β per feature: 2 × {D} = {PARAMS}. ε is fixed, not learned. Next to a block's "
                f"12D² ≈ {12 * D * D / 1e6:.1f} million weights that is negligible."),
]
