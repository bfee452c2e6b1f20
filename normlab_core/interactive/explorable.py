"""An explorable: a figure driven by controls and inputs, drawn by one pure function, `Explorable.render`, from its
figure module's `setup(fig, *, narrow, **inputs) -> art` and `update(art, **values_and_inputs) -> (readouts, alt)`.
A frame depends on the values and inputs only. Speed stays in here: a figure's layout is computed once (and kept on
disk for the next process: layouts.py); it is drawn in full only for new axis limits, scales, labels, titles or
legends (one kept background each), and otherwise only the artists update() changes (found by matplotlib's stale
flags) are drawn over that background."""

from __future__ import annotations

import hashlib
import io
import math
import threading
import warnings
from collections import OrderedDict, namedtuple

import numpy as np
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

from ..blas_threads import one_blas_thread
from ..canvas import (
    DPI,
    HEIGHT_IN,
    NARROW_IN,
    NARROW_SHARPNESS,
    SHARPNESS,
    WIDTH_IN,
    blank_figure,
    house_palette,
    house_style,
)
from ..formatting import number
from . import layouts
from .controls import Choice, Input, Preset, Slider

Frame = namedtuple("Frame", "png readouts alt")
LOCK = threading.RLock()   # matplotlib's fonts are shared by all figures and not thread-safe
FIGURES = 4                # figures kept per explorable (one per layout and set of inputs)
BACKGROUNDS = 12           # backgrounds kept per figure (one per set of axis limits, scales and labels)
KEYED = "background"       # the gid of a Text drawn into the background, its words and colour named in its key


