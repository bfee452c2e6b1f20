"""Figures 23-1 .. 23-7: normlab_core in float32 mode reproduces every digit the chapter's listings print.

The expected strings below are the printed output of the chapter's C listings (120-125), kept here as
data: they are the independent oracle. Nothing is read from outside the repository at run time.
Numbers are formatted with the listings' own printf formats, hence %-formatting throughout.
"""
# ruff: noqa: UP031

from __future__ import annotations

import numpy as np
import pytest

from normlab_core import (
    layer_norm,
    layer_norm_backward,
    layer_norm_stats,
    mean_var,
    numerical_gradient,
    rms_norm,
    run_stack,
    sensitivity,
)

F32 = np.float32

# ---- the chapter's inputs -----------------------------------------------------------------------
A = np.array([100.0, 102.0, 98.0, 101.0, 99.0, 103.0], dtype=F32)
B = np.array([0.001, 0.003, -0.001, 0.002, 0.000, 0.004], dtype=F32)
COMPARE_INPUTS = {
    "zero-centered": [-2.0, -1.0, 0.0, 1.0, 2.0],
    "positive-offset": [8.0, 9.0, 10.0, 11.0, 12.0],
    "mixed": [3.0, -1.0, 0.5, 2.0, -0.5],
}
X0_STACK = np.array([1.0, 2.0, 3.0, 4.0], dtype=F32)
DEPTHS = (1, 2, 4, 8, 16, 32)
X_BACK = np.array([1.0, 3.0, 2.0, 5.0, 4.0], dtype=F32)
UP_BACK = np.array([0.1, -0.2, 0.3, -0.1, 0.2], dtype=F32)

# ---- what the listings print (copied from their output) -------------------------------------------
PRINTED_120 = [
    "Vector a: mean=100.50  var=2.92  std=1.71",
    "Vector b: mean=0.0015  var=0.00000292  std=0.001708",
]
PRINTED_121 = {
    "output": "[-0.2928, +0.8783, -1.4638, +0.2928, -0.8783, +1.4638]",
    "mean": "Output mean: 0.000000, expect ~0",
    "var": "Output var:  0.999997, expect ~1",
    "saved": "mean=100.50  std_inv=0.5855, saved for backward",
}
PRINTED_122 = {
    "output": "[+0.9949, +1.0148, +0.9750, +1.0048, +0.9849, +1.0247]",
    "rms": "Output RMS: 1.000000, expect ~1",
}
PRINTED_123 = {
    "zero-centered": ("[-1.414, -0.707, +0.000, +0.707, +1.414]", "[-1.414, -0.707, +0.000, +0.707, +1.414]"),
    "positive-offset": ("[-1.414, -0.707, +0.000, +0.707, +1.414]", "[+0.792, +0.891, +0.990, +1.089, +1.188]"),
    "mixed": ("[+1.463, -1.197, -0.200, +0.798, -0.865]", "[+1.762, -0.587, +0.294, +1.174, -0.294]"),
}
PRINTED_124 = [
    "      1    2.000   0.35068   6.660     1.177",
    "      2    2.000   0.33034   7.844     1.349",
    "      4    2.000   0.29258  10.214     1.682",
    "      8    2.000   0.22851  14.960     2.315",
    "     16    2.000   0.13783  24.466     3.494",
    "     32    2.000   0.04951  43.507     5.653",
]
PRINTED_125 = {
    "normalized": "[-1.4142, +0.0000, -0.7071, +1.4142, +0.7071]",
    "gradient": "[-0.0424, -0.1838, +0.1344, -0.0424, +0.1343]",
    "checks": [
        "dim 0: analytical=-0.0424  numerical=-0.0425  match=yes",
        "dim 1: analytical=-0.1838  numerical=-0.1839  match=yes",
        "dim 2: analytical=+0.1344  numerical=+0.1341  match=yes",
        "dim 3: analytical=-0.0424  numerical=-0.0426  match=yes",
        "dim 4: analytical=+0.1343  numerical=+0.1344  match=yes",
    ],
}


def vec(v, fmt: str) -> str:
    """A vector the way the listings print it: [a, b, c]."""
    return "[" + ", ".join(fmt % float(e) for e in v) + "]"


# ---- figure 23-1 (listing 120): mean and variance of two vectors at different scales ----------------
def test_listing_120_stats_vector_a():
    mean, var = mean_var(A)
    assert mean.dtype == F32 and var.dtype == F32
    line = "Vector a: mean=%.2f  var=%.2f  std=%.2f" % (mean, var, np.sqrt(var))
    assert line == PRINTED_120[0]


