"""The live face of an explorable: ipywidgets controls, an Image and readouts; bursts coalesce."""

from __future__ import annotations

import html
import threading

import ipywidgets as widgets

from .controls import Slider


def control_widget(name: str, control, label_px: int = 160):
    """The ipywidgets control for a Slider or Choice, its label `label_px` wide (so sliders line up)."""
    desc = control.label or name
    style = {"description_width": f"{label_px}px"}
    layout = widgets.Layout(width=f"{label_px + 300}px")
    if not isinstance(control, Slider):
        labelled = [(control.format(o), o) for o in control.options]
        return widgets.ToggleButtons(options=labelled, value=control.value, description=desc, style=style)
    if control.scale == "log":
        stops = control.positions(41)
        return widgets.SelectionSlider(options=[(control.format(v), v) for v in stops], value=control.value,
                                       description=desc, style=style, layout=layout, continuous_update=True)
    if control.integer:
        return widgets.IntSlider(min=int(control.lo), max=int(control.hi), step=int(control.step or 1),
                                 value=control.value, description=desc, style=style, layout=layout)
    step = control.step or (control.hi - control.lo) / 100
    return widgets.FloatSlider(min=control.lo, max=control.hi, step=step, value=control.value,
                               description=desc, style=style, layout=layout, readout_format=".3g")


def readouts_html(readouts: dict) -> str:
    """Readouts as a small two-column HTML table (escaped)."""
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
        f"<td>{html.escape(str(v))}</td></tr>"
        for k, v in readouts.items()
    )
    return f"<table class='normlab-readouts'>{rows}</table>"


class LiveExplorable(widgets.VBox):
    """Controls, image and readouts of one explorable. Value changes are drawn by a worker thread
    that always takes the latest values, so a burst of slider events draws once or twice, not N times."""

    def __init__(self, explorable, values: dict):
        self.explorable = explorable
        longest = max(len(c.label or k) for k, c in explorable.controls.items())
        label_px = min(320, 20 + 7 * longest)  # about 7 px per character of the widget font
        self.controls = {k: control_widget(k, c, label_px) for k, c in explorable.controls.items()}
        for k, v in values.items():
            self.controls[k].value = v
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.readout = widgets.HTML()
        self.message = widgets.HTML()
        title = widgets.HTML(f"<b>{html.escape(explorable.title)}</b>") if explorable.title else None
        children = [w for w in (title, *self.controls.values(), self.image, self.readout, self.message) if w]
        super().__init__(children=children)
        self._cond = threading.Condition()
        self._pending = None
        self._busy = False
        self._thread = None
        self.draws = 0
        self._draw(self.current_values())
        for w in self.controls.values():
            w.observe(self._on_change, names="value")

    def __repr__(self) -> str:
        return (f"<live explorable {self.explorable.name!r}: run this cell in JupyterLab (make lab) "
                "to get its sliders>")

    def current_values(self) -> dict:
        """The values the controls show now."""
        return {k: w.value for k, w in self.controls.items()}

    def _on_change(self, _change) -> None:
        with self._cond:
            self._pending = self.current_values()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=f"normlab-{self.explorable.name}",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while self._pending is None:
                    self._cond.wait()
                values, self._pending, self._busy = self._pending, None, True
            try:
                self._draw(values)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _draw(self, values: dict) -> None:
        try:
            png, readouts = self.explorable.render(**values)
        except Exception as err:  # shown in the widget: a reader must never face a silent log traceback
            self.message.value = (
                "<div style='color:#B00020'><b>Could not draw this figure</b> at "
                f"{html.escape(repr(values))}: {html.escape(type(err).__name__)}: {html.escape(str(err))}</div>"
            )
            return
        self.image.value = png
        self.readout.value = readouts_html(readouts)
        self.message.value = ""
        self.draws += 1

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until every requested redraw is drawn; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)
