/* normlab book: three small fixes to the themes' behaviour (our own code; no library).
 *
 * 1. Sidebar toggles. sphinx-book-theme 1.3.0 and pydata-sphinx-theme 0.17.1 both bind their
 *    sidebar handlers to document.querySelector(".primary-toggle") / (".secondary-toggle"): the
 *    first such button, which is the pydata header's copy that sphinx-book-theme hides. The
 *    visible buttons in the article header therefore did nothing. Here a click on any other
 *    toggle is forwarded to the first one, so the themes' own code opens and closes the sidebar
 *    (collapse on wide screens, a modal drawer on narrow ones).
 * 2. Search snippets. Sphinx builds a result's snippet from the page's text, where maths is still
 *    TeX source such as \(\gamma\). Maths is replaced by a plain reading of it before the snippet
 *    is cut, so no TeX shows in the results.
 * 3. Code comments. Code cells wrap long lines (normlab-book.css); a comment that follows code on
 *    its line is marked .nl-trailing so that, when it does not fit, it moves whole to the next
 *    line, indented, instead of leaving its '#' behind.
 * 4. Copy buttons and heading permalinks. sphinx-copybutton puts an invisible (shown on hover)
 *    button on every code cell, and each was a Tab stop: on 23.4 twenty of them stood between the
 *    top of the page and its first slider. They leave the Tab order; code can still be selected and
 *    copied. So do the hover-only "#" links beside headings (the contents list has the same links).
 * 5. Tap to zoom. On a phone a figure (an explorable's picture, img.nl-frame, or any image a
 *    code cell shows) is shrunk to the column and its tick labels become too small to read;
 *    tapping it shows the picture at full size in a dialog that scrolls. A tap, Escape or the close button closes it.
 * 6. file://. Snippets are fetched from the pages, which browsers refuse for file:// URLs (one CORS
 *    error per result). Opened from disk, the search lists results without snippets.
 * 7. The table of contents is one Tab stop. Its links were thirteen Tab stops on every page, in
 *    front of the article. Now Tab enters the list at the current page (or the first entry) and
 *    leaves it with the next Tab; the arrow keys, Home and End move between its entries and Enter
 *    follows one (the usual pattern for a navigation list, "roving tabindex"). A note shown
 *    while the list has focus says so. Screen readers still list every link.
 */