def test_listing_120_stats_vector_b():
    mean, var = mean_var(B)
    line = "Vector b: mean=%.4f  var=%.8f  std=%.6f" % (mean, var, np.sqrt(var))
    assert line == PRINTED_120[1]


# ---- figure 23-2 (listing 121): LayerNorm of the chapter's vector -----------------------------------
def test_listing_121_layer_norm_output():
    y = layer_norm(A)
    assert y.dtype == F32
    assert vec(y, "%+.4f") == PRINTED_121["output"]


def test_listing_121_output_mean_and_variance():
    out_mean, out_var = mean_var(layer_norm(A))
    assert "Output mean: %.6f, expect ~0" % out_mean == PRINTED_121["mean"]
    # 0.999997, not 1: eps = 1e-5 against a variance of 2.9167 shrinks the output variance by var/(var+eps)
    assert "Output var:  %.6f, expect ~1" % out_var == PRINTED_121["var"]


def test_listing_121_saved_statistics():
    mean, _ = mean_var(A)
    _, std_inv = layer_norm_stats(A)
    assert std_inv.shape == (1,)
    assert "mean=%.2f  std_inv=%.4f, saved for backward" % (mean, std_inv[0]) == PRINTED_121["saved"]


# ---- figure 23-3 (listing 122): RMSNorm of the same vector ------------------------------------------
def test_listing_122_rms_norm_output():
    y = rms_norm(A)
    assert y.dtype == F32
    assert vec(y, "%+.4f") == PRINTED_122["output"]


def test_listing_122_output_rms():
    y = rms_norm(A).astype(np.float64)
    out_rms = np.sqrt(np.mean(y * y))
    assert "Output RMS: %.6f, expect ~1" % out_rms == PRINTED_122["rms"]


# ---- figure 23-4 (listing 123): LayerNorm vs RMSNorm on three inputs ---------------------------------
@pytest.mark.parametrize("name", list(COMPARE_INPUTS))
def test_listing_123_compare(name):
    x = np.array(COMPARE_INPUTS[name], dtype=F32)
    ln_line, rms_line = PRINTED_123[name]
    assert vec(layer_norm(x), "%+.3f") == ln_line
    assert vec(rms_norm(x), "%+.3f") == rms_line


# ---- figures 23-5 / 23-6 (listing 124): post-norm vs pre-norm with depth -----------------------------
def norm_f32(v: np.ndarray) -> np.float32:
    """Euclidean norm summed one term at a time in float32, as the listing does."""
    s = F32(0)
    for e in v.astype(F32):
        s = F32(s + e * e)
    return np.sqrt(s)


@pytest.mark.parametrize("row", range(len(DEPTHS)))
def test_listing_124_depth_table(row):
    depth = DEPTHS[row]
    out_post = run_stack(X0_STACK, depth, "post")
    out_pre = run_stack(X0_STACK, depth, "pre")
    assert out_post.dtype == F32 and out_pre.dtype == F32
    s_post = sensitivity(X0_STACK, depth, "post", method="finite_difference")
    s_pre = sensitivity(X0_STACK, depth, "pre", method="finite_difference")
    line = "  %5d  %7.3f  %8.5f %7.3f  %8.3f" % (depth, norm_f32(out_post), s_post, norm_f32(out_pre), s_pre)
    assert line == PRINTED_124[row]


# ---- figure 23-7 (listing 125): the LayerNorm backward pass and its numerical check ------------------
def test_listing_125_normalized():
    x_hat, _ = layer_norm_stats(X_BACK)
    assert vec(x_hat, "%+.4f") == PRINTED_125["normalized"]


def test_listing_125_gradient():
    grad = layer_norm_backward(UP_BACK, X_BACK)
    assert grad.dtype == F32
    assert vec(grad, "%+.4f") == PRINTED_125["gradient"]


def test_listing_125_numerical_check():
    grad = layer_norm_backward(UP_BACK, X_BACK)
    num = numerical_gradient(lambda z: layer_norm(z), X_BACK, UP_BACK, h=1e-4)
    assert num.dtype == F32
    lines = [
        "dim %d: analytical=%+.4f  numerical=%+.4f  match=%s"
        % (i, grad[i], num[i], "yes" if abs(grad[i] - num[i]) < 0.001 else "NO")
        for i in range(X_BACK.size)
    ]
    assert lines == PRINTED_125["checks"]
