"""The live face of an explorable: ipywidgets controls over the exact positions, preset buttons, the
image and readouts; bursts of changes coalesce into one or two draws.

Controls are index-based (a SelectionSlider over `control.positions()`, ToggleButtons over a Choice's
options), so the kernel receives exactly the stop the reader picked, never a float rebuilt from a step.

Frames already drawn are kept (CACHE_FRAMES per explorable, shared by its views): going back to a state
costs no drawing. Each frame reaches the browser as one message (FrameView: the PNG as binary, its alt text,
readouts and state key). Once the reader has moved a control, a second thread draws, while idle, the likeliest
next states (up to PREFETCH_MAX: the next AHEAD_ALONG stops in the direction of the last move, then the other
neighbours) and sends them to the browser, which keeps them decoded (BROWSER_KEEP per view, with every frame
it was shown): a move to a kept state is shown at once, without waiting for the kernel, whose own message
for that state follows. A request always goes before the states drawn ahead. A frame depends only on the
values (Explorable.render), so a kept, cached or prefetched frame is the one a fresh draw gives.
NORMLAB_PREFETCH=0 turns drawing ahead off (the caches stay): `make bench` measures both.
"""

from __future__ import annotations

import html
import os
import re
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

import anywidget
import ipywidgets as widgets
import traitlets

from .controls import Slider

_VIEWS: list = []

CACHE_FRAMES = 64   # frames kept per explorable (a 2x PNG is 40-150 KB)
# States drawn ahead (and sent to the browser to keep) after each move: up to PREFETCH_MAX, the next AHEAD_ALONG stops
# in the direction of the last move first. Measured on 23.3 and 23.4 (scripts/bench_browser.py --only lab, 2 cores,
# load 2.6-3.8): 1 state ahead gave p90 84 ms from key to painted frame, 2 along 61 ms, 3 along 45 ms.
PREFETCH_MAX = 3
AHEAD_ALONG = 3
BROWSER_KEEP = 48   # frames the browser keeps per view, decoded (live_frame.js); a 2x frame is 1-3 MB decoded
_FRAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # explorable -> OrderedDict(key -> frame)
_SHOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # explorable -> keys of frames shown so far
_FRAMES_LOCK = threading.Lock()


def prefetch_enabled() -> bool:
    """Whether live views draw neighbouring states ahead (NORMLAB_PREFETCH=0 turns it off)."""
    return os.environ.get("NORMLAB_PREFETCH", "1").strip() not in ("0", "false", "no", "off")


def _frame_key(values: dict) -> tuple:
    return tuple((k, type(v).__name__, repr(v)) for k, v in values.items())


def cached_frame(explorable, values: dict) -> tuple[tuple[bytes, dict, str], bool]:
    """((png, readouts, alt), hit): the frame at `values`, from the explorable's frame cache or drawn now
    (and kept, least recently used dropped first)."""
    key = _frame_key(values)
    with _FRAMES_LOCK:
        frames = _FRAMES.setdefault(explorable, OrderedDict())
        hit = frames.get(key)
        if hit is not None:
            frames.move_to_end(key)
            return (hit[0], dict(hit[1]), hit[2]), True
    png, readouts = explorable.render(**values)
    alt = explorable.alt(**values)
    with _FRAMES_LOCK:
        frames[key] = (png, dict(readouts), alt)
        frames.move_to_end(key)
        while len(frames) > CACHE_FRAMES:
            frames.popitem(last=False)
    return (png, readouts, alt), False


def is_cached(explorable, values: dict) -> bool:
    with _FRAMES_LOCK:
        return _frame_key(values) in _FRAMES.get(explorable, {})


def clear_cache(explorable=None) -> None:
    """Forget the kept frames of one explorable (or of all)."""
    with _FRAMES_LOCK:
        if explorable is None:
            _FRAMES.clear()
            _SHOWN.clear()
        else:
            _FRAMES.pop(explorable, None)
            _SHOWN.pop(explorable, None)


