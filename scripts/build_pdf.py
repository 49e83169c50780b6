"""The whole book as one PDF, printed offline by headless Chromium from the built site: `make pdf`.

Each page of _toc.yml, in order, is opened from the built site (served on
127.0.0.1; every request leaving it is refused) at the width of a printed
A4 column, so the charts lay themselves out for paper; the page's collapsed
blocks are opened (solutions, hidden queries, dropdowns), links to the site's
other pages become text (they would point at the print server) and Chromium
prints it with the site's print style sheet (book/_static/book.css: no site chrome, no
explorer inputs, wrapped code). The pages are merged with pypdf, one bookmark
per page, and written whole to _build/book.pdf. Builds the site first if
_build/html is missing.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.files import write_bytes_atomic  # noqa: E402

HTML = ROOT / "_build" / "html"
PDF = ROOT / "_build" / "book.pdf"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# An A4 sheet less 15 mm margins each side is 180 mm, 680 CSS px: the charts are laid out for that width.
COLUMN_PX = 680
MARGIN = {"top": "15mm", "bottom": "15mm", "left": "15mm", "right": "15mm"}
TIMEOUT_MS = 120_000

_READY = """() => [...document.querySelectorAll('.latch-chart')].every(el => el.dataset.laidOut === 'true')
    && document.querySelectorAll('mjx-container').length >= document.querySelectorAll('span.math, div.math').length"""


# A link to another page of the site would point at the print server, gone once the PDF is written: such
# links print as their text. Links within the page stay (Chromium makes them links inside the PDF), and so do
# links to the outside world (the references).
_UNLINK_OTHER_PAGES = """() => document.querySelectorAll('a[href]').forEach(a => {
    const target = new URL(a.href, location.href);
    if (target.origin === location.origin && target.pathname !== location.pathname) a.removeAttribute('href');
})"""


def toc_docs(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every document named in _toc.yml (root first), as paths without suffix, in reading order."""
    toc = yaml.safe_load(toc_path.read_text())
    docs = [toc["root"]]

    def walk(entries: list[dict[str, Any]]) -> None:
        for entry in entries or []:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections", []))
            walk(entry.get("chapters", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return [str(Path(d).with_suffix("")) for d in docs]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


def _serve(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def print_pages(site: Path, docs: list[str]) -> list[tuple[str, str, bytes]]:
    """Each doc printed to PDF by Chromium: (doc, its title, the PDF's bytes)."""
    from playwright.sync_api import sync_playwright

    server = _serve(site)
    base = next(server)
    out = []
    try:
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
                page.wait_for_timeout(300)
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
    finally:
        server.close()
    return out


def merge(parts: list[tuple[str, str, bytes]]) -> bytes:
    """The printed pages as one PDF, in order, with a bookmark at the start of each."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for _doc, title, data in parts:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(data)))
        writer.add_outline_item(title=title, page_number=start)
    writer.add_metadata({"/Title": "Latch contention, modelled"})
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
    """`make pdf`: build the site if it is missing, then the PDF."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PDF, help="where to write the PDF (default %(default)s)")
    parser.add_argument("docs", nargs="*", help="toc documents to print (default: the whole book)")
    args = parser.parse_args(argv)
    if not (HTML / "index.html").exists():
        status = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_site.py")], cwd=ROOT).returncode
        if status != 0:
            return status
    build_pdf(HTML, args.out, args.docs or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
