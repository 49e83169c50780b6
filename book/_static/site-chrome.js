/* The site's chrome, fixed where the themes fall short.  Loaded in <head> on every page, after the vega bundle
   (on a page with charts) and before the charts' own scripts (models/book/render.py).

   1. Phone sidebars.  pydata-sphinx-theme 0.17 binds its sidebar dialogs to the FIRST .primary-toggle and
      .secondary-toggle on the page (document.querySelector), which with sphinx-book-theme 1.3 are its own
      navbar buttons, hidden at every width; the book theme's visible buttons in the article header get no
      handler, so on a phone the chapter list and the contents never open (pydata-sphinx-theme issue 2451).
      A click on any other toggle is passed to the bound one, so both themes' handlers run as designed (the
      dialog on a phone, the collapsing sidebar on a desktop).  A choice in a drawer closes it; the primary
      sidebar is a navigation landmark and a search field is named by the text it shows (axe-core).
   2. Identifiers (NESTING_TRANSACTION_FULL) in navigation and headings may break after an underscore, never
      inside a word.
   3. Tables sit in a frame that scrolls sideways when they are wider than the column, with a shadow on the
      side that has more; a caption is set above the frame, whole.
   4. Charts follow the page's light or dark theme: each draw gets dark axes, legends and titles, and dark
      mark colours lightened until they read on the dark page; a theme switch draws every chart again.  In
      either theme a text mark's colour is darkened or lightened until it reads at 4.5:1.
   5. Print: every collapsed block (solutions, hidden queries, dropdowns) opens before printing, and a dark
      page prints light (white paper), its charts drawn light again; a table wider than the printed column is
      set in a smaller type until it fits. */