class Explorable:
    """A figure driven by `controls` (name -> Slider/Choice) and `inputs` (name -> Input), with `presets` (label ->
    Preset); `start(**inputs)` may give the controls' starting values for a learner's own inputs."""

    def __init__(self, name: str, *, title: str, controls: dict, setup, update, presets: dict | None = None,
                 inputs: dict | None = None, start=None, size=(WIDTH_IN, HEIGHT_IN), narrow=(NARROW_IN, 5.0),
                 max_frames: int = 400):
        self.name, self.title, self.controls, self.inputs = name, title, dict(controls), dict(inputs or {})
        self.setup, self.update, self.start = setup, update, start
        self.size, self.narrow_size, self.max_frames = tuple(size), tuple(narrow), max_frames
        if set(self.controls) & set(self.inputs):
            raise ValueError(f"{name}: {sorted(set(self.controls) & set(self.inputs))} cannot be both a control "
                             "and an input")
        if (total := math.prod(len(c.positions()) for c in self.controls.values())) > max_frames:
            raise ValueError(f"{name}: {total} combinations of stops exceed max_frames={max_frames}")
        self._given = {label: self._preset(label, p) for label, p in (presets or {}).items()}
        self.presets = self._notices(self._inputs({}), default=True)   # label -> Preset whose notice is a text
        self._drawings: OrderedDict = OrderedDict()
        self.late: set = set()   # artists update() changed in some states only: see _Drawing.frame

    def __repr__(self) -> str:
        return f"Explorable({self.name!r}, controls={list(self.controls)}, inputs={list(self.inputs)})"

    def _preset(self, label, p) -> Preset:
        if not isinstance(label, str) or not label.strip() or not isinstance(p, Preset):
            raise TypeError(f"{self.name}: presets must map a non-empty label to a Preset, got {label!r}: {p!r}")
        for k, v in p.values.items():
            if k not in self.controls or self.controls[k].take(v) not in self.controls[k].positions():
                raise ValueError(f"{self.name}: preset {label!r} sets {k}={v!r}; presets set controls "
                                 f"{list(self.controls)} to their stops")
            p.values[k] = self.controls[k].take(v)
        return p

    def _notices(self, inputs: dict, default: bool) -> dict:
        return {label: Preset(p.values, p.text(inputs, default)) for label, p in self._given.items()}

    def at(self, **values_and_inputs) -> Explorable:
        """This explorable as it starts from `values_and_inputs`: the controls' defaults are the values given (or
        where `start` puts them for the inputs given), each slider's value one of its stops (a stop is added for a
        value that is not one yet, so the static book can show it), the inputs' defaults the inputs given and the
        presets' notices computed from them. Itself when nothing differs from its defaults."""
        values, inputs = self.resolve(values_and_inputs)
        default = fingerprint(inputs) == fingerprint(self._inputs({}))
        if default and all(values[k] == c.value for k, c in self.controls.items()):
            return self
        controls = {}
        for k, c in self.controls.items():
            v = values[k]
            if isinstance(c, Slider):
                if v not in c.stops:
                    v = _stop(c, v)
                stops = c.stops if v in c.stops else sorted([*c.stops, v])
                controls[k] = Slider(stops, v, label=c.label, free=c.free)
            else:
                controls[k] = Choice(c.options, v, label=c.label, labels=c.labels)
        frames = math.prod(len(c.positions()) for c in controls.values())
        out = Explorable(self.name, title=self.title, controls=controls, setup=self.setup, update=self.update,
                         inputs={k: Input(inputs[k], spec.convert, spec.allowed) for k, spec in self.inputs.items()},
                         size=self.size, narrow=self.narrow_size, max_frames=max(self.max_frames, frames))
        out._given = {label: Preset(p.values, p.notice, p.about_default) for label, p in self._given.items()}
        out.presets = out._notices(inputs, default)
        return out

    def defaults(self, **inputs) -> dict:
        """Every control's starting value: its default or, for inputs other than the defaults, what `start` gives."""
        out, given = {k: c.value for k, c in self.controls.items()}, self._inputs(inputs)
        if self.start and fingerprint(given) != fingerprint(self._inputs({})):
            out.update({k: _fit(self.controls[k], v) for k, v in self.start(**given).items()})
        return out

    def _inputs(self, given: dict) -> dict:
        out = {}
        for k, spec in self.inputs.items():
            try:
                out[k] = spec.convert(given[k]) if k in given else spec.default
            except (TypeError, ValueError) as err:
                raise type(err)(f"{self.name}: {k} must be {spec.allowed}; {err}") from None
        return out

    def resolve(self, given: dict) -> tuple[dict, dict]:
        """(control values, inputs) for `given` names, checked, the rest at their defaults (or where `start` puts
        them for the inputs given); a ValueError or TypeError says what is allowed."""
        if unknown := sorted(set(given) - set(self.controls) - set(self.inputs)):
            raise ValueError(f"{self.name} has no control or input named {unknown}; its controls are "
                             f"{list(self.controls)} and its inputs {list(self.inputs)}")
        inputs = self._inputs(given)
        values = {**self.defaults(**inputs), **{k: v for k, v in given.items() if k in self.controls}}
        for k, c in self.controls.items():
            if (taken := c.take(values[k])) is None:
                raise ValueError(f"{self.name}: {k}={values[k]!r} is not allowed; {k} takes {c.allowed()}")
            values[k] = taken
        return values, inputs

    def probes(self) -> list[dict]:
        """Each control at each of its other stops, and the presets: what update() changes in them is animated."""
        return [{k: v} for k, c in self.controls.items() for v in c.positions() if v != c.value] + [
            p.values for p in self.presets.values()]

    def preset_values(self, label: str) -> dict:
        """Every control's value in preset `label` (the rest at their defaults)."""
        if label not in self.presets:
            raise ValueError(f"{self.name} has no preset {label!r}; its presets are {list(self.presets)}")
        return {**self.defaults(), **self.presets[label].values}

    def render(self, *, narrow: bool = False, **values_and_inputs) -> Frame:
        """The frame at these control values and inputs (the rest at their defaults): PNG bytes, readouts (label ->
        text) and alt text; narrow=True draws the layout for screens up to 600 px."""
        values, inputs = self.resolve(values_and_inputs)
        key = (bool(narrow), fingerprint(inputs))
        with LOCK, one_blas_thread():   # small arrays: BLAS threads would only hand work back and forth
            if (drawing := self._drawings.pop(key, None)) is None:   # drawn first at these inputs' starting values
                drawing = _Drawing(self, narrow, {**self.resolve(inputs)[0], **inputs})
            self._drawings[key] = drawing
            while len(self._drawings) > FIGURES:
                self._drawings.popitem(last=False)
            return drawing.frame({**values, **inputs})

    def figure(self, *, narrow: bool = False, **inputs):
        """The matplotlib Figure as last drawn for this layout and these inputs (for tests that read it)."""
        return self._drawings[(bool(narrow), fingerprint(self.resolve(inputs)[1]))].fig