def stop_index(control, value) -> int | None:
    """The index of `value` among `control.positions()`, type-exact (1 is not the stop 1.0); None if absent."""
    return next((i for i, v in enumerate(control.positions()) if v == value and type(v) is type(value)), None)


def state_key(explorable, values: dict) -> str:
    """The state `values` as the browser names it: each control's stop index, joined by commas."""
    return ",".join(str(stop_index(c, values[k])) for k, c in explorable.controls.items())


def neighbours(explorable, values: dict, moved: str | None = None, step: int = 1, along: int = 1) -> list[dict]:
    """The states near `values`, most likely next first: control `moved` 1..`along` more stops in the direction
    `step` (+1/-1), then one back, then every other control's neighbouring stops or options."""
    order = [moved] if moved in explorable.controls else []
    order += [k for k in explorable.controls if k != moved]
    out = []
    for k in order:
        stops = explorable.controls[k].positions()
        i = stop_index(explorable.controls[k], values[k])
        if i is None:
            continue
        if isinstance(explorable.controls[k], Slider):
            first, reach = (step, along) if k == moved else (1, 1)
            candidates = [i + d * first for d in range(1, reach + 1)] + [i - first]
        else:
            candidates = [j for j in range(len(stops)) if j != i]
        out += [{**values, k: stops[j]} for j in candidates if 0 <= j < len(stops)]
    return out


def views() -> list:
    """Every LiveExplorable created in this kernel, in creation order."""
    return list(_VIEWS)


# The controls send the index of the stop the reader picked. ipywidgets 8 answers every such change with an
# "echo" of it, a message the browser must handle before the new frame arrives; these controls skip it (it
# only matters to a second browser window on the same kernel, whose slider would then lag until the next move).
class StopSlider(widgets.SelectionSlider):
    """A SelectionSlider over exact stops whose index changes are not echoed back to the browser."""
    index = traitlets.Int(help="Selected index").tag(sync=True, echo_update=False)


class OptionButtons(widgets.ToggleButtons):
    """ToggleButtons whose index changes are not echoed back to the browser."""
    index = traitlets.Int(None, help="Selected index", allow_none=True).tag(sync=True, echo_update=False)


def control_widget(name: str, control, label_px: int = 160):
    """The ipywidgets control for a Slider or Choice over its exact positions; its label `label_px` wide."""
    desc = control.label or name
    style = {"description_width": f"{label_px}px"}
    if not isinstance(control, Slider):
        labelled = [(control.format(o), o) for o in control.options]
        return OptionButtons(options=labelled, value=control.value, description=desc,
                             style={**style, "button_width": "auto"},
                             layout=widgets.Layout(width="auto", max_width="100%", flex_flow="row wrap"))
    stops = control.positions()
    return StopSlider(options=[(control.format(v), v) for v in stops], value=control.value,
                      description=desc, style=style, continuous_update=True,
                      layout=widgets.Layout(width=f"{label_px + 320}px", max_width="100%"))


def readouts_html(readouts: dict) -> str:
    """Readouts as a small two-column HTML table (escaped)."""
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
        f"<td>{html.escape(str(v))}</td></tr>"
        for k, v in readouts.items()
    )
    return f"<table class='normlab-readouts'>{rows}</table>"


def readout_variants(many, into: dict | None = None) -> dict:
    """{label: set of text shapes} over readouts dicts `many`; a shape is the text with every digit written
    as 0 (digits are about equally wide), so a few shapes stand for thousands of values."""
    out = into if into is not None else {}
    for r in many:
        for k, v in r.items():
            out.setdefault(str(k), set()).add(re.sub(r"[0-9]", "0", str(v)))
    return out


