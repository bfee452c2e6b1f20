"""opcount: the loops compute the norms, and the tallies match counts derived by hand."""

import numpy as np
import pytest

import normlab_core as nc
from normlab_core.opcount import Counted, count_ops


@pytest.mark.parametrize("d", [1, 6, 512])
def test_layer_norm_tally_matches_hand_count(d):
    # sum (D adds), centre (D subs), square-and-sum (D muls, D adds), scale (D muls), gamma (D muls),
    # beta (D adds), + eps (1 add); divisions: mean, mean square, reciprocal; one square root
    got = count_ops("layer_norm", d)
    assert got["ops"] == {"add/sub": 4 * d + 1, "div": 3, "mul": 3 * d, "sqrt": 1}
    assert got["passes"] == 3


@pytest.mark.parametrize("d", [1, 6, 512])
def test_rms_norm_tally_matches_hand_count(d):
    got = count_ops("rms_norm", d)
    assert got["ops"] == {"add/sub": d + 1, "div": 2, "mul": 3 * d, "sqrt": 1}
    assert got["passes"] == 2


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_loops_compute_the_library_norm(norm):
    got = count_ops(norm, 37, eps=1e-3, seed=5)
    np.testing.assert_allclose(got["output"], getattr(nc, norm)(got["x"], eps=1e-3), rtol=1e-12, atol=1e-14)


def test_counted_records_each_operator_once():
    Counted.tally.clear()
    a, b = Counted(3.0), Counted(2.0)
    r = (1 - a) * b / 4 + 2 / b
    assert r.value == pytest.approx((1 - 3.0) * 2.0 / 4 + 2 / 2.0)
    assert Counted.tally == {"add/sub": 2, "mul": 1, "div": 2}


def test_unknown_norm_is_rejected():
    with pytest.raises(ValueError, match="unknown norm"):
        count_ops("batch_norm", 4)
