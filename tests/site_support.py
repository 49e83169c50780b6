"""What the browser tests of the site share: the built site, its server, a headless Chromium, and checks run
inside a page (charts drawn, math typeset, laid out, at rest, contrast).

The fixtures ``site``, ``server`` and ``browser_context`` are registered for every test under tests/ by
tests/conftest.py, so the site's tests can sit in several files (tests/test_site*.py). ``site`` builds
_build/html (or LATCH_BUILD_DIR/html) once per test run, however many pytest-xdist workers ask for it: the
first takes a lock and builds, the others wait on the lock and find the run's mark. Set
LATCH_SITE_PREBUILT=1 to test an existing build instead.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from site_tools import BUILD, CHROMIUM, CHROMIUM_ARGS, HTML, ROOT, QuietHandler, serve, toc_docs  # noqa: E402

SHOTS = BUILD / "screenshots"
# The outer limit of every wait on the browser (a page, a chart, a search, a dialog): each waits on a condition
# (drawn, laid out, idle, open), so the limit only ends a page that hangs; on two cores busy with notebook
# kernels and another job, loading a chapter took more than the 120 s this used to be.
PAGE_TIMEOUT_MS = 600_000

DOCS = toc_docs()
# The two views a page's layout and structure are checked in: each width once and each colour scheme once, so a
# suite of page loads fits the time `make test` has. Layout, structure and ARIA do not change with the scheme; the
# checks where colour matters (contrast, highlights, charts' themes) run in both schemes at their widths.
VIEWS = ((1280, "light"), (390, "dark"))
CHAPTERS = [d for d in DOCS if d.startswith("notebooks/")]


# ---------------------------------------------------------------- fixtures

def _build_once(run_id: str) -> None:
    """Build the site unless this test run (run_id) already has: one build per run across xdist workers."""
    # Beside the build folder, not in it: the build deletes the folder.
    mark, lock_path = BUILD.with_name(BUILD.name + ".run"), BUILD.with_name(BUILD.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; another worker waits here, not on a clock
        if mark.exists() and mark.read_text() == run_id and (HTML / "index.html").exists():
            return
        # The same build as `make book` (from the notebooks' stored outputs: no kernel runs).
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_site.py")], cwd=ROOT,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + "\n" + proc.stderr).splitlines()[-60:])
            pytest.fail(f"site build failed (exit {proc.returncode}):\n{tail}")
        mark.write_text(run_id)  # the lock's holder alone writes it; a half-written mark only causes a rebuild


@pytest.fixture(scope="session")
def site(worker_id: str, testrun_uid: str) -> Path:
    """The built site: built here from clean unless LATCH_SITE_PREBUILT=1 says an existing build is to be tested."""
    if os.environ.get("LATCH_SITE_PREBUILT") == "1":
        if not (HTML / "index.html").exists():
            pytest.fail(f"LATCH_SITE_PREBUILT=1 but {HTML}/index.html is missing: run `make book`")
        return HTML
    _build_once(testrun_uid if worker_id != "master" else f"{testrun_uid}-{os.getpid()}")
    return HTML


# Every request the test server answered with 400 or more, as "status path" (the browser may not report a
# favicon fetch, the server always sees it).
SERVER_ERRORS: list[str] = []


class _RecordingHandler(QuietHandler):
    """The quiet handler that also records every answer of 400 or more in SERVER_ERRORS."""

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        if isinstance(code, int) and code >= 400:  # HTTPStatus is an int too
            SERVER_ERRORS.append(f"{int(code)} {self.path}")


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1 at a free port; yields the base URL."""
    with serve(site, _RecordingHandler) as base:
        yield base


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Debian Chromium with a fresh profile, driven by Playwright."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (make test does this)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM),
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        yield context
        context.close()


class PageLog:
    """What one page did that it should not: requests leaving the site, console errors and warnings (404s
    logged by the browser among them, Vega's warnings too), page errors, failed requests and error
    responses, and the server's error log."""

    def __init__(self) -> None:
        self.external: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.responses: list[str] = []
        self.server_mark = len(SERVER_ERRORS)

    def problems(self) -> list[str]:
        """Every recorded problem as a line of text."""
        return ([f"external request: {u}" for u in self.external] + [f"console {m}" for m in self.console]
                + [f"page error: {e}" for e in self.errors] + [f"request failed: {f}" for f in self.failed]
                + [f"error response: {r}" for r in self.responses]
                + [f"server answered: {r}" for r in SERVER_ERRORS[self.server_mark:]])


