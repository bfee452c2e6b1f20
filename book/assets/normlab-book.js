/* normlab book: small fixes to the themes' behaviour (our own code; no library).
 *
 * 1. Sidebar toggles. sphinx-book-theme 1.3.0 and pydata-sphinx-theme 0.17.1 both bind their
 *    sidebar handlers to document.querySelector(".primary-toggle") / (".secondary-toggle"): the
 *    first such button, which is the pydata header's copy that sphinx-book-theme hides. The
 *    visible buttons in the article header therefore did nothing. Here a click on any other
 *    toggle is forwarded to the first one, so the themes' own code opens and closes the sidebar
 *    (collapse on wide screens, a modal drawer on narrow ones).
 * 2. Search: normlab-search.js (loaded by search.html only; scripts/finish_site.py drops it elsewhere).
 * 3. Print. Before printing, the page switches to the light palette (dark text on paper), every
 *    lazy figure starts loading, a select of an explorable shows its chosen value as text (the
 *    controls themselves are not printed; normlab-book.css, "Print"), and wording that only makes
 *    sense on a screen ("each button above the figure") gives way to a printed form.
 *    On a phone the floating "Back to top" button is replaced by a link at the end of the page,
 *    so nothing floats over the text or an explorable's readouts.
 * 4. Copy buttons, heading permalinks and code boxes. sphinx-copybutton puts an invisible (shown on
 *    hover) button on every code cell, and each was a Tab stop: on 23.4 twenty of them stood between
 *    the top of the page and its first slider. They leave the Tab order; code can still be selected and
 *    copied. So do the hover-only "#" links beside headings (the contents list has the same links),
 *    and the code and output boxes that scroll sideways, which pydata-sphinx-theme makes Tab stops
 *    (on 23.7 thirty of them before the first slider): they scroll by touch, wheel or trackpad, and
 *    the whole of every line is in the notebook and in the PDF edition.
 * 5. Tap to zoom. On a phone a figure (an explorable's picture, img.nl-frame, or any image a
 *    code cell shows) is shrunk to the column and its tick labels become too small to read;
 *    tapping it shows the picture at full size in a dialog that scrolls. A tap, Escape or the close button closes it.
 * 6. (normlab-search.js: over file://, results without snippets.)
 * 8. Folded blocks: the checking line of every page ("Check the figures" admonitions with the dropdown class,
 *    which sphinx-togglebutton folds, and code cells myst-nb folds into <details> for the hide-cell and hide-input
 *    tags) is closed on screen and open on paper: before printing every folded block opens, and after printing
 *    the ones that were closed close again (window.normlab.openFolds / closeFolds; scripts/make_pdf.py calls
 *    openFolds before it prints a page). A page opened at an anchor or from a search result opens the folded
 *    block that holds the anchor or the first highlighted term, so what was found is shown. The fold's button
 *    is a Tab stop with a visible focus ring (normlab-book.css), and Enter or Space opens and closes it.
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

  // -- print --------------------------------------------------------------------------------------
  // Printed code may wrap (paper does not scroll), but only at a space, and a wrapped line goes on at its
  // own indentation (each line is a block with a hanging indent, .nl-line): each run of characters without a
  // space becomes one span that does not wrap (.nl-tok, normlab-book.css). Line breaks between two
  // characters of a run (after a ")" before a "[", which the browser allows) are so ruled out. The
  // code's own text is unchanged; the original markup comes back after printing.
  function keepTokens() {
    document.querySelectorAll("article pre").forEach(function (pre) {
      if (pre.dataset.nlScreen !== undefined || pre.closest(".normlab-explorable")) return;
      pre.dataset.nlScreen = pre.innerHTML;
      var leaves = [];
      var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      for (var n = walker.nextNode(); n; n = walker.nextNode()) leaves.push(n);
      // each line is a block of its own whose wrapped rows start at the line's own indentation (+2)
      var out = document.createDocumentFragment(), token = null, line = null, indent = -1;
      var newLine = function () {
        line = document.createElement("span");
        line.className = "nl-line";
        out.appendChild(line);
        token = null;
        indent = -1;
      };
      var hang = function (k) {
        indent = k;
        line.style.paddingLeft = (k + 2) + "ch";
        line.style.textIndent = -(k + 2) + "ch";
      };
      newLine();
      leaves.forEach(function (leaf) {
        var chain = [];
        for (var el = leaf.parentElement; el && el !== pre; el = el.parentElement) chain.unshift(el);
        leaf.data.split(/(\n|[^\S\n]+)/).forEach(function (part) {
          if (!part) return;
          var piece = document.createTextNode(part);
          for (var i = chain.length - 1; i >= 0; i--) {
            var wrap = chain[i].cloneNode(false);
            wrap.appendChild(piece);
            piece = wrap;
          }
          if (part === "\n") {
            line.appendChild(piece);
            newLine();
          } else if (/^\s/.test(part)) {
            if (indent < 0 && !line.textContent) hang(part.replace(/\t/g, "    ").length);
            token = null;
            line.appendChild(piece);
          } else {
            if (indent < 0) hang(0);
            if (!token) {
              token = document.createElement("span");
              token.className = "nl-tok";
              line.appendChild(token);
            }
            token.appendChild(piece);
          }
        });
      });
      if (!line.textContent) out.removeChild(line);
      pre.textContent = "";
      pre.appendChild(out);
    });
  }

  function restoreTokens() {
    document.querySelectorAll("article pre[data-nl-screen]").forEach(function (pre) {
      pre.innerHTML = pre.dataset.nlScreen;
      delete pre.dataset.nlScreen;
    });
  }

  function setupPrint() {
    var theme = null;
    window.addEventListener("beforeprint", function () {
      keepTokens();
      document.querySelectorAll("img[loading=lazy]").forEach(function (img) { img.loading = "eager"; });
      theme = document.documentElement.dataset.theme;
      if (theme && theme !== "light") document.documentElement.dataset.theme = "light";
    });
    window.addEventListener("afterprint", function () {
      restoreTokens();
      if (theme && theme !== "light") document.documentElement.dataset.theme = theme;
      theme = null;
    });
  }

  // On a phone the theme's floating "Back to top" button covers what lies under it (an
  // explorable's readouts, a line of text); there it is hidden (normlab-book.css) and this link at
  // the end of the article, in the flow of the page, takes its place.
  function backToTopLink() {
    var article = document.querySelector("article.bd-article");
    if (!article || document.getElementById("nl-back-to-top")) return;
    var p = document.createElement("p");
    p.className = "nl-back-to-top";
    var a = document.createElement("a");
    a.id = "nl-back-to-top";
    a.href = "#";
    a.textContent = "\u2191 Back to top";
    a.addEventListener("click", function (event) {
      event.preventDefault();
      window.scrollTo(0, 0);
      var title = article.querySelector("h1");  // keyboard focus goes back to the top as well
      if (title) { title.tabIndex = -1; title.focus({ preventScroll: true }); }
    });
    p.appendChild(a);
    article.appendChild(p);
  }

  // pydata-sphinx-theme sets tabIndex 0 on every box that scrolls (and again after a resize or a change of
  // the page); code boxes and cell outputs are taken out again whenever it does.
  var SCROLL_BOXES = "pre, .cell_output > .output";
  function untabScrollBoxes() {
    var main = document.getElementById("main-content");
    if (!main || main._normlabUntab) return;
    main._normlabUntab = true;
    var untab = function (el) { if (el.matches(SCROLL_BOXES) && el.tabIndex !== -1) el.tabIndex = -1; };
    main.querySelectorAll(SCROLL_BOXES).forEach(untab);
    new MutationObserver(function (records) {
      records.forEach(function (r) { if (r.target.nodeType === 1) untab(r.target); });
    }).observe(main, { subtree: true, attributes: true, attributeFilter: ["tabindex"] });
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

  // The page-contents drawer (a modal <dialog> on narrow screens) closes when a link in it is tapped, and
  // the page then goes to the heading (after the theme has given focus back to the drawer's button).
  function closeDrawerOnTap() {
    document.querySelectorAll("dialog[id$='-sidebar-modal']").forEach(function (dialog) {
      dialog.addEventListener("click", function (event) {
        var a = event.target.closest && event.target.closest("a[href]");
        if (!a || !dialog.open) return;
        var here = a.pathname === location.pathname && a.hash;
        var target = here && document.getElementById(decodeURIComponent(a.hash.slice(1)));
        if (!target) return;   // a link to another page: the browser leaves this one anyway
        event.preventDefault();
        dialog.addEventListener("close", function () {
          setTimeout(function () {
            if (location.hash !== a.hash) location.hash = a.hash;
            target.scrollIntoView();
          }, 0);
        }, {once: true});
        dialog.close();
      });
    });
  }

  // Tables: on a phone a column of sentences gets a readable width (the table scrolls in its box instead).
  function markTextColumns() {
    document.querySelectorAll("article table").forEach(function (table) {
      var rows = Array.prototype.slice.call(table.rows);
      var n = rows.reduce(function (m, r) { return Math.max(m, r.cells.length); }, 0);
      for (var c = 0; c < n; c++) {
        var cells = rows.map(function (r) { return r.cells[c]; }).filter(Boolean);
        var mean = cells.reduce(function (t, cell) { return t + cell.textContent.trim().length; }, 0) / cells.length;
        if (mean > 40) cells.forEach(function (cell) { cell.classList.add("nl-text-col"); });
      }
    });
  }

  // Print: a "Try this." lead-in is kept with its list, and a code cell or output longer than a third of a page
  // may break between its lines (normlab-book.css, Print).
  var LONG_LINES = 12;   // a third of a page is about 20 lines; a folded cell (printed open) holds two blocks
  function markForPrint() {
    document.querySelectorAll("article p").forEach(function (p) {
      var first = p.firstElementChild;
      if (first && first.tagName === "STRONG" && p.textContent.trim().indexOf(first.textContent) === 0 &&
          /^Try this\.?$/.test(first.textContent.trim()) && p.nextElementSibling &&
          p.nextElementSibling.tagName === "UL") p.classList.add("nl-lead-in");
    });
    document.querySelectorAll("article pre").forEach(function (pre) {
      if (pre.textContent.split("\n").length <= LONG_LINES) return;
      for (var el = pre; el && el.tagName !== "ARTICLE"; el = el.parentElement) {   // up to its cell, through a
        el.classList.add("nl-long");   // folded cell's <details> (printed open; the theme keeps admonitions whole)
        if (el.classList.contains("cell")) break;
      }
    });
  }

  // -- folded blocks (item 8) -------------------------------------------------------------------------
  var FOLDED_ADMONITION = ".admonition.toggle-hidden, .admonition.dropdown.toggle-hidden";
  var opened = [];
  function openFolds() {
    var article = document.querySelector("article.bd-article") || document.body;
    article.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; opened.push(d); });
    article.querySelectorAll(FOLDED_ADMONITION).forEach(function (a) {
      a.classList.remove("toggle-hidden");
      opened.push(a);
    });
    return opened.length;
  }
  function closeFolds() {
    opened.forEach(function (el) {
      if (el.tagName === "DETAILS") el.open = false;
      else el.classList.add("toggle-hidden");
    });
    opened = [];
  }
  // open the folded blocks around `el` (the anchor a link points to, a term a search result highlights)
  function revealIn(el) {
    for (var n = el; n && n !== document.body; n = n.parentElement) {
      if (n.tagName === "DETAILS" && !n.open) n.open = true;
      else if (n.classList && n.classList.contains("toggle-hidden")) n.classList.remove("toggle-hidden");
    }
  }
  function revealTarget() {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : "";
    var target = id && document.getElementById(id);
    if (target) {
      var hidden = target.closest && target.closest("details:not([open]), .toggle-hidden");
      revealIn(target);
      if (hidden) target.scrollIntoView();
    }
    var mark = document.querySelector("article .highlighted");
    if (mark && mark.closest("details:not([open]), .toggle-hidden")) revealIn(mark);
  }
  function setupFolds() {
    window.normlab = window.normlab || {};
    window.normlab.openFolds = openFolds;
    window.normlab.closeFolds = closeFolds;
    window.addEventListener("beforeprint", openFolds);
    window.addEventListener("afterprint", closeFolds);
    window.addEventListener("hashchange", revealTarget);
    // after sphinx-togglebutton has folded the admonitions and sphinx_highlight has marked the terms
    window.addEventListener("load", function () { setTimeout(revealTarget, 0); });
  }

  function onReady() {
    setupFolds();
    markForPrint();
    closeDrawerOnTap();
    markTextColumns();
    rovingContents();
    setupZoom();
    setupPrint();
    backToTopLink();
    untabCopyButtons();
    untabScrollBoxes();
    // sphinx-copybutton adds its buttons on DOMContentLoaded too, possibly after this script
    window.addEventListener("load", untabCopyButtons);
    forwardToggles(".primary-toggle");
    forwardToggles(".secondary-toggle");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onReady);
  } else {
    onReady();
  }
})();
