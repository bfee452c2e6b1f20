"""Fitted layouts kept on disk, so that only the first process to draw an explorable fits its layout.

Fitting a figure's layout to every stop (explorable._Drawing) draws it once per set of axis limits and labels; the
result is a few numbers per axes. They are stored as JSON under a key that names everything the fit depends on:
every file of the normlab_core package, matplotlib's and numpy's versions and the fonts matplotlib can find, the
explorable's name, layout, size, starting values and inputs, and the stops and presets it is probed at. Any change
to one of them is another key, so a kept layout is never one fitted from other code or other data. Only the
book's own explorables are kept (setup and update from normlab_core, inputs of plain types): a learner's own code
is fitted afresh every time. NORMLAB_LAYOUT_CACHE names the folder (default: the user's cache folder), or turns
the store off when it is "off"; a folder that cannot be written only means fitting afresh."""

from __future__ import annotations

import functools
import hashlib
import json
import numbers
import os
import tempfile
from pathlib import Path

import numpy as np

PACKAGE = Path(__file__).resolve().parent.parent   # normlab_core
PLAIN = (str, bytes, bool, numbers.Number, type(None), np.ndarray)


def folder() -> Path | None:
    """Where layouts are kept (None: not kept)."""
    where = os.environ.get("NORMLAB_LAYOUT_CACHE", "")
    if where.strip().lower() == "off":
        return None
    if where:
        return Path(where)
    try:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    except (RuntimeError, KeyError, OSError):   # no home folder (a sandbox): nothing is kept
        return None
    return Path(base) / "normlab" / "layouts"


@functools.cache
def source_digest() -> str:
    """A digest of what every fit depends on besides the explorable itself: normlab_core's files, matplotlib's and
    numpy's versions and the fonts matplotlib knows (computed once per process)."""
    import matplotlib
    from matplotlib import font_manager

    h = hashlib.sha256(f"matplotlib {matplotlib.__version__} numpy {np.__version__}".encode())
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    for font in sorted(f"{f.fname} {f.name} {f.style} {f.weight}" for f in font_manager.fontManager.ttflist):
        h.update(font.encode())
    return h.hexdigest()[:24]


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(map(_plain, value))
    if isinstance(value, np.ndarray):
        return value.dtype != object
    if isinstance(value, PLAIN):
        return True
    kind = type(value)   # the library's own value types (residual.Affine), whose repr states every field
    return kind.__module__.startswith("normlab_core.") and hasattr(kind, "__dataclass_fields__")


# the settings of matplotlib that may move text or axes (read under the house style, which sets some of them)
LAYOUT_RC = ("font.", "text.", "mathtext.", "axes.", "xtick.", "ytick.", "legend.", "figure.constrained_layout.",
             "figure.titlesize", "figure.titleweight", "figure.labelsize", "figure.labelweight", "lines.")


def key(exp, narrow: bool, start: dict, dpi: float) -> str | None:
    """The key of this explorable's layout drawn from `start` under the rcParams in force (None: not to be kept)."""
    import matplotlib

    from .explorable import fingerprint

    own = all(getattr(f, "__module__", "").startswith("normlab_core.") for f in (exp.setup, exp.update))
    if not own or not all(_plain(v) for v in start.values()):
        return None
    what = repr((exp.name, f"{exp.setup.__module__}.{exp.setup.__qualname__}",
                 f"{exp.update.__module__}.{exp.update.__qualname__}", bool(narrow),
                 exp.narrow_size if narrow else exp.size, dpi, fingerprint(start),
                 [sorted((k, repr(v)) for k, v in p.items()) for p in exp.probes()],
                 sorted((k, repr(v)) for k, v in matplotlib.rcParams.items() if k.startswith(LAYOUT_RC))))
    return f"{source_digest()}-{hashlib.sha256(what.encode()).hexdigest()[:24]}"


def load(name: str | None) -> dict | None:
    """The layout kept under key `name`, or None."""
    where = folder()
    if name is None or where is None:
        return None
    try:
        return json.loads((where / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def store(name: str | None, layout: dict) -> None:
    """Keep `layout` under key `name` (written whole or not at all; a folder that cannot be written is skipped)."""
    where = folder()
    if name is None or where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=where, suffix=".tmp", delete=False, encoding="utf-8") as f:
            json.dump(layout, f)
        os.replace(f.name, where / f"{name}.json")
    except OSError:
        pass


def record(fig, boxes: dict) -> dict:
    """What the fit leaves in `fig` (with `boxes`, axes -> its fitted Bbox): each axes' box, anchor and box aspect,
    and the position of the figure's super title and labels."""
    return {"axes": [{"box": [float(v) for v in boxes[ax].get_points().ravel()],
                      "anchor": a if isinstance(a := ax.get_anchor(), str) else [float(v) for v in a],
                      "aspect": ax.get_box_aspect()} for ax in fig.axes],
            "sup": {name: [float(v) for v in t.get_position()] for name in ("_suptitle", "_supxlabel", "_supylabel")
                    if (t := getattr(fig, name, None)) is not None}}


def apply(fig, layout: dict) -> bool:
    """Put a recorded layout into `fig` (its layout engine already off); False when it does not fit the figure or
    is not a layout at all (then `fig` may be half changed: draw a new one)."""
    from matplotlib.transforms import Bbox

    try:
        axes, sup = layout["axes"], {name: getattr(fig, name, None) for name in layout["sup"]}
        if len(axes) != len(fig.axes) or any(t is None for t in sup.values()):
            return False
        for ax, a in zip(fig.axes, axes, strict=True):
            anchor = a["anchor"] if isinstance(a["anchor"], str) else tuple(a["anchor"])
            if anchor != ax.get_anchor():
                ax.set_anchor(anchor)
            if a["aspect"] != ax.get_box_aspect():
                ax.set_box_aspect(a["aspect"])
            ax.set_position(Bbox(np.array(a["box"], dtype=float).reshape(2, 2)))
        for name, position in layout["sup"].items():
            sup[name].set_position(tuple(float(v) for v in position))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return False
    return True
