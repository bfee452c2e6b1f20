"""The static face of an explorable: plain HTML controls over pre-rendered frames loaded on demand.

Every combination of the controls' positions is rendered once at build time (so moving a control
never resets another). Each distinct frame is a PNG file named by its content hash, written to a
staging folder (`frames_root()`, NORMLAB_FRAMES) and placed beside the page by
`scripts/place_frames.py`; the page embeds only the default frame's address, the readouts and alt
texts (deduplicated) and a few lines of script. An image is fetched when the reader reaches its
state (neighbouring states are prefetched once the reader starts using the controls), so a page's
first load is its HTML plus one frame per explorable. `<img src>` works over http and file://.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import os
import re
from pathlib import Path

from .controls import Slider
from .live import readouts_html, readouts_stable

FRAMES_ENV = "NORMLAB_FRAMES"
FRAMES_URL = "nl-frames"  # folder beside the page that holds its explorables' frames


def frames_root() -> Path:
    """Where static() stages frame files: $NORMLAB_FRAMES, else _build/nl-frames in the repository."""
    env = os.environ.get(FRAMES_ENV)
    return Path(env) if env else Path(__file__).resolve().parent.parent / "_build" / FRAMES_URL


def grid(exp) -> list[list]:
    """Every control's positions, in control order; raises when the combinations exceed exp.max_frames."""
    positions = [c.positions() for c in exp.controls.values()]
    total = 1
    for p in positions:
        total *= len(p)
    if total > exp.max_frames:
        sizes = " x ".join(f"{k} {len(p)}" for k, p in zip(exp.controls, positions, strict=True))
        raise ValueError(f"{exp.name}: {total} combinations ({sizes}) exceed max_frames={exp.max_frames}; "
                         "split it into focused explorables or give its sliders fewer stops")
    return positions


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def preset_indices(exp, positions: list[list]) -> dict:
    """{label: [position index of each control]} for every preset."""
    out = {}
    for label, _ in exp.presets.items():
        values = exp.preset_values(label)
        out[label] = [p.index(values[k]) for k, p in zip(exp.controls, positions, strict=True)]
    return out


def compact_readouts(data: dict) -> dict:
    """The page's readouts: the labels once ("rkeys") and each distinct table as its list of values (or of
    [label, value] pairs when its labels differ); the page's script builds the same table as readouts_html."""
    keys = list(data["all_readouts"][0]) if data["all_readouts"] else []
    rows: list = [None] * len(data["readouts"])
    for (_img, j, _alt), r in zip(data["frames"], data["all_readouts"], strict=True):
        if rows[j] is None:
            rows[j] = [str(v) for v in r.values()] if list(r) == keys else [[str(k), str(v)] for k, v in r.items()]
    return {"rkeys": keys, "readouts": rows}