(function () {
  "use strict";

  /* ---------------------------------------------------------------- 1. sidebar toggles */
  function forwardSidebarToggles() {
    ["primary-toggle", "secondary-toggle"].forEach((name) => {
      const [bound, ...others] = document.querySelectorAll("." + name);
      others.forEach((button) => button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        bound.click();
      }));
    });
  }

  // On a phone the chapter list and the page's contents are modal drawers: a choice in one closes it, and a
  // section of this page is scrolled to once the drawer has closed (the contents drawer stayed open over it;
  // scrolled before, the theme's closing handler, which gives the toggle its focus back, moved the page again).
  function closeDrawersOnChoice() {
    ["pst-primary-sidebar-modal", "pst-secondary-sidebar-modal"].forEach((id) => {
      const drawer = document.getElementById(id);
      if (drawer) drawer.addEventListener("click", (event) => {
        const link = event.target.closest("a[href]");
        if (!drawer.open || !link) return;
        const target = link.pathname === location.pathname && link.hash
          ? document.getElementById(decodeURIComponent(link.hash.slice(1))) : null;
        if (target) {
          event.preventDefault();
          drawer.addEventListener("close", () => {
            if (location.hash !== link.hash) location.hash = link.hash;  // scrolls there, as on a desktop
            else target.scrollIntoView();
          }, { once: true });
        }
        drawer.close();
      });
    });
  }

  // For assistive technology (axe-core's findings): every part of the page in a landmark (the primary sidebar,
  // with the book's title link, search and chapter list, is the book's navigation), and a control named by the
  // text it shows: a search field ("Search Ctrl + K", not "Search"), a hidden cell's switch ("Show code cell
  // content", not myst-nb's "Toggle hidden content").
  function labelChrome() {
    const sidebar = document.getElementById("pst-primary-sidebar");
    if (sidebar && !sidebar.hasAttribute("role")) {
      sidebar.setAttribute("role", "navigation");
      sidebar.setAttribute("aria-label", "Book");
    }
    document.querySelectorAll(".search-button__button:has(.search-button__kbd-shortcut)").forEach((button) => {
      button.removeAttribute("aria-label");
      button.setAttribute("aria-keyshortcuts", "Control+K");
    });
    document.querySelectorAll("summary[aria-label]").forEach((summary) => {
      if (summary.textContent.trim()) summary.removeAttribute("aria-label");
    });
  }

  /* ---------------------------------------------------------------- 2. breakable identifiers */
  const IDENTIFIER = /[A-Za-z0-9]+(?:[_.][A-Za-z0-9]+)+/g;

  // After each underscore or dot inside an identifier of `shortest` characters or more (12; 8 in a table cell,
  // where a column's width is its longest word), a <wbr>.
  function breakIdentifiers(root, shortest = 12) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) {
      if (/[A-Za-z0-9][_.][A-Za-z0-9]/.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
    }
    nodes.forEach((node) => {
      const text = node.nodeValue;
      const parts = [];
      let last = 0;
      text.replace(IDENTIFIER, (word, at) => {
        if (word.length < shortest) return word;
        parts.push(text.slice(last, at));
        word.split(/(?<=[_.])/).forEach((piece, i) => { if (i) parts.push(null); parts.push(piece); });
        last = at + word.length;
        return word;
      });
      if (!parts.length) return;
      parts.push(text.slice(last));
      const fragment = document.createDocumentFragment();
      parts.forEach((part) => fragment.appendChild(
        part === null ? document.createElement("wbr") : document.createTextNode(part)));
      node.parentNode.replaceChild(fragment, node);
    });
  }

  const TITLES = [".bd-sidebar-primary a", ".bd-sidebar-secondary a", ".prev-next-title",
    ".bd-article h1", ".bd-article h2", ".bd-article h3", ".bd-article caption", ".bd-article th",
    ".bd-article dt"].join(", ");

  /* ---------------------------------------------------------------- 3. table frames */
  // A cell that holds a number, or a number with a short unit ("271,458", "9.7 µs", "2, 4,194,304"): kept on one line.
  const NUMERIC_CELL = /^[^A-Za-z]*\d[^A-Za-z]*(?:[A-Za-zµ%/]{1,6}[^A-Za-z]*)?$/;
  const phone = window.matchMedia ? window.matchMedia("(max-width: 600px)") : { matches: false };

  // Each body cell carries its column's header as data-label (the phone's cards read it); numeric cells are marked.
  function labelCells(table) {
    const headRows = table.tHead ? [...table.tHead.rows] : [];
    const names = [];
    headRows.forEach((row) => {
      let column = 0;
      [...row.cells].forEach((cell) => {
        const text = cell.textContent.trim().replace(/\s+/g, " ");
        for (let k = 0; k < (cell.colSpan || 1); k++, column++) if (text) names[column] = text;
      });
    });
    [...table.tBodies].forEach((body) => [...body.rows].forEach((row) => {
      let column = 0;
      [...row.cells].forEach((cell) => {
        if (names[column] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", names[column]);
        const text = cell.textContent.trim();
        if (text.length <= 24 && NUMERIC_CELL.test(text)) cell.classList.add("latch-num");
        column += cell.colSpan || 1;
      });
    }));
  }

  function frameTables() {
    document.querySelectorAll(".bd-article table").forEach((table, i) => {
      if (table.closest(".latch-table-frame")) return;
      const frame = document.createElement("div");
      frame.className = "latch-table-frame";
      const scroller = document.createElement("div");
      scroller.className = "latch-table-scroll";
      table.parentNode.insertBefore(frame, table);
      const caption = table.querySelector(":scope > caption");
      if (caption && caption.textContent.trim()) {
        // Above the frame (not inside the table, whose width it took): whole at any width.
        const title = document.createElement("div");
        title.className = "latch-table-caption";
        title.id = table.id ? table.id + "-caption" : "latch-table-caption-" + i;
        while (caption.firstChild) title.appendChild(caption.firstChild);
        caption.remove();
        table.setAttribute("aria-labelledby", title.id);
        frame.appendChild(title);
      }
      frame.appendChild(scroller);
      scroller.appendChild(table);
      // A table wider than the column is laid out at its narrowest, which squeezed a cell of prose (a
      // reference, a note) to a word per line: in a table that scrolls anyway, such a cell keeps the width of
      // a short line. A table that fits the column without it is left to fit.
      const prose = [...table.querySelectorAll("td")].filter((cell) => cell.textContent.trim().length > 40);
      const fitProse = () => {
        prose.forEach((cell) => cell.classList.remove("latch-prose-cell"));
        if (!table.classList.contains("latch-cards") && scroller.scrollWidth - scroller.clientWidth > 1)
          prose.forEach((cell) => cell.classList.add("latch-prose-cell"));
      };
      table.querySelectorAll("td, th").forEach((cell) => breakIdentifiers(cell, 8));
      labelCells(table);
      // A table wider than the column is laid out as cards on a phone (layout.css), which fit any width, and is set
      // a size smaller on a wider screen, where most then fit (the rest scroll in the frame).
      const stack = () => {
        table.classList.remove("latch-cards", "latch-dense", "latch-denser");
        prose.forEach((cell) => cell.classList.remove("latch-prose-cell"));
        const over = () => scroller.scrollWidth - scroller.clientWidth > 1;
        if (over()) table.classList.add(phone.matches ? "latch-cards" : "latch-dense");
        if (!phone.matches && over()) table.classList.add("latch-denser");
      };
      scroller.tabIndex = 0;  // scrollable with the keyboard
      const update = () => {
        const more = scroller.scrollWidth - scroller.clientWidth;
        frame.classList.toggle("latch-scrolls", more > 1);
        frame.classList.toggle("latch-more-left", scroller.scrollLeft > 1);
        frame.classList.toggle("latch-more-right", more - scroller.scrollLeft > 1);
      };
      scroller.addEventListener("scroll", update, { passive: true });
      // Laid out again when the column's width changes, in the next frame (not inside the observer's callback, where
      // a change of the table's size would be a resize loop).
      let laidOutAt = scroller.clientWidth;
      const layOut = () => { laidOutAt = scroller.clientWidth; stack(); fitProse(); update(); };
      if (window.ResizeObserver) new ResizeObserver(() => {
        if (scroller.clientWidth !== laidOutAt) requestAnimationFrame(layOut);
      }).observe(scroller);
      layOut();
    });
  }

  /* ---------------------------------------------------------------- 4. charts in the page's theme */
  const prefersDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  // The reader's choice (the theme button's mode), else the system setting. Not data-theme: before the theme's
  // deferred script runs it holds the theme of the last visit, which a change of system setting makes stale.
  let printing = false;  // paper is white: a dark page prints light (see openForPrint)

  function pageIsDark() {
    if (printing) return false;
    const mode = document.documentElement.dataset.mode;
    if (mode === "dark" || mode === "light") return mode === "dark";
    return !!(prefersDark && prefersDark.matches);
  }

  function rgbOf(hex) {
    let h = hex.slice(1);
    if (h.length === 3) h = h.split("").map((c) => c + c).join("");
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  }

  function luminance(rgb) {
    const [r, g, b] = rgb.map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }

  const DARK_TEXT_MIN_LUMINANCE = 0.3;  // 6:1 or more against the dark page (#121212 has 0.007)

  // A colour mixed toward white (lighter) or black, a step at a time, until good(rgb) holds (same hue).
  function shifted(hex, lighter, good) {
    let rgb = rgbOf(hex);
    for (let i = 0; i < 40 && !good(rgb); i++) rgb = rgb.map((v) => (lighter ? v + (255 - v) * 0.08 : v * 0.92));
    return "#" + rgb.map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
  }

  // A colour too dark to read on the dark page, lightened until it reads.
  function lighten(hex) {
    return luminance(rgbOf(hex)) >= DARK_TEXT_MIN_LUMINANCE ? hex
      : shifted(hex, true, (rgb) => luminance(rgb) >= DARK_TEXT_MIN_LUMINANCE);
  }

  const HEX = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i;
  const SKIP = new Set(["data", "datasets", "values", "usermeta", "$schema"]);

  function lightenColours(node) {
    if (Array.isArray(node)) return node.map(lightenColours);
    if (node && typeof node === "object") {
      const out = {};
      Object.keys(node).forEach((key) => {
        out[key] = SKIP.has(key) ? node[key] : lightenColours(node[key]);
      });
      return out;
    }
    return typeof node === "string" && HEX.test(node) ? lighten(node) : node;
  }

  function darkConfig() {
    const page = pageBackground();
    const text = "#ced6dd", strong = "#e6ebef", rule = "#6b737b", grid = "#3a4048";
    const axis = { labelColor: text, titleColor: text, domainColor: rule, tickColor: rule, gridColor: grid };
    return {
      background: page,
      view: { stroke: grid },
      axis, axisX: axis, axisY: axis,
      legend: { labelColor: text, titleColor: text },
      header: { labelColor: text, titleColor: text },
      title: { color: strong, subtitleColor: text },
      text: { color: text },
      style: { "guide-label": { fill: text }, "guide-title": { fill: text }, "group-title": { fill: strong },
               "group-subtitle": { fill: text } },
    };
  }

  function merge(base, over) {
    const out = Object.assign({}, base);
    Object.keys(over).forEach((key) => {
      const a = out[key], b = over[key];
      out[key] = (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b))
        ? merge(a, b) : b;
    });
    return out;
  }

  function contrast(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }

  // A text mark's colour, moved toward black (light page) or white (dark page) until it reads at 4.5:1
  // (WCAG AA) on the chart's background: a series colour that is fine for a line is often too pale for a label.
  function readable(hex, background, dark) {
    return shifted(hex, dark, (rgb) => contrast(rgb, background) >= 4.6);
  }

  function readableText(node, background, dark) {
    if (Array.isArray(node)) return node.map((n) => readableText(n, background, dark));
    if (!node || typeof node !== "object") return node;
    const out = {};
    Object.keys(node).forEach((key) => {
      out[key] = SKIP.has(key) ? node[key] : readableText(node[key], background, dark);
    });
    let mark = out.mark;
    const isText = mark === "text" || (mark && typeof mark === "object" && mark.type === "text");
    if (isText && dark && typeof mark === "object" && mark.stroke === "white") {
      // A label's halo (models/book/charts.py draws it white under the label) takes the dark page's colour,
      // so the label reads over it instead of sitting in a white patch.
      const page = "#" + background.map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
      mark = out.mark = Object.assign({}, mark, { stroke: page }, mark.color === "white" ? { color: page } : {});
    }
    if (isText) {
      const fix = (v) => (typeof v === "string" && HEX.test(v) ? readable(v, background, dark) : v);
      if (typeof mark === "object") out.mark = Object.assign({}, mark, mark.color ? { color: fix(mark.color) } : {},
        mark.fill ? { fill: fix(mark.fill) } : {});
      const colour = out.encoding && out.encoding.color;
      if (colour && colour.value) {
        out.encoding = Object.assign({}, out.encoding, { color: Object.assign({}, colour, { value: fix(colour.value) }) });
      }
    }
    return out;
  }

  function pageBackground() {
    const value = getComputedStyle(document.documentElement).getPropertyValue("--pst-color-background").trim();
    return HEX.test(value) ? value : "#121212";
  }

  // The spec as drawn on this page: on a dark page with dark guides and lightened colours; on either page
  // with text marks that read on the chart's background.
  function themedSpec(spec, dark) {
    if (!dark) return readableText(spec, [255, 255, 255], false);  // Vega's default background is white
    const out = readableText(lightenColours(spec), rgbOf(pageBackground()), true);
    out.config = merge(out.config || {}, darkConfig());
    return out;
  }

  function themeCharts() {
    const embed = window.vegaEmbed;
    if (typeof embed !== "function" || embed.latchThemed) return;
    const themed = function (el, spec, opts) {
      const target = typeof el === "string" ? document.querySelector(el) : el;
      if (target && target.dataset) target.dataset.theme = pageIsDark() ? "dark" : "light";
      return embed(el, spec && typeof spec === "object" ? themedSpec(spec, pageIsDark()) : spec, opts);
    };
    Object.keys(embed).forEach((key) => { themed[key] = embed[key]; });
    themed.latchThemed = true;
    window.vegaEmbed = themed;

    // A switch of theme (the navbar's button, or the system setting in auto mode): every chart drawn again.
    let drawnDark = pageIsDark();
    const check = () => {
      if (pageIsDark() === drawnDark) return;
      drawnDark = pageIsDark();
      window.dispatchEvent(new CustomEvent("latch:theme"));
    };
    new MutationObserver(check).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme", "data-mode"] });
    if (prefersDark && prefersDark.addEventListener) prefersDark.addEventListener("change", check);
  }

  /* ---------------------------------------------------------------- 5. print */
  const opened = [];

  let themeBeforePrint = null;

  function openForPrint() {
    if (pageIsDark()) {  // print light: the theme's light colours, and the charts drawn light again
      themeBeforePrint = document.documentElement.dataset.theme;
      printing = true;
      document.documentElement.dataset.theme = "light";
    }
    document.querySelectorAll("details:not([open])").forEach((d) => { d.open = true; opened.push(d); });
    // sphinx-togglebutton's hidden blocks
    document.querySelectorAll(".toggle-hidden").forEach((el) => { el.classList.remove("toggle-hidden"); opened.push(el); });
  }

  function closeAfterPrint() {
    if (printing) {
      printing = false;
      document.documentElement.dataset.theme = themeBeforePrint;
    }
    opened.splice(0).forEach((el) => {
      if (el.tagName === "DETAILS") el.open = false; else el.classList.add("toggle-hidden");
    });
  }

  // Paper does not scroll: a table wider than the printed column is set in a smaller type, a step at a time,
  // until it fits (print.css reads --latch-print-scale; its cells wrap only between words). Measured in the print
  // layout: when the print media applies (a print dialog, or `make pdf`, which also calls it). Returns the tables
  // that do not fit even at the smallest step, as "id: width > column".
  const PRINT_SCALES = [1, 0.93, 0.86, 0.8, 0.75, 0.7];  // 9 pt down to 6.3 pt

  function fitTablesForPrint() {
    if (!window.matchMedia("print").matches) return [];
    const tooWide = [];
    document.querySelectorAll(".latch-table-scroll > table").forEach((table) => {
      const room = table.parentElement.clientWidth;
      const fits = PRINT_SCALES.some((scale) => {
        table.style.setProperty("--latch-print-scale", String(scale));
        return table.offsetWidth <= room + 1;
      });
      if (!fits) tooWide.push(`${table.id || "a table"}: ${table.offsetWidth} > ${room} px`);
    });
    return tooWide;
  }

  window.latchPrepareForPrint = openForPrint;
  window.latchFitTablesForPrint = fitTablesForPrint;
  window.addEventListener("beforeprint", openForPrint);
  window.addEventListener("afterprint", closeAfterPrint);
  if (window.matchMedia) window.matchMedia("print").addEventListener("change", fitTablesForPrint);

  /* ---------------------------------------------------------------- start */
  themeCharts();
  const ready = (fn) => (document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", fn) : fn());
  // With the vega bundle deferred, vegaEmbed exists only once the page is parsed: this listener, added in <head>,
  // runs before those of the charts' scripts (models/book/render.py), which wait for it.
  ready(themeCharts);
  window.latchThemeCharts = themeCharts;  // a chart's script calls it too, whatever order the scripts ran in
  ready(() => {
    document.querySelectorAll(TITLES).forEach((el) => breakIdentifiers(el));
    frameTables();
    forwardSidebarToggles();
    closeDrawersOnChoice();
    labelChrome();
  });
})();
