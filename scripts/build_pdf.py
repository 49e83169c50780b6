"""The whole book as one PDF, printed offline by headless Chromium from the built site: `make pdf`.

Each page of _toc.yml, in order, is opened from the built site (served on
127.0.0.1; every request leaving it is refused) at the width of a printed
A4 column, so the charts lay themselves out for paper; the page's collapsed
blocks are opened (solutions, hidden queries, dropdowns), links to the site's
other pages become text (they would point at the print server) and Chromium
prints it with the site's print style sheet (book/_static/print.css: no site chrome, no
explorer inputs, wrapped code, tables that fit the column with no word or number broken and their captions
kept with them). The pages are merged with pypdf, one bookmark per page, and numbered 1..N through the whole
book: Chromium numbers each print from 1, so the pages are printed without a footer and the footers (the
page's heading and its number in the book) are printed afterwards by Chromium as one overlay PDF, laid over the
pages one by one. The book is written whole to _build/book.pdf. `make pdf` builds the site from clean first,
so the PDF never prints a stale build.
"""

from __future__ import annotations

import argparse
import html
import io
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from pypdf import PdfReader, PdfWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from site_tools import BUILD, CHROMIUM, CHROMIUM_ARGS, HTML, ROOT, serve, toc_docs  # noqa: E402

from models.files import write_bytes_atomic  # noqa: E402

PDF = BUILD / "book.pdf"
# An A4 sheet less 15 mm margins each side is 180 mm, 680 CSS px: the charts are laid out for that width.
COLUMN_PX = 680
MARGIN = {"top": "15mm", "bottom": "15mm", "left": "15mm", "right": "15mm"}
# Each sheet's footer (heading and page number, in the bottom margin), as Chromium's own footer used to set it.
_FOOTERS_CSS = """@page { size: A4; margin: 0; }
html, body { margin: 0; padding: 0; }
.sheet { position: relative; height: 296mm; overflow: hidden; break-after: page; }
.sheet:last-child { break-after: auto; }
.footer { position: absolute; left: 15mm; right: 15mm; bottom: 6mm; text-align: center;
          font: 8px/1.2 sans-serif; color: #444; }"""
TIMEOUT_MS = 600_000  # the outer limit of each wait on a page (drawn, typeset): it only ends a page that hangs

_READY = """() => [...document.querySelectorAll('.latch-chart')].every(el => el.dataset.laidOut === 'true')
    && document.querySelectorAll('mjx-container').length >= document.querySelectorAll('span.math, div.math').length"""


# A link to another page of the site would point at the print server, gone once the PDF is written: such
# links print as their text. Links within the page stay (Chromium makes them links inside the PDF), and so do
# links to the outside world (the references).
_UNLINK_OTHER_PAGES = """() => document.querySelectorAll('a[href]').forEach(a => {
    const target = new URL(a.href, location.href);
    if (target.origin === location.origin && target.pathname !== location.pathname) a.removeAttribute('href');
})"""


