"""The book's house style: one colour per concept, figure sizes, text sizes, axis labelling and the one way the book
writes a number (`number`)."""

from __future__ import annotations

import io
import math
import numbers

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

# Okabe-Ito palette (colour-blind safe); each concept keeps its colour in every figure of the book.
COLORS = {
    "input": "#555555",
    "layer_norm": "#0072B2",
    "rms_norm": "#D55E00",
    "batch_norm": "#56B4E9",
    "pre": "#009E73",
    "post": "#CC79A7",
    "none": "#E69F00",
    "marker": "#000000",
    "highlight": "#F0E442",
    "warning": "#B00020",
}

DPI = 90           # CSS pixels per inch: a figure WIDTH_IN wide fills the book's 648 px text column
WIDTH_IN = 7.2
HEIGHT_IN = 3.3
NARROW_IN = 3.3    # the narrow layout (screens up to 600 px): 297 CSS px wide, panels stacked
SHARPNESS = 2      # explorable frames are drawn at DPI * SHARPNESS, for sharp screens
FIGURE_SHARPNESS = 2.5   # the book's static figures: at least 2x on screen and 240 ppi in print (648 px = 6.75 in)
NARROW_SHARPNESS = 3     # their phone drawings, for phones' 3x screens
SMALLEST = 8.0     # points: no text is smaller (10 CSS px at the figure's own size, 9 px on a 270 px column)

RC = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.8,
    "mathtext.fontset": "dejavusans",
}


def number(v, digits: int = 4) -> str:
    """A number as the book writes it (controls, readouts, notices): whole numbers as they are, others to `digits`
    significant digits with trailing zeros dropped and a short exponent beyond 1e-4 .. 10**digits (1e-5, 2.5e7)."""
    if isinstance(v, (bool, np.bool_, numbers.Integral)):
        return str(v if isinstance(v, (bool, np.bool_)) else int(v))
    v = float(v)
    if not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    text = f"{v:.{digits}g}" if v else "0"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def house_style():
    """Context manager applying the book's rcParams to artists created inside it."""
    return matplotlib.rc_context(RC)


def blank_figure(width: float = WIDTH_IN, height: float = HEIGHT_IN, dpi: float = DPI) -> Figure:
    """An empty Figure on an Agg canvas (no pyplot state), with constrained layout."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


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


def value_formatter(digits: int = 3) -> FuncFormatter:
    """Tick labels of a value axis written as the book writes numbers (0.04, 4e-5, 2e4): never an SI prefix,
    whose "40 m" would read as metres; a minus sign, as on the book's other axes."""
    return FuncFormatter(lambda v, _pos: number(v, digits).replace("-", "\N{MINUS SIGN}"))   # as matplotlib's


def figure_png(fig: Figure, dpi: float | None = None) -> bytes:
    """Draw a whole figure and return it as PNG bytes (at the figure's own dpi unless `dpi` is given)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi or fig.dpi)
    return buf.getvalue()
