"""The static face of an explorable: pre-rendered frames behind plain HTML range inputs.

Frame grid: when the product of every control's positions is at most `max_frames`, every
combination is rendered. Otherwise each slider is varied on its own while the other sliders stay at
their defaults (for every combination of the Choice controls); moving one slider then puts the
others back to their defaults, and the page says so.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import re

from .controls import Slider
from .live import readouts_html


def frame_keys(exp) -> tuple[list, bool]:
    """The index tuples to pre-render, and whether the grid is complete (every combination)."""
    sizes = [len(c.positions()) for c in exp.controls.values()]
    total = 1
    for s in sizes:
        total *= s
    if total <= exp.max_frames:
        return list(itertools.product(*[range(s) for s in sizes])), True
    names = list(exp.controls)
    default = [exp.controls[n].positions().index(exp.controls[n].value) for n in names]
    choice_axes = [i for i, n in enumerate(names) if not isinstance(exp.controls[n], Slider)]
    slider_axes = [i for i in range(len(names)) if i not in choice_axes]
    keys = []
    for combo in itertools.product(*[range(sizes[i]) for i in choice_axes]):
        base = list(default)
        for i, c in zip(choice_axes, combo, strict=True):
            base[i] = c
        keys.append(tuple(base))
        for i in slider_axes:
            for p in range(sizes[i]):
                key = list(base)
                key[i] = p
                keys.append(tuple(key))
    return list(dict.fromkeys(keys)), False


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def static_html(exp) -> str:
    """Self-contained HTML for explorable `exp` (no external URL)."""
    names = list(exp.controls)
    positions = [exp.controls[n].positions() for n in names]
    keys, complete = frame_keys(exp)
    images, frames = {}, {}
    for key in keys:
        values = {n: positions[i][k] for i, (n, k) in enumerate(zip(names, key, strict=True))}
        png, readouts = exp.render(small=True, **values)
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        img = images.setdefault(uri, len(images))
        frames[",".join(map(str, key))] = [img, readouts_html(readouts), exp.alt(**values)]
    default = [p.index(exp.controls[n].value) for n, p in zip(names, positions, strict=True)]
    first = frames[",".join(map(str, default))]
    slug = _slug(exp.name)
    inputs = []
    for i, (n, c) in enumerate(exp.controls.items()):
        label = html.escape(c.label or n)
        if isinstance(c, Slider):
            inputs.append(
                f"<label class='nl-control'><span>{label}</span> "
                f"<input type='range' min='0' max='{len(positions[i]) - 1}' step='1' value='{default[i]}' "
                f"data-i='{i}' aria-label='{label}'> "
                f"<output>{html.escape(c.format(c.value))}</output></label>")
        else:
            opts = "".join(
                f"<option value='{j}'{' selected' if j == default[i] else ''}>{html.escape(c.format(o))}</option>"
                for j, o in enumerate(c.options))
            inputs.append(f"<label class='nl-control'><span>{label}</span> "
                          f"<select data-i='{i}' aria-label='{label}'>{opts}</select></label>")
    labels = [[exp.controls[n].format(v) for v in p] for n, p in zip(names, positions, strict=True)]
    data = {"images": list(images), "frames": frames, "labels": labels, "defaults": default}
    note = ("Pre-rendered: every combination of the controls is available."
            if complete else
            "Pre-rendered: each slider is explored with the other sliders at their defaults, so moving "
            "one slider resets the others. Run the notebook in JupyterLab to combine them freely.")
    payload = json.dumps(data).replace("</", "<\\/")
    title = f"<div class='nl-title'><b>{html.escape(exp.title)}</b></div>" if exp.title else ""
    return f"""<div class="normlab-explorable" id="nl-{slug}" data-explorable="{html.escape(exp.name)}">
{title}<div class="nl-controls">{''.join(inputs)}</div>
<img class="nl-frame" src="{list(images)[first[0]]}" alt="{html.escape(first[2])}" style="max-width:100%">
<div class="nl-readouts">{first[1]}</div>
<p class="nl-note" style="font-size:80%;color:#555">{note}</p>
<script type="application/json" class="nl-data">{payload}</script>
<script>{_JS}</script>
</div>"""


_JS = """(function () {
  var root = document.currentScript.parentElement;
  var data = JSON.parse(root.querySelector('.nl-data').textContent);
  var inputs = Array.prototype.slice.call(root.querySelectorAll('[data-i]'));
  var img = root.querySelector('.nl-frame'), out = root.querySelector('.nl-readouts');
  function idx() { return inputs.map(function (el) { return parseInt(el.value, 10); }); }
  function paint() {
    inputs.forEach(function (el) {
      var o = el.parentElement.querySelector('output');
      if (o) { o.textContent = data.labels[+el.dataset.i][+el.value]; }
    });
  }
  function show(moved) {
    var f = data.frames[idx().join(',')];
    if (!f) {
      inputs.forEach(function (el) {
        if (el !== moved && el.type === 'range') { el.value = data.defaults[+el.dataset.i]; }
      });
      f = data.frames[idx().join(',')];
    }
    paint();
    if (f) { img.src = data.images[f[0]]; out.innerHTML = f[1]; img.alt = f[2]; }
  }
  inputs.forEach(function (el) {
    el.addEventListener('input', function () { show(el); });
    el.addEventListener('change', function () { show(el); });
  });
  paint();
})();"""
