// The one frontend of every explorable (normlab_core/interactive). The static book page and the live JupyterLab
// widget draw the same title, controls, presets, figure, readouts and alt text from a spec (the controls and
// presets) and a table of frames: "layout|state key" -> {src, rows, alt, labels}. A state key lists each control's
// stop index, or "=value" for a value typed into the live face's value box, joined by commas. The static page fills
// the table from files beside the page (nl-frames/<name>/table.js); the live widget from the kernel, which draws a
// state when asked and, while idle, the states this script asks for ahead. Either way an image is decoded off screen
// and put in place together with its readouts and alt text.

const NARROW = "(max-width: 600px)";   // the narrow layout: panels stacked, for phones
const AHEAD_AT_ONCE = 2;   // frames fetched ahead at the same time (on a slow link they share it with none asked for)

function make(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === null || v === undefined) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

const shapeOf = (text) => String(text).replace(/[0-9]/g, "0");   // digits are about equally wide

function readoutTable(rows) {   // rows: [label, text or element] pairs
  return make("table", { class: "normlab-readouts" },
    ...rows.map(([label, text]) => make("tr", {}, make("th", { text: label }), make("td", {}, text))));
}

// The caption under the figure: the notice of the preset whose state the controls are at, else the spec's neutral
// caption; followed at every change of state (a preset chosen, a control moved). In print a list of every preset
// and its notice follows it (the buttons are not printed). follow(key) sets its text.
function captionOf(spec) {
  const notes = new Map(spec.presets.map(([, notice, parts]) => [parts.join(","), notice]));
  const text = make("span", { class: "nl-caption-text", text: spec.caption || "" });
  const all = spec.presets.length ? make("ul", { class: "nl-preset-notes" },
    ...spec.presets.map(([label, notice]) => make("li", {}, make("b", { text: label }), `: ${notice}`))) : "";
  const node = make("figcaption", { class: "nl-caption", "aria-live": "polite" }, text, all);
  return { node, follow(key) { text.textContent = notes.get(key) ?? spec.neutral ?? ""; } };
}

