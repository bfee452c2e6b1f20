"""The hidden checks on their own, in this process: references from first principles, tripwires, tampering."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from grading_support import ROOT, SOURCE, WRONG, solutions

import normlab_core
from normlab_core import layer_norm, rms_norm

_spec = importlib.util.spec_from_file_location("hidden_checks", ROOT / "assignments" / "normlab_grading" /
                                               "hidden_checks.py")
hc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hc)


def namespace(replace: dict[str, str] | None = None) -> dict:
    """The globals of a notebook run with the reference answers (and some replaced), without its check cells."""
    import nbformat

    source = nbformat.read(SOURCE, as_version=4)
    answers = {**solutions(source), **(replace or {})}
    ns = {"np": np, "layer_norm": layer_norm, "rms_norm": rms_norm, "__name__": "__main__"}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or meta.get("grade_id") in ("ex4_timing", "ex6_experiment"):
            continue
        code = answers.get(meta.get("grade_id"), cell.source)
        with np.errstate(all="ignore"):
            exec(compile(code, "<cell>", "exec"), ns)  # noqa: S102
    return ns


@pytest.fixture(scope="module")
def reference_ns():
    return namespace()


def test_reference_passes_every_hidden_check(reference_ns, capsys):
    for gid in hc.CHECKS:
        hc.run(gid, reference_ns)
    out = capsys.readouterr().out
    assert out.count(hc.MARK) == len(hc.CHECKS) == 12


@pytest.mark.parametrize("part", sorted(WRONG))
def test_each_plausible_mistake_fails_its_hidden_check(part):
    cell, code = WRONG[part]
    ns = namespace({cell: code})
    checks = {"1a": "test_ex1_function", "1b": "test_ex1_results", "1c": "test_ex1_why",
              "2a": "test_ex2_hidden", "2b": "test_ex2_central_difference", "2c": "test_ex2_check",
              "3": "test_ex3_hidden", "4a": "test_ex4_counts", "4b": "test_ex4_speedup"}
    with pytest.raises(hc.HiddenCheckFailed):
        hc.CHECKS[checks[part]](ns)


def test_tripwires_catch_delegation_and_restore_normlab_core(reference_ns):
    before = normlab_core.rms_norm_backward.__code__
    ns = dict(reference_ns, rmsnorm_backward=lambda dy, x, gamma=None, eps=1e-5:
              normlab_core.rms_norm_backward(dy, x, gamma, eps=eps))
    with pytest.raises(hc.HiddenCheckFailed, match=r"normlab_core\.backward\.rms_norm_backward"):
        hc.check_ex2_hidden(ns)
    assert normlab_core.rms_norm_backward.__code__ is before
    x = np.array([[1.0, 2.0, 4.0]])
    assert np.all(np.isfinite(normlab_core.rms_norm_backward(np.ones_like(x), x)))
    assert "__normlab_tripped__" not in vars(normlab_core.backward)


def test_references_ignore_a_patched_numpy(reference_ns, monkeypatch):
    # A wrong answer plus numpy's comparison functions replaced: the hidden check still fails.
    ns = namespace({WRONG["1a"][0]: WRONG["1a"][1]})
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np.testing, "assert_allclose", lambda *a, **k: None)
    monkeypatch.setattr(np, "isclose", lambda a, b, **k: np.ones(np.shape(a), bool))
    with pytest.raises(hc.HiddenCheckFailed):
        hc.check_ex1_function(ns)


def test_always_equal_counts_fail(reference_ns):
    class Always(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    ns = dict(reference_ns, layer_norm_ops=lambda d: (Always(0), Always(0)))
    with pytest.raises(hc.HiddenCheckFailed, match="plain Python ints"):
        hc.check_ex4_counts(ns)
    ns = dict(reference_ns, layer_norm_ops=lambda d: (np.int64(3 * d + 3), np.int64(4 * d - 1)))
    with pytest.raises(hc.HiddenCheckFailed, match="plain Python ints"):
        hc.check_ex4_counts(ns)


def test_hard_coded_single_values_fail(reference_ns):
    ns = dict(reference_ns, gradient_gap=lambda *a: 1e-10, max_abs_diff=1e-10)
    with pytest.raises(hc.HiddenCheckFailed, match="does not change"):
        hc.check_ex2_check(ns)
    ns = dict(reference_ns, counted_speedup=lambda d: 3586 / 2050)
    with pytest.raises(hc.HiddenCheckFailed, match="ratio"):
        hc.check_ex4_speedup(ns)


def test_a_rewritten_kernel_is_reported(monkeypatch):
    class Shell:
        input_transformers_cleanup = [lambda lines: []]
        input_transformers_post: list = []
        ast_transformers: list = []

    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    with pytest.raises(hc.HiddenCheckFailed, match="modified at run time"):
        hc.check_kernel()
