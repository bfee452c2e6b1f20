// The live face's figure and readouts (normlab_core/live.py, FrameView).
//
// The kernel sends each frame in one message: the PNG as binary bytes, its alt text, the readout rows and `key`,
// the state it shows (the index of every control's stop, in order, joined by commas). While the reader pauses,
// the kernel also sends the frame of the likeliest next state ("ahead" messages). Frames received are kept here,
// decoded, by key (at most `keep`, as many as the kernel counts on). When a control moves to a state whose frame is kept, it is shown at once; the
// kernel's own message for that state follows and finds it already shown. A frame is a function of the state
// alone (Explorable.render), so a kept frame is exactly what the kernel would send.
//
// A frame is decoded off screen and only then put in place together with its alt text and readouts, so the
// reader never sees a half-drawn picture or numbers that belong to another one.


function readoutRows(table, rows) {
  // the same table as normlab_core.live.readouts_html, built from [label, text] pairs
  table.replaceChildren(...rows.map(([label, text]) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.style.textAlign = "left";
    th.style.paddingRight = "1em";
    th.textContent = label;
    const td = document.createElement("td");
    td.textContent = text;
    tr.append(th, td);
    return tr;
  }));
}

function render({ model, el }) {
  el.classList.add("nl-frame-view");
  let img = document.createElement("img");
  img.className = "nl-frame";
  const readouts = document.createElement("div");
  readouts.className = "nl-readouts";
  readouts.setAttribute("aria-live", "polite");
  const ghost = document.createElement("div");
  ghost.className = "nl-ghost";
  ghost.setAttribute("aria-hidden", "true");
  const current = document.createElement("div");
  current.className = "nl-current";
  const table = document.createElement("table");
  table.className = "normlab-readouts";
  current.append(table);
  readouts.append(ghost, current);
  el.append(img, readouts);

  const kept = new Map();   // key -> {img (decoded), url, alt, rows, ghost, ready (promise)}; oldest first
  let shownKey = null;
  let ghostHtml = null;
  let wanted = 0;           // counts show requests: only the latest one is put in place
  let controls = [];        // the control models, in the order of the key's indices
  let closed = false;

  function keep(key, bytes, alt, rows, ghostTable) {
    const old = kept.get(key);
    if (old) {  // same state, same frame: keep the decoded picture, take the newest readouts height
      old.ghost = ghostTable;
      kept.delete(key);
      kept.set(key, old);
      return old;
    }
    const url = URL.createObjectURL(new Blob([bytes], { type: "image/png" }));
    const pic = document.createElement("img");
    pic.className = "nl-frame";
    pic.width = model.get("width");
    pic.height = model.get("height");
    pic.alt = alt;
    pic.src = url;
    // not decodable: shown anyway, as the browser's broken-image sign with the alt text
    const entry = { img: pic, url, rows, ghost: ghostTable, ready: pic.decode().catch(() => {}) };
    kept.set(key, entry);
    for (const [k, e] of kept) {
      if (kept.size <= model.get("keep")) break;
      if (k === shownKey) continue;
      kept.delete(k);
      URL.revokeObjectURL(e.url);
    }
    return entry;
  }

  async function show(key) {
    const mine = ++wanted;
    const entry = kept.get(key);
    if (!entry) return;
    await entry.ready;
    if (mine !== wanted || closed) return;  // a newer request came while this frame was decoding
    if (key !== shownKey) {
      img.replaceWith(entry.img);
      img = entry.img;
      shownKey = key;
    }
    readoutRows(table, entry.rows);
    if (ghostHtml !== entry.ghost) {
      ghostHtml = entry.ghost;
      ghost.innerHTML = ghostHtml;  // built and escaped by normlab_core.live.readouts_stable
    }
  }

  const controlsKey = () => (controls.length ? controls.map((c) => c.get("index")).join(",") : null);

  function fromKernel() {
    const key = model.get("key");
    keep(key, model.get("png"), model.get("alt"), model.get("readouts"), model.get("ghost"));
    // the controls may already be further on (the reader kept moving): show their state if it is kept
    const now = controlsKey();
    show(now !== null && kept.has(now) ? now : key);
  }

  function onMove() {
    const now = controlsKey();
    if (now !== null && kept.has(now)) show(now);
  }

  function onCustom(msg, buffers) {
    if (!msg || msg.method !== "ahead" || !buffers || !buffers.length) return;
    keep(msg.key, buffers[0], msg.alt, msg.readouts, msg.ghost);
  }

  async function bindControls() {
    const refs = model.get("controls") || [];
    const found = await Promise.all(refs.map((ref) => model.widget_manager.get_model(String(ref).replace(/^IPY_MODEL_/, ""))));
    if (closed) return;
    controls = found;
    for (const c of controls) c.on("change:index", onMove);
  }

  model.on("change", fromKernel);
  model.on("msg:custom", onCustom);
  fromKernel();
  bindControls().catch(() => { controls = []; });  // without them, every frame simply waits for the kernel
  return () => {
    closed = true;
    model.off("change", fromKernel);
    model.off("msg:custom", onCustom);
    for (const c of controls) c.off("change:index", onMove);
    for (const e of kept.values()) URL.revokeObjectURL(e.url);
    kept.clear();
  };
}

export default { render };
