"""normlab_core: the math, figures and explorables of the normalization course book."""

from .backward import (
    layer_norm_backward,
    layer_norm_backward_from_cache,
    layer_norm_backward_saved,
    layer_norm_cache_bytes,
    layer_norm_forward,
    layer_norm_param_grads,
    rms_norm_backward,
    rms_norm_param_grad,
)
from .gradcheck import numerical_gradient
from .norms import batch_norm, layer_norm, layer_norm_stats, rms_norm, rms_norm_stats
from .residual import Affine, run_stack, sensitivity, sensitivity_curve, stack_curves
from .stats import length, mean_var

__all__ = [
    "Affine",
    "batch_norm",
    "layer_norm",
    "layer_norm_backward",
    "layer_norm_backward_from_cache",
    "layer_norm_backward_saved",
    "layer_norm_cache_bytes",
    "layer_norm_forward",
    "layer_norm_param_grads",
    "layer_norm_stats",
    "length",
    "mean_var",
    "numerical_gradient",
    "rms_norm",
    "rms_norm_backward",
    "rms_norm_param_grad",
    "rms_norm_stats",
    "run_stack",
    "sensitivity",
    "sensitivity_curve",
    "stack_curves",
]
