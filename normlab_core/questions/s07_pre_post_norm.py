"""Check yourself, 23.7 Pre-norm and post-norm: the identity route, what the lab's runs show, the final norm."""

import numpy as np

from ..residual import Affine, run_stack, sensitivity_curve
from . import Choice

SECTION, NOTEBOOK = "23.7", "07_pre_post_norm"
X0 = np.array([1.0, -0.5, 0.25, 2.0])
SENS = {p: sensitivity_curve(X0, 64, p, sublayer=Affine(0.5, 0.1)) for p in ("post", "pre")}
LENGTH = {d: float(np.linalg.norm(run_stack(X0, d, "pre", sublayer=Affine(0.5, 0.1)))) for d in (4, 64)}

QUESTIONS = [
    Choice(
        "23.7-identity",
        "Make the sublayer output zero everywhere. Which layer then passes its input through unchanged?",
        options=("Pre-norm only", "Post-norm only", "Both", "Neither"),
        answer=0,
        explain="A pre-norm layer is h + F(N(h)): with F = 0 it is h, the identity. A post-norm layer is "
                "N(h + F(h)) = N(h), which rescales h. That clean route is what pre-norm keeps at every layer.",
        why=("", "Post-norm still applies the norm to h.", "Post-norm still applies the norm to h.",
             "Pre-norm adds F's output to h untouched.")),
    Choice(
        "23.7-sensitivity",
        "Predict: in the toy stack with a positive bias, how does post-norm's sensitivity to its input change as "
        "the depth grows?",
        options=("It fades.", "It grows.", "It stays the same."),
        answer=0,
        explain=f"From depth 1 to 64 it falls from {SENS['post'][0]:.2g} to {SENS['post'][-1]:.2g}, while pre-norm's "
                f"goes from {SENS['pre'][0]:.2g} to {SENS['pre'][-1]:.2g}. The fade comes from the bias, which pulls "
                "the stream towards the all-equal direction; set the bias to 0 and the curve goes flat.",
        why=("", "That is pre-norm's curve.", "Every layer's norm changes how much of the input gets through."),
        then="move the depth slider of the sensitivity explorable, then set the bias to 0."),
    Choice(
        "23.7-final-norm",
        "Real pre-norm models end with one more norm after the last layer. Why?",
        options=("Pre-norm's stream grows with depth; the final norm sets its scale before the output layer.",
                 "Pre-norm's stream shrinks with depth; the final norm enlarges it.",
                 "Pre-norm's stream already has RMS 1; the final norm is there for symmetry."),
        answer=0,
        explain=f"Nothing normalizes pre-norm's stream itself, so it keeps growing: in the toy stack its length "
                f"goes from {LENGTH[4]:.1f} at depth 4 to {LENGTH[64]:.0f} at depth 64. One norm at the top "
                "brings it back to a fixed scale.",
        why=("", "It grows: every layer adds to it.", "Only post-norm's stream is pinned to RMS 1.")),
]
