"""The house style that static figures and explorable frames share, below both: one colour per concept, the
figure and text sizes, the rcParams, an empty Agg figure and its PNG."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

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
NARROW_IN = 3.8    # the narrow layout (screens up to 600 px): 342 CSS px, a 390 px phone's column; panels stacked
SHARPNESS = 2      # explorable frames are drawn at DPI * SHARPNESS, for sharp screens (their phone layout at 3x)
FIGURE_SHARPNESS = 2.5   # the book's static figures: at least 2x on screen and 240 ppi in print (648 px = 6.75 in)
NARROW_SHARPNESS = 3     # phone drawings (figures' and explorables'), for phones' 3x screens
SMALLEST = 8.0     # points: no text is smaller (10 CSS px at the figure's own size, 8 px on a 270 px column)

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


def house_style():
    """Context manager applying the book's rcParams to artists created inside it."""
    return matplotlib.rc_context(RC)


def blank_figure(width: float = WIDTH_IN, height: float = HEIGHT_IN, dpi: float = DPI) -> Figure:
    """An empty Figure on an Agg canvas (no pyplot state), with constrained layout."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure, dpi: float | None = None) -> bytes:
    """Draw a whole figure and return it as PNG bytes (at the figure's own dpi unless `dpi` is given)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi or fig.dpi)
    return buf.getvalue()


def house_palette(rgba: np.ndarray):
    """256 colours for pictures like rgba (H, W, 3 or 4): the house colours, their tints toward white and a grey ramp
    exactly, and the rest from the colours of rgba itself, so that every frame of an explorable is mapped to them
    fast and in the same way."""
    keys = list(dict.fromkeys([(g, g, g) for g in range(0, 256, 17)] + [
        tuple(int(round(int(h[i:i + 2], 16) * t + 255 * (1 - t))) for i in (1, 3, 5))
        for h in COLORS.values() for t in (1.0, 0.75, 0.5, 0.25)]))
    from PIL import Image

    own = Image.fromarray(np.ascontiguousarray(rgba)).convert("RGB").quantize(
        256 - len(keys), method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    colours = own.getpalette()[:3 * (256 - len(keys))] + [v for c in keys for v in c]
    pal = Image.new("P", (1, 1))
    pal.putpalette(colours + [255] * (768 - len(colours)))
    return pal


def palette_png(png: bytes) -> bytes:
    """The same picture in 256 colours, as the book publishes its figures: lines, text and their antialiasing
    keep their look, and the file is about a third as large (the frames of the explorables are stored so too)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        rgb = im.convert("RGB")
    few = rgb.quantize(palette=house_palette(np.asarray(rgb)), dither=Image.Dither.NONE)
    buf = io.BytesIO()
    few.save(buf, format="PNG", compress_level=9)
    return buf.getvalue()
