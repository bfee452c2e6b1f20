"""Check yourself, 23.3 Mean and variance: what the mean and the spread measure, and what shifting and scaling do
to them."""

import numpy as np

from ..moments import span_in_std
from ..stats import mean_var
from . import Choice, Number

SECTION, NOTEBOOK = "23.3", "03_mean_and_variance"
A = np.array([98.0, 99.0, 100.0, 101.0, 102.0, 103.0])
MEAN, VAR = (float(v) for v in mean_var(A))
SPAN = float(span_in_std(A))

QUESTIONS = [
    Number(
        "23.3-variance",
        "What is the variance of the vector [98, 99, 100, 101, 102, 103], dividing by n as a norm does?",
        answer=VAR, tol=0.01, shown=f"{VAR:.4f}",
        explain=f"The mean is {MEAN:g}; the squared deviations are 6.25, 2.25, 0.25, 0.25, 2.25 and 6.25, and their "
                f"average is {VAR:.4f}. Dividing by n − 1 gives {VAR * 6 / 5:.1f}, the sample estimate a statistics "
                "course teaches; a norm wants this vector's own spread."),
    Choice(
        "23.3-shift",
        "Predict: add 1000 to every entry of that vector. What happens to its standard deviation?",
        options=("It does not change.", "It grows by 1000.", "It grows 1000-fold.", "It grows a little."),
        answer=0,
        explain="Shifting moves the mean by the same amount and leaves every deviation from it alone, so the "
                "spread is unchanged.",
        why=("", "The mean grows by 1000; the deviations from it do not change.",
             "That is what multiplying by 1000 would do.", "Every deviation is exactly what it was."),
        then="move the offset slider of the explorable and watch the standard deviation readout."),
    Choice(
        "23.3-scale",
        "Multiply every entry of a vector by 10. What happens to its variance?",
        options=("It is multiplied by 10.", "It is multiplied by 100.", "It does not change.",
                 "It is multiplied by √10."),
        answer=1,
        explain="Every deviation is multiplied by 10 and the variance averages their squares, so it grows 100-fold. "
                "The standard deviation grows 10-fold, back in the units of the data.",
        why=("That is the standard deviation.", "", "Scaling stretches every deviation.",
             "The variance squares the factor, it does not take its root.")),
    Number(
        "23.3-span",
        "The same vector: how many of its standard deviations lie between its smallest and its largest entry?",
        answer=SPAN, tol=0.01, shown=f"{SPAN:.4f}", unit="standard deviations",
        explain=f"The range is 5 and the standard deviation is √{VAR:.4f} = {VAR ** 0.5:.4f}, so the span is "
                f"{SPAN:.4f}. Measured in its own standard deviations a vector's scale drops out: the vector moved "
                "to 0 and shrunk a thousand-fold spans the same number."),
]