def readouts_stable(many=None, *, variants: dict | None = None) -> str:
    """A hidden table at least as tall as any of `many` at any width: one row per label that occurs, each
    holding every text shape of that label stacked in one grid cell. Laid in the same grid cell as the
    shown table, it keeps the readouts' height steady, so the text below never jumps."""
    variants = variants if variants is not None else readout_variants(many or [])
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th><td><div class='nl-stack'>"
        + "".join(f"<div>{html.escape(v)}</div>" for v in sorted(vs)) + "</div></td></tr>"
        for k, vs in variants.items())
    return f"<table class='normlab-readouts'>{rows}</table>"


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


_LIVE_CSS = """<style>
.normlab-live .nl-readouts { display: grid; }
.normlab-live .nl-readouts > div { grid-area: 1 / 1; min-width: 0; }
.normlab-live .nl-ghost { visibility: hidden; }
.normlab-live .nl-stack { display: grid; }
.normlab-live .nl-stack > div { grid-area: 1 / 1; }
.normlab-live .nl-readouts table { margin: 0; }
.normlab-live img.nl-frame { display: block; max-width: 100%; height: auto; }
.normlab-live .nl-preset button, .normlab-live button.nl-preset { width: auto; }
@media (max-width: 600px) {  /* a phone: each slider's label on its own line, so the track keeps its width */
  .normlab-live .widget-hslider { flex-wrap: wrap; height: auto; }
  .normlab-live .widget-hslider > .widget-label { width: 100% !important; max-width: 100%; text-align: left; }
}
</style>"""


class FrameView(anywidget.AnyWidget):
    """The figure (PNG bytes, drawn at 2x `width` x `height` CSS px), its alt text and the readout rows
    ([label, text] pairs) of the state `key` (state_key), sent to the browser together as one message with the
    PNG as binary; `ghost` is readouts_stable's table, which keeps the height steady. `controls` are the control
    widgets whose stops make up the key: normlab_core/live_frame.js shows a frame it already holds (one shown
    before, or one sent ahead by `send_ahead`) as soon as they move there, before the kernel answers."""
    _esm = Path(__file__).with_name("live_frame.js")
    png = traitlets.Bytes(b"").tag(sync=True)
    alt = traitlets.Unicode("").tag(sync=True)
    readouts = traitlets.List([]).tag(sync=True)
    ghost = traitlets.Unicode("").tag(sync=True)
    key = traitlets.Unicode("").tag(sync=True)
    width = traitlets.Int(0).tag(sync=True)
    height = traitlets.Int(0).tag(sync=True)
    controls = traitlets.List(traitlets.Instance(widgets.Widget)).tag(sync=True, **widgets.widget_serialization)
    keep = traitlets.Int(BROWSER_KEEP).tag(sync=True)

    def send_ahead(self, key: str, png: bytes, alt: str, rows: list, ghost: str) -> None:
        """Give the browser the frame of state `key` to keep, without showing it."""
        self.send({"method": "ahead", "key": key, "alt": alt, "readouts": rows, "ghost": ghost}, [png])