def render_frames(exp, positions: list[list], folder: Path) -> dict:
    """Render every combination, write each distinct PNG once to `folder`; the page's data tables."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(exp.controls)
    files, readouts, alts = {}, {}, {}
    table, all_readouts = [], []
    for key in itertools.product(*[range(len(p)) for p in positions]):
        values = {n: positions[i][k] for i, (n, k) in enumerate(zip(names, key, strict=True))}
        png, r = exp.render(small=True, **values)
        fname = hashlib.sha256(png).hexdigest()[:20] + ".png"
        if fname not in files:
            files[fname] = len(files)
            target = folder / fname
            if not target.exists():
                target.write_bytes(png)
        rh = readouts_html(r)
        alt = exp.alt(**values)
        table.append([files[fname], readouts.setdefault(rh, len(readouts)), alts.setdefault(alt, len(alts))])
        all_readouts.append(r)
    return {"files": list(files), "frames": table, "readouts": list(readouts), "alts": list(alts),
            "all_readouts": all_readouts}


def control_html(i: int, name: str, c, positions: list, default: int) -> str:
    label = html.escape(c.label or name)
    if isinstance(c, Slider):
        return (f"<label class='nl-control'><span class='nl-head'><span class='nl-name'>{label}</span> "
                f"<output>{html.escape(c.format(c.value))}</output></span>"
                f"<input type='range' min='0' max='{len(positions) - 1}' step='1' value='{default}' "
                f"data-i='{i}' aria-label='{label}'></label>")
    opts = "".join(f"<option value='{j}'{' selected' if j == default else ''}>{html.escape(c.format(o))}</option>"
                   for j, o in enumerate(positions))
    return (f"<label class='nl-control'><span class='nl-head'><span class='nl-name'>{label}</span></span>"
            f"<select data-i='{i}' aria-label='{label}'>{opts}</select></label>")


def static_html(exp, folder: Path | None = None) -> str:
    """HTML for explorable `exp`; its frame files go to `folder` (default frames_root()/<name>)."""
    folder = Path(folder) if folder else frames_root() / exp.name
    names = list(exp.controls)
    positions = grid(exp)
    data = render_frames(exp, positions, folder)
    default = [p.index(exp.controls[n].value) for n, p in zip(names, positions, strict=True)]
    flat = 0
    for k, p in zip(default, positions, strict=True):
        flat = flat * len(p) + k
    first = data["frames"][flat]
    src_dir = f"{FRAMES_URL}/{exp.name}/"
    presets = preset_indices(exp, positions)
    payload = {
        "dir": src_dir, "sizes": [len(p) for p in positions], "defaults": default,
        "files": data["files"], "frames": data["frames"], **compact_readouts(data), "alts": data["alts"],
        "labels": [[exp.controls[n].format(v) for v in p] for n, p in zip(names, positions, strict=True)],
        "presets": presets,
    }
    controls = "".join(control_html(i, n, exp.controls[n], positions[i], default[i]) for i, n in enumerate(names))
    buttons = ""
    if presets:
        buttons = ("<div class='nl-presets' role='group' aria-label='Presets'><span class='nl-try'>Try:</span>"
                   + "".join(f'<button type="button" data-preset="{html.escape(lab, quote=True)}" '
                             f'title="{html.escape(exp.presets[lab].notice, quote=True)}">{html.escape(lab)}</button>'
                             for lab in presets) + "</div>")
    width = exp.css_width
    height = round(exp.size[1] * width / exp.size[0])
    title = f"<div class='nl-title'><b>{html.escape(exp.title)}</b></div>" if exp.title else ""
    ghost = readouts_stable(data["all_readouts"])
    body = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    src = f"{src_dir}{data['files'][first[0]]}"
    alt = html.escape(data["alts"][first[2]], quote=True)
    shown = data["readouts"][first[1]]
    return f"""<div class="normlab-explorable nl-v2" id="nl-{slug(exp.name)}" data-explorable="{html.escape(exp.name)}">
<style>{_CSS}</style>
{title}<div class="nl-controls">{controls}</div>
{buttons}
<img class="nl-frame" src="{src}" width="{width}" height="{height}" alt="{alt}">
<div class="nl-readouts" aria-live="polite"><div class="nl-ghost" aria-hidden="true">{ghost}</div>\
<div class="nl-current">{shown}</div></div>
<script type="application/json" class="nl-data">{body}</script>
<script>{_JS}</script>
</div>"""


_CSS = """
.normlab-explorable.nl-v2 { max-width: 100%; margin: 0.5em 0 1em; }
.normlab-explorable.nl-v2 .nl-controls { display: flex; flex-wrap: wrap; gap: 0.3em 1.4em; margin: 0.3em 0; }
.normlab-explorable.nl-v2 .nl-control { display: flex; flex-direction: column; justify-content: space-between;
  flex: 1 1 13em; min-width: 0; max-width: 100%; margin: 0; white-space: normal; }
.normlab-explorable.nl-v2 .nl-head { overflow-wrap: anywhere; }
.normlab-explorable.nl-v2 .nl-control output { display: inline; font-weight: 600; font-variant-numeric: tabular-nums;
  margin: 0 0 0 0.3em; }
.normlab-explorable.nl-v2 input[type=range] { width: 100%; min-width: 0; margin: 0.2em 0; }
.normlab-explorable.nl-v2 select { max-width: 100%; align-self: flex-start; margin: 0.2em 0; }
.normlab-explorable.nl-v2 .nl-presets { display: flex; flex-wrap: wrap; gap: 0.3em; align-items: center;
  margin: 0.2em 0 0.4em; }
