"""The static face: every combination of an explorable's stops is drawn once while the book is built, in both
layouts, into PNG files named by their content and staged in frames_root()/<name>/ with the table of frames,
table.js, that frontend.js loads when the reader first touches a control (scripts/place_frames.py puts them
beside the page). The page holds the spec, the first frame and the shared script and stylesheet only, so its
first load is its HTML plus one frame per explorable. Everything works over http and from file://."""

from __future__ import annotations

import hashlib
import html
import io
import itertools
import json
import os
import re
from pathlib import Path

from PIL import Image

from ..canvas import DPI
from .controls import Slider
from .explorable import Explorable

FRAMES_ENV = "NORMLAB_FRAMES"
FRAMES_URL = "nl-frames"   # the folder beside a page that holds its explorables' frames
HERE = Path(__file__).parent


def packed(png: bytes) -> bytes:
    """The same picture, compressed harder for the book (render() favours speed)."""
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def frames_root() -> Path:
    """Where frames are staged: $NORMLAB_FRAMES, else _build/nl-frames in the repository."""
    env = os.environ.get(FRAMES_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[2] / "_build" / FRAMES_URL


# The caption under a figure whose controls are at no preset's state (frontend.js shows a preset's notice at its own).
NEUTRAL = "These settings are not one of the preset states. Choose a preset button to read here what it shows."


def caption(exp: Explorable, values: dict) -> str:
    """The caption of the figure at control `values`: the notice of the preset these values are at, or NEUTRAL."""
    at = [label for label in exp.presets if exp.preset_values(label) == {**exp.defaults(), **values}]
    return exp.presets[at[0]].notice if at else NEUTRAL


def spec(exp: Explorable, values: dict) -> dict:
    """What frontend.js draws the title, controls, presets and caption from, in both faces; `start`: the stop
    indices of `values`; `caption`: the caption there; `neutral`: the caption away from every preset."""
    controls = [{"label": c.label or k, "kind": "slider" if isinstance(c, Slider) else "choice",
                 "labels": [c.format(v) for v in c.positions()], "stops": c.stops if isinstance(c, Slider) else [],
                 "free": [*c.free, c.integer] if c.free else None} for k, c in exp.controls.items()]
    index = [c.positions().index(values[k]) if values[k] in c.positions() else f"={values[k]!r}"
             for k, c in exp.controls.items()]   # the state key's parts: a stop's index, or "=value" (typed)
    presets = [[label, p.notice, [c.positions().index(v) for v, c in zip(
        exp.preset_values(label).values(), exp.controls.values(), strict=True)]] for label, p in exp.presets.items()]
    return {"name": exp.name, "title": exp.title, "controls": controls, "presets": presets, "start": index,
            "caption": caption(exp, values), "neutral": NEUTRAL,
            "wide": [round(v * DPI) for v in exp.size], "narrow": [round(v * DPI) for v in exp.narrow_size]}


EXPORT = "export default { render };"   # frontend.js's one ES-module statement, its last: anywidget imports render


def script() -> str:
    """frontend.js as a classic script for book pages (Chromium runs no module script in a page opened from
    file://): in a scope of its own, with its last statement, EXPORT, replaced by booting the page's explorables.
    ValueError if the file has any other import or export statement, or EXPORT is not its last statement."""
    js = (HERE / "frontend.js").read_text(encoding="utf-8")
    body, found, tail = js.rpartition(EXPORT)
    if not found or tail.strip() or re.search(r"^\s*(import|export)\b", body, re.M):
        raise ValueError(f"frontend.js must end with {EXPORT!r} and have no other import or export statement, so "
                         "that the book's classic script can be built from it")
    return "(function () {\n" + body + "boot();" + tail + "})();\n"


def static_html(exp: Explorable, folder: Path | None = None, **values_and_inputs) -> str:
    """The page's HTML for `exp`, drawn from `values_and_inputs` (controls at stops); its frames, table.js and the
    shared script and stylesheet go to `folder` (default frames_root()/<name>) and its parent."""
    folder = Path(folder) if folder else frames_root() / exp.name
    folder.mkdir(parents=True, exist_ok=True)
    values, inputs = exp.resolve(values_and_inputs)
    start = spec(exp, values)
    if not all(isinstance(p, int) for p in start["start"]):
        raise ValueError(f"{exp.name}: the static book offers the controls' stops only; got {values}")
    files, rows, alts, frames, shapes = {}, {}, {}, {}, {}
    positions = [c.positions() for c in exp.controls.values()]
    for idx in itertools.product(*(range(len(p)) for p in positions)):
        state = {k: p[i] for k, p, i in zip(exp.controls, positions, idx, strict=True)}
        entry = []
        for narrow in (False, True):
            f = exp.render(narrow=narrow, **state, **inputs)
            png = packed(f.png)
            name = hashlib.sha256(png).hexdigest()[:20] + ".png"
            if not (folder / name).exists():
                (folder / name).write_bytes(png)
            entry.append(files.setdefault(name, len(files)))
        for label, text in f.readouts.items():
            shapes.setdefault(label, set()).add(re.sub("[0-9]", "0", text))
        frames[",".join(map(str, idx))] = entry + [rows.setdefault(json.dumps(list(f.readouts.items())), len(rows)),
                                                    alts.setdefault(f.alt, len(alts))]
    table = {"name": exp.name, "files": list(files), "frames": frames, "rows": [json.loads(r) for r in rows],
             "alts": list(alts)}
    (folder / "table.js").write_text(f"normlabTable({json.dumps(table, separators=(',', ':'))});\n", encoding="utf-8")
    for target, text in [("normlab-explorable.js", script()),
                         ("normlab-explorable.css", (HERE / "frontend.css").read_text(encoding="utf-8"))]:
        if not (folder.parent / target).is_file() or (folder.parent / target).read_text(encoding="utf-8") != text:
            (folder.parent / target).write_text(text, encoding="utf-8")
    first = frames[",".join(map(str, start["start"]))]
    start["first"] = {layout: [table["files"][first[j]], table["rows"][first[2]], table["alts"][first[3]]]
                      for j, layout in enumerate(("wide", "narrow"))}
    start["shapes"] = {k: sorted(v) for k, v in shapes.items()}
    body = json.dumps(start, separators=(",", ":")).replace("</", "<\\/")
    src = f"{FRAMES_URL}/{exp.name}/"
    (w, h), (nw, nh) = start["wide"], start["narrow"]
    slug = re.sub(r"[^a-z0-9-]+", "-", exp.name.lower()).strip("-")
    return (f'<div class="normlab-explorable" id="nl-{slug}" data-explorable="{html.escape(exp.name)}" '
            f'data-dir="{src}">\n<link rel="stylesheet" href="{FRAMES_URL}/normlab-explorable.css">\n'
            f'<script type="application/json" class="nl-spec">{body}</script>\n<picture><source media="(max-width: '
            f'600px)" srcset="{src}{start["first"]["narrow"][0]}" width="{nw}" height="{nh}"><img class="nl-frame" '
            f'src="{src}{start["first"]["wide"][0]}" width="{w}" height="{h}" alt="'
            f'{html.escape(start["first"]["wide"][2], quote=True)}"></picture>\n'
            f'<p class="nl-caption">{html.escape(start["caption"])}</p>\n'
            f'<script src="{FRAMES_URL}/normlab-explorable.js"></script>\n</div>')
