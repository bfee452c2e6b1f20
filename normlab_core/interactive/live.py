"""The live face: an anywidget (frontend.js) whose frames the kernel draws with Explorable.render. The browser asks
for a state by its key (`want`) and, while the reader pauses, for the states it expects next (`ahead`); the kernel
draws the latest request first, then the states ahead while nothing waits. A shown frame goes out as the `frame`
trait to every view (two tabs, "New View"): views that did not ask for it follow it, so they always agree. Frames
drawn ahead go out as custom messages, the PNG as a binary buffer. The output also carries a figure of the first
frame, shown where the widget cannot be (a reopened notebook, another viewer).

When the kernel exits (the notebook closed or the kernel shut down), `stop_all` runs first among the exit handlers:
no frame is drawn ahead any more, a frame being drawn or sent is let finish, and the kernel's IOPub thread sends
what it was handed, all before pyzmq closes the helper that sends large buffers (a frame sent after that printed a
traceback in the server's log)."""

from __future__ import annotations

import atexit
import base64
import html
import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

import anywidget
import traitlets

from .explorable import Explorable
from .static import HERE, spec

CACHE = 64          # frames the kernel keeps per view
KEEP = 48           # frames the browser keeps per view (decoded)
_VIEWS: list = []
_STOPPED = threading.Event()   # set by stop_all: no view draws or sends again


def views() -> list:
    """Every live view made in this kernel that is still alive, oldest first."""
    return [v for v in (r() for r in _VIEWS) if v is not None]


def stop_all(timeout: float = 2.0) -> None:
    """Stop every view's drawing: requests and states ahead are dropped, a frame being drawn or sent is waited for
    (up to `timeout` s per view), and then the messages already handed to the kernel's IOPub thread."""
    _STOPPED.set()
    for view in views():
        with view._cond:
            view._want, view._ahead = None, []
            view._cond.notify_all()
            view._cond.wait_for(lambda v=view: not v._busy, timeout)
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return
    iopub = getattr(Kernel.instance(), "iopub_thread", None) if Kernel.initialized() else None
    if iopub is not None:      # its queue runs in order: once this runs, everything sent before it has gone
        sent = threading.Event()
        iopub.schedule(sent.set)
        sent.wait(timeout)


# atexit runs the handlers registered last first. pyzmq registers its garbage collector's handler (after which a
# large buffer can no longer be sent) when that module is first imported, which is otherwise at the first large
# message: import it now, so that stop_all, registered after it, runs before it.
try:
    import zmq.utils.garbage  # noqa: F401
except ImportError:
    pass
atexit.register(stop_all)


def key_values(exp: Explorable, key: str) -> dict:
    """The control values a state key names (ValueError for a key no control can take)."""
    parts = key.split(",")
    if len(parts) != len(exp.controls):
        raise ValueError(f"state {key!r} does not name {len(exp.controls)} controls")
    out = {}
    for part, (k, c) in zip(parts, exp.controls.items(), strict=True):
        out[k] = c.take(float(part[1:])) if part.startswith("=") else c.positions()[int(part)]
        if out[k] is None:
            raise ValueError(f"{exp.name}: {k}={part[1:]} is not allowed; {k} takes {c.allowed()}")
    return out