// root: the element to draw into; spec: from Python; source: {table, wake(), want(key, layout), ahead(keys, layout),
// aheadCount, save?(key)}. Returns what a source calls: arrived(layout, key) when a frame came, adopt(key) to follow
// a state set elsewhere, status(text) for a message on the figure, key(), layout(), close().
// Frames load as <img> elements (they work from file://, where fetch() is refused): the one the reader asked for at
// once, with high priority; the likeliest next ones only once it is shown, AHEAD_AT_ONCE at a time with low priority.
// A frame on its way that is no longer wanted (the reader moved on) is cancelled by taking away its src.
function explorable(root, spec, source) {
  const { table } = source, controls = spec.controls, images = new Map();
  let state = spec.start.slice(), layout = matchMedia(NARROW).matches ? "narrow" : "wide";
  let shownKey = null, wanted = 0, loadingTimer = 0, moved = 0, step = 1, note = "", asked = null;
  let queue = [];   // sources to fetch ahead, likeliest first
  const fetching = new Map();   // source -> its entry in images, for the frames being fetched ahead
  const shapes = new Map(Object.entries(spec.shapes || {}).map(([k, v]) => [k, new Set(v)]));
  const keyOf = (s) => s.join(","), entryOf = (k = keyOf(state)) => table.get(`${layout}|${k}`);
  root.classList.add("normlab-explorable", `nl-${spec.name.replace(/_/g, "-")}`);

  const pick = (i) => (e) => go(i, +e.target.value);
  const inputs = controls.map((c, i) => (c.kind === "choice"
    ? make("select", { "data-i": i, "aria-label": c.label, autocomplete: "off", oninput: pick(i), onchange: pick(i) },
      ...c.labels.map((t, j) => make("option", { value: j, text: t })))
    : make("input", { type: "range", min: 0, max: c.labels.length - 1, step: 1, "data-i": i, "aria-label": c.label,
      autocomplete: "off", oninput: pick(i) })));
  const boxes = controls.map((c, i) => (c.free && spec.live
    ? make("input", { class: "nl-value", type: "text", inputmode: "decimal", "aria-label": `${c.label}: type a value`,
      onchange: (e) => typed(i, e.target), onkeydown: (e) => e.key === "Enter" && (e.preventDefault(), typed(i, e.target)) })
    : make("output", { hidden: c.kind === "choice" ? "" : null })));   // a choice's value: printed only
  const buttons = spec.presets.map(([label, notice, parts]) => make("button", { type: "button", "data-preset": label,
    title: notice, onclick: () => { source.wake(); [state, moved, note] = [parts.slice(), -1, ""]; render(); } }, label));
  const status = make("div", { class: "nl-status", role: "status" });
  const caption = captionOf(spec);
  const ghost = make("div", { class: "nl-ghost", "aria-hidden": "true" }), current = make("div", { class: "nl-current" });
  let img = root.querySelector("img.nl-frame") || make("img", { class: "nl-frame", alt: "" });
  const page = img.closest("picture");
  if (page) {   // the book page's picture holds the first frame of both layouts: an <img> of this one replaces it
    const src = layout === "narrow" ? page.querySelector("source").getAttribute("srcset") : img.getAttribute("src");
    img = make("img", { loading: img.getAttribute("loading") || "lazy", decoding: "async", class: "nl-frame",
      width: spec[layout][0], height: spec[layout][1], alt: img.alt, src });   // lazy before src: it waits to be near
    images.set(src, { pic: img, ready: null, done: true });
    page.replaceWith(img);
  }
  root.replaceChildren(...[...root.children].filter((n) => n.matches("link, script")),
    make("div", { class: "nl-title" }, make("b", { text: spec.title })),
    make("div", { class: "nl-controls" }, ...controls.map((c, i) => make("label", { class: "nl-control" },
      make("span", { class: "nl-head" }, make("span", { class: "nl-name", text: c.label }), " ", boxes[i]), inputs[i]))),
    buttons.length ? make("div", { class: "nl-presets", role: "group", "aria-label": "Presets" },
      make("span", { class: "nl-try", text: "Try:" }), ...buttons) : "",
    make("figure", { class: "nl-figure" }, make("div", { class: "nl-stage" }, img, status), caption.node),
    make("div", { class: "nl-readouts", "aria-live": "polite" }, ghost, current));

  const index = (i, part) => {   // the stop a control shows for a part of the state (the nearest, for a typed value)
    if (typeof part === "number") return part;
    const v = +part.slice(1), far = controls[i].stops.map((s) => Math.abs(s - v));
    return far.indexOf(Math.min(...far));   // a tie: the lower stop
  };
  // the value labels: a stop's from the spec, a typed value's from its frame
  const labels = (entry) => state.map((p, i) => (typeof p === "number" ? controls[i].labels[p]
    : (entry && entry.labels[i]) || p.slice(1)));
  const setStatus = (text) => { status.textContent = text; root.classList.toggle("nl-message", !!text); };

  function sync(entry) {
    const text = labels(entry), k = keyOf(state);
    inputs.forEach((el, i) => {
      el.value = String(index(i, state[i]));
      if (el.type === "range") el.setAttribute("aria-valuetext", text[i]);
      if (document.activeElement !== boxes[i]) boxes[i][boxes[i].tagName === "INPUT" ? "value" : "textContent"] = text[i];
    });
    buttons.forEach((b, j) => b.setAttribute("aria-pressed", String(keyOf(spec.presets[j][2]) === k)));
    caption.follow(k);
    root.dataset.state = k;
  }

  function picture(src, urgent) {   // one decoded <img> per source, made once; urgent: the reader waits for it
    if (!images.has(src)) {
      const pic = make("img", { class: "nl-frame", width: spec[layout][0], height: spec[layout][1],
        fetchpriority: urgent ? "high" : "low", src });   // src last: the priority is set when the fetch starts
      const item = { pic, done: false };
      item.ready = pic.decode().catch(() => {}).then(() => { item.done = true; });
      images.set(src, item);
      if (images.size > 96) images.delete(images.keys().next().value);
    }
    if (urgent) fetching.delete(src);   // fetched ahead and now asked for: it is never cancelled
    return images.get(src);
  }

  function cancel(keep) {   // frames being fetched ahead whose source is not in `keep` are dropped mid-way
    for (const [src, item] of fetching) {
      if (keep.has(src)) continue;
      fetching.delete(src);
      if (images.get(src) === item) images.delete(src);
      item.pic.removeAttribute("src");   // the browser cancels the request (over http and from file://)
    }
  }

  function later(src, item) {   // a frame on its way that the reader does not wait for: cancelled when not wanted
    fetching.set(src, item);
    item.ready.then(() => { if (fetching.get(src) === item) { fetching.delete(src); pump(); } });
  }

  function pump() {   // start frames ahead while nothing the reader asked for is on its way
    while (!asked && fetching.size < AHEAD_AT_ONCE && queue.length) {
      const src = queue.shift();
      if (!images.has(src)) later(src, picture(src, false));
    }
  }

  async function show() {
    const mine = ++wanted, key = keyOf(state), entry = entryOf(key);
    clearTimeout(loadingTimer);
    if (!(entry && key === shownKey)) loadingTimer = setTimeout(() => root.classList.add("nl-loading"), 100);
    if (!entry) return;   // asked for by render(); shown when it arrives
    root.dataset.frame = entry.src;
    if (asked && asked.src !== entry.src && !asked.item.done) later(asked.src, asked.item);   // a state passed by
    const item = picture(entry.src, true), { pic, ready } = item;
    asked = item.done ? null : { src: entry.src, item };
    if (asked) {   // on its way: frames fetched ahead (or asked for by a state passed by) do not go on beside it
      queue = [];
      cancel(new Set());
    }
    await ready;
    if (mine !== wanted) return;   // a newer state was asked for while this one decoded
    asked = null;
    clearTimeout(loadingTimer);
    root.classList.remove("nl-loading");
    pic.alt = entry.alt;
    if (img !== pic) { img.replaceWith(pic); img = pic; }
    shownKey = root.dataset.shown = key;
    current.replaceChildren(readoutTable(entry.rows));
    // the hidden table holds every shape of every readout seen, so the readouts' height stays put
    entry.rows.forEach(([l, t]) => (shapes.get(l) || shapes.set(l, new Set()).get(l)).add(shapeOf(t)));
    ghost.replaceChildren(readoutTable([...shapes].map(([l, set]) =>
      [l, make("div", { class: "nl-stack" }, ...[...set].map((t) => make("div", { text: t })))])));
    sync(entry);
    setStatus(note);
    ahead();   // only now: frames sent ahead must not compete with the one the reader is waiting for
  }

  function ahead() {   // the likeliest next states: along the last move, one back, the other controls, presets
    const along = [], rest = [];
    controls.forEach((c, i) => {
      const at = index(i, state[i]), n = c.labels.length;
      const near = c.kind === "choice" ? [...Array(n).keys()].filter((j) => j !== at)
        : i === moved ? [1, 2, 3, -1].map((d) => at + d * step) : [at + 1, at - 1];
      near.filter((j) => j >= 0 && j < n).forEach((j) => {
        const s = state.slice();
        s[i] = j;
        (i === moved ? along : rest).push(keyOf(s));
      });
    });
    const keys = [...new Set([...along, ...rest, ...spec.presets.map(([, , p]) => keyOf(p))])]
      .filter((k) => k !== keyOf(state)).slice(0, source.aheadCount);
    const srcs = [...new Set(keys.filter((k) => entryOf(k)).map((k) => entryOf(k).src))];
    cancel(new Set(srcs));   // frames on their way for the last state's neighbours that this state does not have
    queue = srcs.filter((src) => !images.has(src));
    pump();   // fetched and decoded ahead, a few at a time
    const missing = keys.filter((k) => !entryOf(k));
    if (missing.length) source.ahead(missing, layout);   // the kernel draws them while idle
  }

  function render() {   // the reader set a state: every view and the kernel hear of it, even if its frame is here
    sync(entryOf());
    source.want(keyOf(state), layout);
    show();
    if (source.save) source.save(keyOf(state));
  }

  function go(i, j) {
    source.wake();
    if (state[i] === j) return;
    step = j >= index(i, state[i]) ? 1 : -1;
    [moved, state[i], note] = [i, j, ""];
    render();
  }

  function typed(i, box) {
    const c = controls[i], v = Number(box.value.trim()), [lo, hi, whole] = c.free;
    if (!box.value.trim() || !Number.isFinite(v) || v < lo || v > hi || (whole && !Number.isInteger(v))) {
      note = `${c.label}: type a ${whole ? "whole number" : "number"} from ${lo} to ${hi}`;
      setStatus(note);
      box.value = labels(entryOf())[i];
      return;
    }
    go(i, c.stops.indexOf(v) >= 0 ? c.stops.indexOf(v) : `=${v}`);
  }

  const observer = new ResizeObserver(() => {
    const now = matchMedia(NARROW).matches ? "narrow" : "wide";
    if (now !== layout) { layout = now; source.want(keyOf(state), layout); show(); }
  });
  observer.observe(document.documentElement);
  sync(null);
  return {
    arrived(l, key) {   // a frame came: shown if it is the state wanted, else decoded for later
      if (l === layout && key === keyOf(state)) show();
      else if (l === layout && entryOf(key)) { queue.push(entryOf(key).src); pump(); }
    },
    adopt(key) { state = key.split(",").map((p) => (p.startsWith("=") ? p : +p)); moved = -1; sync(null); show(); },
    status(text) { note = text; setStatus(text); },
    key: () => keyOf(state),
    layout: () => layout,
    close() { observer.disconnect(); },
  };
}

