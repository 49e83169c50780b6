"""The whole book as one PDF, printed offline by headless Chromium from the built site: `make pdf`.

Each page of _toc.yml, in order, is opened from the built site (served on
127.0.0.1; every request leaving it is refused) at the width of a printed
A4 column, so the charts lay themselves out for paper; the page's collapsed
blocks are opened (solutions, hidden queries, dropdowns), links to the site's
other pages become text (they would point at the print server) and Chromium
prints it with the site's print style sheet (book/_static/book.css: no site chrome, no
explorer inputs, wrapped code). The pages are merged with pypdf, one bookmark
per page, and written whole to _build/book.pdf. `make pdf` builds the site from clean first, so the PDF
never prints a stale build.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from site_tools import BUILD, CHROMIUM, CHROMIUM_ARGS, HTML, ROOT, serve, toc_docs  # noqa: E402

from models.files import write_bytes_atomic  # noqa: E402

PDF = BUILD / "book.pdf"
# An A4 sheet less 15 mm margins each side is 180 mm, 680 CSS px: the charts are laid out for that width.
COLUMN_PX = 680
MARGIN = {"top": "15mm", "bottom": "15mm", "left": "15mm", "right": "15mm"}
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


def print_pages(site: Path, docs: list[str]) -> list[tuple[str, str, bytes]]:
    """Each doc printed to PDF by Chromium: (doc, its title, the PDF's bytes)."""
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
                # The charts redrawn for paper laid out, then two animation frames: the print layout is painted.
                page.wait_for_function(_READY, timeout=TIMEOUT_MS)
                page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
                title = page.evaluate("() => (document.querySelector('article h1') || {textContent: document.title})"
                                      ".textContent.replace(/[#¶]\\s*$/, '').trim()")
                pdf = page.pdf(format="A4", margin=MARGIN, print_background=True, display_header_footer=True,
                               header_template="<span></span>",
                               footer_template='<div style="font-size:8px;width:100%;text-align:center;color:#444">'
                                               '<span class="title"></span> &middot; <span class="pageNumber"></span>'
                                               '</div>')
                out.append((doc, title, pdf))
                print(f"  {doc}: {title[:60]}", flush=True)
                page.close()
            browser.close()
            if outside:
                raise RuntimeError(f"pages asked for something outside the site: {sorted(set(outside))[:5]}")
    return out


def merge(parts: list[tuple[str, str, bytes]]) -> bytes:
    """The printed pages as one PDF, in order, with a bookmark at the start of each."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for _doc, title, data in parts:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(data)))
        writer.add_outline_item(title=title, page_number=start)
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
    data = merge(print_pages(site, docs))
    write_bytes_atomic(out, data)
    print(f"{out} ({len(data) / 1e6:.1f} MB, {len(docs)} pages of the site) in {time.monotonic() - start:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    """`make pdf` (after `make book`): the PDF from the built site; one line and exit status 1 on failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PDF, help="where to write the PDF (default %(default)s)")
    parser.add_argument("docs", nargs="*", help="toc documents to print (default: the whole book)")
    args = parser.parse_args(argv)
    try:
        build_pdf(HTML, args.out, args.docs or None)
    except Exception as error:  # noqa: BLE001 - a missing page, a page that never lays out, an outside request
        print(f"error: no PDF written: {type(error).__name__}: {error}"[:2000], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