def print_pages(site: Path, docs: list[str]) -> tuple[list[tuple[str, str, int, bytes]], bytes]:
    """Each doc printed to PDF by Chromium, without footers, as (doc, its heading, its number of pages, the PDF's
    bytes); and the footers of the whole book, one A4 sheet per printed page (footers_html)."""
    from playwright.sync_api import sync_playwright

    out = []
    with serve(site) as base:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            context = browser.new_context(viewport={"width": COLUMN_PX, "height": 1000}, color_scheme="light")
            outside: list[str] = []

            def route(r: Any) -> None:
                if r.request.url.startswith((base, "data:", "blob:", "about:")):
                    r.continue_()
                else:
                    outside.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            for doc in docs:
                page = context.new_page()
                page.set_default_timeout(TIMEOUT_MS)
                page.goto(f"{base}{doc}.html", wait_until="load")
                page.wait_for_function(_READY, timeout=TIMEOUT_MS)
                page.evaluate("() => window.latchPrepareForPrint && window.latchPrepareForPrint()")
                page.evaluate(_UNLINK_OTHER_PAGES)
                page.emulate_media(media="print")
                # Tables too wide for the column set smaller (measured in the print layout); any still too wide
                # is named, not hidden.
                too_wide = page.evaluate("() => window.latchFitTablesForPrint ? window.latchFitTablesForPrint() : []")
                for table in too_wide:
                    print(f"  warning: {doc}: table wider than the page at its smallest type: {table}", flush=True)
                # The charts redrawn for paper laid out, then two animation frames: the print layout is painted.
                page.wait_for_function(_READY, timeout=TIMEOUT_MS)
                page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
                heading = page.evaluate("() => (document.querySelector('article h1') || {textContent: document.title})"
                                        ".textContent.replace(/[#¶]\\s*$/, '').trim()")
                pdf = page.pdf(format="A4", margin=MARGIN, print_background=True)
                pages = len(PdfReader(io.BytesIO(pdf)).pages)
                out.append((doc, heading, pages, pdf))
                print(f"  {doc}: {heading[:60]} ({pages} pages)", flush=True)
                page.close()
            # The footers: one more print, of a page made here (nothing is fetched).
            sheets = [heading for _doc, heading, pages, _pdf in out for _ in range(pages)]
            page = context.new_page()
            page.set_content(footers_html(sheets), wait_until="load")
            footers = page.pdf(format="A4", margin={"top": "0", "bottom": "0", "left": "0", "right": "0"},
                               print_background=False)
            page.close()
            browser.close()
            if outside:
                raise RuntimeError(f"pages asked for something outside the site: {sorted(set(outside))[:5]}")
    return out, footers


def footers_html(titles: list[str]) -> str:
    """An HTML page of one A4 sheet per page of the book, blank but for the footer "heading · n" (the heading of
    the page of the site it prints), n running 1..N through the whole book (Chromium's own footer numbers each
    print from 1)."""
    sheets = "\n".join(f'<div class="sheet"><div class="footer">{html.escape(title)} &middot; {number}</div></div>'
                       for number, title in enumerate(titles, start=1))
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{_FOOTERS_CSS}</style></head><body>{sheets}</body></html>"


def merge(parts: list[tuple[str, str, int, bytes]], footers: bytes) -> bytes:
    """The printed pages as one PDF, in order, with a bookmark at the start of each doc and the footers laid
    over the pages one by one."""
    writer = PdfWriter()
    for _doc, heading, _pages, data in parts:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(data)))
        writer.add_outline_item(title=heading, page_number=start)
    footer_pages = PdfReader(io.BytesIO(footers)).pages
    if len(footer_pages) != len(writer.pages):
        raise RuntimeError(f"{len(footer_pages)} footers printed for {len(writer.pages)} pages")
    for page, footer in zip(writer.pages, footer_pages):
        page.merge_page(footer)
        page.compress_content_streams()  # the merged stream is written plain otherwise: the book's size five times
    writer.add_metadata({"/Title": yaml.safe_load((ROOT / "_config.yml").read_text())["title"]})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def build_pdf(site: Path = HTML, out: Path = PDF, docs: list[str] | None = None) -> Path:
    """Print the docs (default: the whole book in toc order) from the built site into one PDF, written whole."""
    docs = docs or toc_docs()
    missing = [d for d in docs if not (site / f"{d}.html").exists()]
    if missing:
        raise FileNotFoundError(f"pages missing from {site}: {missing}")
    start = time.monotonic()
    parts, footers = print_pages(site, docs)
    data = merge(parts, footers)
    write_bytes_atomic(out, data)
    pages = len(PdfReader(io.BytesIO(data)).pages)
    print(f"{out} ({len(data) / 1e6:.1f} MB, {pages} pages from {len(docs)} pages of the site) "
          f"in {time.monotonic() - start:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    """`make pdf` (after `make book`): the PDF from the built site; one line and exit status 1 on failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PDF, help="where to write the PDF (default %(default)s)")
    parser.add_argument("--site", type=Path, default=HTML, help="the built site to print (default %(default)s)")
    parser.add_argument("docs", nargs="*", help="toc documents to print (default: the whole book)")
    args = parser.parse_args(argv)
    try:
        build_pdf(args.site, args.out, args.docs or None)
    except Exception as error:  # noqa: BLE001 - a missing page, a page that never lays out, an outside request
        print(f"error: no PDF written: {type(error).__name__}: {error}"[:2000], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
