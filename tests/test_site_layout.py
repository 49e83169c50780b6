"""The text column's blocks and tables on the built site (issue 43): code, outputs and tables fit the column at a
desktop width and on a phone, in light and dark, so that none scrolls sideways (a wide table is set smaller on a
desktop and laid out as cards on a phone); no page scrolls sideways on a phone; every table header names its
column; and no number in a table breaks across lines.  The layout is book/_static/layout.css with the table marks
of book/_static/site-chrome.js (3. table frames)."""
from __future__ import annotations

from typing import Any

import pytest

from site_support import VIEWS, CHAPTERS, PAGE_TIMEOUT_MS, at_rest, check_math, open_page

pytestmark = pytest.mark.site

# Every chapter, and the pages of prose with code, formulas or tables.
PAGES = CHAPTERS + ["book/how-to-read", "book/capture-script", "book/glossary"]
DESKTOP, PHONE = 1280, 390
PHONE_MAX = 600  # layout.css's phone width: below it every block wraps and a wide table becomes cards

# Per page: every <pre> (code input, output, code of the prose) and every table that is wider than the box it sits
# in, collapsed blocks opened; the page's own width; empty header cells; and every number in a table cell whose
# glyphs fall on more than one line ("271,4 / 58").
_OPEN_ALL = """() => {
    document.querySelectorAll('article.bd-article details').forEach(d => { d.open = true; });
    document.querySelectorAll('article.bd-article .toggle-hidden').forEach(el => el.classList.remove('toggle-hidden'));
}"""
_LAYOUT_REPORT = r"""() => {
    const article = document.querySelector('article.bd-article');
    const label = el => el.textContent.trim().replace(/\s+/g, ' ').slice(0, 60);
    const shown = el => el.getClientRects().length > 0;
    const blocks = [...article.querySelectorAll('pre')].filter(shown).filter(p => p.scrollWidth > p.clientWidth + 1)
        .map(p => ({kind: p.closest('.cell_input') ? 'input' : p.closest('.cell_output') ? 'output' : 'prose',
                    width: p.scrollWidth, box: p.clientWidth, text: label(p)}));
    const captionOf = t => { const frame = t.closest('.latch-table-frame');
        const title = frame && frame.querySelector('.latch-table-caption');
        return (title || t.querySelector('caption') || t).textContent.trim().replace(/\s+/g, ' '); };
    const tables = [], emptyHeaders = [], brokenNumbers = [];
    let tableCount = 0, cards = 0;
    for (const t of article.querySelectorAll('table')) {
        if (!shown(t)) continue;
        tableCount++;
        if (t.classList.contains('latch-cards')) cards++;
        const box = t.closest('.latch-table-scroll') || t.parentElement;
        const right = article.getBoundingClientRect().right;
        if (box.scrollWidth > box.clientWidth + 1 || t.getBoundingClientRect().right > right + 1)
            tables.push({caption: captionOf(t).slice(0, 70), width: t.scrollWidth, box: box.clientWidth});
        for (const th of t.querySelectorAll('th'))
            if (!th.textContent.trim()) emptyHeaders.push(captionOf(t).slice(0, 60));
        for (const cell of t.querySelectorAll('td, th')) {
            if (!shown(cell)) continue;
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            while (walker.nextNode()) {
                const node = walker.currentNode;
                for (const m of node.nodeValue.matchAll(/\d[\d,.]*\d/g)) {
                    const range = document.createRange();
                    range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
                    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
                    if (tops.size > 1) brokenNumbers.push(m[0] + ' in ' + label(cell));
                }
            }
        }
    }
    return {blocks, tables, emptyHeaders, brokenNumbers, tableCount, cards,
            page: document.documentElement.scrollWidth, view: window.innerWidth};
}"""


# Display math and the text outputs' lines, measured against their boxes (collapsed blocks opened). A display
# formula's box is the column (layout.css lets it scroll in its own box, which a formula should never need); a text
# output wraps at the column's edge (layout.css), so a line longer than its box is measured in the block's own font.
# A table row is a line with two or more gaps of 2+ spaces between its fields: wrapped, its columns no longer align.
_MATH_AND_ROWS = r"""() => {
    const article = document.querySelector('article.bd-article');
    const right = article.getBoundingClientRect().right;
    const label = el => el.textContent.trim().replace(/\s+/g, ' ').slice(0, 60);
    const wideMath = [...article.querySelectorAll('mjx-container[display="true"]')]
        .filter(m => m.getClientRects().length > 0)
        .filter(m => m.scrollWidth > m.clientWidth + 1 || m.getBoundingClientRect().right > right + 1)
        .map(m => ({width: m.scrollWidth, box: m.clientWidth,
                    tex: (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 60)}));
    const ruler = document.createElement('canvas').getContext('2d');
    const wrappedRows = [];
    for (const pre of article.querySelectorAll('.cell_output pre')) {
        if (!pre.getClientRects().length) continue;
        const style = getComputedStyle(pre);
        ruler.font = style.font;
        const box = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        for (const line of pre.textContent.split('\n'))
            if ((line.match(/\S {2,}(?=\S)/g) || []).length >= 2 && ruler.measureText(line).width > box + 1)
                wrappedRows.push({width: Math.round(ruler.measureText(line).width), box: Math.round(box),
                                  row: line.trim().slice(0, 60)});
    }
    return {wideMath, wrappedRows};
}"""


