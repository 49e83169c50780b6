"""What the PDF build and the browser tests share about the built site: its pages in reading order, Debian's
Chromium and the flags it runs headless with, and a quiet local server for _build/html."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import yaml

ROOT = Path(__file__).resolve().parent.parent
# The build folder: _build at the root, or LATCH_BUILD_DIR (an absolute folder named _build) so that two builds
# of one checkout (a test run and an edit being tried) never write into each other.
BUILD = Path(os.environ.get("LATCH_BUILD_DIR") or ROOT / "_build")
if BUILD.name != "_build" or not BUILD.is_absolute():
    raise SystemExit(f"LATCH_BUILD_DIR={BUILD}: must be an absolute path to a folder named _build")
HTML = BUILD / "html"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


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


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file handler that logs nothing (the tests and the PDF build report what matters themselves)."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


@contextlib.contextmanager
def serve(site: Path, handler: type[http.server.SimpleHTTPRequestHandler] = QuietHandler) -> Iterator[str]:
    """The site served on 127.0.0.1 at a free port for the duration of the block; yields the base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