class LiveView(anywidget.AnyWidget):
    """The live explorable `exp`, drawn from `values_and_inputs` (checked here: a bad one raises at once)."""

    _esm = HERE / "frontend.js"
    _css = HERE / "frontend.css"
    spec = traitlets.Dict().tag(sync=True)
    frame = traitlets.Dict().tag(sync=True)

    def __init__(self, exp: Explorable, **values_and_inputs):
        values, self.inputs = exp.resolve(values_and_inputs)
        self.exp, self.frames, self.draws, self._cond = exp, OrderedDict(), 0, threading.Condition()
        self._want, self._ahead, self._busy = None, [], False
        super().__init__(spec={**spec(exp, values), "keep": KEEP})
        key = ",".join(map(str, self.spec["start"]))
        self.first = self._frame("wide", key)
        self.frame = self._message("wide", key, self.first, by="")
        self.drawn, self.png = dict(values), self.first.png
        self.on_msg(self._on_msg)
        threading.Thread(target=self._work, daemon=True, name=f"normlab-{exp.name}").start()
        _VIEWS.append(weakref.ref(self))

    def __repr__(self) -> str:
        return f"<live explorable {self.exp.name!r}: run the notebook in JupyterLab to move its controls>"

    def _ipython_display_(self):
        """The widget, after a figure of its first frame for where it cannot be shown (the figure's style hides it
        beside a working widget, and hides JupyterLab's error for a widget whose kernel has gone)."""
        from IPython.display import display

        png = base64.b64encode(self.first.png).decode("ascii")
        caption = f"{self.exp.title}. To move the controls, run the notebook (Run > Run All Cells)."
        hide = (".jp-OutputArea:has(.normlab-live) > .jp-OutputArea-child:has(.nl-fallback),"
                ".jp-OutputArea:not(:has(.normlab-live)):has(.nl-fallback) > .jp-OutputArea-child:not(:has("
                ".nl-fallback)) {display: none}")
        display({"text/html": f"<figure class='nl-fallback'><style>{hide}</style><img src='data:image/png;base64,"
                 f"{png}' alt='{html.escape(self.first.alt, quote=True)}' style='max-width:100%' width="
                 f"'{self.spec['wide'][0]}'><figcaption>{html.escape(caption)}</figcaption></figure>",
                 "text/plain": caption}, raw=True)
        data, metadata = self._repr_mimebundle_()   # anywidget's: (data, metadata)
        # Where the widget cannot be drawn (a reopened or untrusted notebook, another viewer) the figure above says
        # what to do: the widget's own plain-text face stays empty rather than show its repr.
        display({**data, "text/plain": ""}, metadata=metadata, raw=True)

    def _frame(self, layout: str, key: str):
        hit = self.frames.pop((layout, key), None) or self.exp.render(narrow=layout == "narrow", **self.inputs,
                                                                      **key_values(self.exp, key))
        self.frames[(layout, key)] = hit
        while len(self.frames) > CACHE:
            self.frames.popitem(last=False)
        return hit

    def _message(self, layout, key, f, by: str) -> dict:
        values = key_values(self.exp, key)
        return {"key": key, "layout": layout, "png": f.png, "rows": list(map(list, f.readouts.items())), "alt": f.alt,
                "labels": [c.format(values[k]) for k, c in self.exp.controls.items()], "by": by}

    def _on_msg(self, _widget, content, _buffers) -> None:
        with self._cond:
            if "want" in content:
                self._want = (content.get("layout", "wide"), str(content["want"]), str(content.get("view", "")))
            if "ahead" in content and os.environ.get("NORMLAB_PREFETCH") != "0":   # (make bench measures both)
                self._ahead = [(content.get("layout", "wide"), str(k), None) for k in content["ahead"]][:8]
            self._cond.notify_all()

    def _work(self) -> None:
        """Draws the latest request, then the states asked for ahead while no request waits."""
        while True:
            with self._cond:
                while self._want is None and not self._ahead and not _STOPPED.is_set():
                    self._cond.wait()
                if _STOPPED.is_set():
                    return
                (layout, key, by), self._want, self._busy = self._want or self._ahead.pop(0), None, True
            try:   # by: the view that asked for this state, or None for a state drawn ahead
                f = self._frame(layout, key)
                if by is None:
                    self.send({**self._message(layout, key, f, ""), "png": None, "ahead": True}, [f.png])
                else:
                    self.frame = self._message(layout, key, f, by)
                    self.drawn, self.png, self.draws = key_values(self.exp, key), f.png, self.draws + 1
            except Exception as err:  # noqa: BLE001 - shown on the figure: a reader must never face a silent log
                if by is not None:
                    self.frame = {"key": key, "layout": layout, "error":
                                  f"Could not draw this state: {type(err).__name__}: {err}", "by": by}
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def save_png(self, path) -> Path:
        """Write the frame last drawn for a view (the one the figure shows) to `path` as PNG; returns the path."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__} {path!r}")
        path = Path(path)
        path.write_bytes(self.png)
        return path

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until no request waits and the worker is idle (False on timeout); for tests."""
        with self._cond:
            return self._cond.wait_for(lambda: self._want is None and not self._ahead and not self._busy, timeout)