def _stop(control, v):
    """A value to add to a slider's stops: v to six significant digits (a stop the slider can tell apart from its
    others), or the stop it then equals."""
    near = v if control.integer else float(f"{v:.6g}")
    if control.free is not None:
        near = min(max(near, control.free[0]), control.free[1])
    close = [s for s in control.stops if number(s, 12) == number(near, 12) or (s and abs(near / s - 1) < 1e-9)]
    return close[0] if close else near


def _fit(control, v):
    """A starting value computed from a learner's inputs, moved into what the control takes: a number beyond a
    slider's range goes to its nearer end (or the nearest stop), anything else it cannot take (a NaN) to the
    control's default. A learner's input never stops the explorable from being drawn."""
    if control.take(v) is not None:
        return v
    if isinstance(control, Slider) and isinstance(v, (int, float, np.number)) and math.isfinite(v):
        if control.free is not None:
            near = min(max(float(v), control.free[0]), control.free[1])
            near = int(round(near)) if control.integer else near
            if control.take(near) is not None:
                return near
        return min(control.stops, key=lambda s: abs(s - v))
    return control.value


def fingerprint(inputs: dict) -> str:
    """A short digest of a set of inputs (arrays by dtype, shape and bytes; anything else by repr)."""
    h = hashlib.sha256()
    for k, v in sorted(inputs.items()):
        h.update(f"{k}={v.dtype}{v.shape}".encode() + v.tobytes() if isinstance(v, np.ndarray) else
                 f"{k}={v!r}".encode())
    return h.hexdigest()[:16]


