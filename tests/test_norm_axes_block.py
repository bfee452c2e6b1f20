"""Section 23.2's block figure: the entries it shades for each norm are the entries that norm's statistics read.

The shaded set comes from `averaged_cells`; what a norm really reads is found here independently, by moving one
entry of a random (batch, position, feature) tensor at a time and seeing whether the normalized value of the
tracked entry moves (the library's `batch_norm_sequences`, `layer_norm` and `rms_norm`). The drawing shades the
visible faces of exactly that set, and stacks its two panels in the narrow layout. If a check fails, fix
`averaged_cells` or `norm_axes_block` in normlab_core/figures/s02_problem.py, then refresh notebook 02:
`MPLBACKEND=Agg .venv/bin/python scripts/refresh_notebooks.py notebooks/02_the_problem.ipynb`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Polygon

from normlab_core.figures.s02_problem import BLOCK_SHAPE, TRACK_POS, averaged_cells, norm_axes_block
from normlab_core.figures.style import COLORS, NARROW_IN, WIDTH_IN
from normlab_core.norms import batch_norm_sequences, layer_norm, rms_norm

NORMS = {"batch_norm": batch_norm_sequences, "layer_norm": layer_norm, "rms_norm": rms_norm}


def entries_read(norm, shape=BLOCK_SHAPE, token=(0, TRACK_POS), feature=0) -> np.ndarray:
    """(B, T, D) bool: the entries whose change moves the normalized value at (token, feature)."""
    x = np.random.default_rng(7).standard_normal(shape) + 0.5
    base = NORMS[norm](x)[token[0], token[1], feature]
    moved = np.zeros(shape, dtype=bool)
    for idx in np.ndindex(*shape):
        nudged = x.copy()
        nudged[idx] += 0.25
        moved[idx] = NORMS[norm](nudged)[token[0], token[1], feature] != base
    return moved


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_the_shaded_entries_are_the_ones_the_norm_reads(norm):
    shaded = averaged_cells(norm)
    assert shaded.shape == BLOCK_SHAPE
    assert np.array_equal(shaded, entries_read(norm)), f"{norm}: the block shades other entries than it reads"


def test_an_unknown_norm_is_refused_by_name():
    with pytest.raises(ValueError, match="norm must be one of .* got 'group_norm'"):
        averaged_cells("group_norm")


def shaded_faces(ax, color) -> int:
    return sum(1 for p in ax.patches if isinstance(p, Polygon) and p.get_facecolor()[:3] == to_rgba(color)[:3])


def test_the_drawing_shades_the_visible_faces_of_the_set_and_stacks_when_narrow():
    n_b, n_t, n_d = BLOCK_SHAPE
    wide = norm_axes_block()
    bn_ax, ln_ax = wide.axes
    # BatchNorm, feature 0: the front face's top row, the whole top face, the right face's top row
    assert shaded_faces(bn_ax, COLORS["batch_norm"]) == n_t + n_b * n_t + n_b
    # LayerNorm, one token at the front: its column on the front face and one cell of the top face
    assert shaded_faces(ln_ax, COLORS["layer_norm"]) == n_d + 1
    assert wide.get_figwidth() == WIDTH_IN
    narrow = norm_axes_block(narrow=True)
    assert narrow.get_figwidth() == NARROW_IN
    narrow.canvas.draw()
    upper, lower = (ax.get_position() for ax in narrow.axes)
    assert upper.y0 >= lower.y1, "the narrow layout should stack the two blocks"
