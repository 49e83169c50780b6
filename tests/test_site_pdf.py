"""The printed book (`make pdf`, scripts/build_pdf.py): the print style sheet in a browser, and the PDF itself.

The PDF of the whole book is printed once for this file from the site fixture's build (or the build folder's
book.pdf is reused when `make pdf` wrote it after the site was built; LATCH_BOOK_PDF=/path tests a given PDF,
e.g. one printed from an older site). Its text is read with pypdf: no number or table word is broken across
lines, no table's caption sits alone at a page's foot, and the pages are numbered 1..N through the book.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from pypdf import PdfReader

from site_support import (  # tests/ is on sys.path (pytest puts a test file's folder there)
    BUILD, DOCS, PAGE_TIMEOUT_MS, ROOT, at_rest, check_charts, check_contrast, open_page, settle,
)

pytestmark = pytest.mark.site

# The printed page's footer: "<heading of the page of the site> · <number in the book>", the last line of each
# page's text.
FOOTER = re.compile(r"·\s*(\d+)\s*$")
# A number as written in the book: 271,458 · 4480641 · 0.25 · 9.7 (a leading sign or a unit is another token).
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*")
# Where a line may break without breaking a word: after an identifier's underscore or dot (the site puts a <wbr>
# there), and after a hyphen, slash or dash before a letter ("96-core", "hand-off"). The PDF's text is joined
# there before it is searched.
ALLOWED_BREAK = re.compile(r"(?<=_)\s+(?=\w)|(?<=[A-Za-z][.])\s+(?=[A-Za-z])|(?<=\w[\-/–])\s+(?=[A-Za-z])")
# What the print style sheet hides, and math (typeset by MathJax: its text is not the HTML's).
NOT_PRINTED = (".live-panel-note, .widget-subarea, .jupyter-widgets, .vega-bindings, .headerlink, .math, "
               "mjx-container, script, style")


def squash(text: str) -> str:
    """Text as compared here: Unicode compatibility forms (the PDF's "ﬁ" is "fi"), one space between words."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def printed_text(text: str) -> str:
    """A PDF page's text without its footer, squashed, with lines rejoined where a break splits no word."""
    lines = text.rstrip().splitlines()
    if lines and FOOTER.search(lines[-1]):
        lines = lines[:-1]
    return ALLOWED_BREAK.sub("", squash("\n".join(lines)))


def article(site: Path, doc: str) -> Any:
    """A built page's article, without what print hides."""
    soup = BeautifulSoup((site / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")
    body = soup.select_one("article.bd-article")
    for hidden in body.select(NOT_PRINTED):
        hidden.decompose()
    return body


def heading(body: Any) -> str:
    """A page's title as the PDF's bookmark names it (its h1, without the permalink sign)."""
    return squash(body.select_one("h1").get_text("", strip=True).rstrip("#¶"))


def doc_pages(reader: PdfReader, headings: list[str]) -> dict[str, range]:
    """Each page's range of PDF pages (0-based), from the bookmarks that open its print."""
    starts = [(squash(item.title), reader.get_destination_page_number(item)) for item in reader.outline
              if not isinstance(item, list)]
    ends = [start for _title, start in starts[1:]] + [len(reader.pages)]
    ranges = {title: range(start, end) for (title, start), end in zip(starts, ends)}
    missing = [h for h in headings if h not in ranges]
    assert not missing, f"no bookmark for {missing}; bookmarks: {list(ranges)}"
    return ranges


@pytest.fixture(scope="module")
def book_pdf(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole book as `make pdf` prints it, from the site under test (printed here unless reusable)."""
    given = os.environ.get("LATCH_BOOK_PDF")
    if given:
        return Path(given)
    made = BUILD / "book.pdf"
    if made.exists() and made.stat().st_mtime > max((site / f"{d}.html").stat().st_mtime for d in DOCS):
        return made
    out = tmp_path_factory.mktemp("pdf") / "book.pdf"
    # The limit only ends a hung run (the book prints in one to two minutes).
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pdf.py"), "--site", str(site),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=3 * PAGE_TIMEOUT_MS / 1000)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def book_text(book_pdf: Path) -> list[str]:
    """Each PDF page's text (pypdf), footer and all."""
    return [page.extract_text() for page in PdfReader(str(book_pdf)).pages]


# ---------------------------------------------------------------- the PDF

def test_no_number_or_table_word_is_broken(site: Path, book_pdf: Path, book_text: list[str]) -> None:
    """Every number of the prose and the tables, and every word of a table cell, prints whole: the PDF's text
    of the page's own pages holds it ("271,458", not "271,4 58"; "behaviour", not "behavi our")."""
    reader = PdfReader(str(book_pdf))
    bodies = {doc: article(site, doc) for doc in DOCS}
    ranges = doc_pages(reader, [heading(body) for body in bodies.values()])
    broken: list[str] = []
    checked = 0
    for doc, body in bodies.items():
        text = " ".join(printed_text(book_text[i]) for i in ranges[heading(body)])
        cells = [squash(cell.get_text("", strip=False)) for cell in body.select("td, th")]
        prose = [squash(p.get_text("")) for p in body.select("p, li")]
        numbers = {n for piece in cells + prose for n in NUMBER.findall(piece)}
        words = {w for cell in cells for w in cell.split()}
        for token in sorted(numbers | words):
            checked += 1
            if ALLOWED_BREAK.sub("", token) not in text:
                broken.append(f"{doc}: {token!r}")
    assert checked > 1000, f"only {checked} tokens checked"
    assert not broken, f"{len(broken)} numbers or table words not printed whole, e.g. {broken[:25]}"


def test_no_caption_alone_on_a_page(site: Path, book_text: list[str]) -> None:
    """Each table's caption and its first row print on the same page: the row follows the caption on the page
    that holds it (a caption at a page's foot with its table overleaf fails)."""
    pages = [printed_text(text) for text in book_text]
    alone: list[str] = []
    captions = 0
    for doc in DOCS:
        for table in article(site, doc).select("table"):
            caption = table.find("caption")
            row = table.select_one("tbody tr")
            if caption is None or row is None or not squash(caption.get_text("")):
                continue
            captions += 1
            title = ALLOWED_BREAK.sub("", squash(caption.get_text("")))
            firsts = [ALLOWED_BREAK.sub("", squash(cell.get_text(""))).split()[0]
                      for cell in row.find_all(["td", "th"]) if squash(cell.get_text(""))]
            with_row = [i for i, text in enumerate(pages) if title in text
                        and all(first in text[text.rindex(title) + len(title):] for first in firsts)]
            if not with_row:
                where = [i + 1 for i, text in enumerate(pages) if title in text]
                alone.append(f"{doc}: {title[:50]!r} (pages {where})")
    assert captions > 50, f"only {captions} captions found"
    assert not alone, f"{len(alone)} captions apart from their table's first row: {alone[:20]}"


def test_pages_numbered_through_the_book(book_text: list[str]) -> None:
    """The footers number the pages 1..N through the whole book, not from 1 in each chapter."""
    numbers = [int(match.group(1)) if (match := FOOTER.search(text.rstrip())) else None for text in book_text]
    assert None not in numbers, f"pages without a page number: {[i + 1 for i, n in enumerate(numbers) if n is None][:10]}"
    restarts = [i + 1 for i, n in enumerate(numbers) if n != i + 1]
    assert not restarts, (f"page numbers do not run 1..{len(numbers)}: pages {restarts[:10]} are numbered "
                          f"{[numbers[i - 1] for i in restarts[:10]]}")


def test_pdf_of_the_book(site: Path, tmp_path: Path) -> None:
    """`make pdf` prints the book's pages in toc order into one PDF (here two of them): every page's text, the
    solutions included, one bookmark per page, the page numbers running on from one page of the site to the
    next, no link to the print server, written whole."""
    docs = ["book/preface", "notebooks/07_cci_memory_grants"]
    out = tmp_path / "part.pdf"
    # The script `make pdf` runs, in its own process (it drives its own Chromium); the limit only ends a hung run
    # (two pages print in seconds).
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pdf.py"), "--site", str(site),
                           "--out", str(out), *docs], cwd=ROOT, capture_output=True, text=True,
                          timeout=PAGE_TIMEOUT_MS / 1000)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    reader = PdfReader(str(out))
    pages = [page.extract_text() for page in reader.pages]
    text = "\n".join(pages)
    assert len(reader.pages) >= 10, f"{len(reader.pages)} pages"
    assert [item.title for item in reader.outline][0] == "Latch contention, modelled"
    assert len(reader.outline) == len(docs)
    assert "error 8645" in text and "What each chapter shows" in text
    second = reader.get_destination_page_number(reader.outline[1])
    assert second > 0 and FOOTER.search(pages[second].rstrip()).group(1) == str(second + 1), \
        f"chapter 7 starts on page {second + 1}, numbered {pages[second].rstrip()[-40:]!r}"
    # A solution of chapter 7's exercises sits in a closed dropdown on the site; in the PDF it is printed.
    soup = BeautifulSoup((site / f"{docs[1]}.html").read_text(encoding="utf-8"), "html.parser")
    hidden = [d.select_one(".sd-summary-content, .sd-card-body") for d in soup.select("details.sd-dropdown")]
    words = [p.get_text(" ", strip=True)[:30] for h in hidden if h for p in h.select("p")[:1]]
    assert words, "chapter 7 has no solution dropdowns to check"
    squashed = " ".join(text.split())
    assert any(w and " ".join(w.split()[:4]) in squashed for w in words), f"no solution printed: {words[:3]}"
    assert [p.name for p in tmp_path.iterdir()] == ["part.pdf"], "a temporary file was left behind"
    # No link points at the print server (gone once the PDF is written).
    uris = [annot.get_object()["/A"].get("/URI", "") for page in reader.pages for annot in page.get("/Annots") or []
            if "/A" in annot.get_object()]
    assert not [u for u in uris if "127.0.0.1" in u], f"links to the print server: {uris[:5]}"


# ---------------------------------------------------------------- the print style sheet in a browser

_PRINT_REPORT = """() => {
    // Not shown: no box, or inside a closed <details> (its content is content-visibility: hidden).
    const shown = (el) => el.checkVisibility({visibilityProperty: true}) && el.getBoundingClientRect().height > 0;
    const closed = [...document.querySelectorAll('article details:not([open])')];
    return {
        chrome: [...document.querySelectorAll('.bd-header, .bd-header-article, .bd-sidebar-primary, '
                 + '.bd-sidebar-secondary, .bd-footer, .prev-next-area')].filter(shown).map(el => el.className),
        controls: [...document.querySelectorAll('.vega-bindings, .vega-bind, .widget-subarea, .live-panel-note')]
                  .filter(shown).length,
        details: closed.length + document.querySelectorAll('article details[open]').length,
        hidden: closed.filter(d => [...d.children].some(c => c.tagName !== 'SUMMARY' && !shown(c))).length,
        uncut: [...document.querySelectorAll('article pre')].filter(p => shown(p) && p.scrollWidth > p.clientWidth + 1)
               .map(p => p.textContent.slice(0, 40)),
    };
}"""


def test_print_stylesheet(browser_context: Any, server: str) -> None:
    """In print the site's chrome and the explorers' inputs are gone, every collapsed block (solutions, hidden
    queries, dropdowns) shows its content, and no code line runs past the page; a page read in dark mode prints
    light (white paper), its charts drawn light again, every text readable."""
    page, log = open_page(browser_context, f"{server}notebooks/03_fairness.html", server, "dark", width=680)
    try:
        check_charts(page)
        page.emulate_media(media="print")  # the style sheet alone first: closed blocks print open
        at_rest(page)
        report = page.evaluate(_PRINT_REPORT)
        assert report["details"] >= 3, f"the chapter has no collapsed blocks to check: {report}"
        assert not report["chrome"], f"site chrome printed: {report['chrome']}"
        assert not report["controls"], f"explorer controls printed: {report}"
        assert not report["hidden"], f"collapsed blocks that print closed: {report}"
        assert not report["uncut"], f"code lines cut in print: {report['uncut']}"
        page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")  # what the print dialog does
        check_contrast(page, "light")
        page.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
        page.emulate_media(media="screen")
        page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'", timeout=PAGE_TIMEOUT_MS)
        settle(page)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.emulate_media(media="screen")
        page.close()


# In print: every table cell's wrapping rules, whether the table fits its column, and its caption's break rule.
_PRINT_TABLES = """() => [...document.querySelectorAll('article table')].map(table => {
    const cells = [...table.querySelectorAll('td, th')];
    const caption = table.closest('.latch-table-frame')?.querySelector('.latch-table-caption')
        || table.querySelector('caption');
    return {
        id: table.id || table.textContent.trim().slice(0, 30),
        width: table.offsetWidth,
        column: table.parentElement.clientWidth,
        inside: cells.filter(c => {
            const s = getComputedStyle(c);
            return s.overflowWrap === 'anywhere' || s.wordBreak === 'break-all' || s.wordBreak === 'break-word'
                || [...c.querySelectorAll('code, span')].some(e => getComputedStyle(e).overflowWrap === 'anywhere');
        }).map(c => c.textContent.trim().slice(0, 20)),
        numbersWrap: cells.filter(c => c.tagName === 'TD' && /^[\\d.,\\s]+$/.test(c.textContent.trim())
                                  && getComputedStyle(c).whiteSpace !== 'nowrap').length,
        captionBreak: caption ? getComputedStyle(caption).breakAfter : 'none',
    };
})"""


@pytest.mark.parametrize("doc", ["notebooks/03_fairness", "notebooks/07_cci_memory_grants", "notebooks/09_your_server"])
def test_print_tables_fit_without_breaking_words(browser_context: Any, server: str, doc: str) -> None:
    """In print (the A4 column, 680 px) no table cell may break inside a word or a number, a cell that is a
    number keeps its line, every table fits the column (a wide one set smaller), and every caption is kept with
    its table."""
    page, log = open_page(browser_context, f"{server}{doc}.html", server, "light", width=680)
    try:
        check_charts(page)
        page.evaluate("() => window.latchPrepareForPrint()")
        page.emulate_media(media="print")
        too_wide = page.evaluate("() => window.latchFitTablesForPrint()")
        at_rest(page)
        tables = page.evaluate(_PRINT_TABLES)
        assert len(tables) >= 5, f"only {len(tables)} tables"
        assert not too_wide, f"tables wider than the page at their smallest type: {too_wide}"
        assert not [t for t in tables if t["width"] > t["column"] + 1], \
            f"tables wider than the column: {[t for t in tables if t['width'] > t['column'] + 1]}"
        assert not [t for t in tables if t["inside"]], \
            f"cells that may break inside a word: {[(t['id'], t['inside'][:3]) for t in tables if t['inside']]}"
        assert not [t for t in tables if t["numbersWrap"]], \
            f"numeric cells that may wrap: {[(t['id'], t['numbersWrap']) for t in tables if t['numbersWrap']]}"
        assert all(t["captionBreak"] in ("avoid", "none") for t in tables), \
            f"captions that may end a page: {[t['id'] for t in tables if t['captionBreak'] not in ('avoid', 'none')]}"
        assert any(t["captionBreak"] == "avoid" for t in tables)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.emulate_media(media="screen")
        page.close()
