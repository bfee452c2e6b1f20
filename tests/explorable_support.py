"""Shared helpers of the explorable tests (mechanism, catalog, live, static): a toy explorable and frame tools."""

from __future__ import annotations

import io
import itertools

import numpy as np
from matplotlib.legend import Legend
from matplotlib.text import Text
from PIL import Image

from normlab_core.interactive import Choice, Explorable, Preset, Slider, vector


def toy(**kw) -> Explorable:
    """A small explorable over every feature of the mechanism: a free slider, an integer slider, a choice, an input,
    presets, a panel whose limits follow a control, a title that follows the state and a legend built per state."""

    def setup(fig, *, narrow, x):
        ax, bx = fig.subplots(2, 1) if narrow else fig.subplots(1, 2)
        (line,) = ax.plot(np.arange(x.size), x, "o-", label="x")
        (marks,) = bx.plot([], [], "s", color="C1")
        band = bx.axhspan(-1, 1, color="0.9")
        ax.set_ylim(-12, 12)
        bx.set_xlim(-0.5, 7.5)
        bx.set_ylim(-3, 3)
        note = ax.text(0.03, 0.05, "", transform=ax.transAxes)
        return {"ax": ax, "bx": bx, "line": line, "marks": marks, "band": band, "note": note}

    def update(art, *, scale, count, kind, x):
        y = scale * (x - x.mean())
        art["line"].set_ydata(y)
        art["ax"].set_ylim(*((-120, 120) if np.abs(y).max() > 12 else (-12, 12)))
        art["marks"].set_data(np.arange(count), np.sin(np.arange(count)))
        art["ax"].set_title(f"{kind} at scale {scale:g}", loc="left")
        art["band"].set_color("0.8" if kind == "band" else "0.9")
        if count:
            art["bx"].legend(handles=[art["marks"]], labels=["marks"], loc="upper right")
        elif art["bx"].get_legend():
            art["bx"].get_legend().remove()
        art["note"].set_text(f"largest {np.abs(y).max():.3g}")
        return {"largest |y|": f"{np.abs(y).max():.4g}", "marks": str(count)}, f"x scaled by {scale:g}: {count} marks"

    options = {"title": "A toy", "setup": setup, "update": update, "inputs": {"x": vector([1.0, 2.0, 4.0, 9.0])},
               "controls": {"scale": Slider([0.5, 1.0, 2.0, 4.0], 1.0, label="scale", free=(0.0, 10.0)),
                            "count": Slider([0, 2, 4, 8], 4, label="marks"),
                            "kind": Choice(["plain", "band"], "plain", label="kind")},
               "presets": {"big": Preset({"scale": 4.0}, "the line leaves the small axis"),
                           "banded": Preset({"kind": "band", "count": 0}, "no marks, darker band")},
               "narrow": (4.0, 5.0)}
    return Explorable("toy", **{**options, **kw})


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def every_state(exp) -> list[dict]:
    """Every combination of the controls' stops."""
    positions = [c.positions() for c in exp.controls.values()]
    return [dict(zip(exp.controls, combo, strict=True)) for combo in itertools.product(*positions)]