// -- the live face: an anywidget view over the kernel's LiveView ----------------------------------------------
// A button under the figure that saves the frame shown as a PNG file (the bytes the kernel drew, from the image's
// blob: URL), named after the explorable and its state; the kernel's LiveView.save_png(path) writes the same file.
function saveButton(el, name) {
  const save = () => {
    const img = el.querySelector("img.nl-frame"), key = (el.dataset.shown || "").replace(/[^0-9a-z.=-]+/gi, "_");
    if (!img || !img.src) return;
    const link = make("a", { href: img.src, download: `${name}${key ? `-${key}` : ""}.png` });
    document.body.append(link);
    link.click();
    link.remove();
  };
  el.querySelector(".nl-figure").append(make("div", { class: "nl-tools" },
    make("button", { type: "button", class: "nl-save", title: "Save the figure shown as a PNG file", onclick: save },
      "Save PNG")));
}

function render({ model, el }) {
  const view = Math.random().toString(36).slice(2), table = new Map();
  let waiting = 0, dead = false;
  const keep = (f, bytes) => {   // a state's frame never changes: the first one to arrive is kept
    if (table.has(`${f.layout}|${f.key}`)) return;
    const src = URL.createObjectURL(new Blob([bytes], { type: "image/png" }));
    table.set(`${f.layout}|${f.key}`, { src, rows: f.rows, alt: f.alt, labels: f.labels });
    while (table.size > model.get("spec").keep) {   // the oldest goes: a Map keeps the order entries came in
      const [k, old] = table.entries().next().value;
      table.delete(k);
      URL.revokeObjectURL(old.src);
    }
  };
  const gone = () => {   // the kernel restarted or died: this view's model is gone with it, and so are its controls
    dead = true;
    el.classList.add("nl-dead");
    if (el.contains(document.activeElement)) document.activeElement.blur();
    el.querySelectorAll(".nl-controls, .nl-presets").forEach((n) => { n.inert = true; });   // no focus, no keys
    el.querySelectorAll("input, select, button, [tabindex]").forEach((n) => {
      if ("disabled" in n) n.disabled = true;
      n.setAttribute("aria-disabled", "true");
    });
    ui.status("kernel restarted: run the notebook from the top (Run > Run All Cells)");
  };
  const send = (msg) => { try { if (!dead) model.send(msg); } catch (err) { gone(); } };
  const source = {
    table, aheadCount: 4, wake() {},
    want(key, layout) {
      clearTimeout(waiting);
      waiting = setTimeout(() => (dead ? gone() : ui.status("waiting for the kernel (is another cell running?)")), 1500);
      send({ want: key, layout, view });
    },
    ahead(keys, layout) { send({ ahead: keys, layout }); },
  };
  const ui = explorable(el, { ...model.get("spec"), live: true }, source);
  el.classList.add("normlab-live");
  saveButton(el, model.get("spec").name);
  el.setAttribute("data-lm-suppress-shortcuts", "true");   // keys in here are the controls', not JupyterLab's
  const own = (e) => e.stopPropagation();   // (the notebook would take the arrow keys from a slider)
  const fromKernel = () => {
    const f = model.get("frame");
    if (!f.key) return;
    if (f.error) { ui.status(f.error); return; }
    keep(f, f.png);
    clearTimeout(waiting);
    if (f.by !== view && f.key !== ui.key()) ui.adopt(f.key);   // another view moved: follow it
    else { ui.status(""); ui.arrived(f.layout, f.key); }
  };
  const onCustom = (msg, buffers) => msg?.ahead && buffers?.length &&
    (keep(msg, buffers[0]), ui.arrived(msg.layout, msg.key));
  const onLive = () => el.closest(".jupyter-widgets-disconnected") && gone();
  const statusChanged = model.widget_manager?.kernel?.statusChanged;
  const onStatus = (_k, s) => ["restarting", "autorestarting", "dead"].includes(s) && gone();
  const hooks = [["change:frame", fromKernel], ["msg:custom", onCustom], ["comm_live_update", onLive]];
  hooks.forEach(([ev, f]) => model.on(ev, f));
  el.addEventListener("keydown", own);
  statusChanged?.connect(onStatus);
  fromKernel();
  if (ui.layout() !== model.get("frame").layout) source.want(ui.key(), ui.layout());
  return () => {
    ui.close();
    hooks.forEach(([ev, f]) => model.off(ev, f));
    el.removeEventListener("keydown", own);
    statusChanged?.disconnect(onStatus);
    table.forEach((e) => URL.revokeObjectURL(e.src));
  };
}