def open_page(context: Any, url: str, local: str, color_scheme: str = "light",
              width: int | None = None) -> tuple[Any, PageLog]:
    """Open url with every request outside `local` (a URL prefix) aborted and recorded, in the system colour
    scheme given ("light" or "dark": the site follows it) and, if given, at that window width."""
    log = PageLog()
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)  # Playwright's own 30 s default is a clock a busy machine breaks
    page.emulate_media(color_scheme=color_scheme)
    if width is not None:
        page.set_viewport_size({"width": width, "height": 900})

    def route(r: Any) -> None:
        req_url = r.request.url
        if req_url.startswith(local) or req_url.startswith(("data:", "blob:", "about:")):
            r.continue_()
        else:
            log.external.append(req_url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda msg: log.console.append(f"{msg.type}: {msg.text} ({msg.location.get('url', '')})")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda err: log.errors.append(str(err)))
    page.on("requestfailed", lambda req: log.failed.append(f"{req.url}: {req.failure}")
            if req.url.startswith(local) else None)
    page.on("response", lambda resp: log.responses.append(f"{resp.status} {resp.url}") if resp.status >= 400 else None)
    page.goto(url, wait_until="load")
    return page, log


# ---------------------------------------------------------------- page checks (run inside the browser)

# Every chart has its final layout for the window's width (models/book/render.py marks it; a chart whose width
# a resize changed lays itself out again once the resize settles).
LAID_OUT = "() => [...document.querySelectorAll('.latch-chart')].every(el => el.dataset.laidOut === 'true')"
_BEFORE_RESIZE = """() => document.querySelectorAll('.latch-chart').forEach(el => {
    el.dataset.widthBefore = el.clientWidth; el.dataset.laidOut = 'before resize'; })"""
_LAID_OUT_AFTER_RESIZE = """() => [...document.querySelectorAll('.latch-chart')].every(el => el.dataset.laidOut === 'true'
    || (el.dataset.laidOut === 'before resize' && Math.abs(el.clientWidth - Number(el.dataset.widthBefore)) <= 1))"""


def resize(page: Any, width: int) -> None:
    """Set the window's width and wait until every chart the new width changed is laid out again (a chart
    redraws after the resize settles; one whose width did not change keeps its layout)."""
    page.evaluate(_BEFORE_RESIZE)
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_function(_LAID_OUT_AFTER_RESIZE, timeout=PAGE_TIMEOUT_MS)
    at_rest(page)


_CHARTS_SETTLED = """() => Array.from(document.querySelectorAll('.latch-chart')).every(el =>
    el.querySelector('.vega-embed svg, .vega-embed canvas') || el.textContent.trim().length > 0)"""

_CHART_REPORT = """() => Array.from(document.querySelectorAll('.latch-chart')).map(el => {
    const svg = el.querySelector('.vega-embed svg');
    const marks = svg ? svg.querySelectorAll('g.role-mark > *').length : 0;
    const canvas = el.querySelector('.vega-embed canvas');
    return {id: el.id, svg: !!svg, canvas: !!canvas, marks: marks, text: svg ? '' : el.textContent.slice(0, 200)};
})"""

_MATH_REPORT = """() => ({
    math: document.querySelectorAll('.math, span.math, div.math').length,
    rendered: document.querySelectorAll('mjx-container').length,
    errors: document.querySelectorAll('mjx-merror').length,
})"""


def check_charts(page: Any) -> list[dict[str, Any]]:
    """Wait for every chart on the page to draw; assert each has marks; return the per-chart report."""
    page.wait_for_function(_CHARTS_SETTLED, timeout=PAGE_TIMEOUT_MS)
    report = page.evaluate(_CHART_REPORT)
    broken = [c for c in report if not (c["svg"] or c["canvas"]) or (c["svg"] and c["marks"] == 0)]
    assert not broken, f"charts without marks: {broken}"
    return report


def check_math(page: Any) -> None:
    """If the page has math, wait for MathJax to typeset all of it, without errors."""
    counts = page.evaluate(_MATH_REPORT)
    if counts["math"] == 0:
        return
    page.wait_for_function(
        "() => document.querySelectorAll('mjx-container').length >= "
        "document.querySelectorAll('span.math, div.math').length", timeout=PAGE_TIMEOUT_MS)
    counts = page.evaluate(_MATH_REPORT)
    assert counts["errors"] == 0, f"MathJax errors: {counts}"
    assert counts["rendered"] > 0, f"math not rendered: {counts}"


# Two animation frames: every task and promise started before (a chart's redraw after an input or a resize
# included: Vega renders in its run's promise chain) has finished and the result is painted.
PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"
# No finite CSS transition or animation is running (a table frame's shadow fading in, a dialog opening).
_AT_REST = """() => document.getAnimations().every(a => a.playState !== 'running'
    || a.effect.getComputedTiming().endTime === Infinity)"""


def at_rest(page: Any) -> None:
    """Wait on conditions, not a clock, for what a fixed pause used to hope for: no transition running, and
    everything started before painted."""
    page.wait_for_function(_AT_REST, timeout=PAGE_TIMEOUT_MS)
    page.evaluate(PAINTED)


def settle(page: Any) -> None:
    """Let late scripts (MathJax fonts, chart redraws) finish before the log is read."""
    page.wait_for_load_state("networkidle", timeout=PAGE_TIMEOUT_MS)
    at_rest(page)


