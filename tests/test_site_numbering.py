"""Chapter numbers a reader can follow, and code that fits the text column (issue 43).

The chapters keep the numbers the prose cites (1-5, 5b, 6-9, which are also the notebooks' file names): the
sidebar lists them in that order with their numbers, each chapter's H1 and browser title carry its number,
every "chapter N" in the prose is a link to chapter N, and no code input the reader sees scrolls sideways in
the 1,280 px column, light and dark (on a phone, code wraps: see the layout tests).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup

from site_support import CHAPTERS, DOCS, PAGE_TIMEOUT_MS, open_page  # tests/ is on sys.path (pytest puts it there)

pytestmark = pytest.mark.site

WIDTHS = (1280, 390)
# The chapters in reading order, by the number the prose gives them.
READING_ORDER = ["1", "2", "3", "4", "5", "5b", "6", "7", "8", "9"]


def chapter_number(doc: str) -> str:
    """The number a chapter's notebook file name gives it: notebooks/05b_tempdb -> 5b."""
    return Path(doc).name.split("_", 1)[0].lstrip("0")


def leading_number(title: str) -> str | None:
    """The chapter number a title starts with ("5b. Tempdb: ..." -> "5b"), or None."""
    found = re.match(r"\s*(\d+b?)\. ", title)
    return found[1] if found else None


# The sidebar's entries in the order the reader sees them (top to bottom), with where each goes.
_SIDEBAR = """(selector) => [...document.querySelectorAll(selector)]
    .filter(a => a.getBoundingClientRect().height > 0)
    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
    .map(a => ({text: a.textContent.trim(), href: a.getAttribute('href')}))"""


