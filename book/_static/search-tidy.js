/* Search results, tidied.  Sphinx takes each hit's excerpt from the text of the page's [role="main"],
   which on this theme starts with the download buttons (".ipynb", ".md"): a word whose stem is not in the
   text verbatim then showed only those.  And a glossary term matched twice, as an index entry and as text,
   listing the glossary twice.  Here excerpts come from the article itself, and each page is listed once
   (its first, best-scored hit), with the count to match. */
(function () {
  function articleText(html, anchor) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    doc.querySelectorAll(".headerlink, script, style, .cell_input").forEach((el) => el.remove());
    const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    if (!article) return "";
    let part = null;
    try { part = anchor ? article.querySelector(anchor) : null; } catch (err) { part = null; }
    let text = (part || article).textContent;
    if (part && part.tagName === "DT" && part.nextElementSibling) {  // a glossary term: its definition too
      text += " " + part.nextElementSibling.textContent;
    }
    return text.replace(/\s+/g, " ").trim();
  }

  function onePerPage(results) {
    const seen = new Set();
    results.querySelectorAll("ul.search > li").forEach((li) => {
      const link = li.querySelector("a");
      const page = link ? link.getAttribute("href").split("#")[0] : "";
      if (seen.has(page)) li.remove(); else seen.add(page);
    });
    const status = results.querySelector("p.search-summary");
    if (status) {
      const count = results.querySelectorAll("ul.search > li").length;
      const text = status.textContent.replace(/found \d+ page/, "found " + count + " page");
      if (text !== status.textContent) status.textContent = text;
    }
  }

  // searchtools.js declares Search with const: a global name, not a property of window.
  const search = () => (typeof Search === "undefined" ? null : Search);

  function tidy() {
    if (search()) search().htmlToText = articleText;
    const results = document.getElementById("search-results");
    if (!results) return;
    new MutationObserver(() => onePerPage(results)).observe(results, { childList: true, subtree: true });
  }

  if (search()) tidy(); else document.addEventListener("DOMContentLoaded", tidy);
})();
