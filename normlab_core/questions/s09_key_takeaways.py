"""Check yourself, 23.9 Key takeaways: the course in three questions."""

import numpy as np

from ..residual import Affine, run_stack
from . import Choice

SECTION, NOTEBOOK = "23.9", "09_key_takeaways"
AGREE = ("The vector's mean is 0.", "The vector's standard deviation is 1.", "Every entry is positive.")
X0 = np.array([1.0, -0.5, 0.25, 2.0])
LEN = {(p, d): float(np.linalg.norm(run_stack(X0, d, p, sublayer=Affine(0.5, 0.1)))) for p in ("pre", "post")
       for d in (2, 48)}

QUESTIONS = [
    Choice(
        "23.9-agree",
        "LayerNorm and RMSNorm (γ = 1, β = 0, ε = 0) give the same output exactly when…",
        options=AGREE,
        answer=0,
        explain="With mean 0 the centring does nothing and the variance is the mean square, so the two divide by "
                "the same number. A vector with standard deviation 1 but mean 10 gives two very different "
                "outputs.",
        why=("", "A mean far from 0 still separates them, whatever the spread.",
             "Positive entries have a positive mean, which RMSNorm keeps.")),
    Choice(
        "23.9-token",
        "Which of these changes a token's LayerNorm output (γ = 1, β = 0)?",
        options=("Changing one of its own features.", "Adding the same number to all its features.",
                 "Changing another sequence in the batch.", "Doubling all its features."),
        answer=0,
        explain="LayerNorm sees one token's vector and removes its mean and its scale. Only a change in the vector's "
                "shape reaches the output; its batch-mates never do, which is why transformers use it rather than "
                "BatchNorm.",
        why=("", "The mean absorbs the shift.", "Its statistics never leave the token.",
             "The spread doubles too, and cancels (up to ε).")),
    Choice(
        "23.9-which-grows",
        "Predict: in the toy stack, whose output length grows with depth?",
        options=("Pre-norm's", "Post-norm's", "Both", "Neither"),
        answer=0,
        explain=f"Pre-norm's stream is a running sum: its length goes from {LEN['pre', 2]:.1f} at depth 2 to "
                f"{LEN['pre', 48]:.0f} at depth 48. Post-norm's is pinned at {LEN['post', 48]:.2f} by the norm "
                "after every addition. Hence the final norm on top of pre-norm models.",
        why=("", "Post-norm ends every layer with the norm.", "Post-norm ends every layer with the norm.",
             "Nothing normalizes pre-norm's stream itself."),
        then="pick each placement in the stack explorable and move its depth slider."),
]
