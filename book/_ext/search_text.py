"""Sphinx extension: the text of every page, written to _static/search-text.js for the search page's excerpts.

Sphinx's search page fetches each hit's HTML to cut an excerpt from it; opened
from disk (file://) the browser refuses those fetches, so hits showed titles
only and logged CORS errors. This writes every page's article text (and where
each section and glossary term starts in it) into one script that the search
page loads with a <script> element, which works from disk and over HTTP
(book/_static/search-tidy.js reads it).

A table keeps its cells apart: cells are written with " | " between them (rows with " || "), and each body
row's cell offsets and its table's column headers are stored too, so that an excerpt from a row reads as
"header: value; header: value" rather than a run of flattened cells.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, NavigableString, Tag
from sphinx.application import Sphinx

from models.files import write_text_atomic

SCRIPT_NAME = "search-text.js"
GLOBAL_NAME = "latchSearchText"
# Parts of a page that are not its text: permalink signs, scripts, the code of notebook cells.
_DROP = ".headerlink, script, style, .cell_input, .copybtn"
_BLOCKS = {"p", "div", "section", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th",
           "caption", "pre", "table", "blockquote", "figure", "figcaption", "details", "summary"}
_SPACE = re.compile(r"\s+")
CELL_SEPARATOR = " | "
ROW_SEPARATOR = " || "


def _cells(row: Tag) -> list[Tag]:
    """A table row's own cells (not those of a table nested in one of them)."""
    return [cell for cell in row.find_all(["th", "td"], recursive=False)]


def _rows(table: Tag) -> list[Tag]:
    """A table's own rows, in order, whether or not they sit in a thead, tbody or tfoot."""
    return [row for row in table.find_all("tr") if row.find_parent("table") is table]


def header_rows(table: Tag) -> list[Tag]:
    """The rows that name a table's columns: its thead's, or else a first row made only of th cells."""
    rows = _rows(table)
    head = [row for row in rows if row.find_parent("thead") is not None]
    if not head and rows and all(cell.name == "th" for cell in _cells(rows[0])):
        head = rows[:1]
    return head


def column_headers(table: Tag) -> list[str]:
    """Each column's header text, colspans spread, a column's non-empty texts joined (a pandas frame puts its
    index name in a second header row)."""
    columns: list[list[str]] = []
    for row in header_rows(table):
        column = 0
        for cell in _cells(row):
            text = _SPACE.sub(" ", cell.get_text(" ")).strip()
            span = str(cell.get("colspan", "1"))
            for _ in range(int(span) if span.isdigit() else 1):
                while len(columns) <= column:
                    columns.append([])
                if text and text not in columns[column]:
                    columns[column].append(text)
                column += 1
    return [" ".join(texts) for texts in columns]


def page_text(body_html: str) -> dict[str, Any]:
    """A page's text with whitespace collapsed ("t"), the offset in it of each element id ("a"), each table's
    column headers ("h") and each body row as its table's number and its cells' [start, end] offsets ("r")."""
    soup = BeautifulSoup(body_html, "html.parser")
    for node in soup.select(_DROP):
        node.decompose()
    parts: list[str] = []
    length = 0
    anchors: dict[str, int] = {}
    headers: list[list[str]] = []
    rows: list[list[Any]] = []
    tables: dict[int, tuple[int, list[Tag]]] = {}  # id(table): its number, its header rows

    def add(text: str) -> None:
        nonlocal length
        text = _SPACE.sub(" ", text)
        if not text:
            return
        if text.startswith(" ") and (not parts or parts[-1].endswith(" ")):
            text = text[1:]
        if text:
            parts.append(text)
            length += len(text)

    def trimmed_end() -> int:
        """The offset just after the text so far, without a trailing space."""
        return length - 1 if parts and parts[-1].endswith(" ") else length

    def table_row(row: Tag) -> None:
        table = row.find_parent("table")
        if table is not None and id(table) not in tables:
            tables[id(table)] = (len(headers), header_rows(table))
            headers.append(column_headers(table))
        spans: list[list[int]] = []
        for i, cell in enumerate(_cells(row)):
            add(CELL_SEPARATOR if i else " ")
            start = length
            visit(cell, block=False)
            spans.append([start, max(start, trimmed_end())])
        add(ROW_SEPARATOR)
        if table is not None and spans and row not in tables[id(table)][1]:
            rows.append([tables[id(table)][0], spans])

    def visit(node: Tag, block: bool = True) -> None:
        ident = node.get("id")
        if isinstance(ident, str) and ident not in anchors:
            anchors[ident] = length
        if node.name == "tr":
            table_row(node)
            return
        if block and node.name in _BLOCKS:
            add(" ")
        walk(node)
        if block and node.name in _BLOCKS:
            add(" ")

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # not a comment or doctype
                    add(str(child))
            elif isinstance(child, Tag):
                visit(child)

    walk(soup)
    text = "".join(parts).rstrip()
    return {"t": text, "a": anchors, "h": headers, "r": rows}


def _collect(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Keep one written page's text. Only pages written in this run are seen: the book is always built from
    clean (scripts/build_site.py); an incremental build would list just the pages it rewrote."""
    if doctree is None or not context.get("body"):
        return
    app.env.latch_search_text = getattr(app.env, "latch_search_text", {})  # type: ignore[attr-defined]
    app.env.latch_search_text[pagename] = page_text(context["body"])  # type: ignore[attr-defined]


def _write(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    pages = getattr(app.env, "latch_search_text", {})
    text = json.dumps(dict(sorted(pages.items())), ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c")  # never closes a <script>
    write_text_atomic(Path(app.outdir) / "_static" / SCRIPT_NAME,
                      f"/* Generated by book/_ext/search_text.py: each page's text for search excerpts. */\n"
                      f"window.{GLOBAL_NAME} = {text};\n")


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the page-text collector and the writer of _static/search-text.js."""
    app.connect("html-page-context", _collect)
    app.connect("build-finished", _write)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": False}
