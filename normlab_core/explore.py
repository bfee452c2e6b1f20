"""Explorables: one drawing function of slider values serves live JupyterLab widgets and static book pages.

An explorable has ordered controls (Slider / Choice), a `setup(fig)` that builds the figure once and
returns its artists, and an `update(art, **values)` that changes those artists and returns readouts
(label -> text).  `frame()` gives a PNG, `live()` an ipywidgets view, `static()` self-contained HTML.
`show(name)` displays one from the catalog: static when NORMLAB_STATIC=1 (the book build), live otherwise.

Drawing is fast because the figure is built once and only the artists listed in `art["animated"]`
are redrawn over a cached background (blitting). So: every artist that `update` changes must be in
that list, and axis limits are set explicitly (no autoscale); when `update` does change a limit or a
scale, the background is redrawn once for the new limits.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from .controls import Choice, Preset, Slider
from .style import DPI, HEIGHT_IN, SHARPNESS, WIDTH_IN, blank_figure, house_style, make_palette, rgba_to_png

__all__ = ["Choice", "Explorable", "Preset", "Slider", "catalog", "get", "show", "try_this", "STATIC_ENV"]

from .display import STATIC_ENV

BACKGROUNDS = 12  # cached backgrounds (one per set of axis limits) per explorable: ~3 MB each at 2x

# One lock for all drawing: matplotlib's font objects are shared by every figure and are not thread-safe, and
# the live face draws in worker threads (one per explorable, and ahead of the reader while idle).
RENDER_LOCK = threading.RLock()


class Explorable:
    """A figure driven by controls; see the module docstring for the setup/update contract."""

    def __init__(self, name: str, controls: dict, setup, update, *, title: str = "", alt="",
                 blit: bool = True, width: float = WIDTH_IN, height: float = HEIGHT_IN,
                 max_frames: int = 400, presets: dict | None = None):
        self.name = name
        self.controls = dict(controls)
        self.title = title
        self._setup, self._update, self._alt = setup, update, alt
        self.blit = blit
        self.size = (width, height)
        self.max_frames = max_frames
        self.presets = self._check_presets(presets or {})
        self._fig = None
        self._lock = RENDER_LOCK

    def _check_presets(self, presets: dict) -> dict:
        """The presets, checked: each is a Preset naming known controls at values among their positions."""
        if not isinstance(presets, dict):
            raise TypeError(f"{self.name}: presets must be a dict of label -> Preset, got {type(presets).__name__}")
        for label, p in presets.items():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"{self.name}: a preset label must be a non-empty string, got {label!r}")
            if not isinstance(p, Preset):
                raise TypeError(f"{self.name}: preset {label!r} must be a Preset(values, notice), "
                                f"got {type(p).__name__}")
            unknown = sorted(set(p.values) - set(self.controls))
            if unknown:
                raise ValueError(f"{self.name}: preset {label!r} names unknown control(s) {unknown}; "
                                 f"the controls are {list(self.controls)}")
            for k, v in p.values.items():
                allowed = self.controls[k].positions()
                same = [a for a in allowed if a == v and isinstance(a, bool) == isinstance(v, bool)]
                if not same:
                    raise ValueError(f"{self.name}: preset {label!r} sets {k}={v!r}, which is not exactly one "
                                     f"of that control's positions {allowed!r}")
                p.values[k] = same[0]  # the stop itself (0 -> 0.0 on a float slider)
        return dict(presets)

    @property
    def css_width(self) -> int:
        """Width in CSS pixels the figure is shown at (its bitmap is SHARPNESS times wider)."""
        return round(self.size[0] * DPI)

    def __repr__(self) -> str:
        return f"Explorable({self.name!r}, controls={list(self.controls)})"

    # -- values ---------------------------------------------------------------------------------
    def defaults(self) -> dict:
        """The default value of every control, in order."""
        return {k: c.value for k, c in self.controls.items()}

    def values(self, **values) -> dict:
        """Defaults overridden by `values`; unknown names or values a control cannot take raise ValueError.

        An integer slider takes whole numbers only (7.0 is passed on as 7, 7.5 is refused).
        """
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"{self.name} has no control(s) {sorted(unknown)}; it has {list(self.controls)}")
        merged = {**self.defaults(), **values}
        for k, v in merged.items():
            c = self.controls[k]
            if not c.allows(v):
                raise ValueError(f"{self.name}: {k}={v!r} is outside what the control allows")
            if isinstance(c, Slider) and c.integer:
                merged[k] = int(v)  # 7.0 -> 7: update() may index with it
        return merged

    def preset_values(self, label: str) -> dict:
        """Every control's value in preset `label`: its defaults overridden by the preset's values."""
        if label not in self.presets:
            raise ValueError(f"{self.name} has no preset {label!r}; its presets are {list(self.presets)}")
        return self.values(**self.presets[label].values)

    def alt(self, **values) -> str:
        """Alt text of the figure at these values."""
        values = self.values(**values)
        return self._alt(**values) if callable(self._alt) else str(self._alt or self.title)

    # -- drawing --------------------------------------------------------------------------------
    def _ensure_figure(self):
        if self._fig is None:
            fig = blank_figure(*self.size, dpi=DPI * SHARPNESS)
            with house_style():
                art = self._setup(fig)
            self._animated = list(art.get("animated", [])) if self.blit else []
            for a in self._animated:
                a.set_animated(True)
            self._fig, self._art, self._background = fig, art, None
            self._backgrounds = {}
            self._palette = self._make_palette()
            self._home = self._positions()

    def _positions(self) -> list:
        return [(ax.get_position(original=True).frozen(), ax.get_position(original=False).frozen())
                for ax in self._fig.axes]

    def _set_positions(self, positions) -> None:
        for ax, (orig, active) in zip(self._fig.axes, positions, strict=True):
            ax._set_position(orig, which="original")
            ax._set_position(active, which="active")

    def _full_draw(self) -> None:
        """Draw the whole figure with the layout started from the same place every time (the layout
        after the first drawing): constrained layout starts from the current axes positions, so without
        this a frame would depend on which frames were drawn before it."""
        self._set_positions(self._home)
        self._fig.canvas.draw()

    def _make_palette(self):
        """The PNG palette of this explorable, from one full drawing at its defaults (so every frame is
        encoded the same way whichever state is drawn first)."""
        with warnings.catch_warnings(), house_style():
            warnings.simplefilter("ignore")
            self._update(self._art, **self.defaults())
        for a in self._animated:
            a.set_animated(False)
        try:
            self._fig.canvas.draw()
        finally:
            for a in self._animated:
                a.set_animated(True)
        return make_palette(np.asarray(self._fig.canvas.buffer_rgba()))

    def render(self, *, small: bool = False, **values) -> tuple[bytes, dict]:
        """(PNG bytes, readouts) at these values. Warnings raised while drawing become a 'note' readout."""
        values = self.values(**values)
        with self._lock:
            self._ensure_figure()
            with warnings.catch_warnings(record=True) as caught, house_style():
                warnings.simplefilter("always")
                readouts = dict(self._update(self._art, **values) or {})
            notes = list(dict.fromkeys(str(w.message) for w in caught))
            if notes:
                readouts["note"] = "; ".join(notes)
            canvas = self._fig.canvas
            if self.blit:
                limits = [ax.viewLim.bounds + (ax.get_xscale(), ax.get_yscale()) for ax in self._fig.axes]
                if self._background is None or limits != self._limits:
                    self._limits = limits
                    self._background = self._background_for(limits)
                canvas.restore_region(self._background)
                for a in self._animated:
                    (a.axes or self._fig).draw_artist(a)
            else:
                self._full_draw()
            png = rgba_to_png(np.asarray(canvas.buffer_rgba()), small=small, palette=self._palette)
        return png, readouts

    def _background_for(self, limits) -> object:
        """The figure without its animated artists at these axis limits: drawn once per limits and kept
        (up to BACKGROUNDS of them) with the axes positions the layout gave them, so that going back to
        limits seen before costs a copy, not a full redraw."""
        key = repr(limits)
        if key in self._backgrounds:
            background, positions = self._backgrounds.pop(key)
            self._backgrounds[key] = (background, positions)  # most recently used last
            self._set_positions(positions)
            return background
        self._full_draw()
        background = self._fig.canvas.copy_from_bbox(self._fig.bbox)
        positions = self._positions()
        self._backgrounds[key] = (background, positions)
        while len(self._backgrounds) > BACKGROUNDS:
            self._backgrounds.pop(next(iter(self._backgrounds)))
        return background

    def frame(self, **values) -> bytes:
        """PNG of the figure at these values (defaults for the rest); reuses one figure."""
        return self.render(**values)[0]

    def readouts(self, **values) -> dict:
        """The readouts (label -> text) at these values."""
        return self.render(**values)[1]

    # -- the two faces --------------------------------------------------------------------------
    def live(self, **values):
        """An ipywidgets view: the controls, the image and the readouts; redraws coalesce."""
        from .live import LiveExplorable

        return LiveExplorable(self, self.values(**values))

    def static(self) -> str:
        """Self-contained HTML: range inputs and selects over pre-rendered PNG frames, no external URL."""
        from .static import static_html

        return static_html(self)


_CATALOG: dict | None = None


def catalog() -> dict:
    """Every explorable the book uses, by stable name (builds objects; renders nothing)."""
    global _CATALOG
    if _CATALOG is None:
        from . import explorables

        _CATALOG = explorables.build()
    return _CATALOG


def get(name: str) -> Explorable:
    """One catalog entry by name, with a helpful error for a wrong name."""
    entries = catalog()
    if name not in entries:
        raise KeyError(f"no explorable named {name!r}; known: {', '.join(sorted(entries))}")
    return entries[name]


def try_this_markdown(exp: Explorable) -> str:
    """The "Try this" list of an explorable's presets as Markdown text (deterministic)."""
    if not exp.presets:
        raise ValueError(f"{exp.name} has no presets, so there is nothing to try; give it presets=...")
    lines = ["**Try this** (each button above the figure sets that state):", ""]
    lines += [f"- **{label}**: {p.notice.strip()}" for label, p in exp.presets.items()]
    return "\n".join(lines)


# The notebooks' show() and try_this() are the new mechanism's (normlab_core.interactive) until the notebooks import
# them from there; the rest of this module goes with the old mechanism.
from .interactive import show, try_this  # noqa: E402, F401
