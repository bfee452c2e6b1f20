"""Every bad input of the public API fails loudly, with a message that names the problem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import normlab_core as nl
from normlab_core.controls import Choice, Slider
from normlab_core.explore import Explorable, get

X = np.array([[1.0, 3.0, 2.0, 5.0], [4.0, 0.0, 1.0, 2.0]])
DY = np.ones_like(X)

def ones_like_input(x):
    """An upstream gradient for x; any shape will do when x itself is malformed (x is checked first)."""
    try:
        return np.ones(np.shape(x))
    except ValueError:
        return np.ones(2)


# Every public function that takes an input array x (..., D), called with that x in position `x`.
ARRAY_FUNCS = {
    "layer_norm": lambda x: nl.layer_norm(x),
    "layer_norm_stats": lambda x: nl.layer_norm_stats(x),
    "rms_norm": lambda x: nl.rms_norm(x),
    "rms_norm_stats": lambda x: nl.rms_norm_stats(x),
    "batch_norm": lambda x: nl.batch_norm(x),
    "mean_var": lambda x: nl.mean_var(x),
    "layer_norm_backward": lambda x: nl.layer_norm_backward(ones_like_input(x), x),
    "layer_norm_param_grads": lambda x: nl.layer_norm_param_grads(ones_like_input(x), x),
    "rms_norm_backward": lambda x: nl.rms_norm_backward(ones_like_input(x), x),
    "rms_norm_param_grad": lambda x: nl.rms_norm_param_grad(ones_like_input(x), x),
    "run_stack": lambda x: nl.run_stack(x, 2, "pre"),
    "numerical_gradient": lambda x: nl.numerical_gradient(nl.layer_norm, x, ones_like_input(x)),
}
# Functions with an eps argument.
EPS_FUNCS = {
    "layer_norm": lambda eps: nl.layer_norm(X, eps=eps),
    "layer_norm_stats": lambda eps: nl.layer_norm_stats(X, eps),
    "rms_norm": lambda eps: nl.rms_norm(X, eps=eps),
    "rms_norm_stats": lambda eps: nl.rms_norm_stats(X, eps),
    "batch_norm": lambda eps: nl.batch_norm(X, eps=eps),
    "layer_norm_backward": lambda eps: nl.layer_norm_backward(DY, X, eps=eps),
    "layer_norm_param_grads": lambda eps: nl.layer_norm_param_grads(DY, X, eps=eps),
    "rms_norm_backward": lambda eps: nl.rms_norm_backward(DY, X, eps=eps),
    "rms_norm_param_grad": lambda eps: nl.rms_norm_param_grad(DY, X, eps=eps),
    "run_stack": lambda eps: nl.run_stack(X[0], 2, "post", eps=eps),
    "sensitivity": lambda eps: nl.sensitivity(X[0], 2, "post", eps=eps),
    "stack_curves": lambda eps: nl.stack_curves(X[0], 2, "post", eps=eps),
}


def funcs(table):
    return pytest.mark.parametrize("name", list(table))


# ---- the input array ---------------------------------------------------------------------------------
@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("empty", [[], np.zeros((3, 0)), np.zeros((0, 4))], ids=["list", "3x0", "0x4"])
def test_empty_input_is_rejected(name, empty):
    with pytest.raises(ValueError, match="empty"):
        ARRAY_FUNCS[name](empty)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected(name, bad):
    x = X.copy()
    x[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        ARRAY_FUNCS[name](x)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize(
    "bad,what",
    [
        (["a", "b", "c"], "strings"),
        (np.array([1.0, 2.0, None], dtype=object), "Python objects"),
        ([[1, 2], {3: 4}], "Python objects|rectangular"),
        (np.array([1 + 2j, 3.0]), "complex"),
        ([[1.0, 2.0], [3.0]], "rectangular|Python objects"),
        (b"abc", "bytes|dimension"),
    ],
    ids=["strings", "objects", "dict-inside", "complex", "ragged", "bytes"],
)
def test_non_numeric_input_is_a_type_error(name, bad, what):
    err = TypeError if name != "numerical_gradient" or not isinstance(bad, bytes) else (TypeError, ValueError)
    with pytest.raises(err, match=what):
        ARRAY_FUNCS[name](bad)


@funcs(ARRAY_FUNCS)
@pytest.mark.parametrize("scalar", [3.0, np.float32(2.0), 7])
def test_scalar_input_is_rejected(name, scalar):
    with pytest.raises(ValueError, match="scalar|dimension"):
        ARRAY_FUNCS[name](scalar)


# ---- eps -----------------------------------------------------------------------------------------------
@funcs(EPS_FUNCS)
@pytest.mark.parametrize("eps", [-1e-5, -1.0, float("nan"), float("inf")])
def test_bad_eps_value(name, eps):
    with pytest.raises(ValueError, match="eps"):
        EPS_FUNCS[name](eps)


@funcs(EPS_FUNCS)
@pytest.mark.parametrize("eps", ["1e-5", None, [1e-5], True, 1e-5j], ids=["str", "None", "list", "bool", "complex"])
def test_non_number_eps_is_a_type_error(name, eps):
    with pytest.raises(TypeError, match="eps"):
        EPS_FUNCS[name](eps)


def test_numpy_scalar_and_int_eps_are_accepted():
    np.testing.assert_allclose(nl.layer_norm(X, eps=np.float32(0.5)), nl.layer_norm(X, eps=0.5), rtol=1e-7)
    np.testing.assert_array_equal(nl.layer_norm(X, eps=1), nl.layer_norm(X, eps=1.0))


# ---- parameters and upstream gradients --------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), (5,), (1, 4), (2, 4), ()])
@pytest.mark.parametrize(
    "call",
    [
        lambda p: nl.layer_norm(X, gamma=p),
        lambda p: nl.layer_norm(X, beta=p),
        lambda p: nl.rms_norm(X, gamma=p),
        lambda p: nl.layer_norm_backward(DY, X, gamma=p),
        lambda p: nl.rms_norm_backward(DY, X, gamma=p),
    ],
    ids=["ln-gamma", "ln-beta", "rms-gamma", "ln-bwd-gamma", "rms-bwd-gamma"],
)
def test_parameter_shape_must_be_d(call, shape):
    with pytest.raises(ValueError, match=r"(gamma|beta).*(shape \(4,\)|dimension)"):
        call(np.ones(shape))


@pytest.mark.parametrize(
    "call",
    [nl.layer_norm_backward, nl.rms_norm_backward, nl.layer_norm_param_grads, nl.rms_norm_param_grad],
)
@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 4), (2, 4, 1)])
def test_upstream_shape_must_match_x(call, shape):
    with pytest.raises(ValueError, match="dy has shape"):
        call(np.ones(shape), X)


@pytest.mark.parametrize(
    "call",
    [nl.layer_norm_backward, nl.rms_norm_backward, nl.layer_norm_param_grads, nl.rms_norm_param_grad],
)
def test_upstream_is_checked_like_an_input(call):
    with pytest.raises(ValueError, match="dy contains 1 NaN"):
        call(np.where(X == 0.0, np.nan, 1.0), X)
    with pytest.raises(TypeError, match="dy holds strings"):
        call(np.full(X.shape, "a"), X)


def test_gamma_with_nan_is_rejected():
    with pytest.raises(ValueError, match="gamma contains"):
        nl.layer_norm(X, gamma=[1.0, np.nan, 1.0, 1.0])


# ---- residual stacks ---------------------------------------------------------------------------------------
STACK_FUNCS = {
    "run_stack": lambda depth, placement: nl.run_stack(X[0], depth, placement),
    "sensitivity": lambda depth, placement: nl.sensitivity(X[0], depth, placement),
    "sensitivity_fd": lambda depth, placement: nl.sensitivity(X[0], depth, placement, method="finite_difference"),
    "sensitivity_curve": lambda depth, placement: nl.sensitivity_curve(X[0], depth, placement),
    "stack_curves": lambda depth, placement: nl.stack_curves(X[0], depth, placement),
}


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("depth", [0, -3])
def test_depth_below_one(name, depth):
    with pytest.raises(ValueError, match="depth must be >= 1|max_depth"):
        STACK_FUNCS[name](depth, "pre")


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("depth", [2.0, 1.5, "3", True, None])
def test_depth_not_a_whole_number(name, depth):
    with pytest.raises(TypeError, match="depth"):
        STACK_FUNCS[name](depth, "pre")


@funcs(STACK_FUNCS)
@pytest.mark.parametrize("placement", ["Pre", "middle", "", None, 1])
def test_unknown_placement(name, placement):
    with pytest.raises(ValueError, match="unknown placement"):
        STACK_FUNCS[name](3, placement)


@pytest.mark.parametrize("method", ["exact ", "fd", "autograd", None])
def test_unknown_method(method):
    with pytest.raises(ValueError, match="unknown method"):
        nl.sensitivity(X[0], 3, "pre", method=method)


@pytest.mark.parametrize("method", ["exact", "finite_difference"])
def test_sensitivity_needs_one_vector_and_a_valid_component(method):
    with pytest.raises(ValueError, match=r"one vector of shape \(D,\)"):
        nl.sensitivity(X, 3, "pre", method=method)
    for component in (4, -5, 1.0, True, "0"):
        with pytest.raises(ValueError, match="component"):
            nl.sensitivity(X[0], 3, "pre", method=method, component=component)


@pytest.mark.parametrize("h", [0.0, -1e-3, float("nan"), float("inf"), "0.1", True])
def test_bad_finite_difference_step(h):
    with pytest.raises(ValueError, match="h must be"):
        nl.sensitivity(X[0], 3, "pre", method="finite_difference", h=h)
    with pytest.raises(ValueError, match="h must be"):
        nl.numerical_gradient(nl.layer_norm, X, DY, h=h)


def test_sublayer_must_be_callable_and_exact_needs_jvp():
    with pytest.raises(TypeError, match="sublayer must be callable"):
        nl.run_stack(X[0], 2, "pre", sublayer=3.0)
    with pytest.raises(TypeError, match="jvp"):
        nl.sensitivity(X[0], 2, "pre", sublayer=lambda v: 0.5 * v)
    # a plain function is fine for the finite-difference method
    assert nl.sensitivity(X[0], 2, "none", method="finite_difference", sublayer=lambda v: 0.5 * v) > 0


def test_numerical_gradient_checks_its_function_and_upstream():
    with pytest.raises(TypeError, match="f must be a function"):
        nl.numerical_gradient("layer_norm", X, DY)
    with pytest.raises(ValueError, match="upstream"):
        nl.numerical_gradient(nl.layer_norm, X, np.ones((2, 3)))


# ---- eps = 0 on a degenerate row: NaN for that row only, and a warning that says why -----------------------
def only_our_warnings(record):
    """Every recorded warning is the library's RuntimeWarning (no stray numpy 'invalid value' ones)."""
    msgs = [str(w.message) for w in record]
    assert msgs and all("is zero" in m and "eps is 0" in m for m in msgs), msgs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: nl.layer_norm(x, eps=0),
        lambda x: nl.layer_norm_stats(x, eps=0)[0],
        lambda x: nl.layer_norm(x, gamma=np.full(4, 2.0), beta=np.ones(4), eps=0),
        lambda x: nl.layer_norm_backward(np.ones_like(x), x, eps=0),
        lambda x: nl.batch_norm(x.T, eps=0).T,
    ],
    ids=["layer_norm", "stats", "affine", "backward", "batch_norm"],
)
def test_zero_variance_row_with_eps_zero(call, dtype):
    x = np.array([[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 2.0, 5.0], [-2.0, -2.0, -2.0, -2.0]], dtype=dtype)
    with pytest.warns(RuntimeWarning, match="variance is zero in 2 row") as record:
        y = call(x)
    only_our_warnings(record)
    assert np.all(np.isnan(y[0])) and np.all(np.isnan(y[2]))
    assert np.all(np.isfinite(y[1]))