@pytest.mark.parametrize("width", WIDTHS)
def test_sidebar_lists_chapters_in_reading_order(browser_context: Any, server: str, width: int) -> None:
    """The sidebar (the chapter list's drawer on a phone) lists every chapter with its number, in ascending
    order (1-5, 5b, 6-9: chapter 8 before chapter 9), each entry going to the chapter its number names."""
    page, log = open_page(browser_context, f"{server}book/preface.html", server, width=width)
    try:
        selector = ".bd-sidebar-primary nav.bd-links a.reference"
        if width < 960:  # a phone: the chapter list opens in a drawer
            page.locator(".bd-header-article button.primary-toggle").click()
            page.wait_for_function("() => document.getElementById('pst-primary-sidebar-modal').open",
                                   timeout=PAGE_TIMEOUT_MS)
            selector = "dialog#pst-primary-sidebar-modal nav.bd-links a.reference"
        entries = page.evaluate(_SIDEBAR, selector)
        numbered = [(leading_number(e["text"]), e["href"]) for e in entries if "notebooks/" in e["href"]]
        assert [n for n, _ in numbered] == READING_ORDER, [e["text"] for e in entries]
        for number, href in numbered:
            assert chapter_number(href.split("#")[0].removesuffix(".html")) == number, (number, href)
        unnumbered = [e["text"] for e in entries if "notebooks/" not in e["href"] and leading_number(e["text"])]
        assert not unnumbered, f"pages that are not chapters carry a number: {unnumbered}"
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_title_carries_its_number(site: Path, doc: str) -> None:
    """The chapter's H1 and its <title> (the browser tab, bookmarks) start with its number; so does the
    previous/next button that points to it from the page before."""
    soup = BeautifulSoup((site / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")
    number = chapter_number(doc)
    h1 = soup.select_one("article.bd-article h1").get_text(" ", strip=True)
    assert leading_number(h1) == number, h1
    assert leading_number(soup.title.get_text()) == number, soup.title.get_text()
    before = DOCS[DOCS.index(doc) - 1]
    previous = BeautifulSoup((site / f"{before}.html").read_text(encoding="utf-8"), "html.parser")
    to_here = [a for a in previous.select("a.right-next") if a.get("href", "").endswith(Path(doc).name + ".html")]
    assert to_here and leading_number(to_here[0].select_one(".prev-next-title").get_text()) == number


# Every "chapter N" in the page's text: those standing outside a link (headings, code, outputs, charts and the
# values {eval} quotes inline left aside: they cannot hold a link), and every link that names a chapter (its text
# "chapter N", or a bare "N" going to a chapter page, as in "chapters 3 and 4") with where it goes.
_MENTIONS = r"""() => {
    const root = document.querySelector('article.bd-article');
    const mention = /\b[Cc]hapters?\s+\d+b?\b/g;
    const skip = 'a, h1, h2, h3, h4, h5, h6, pre, code, .cell_output, span.output, svg, script, style, .vega-embed';
    const loose = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest(skip)) continue;
        for (const m of node.textContent.matchAll(mention))
            loose.push(node.textContent.slice(Math.max(0, m.index - 40), m.index + m[0].length + 20));
    }
    const links = [...root.querySelectorAll('a')]
        .map(a => ({text: a.textContent.replace(/\s+/g, ' ').trim(), href: a.getAttribute('href') || ''}))
        .filter(l => /^[Cc]hapters? \d+b?\b/.test(l.text)
                     || (/^\d+b?$/.test(l.text) && /(^|\/)\d\db?_[a-z_]+\.html/.test(l.href)));
    return {loose, links};
}"""


# The references cite other books' chapters ("Chapter 6, Hands-Free tempdb"): not this book's.
PROSE_DOCS = [d for d in DOCS if d != "book/references"]


@pytest.mark.parametrize("doc", PROSE_DOCS)
def test_every_chapter_mention_is_a_link_to_it(browser_context: Any, server: str, doc: str) -> None:
    """No "chapter N" in the prose stands outside a link, and every link that names a chapter number goes to
    that chapter's page (notebooks/NN_x.html, from a chapter or from a page under book/)."""
    page, log = open_page(browser_context, f"{server}{doc}.html", server, width=1280)
    try:
        report = page.evaluate(_MENTIONS)
        assert not report["loose"], f"{doc}: 'chapter N' not linked: {report['loose']}"
        for link in report["links"]:
            number = re.search(r"(\d+b?)$|(\d+b?)\b", link["text"])
            named = number[1] or number[2]
            target = link["href"].split("#")[0]
            assert target.endswith(".html") and chapter_number(target.removesuffix(".html")) == named, (doc, link)
    finally:
        page.close()


# Each code input the reader can see (solutions opened first), and whether its lines fit: a pre that scrolls
# sideways has scrollWidth > clientWidth.
_WIDE_CODE = """() => {
    document.querySelectorAll('article.bd-article details').forEach(d => d.open = true);
    return [...document.querySelectorAll('article.bd-article div.cell_input pre')]
        .filter(pre => pre.getBoundingClientRect().width > 0)
        .map(pre => ({wide: pre.scrollWidth > pre.clientWidth + 1, width: pre.clientWidth,
                      needs: pre.scrollWidth,
                      line: pre.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '')}));
}"""


@pytest.mark.parametrize("doc", CHAPTERS)
def test_code_inputs_fit_the_column(browser_context: Any, server: str, doc: str) -> None:
    """At 1,280 px no code input (a shown cell, or an exercise's solution once opened) is wider than its block:
    its longest line fits the text column (a line's width does not change with the colour scheme; the layout
    tests see the dark page at 390 px)."""
    page, log = open_page(browser_context, f"{server}{doc}.html", server, "light", width=1280)
    try:
        page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=PAGE_TIMEOUT_MS)
        blocks = page.evaluate(_WIDE_CODE)
        assert blocks, f"{doc}: no code input shown"
        wide = [f"{b['needs']} > {b['width']} px: {b['line'][:90]}" for b in blocks if b["wide"]]
        assert not wide, f"{doc}: {len(wide)} of {len(blocks)} code inputs scroll sideways: {wide}"
    finally:
        page.close()