.normlab-explorable.nl-v2 .nl-presets button { font-size: 0.85em; padding: 0.1em 0.6em; border-radius: 0.9em;
  border: 1px solid #888; background: #f4f4f4; color: #222; cursor: pointer; white-space: normal; }
.normlab-explorable.nl-v2 .nl-presets button[aria-pressed=true] { background: #0072B2; border-color: #0072B2;
  color: #fff; }
.normlab-explorable.nl-v2 .nl-try { font-size: 0.85em; color: #555; }
.normlab-explorable.nl-v2 img.nl-frame { display: block; max-width: 100%; height: auto; }
.normlab-explorable.nl-v2 .nl-readouts { display: grid; font-size: 0.85em; overflow-wrap: anywhere; }
.normlab-explorable.nl-v2 .nl-readouts > div { grid-area: 1 / 1; min-width: 0; }
.normlab-explorable.nl-v2 .nl-ghost { visibility: hidden; }
.normlab-explorable.nl-v2 .nl-stack { display: grid; }
.normlab-explorable.nl-v2 .nl-stack > div { grid-area: 1 / 1; }
.normlab-explorable.nl-v2 .nl-readouts table { margin: 0; border-collapse: collapse; width: 100%; }
.normlab-explorable.nl-v2 .nl-readouts th { width: 40%; vertical-align: top; }
.normlab-explorable.nl-v2 .nl-readouts th, .normlab-explorable.nl-v2 .nl-readouts td { padding: 0.1em 0.4em 0.1em 0;
  border: 0; text-align: left; }
"""

_JS = """(function () {
  var root = document.currentScript.parentElement;
  var d = JSON.parse(root.querySelector('.nl-data').textContent);
  var inputs = Array.prototype.slice.call(root.querySelectorAll('[data-i]'));
  var img = root.querySelector('.nl-frame'), cur = root.querySelector('.nl-current');
  var buttons = Array.prototype.slice.call(root.querySelectorAll('button[data-preset]'));
  // The page's own <img> holds the default frame and may load lazily (when scrolled near); it is never
  // reused once replaced, since a detached lazy image never loads.
  var loaders = {}, active = false, wanted = img.getAttribute('src');
  function esc(t) {
    return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;').replace(/'/g, '&#x27;');
  }
  // The same table as normlab_core.live.readouts_html: rows are values under d.rkeys, or [label, value] pairs.
  function table(rows) {
    return "<table class='normlab-readouts'>" + rows.map(function (r, i) {
      var kv = Array.isArray(r) ? r : [d.rkeys[i], r];
      return "<tr><th style='text-align:left;padding-right:1em'>" + esc(kv[0]) +
        '</th><td>' + esc(kv[1]) + '</td></tr>';
    }).join('') + '</table>';
  }
  function state() { return inputs.map(function (el) { return parseInt(el.value, 10); }); }
  function flat(s) { var f = 0; for (var i = 0; i < s.length; i++) { f = f * d.sizes[i] + s[i]; } return f; }
  function url(s) { return d.dir + d.files[d.frames[flat(s)][0]]; }
  // Each frame is fetched once by its own <img> element, kept for later; the shown element is swapped for
  // it once it has arrived. No request is ever cut off half-way and no half-loaded frame is shown.
  function show(im) {
    if (im === img) { return; }
    im.setAttribute('alt', img.getAttribute('alt'));
    img.replaceWith(im);
    img = im;
  }
  function load(u) {
    if (!loaders[u]) {
      var im = document.createElement('img');
      ['class', 'width', 'height'].forEach(function (a) { im.setAttribute(a, img.getAttribute(a)); });
      im.onload = function () { if (u === wanted) { show(im); } };
      im.setAttribute('src', u);
      if (im.decode) { im.decode().catch(function () {}); }  // decoded ahead: the swap paints at once
      loaders[u] = im;
    }
    return loaders[u];
  }
  function prefetch(s) {
    for (var i = 0; i < s.length; i++) {
      [-1, 1].forEach(function (step) {
        var t = s.slice(); t[i] += step;
        if (t[i] >= 0 && t[i] < d.sizes[i]) { load(url(t)); }
      });
    }
    Object.keys(d.presets).forEach(function (k) { load(url(d.presets[k])); });
  }
  function paint() {
    var s = state(), f = d.frames[flat(s)];
    inputs.forEach(function (el, i) {
      var o = el.parentElement.querySelector('output');
      if (o) { o.textContent = d.labels[i][s[i]]; }
    });
    wanted = url(s);
    root.setAttribute('data-frame', wanted);
    img.setAttribute('alt', d.alts[f[2]]);
    if (img.getAttribute('src') !== wanted) {
      var im = load(wanted);
      if (im.complete && im.naturalWidth > 0) { show(im); }
    }
    cur.innerHTML = table(d.readouts[f[1]]);
    root.setAttribute('data-state', s.join(','));
    buttons.forEach(function (b) {
      var p = d.presets[b.getAttribute('data-preset')];
      b.setAttribute('aria-pressed', String(p.join(',') === s.join(',')));
    });
    if (active) { prefetch(s); }
  }
  function wake() { if (!active) { active = true; prefetch(state()); } }
  ['pointerdown', 'focusin', 'keydown'].forEach(function (ev) { root.addEventListener(ev, wake); });
  inputs.forEach(function (el) {
    el.addEventListener('input', paint);
    el.addEventListener('change', paint);
  });
  buttons.forEach(function (b) {
    b.addEventListener('click', function () {
      var p = d.presets[b.getAttribute('data-preset')];
      inputs.forEach(function (el, i) { el.value = String(p[i]); });
      wake();
      paint();
    });
  });
  paint();
})();"""
