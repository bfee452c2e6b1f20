"""The book's house style: one colour per concept, figure sizes, axis labelling, PNG encoding."""

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
}

WIDTH_IN = 7.2   # the book's text column at DPI below is 648 px wide
HEIGHT_IN = 3.3
DPI = 90
SHARPNESS = 2    # explorable frames are drawn at DPI * SHARPNESS and shown at WIDTH_IN * DPI CSS pixels

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
}


def house_style():
    """Context manager applying the book's rcParams to artists created inside it."""
    return matplotlib.rc_context(RC)


def blank_figure(width: float = WIDTH_IN, height: float = HEIGHT_IN, dpi: float = DPI) -> Figure:
    """An empty Figure on an Agg canvas (no pyplot state), constrained layout."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = WIDTH_IN, height: float = HEIGHT_IN,
               **subplot_kw) -> tuple[Figure, np.ndarray]:
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


def _key_colours() -> list[tuple[int, int, int]]:
    """Colours every explorable palette keeps exactly: the house colours and their tints toward white
    (antialiased edges), the warning red, and a grey ramp from black to white."""
    out = []
    for hexc in [*COLORS.values(), "#B00020", "#000000"]:
        c = np.array([int(hexc[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
        for t in (1.0, 0.75, 0.5, 0.25):
            out.append(tuple(int(v) for v in np.round(c * t + 255 * (1 - t))))
    out += [(g, g, g) for g in range(0, 256, 17)]
    return list(dict.fromkeys(out))


def make_palette(rgba: np.ndarray):
    """A 256-colour PIL palette image for one explorable: the colours of one of its frames (fast octree)
    plus the key colours, so that every later frame is encoded against the same palette quickly."""
    from PIL import Image

    keys = _key_colours()
    img = Image.fromarray(np.ascontiguousarray(rgba), "RGBA").convert("RGB")
    own = img.quantize(256 - len(keys), method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    colours = own.getpalette()[:3 * (256 - len(keys))]
    colours += [v for c in keys for v in c]
    colours += [255] * (768 - len(colours))
    pal = Image.new("P", (1, 1))
    pal.putpalette(colours)
    return pal


def rgba_to_png(rgba: np.ndarray, *, small: bool = False, palette=None) -> bytes:
    """Encode an (H, W, 4) uint8 RGBA buffer as PNG.

    With `palette` (from make_palette) the pixels are mapped to its 256 colours without dithering: about
    5x faster to encode than RGB and half the bytes; small=True then compresses harder (static book).
    Without a palette: small=True quantizes to 128 colours (fast octree), otherwise RGB at low compression.
    """
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(rgba), "RGBA").convert("RGB")
    buf = io.BytesIO()
    if palette is not None:
        img.quantize(palette=palette, dither=Image.Dither.NONE).save(buf, format="PNG",
                                                                     compress_level=6 if small else 1)
    elif small:
        img.quantize(128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
            buf, format="PNG", compress_level=6)
    else:
        img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def figure_png(fig: Figure, *, small: bool = False) -> bytes:
    """Draw a whole figure and return it as PNG bytes."""
    fig.canvas.draw()
    return rgba_to_png(np.asarray(fig.canvas.buffer_rgba()), small=small)