(function () {
  "use strict";

  function forwardToggles(selector) {
    var all = document.querySelectorAll(selector);
    if (all.length < 2) return;
    var bound = all[0];
    Array.prototype.slice.call(all, 1).forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        bound.click();
      }, true);
    });
  }

  var GREEK = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", eta: "η",
    theta: "θ", lambda: "λ", mu: "μ", sigma: "σ", tau: "τ", phi: "φ", psi: "ψ", omega: "ω",
    Delta: "Δ", Sigma: "Σ", partial: "∂", sum: "Σ", prod: "Π", sqrt: "√", cdot: "·",
    cdots: "⋯", ldots: "…", dots: "…", times: "×", approx: "≈", le: "≤", leq: "≤", ge: "≥",
    geq: "≥", ne: "≠", neq: "≠", in: "∈", to: "→", infty: "∞", odot: "⊙", nabla: "∇", pm: "±"
  };

  // A plain-text reading of a TeX formula: fractions as a/b, roots as √(..), symbols for common
  // commands; other commands and TeX punctuation dropped.
  function plainMath(tex) {
    var s = tex.trim().replace(/^\\[(\[]/, "").replace(/\\[)\]]$/, "");
    var group = function (g) { return g.length > 1 ? "(" + g + ")" : g; };
    for (var i = 0; i < 4; i++) {
      s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, function (m, a, b) { return group(a) + "/" + group(b); })
           .replace(/\\sqrt\s*\{([^{}]*)\}/g, function (m, a) { return "√" + group(a); });
    }
    return s
      .replace(/\\([A-Za-z]+)/g, function (m, name) {
        var sym = GREEK[name] !== undefined ? GREEK[name] : "";
        return /^(sum|prod|cdot|times|approx|le|leq|ge|geq|ne|neq|in|to)$/.test(name) ? " " + sym + " " : sym;
      })
      .replace(/\\[,;:! ]/g, " ")
      .replace(/[{}$\\&]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }

  // Page parts that are not text of the section (buttons, navigation) stay out of snippets.
  var NOT_TEXT = ".bd-header-article, .prev-next-area, .prev-next-footer, .copybtn, .headerlink";

  function patchSearch() {
    // searchtools.js declares `const Search` (a global binding, not a property of window).
    if (typeof Search === "undefined" || !Search.htmlToText || Search._normlabPatched) return;
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math, script[type^='math/tex']").forEach(function (el) {
        el.replaceWith(doc.createTextNode(" " + plainMath(el.textContent) + " "));
      });
      doc.querySelectorAll(NOT_TEXT).forEach(function (el) { el.remove(); });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search._normlabPatched = true;
    if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
      DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
    }
  }

  // searchtools.js is loaded before this file; patch as early as possible so that a search
  // started on load (search.html?q=...) already uses the plain snippets.
  patchSearch();

  function markTrailingComments() {
    document.querySelectorAll("div.highlight pre .c1").forEach(function (comment) {
      var before = "";
      for (var n = comment.previousSibling; n; n = n.previousSibling) {
        var text = n.textContent;
        var cut = text.lastIndexOf("\n");
        before = (cut >= 0 ? text.slice(cut + 1) : text) + before;
        if (cut >= 0) break;
      }
      if (before.trim()) comment.classList.add("nl-trailing");
    });
  }

  function untabCopyButtons() {
    document.querySelectorAll("button.copybtn").forEach(function (b) { b.tabIndex = -1; });
    // The "#" permalink beside every heading is shown on hover only; the page's contents list
    // offers the same links, so they leave the Tab order as well.
    document.querySelectorAll("a.headerlink").forEach(function (a) { a.tabIndex = -1; });
  }

  function openZoom(img) {
    var dialog = document.getElementById("nl-zoom-dialog");
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.id = "nl-zoom-dialog";
      dialog.className = "nl-zoom-dialog";
      dialog.setAttribute("aria-label", "Figure at full size");
      dialog.innerHTML = '<button type="button" class="nl-zoom-close" aria-label="Close the full-size figure">' +
        "\u00d7</button><div class=\"nl-zoom-scroll\"><img alt=\"\"></div>";
      dialog.addEventListener("click", function () { dialog.close(); });
      document.body.appendChild(dialog);
    }
    var big = dialog.querySelector("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    dialog.showModal();
  }

  function setupZoom() {
    document.addEventListener("click", function (event) {
      var img = event.target.closest ? event.target.closest("img.nl-frame, .cell_output img") : null;
      if (img && img.closest("a")) return;  // a figure that links to its own file opens that
      // only where the picture is shown well below its own size (phones, narrow windows)
      if (!img || img.naturalWidth < 1.2 * img.clientWidth) return;
      event.preventDefault();
      openZoom(img);
    });
  }

  function rovingContents() {
    var nav = document.querySelector("nav.bd-docs-nav");
    if (!nav || nav._normlabRoving) return;
    var links = Array.prototype.slice.call(nav.querySelectorAll("a[href]"));
    if (links.length < 2) return;
    nav._normlabRoving = true;
    var current = nav.querySelector("a.current, li.current > a, a[aria-current='page']") || links[0];
    links.forEach(function (a) { a.tabIndex = a === current ? 0 : -1; });
    var hint = document.createElement("p");
    hint.id = "nl-toc-hint";
    hint.className = "nl-toc-hint";
    hint.textContent = "\u2191 \u2193 move between pages, Enter opens one, Tab leaves the list.";
    nav.appendChild(hint);
    links.forEach(function (a) { a.setAttribute("aria-describedby", hint.id); });
    var steps = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };
    nav.addEventListener("keydown", function (event) {
      var i = links.indexOf(document.activeElement);
      if (i < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
      var j;
      if (steps[event.key] !== undefined) j = Math.min(links.length - 1, Math.max(0, i + steps[event.key]));
      else if (event.key === "Home") j = 0;
      else if (event.key === "End") j = links.length - 1;
      else return;
      event.preventDefault();
      links[i].tabIndex = -1;
      links[j].tabIndex = 0;
      links[j].focus();
    });
  }

  function onReady() {
    rovingContents();
    setupZoom();
    markTrailingComments();
    untabCopyButtons();
    // sphinx-copybutton adds its buttons on DOMContentLoaded too, possibly after this script
    window.addEventListener("load", untabCopyButtons);
    patchSearch();
    forwardToggles(".primary-toggle");
    forwardToggles(".secondary-toggle");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onReady);
  } else {
    onReady();
  }
})();
