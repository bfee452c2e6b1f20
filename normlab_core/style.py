"""The book's house style: one colour per concept, figure sizes, axis labelling, PNG encoding."""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.figure import Figure
from matplotlib.ft2font import RenderMode

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


TEXT_CACHE = True      # False: draw text exactly as matplotlib's own Agg renderer does (same pixels, slower)
_LAYOUTS: dict = {}    # (font, size, dpi, string, flags, features, language) -> (font, glyphs laid out)
_GLYPHS: dict = {}     # (font, size, dpi, glyph, matrix, 1/64-pixel phase, flags, mode) -> (coverage, left, top)
_CACHE_LIMIT = 20000   # entries per cache (glyph bitmaps are a few hundred bytes each at 2x)


class _TextCachingRenderer(RendererAgg):
    """Agg renderer that remembers text layouts and glyph bitmaps.

    matplotlib 3.11 shapes every string and rasterises every glyph again on each draw, about 15 ms for a
    two-line label at 2x, which is most of a blitted frame with a changing label. A glyph's bitmap depends
    on the glyph, size, rotation and the pen position's fraction of a pixel (FreeType positions in 1/64
    pixel); a whole-pixel shift only moves the bitmap. So the bitmap is kept per fraction and placed at
    the whole-pixel offset: the pixels are the same as matplotlib's own (tests/test_live_cache.py)."""

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or not TEXT_CACHE:
            return super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
        font = self._prepare_font(prop)
        flags = get_hinting_flag()
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        size = prop.get_size_in_points()
        key = (id(font), size, self.dpi, s, flags, tuple(features) if features else features,
               language if isinstance(language, (str, type(None))) else repr(language))
        hit = _LAYOUTS.get(key)
        if hit is None:
            items = font._layout(s, flags=flags, features=features, language=language)
            hit = (font, [(item.ft_object, item.glyph_index, item.x, item.y) for item in items])
            if len(_LAYOUTS) >= _CACHE_LIMIT:
                _LAYOUTS.clear()
            _LAYOUTS[key] = hit
        self._draw_glyphs_cached(gc, x, y, angle, size, hit[1], flags)

    def _draw_glyphs_cached(self, gc, x, y, angle, size, glyphs, flags):
        cos = math.cos(math.radians(angle))
        sin = math.sin(math.radians(angle))
        matrix = (0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int)
        mkey = tuple(matrix.ravel().tolist())
        mode = RenderMode.NORMAL if gc.get_antialiased() else RenderMode.MONO
        height = self.height
        for ft, glyph_index, dx, dy in glyphs:  # dy is upwards
            px = round(0x40 * (x + dx * cos - dy * sin))
            py = round(0x40 * (height - y + dx * sin + dy * cos))  # FreeType's y is upwards
            ix, fx = divmod(px, 0x40)
            iy, fy = divmod(py, 0x40)
            gkey = (id(ft), size, self.dpi, glyph_index, mkey, fx, fy, flags, mode)
            hit = _GLYPHS.get(gkey)
            if hit is None:
                ft.set_size(size, self.dpi)
                ft._set_transform(matrix, [fx, fy])
                bitmap = ft._render_glyph(glyph_index, flags, mode)
                buffer = np.array(bitmap.buffer)
                if mode == RenderMode.MONO:
                    buffer *= 0xff
                hit = (ft, buffer, bitmap.left, bitmap.top)  # ft kept alive: its id stays unique
                if len(_GLYPHS) >= _CACHE_LIMIT:
                    _GLYPHS.clear()
                _GLYPHS[gkey] = hit
            _, buffer, left, top = hit
            # draw_text_image's y is downwards and names the bitmap's bottom side
            self._renderer.draw_text_image(buffer, left + ix, int(height) - (top + iy) + buffer.shape[0], 0, gc)


class _Canvas(FigureCanvasAgg):
    """The Agg canvas with the text-caching renderer."""

    def get_renderer(self):
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key or not isinstance(getattr(self, "renderer", None), _TextCachingRenderer):
            self.renderer = _TextCachingRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer


def blank_figure(width: float = WIDTH_IN, height: float = HEIGHT_IN, dpi: float = DPI) -> Figure:
    """An empty Figure on an Agg canvas (no pyplot state), constrained layout; text drawing is cached."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    _Canvas(fig)
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