def layout_report(context: Any, server: str, doc: str, width: int, scheme: str) -> dict[str, Any]:
    """The page at ``width`` px in ``scheme``, math typeset and tables laid out for the width: its layout report,
    with its display math and text outputs' rows (_MATH_AND_ROWS) measured in the same visit."""
    page, _ = open_page(context, f"{server}{doc}.html", server, color_scheme=scheme, width=width)
    try:
        page.evaluate("() => document.fonts.ready.then(() => true)")  # widths are measured in the page's own fonts
        check_math(page)
        page.evaluate("() => document.fonts.ready.then(() => true)")  # MathJax's own fonts, loaded as it typesets
        page.evaluate(_OPEN_ALL)
        at_rest(page)  # a table frame lays its table out again in the frame after its width changed (opened)
        return {**page.evaluate(_LAYOUT_REPORT), **page.evaluate(_MATH_AND_ROWS)}
    finally:
        page.close()


@pytest.mark.parametrize("width,scheme", VIEWS)
@pytest.mark.parametrize("doc", PAGES)
def test_blocks_and_tables_fit_the_column(browser_context: Any, server: str, doc: str, width: int, scheme: str) -> None:
    """In one visit of the page:

    - no code input, output or code block of the prose scrolls sideways (a code input's lines are kept short enough
      for the desktop column and wrap on a phone; the others wrap);
    - no table is wider than its box (on a desktop a wide table is set smaller, on a phone it is cards), and on a
      phone the page does not scroll sideways;
    - every table header cell names its column (a screen reader reads it with each cell; a phone's card shows it
      beside each value), and every number in a table cell sits on one line (no "271,4 / 58");
    - no display formula is wider than the column (a long one is set over aligned lines), and at 1,280 px no text
      output's table row is longer than its block (it would wrap and misalign its columns; on a phone a printed
      table of more than about 37 characters cannot fit, so there its rows may wrap).
    """
    report = layout_report(browser_context, server, doc, width, scheme)
    where = f"{doc} at {width} px ({scheme})"
    assert not report["blocks"], f"{where}: blocks that scroll sideways: {report['blocks']}"
    assert not report["tables"], f"{where}: tables wider than the column: {report['tables']}"
    if width <= PHONE_MAX:
        assert report["page"] <= report["view"], f"{where} scrolls sideways: {report['page']} px"
    assert not report["emptyHeaders"], f"{where}: tables with an empty header cell: {report['emptyHeaders']}"
    assert not report["brokenNumbers"], f"{where}: numbers broken across lines: {report['brokenNumbers']}"
    assert not report["wideMath"], f"{where}: formulas wider than the column: {report['wideMath']}"
    if width > PHONE_MAX:
        assert not report["wrappedRows"], f"{where}: table rows wider than their block: {report['wrappedRows']}"


_CARDS = """(caption) => {
    const frame = [...document.querySelectorAll('.latch-table-frame')].find(f => (f.querySelector('.latch-table-caption')
        || {textContent: ''}).textContent.includes(caption));
    if (!frame) return null;
    const table = frame.querySelector('table'), row = table.tBodies[0].rows[0];
    return {cards: table.classList.contains('latch-cards'), thead: table.tHead.getBoundingClientRect().height,
            labels: [...row.cells].slice(1).map(c => getComputedStyle(c, '::before').content),
            rowWidth: row.getBoundingClientRect().width, box: frame.getBoundingClientRect().width};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_wide_table_is_cards_on_a_phone(browser_context: Any, server: str, scheme: str) -> None:
    """Chapter 7's version table (seven columns) is a card per rule on a phone, each value labelled with its version
    and the card no wider than the column; at 1,280 px it is a table again."""
    page, _ = open_page(browser_context, f"{server}notebooks/07_cci_memory_grants.html", server,
                        color_scheme=scheme, width=PHONE)
    try:
        at_rest(page)
        phone = page.evaluate(_CARDS, "What is known on each SQL Server version")
        assert phone is not None, "chapter 7's version table is missing"
        assert phone["cards"] and phone["thead"] <= 1, phone
        assert '"2016"' in phone["labels"] and '"2022"' in phone["labels"], phone
        assert phone["rowWidth"] <= phone["box"] + 1, phone
        page.set_viewport_size({"width": DESKTOP, "height": 900})
        page.wait_for_function("""() => [...document.querySelectorAll('table')].every(t =>
            !t.classList.contains('latch-cards'))""", timeout=PAGE_TIMEOUT_MS)
        desktop = page.evaluate(_CARDS, "What is known on each SQL Server version")
        assert not desktop["cards"] and desktop["thead"] > 1, desktop
    finally:
        page.close()
