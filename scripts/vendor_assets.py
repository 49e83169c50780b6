"""Write the browser assets the static site serves itself into book/_vendor/, so no page needs a CDN.

- Vega + Vega-Lite + vega-embed: the single bundle shipped inside the pinned
  vl-convert-python wheel, wrapped in an IIFE (its top-level ``const``s would
  otherwise clash with other page scripts); it sets ``window.vegaEmbed``.
- MathJax 3: from the npm registry, pinned by package.json + package-lock.json
  (``npm ci``); only the files a page can load are copied.

book/_vendor/ is listed in html_static_path (its contents land in _static/)
but is not book/_static/, so Jupyter Book does not inject every .js it holds.
Run: ``python scripts/vendor_assets.py`` (the Makefile does, before each build).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from models.files import replace_folder, write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "book" / "_vendor"
VEGA_FILE = VENDOR / "vega" / "vega-embed-bundle.js"
MATHJAX_DIR = VENDOR / "mathjax"
# The parts of MathJax's es5 build a page can load: the combined TeX->CHTML component, its
# lazily loaded TeX extensions, CHTML fonts, and the menu/accessibility modules the menu may load.
MATHJAX_PARTS = ("tex-chtml.js", "input", "output/chtml", "ui", "a11y", "sre", "adaptors")


def vendor_vega() -> str:
    """Write the wrapped vega/vega-lite/vega-embed bundle; returns a version line."""
    import altair as alt
    import vl_convert as vlc

    bundle = vlc.javascript_bundle()
    if "window.vegaEmbed" not in bundle:
        raise SystemExit("vl_convert.javascript_bundle() no longer defines window.vegaEmbed: update vendor_assets.py")
    header = (f"/* vega-embed bundle from vl-convert-python {vlc.__version__} "
              f"(Vega-Lite {alt.VEGALITE_VERSION}); wrapped so its top-level names stay private. */\n")
    VEGA_FILE.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(VEGA_FILE, header + "(function () {\n" + bundle + "\n})();\n")
    return f"vega bundle: vl-convert-python {vlc.__version__}, Vega-Lite {alt.VEGALITE_VERSION}, {len(bundle):,} bytes"


def _npm_mathjax() -> Path:
    """node_modules/mathjax as pinned by package-lock.json, installing it with `npm ci` if absent or stale."""
    lock = json.loads((ROOT / "package-lock.json").read_text())
    want = lock["packages"]["node_modules/mathjax"]["version"]
    pkg = ROOT / "node_modules" / "mathjax" / "package.json"
    if not pkg.exists() or json.loads(pkg.read_text())["version"] != want:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm not found: install Node.js/npm (Debian: apt-get install -y npm) to vendor MathJax")
        subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT, check=True)
    got = json.loads(pkg.read_text())["version"]
    if got != want:
        raise SystemExit(f"node_modules/mathjax is {got}, package-lock.json pins {want}")
    return pkg.parent


def vendor_mathjax() -> str:
    """Copy the pinned MathJax 3 files the site needs (into a new folder swapped in whole); returns a version line."""
    src = _npm_mathjax() / "es5"

    def copy_parts(folder: Path) -> None:
        """Copy every part of MATHJAX_PARTS from the npm package into ``folder``."""
        for part in MATHJAX_PARTS:
            source, target = src / part, folder / part
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target)
            else:
                shutil.copy2(source, target)

    MATHJAX_DIR.parent.mkdir(parents=True, exist_ok=True)
    replace_folder(MATHJAX_DIR, copy_parts)
    version = json.loads((src.parent / "package.json").read_text())["version"]
    return f"MathJax {version} -> {MATHJAX_DIR.relative_to(ROOT)}"


def main() -> int:
    """Vendor every offline asset and report what was written."""
    print(vendor_vega())
    print(vendor_mathjax())
    return 0


if __name__ == "__main__":
    sys.exit(main())
