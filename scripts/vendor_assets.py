"""Write the browser assets the static site serves itself into book/_vendor/, so no page needs a CDN.

- Vega + Vega-Lite + vega-embed: the single bundle shipped inside the pinned
  vl-convert-python wheel, wrapped in an IIFE (its top-level ``const``s would
  otherwise clash with other page scripts); it sets ``window.vegaEmbed``.
- MathJax 3: from the npm registry, pinned by package.json + package-lock.json
  (``npm ci``); only the files a page can load are copied.
- Font Awesome, cut to the chrome's icons: pydata-sphinx-theme draws its icons (menu, search, download, full
  screen, theme switch, sidebar toggles, previous/next, admonition marks) from Font Awesome's web fonts, which
  it ships whole (300 KB for three faces, and a 1.5 MB script that book/_templates/layout.html leaves out).
  Each face is cut with subset-font (harfbuzz's hb-subset; pinned in package.json) to the glyphs the two
  themes name (an icon class in their templates, Python or scripts, or a glyph their style sheets draw), and
  written under the theme's own name, so the copy in html_static_path replaces the theme's in _static/.

book/_vendor/ is listed in html_static_path (its contents land in _static/)
but is not book/_static/, so Jupyter Book does not inject every .js it holds.
Run: ``python scripts/vendor_assets.py`` (the Makefile does, before each build).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pydata_sphinx_theme
import sphinx_book_theme

from models.files import replace_folder, write_bytes_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "book" / "_vendor"
VEGA_FILE = VENDOR / "vega" / "vega-embed-bundle.js"
MATHJAX_DIR = VENDOR / "mathjax"
# The parts of MathJax's es5 build a page can load: the combined TeX->CHTML component, its
# lazily loaded TeX extensions, CHTML fonts, and the menu/accessibility modules the menu may load.
MATHJAX_PARTS = ("tex-chtml.js", "input", "output/chtml", "ui", "a11y", "sre", "adaptors")
# The two themes' folders (templates, components, Python-made buttons, scripts, style sheets).
THEME_DIRS = (Path(pydata_sphinx_theme.__file__).parent, Path(sphinx_book_theme.__file__).parent)
FA_FONTS = THEME_DIRS[0] / "theme" / "pydata_sphinx_theme" / "static" / "vendor" / "fontawesome" / "webfonts"
FA_STYLE = THEME_DIRS[0] / "theme" / "pydata_sphinx_theme" / "static" / "styles" / "pydata-sphinx-theme.css"
# Where the cut fonts go: the theme's own path under _static/, which html_static_path's copy overwrites.
FA_TARGET = VENDOR / "vendor" / "fontawesome" / "webfonts"
# Font Awesome's icon classes in the theme's style sheet: ".fa-bars:before,.fa-navicon:before{content:"\f0c9"}".
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')
_ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")
_PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]|\\(?:e|f)[0-9a-f]{3}\b")
# subset-font (CommonJS) in node: reads [[source, target format]], the text to keep; prints base64 fonts.
_SUBSET_JS = """
const subsetFont = require("subset-font");
const fs = require("fs");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
Promise.all(job.fonts.map(([source, format]) => subsetFont(fs.readFileSync(source), job.text, {targetFormat: format})))
  .then((fonts) => process.stdout.write(JSON.stringify(fonts.map((font) => font.toString("base64")))));
"""


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


def npm_package(name: str) -> Path:
    """node_modules/<name> as pinned by package-lock.json, installing every pinned package with `npm ci` if it
    is absent or stale (MathJax for the site; subset-font to cut fonts; axe-core for the tests only)."""
    lock = json.loads((ROOT / "package-lock.json").read_text())
    root = lock["packages"][""]
    pinned = {package: lock["packages"][f"node_modules/{package}"]["version"]
              for package in {**root.get("dependencies", {}), **root.get("devDependencies", {})}}

    def stale() -> list[str]:
        """The pinned top-level packages missing from node_modules or at another version."""
        out = []
        for package, version in pinned.items():
            manifest = ROOT / "node_modules" / package / "package.json"
            if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
                out.append(f"{package} {version}")
        return out

    if stale():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm not found: install Node.js/npm (Debian: apt-get install -y npm) to vendor the assets")
        subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT, check=True)
    if left := stale():
        raise SystemExit(f"node_modules does not hold what package-lock.json pins: {left}")
    return ROOT / "node_modules" / name


def vendor_mathjax() -> str:
    """Copy the pinned MathJax 3 files the site needs (into a new folder swapped in whole); returns a version line."""
    src = npm_package("mathjax") / "es5"

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


def chrome_icon_text() -> str:
    """Every Font Awesome glyph the themes can show, as text: the icon classes their templates, Python and scripts
    name (fa-bars, fas fa-download), mapped through the style sheet's icon rules, and each glyph a rule of their
    style sheets draws itself (the admonition marks, breadcrumb arrows and brand links of --pst-icon-*)."""
    style = FA_STYLE.read_text(encoding="utf-8")
    codepoints = {name.removeprefix(".fa-").removesuffix(":before"): chr(int(code, 16))
                  for names, code in _ICON_RULE.findall(style) for name in names.split(",")}
    sources = [path for folder in THEME_DIRS for path in folder.rglob("*")
               if path.suffix in {".html", ".py", ".js"} and path.name != "fontawesome.js" and path.is_file()]
    named = {codepoints[name.removeprefix("fa-")] for path in sources
             for name in _ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace"))
             if name.removeprefix("fa-") in codepoints}
    sheets = [_ICON_RULE.sub("", style)] + [path.read_text(encoding="utf-8") for folder in THEME_DIRS
                                            for path in folder.rglob("*.css") if path != FA_STYLE]
    drawn = {chr(int(glyph[1:], 16)) if glyph.startswith("\\") else glyph
             for sheet in sheets for glyph in _PRIVATE_USE.findall(sheet)}
    if len(named) < 10:
        raise SystemExit(f"found only {len(named)} Font Awesome icons in the themes: update vendor_assets.py")
    return "".join(sorted(named | drawn))


def vendor_icons() -> str:
    """Write the theme's Font Awesome faces (woff2 and ttf) cut to the chrome's glyphs; returns a size line."""
    text = chrome_icon_text()
    sources = sorted(FA_FONTS.glob("fa-*"))
    fonts = [(str(path), "woff2" if path.suffix == ".woff2" else "sfnt") for path in sources]
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node not found: install Node.js/npm (Debian: apt-get install -y npm) to cut the icon fonts")
    npm_package("subset-font")
    done = subprocess.run([node, "-e", _SUBSET_JS], cwd=ROOT, input=json.dumps({"fonts": fonts, "text": text}),
                          capture_output=True, text=True, check=True)
    before = after = 0
    FA_TARGET.mkdir(parents=True, exist_ok=True)
    for path, font in zip(sources, json.loads(done.stdout)):
        data = base64.b64decode(font)
        write_bytes_atomic(FA_TARGET / path.name, data)
        before, after = before + path.stat().st_size, after + len(data)
    return (f"Font Awesome: {len(text)} glyphs of the chrome, {len(sources)} files {before:,} -> {after:,} bytes "
            f"-> {FA_TARGET.relative_to(ROOT)}")


def main() -> int:
    """Vendor every offline asset and report what was written."""
    print(vendor_vega())
    print(vendor_mathjax())
    print(vendor_icons())
    return 0


if __name__ == "__main__":
    sys.exit(main())