class LiveExplorable(widgets.VBox):
    """Controls, preset buttons, image and readouts of one explorable. Value changes are drawn by a worker
    thread that always takes the latest values, so a burst of slider events draws once or twice, not N times."""

    def __init__(self, explorable, values: dict):
        self.explorable = explorable
        longest = max(len(c.label or k) for k, c in explorable.controls.items())
        label_px = min(240, 20 + 7 * longest)  # about 7 px per character of the widget font
        self.controls = {k: control_widget(k, c, label_px) for k, c in explorable.controls.items()}
        for k, v in values.items():
            stops = explorable.controls[k].positions()
            if v not in stops:
                raise ValueError(f"{explorable.name}: {k}={v!r} is not one of the positions the live controls "
                                 f"offer {stops!r}")
            self.controls[k].value = stops[stops.index(v)]
        self.buttons = {}
        for label in explorable.presets:
            b = widgets.Button(description=label, tooltip=explorable.presets[label].notice,
                               layout=widgets.Layout(width="auto"))
            b.add_class("nl-preset")
            b.on_click(lambda _b, label=label: self.apply_preset(label))
            self.buttons[label] = b
        width = explorable.css_width
        self.frame = FrameView(width=width, height=round(explorable.size[1] * width / explorable.size[0]),
                               controls=list(self.controls.values()),
                               layout=widgets.Layout(max_width=f"{width}px", width="100%"))
        self.frame.add_class("nl-image")
        self.message = widgets.HTML()
        self._variants: dict = {}
        self._sent: OrderedDict = OrderedDict()   # keys of the frames the browser keeps (state_key), oldest first
        self._lock = threading.Lock()
        title = widgets.HTML(f"<b>{html.escape(explorable.title)}</b>{_LIVE_CSS}") if explorable.title \
            else widgets.HTML(_LIVE_CSS)
        def wrap():
            return widgets.Layout(display="flex", flex_flow="row wrap", align_items="center", max_width="100%")

        children = [title, widgets.Box(list(self.controls.values()), layout=wrap())]
        if self.buttons:
            children.append(widgets.Box(list(self.buttons.values()), layout=wrap()))
        children += [self.frame, self.message]
        super().__init__(children=children, layout=widgets.Layout(max_width="100%"))
        self.add_class("normlab-live")
        self.add_class(f"nl-{slug(explorable.name)}")
        self._cond = threading.Condition()
        self._pending = None
        self._busy = False
        self._thread = None
        self._quiet = False
        self._ahead: list = []          # states to draw ahead while idle
        self._fetching = False
        self._ahead_thread = None
        self.prefetch = prefetch_enabled()
        self.draws = 0
        self.cache_hits = 0             # draws served from the frame cache
        self.prefetched = 0             # frames drawn ahead
        # where each frame shown came from: "drawn" (on request), "ahead" (drawn ahead, shown for the first
        # time) or "seen" (kept from an earlier showing): `make bench` splits its timings by it
        self.sources: list[str] = []
        self.drawn: dict | None = None
        self.png = b""
        self._draw(self.current_values())
        for w in self.controls.values():
            w.observe(self._on_change, names="value")
        _VIEWS.append(self)

    def __repr__(self) -> str:
        return (f"<live explorable {self.explorable.name!r}: run this cell in JupyterLab (make lab) "
                "to get its sliders>")

    def current_values(self) -> dict:
        """The values the controls show now (the exact stops)."""
        return {k: w.value for k, w in self.controls.items()}

    def apply_preset(self, label: str) -> None:
        """Set every control to preset `label` at once and draw that state once."""
        values = self.explorable.preset_values(label)
        self._quiet = True
        try:
            for k, v in values.items():
                self.controls[k].value = v
        finally:
            self._quiet = False
        self._request(self.current_values())

    def _on_change(self, _change) -> None:
        if not self._quiet:
            self._request(self.current_values())

    def _request(self, values: dict) -> None:
        with self._cond:
            self._pending = values
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=f"normlab-{self.explorable.name}",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _work(self) -> None:
        """The drawing worker: always the latest requested values; a kept frame is shown at once, even while
        the other thread is drawing ahead (only a frame that must be drawn waits for the figure)."""
        while True:
            with self._cond:
                while self._pending is None:
                    self._cond.wait()
                values, self._pending, self._busy = self._pending, None, True
                before = self.drawn
            try:
                self._draw(values)
            finally:
                with self._cond:
                    self._busy = False
                    self._ahead = self._plan_ahead(before, values) if self.prefetch else []
                    if self._ahead and self._ahead_thread is None:
                        self._ahead_thread = threading.Thread(target=self._work_ahead, daemon=True,
                                                              name=f"normlab-ahead-{self.explorable.name}")
                        self._ahead_thread.start()
                    self._cond.notify_all()

    def _work_ahead(self) -> None:
        """Draws the planned states ahead into the frame cache and sends them to the browser, one at a time,
        only while no request is waiting or being drawn."""
        while True:
            with self._cond:
                while not self._ahead or self._pending is not None or self._busy:
                    self._cond.wait()
                self._prefetch_one(self._ahead.pop(0))

    def _plan_ahead(self, before: dict | None, values: dict) -> list:
        """The states near `values` whose frames the browser does not hold, the next AHEAD_ALONG stops in the
        last move's direction first."""
        moved, step = None, 1
        for k, v in values.items():
            if before is not None and before.get(k) != v:
                moved = k
                was, now = (stop_index(self.explorable.controls[k], x) for x in (before[k], v))
                if was is not None and now is not None:
                    step = 1 if now >= was else -1
                break
        near = neighbours(self.explorable, values, moved, step, along=AHEAD_ALONG)
        return [n for n in near if not self._holds(n)][:PREFETCH_MAX]

    def _holds(self, values: dict) -> bool:
        """Whether the browser was sent the frame of `values` recently enough to still keep it."""
        with self._lock:
            return state_key(self.explorable, values) in self._sent

    def _mark_sent(self, key: str) -> None:
        with self._lock:
            self._sent[key] = True
            self._sent.move_to_end(key)
            while len(self._sent) > BROWSER_KEEP:
                self._sent.popitem(last=False)

    def _prefetch_one(self, values: dict) -> None:
        """Draw one state ahead into the frame cache (unless it is there) and send it to the browser to keep
        (called with self._cond held; released meanwhile). Errors are left for the reader's own draw of that
        state to show."""
        if self._holds(values):
            return
        self._fetching = True
        self._cond.release()
        try:
            (png, readouts, alt), hit = cached_frame(self.explorable, values)
            self.prefetched += not hit
            key = state_key(self.explorable, values)
            self.frame.send_ahead(key, png, alt, *self._rows_and_ghost(readouts))
            self._mark_sent(key)
        except Exception:  # noqa: BLE001 - shown when the reader goes there
            pass
        finally:
            self._cond.acquire()
            self._fetching = False
            self._cond.notify_all()

    def _rows_and_ghost(self, readouts: dict) -> tuple[list, str]:
        """The readouts as [label, text] rows, and the hidden table (readouts_stable) of every readout shape
        this view has sent so far, these included."""
        with self._lock:
            ghost = readouts_stable(variants=readout_variants([readouts], into=self._variants))
        return [[str(k), str(v)] for k, v in readouts.items()], ghost

    def _draw(self, values: dict) -> None:
        try:
            (png, readouts, alt), hit = cached_frame(self.explorable, values)
        except Exception as err:  # shown in the widget: a reader must never face a silent log traceback
            self.message.value = (
                "<div style='color:#B00020'><b>Could not draw this figure</b> at "
                f"{html.escape(repr(values))}: {html.escape(type(err).__name__)}: {html.escape(str(err))}</div>"
            )
            return
        self.png = png
        rows, ghost = self._rows_and_ghost(readouts)
        state = state_key(self.explorable, values)
        with self.frame.hold_sync():  # one message: picture, alt text and readouts arrive together
            self.frame.png = png
            self.frame.alt = alt
            self.frame.readouts = rows
            self.frame.ghost = ghost
            self.frame.key = state
        self._mark_sent(state)
        self.message.value = ""
        key = _frame_key(values)
        with _FRAMES_LOCK:
            shown = _SHOWN.setdefault(self.explorable, set())
            self.sources.append("drawn" if not hit else "seen" if key in shown else "ahead")
            shown.add(key)
        self.drawn = dict(values)
        self.draws += 1
        self.cache_hits += hit

    def wait(self, timeout: float = 10.0, *, ahead: bool = False) -> bool:
        """Block until every requested redraw is drawn (with ahead=True: and every state planned ahead);
        False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy and not (
                ahead and (self._ahead or self._fetching)), timeout)