def test_zero_variance_row_with_positive_eps_is_finite_and_silent():
    x = np.array([[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 2.0, 5.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = nl.layer_norm(x)
    np.testing.assert_array_equal(y[0], 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: nl.rms_norm(x, eps=0),
        lambda x: nl.rms_norm_stats(x, eps=0)[0],
        lambda x: nl.rms_norm(x, gamma=np.full(4, 2.0), eps=0),
        lambda x: nl.rms_norm_backward(np.ones_like(x), x, eps=0),
    ],
    ids=["rms_norm", "stats", "gamma", "backward"],
)
def test_all_zero_row_in_rms_norm_with_eps_zero(call, dtype):
    x = np.array([[1.0, 3.0, 2.0, 5.0], [0.0, 0.0, 0.0, 0.0]], dtype=dtype)
    with pytest.warns(RuntimeWarning, match="mean square is zero in 1 row") as record:
        y = call(x)
    only_our_warnings(record)
    assert np.all(np.isnan(y[1]))
    assert np.all(np.isfinite(y[0]))


def test_degenerate_row_in_a_large_array_still_warns():
    """Large inputs may take a faster path; it must give the same NaN row and the same warning."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1024, 1024)).astype(np.float32)
    x[17] = 2.5
    with pytest.warns(RuntimeWarning, match="variance is zero in 1 row"):
        y = nl.layer_norm(x, eps=0)
    assert np.all(np.isnan(y[17]))
    assert np.isfinite(np.delete(y, 17, axis=0)).all()
    np.testing.assert_array_equal(np.delete(y, 17, axis=0), nl.layer_norm(np.delete(x, 17, axis=0), eps=0))


# ---- controls and explorables ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lo=0.0, hi=1.0, value=0.5, scale="ln"), "scale must be"),
        (dict(lo=1.0, hi=1.0, value=1.0), "lo < hi"),
        (dict(lo=2.0, hi=1.0, value=1.5), "lo < hi"),
        (dict(lo=0.0, hi=1.0, value=0.5, scale="log"), "log slider needs lo > 0"),
        (dict(lo=-1.0, hi=1.0, value=0.5, scale="log"), "log slider needs lo > 0"),
        (dict(lo=0.0, hi=1.0, value=0.5, zero=True), "zero=True is for log sliders"),
        (dict(lo=0.0, hi=1.0, value=1.5), "outside"),
        (dict(lo=1e-3, hi=1.0, value=0.0, scale="log"), "outside"),
        (dict(lo=0.0, hi=1.0, value=0.5, steps=1), "steps must be >= 2"),
    ],
)
def test_slider_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Slider(**kwargs)


def test_log_slider_with_zero_accepts_zero():
    s = Slider(1e-3, 1.0, 0.0, scale="log", zero=True)
    assert s.allows(0) and not s.allows(1e-4) and s.positions()[0] == 0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(options=["a"], value="a"), "at least two options"),
        (dict(options=[], value=None), "at least two options"),
        (dict(options=["a", "b"], value="c"), "not one of the options"),
        (dict(options=["a", "b"], value="a", labels=["A"]), "labels must name every option"),
    ],
)
def test_choice_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Choice(**kwargs)


def _toy():
    return Explorable(
        "toy",
        {"a": Slider(0.0, 1.0, 0.5), "n": Slider(1, 10, 3), "kind": Choice(["x", "y"], "x")},
        setup=lambda fig: {"animated": []},
        update=lambda art, a, n, kind: {"a": str(a)},
    )


@pytest.mark.parametrize(
    "values,match",
    [
        (dict(b=1.0), r"no control\(s\) \['b'\]"),
        (dict(a=0.5, zz=1), r"no control\(s\) \['zz'\]"),
        (dict(a=1.5), "a=1.5 is outside"),
        (dict(a=-0.01), "a=-0.01 is outside"),
        (dict(n=11), "n=11 is outside"),
        (dict(kind="z"), "kind='z' is outside"),
        (dict(n=2.5), "n=2.5 is outside"),
        (dict(a="0.5"), "a='0.5' is outside"),
        (dict(a=None), "a=None is outside"),
    ],
)
def test_explorable_values_errors(values, match):
    exp = _toy()
    with pytest.raises(ValueError, match=match):
        exp.values(**values)
    with pytest.raises(ValueError, match=match):
        exp.render(**values)
    assert exp._fig is None  # refused before drawing anything


def test_explorable_values_merges_defaults():
    assert _toy().values(a=1.0) == {"a": 1.0, "n": 3, "kind": "x"}


def test_integer_slider_values_arrive_as_int():
    got = _toy().values(n=7.0)["n"]
    assert got == 7 and type(got) is int


def test_unknown_catalog_name():
    with pytest.raises(KeyError, match="no explorable named 'nope'"):
        get("nope")
