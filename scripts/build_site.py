"""Build the static site from clean, offline, with warnings as errors: the one build used by `make book` and the tests.

Steps: vendor the offline assets (scripts/vendor_assets.py), delete _build,
run ``jupyter-book build --all -W -n --keep-going .``, write /favicon.ico from the
book's icon, then scan the built HTML for any script, style sheet, font or image
loaded from outside the site. Exit status is non-zero on any failure.

No notebook runs: the pages show the notebooks' stored outputs (``execute_notebooks: "off"`` in
_config.yml), the ones `make execute` writes and nbval in `make test` re-runs and compares. Their
charts and the prose's inline values are put in the site's form by book/_ext/stored_outputs.py, which
fails the build on an inline value the notebook does not store for its prose.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import vl_convert

from models.files import write_bytes_atomic, write_text_atomic

from site_tools import BUILD, HTML, ROOT  # scripts/ is this file's folder, first on sys.path
# Attributes through which a page loads something (an <a href> to a source is only a link).
_LOAD_ATTR = re.compile(r"<(script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(src|href)=\"([^\"]*)\"", re.I)
_CSS_URL = re.compile(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", re.I)
_LINK_REL = re.compile(r"\brel=\"([^\"]*)\"", re.I)
ICON = ROOT / "book" / "_static" / "favicon.svg"
ICON_SIZES = (16, 32, 48)  # what a browser tab and a desktop shortcut ask /favicon.ico for


def external_loads(html_dir: Path = HTML) -> list[str]:
    """Every resource a built page or style sheet would fetch from outside the site ("file: url")."""
    found = []
    for page in sorted(html_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        for match in _LOAD_ATTR.finditer(text):
            tag, url = match.group(1).lower(), match.group(3)
            if tag == "link":
                rel = _LINK_REL.search(match.group(0))
                if rel and rel.group(1).lower() in {"canonical", "alternate", "author", "license"}:
                    continue
            if re.match(r"^(https?:)?//", url):
                found.append(f"{page.relative_to(html_dir)}: <{tag}> {url}")
    for sheet in sorted(html_dir.rglob("*.css")):
        for url in _CSS_URL.findall(sheet.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{sheet.relative_to(html_dir)}: url({url})")
    return found


def favicon_ico(svg: str, sizes: tuple[int, ...] = ICON_SIZES) -> bytes:
    """The book's SVG icon as a .ico holding one PNG per size (the ICO format has held PNG images since Windows
    Vista; every browser reads them). The pages link the SVG; /favicon.ico answers whatever asks the root for it
    (the root page's redirect, a feed reader, a shortcut)."""
    width = float(re.search(r'\bwidth="([0-9.]+)"', svg).group(1))
    images = [vl_convert.svg_to_png(svg, scale=size / width) for size in sizes]
    header = struct.pack("<HHH", 0, 1, len(images))  # reserved, type 1 (icon), image count
    offset = len(header) + 16 * len(images)
    entries = b""
    for size, png in zip(sizes, images):
        # width, height (0 means 256), colours, reserved, planes, bits per pixel, bytes, offset
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png), offset)
        offset += len(png)
    return header + entries + b"".join(images)


def build(python: str = sys.executable) -> int:
    """Vendor assets, build from clean, check for external loads; returns the exit status."""
    start = time.monotonic()
    subprocess.run([python, str(ROOT / "scripts" / "vendor_assets.py")], cwd=ROOT, check=True)
    shutil.rmtree(BUILD, ignore_errors=True)
    jb = Path(python).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", "--all", "-W", "-n", "--keep-going",
           "--path-output", str(BUILD.parent), "."]
    print("+", " ".join(cmd), flush=True)
    status = subprocess.run(cmd, cwd=ROOT).returncode
    if status != 0:
        print(f"site build FAILED (exit {status}): see the warnings above", file=sys.stderr)
        return status
    if not (HTML / "index.html").exists():
        print("site build produced no _build/html/index.html", file=sys.stderr)
        return 1
    write_bytes_atomic(HTML / "favicon.ico", favicon_ico(ICON.read_text(encoding="utf-8")))
    leaks = external_loads()
    if leaks:
        print("the built site loads resources from outside itself:", *leaks, sep="\n  ", file=sys.stderr)
        return 1
    write_text_atomic(BUILD / "html.ok", f"built in {time.monotonic() - start:.1f} s\n")
    print(f"\nSite built in {time.monotonic() - start:.0f} s: {HTML}/index.html")
    shown = HTML.relative_to(ROOT) if HTML.is_relative_to(ROOT) else HTML
    print(f"Serve it with:  python -m http.server -d {shown} 8000   (then open http://127.0.0.1:8000)")
    print(f"or open file://{HTML}/index.html directly.")
    return 0


if __name__ == "__main__":
    sys.exit(build())