class _Drawing:
    """One figure of an explorable (a layout and a set of inputs), its palette and its kept backgrounds."""

    def __init__(self, exp: Explorable, narrow: bool, start: dict, kept: bool = True):
        """kept=False fits the layout afresh even when one is kept on disk (layouts.py)."""
        dpi = DPI * (NARROW_SHARPNESS if narrow else SHARPNESS)
        self.fig = blank_figure(*(exp.narrow_size if narrow else exp.size), dpi=dpi)
        self.exp, self.backgrounds, self.static = exp, OrderedDict(), set()
        with house_style(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.key = layouts.key(exp, narrow, start, dpi)   # (None: a layout never kept)
            self.layout = layouts.load(self.key) if kept else None   # the fitted layout, as layouts.record gives it
            self.fitted = fit = self.layout is None
            self.art = exp.setup(self.fig, narrow=narrow, **{k: start[k] for k in exp.inputs})
            exp.update(self.art, **start)
            if fit:
                self.fig.draw_without_rendering()   # the layout and the text's extents, without painting a pixel
            boxes, keys, animated = {ax: ax.get_position() for ax in self.fig.axes}, {self._key()}, set()
            for probe in exp.probes():         # the artists update() changes are drawn over the background
                self._clean()
                exp.update(self.art, **{**start, **probe})
                animated.update(a for a in self._artists() if a.stale)
                if self._key() not in keys:    # other limits or labels: the layout must fit their tick labels too
                    keys.add(self._key())
                    if fit:
                        self.fig.draw_without_rendering()
                        boxes = {ax: Bbox.intersection(b, ax.get_position()) or b for ax, b in boxes.items()}
            self.fig.set_layout_engine("none")  # one layout for every state: the room each of the probes needs
            if not fit and not layouts.apply(self.fig, self.layout):   # kept for another figure: fit afresh
                return self.__init__(exp, narrow, start, kept=False)
            if fit:
                self.layout = layouts.record(self.fig, boxes)
                layouts.apply(self.fig, self.layout)
                layouts.store(self.key, self.layout)
            exp.update(self.art, **start)
            self.fig.canvas.draw()
            self.palette = house_palette(np.asarray(self.fig.canvas.buffer_rgba()))   # every frame is encoded with it
        for a in animated:
            a.set_animated(True)
        self._clean()

    def _artists(self):
        """The artists update() may change, but legends, titles and texts of gid KEYED: those change rarely and take
        long to draw, so they are drawn into the background and named in its key."""
        for ax in self.fig.axes:
            skip = {ax.xaxis, ax.yaxis, ax.patch, *ax.spines.values()}
            yield from (a for a in ax.get_children() if a not in skip and not isinstance(a, Legend) and not (
                isinstance(a, Text) and a.get_transform() == ax.title.get_transform()) and a.get_gid() != KEYED)
        yield from (*self.fig.texts, *self.fig.patches, *self.fig.lines)

    def _key(self) -> str:   # what a background depends on
        return repr([(ax.viewLim.bounds, ax.get_xscale(), ax.get_yscale(), ax.get_xlabel(), ax.get_ylabel(),
                      [ax.get_title(loc) for loc in ("left", "center", "right")],
                      _legend_key(ax.get_legend()),
                      [(t.get_text(), str(t.get_color())) for t in ax.texts if t.get_gid() == KEYED])
                     for ax in self.fig.axes])

    def _clean(self) -> None:
        for a in self._artists():
            a.stale = False

    def frame(self, state: dict) -> Frame:
        with warnings.catch_warnings(record=True) as caught, house_style():
            warnings.simplefilter("always")
            readouts, alt = self.exp.update(self.art, **state)
        readouts = {str(k): str(v) for k, v in dict(readouts).items()}
        if caught:   # what numpy or the maths had to say becomes a readout
            readouts["note"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
        changed = [a for a in self._artists() if a.stale and not a.get_animated()]
        for a in changed:          # drawn over the background from now on, in every frame
            a.set_animated(True)
        if self.static.intersection(changed):   # changed in none of the probes: frames drawn before and after
            self.backgrounds.clear()             # may differ in what lies above it
            self.exp.late.update(map(str, self.static.intersection(changed)))
        key, canvas = self._key(), self.fig.canvas
        if (background := self.backgrounds.pop(key, None)) is None:
            canvas.draw()          # leaves the animated artists out
            background = canvas.copy_from_bbox(self.fig.bbox)
            self.static = {a for a in self._artists() if not a.get_animated()}
        self.backgrounds[key] = background
        while len(self.backgrounds) > BACKGROUNDS:
            self.backgrounds.popitem(last=False)
        canvas.restore_region(background)
        fig = self.fig   # each axes' artists, then the figure's texts, patches and lines: a full drawing's order
        for group in [*(ax.get_children() for ax in fig.axes), (*fig.texts, *fig.patches, *fig.lines)]:
            for a in sorted((a for a in group if a.get_animated()), key=lambda a: a.get_zorder()):
                fig.draw_artist(a)
        self._clean()
        return Frame(_png(np.asarray(canvas.buffer_rgba()), self.palette), readouts, str(alt))


def _legend_key(legend) -> list | None:   # each entry's words and its handle's look
    return legend and [(t.get_text(), *(str(getattr(h, f"get_{p}", str)()) for p in ("color", "facecolor", "ls")))
                       for t, h in zip(legend.get_texts(), legend.legend_handles, strict=False)]


def _png(rgba: np.ndarray, palette) -> bytes:
    buf = io.BytesIO()   # zlib level 3: as fast as level 1 and smaller (the static writer packs harder)
    Image.fromarray(np.ascontiguousarray(rgba), "RGBA").convert("RGB").quantize(
        palette=palette, dither=Image.Dither.NONE).save(buf, format="PNG", compress_level=3)
    return buf.getvalue()
