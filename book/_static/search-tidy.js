/* Search: numbers found, excerpts from disk, table rows read as rows, results ranked by mentions, and a
   result's link landing on its first match, highlighted.

   - Numbers: Sphinx indexes "8645" and "3933" but its query parser drops every all-digit word, so a search
     for an error number or a trace flag found nothing.  The parsed query gets its numbers back here.
   - Excerpts: Sphinx fetched each hit's page to cut an excerpt, which a browser refuses for a page opened from
     disk (file://: titles only, and CORS errors).  The build writes every page's text into
     _static/search-text.js (book/_ext/search_text.py); the search page loads it with a <script> element and
     takes each excerpt from it, around the words the reader typed (not their stems: "OPTIMIZE_FOR_SEQUENTIAL_KEY"
     is indexed as "..._kei", which is nowhere in the text).  A match inside a table's row shows that row as
     "header: value; header: value" (search_text.py keeps each row's cells and its table's headers).
   - Ranking: a result whose title (the page's, or the section's for a section hit) holds every word of the
     query comes first; then results by how many times the query's words occur in their page's text (the
     stored text of search-text.js, case ignored, most first); ties keep Sphinx's order (its score, then title).
     Sphinx's own score counts whether a page holds a word, never how often, so a page with 1 mention could
     rank above one with 4.  The query waits for search-text.js so that the list is drawn once, in this order.
   - Each page is listed once (its first, best-ranked hit), with the count to match: a glossary term matched
     as an index entry and as text listed the glossary twice.
   - Landing: each result's link carries ?highlight=<the query's words> (Sphinx's own parameter).  On the page
     it opens, those words are highlighted in the article with Sphinx's highlighter (sphinx_highlight.js, whose
     own start-up never runs here: searchtools.js is on every page, which it takes for the search page) and the
     page scrolls to the first match (at or after the link's section) below the sticky header, staying there
     while charts and math above it are drawn, until the reader scrolls.  A bar at the foot of the window steps
     through the matches and hides them (Escape too).  A URL parameter, unlike Sphinx's localStorage hand-over,
     works the same from disk and over HTTP.
*/
(function () {
  const results = () => document.getElementById("search-results");
  // searchtools.js declares Search with const: a global name, not a property of window.
  const search = () => (typeof Search === "undefined" ? null : Search);
  const onSearchPage = () => document.documentElement.dataset.content_root !== undefined
    && /(^|\/)search\.html$/.test(window.location.pathname);

  let typedWords = [];     // the reader's words, lower case, as typed
  let stemmedWords = [];   // the same words as the index holds them
  let queryWords = [];     // the words to count, rank on and highlight: typed, lower case, no stop words
  let pageTexts = null;    // {docname: {t: text, a: {id: offset}, h: [[header]], r: [[table, [[start, end]]]]}}
  let pageTextsSettled = false;  // search-text.js has loaded or failed: the query need not wait for it
  const waitingForTexts = [];

  // The highlight's colours: the theme's target colour behind text of a fixed colour that reads on it in
  // either scheme (a link's or a code token's own colour need not); the current match outlined.
  const STYLE = `
    html[data-theme="light"] { --latch-highlight-text: #1b1f24; }
    html[data-theme="dark"] { --latch-highlight-text: #ffffff; }
    span.highlighted { background-color: var(--pst-color-target); color: var(--latch-highlight-text);
      border-radius: 2px; box-shadow: 0 0 0 1px var(--pst-color-target); }
    span.highlighted.latch-current-match { outline: 2px solid var(--pst-color-accent); outline-offset: 1px; }
    .latch-search-matches { position: fixed; z-index: 1040; bottom: 0.75rem; left: 50%; transform: translateX(-50%);
      display: flex; align-items: center; gap: 0.4rem; max-width: calc(100vw - 1rem); padding: 0.3rem 0.5rem;
      font-size: 0.875rem; color: var(--pst-color-text-base); background: var(--pst-color-surface);
      border: 1px solid var(--pst-color-border); border-radius: 0.4rem; box-shadow: 0 2px 8px var(--pst-color-shadow); }
    .latch-search-matches .latch-search-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .latch-search-matches button { font: inherit; color: var(--pst-color-text-base); background: var(--pst-color-background);
      border: 1px solid var(--pst-color-border); border-radius: 0.25rem; padding: 0.1rem 0.5rem; cursor: pointer; }
    .latch-search-matches button:focus-visible { outline: 2px solid var(--pst-color-accent); outline-offset: 1px; }
    @media print { .latch-search-matches { display: none; } }`;

  function addStyle() {
    const style = document.createElement("style");
    style.id = "latch-search-style";
    style.textContent = STYLE;
    document.head.appendChild(style);
  }

  /* ---------------------------------------------------------------- the search page */

  function keepNumbers() {
    const s = search();
    if (!s || s._latchKeepsNumbers) return;
    const parse = s._parseQuery;
    s._parseQuery = (query) => {
      const parsed = parse(query);
      const [, searchTerms, , highlightTerms] = parsed;
      const words = (typeof splitQuery === "function" ? splitQuery(query.trim()) : query.trim().split(/\s+/));
      words.filter((w) => /^\d+$/.test(w)).forEach((w) => { searchTerms.add(w); highlightTerms.add(w); });
      typedWords = words.map((w) => w.toLowerCase()).filter((w) => !w.startsWith("-"));
      stemmedWords = [...searchTerms];
      queryWords = [...highlightTerms];
      return parsed;
    };
    s._latchKeepsNumbers = true;
  }

  // How many times the query's words occur in a page's stored text (case ignored).
  const lowerTexts = new Map();
  function mentions(doc) {
    const page = pageTexts && pageTexts[doc];
    if (!page) return 0;
    if (!lowerTexts.has(doc)) lowerTexts.set(doc, page.t.toLowerCase());
    const text = lowerTexts.get(doc);
    return queryWords.reduce((sum, word) => sum + (word ? text.split(word).length - 1 : 0), 0);
  }

  // Sphinx's Scorer.score hook: [docname, title, anchor, descr, score, filename] -> the score it sorts on.
  // Sphinx's own scores stay under 1000 (index entries 100, titles 15, words 5 each).
  function rankScore(result) {
    const [doc, title, , , score] = result;
    const lowerTitle = String(title).toLowerCase();
    const inTitle = queryWords.length > 0 && queryWords.every((word) => lowerTitle.includes(word));
    return (inTitle ? 1e9 : 0) + mentions(doc) * 1000 + Math.min(Math.max(score, 0), 999);
  }

  function rankByMentions() {
    const s = search();
    if (!s || s._latchRanks) return;
    if (typeof Scorer !== "undefined") Scorer.score = rankScore;
    const query = s.query;
    s.query = (q) => { if (pageTextsSettled) query(q); else waitingForTexts.push(() => query(q)); };
    s._latchRanks = true;
  }

  function docOf(link) {
    const root = document.documentElement.dataset.content_root || "";
    const suffix = (typeof DOCUMENTATION_OPTIONS !== "undefined" && DOCUMENTATION_OPTIONS.LINK_SUFFIX) || ".html";
    const [path, anchor] = link.getAttribute("href").split("#");
    let doc = path.split("?")[0];
    doc = doc.startsWith(root) ? doc.slice(root.length) : doc;
    if (doc.endsWith(suffix)) doc = doc.slice(0, -suffix.length);
    return [doc, anchor || ""];
  }

  const EXCERPT_LENGTH = 240;

  // The table row holding offset `at` of a page's text, as "header: value; header: value" (empty cells left
  // out; a long row keeps its first cell, the row's name, and the cells from the match on), or null.
  function rowAt(page, at) {
    const row = (page.r || []).find(([, cells]) => cells[0][0] <= at && at <= cells[cells.length - 1][1]);
    if (!row) return null;
    const [table, cells] = row;
    const headers = (page.h || [])[table] || [];
    const pieces = cells.map(([start, end], i) => {
      const value = page.t.slice(start, end).trim();
      if (!value) return null;
      return { text: headers[i] ? headers[i] + ": " + value : value, holds: start <= at && at <= end };
    }).filter(Boolean);
    let text = pieces.map((p) => p.text).join("; ");
    const matched = pieces.findIndex((p) => p.holds);
    if (text.length > EXCERPT_LENGTH && matched > 1) {
      text = pieces[0].text + "; ... " + pieces.slice(matched - 1).map((p) => p.text).join("; ");
    }
    return { text: text.length > EXCERPT_LENGTH + 60 ? text.slice(0, EXCERPT_LENGTH + 60) : text,
             first: cells[0][0] === 0, cut: text.length > EXCERPT_LENGTH + 60 };
  }

  // An excerpt of about 240 characters around the first word the reader typed that the text holds (in the
  // hit's section first, then anywhere on the page), with those words highlighted; a table row as a row.
  function excerpt(doc, anchor) {
    const page = pageTexts && pageTexts[doc];
    if (!page) return null;
    const text = page.t;
    const lower = text.toLowerCase();
    const from = anchor && anchor in page.a ? page.a[anchor] : 0;
    const find = (start) => {
      for (const words of [typedWords, stemmedWords]) {
        const hits = words.map((w) => lower.indexOf(w, start)).filter((i) => i > -1);
        if (hits.length) return Math.min(...hits);
      }
      return -1;
    };
    let at = find(from);
    if (at < 0) at = find(0);
    const row = at < 0 ? null : rowAt(page, at);
    let before, cut, after;
    if (row) {
      [before, cut, after] = [row.first ? "" : "...", row.text, row.cut ? "..." : ""];
    } else {
      const start = at < 0 ? from : Math.max(at - 100, 0);
      [before, cut, after] = [start > 0 ? "..." : "", text.substr(start, EXCERPT_LENGTH),
                              start + EXCERPT_LENGTH < text.length ? "..." : ""];
    }
    const p = document.createElement("p");
    p.classList.add("context");
    if (row) p.classList.add("latch-table-row");
    p.appendChild(document.createTextNode(before));
    const words = typedWords.filter((w) => w.length > 0).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = words.length ? new RegExp("(" + words.join("|") + ")", "gi") : null;
    (pattern ? cut.split(pattern) : [cut]).forEach((part, i) => {
      if (pattern && i % 2 === 1) {
        const mark = p.appendChild(document.createElement("span"));
        mark.className = "highlighted";
        mark.textContent = part;
      } else {
        p.appendChild(document.createTextNode(part));
      }
    });
    p.appendChild(document.createTextNode(after));
    return p;
  }

  function addExcerpts(list) {
    list.querySelectorAll("ul.search > li").forEach((li) => {
      if (li.querySelector("p.context") || !pageTexts) return;
      const link = li.querySelector("a");
      if (!link) return;
      const p = excerpt(...docOf(link));
      if (p) li.appendChild(p);
    });
  }

  // Each result's link names the query's words for the page it opens (?highlight=, before any #section).
  function linkToMatches(list) {
    if (!queryWords.length) return;
    list.querySelectorAll("ul.search > li > a:not([data-latch-highlight])").forEach((link) => {
      const [path, anchor] = link.getAttribute("href").split("#");
      const joiner = path.includes("?") ? "&" : "?";
      link.setAttribute("href", path + joiner + "highlight=" + encodeURIComponent(queryWords.join(" "))
                        + (anchor ? "#" + anchor : ""));
      link.dataset.latchHighlight = "";
    });
  }

  function onePerPage(list) {
    const seen = new Set();
    list.querySelectorAll("ul.search > li").forEach((li) => {
      const link = li.querySelector("a");
      const page = link ? link.getAttribute("href").split("#")[0].split("?")[0] : "";
      if (seen.has(page)) li.remove(); else seen.add(page);
    });
    const status = list.querySelector("p.search-summary");
    if (status) {
      const count = list.querySelectorAll("ul.search > li").length;
      const text = status.textContent.replace(/found \d+ page/, "found " + count + " page");
      if (text !== status.textContent) status.textContent = text;
    }
  }

  function loadPageTexts(then) {
    const root = document.documentElement.dataset.content_root || "";
    const script = document.createElement("script");
    script.src = root + "_static/search-text.js";
    const settle = () => {
      pageTextsSettled = true;
      then();
      waitingForTexts.splice(0).forEach((run) => run());
    };
    script.onload = () => { pageTexts = window.latchSearchText || {}; settle(); };
    // Without the page texts (a partial or incremental build) results keep Sphinx's own excerpts and order.
    script.onerror = () => {
      console.info("search: _static/search-text.js is missing; excerpts and order come from Sphinx");
      if (typeof DOCUMENTATION_OPTIONS !== "undefined") DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = true;
      settle();
    };
    document.head.appendChild(script);
  }

  function tidySearchPage() {
    keepNumbers();
    rankByMentions();
    const list = results();
    if (!list) return;
    const update = () => { onePerPage(list); addExcerpts(list); linkToMatches(list); };
    new MutationObserver(update).observe(list, { childList: true, subtree: true });
    loadPageTexts(update);
  }

  /* ---------------------------------------------------------------- the page a result opens */

  // The words a result's link asked to highlight, taken from the address at once (before Sphinx's start-up
  // could) and removed from it, as Sphinx does, so that a reload or a copied link shows the page plain.
  // Sphinx's localStorage copy is dropped on every page: it would highlight a stale query.
  function takeHighlightWords() {
    try { localStorage.removeItem("sphinx_highlight_terms"); } catch (e) { /* storage off: nothing kept */ }
    const url = new URL(window.location.href);
    const words = url.searchParams.get("highlight");
    if (words === null) return [];
    url.searchParams.delete("highlight");
    try { window.history.replaceState(window.history.state, "", url.href); } catch (e) { /* keeps the address */ }
    return [...new Set(words.toLowerCase().split(/\s+/).filter(Boolean))];
  }

  // The bottom of the sticky or fixed header bars over the page (the site's and the article's).
  function headerBottom() {
    return [...document.querySelectorAll(".bd-header, .bd-header-article, body > header")]
      .filter((el) => ["sticky", "fixed"].includes(getComputedStyle(el).position))
      .map((el) => el.getBoundingClientRect())
      .filter((box) => box.top <= 1 && box.bottom > 0 && box.height < window.innerHeight / 2)
      .reduce((bottom, box) => Math.max(bottom, box.bottom), 0);
  }

  const shown = (el) => el.getClientRects().length > 0 && el.checkVisibility({ visibilityProperty: true });

  function landOnMatches(words) {
    const article = document.querySelector("article.bd-article") || document.querySelector("[role=main]");
    if (!article || typeof _highlightText !== "function") return;  // _highlightText: sphinx_highlight.js
    const skip = "script, style, noscript, textarea, button, select, mjx-container, .vega-embed, .latch-chart";
    words.forEach((word) => {
      const nodes = [];
      const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
        acceptNode: (node) => (node.parentElement.closest(skip) || !node.nodeValue.toLowerCase().includes(word)
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT) });
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach((node) => _highlightText(node, word, "highlighted"));
    });
    const marks = [...article.querySelectorAll("span.highlighted")];
    if (!marks.length) return;
    // The first match at or after the link's section, else the first; a match in a closed <details> opens it.
    const section = window.location.hash ? document.getElementById(decodeURIComponent(window.location.hash.slice(1))) : null;
    const after = section ? marks.filter((m) => section.contains(m)
      || (section.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING)) : [];
    let current = marks.indexOf(after.find(shown) || marks.find(shown) || after[0] || marks[0]);
    const bar = matchBar(words, marks, (step) => { current = (current + step + marks.length) % marks.length; show(); });
    let reader = false;  // the reader has scrolled, typed or clicked: the page is theirs
    function place() {
      const mark = marks[current];
      const closed = mark.closest("details:not([open])");
      if (closed) closed.open = true;
      for (let pass = 0; pass < 2; pass++) {  // the header's height can change with the scroll position
        const top = headerBottom();
        const target = mark.getBoundingClientRect().top - top - Math.max(16, (window.innerHeight - top) * 0.25);
        if (Math.abs(target) < 1) break;
        window.scrollTo({ top: window.scrollY + target, behavior: "instant" });
      }
    }
    function show() {
      marks.forEach((m, i) => m.classList.toggle("latch-current-match", i === current));
      bar.count(current);
      place();
    }
    show();
    // Charts and math drawn above the match move it: put it back until the reader takes over.
    const keep = () => { if (!reader && marks[current].isConnected) place(); };
    const watcher = new ResizeObserver(keep);
    watcher.observe(article);
    window.addEventListener("load", keep);
    const stop = () => { reader = true; watcher.disconnect(); };
    ["wheel", "touchstart", "keydown", "pointerdown"].forEach((type) =>
      window.addEventListener(type, stop, { once: true, passive: true, capture: true }));
  }

  // The bar at the window's foot: "8645: 1 of 4", previous, next, hide.
  function matchBar(words, marks, step) {
    const bar = document.createElement("div");
    bar.className = "latch-search-matches";
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", "Search matches on this page");
    const label = bar.appendChild(document.createElement("span"));
    label.className = "latch-search-label";
    label.setAttribute("aria-live", "polite");
    const button = (text, name, action) => {
      const b = bar.appendChild(document.createElement("button"));
      b.type = "button";
      b.textContent = text;
      b.setAttribute("aria-label", name);
      b.addEventListener("click", action);
      return b;
    };
    button("\u2191", "Previous match", () => step(-1));
    button("\u2193", "Next match", () => step(1));
    const hide = () => {
      if (typeof SphinxHighlight !== "undefined") SphinxHighlight.hideSearchWords();
      else marks.forEach((m) => m.classList.remove("highlighted"));
      marks.forEach((m) => m.classList.remove("latch-current-match"));
      bar.remove();
      document.removeEventListener("keydown", onEscape);
    };
    const onEscape = (event) => { if (event.key === "Escape") hide(); };
    button("Hide", "Hide search matches", hide);
    document.addEventListener("keydown", onEscape);
    (document.querySelector("main") || document.body).appendChild(bar);
    return { count: (i) => { label.textContent = "\u201c" + words.join(" ") + "\u201d: " + (i + 1) + " of " + marks.length; } };
  }

  /* ---------------------------------------------------------------- start */

  addStyle();
  const searchPage = onSearchPage();
  if (searchPage && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;  // no fetch per hit: excerpts come from search-text.js
  }
  const highlightWords = searchPage ? [] : takeHighlightWords();
  const start = () => {
    if (searchPage) tidySearchPage();
    else if (highlightWords.length) landOnMatches(highlightWords);
  };
  if (document.readyState !== "loading") start();
  else document.addEventListener("DOMContentLoaded", start);
})();