def figure_key(fig) -> str:
    """What the figure's still parts depend on (the mechanism keeps one background per such key)."""
    return repr([(ax.get_position().bounds, ax.viewLim.bounds, ax.get_xscale(), ax.get_yscale(), ax.get_xlabel(),
                  ax.get_ylabel(), [ax.get_title(loc) for loc in ("left", "center", "right")],
                  [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else None)
                 for ax in fig.axes])


def text_boxes(fig, changing: bool) -> list:
    """(description, window extent) of the texts the figure shows now that update() changes (changing=True: texts
    drawn over the background), or of all the others: tick labels in view, axis labels, titles, colorbar labels,
    fixed texts, and each legend as one box."""
    renderer = fig.canvas.get_renderer()
    out = []

    def add(t, what):
        if t.get_visible() and t.get_text().strip() and t.get_animated() == changing:
            out.append((f"{what} {t.get_text()!r}", t.get_window_extent(renderer)))

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in () if changing else (ax.xaxis, ax.yaxis):
            scale = axis.get_transform()   # ticks in view, compared on the axis' own scale (log axes too)
            lo, hi = sorted(scale.transform(np.asarray(axis.get_view_interval(), dtype=float)))
            slack = 1e-9 * (hi - lo)
            for locs, labels in ((axis.get_majorticklocs(), axis.get_majorticklabels()),
                                 (axis.get_minorticklocs(), axis.get_minorticklabels())):
                for loc, t in zip(locs, labels, strict=False):
                    if loc > 0 or axis.get_scale() == "linear":
                        if lo - slack <= float(scale.transform(np.array([loc], dtype=float))[0]) <= hi + slack:
                            add(t, "tick label")
            add(axis.label, "axis label")
            add(axis.get_offset_text(), "offset text")
        for a in ax.get_children():
            if isinstance(a, Legend) and a.get_visible() and not changing:   # a legend: one box
                out.append((f"legend {[t.get_text() for t in a.get_texts()]}", a.get_window_extent(renderer)))
            elif isinstance(a, Text):
                add(a, "text")
    for t in fig.texts:
        add(t, "figure text")
    return out


_STILL: dict = {}   # figure -> {figure_key: (still text boxes, their problems)}


def text_problems(fig, tolerance: float = 2.0) -> list[str]:
    """Texts that overlap another (by more than `tolerance` px both ways, 1 CSS px) or leave the figure. The still
    texts are measured once per figure_key, after a full drawing (a frame drawn over a kept background may leave the
    ticks holding another background's labels)."""
    still = _STILL.setdefault(id(fig), {})
    key = figure_key(fig)
    if key not in still:
        fig.canvas.draw()
        for a in fig.findobj():   # as the mechanism leaves them after a frame: a drawing only places titles
            a.stale = False
        boxes = text_boxes(fig, changing=False)
        still[key] = (boxes, _clashes(fig, boxes, [], tolerance))
    boxes, problems = still[key]
    return problems + _clashes(fig, text_boxes(fig, changing=True), boxes, tolerance) + axes_escapes(fig, tolerance)


def axes_escapes(fig, tolerance: float = 2.0) -> list[str]:
    """Texts placed inside an axes (in its own 0..1 coordinates) whose box reaches out of it: across the spine,
    over the tick labels (a note that outgrew a narrow panel)."""
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        box = ax.get_window_extent(renderer)
        for t in ax.texts:
            x, y = t.get_position()
            if t.get_transform() is not ax.transAxes or not (0 <= x <= 1 and 0 <= y <= 1):
                continue
            if not (t.get_visible() and t.get_text().strip()):
                continue
            b = t.get_window_extent(renderer)
            if b.x0 < box.x0 - tolerance or b.x1 > box.x1 + tolerance or b.y0 < box.y0 - tolerance or \
                    b.y1 > box.y1 + tolerance:
                out.append(f"text {t.get_text()!r} reaches out of its axes ({b.x0:.0f}..{b.x1:.0f} x "
                           f"{b.y0:.0f}..{b.y1:.0f}, the axes {box.x0:.0f}..{box.x1:.0f} x {box.y0:.0f}..{box.y1:.0f})")
    return out


def _clashes(fig, boxes, others, tolerance) -> list[str]:
    """Boxes that leave the figure, overlap each other, or overlap one of `others`."""
    problems = []
    W, H = fig.bbox.width, fig.bbox.height
    for what, b in boxes:
        if b.x0 < -tolerance or b.y0 < -tolerance or b.x1 > W + tolerance or b.y1 > H + tolerance:
            problems.append(f"{what} leaves the figure ({b.x0:.0f}..{b.x1:.0f} x {b.y0:.0f}..{b.y1:.0f} of "
                            f"{W:.0f}x{H:.0f})")
    for i, (wa, a) in enumerate(boxes):
        for wb, b in boxes[i + 1:] + others:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance and min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance:
                problems.append(f"{wa} overlaps {wb}")
    return problems