def save_screenshots(page: Any, name: str) -> None:
    """Save the chapter's first screen, the whole page, and its first explorer under _build/screenshots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); }")
    at_rest(page)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)
    embed = page.locator(".vega-embed:has(.vega-bind)").first
    embed.scroll_into_view_if_needed()
    embed.screenshot(path=str(SHOTS / f"{name}-explorer.png"))
    # The explorer in its page (for the README): scrolled so the chart sits below the page header.
    embed.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 180)")
    at_rest(page)
    page.screenshot(path=str(SHOTS / f"{name}-explorer-page.png"))


# Every visible text (an element's own text, or an SVG <text> of a chart) against the colour behind it (the
# first opaque background up the tree, with translucent ones composited over it): WCAG contrast ratios.
# WCAG colour arithmetic for the checks run in a page (this file's contrast report, the search highlight's):
# parse a CSS colour, its relative luminance, one colour composited over another, the ratio of two, and the colour
# behind an element (the first opaque background up the tree, translucent ones composited over it).
COLOUR_JS = """    const parse = (c) => {
        const m = (c || '').match(/rgba?\\(([^)]+)\\)/);
        if (!m) return null;
        const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
        return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const lum = ([r, g, b]) => {
        const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
    const backgroundOf = (el) => {
        const layers = [];
        for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
            let bg = parse(getComputedStyle(node).backgroundColor);
            if (node.tagName.toLowerCase() === 'svg' && node.style.backgroundColor) bg = parse(node.style.backgroundColor);
            if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
        }
        let colour = [255, 255, 255, 1];
        for (let i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
        return colour;
    };
    const ratio = (a, b) => { const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x); return (hi + 0.05) / (lo + 0.05); };
"""
_CONTRAST_REPORT = """(minRatio) => {
""" + COLOUR_JS + """    const visible = (el) => {
        const r = el.getBoundingClientRect();
        if (r.width < 1 || r.height < 1) return false;
        const s = getComputedStyle(el);
        return s.visibility !== 'hidden' && Number(s.opacity) > 0.05;
    };
    // A chart label's halo (models/book/charts.py): the same text drawn under it with a wide stroke of one colour.
    // The halo is decoration, not text; the label above it reads against the halo's colour.
    const isHalo = (el) => el instanceof SVGElement && getComputedStyle(el).stroke !== 'none'
        && Number.parseFloat(getComputedStyle(el).strokeWidth) >= 2;
    const halos = [...document.querySelectorAll('svg text')].filter(isHalo).map((el) => ({
        box: el.getBoundingClientRect(), colour: parse(getComputedStyle(el).stroke), text: el.textContent}));
    const haloUnder = (el) => {
        const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
        const halo = halos.find((h) => h.text === el.textContent && h.colour && x >= h.box.left && x <= h.box.right
            && y >= h.box.top && y <= h.box.bottom);
        return halo ? halo.colour : null;
    };
    const bad = [], seen = new Set();
    let checked = 0;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode, el = node.parentElement;
        if (!node.nodeValue.trim() || !el || seen.has(el)) continue;
        seen.add(el);
        if (el.closest('script, style, noscript, title, .visually-hidden, .sr-only, mjx-assistive-mml, dialog:not([open])')
            || !visible(el) || isHalo(el)) continue;
        const style = getComputedStyle(el);
        const svg = el instanceof SVGElement;
        let fg = parse(svg ? style.fill : style.color);
        if (!fg) continue;
        if (svg) fg[3] *= Number(style.fillOpacity || 1);
        const halo = svg ? haloUnder(el) : null;
        const bg = halo ? over(halo, backgroundOf(el)) : backgroundOf(el);
        fg = over(fg, bg);
        const contrast = ratio(fg, bg);
        checked++;
        if (contrast < minRatio) bad.push(contrast.toFixed(2) + ':1 ' + el.tagName.toLowerCase() + '.'
            + (el.getAttribute('class') || '').slice(0, 30) + ' "' + node.nodeValue.trim().slice(0, 40) + '"');
    }
    return {checked: checked, bad: bad.slice(0, 20), count: bad.length};
}"""
MIN_CONTRAST = 4.5  # WCAG 2 AA for body text


def check_contrast(page: Any, color_scheme: str) -> None:
    """The page shows in the colour scheme given, and every visible text, collapsed blocks opened, reads at
    MIN_CONTRAST against its background."""
    theme = page.evaluate("() => document.documentElement.dataset.theme")
    assert theme == color_scheme, f"page is {theme!r} on a {color_scheme} system"
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_function("() => [...document.querySelectorAll('.latch-chart')]"
                           ".every(el => el.dataset.laidOut === 'true' && el.dataset.theme === "
                           f"'{color_scheme}')", timeout=PAGE_TIMEOUT_MS)
    at_rest(page)
    report = page.evaluate(_CONTRAST_REPORT, MIN_CONTRAST)
    assert report["checked"] > 10, f"too few texts checked: {report}"
    assert not report["count"], (f"{report['count']} texts under {MIN_CONTRAST}:1 ({color_scheme}, "
                                 f"{page.viewport_size['width']} px): {report['bad']}")


