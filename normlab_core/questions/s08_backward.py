"""Check yourself, 23.8 The backward pass: LayerNorm's input gradient, its two corrections, scale invariance."""

import numpy as np

from ..backward import layer_norm_backward
from ..scale_invariance import loss, loss_grad
from . import Choice, Number

SECTION, NOTEBOOK = "23.8", "08_backward"
X = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
G = np.array([0.1, -0.2, 0.3, 0.4, -0.5])
SUM = float(np.sum(layer_norm_backward(G, X, eps=1e-5)))
rng = np.random.default_rng(0)
W, XS, TS = rng.normal(size=(4, 3)), rng.normal(size=(8, 3)), rng.normal(size=(8, 4))
GROWN = float(np.linalg.norm(loss_grad(3 * W, XS, TS)) / np.linalg.norm(loss_grad(W, XS, TS)))
LOSS_RATIO = loss(3 * W, XS, TS) / loss(W, XS, TS)
FORMS = ("s · (g − mean(g) − x̂ · mean(g x̂))", "s · g", "s · (g − mean(g))", "s · (g − x̂ · mean(g x̂))")

QUESTIONS = [
    Choice(
        "23.8-formula",
        "g is the upstream gradient, x̂ LayerNorm's output and s = 1/√(σ² + ε). Which is the gradient with respect "
        "to the input x?",
        options=FORMS,
        answer=0,
        explain="Raising one input raises the mean and changes the spread, and both reach every output. The "
                "− mean(g) term accounts for the mean, the − x̂ · mean(g x̂) term for the spread.",
        why=("", "That treats the mean and the spread as constants, the most tempting mistake.",
             "That forgets that the spread depends on x.", "That forgets that the mean depends on x.")),
    Number(
        "23.8-sum",
        "Add up the components of LayerNorm's input gradient, for any input and any upstream gradient. What do "
        "you get?",
        answer=SUM, tol=1e-6, shown="0",
        explain="Adding the same amount to every input leaves LayerNorm's output unchanged, so the gradient has no "
                "component along [1, 1, …, 1]: its components sum to 0. A hand-written backward pass that fails "
                "this check is wrong."),
    Choice(
        "23.8-scale",
        "A linear layer W feeds a LayerNorm (ε = 0). Multiply W by 3. What happens to the loss and to its gradient "
        "with respect to W?",
        options=("The loss is unchanged; the gradient is a third as long.",
                 "The loss is unchanged; the gradient is unchanged.",
                 "The loss is unchanged; the gradient is three times as long.",
                 "The loss is nine times larger."),
        answer=0,
        explain=f"LayerNorm removes W's scale, so the loss is the same (ratio {LOSS_RATIO:.6f}); the gradient is "
                f"{GROWN:.4f} times as long. A longer W therefore takes smaller steps in angle: a norm makes the "
                "weights before it scale-invariant, and weight decay matters by keeping them short.",
        why=("", "The gradient shrinks as W grows.", "That is backwards: the gradient shrinks as W grows.",
             "The norm divides the scale out.")),
]
