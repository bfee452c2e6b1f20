/* normlab book: the search page (our own code; no library). Loaded by search.html only
 * (scripts/finish_site.py removes it from the other pages); scripts/make_pdf.py also loads it into
 * the pages it prints, for the plain reading of maths in bookmark titles (window.normlab.plainMath).
 *
 * Search. Sphinx builds a result's snippet from the page's text, where maths is still TeX
 *    source such as \(\hat x_j\): maths is replaced by a plain reading that keeps its symbols
 *    (x̂ⱼ keeps its hat, γ, √, Σ), navigation and the print-only header are left out, the snippet
 *    starts at the first word the query names (a Greek letter's name finds the letter: "epsilon"
 *    finds ε), cut at word boundaries, and every result gets one (the start of its section when the
 *    word is only in a formula). Results whose page title names the query come first ("RMSNorm":
 *    23.5 RMSNorm, not the exercises that mention it in a heading).
 * file://. Snippets are fetched from the pages, which browsers refuse for file:// URLs (one CORS
 * error per result). Opened from disk, the search lists results without snippets.
 */
(function () {
  "use strict";

  var SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", eta: "η",
    theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ",
    tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ",
    Theta: "Θ", Lambda: "Λ", Pi: "Π", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω", ell: "ℓ",
    partial: "∂", sum: "Σ", prod: "Π", sqrt: "√", cdot: "·", cdots: "⋯", ldots: "…", dots: "…",
    times: "×", approx: "≈", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", in: "∈",
    to: "→", rightarrow: "→", leftarrow: "←", infty: "∞", odot: "⊙", nabla: "∇", pm: "±",
    mp: "∓", top: "⊤", lVert: "‖", rVert: "‖", Vert: "‖", "|": "‖", lvert: "|", rvert: "|",
    langle: "⟨", rangle: "⟩", ll: "≪", gg: "≫", propto: "∝", equiv: "≡", sim: "∼", circ: "∘",
    ast: "∗", star: "⋆", forall: "∀", exists: "∃", mid: "|"
  };
  // Spaced like operators in the plain reading.
  var BINARY = /^(sum|prod|cdot|times|approx|le|leq|ge|geq|ne|neq|in|to|rightarrow|leftarrow|pm|mp|ll|gg|propto|equiv|sim|mid)$/;
  // Operators written as their names: \max(0, x) -> max(0, x).
  var NAMED = /^(max|min|log|exp|ln|det|arg|argmax|argmin|sup|inf|lim|tanh|sin|cos|sign|Var|var|mean|std|diag)$/;
  // Accents become combining marks on the character they sit on: \hat x -> x̂, \bar{x} -> x̄.
  var ACCENTS = { hat: "\u0302", widehat: "\u0302", bar: "\u0304", overline: "\u0304", tilde: "\u0303",
                  widetilde: "\u0303", vec: "\u20d7", dot: "\u0307", ddot: "\u0308", check: "\u030c" };
  var SUB = { "0": "₀", "1": "₁", "2": "₂", "3": "₃", "4": "₄", "5": "₅", "6": "₆", "7": "₇", "8": "₈",
              "9": "₉", "+": "₊", "-": "₋", i: "ᵢ", j: "ⱼ", k: "ₖ", n: "ₙ", m: "ₘ", l: "ₗ", t: "ₜ" };
  var SUP = { "0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "5": "⁵", "6": "⁶", "7": "⁷", "8": "⁸",
              "9": "⁹", "+": "⁺", "-": "⁻", n: "ⁿ", i: "ⁱ", T: "ᵀ" };

  // A script (x_j, x^2, x_{ij}) as small characters when every character has one, else x_(..).
  function script(body, table, mark) {
    var chars = Array.from(body);
    if (chars.every(function (c) { return table[c] !== undefined; })) {
      return chars.map(function (c) { return table[c]; }).join("");
    }
    return mark + (chars.length > 1 ? "(" + body + ")" : body);
  }

  // A plain-text reading of a TeX formula that keeps its symbols: fractions as a/b, roots as √(..),
  // accents as combining marks, scripts as small characters; other commands and TeX punctuation
  // dropped.
  function plainMath(tex) {
    var s = tex.trim().replace(/^\\[(\[]/, "").replace(/\\[)\]]$/, "");
    var group = function (g) { return g.length > 1 ? "(" + g + ")" : g; };
    s = s.replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])\s*(\\[{}|]|[()[\]|.])?/g,
                  function (m, d) { return d && d !== "." ? d.replace(/^\\/, "") : ""; })
         .replace(/\\(?:text|mathrm|mathbf|mathit|mathsf|operatorname|boldsymbol|textbf|textit)\s*\{([^{}]*)\}/g, "$1");
    for (var i = 0; i < 4; i++) {
      s = s.replace(/\\([A-Za-z]+)\s*(?:\{([^{}]*)\}|(\\[A-Za-z]+|[A-Za-z0-9]))/g, function (m, name, g, one) {
        if (ACCENTS[name] === undefined) return m;
        var body = g !== undefined ? g : one;
        body = body.replace(/^\\([A-Za-z]+)/, function (c, n) { return SYMBOLS[n] || n; });
        var chars = Array.from(body.trim());
        return chars.length ? chars[0] + ACCENTS[name] + chars.slice(1).join("") : "";
      });
      s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, function (m, a, b) { return group(a) + "/" + group(b); })
           .replace(/\\sqrt\s*\{([^{}]*)\}/g, function (m, a) { return "√" + group(a); });
    }
    return s
      .replace(/\\([A-Za-z]+|\|)/g, function (m, name) {
        var sym = SYMBOLS[name] !== undefined ? SYMBOLS[name] : (NAMED.test(name) ? name : "");
        return BINARY.test(name) ? " " + sym + " " : sym;
      })
      .replace(/\s*_\{([^{}]*)\}|\s*_(\S)/g, function (m, g, one) { return script(g !== undefined ? g : one, SUB, "_"); })
      .replace(/\s*\^\{([^{}]*)\}|\s*\^(\S)/g, function (m, g, one) { return script(g !== undefined ? g : one, SUP, "^"); })
      .replace(/\\[,;:! ]|~/g, " ")
      .replace(/[{}$\\&]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }

  // Page parts that are not text of the section (buttons, navigation, the print-only title and
  // contents, the explorables' hidden data) stay out of snippets.
  var NOT_TEXT = ".bd-header-article, .prev-next-area, .prev-next-footer, .copybtn, .headerlink, " +
    "#jb-print-docs-body, nav, script, style, .nl-data, .nl-ghost, .MathJax_Preview, .nl-screen-only";

  // The text of a page (or of the section `anchor` names), with maths read as plain symbols.
  function pageText(htmlString, anchor, withCode) {
    var doc = new DOMParser().parseFromString(htmlString, "text/html");
    if (!withCode) doc.querySelectorAll(".cell_input, .cell_output pre, div.highlight").forEach(function (el) { el.remove(); });
    doc.querySelectorAll(".math, script[type^='math/tex']").forEach(function (el) {
      el.replaceWith(doc.createTextNode(" " + plainMath(el.textContent) + " "));
    });
    doc.querySelectorAll(NOT_TEXT).forEach(function (el) { el.remove(); });
    var main = doc.querySelector("[role='main']") || doc.body;
    // ids such as "23-5-rmsnorm" are not valid CSS selectors: look them up by id
    var part = anchor ? doc.getElementById(decodeURIComponent(anchor.replace(/^#/, ""))) : null;
    var root = part && main.contains(part) ? part : main;
    // the result's own heading shows the title already
    var title = root === main ? main.querySelector("h1") : root.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4");
    if (title) title.remove();
    // a line of nothing but links to the previous and next sections ("← 23.4 ... · 23.6 ... →")
    root.querySelectorAll("p").forEach(function (p) {
      var own = Array.from(p.childNodes).filter(function (n) { return n.nodeType === 3; })
        .map(function (n) { return n.textContent; }).join("");
      if (/[←→]/.test(p.textContent) && p.querySelector("a") && !/[A-Za-z0-9]/.test(own)) p.remove();
    });
    // (no space before punctuation that follows a formula: "√(σ² + ε), not")
    return (root.textContent || "").replace(/\s+/g, " ").replace(/ ([,.;:!?)])/g, "$1").trim();
  }

  // Where in `text` the query's words first appear (their stems, the words as typed, and the
  // symbol a Greek letter's name stands for); -1 when nowhere.
  function firstHit(text, words) {
    var lower = text.toLowerCase();
    var best = -1;
    words.forEach(function (w) {
      if (!w) return;
      var forms = [w.toLowerCase()];
      var sym = SYMBOLS[w.toLowerCase()] || SYMBOLS[w];
      if (sym && sym.length === 1) forms.push(sym);
      forms.forEach(function (f) {
        var at = lower.indexOf(f);
        if (at >= 0 && (best < 0 || at < best)) best = at;
      });
    });
    return best;
  }

  var SNIPPET = 240;

  // A snippet of about SNIPPET characters around the first hit, cut at spaces; never empty.
  function snippet(text, words) {
    if (!text) return "";
    var at = firstHit(text, words);
    var start = at < 0 ? 0 : Math.max(0, at - 100);
    if (start > 0) {
      var space = text.lastIndexOf(" ", start);
      start = space < 0 ? 0 : space + 1;
    }
    var end = Math.min(text.length, start + SNIPPET);
    if (end < text.length) {
      var cut = text.lastIndexOf(" ", end);
      if (cut > start + SNIPPET / 2) end = cut;
    }
    return (start > 0 ? "…" : "") + text.slice(start, end).trim() + (end < text.length ? "…" : "");
  }

  function patchSearch() {
    // searchtools.js declares `const Search` (a global binding, not a property of window).
    if (typeof Search === "undefined" || !Search.makeSearchSummary || Search._normlabPatched) return;
    Search._normlabPatched = true;
    Search.htmlToText = function (htmlString, anchor) { return pageText(htmlString, anchor, true); };
    Search.makeSearchSummary = function (htmlText, keywords, anchor) {
      var words = Array.from(keywords || []).concat(Search._normlabWords || []);
      // the prose first; the code only when the words are in nothing else
      var text = pageText(htmlText, anchor, false);
      if (firstHit(text, words) < 0) {
        var all = pageText(htmlText, anchor, true);
        if (firstHit(all, words) >= 0 || !text) text = all;
      }
      if (!text && anchor) text = pageText(htmlText, "", true);
      var p = document.createElement("p");
      p.classList.add("context");
      p.textContent = snippet(text, words);
      return p;
    };
    // Results whose page title names the query come first: the query, lower case and without
    // spaces, is part of the title without spaces ("rmsnorm" in "23.5 RMSNorm", "layernorm" in
    // "23.4 Layer normalization"); a section title that names it comes next.
    var originalQuery = Search.query;
    Search.query = function (query) {
      Search._normlabQuery = String(query || "").toLowerCase().replace(/\s+/g, "");
      Search._normlabWords = String(query || "").split(/\s+/).filter(Boolean);
      return originalQuery.apply(this, arguments);
    };
    if (typeof Scorer !== "undefined") {
      var squash = function (t) { return String(t || "").toLowerCase().replace(/<[^>]*>/g, "").replace(/\s+/g, ""); };
      Scorer.score = function (result) {
        var q = Search._normlabQuery, score = result[4];
        if (!q || q.length < 3) return score;
        var parts = String(result[1] || "").split(" > ");
        if (squash(parts[0]).indexOf(q) >= 0) return score + 100;
        if (parts.length > 1 && squash(parts.slice(1).join(" ")).indexOf(q) >= 0) return score + 20;
        return score;
      };
    }
    if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
      DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
    }
  }

  // The plain reading of maths, for other scripts of the book (scripts/make_pdf.py: bookmark titles).
  window.normlab = window.normlab || {};
  window.normlab.plainMath = plainMath;

  // Patched at once when searchtools.js came first, else on DOMContentLoaded: before Search.init
  // starts a search given in the address (search.html?q=...), since this file's listener was added first.
  patchSearch();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", patchSearch);
})();
