"""The figures' toolbox: the house style (from normlab_core.canvas, shared with the explorables' frames), a
figure with its axes, axis labelling and panels, and the helpers several sections draw with: vector labels,
index ticks, 1-2-5 axis limits and the names of the placements."""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextPath
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import ScaledTranslation

from ..canvas import (
    COLORS,
    DPI,
    FIGURE_SHARPNESS,
    HEIGHT_IN,
    NARROW_IN,
    NARROW_SHARPNESS,
    RC,
    SHARPNESS,
    SMALLEST,
    WIDTH_IN,
    blank_figure,
    figure_png,
    house_style,
)
from ..formatting import number

__all__ = ["COLORS", "DPI", "FIGURE_SHARPNESS", "HEIGHT_IN", "NARROW_IN", "NARROW_SHARPNESS", "RC", "SHARPNESS",
           "SMALLEST", "WIDTH_IN", "blank_figure", "figure_png", "house_style", "index_ticks", "label", "new_figure",
           "one_two_five", "panels", "PLACEMENT_NAMES", "text_yticks", "title_tail", "value_formatter", "vector_label"]

# Where a residual layer puts its norm, by the names the code uses (residual.PLACEMENTS, transformer.PLACEMENTS and
# the training studies' variants), as the figures write them.
PLACEMENT_NAMES = {"none": "no normalization", "post": "post-norm", "pre": "pre-norm", "peri": "Peri-LN",
                   "deepnorm": "DeepNorm"}


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = WIDTH_IN, height: float = HEIGHT_IN, **subplot_kw):
    """A house-style Figure and its axes as a flat array of nrows*ncols."""
    fig = blank_figure(width, height)
    with house_style():
        axes = fig.subplots(nrows, ncols, squeeze=False, subplot_kw=subplot_kw or None)
    return fig, axes.ravel()


def label(ax, xlabel: str, ylabel: str, title: str = "") -> None:
    """Label an axes: units in brackets or '(dimensionless)', and a title that says what to notice."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, loc="left")


def panels(fig, narrow: bool, n: int = 2, ratios=None):
    """n panels side by side, or stacked in the narrow layout (width or height ratios `ratios`)."""
    if narrow:
        return fig.subplots(n, 1, height_ratios=ratios, squeeze=False).ravel()
    return fig.subplots(1, n, width_ratios=ratios, squeeze=False).ravel()


def vector_label(v, digits: int = 4, first: int | None = 8, fmt=None) -> str:
    """v (D,) as labels and notices write it: its first `first` components (all for None) as number(a, digits), or
    fmt(a), then ", ..." if there are more: "[1, -2, 0.5, ...]"."""
    v = np.asarray(v)
    fmt = fmt or (lambda a: number(a, digits))
    shown = v if first is None else v[:first]
    return "[" + ", ".join(fmt(a) for a in shown) + (", ...]" if shown.size < v.size else "]")


def index_ticks(ax, n: int) -> None:
    """x ticks at the component indices 0 .. n-1: every one for up to 12 components, about eight beyond."""
    idx = np.arange(n)
    ax.set_xticks(idx if n <= 12 else idx[::max(1, n // 8)])


def one_two_five(v: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is at least v (1 for v <= 0): a round axis limit."""
    if not v > 0:
        return 1.0
    decade = 10.0 ** math.floor(math.log10(v))
    return next(m * decade for m in (1, 2, 5, 10) if m * decade >= v * (1 - 1e-12))


def text_yticks(ax, ticks, widest: str) -> list:
    """The y axis of `ax` fixed at -1 to 1 with ticks at `ticks` whose labels are texts drawn with the data (set
    their words to the values the ticks stand for): a new scale then changes data only, not the whole figure. The
    y label keeps room for `widest`, the widest label the texts will hold."""
    ax.set_ylim(-1.0, 1.0)
    ax.set_yticks(ticks, [""] * len(ticks))
    pad = mpl.rcParams["ytick.major.size"] + mpl.rcParams["ytick.major.pad"]
    where, va, ha = ax.get_yaxis_text1_transform(pad)
    size = mpl.rcParams["ytick.labelsize"]
    texts = [ax.text(0, t, "", transform=where, va=va, ha=ha, fontsize=size) for t in ticks]
    room = TextPath((0, 0), widest, size=FontProperties(size=size).get_size_in_points()).get_extents().width
    room += pad + mpl.rcParams["axes.labelpad"]   # points
    ax.yaxis.set_label_coords(0, 0.5, transform=ax.transAxes + ScaledTranslation(-room / 72, 0,
                                                                                 ax.figure.dpi_scale_trans))
    return texts


def title_tail(ax, title: str):
    """Set `ax`'s title (on the left) and return an empty text in the title's font on its line, just after it: the
    words that change with a state go there (starting with a space), drawn with the data, since a new title would
    draw the whole figure again."""
    head = ax.set_title(title, loc="left")
    return ax.annotate("", (1, 0), xycoords=head, ha="left", va="bottom", fontsize=mpl.rcParams["axes.titlesize"],
                       fontweight=mpl.rcParams["axes.titleweight"])


def value_formatter(digits: int = 3) -> FuncFormatter:
    """Tick labels of a value axis written as the book writes numbers (0.04, 4e-5, 2e4): never an SI prefix,
    whose "40 m" would read as metres; a minus sign, as on the book's other axes."""
    return FuncFormatter(lambda v, _pos: number(v, digits).replace("-", "\N{MINUS SIGN}"))   # as matplotlib's