// -- the static face: explorables in a book page, their frames in files beside it -------------------------------
// The state of every explorable the reader moved on this page, {name: state key}, kept in history.state.normlab so
// that Back, Forward and a reload bring all of them back. One record for the page, shared by the copies of this
// script (each explorable's own tag runs one) and written again when another script replaced history.state (the
// theme's search highlighting does, once the page is parsed) or a link within the page added an entry.
function pageStates() {
  if (window.normlabStates) return window.normlabStates;
  const states = { ...history.state?.normlab };
  const same = (a) => !!a && typeof a === "object" && Object.keys(a).length === Object.keys(states).length &&
    Object.entries(states).every(([k, v]) => a[k] === v);
  const keep = () => {
    const now = history.state && typeof history.state === "object" ? history.state : {};
    if (Object.keys(states).length && !same(now.normlab)) history.replaceState({ ...now, normlab: { ...states } }, "");
  };
  document.addEventListener("DOMContentLoaded", keep);
  ["load", "hashchange"].forEach((ev) => window.addEventListener(ev, keep));
  return (window.normlabStates = { states, keep });
}

function boot() {
  const tables = (window.normlabTables = window.normlabTables || {});   // name -> what to do with its table.js
  window.normlabTable = (data) => tables[data.name] && tables[data.name](data);
  for (const root of document.querySelectorAll(".normlab-explorable[data-dir]:not(.nl-ready)")) {
    root.classList.add("nl-ready");
    const spec = JSON.parse(root.querySelector("script.nl-spec").textContent);
    const dir = root.dataset.dir, table = new Map(), page = pageStates();
    let loading = false, ui = null;
    const loaded = (data) => {
      for (const [key, [w, n, r, a]] of Object.entries(data.frames)) {
        [["wide", w], ["narrow", n]].forEach(([l, f]) =>
          table.set(`${l}|${key}`, { src: dir + data.files[f], rows: data.rows[r], alt: data.alts[a] }));
      }
      ui.arrived(ui.layout(), ui.key());
    };
    const source = {   // every frame is in the table once table.js has loaded (on the reader's first touch)
      table, aheadCount: 8, ahead() {},
      wake() {
        if (loading) return;
        loading = tables[spec.name] = loaded;
        document.head.append(make("script", { src: `${dir}table.js` }));
      },
      want() { source.wake(); },
      save(key) { page.states[spec.name] = key; page.keep(); },   // for Back, Forward and reload
    };
    for (const [l, [src, rows, alt]] of Object.entries(spec.first)) {
      table.set(`${l}|${spec.start.join(",")}`, { src: dir + src, rows, alt });
    }
    ui = explorable(root, spec, source);
    ["pointerdown", "focusin", "keydown"].forEach((ev) => root.addEventListener(ev, () => source.wake()));
    const restore = () => {   // the state this page's entry in the history holds (none: the one shown stays)
      const k = history.state?.normlab?.[spec.name];
      if (k && k !== ui.key()) { source.wake(); ui.adopt(k); }
      if (k) page.states[spec.name] = k;
      page.keep();
    };
    ["pageshow", "popstate"].forEach((ev) => window.addEventListener(ev, restore));
    restore();
    ui.arrived(ui.layout(), ui.key());
  }
}

export default { render };
