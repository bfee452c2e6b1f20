/* normlab book: the search page (our own code; no library). Loaded by search.html only
 * (scripts/finish_site.py removes it from the other pages); scripts/make_pdf.py also loads it into
 * the pages it prints, for the plain reading of maths in bookmark titles (window.normlab.plainMath).
 *
 * Search. Sphinx's own index splits "QK-norm" into "qk" and "norm", drops ε and σ, and knows pages,
 *    not sections; its snippets are fetched page by page (which browsers refuse over file://). The
 *    book searches its own index instead: scripts/search_index.py writes every section's text, with
 *    maths read as plain symbols (plain_math, the Python twin of plainMath below: x̂ⱼ keeps its hat,
 *    γ, √, Σ), into _static/normlab-searchindex.js, which search.html loads with a <script> tag in
 *    place of Sphinx's searchindex.js. Search.query below matches, ranks and shows the results from
 *    it (how: "Search over the book's own index"); nothing is fetched, so search works the same
 *    from file:// and over http, snippets included.
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

  // ---- Search over the book's own index ------------------------------------------------------------
  // scripts/search_index.py writes _static/normlab-searchindex.js: every section of every page with its
  // title, its prose (maths already read by plain_math, the Python twin of plainMath above), its code and
  // printed output, and the phrases it sets in bold or italics. search.html loads it with a <script> tag in
  // place of Sphinx's searchindex.js, so nothing is fetched and search works from file:// as over http.
  //
  // A query is split at spaces only. A term with a hyphen is one term ("QK-norm" finds QK-norm, QK norm and
  // QKNorm, never "norm" alone); a symbol is matched as written and case-sensitively (σ is not Σ), a Greek
  // letter and its name find each other ("epsilon" finds ε, ε finds "epsilon"); a plain word also finds its
  // inflections and the word inside a compound ("norm" finds "norms", "normalization", the norm of
  // "pre-norm") at half weight. Every match is a whole word, a whole compound or a whole symbol, and only
  // matches are highlighted. Pages rank by BM25 over their text, plus a bonus when the page title, a
  // heading or a bold or italic phrase (a definition) names the term; each page is listed once and links to
  // its section that names the term best. The glossary and the references come after the sections unless
  // only they have the query.
  var HYPHEN = "[-\\u2010\\u2011]";
  var WORD = "[\\p{L}\\p{N}_]";
  var BEFORE_WHOLE = "(?<!" + WORD + "|" + WORD + HYPHEN + ")";
  var AFTER_WHOLE = "(?!" + WORD + "|" + HYPHEN + WORD + ")";
  var BEFORE_PART = "(?<!" + WORD + ")";
  var AFTER_PART = "(?!" + WORD + ")";
  var STOPWORDS = ("a an and are as at be by for from has have how in is it its of on or that the this to was " +
                   "what when where which who why will with").split(" ");
  // Greek letters by name (lower case), and other glyphs of the same letter.
  var GREEK = {};
  Object.keys(SYMBOLS).forEach(function (name) {
    if (/^[a-z]+$/.test(name) && /^[\u03b1-\u03c9]$/.test(SYMBOLS[name]) && name.indexOf("var") !== 0) GREEK[name] = SYMBOLS[name];
  });
  var GLYPHS = { "ε": ["ε", "ϵ"], "θ": ["θ", "ϑ"], "φ": ["φ", "ϕ"] };
  var K1 = 6, B = 0.25, CODE_WEIGHT = 0.3;
  var TITLE_BONUS = 3, HEADING_BONUS = 1, DEFINITION_BONUS = 1;

  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\\-]/g, "\\$&"); }

  // A plain word's stem for its inflections: "variance" -> "varianc", "normalization" -> "normaliz".
  function stem(w) {
    var m = w.match(/^(.{3,}?)(ations?|ings?|ized?|izes|ised?|ises|ments?|ness|ies|ied|es|ed|ly|s|e)$/);
    return m ? m[1] : w;
  }

  function nameOf(letter) {
    return Object.keys(GREEK).filter(function (n) { return GREEK[n] === letter; });
  }

  var JOIN = "[-\\u2010\\u2011\\s]?";

  // A word's letters with an optional hyphen or space between any two ("warmup" finds warm-up, "layernorm"
  // finds "layer norm"), for words of five letters or more.
  function spelled(part) {
    return part.length >= 5 && /^[a-z]+$/.test(part) ? Array.from(part).join(JOIN) : escapeRe(part);
  }

  // The forms a word of the query takes in the text: [{re, weight}], most exact first. Its parts are split at
  // hyphens and where the case changes (LayerNorm, QK-norm: two parts each), and are found with or without
  // a hyphen or a space between them; the whole term may end in a plural. At half weight, the last part may
  // carry an inflection ("LayerNorm" finds "Layer normalization", "variance" finds "variances").
  function wordForms(word) {
    var parts = word.replace(/([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])/g, "$1$3-$2$4").toLowerCase()
      .split(/[-\u2010\u2011]+/).filter(Boolean);
    if (!parts.length) return [];
    var body = parts.length > 1 ? parts.map(escapeRe).join(JOIN) : spelled(parts[0]);
    var forms = [{ re: new RegExp(BEFORE_WHOLE + "(?:" + body + ")(?:s|es)?" + AFTER_WHOLE, "giu"), weight: 1 }];
    var last = parts[parts.length - 1];
    if (/^[a-z]{3,}$/.test(last)) {
      var root = last.length >= 5 ? stem(last) : last;
      var loose = parts.slice(0, -1).map(function (p) { return escapeRe(p) + JOIN; }).join("") +
        (parts.length > 1 ? escapeRe(root) : spelled(root));
      forms.push({ re: new RegExp(BEFORE_PART + loose + "\\p{L}*" + AFTER_PART, "giu"), weight: 0.5 });
    }
    return forms;
  }

  function letterForms(letter) {
    var forms = (GLYPHS[letter] || [letter]).map(function (g) {
      return { re: new RegExp(escapeRe(g) + "\\p{M}*", "gu"), weight: 1 };
    });
    nameOf(letter).forEach(function (n) { forms = forms.concat(wordForms(n).slice(0, 1)); });
    return forms;
  }

  // The query as terms: {text, forms}. Spaces separate terms; quotes and punctuation around a term go;
  // little words go unless the query has nothing else.
  function parseQuery(query) {
    var words = String(query || "").normalize("NFC").split(/\s+/).map(function (w) {
      return w.replace(/^["'“”‘’(\[{,;:!?.\u2010\u2011-]+|["'“”‘’)\]},;:!?.]+$/g, "");
    }).filter(Boolean);
    var content = words.filter(function (w) { return STOPWORDS.indexOf(w.toLowerCase()) < 0; });
    if (content.length) words = content;
    var seen = {};
    return words.filter(function (w) {
      var key = w.toLowerCase();
      if (seen[key]) return false;
      seen[key] = true;
      return true;
    }).map(function (w) {
      var lower = w.toLowerCase(), forms;
      if (GREEK[lower]) forms = letterForms(GREEK[lower]).concat(wordForms(lower).slice(1));
      else if (/^[\p{L}\p{N}_'’.\u2010\u2011-]+$/u.test(w) && /^[\x00-\x7f]+$/.test(w)) forms = wordForms(w);
      else if (Array.from(w.replace(/\p{M}/gu, "")).length === 1) {
        var letter = w.replace(/\p{M}/gu, "");
        forms = /^[\u03b1-\u03c9\u03f5\u03d1\u03d5]$/.test(letter) && w === letter
          ? letterForms(letter === "ϵ" ? "ε" : letter === "ϑ" ? "θ" : letter === "ϕ" ? "φ" : letter)
          : [{ re: new RegExp(escapeRe(w) + (w === letter ? "\\p{M}*" : ""), "gu"), weight: 1 }];
      } else {
        forms = [{ re: new RegExp(BEFORE_PART + escapeRe(w) + AFTER_PART, "giu"), weight: 1 }];
      }
      return { text: w, forms: forms };
    });
  }

  // Where the term is in `text`: [start, end, weight] spans, not overlapping, in order.
  function findSpans(text, term) {
    var spans = [];
    if (!text) return spans;
    term.forms.forEach(function (form) {
      form.re.lastIndex = 0;
      var m;
      while ((m = form.re.exec(text)) !== null) {
        if (!m[0]) { form.re.lastIndex++; continue; }
        var s = m.index, e = s + m[0].length;
        if (!spans.some(function (x) { return s < x[1] && e > x[0]; })) spans.push([s, e, form.weight]);
      }
    });
    return spans.sort(function (a, b) { return a[0] - b[0]; });
  }

  function weightOf(spans) {
    return spans.reduce(function (sum, x) { return sum + x[2]; }, 0);
  }

  // The whole of `phrase` is a match of the term (a heading or a bold phrase that is the term).
  function namesWhole(phrase, term) {
    var text = phrase.replace(/[\s.:;,!?]+$/, "");
    var spans = findSpans(text, term);
    return spans.length === 1 && spans[0][0] === 0 && spans[0][1] === text.length ? spans[0][2] : 0;
  }

  function bm25(tf, length, average, idf) {
    return tf > 0 ? idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average)) : 0;
  }

  // The ranked results: [{page, section, score, spans}] for `query` over the index.
  function rank(index, query) {
    var terms = parseQuery(query);
    if (!terms.length) return [];
    if (terms.length > 1) {  // the words together, as a phrase ("pre norm", "layer norm"), score extra
      var phrase = { text: terms.map(function (t) { return t.text; }).join(" "), optional: true,
                     forms: wordForms(terms.map(function (t) { return t.text; }).join("-")).slice(0, 1) };
      if (terms.every(function (t) { return /^[\x00-\x7f]+$/.test(t.text); })) terms.push(phrase);
    }
    var pages = index.pages, sections = index.sections;
    var perPage = pages.map(function () { return { length: 0, sections: [] }; });
    var totalSection = 0;
    sections.forEach(function (s, i) {
      var length = s[3].length + CODE_WEIGHT * s[4].length + s[2].length;
      perPage[s[0]].length += length;
      perPage[s[0]].sections.push(i);
      totalSection += length;
    });
    var avgPage = perPage.reduce(function (a, p) { return a + p.length; }, 0) / Math.max(1, pages.length);
    var avgSection = totalSection / Math.max(1, sections.length);
    // tf of every term in every section: title, prose, code
    var found = terms.map(function (term) {
      return sections.map(function (s) {
        var title = findSpans(s[2], term), prose = findSpans(s[3], term), code = findSpans(s[4], term);
        var definition = s[5].reduce(function (best, p) { return Math.max(best, namesWhole(p, term)); }, 0);
        return { title: title, prose: prose, code: code, definition: definition,
                 tf: weightOf(title) + weightOf(prose) + CODE_WEIGHT * weightOf(code) };
      });
    });
    var results = [];
    pages.forEach(function (page, p) {
      var info = perPage[p];
      var score = 0, ok = true, titled = true;
      terms.forEach(function (term, t) {
        var tf = 0, heading = 0, definition = 0;
        info.sections.forEach(function (i) {
          var f = found[t][i];
          tf += f.tf;
          heading = Math.max(heading, f.title.length ? namesWhole(sections[i][2], term) || 0.5 * f.title[0][2] : 0);
          definition = Math.max(definition, f.definition);
        });
        var pageTitle = findSpans(page[1], term);
        if (pageTitle.length) tf += weightOf(pageTitle);
        if (!term.optional && !(pageTitle.length && pageTitle[0][2] === 1)) titled = false;
        if (tf <= 0) { if (!term.optional) ok = false; return; }
        var n = pages.filter(function (q, j) {
          return perPage[j].sections.some(function (i) { return found[t][i].tf > 0; });
        }).length;
        var idf = Math.log(1 + pages.length / n);
        score += bm25(tf, info.length, avgPage, idf)
          + idf * (TITLE_BONUS * (pageTitle.length ? pageTitle[0][2] : 0) + HEADING_BONUS * heading
                   + DEFINITION_BONUS * definition);
      });
      if (!ok) return;
      // the section to link to: the one that names the terms best
      var best = -1, bestScore = -1;
      info.sections.forEach(function (i) {
        var s = sections[i], length = s[3].length + CODE_WEIGHT * s[4].length + s[2].length, sc = 0, matched = 0;
        terms.forEach(function (term, t) {
          var f = found[t][i];
          if (f.tf > 0) matched += term.optional ? 0 : 1;
          sc += bm25(f.tf, length, avgSection, 1) + HEADING_BONUS * (f.title.length ? f.title[0][2] : 0)
            + DEFINITION_BONUS * f.definition;
        });
        sc *= (1 + matched) / (1 + terms.length);
        if (sc > bestScore) { bestScore = sc; best = i; }
      });
      // a page whose title names the query is about it: the result opens the page at its top
      var top = info.sections[0];
      if (titled && terms.every(function (term, t) { return term.optional || found[t][top].tf > 0; })) best = top;
      results.push({ page: p, section: best, score: score, backMatter: !!page[2] });
    });
    var onlyBack = results.every(function (r) { return r.backMatter; });
    results.sort(function (a, b) {
      if (!onlyBack && a.backMatter !== b.backMatter) return a.backMatter ? 1 : -1;
      return b.score - a.score || a.page - b.page;
    });
    results.forEach(function (r) { r.terms = terms; });
    return results;
  }

  var SNIPPET = 240;

  // A snippet of about SNIPPET characters from the result's section, around its first match, cut at
  // spaces: [text, spans to highlight (relative to the text)].
  function snippetOf(index, result) {
    var s = index.sections[result.section];
    var spansIn = function (text) {
      var all = [];
      result.terms.forEach(function (term) {
        findSpans(text, term).forEach(function (x) {
          if (!all.some(function (y) { return x[0] < y[1] && x[1] > y[0]; })) all.push(x);
        });
      });
      return all.sort(function (a, b) { return a[0] - b[0]; });
    };
    var text = s[3], spans = spansIn(text);
    if (!spans.length && s[4]) {
      var code = spansIn(s[4]);
      if (code.length || text.length < 40) { text = s[4]; spans = code; }
    }
    if (text.length < 40) {  // a section with hardly any text of its own: the page's opening
      var first = index.sections.filter(function (x) { return x[0] === s[0]; })[0];
      text = first[3] + " " + text;
      spans = spansIn(text);
    }
    var at = spans.length ? spans[0][0] : 0;
    var start = Math.max(0, at - 90);
    if (start > 0) {
      var space = text.lastIndexOf(" ", start);
      start = space < 0 ? 0 : space + 1;
    }
    var end = Math.min(text.length, start + SNIPPET);
    if (end < text.length) {
      var cut = text.lastIndexOf(" ", end);
      if (cut > start + SNIPPET / 2) end = cut;
    }
    while (spans.length && spans[spans.length - 1][1] > end && spans[spans.length - 1][0] < end) end = spans[spans.length - 1][1];
    var shown = spans.filter(function (x) { return x[0] >= start && x[1] <= end; })
      .map(function (x) { return [x[0] - start, x[1] - start]; });
    return { text: text.slice(start, end), before: start > 0, after: end < text.length, spans: shown };
  }

  // The <p class="context"> of a result: text nodes, and <span class="highlighted"> for each match.
  function snippetElement(snip) {
    var p = document.createElement("p");
    p.classList.add("context");
    var at = 0, text = snip.text;
    var put = function (t) { if (t) p.appendChild(document.createTextNode(t)); };
    put(snip.before ? "…" : "");
    snip.spans.forEach(function (x) {
      put(text.slice(at, x[0]));
      var mark = p.appendChild(document.createElement("span"));
      mark.className = "highlighted";
      mark.textContent = text.slice(x[0], x[1]);
      at = x[1];
    });
    put(text.slice(at));
    put(snip.after ? "…" : "");
    return p;
  }

  function showResults(query) {
    var index = window.NORMLAB_SEARCH;
    var results = rank(index, query);
    var terms = parseQuery(query);
    try {  // the page opened from a result marks the terms (sphinx_highlight.js splits them at spaces only)
      localStorage.setItem("sphinx_highlight_terms", terms.map(function (t) { return t.text.toLowerCase(); }).join(" "));
    } catch (e) { /* storage refused (private mode): no marks on the page opened */ }
    var progress = document.getElementById("search-progress");
    if (progress) progress.textContent = "";
    results.forEach(function (r) {
      var page = index.pages[r.page], s = index.sections[r.section];
      var li = document.createElement("li");
      var a = li.appendChild(document.createElement("a"));
      a.href = page[0] + (DOCUMENTATION_OPTIONS.LINK_SUFFIX || ".html") + s[1];
      a.dataset.score = r.score.toFixed(3);
      a.textContent = page[1] + (s[1] && s[2] && s[2] !== page[1] ? " › " + s[2] : "");
      li.appendChild(snippetElement(snippetOf(index, r)));
      Search.output.appendChild(li);
    });
    Search.stopPulse();
    Search.title.innerText = "Search Results";
    Search.status.innerText = results.length
      ? "Search finished, found " + results.length + " page(s) matching the search query."
      : "Your search did not match any documents. Please make sure that all words are spelled correctly.";
  }

  function patchSearch() {
    // searchtools.js declares `const Search` (a global binding, not a property of window).
    if (typeof Search === "undefined" || !Search.query || Search._normlabPatched) return;
    Search._normlabPatched = true;
    var sphinxQuery = Search.query;
    Search.query = function (query) {
      // Sphinx's own search only if the book's index is missing (a site built without finish_site.py)
      return window.NORMLAB_SEARCH ? showResults(query) : sphinxQuery.apply(this, arguments);
    };
    if (window.NORMLAB_SEARCH && !Search.hasIndex()) Search.setIndex(window.NORMLAB_SEARCH);
  }

  // normlab-searchindex.js calls this once it has set window.NORMLAB_SEARCH.
  window.normlabSearchReady = patchSearch;

  // The plain reading of maths, for other scripts of the book (scripts/make_pdf.py: bookmark titles),
  // and the matching and ranking, for tests.
  window.normlab = window.normlab || {};
  window.normlab.plainMath = plainMath;
  window.normlab.search = { parseQuery: parseQuery, findSpans: findSpans, rank: rank, snippetOf: snippetOf };

  // Patched at once when searchtools.js came first, else on DOMContentLoaded: before Search.init
  // starts a search given in the address (search.html?q=...), since this file's listener was added first.
  patchSearch();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", patchSearch);
})();
