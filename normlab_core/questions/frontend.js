// "Check yourself": one section's questions, built from their spec (normlab_core/questions). One file for both
// faces: anywidget imports it as an ES module and calls render({model, el}) in JupyterLab; the book's pages run it
// as a classic script (questions.classic_script(): the last line below is replaced by boot()), which builds every
// <div class="nl-questions"> from the JSON it carries. Nothing is requested from anywhere. Answers are kept in
// localStorage (by section and question), so that a reload or Back shows them again.

const STORE = "normlab-q:";

function load(key) {
  try {
    return JSON.parse(window.localStorage.getItem(STORE + key) || "null");
  } catch (e) {
    return null;
  }
}

function save(key, value) {
  try {
    if (value === null) window.localStorage.removeItem(STORE + key);
    else window.localStorage.setItem(STORE + key, JSON.stringify(value));
  } catch (e) {
    // storage refused (private mode, a full quota): the answer still shows, it just is not kept
  }
}

function make(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A number as typed: "0.71", "0,71", "7.1e-1", "−3" (a typographic minus); NaN for anything else.
function parseNumber(text) {
  const t = String(text).trim().replace(/\u2212/g, "-").replace(/^([+-]?\d*),(\d+)$/, "$1.$2");
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return NaN;
  return Number(t);
}

// The verdict on an answer: {ok, text} where text says what was right or what was missed.
function judge(q, answer) {
  if (q.kind === "number") {
    const v = parseNumber(answer);
    if (Number.isNaN(v)) return null;
    const ok = Math.abs(v - q.answer) <= q.tol;
    return {ok, text: ok ? `Right: ${q.key}.` : `Not quite: the answer is ${q.key}; ${answer.trim()} is off by more than ${q.tol}.`};
  }
  const pick = Number(answer);
  const ok = pick === q.answer;
  const why = (q.why && q.why[pick]) ? " " + q.why[pick] : "";
  const key = /[.!?]$/.test(q.key) ? q.key : q.key + ".";
  return {ok, text: ok ? `Right: ${key}${why}` : `Not quite. The answer: ${key}${why}`};
}

let counter = 0;

function buildQuestion(section, q, index) {
  const id = `nl-q-${section.replace(/[^a-z0-9]+/gi, "-")}-${index}-${++counter}`;
  const box = make("fieldset", "nl-q-item nl-q-" + q.kind);
  box.dataset.question = q.id;
  const legend = make("legend", "nl-q-prompt");
  legend.append(make("span", "nl-q-number", `Question ${index + 1}. `), make("span", "", q.prompt));
  box.append(legend);
  let read, restore;
  if (q.kind === "number") {
    const label = make("label", "nl-q-field");
    label.htmlFor = id + "-in";
    label.append(make("span", "", "Your answer "));
    const input = make("input");
    input.type = "text";
    input.id = id + "-in";
    input.inputMode = "decimal";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.size = 10;
    label.append(input);
    if (q.unit) label.append(make("span", "nl-q-unit", " " + q.unit));
    label.append(make("span", "nl-q-tol", ` (within ±${q.tol})`));
    box.append(label);
    read = () => (input.value.trim() ? input.value : null);
    restore = (v) => { input.value = v; };
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); check(); }
    });
  } else {
    const list = make("div", "nl-q-options");
    q.options.forEach((text, k) => {
      const label = make("label", "nl-q-option");
      const input = make("input");
      input.type = "radio";
      input.name = id;
      input.value = String(k);
      input.id = `${id}-o${k}`;
      label.htmlFor = input.id;
      label.append(input, make("span", "", " " + text));
      list.append(label);
    });
    box.append(list);
    read = () => {
      const on = box.querySelector("input[type=radio]:checked");
      return on ? on.value : null;
    };
    restore = (v) => {
      const on = box.querySelector(`input[type=radio][value="${v}"]`);
      if (on) on.checked = true;
    };
  }
  const row = make("div", "nl-q-actions");
  const button = make("button", "nl-q-check", "Check");
  button.type = "button";
  row.append(button);
  const again = make("button", "nl-q-reset", "Try again");
  again.type = "button";
  again.hidden = true;
  row.append(again);
  box.append(row);
  const feedback = make("p", "nl-q-feedback");
  feedback.setAttribute("aria-live", "polite");
  feedback.id = id + "-fb";
  box.append(feedback);
  const explain = make("div", "nl-q-explain");
  explain.hidden = true;
  explain.append(make("p", "nl-q-key", `Answer: ${q.key}`), make("p", "", q.explain));
  if (q.then) explain.append(make("p", "nl-q-then", "Now check it on the figure: " + q.then));
  box.append(explain);

  function show(answer, announce) {
    const verdict = judge(q, answer);
    if (verdict === null) {
      feedback.textContent = "Type a number, for example 2.5 or 1e-3.";
      box.dataset.state = "";
      return false;
    }
    feedback.textContent = verdict.text;
    box.dataset.state = verdict.ok ? "right" : "wrong";
    explain.hidden = false;
    again.hidden = false;
    if (!announce) feedback.setAttribute("aria-live", "off"), setTimeout(() => feedback.setAttribute("aria-live", "polite"), 0);
    return true;
  }

  function check() {
    const answer = read();
    if (answer === null) {
      feedback.textContent = q.kind === "number" ? "Type your answer first." : "Pick an answer first.";
      return;
    }
    if (show(answer, true)) save(`${section}:${q.id}`, {answer});
  }

  button.addEventListener("click", check);
  again.addEventListener("click", () => {
    save(`${section}:${q.id}`, null);
    feedback.textContent = "";
    box.dataset.state = "";
    explain.hidden = true;
    again.hidden = true;
    box.querySelectorAll("input").forEach((i) => { if (i.type === "radio") i.checked = false; else i.value = ""; });
    const first = box.querySelector("input");
    if (first) first.focus();
  });

  const kept = load(`${section}:${q.id}`);
  if (kept && typeof kept.answer === "string") {
    restore(kept.answer);
    show(kept.answer, false);
  }
  return box;
}

function build(el, spec) {
  el.classList.add("nl-questions-ready");
  const wrap = make("div", "nl-q-list");
  wrap.append(make("p", "nl-q-intro", "Pick or type an answer, then press Check (or Enter) to see why. Your answers " +
                   "stay in this browser."));
  wrap.append(make("p", "nl-q-print-note", "The answers follow each question."));
  spec.questions.forEach((q, i) => wrap.append(buildQuestion(spec.section, q, i)));
  el.append(wrap);
}

function boot() {
  document.querySelectorAll("div.nl-questions:not(.nl-questions-ready)").forEach((el) => {
    const data = el.querySelector("script.nl-q-spec");
    if (!data) return;
    try {
      build(el, JSON.parse(data.textContent));
    } catch (e) {
      el.append(make("p", "nl-q-feedback", "These questions could not be shown: " + e));
    }
  });
}

function render({ model, el }) {
  const root = make("div", "nl-questions");
  el.append(root);
  build(root, model.get("spec"));
}

export default { render };
