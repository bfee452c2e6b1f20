"""Check yourself, 23.1 What you will learn: a residual stack compounds its per-layer growth; where a norm sits."""

import numpy as np

from ..residual import Affine, growth, stack_curves
from . import Choice, Number

SECTION, NOTEBOOK = "23.1", "01_what_you_will_learn"
X0 = np.array([1.0, 2.0, 3.0, 4.0])    # any input will do: the questions are about factors and shapes
LAYERS = 10
GAIN = 1.5                               # the toy layer without a norm multiplies the stream by 1 + a = 1.5
GROW = float(growth(GAIN, LAYERS)[-1])
post = stack_curves(X0, 48, "post", sublayer=Affine(0.5, 0.0))[0]

QUESTIONS = [
    Number(
        "23.1-compound",
        f"Without a norm, each layer of the toy stack multiplies the stream's length by {GAIN:g}. "
        f"How many times longer is the stream after {LAYERS} layers than at the input?",
        answer=GROW, tol=0.5, shown=f"{GROW:.1f}",
        explain=f"The factors multiply, they do not add: {GAIN:g} to the power {LAYERS} is {GROW:.1f}. Adding "
                f"0.5 per layer would give only {1 + 0.5 * LAYERS:g}, which is the mistake this question tempts. "
                "That compounding is why a deep stack needs something that resets the scale."),
    Choice(
        "23.1-post-flat",
        "Predict: in the post-norm stack (the norm applied after each addition), what does the stream's length do "
        "as the depth grows?",
        options=("It grows by the same factor at every layer.", "It stays the same at every depth.",
                 "It shrinks towards zero."),
        answer=1,
        explain=f"Post-norm ends every layer with the norm, so every layer's output has RMS 1 and length √D = "
                f"{float(post[-1]):.2f} here, at any depth. Nothing compounds.",
        why=("That is the stack without a norm.", "", "The norm rescales to RMS 1, it does not shrink the stream."),
        then="move the depth slider of the first explorable and watch the post-norm line."),
    Choice(
        "23.1-pre-wiring",
        "Which formula is one pre-norm layer, for a stream h, a sublayer F and a norm N?",
        options=("h + F(N(h))", "N(h + F(h))", "F(N(h))"),
        answer=0,
        explain="Pre-norm normalizes what the sublayer reads and adds its output to the stream untouched. N(h + F(h)) "
                "is post-norm; F(N(h)) has lost the residual addition altogether.",
        why=("", "That is post-norm: the norm sits after the addition.",
             "Without the + h there is no residual stream to carry the input up.")),
]
