/* Search, made to find numbers and to show excerpts from disk.

   - Numbers: Sphinx indexes "8645" and "3933" but its query parser drops every all-digit word, so a search
     for an error number or a trace flag found nothing.  The parsed query gets its numbers back here.
   - Excerpts: Sphinx fetched each hit's page to cut an excerpt, which a browser refuses for a page opened from
     disk (file://: titles only, and CORS errors).  The build writes every page's text into
     _static/search-text.js (book/_ext/search_text.py); the search page loads it with a <script> element and
     takes each excerpt from it, around the words the reader typed (not their stems: "OPTIMIZE_FOR_SEQUENTIAL_KEY"
     is indexed as "..._kei", which is nowhere in the text).
   - Each page is listed once (its first, best-scored hit), with the count to match: a glossary term matched
     as an index entry and as text listed the glossary twice. */
(function () {
  const results = () => document.getElementById("search-results");
  // searchtools.js declares Search with const: a global name, not a property of window.
  const search = () => (typeof Search === "undefined" ? null : Search);
  const onSearchPage = () => document.documentElement.dataset.content_root !== undefined
    && /(^|\/)search\.html$/.test(window.location.pathname);

  let typedWords = [];     // the reader's words, lower case, as typed
  let stemmedWords = [];   // the same words as the index holds them
  let pageTexts = null;    // {docname: {t: text, a: {id: offset}}}, once search-text.js has loaded

  if (onSearchPage() && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;  // no fetch per hit: excerpts come from search-text.js
  }

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
      return parsed;
    };
    s._latchKeepsNumbers = true;
  }

  function docOf(link) {
    const root = document.documentElement.dataset.content_root || "";
    const suffix = (typeof DOCUMENTATION_OPTIONS !== "undefined" && DOCUMENTATION_OPTIONS.LINK_SUFFIX) || ".html";
    const [path, anchor] = link.getAttribute("href").split("#");
    let doc = path.startsWith(root) ? path.slice(root.length) : path;
    if (doc.endsWith(suffix)) doc = doc.slice(0, -suffix.length);
    return [doc, anchor || ""];
  }

  // An excerpt of about 240 characters around the first word the reader typed that the text holds (in the
  // hit's section first, then anywhere on the page), with those words highlighted.
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
    const start = at < 0 ? from : Math.max(at - 100, 0);
    const cut = text.substr(start, 240);
    const p = document.createElement("p");
    p.classList.add("context");
    p.appendChild(document.createTextNode(start > 0 ? "..." : ""));
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
    if (start + 240 < text.length) p.appendChild(document.createTextNode("..."));
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

  function onePerPage(list) {
    const seen = new Set();
    list.querySelectorAll("ul.search > li").forEach((li) => {
      const link = li.querySelector("a");
      const page = link ? link.getAttribute("href").split("#")[0] : "";
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
    script.onload = () => { pageTexts = window.latchSearchText || {}; then(); };
    // Without the page texts (a partial or incremental build) results keep Sphinx's own excerpts: say why once.
    script.onerror = () => console.info("search: _static/search-text.js is missing; excerpts come from Sphinx");
    document.head.appendChild(script);
  }

  function tidy() {
    keepNumbers();
    const list = results();
    if (!list) return;
    const update = () => { onePerPage(list); addExcerpts(list); };
    new MutationObserver(update).observe(list, { childList: true, subtree: true });
    loadPageTexts(update);
  }

  if (search() && document.readyState !== "loading") tidy();
  else document.addEventListener("DOMContentLoaded", tidy);
})();
