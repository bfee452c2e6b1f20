"""What the JupyterLab tests expect at each step, computed without the browser; with the private JupyterLab and
its page (scripts/lab_session.py) and the Chromium launcher (scripts/browser.py) they drive."""

from __future__ import annotations

import json
import os
from pathlib import Path

from browser_support import launch  # noqa: F401,I001  (the tests' one launcher)

from scripts import lab as lab_script
from scripts.lab_session import (  # noqa: F401
    JS_KERNEL_EXEC,
    NOTEBOOKS,
    SECTION_NOTEBOOKS,
    LabPage,
    LabServer,
    server_tracebacks,
)


class CourseLab(LabServer):
    """The instructors' JupyterLab (scripts/lab.py --instructor) with the course copy as its root."""

    def __init__(self, course: Path):
        super().__init__(notebooks=[])
        self.root = course
        self.cmd = [a for a in self.cmd if not a.startswith("--ServerApp.root_dir=")] + lab_script.lab_args(
            course, instructor=True)
        self.env.pop("JUPYTER_CONFIG_PATH", None)
        self.env = lab_script.lab_env(self.env, instructor=True)


# -- what every step of the test should show, computed without the browser ------------------------------

def jsonable(value):
    """`value` as the kernel reports it through JSON (numpy scalars as Python numbers), so that equality is
    exact and type-aware (1 and 1.0 stay different; floats round-trip through repr)."""
    return json.loads(json.dumps(value, default=lambda o: o.item()))


def plan(exp) -> list[tuple]:
    """The steps the JupyterLab test takes on explorable `exp`, with the state each one must reach:
    (what, kind, control index, key / option index / preset label, state). Every slider visits all of its
    stops (Home, then ArrowRight to the last), every choice picks each other option and its own again, then every
    preset is clicked; a control keeps its value while the next ones move."""
    from normlab_core.interactive import Slider

    state = jsonable(exp.defaults())
    steps = [("as first drawn", "none", None, None, state)]
    for ci, (k, c) in enumerate(exp.controls.items()):
        pos = jsonable(c.positions())
        if isinstance(c, Slider):
            moves = [("Home", 0)] if pos.index(state[k]) != 0 else []
            moves += [("ArrowRight", i) for i in range(1, len(pos))]
            for key, i in moves:
                state = {**state, k: pos[i]}
                steps.append((f"{k} -> {pos[i]!r} ({key})", "key", ci, key, state))
        else:
            start = pos.index(state[k])
            for i in [i for i in range(len(pos)) if i != start] + [start]:
                state = {**state, k: pos[i]}
                steps.append((f"{k} -> {pos[i]!r} (pick)", "pick", ci, i, state))
    for label in exp.presets:
        state = jsonable(exp.preset_values(label))
        steps.append((f"preset {label!r}", "preset", None, label, state))
    return steps


def src_key(png: bytes) -> str:
    """How the test page identifies an image by its PNG bytes (the live widget shows them through a blob: URL;
    the page reads them back): the length of the equivalent data: URI and its last 48 characters. Those hold
    the PNG's final CRC, which covers the zlib stream's Adler-32 checksum of all the pixel rows, so two
    different frames practically never share a key."""
    import base64

    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f"{len(src)}:{src[-48:]}"


def expected_views(name: str, narrow: bool = False, **inputs) -> list[dict]:
    """For each step of plan(get(name)): the frame key, readouts rows, control labels and alt text the page
    must show, rendered by a fresh catalog in this process (run in a worker process by the test)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from normlab_core.figures import get

    exp = get(name)
    out, cache = [], {}
    for *_, state in plan(exp):
        key = json.dumps(state, sort_keys=True)
        if key not in cache:
            f = exp.render(narrow=narrow, **state, **inputs)
            cache[key] = {"src": src_key(f.png), "readouts": [list(r) for r in f.readouts.items()],
                          "controls": [c.format(state[k]) for k, c in exp.controls.items()], "alt": f.alt}
        out.append(cache[key])
    return out
