"""The static site: it builds from clean offline, and every page works in a real browser with no internet.

The session fixture ``site`` builds _build/html once (scripts/build_site.py,
the same build as `make book`); set LATCH_SITE_PREBUILT=1 to test an existing
build instead. Pages are served from 127.0.0.1 on a free port and also opened
through file://. Chromium is Debian's /usr/bin/chromium driven by Playwright
(never `playwright install`); every request leaving the site is aborted and
recorded, and must not happen; so must any console error, any failed
request and any response of 400 or more (a missing favicon included), seen
from the browser and from the server's own log. Screenshots of each chapter
go to _build/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHART_TIMEOUT_MS = 90_000
PAGE_TIMEOUT_MS = 120_000


def toc_docs() -> list[str]:
    """Every document named in _toc.yml (root first), as paths without suffix."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
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


pytestmark = pytest.mark.site

DOCS = toc_docs()
CHAPTERS = [d for d in DOCS if d.startswith("notebooks/")]


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def site() -> Path:
    """The built site: built here from clean unless LATCH_SITE_PREBUILT=1 says an existing build is to be tested."""
    if os.environ.get("LATCH_SITE_PREBUILT") == "1":
        if not (HTML / "index.html").exists():
            pytest.fail("LATCH_SITE_PREBUILT=1 but _build/html/index.html is missing: run `make book`")
        return HTML
    # The same build as `make book`: without the test kernels' CPU jitter (conftest.py).
    env = dict(os.environ, LATCH_CPU_JITTER="0")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_site.py")], cwd=ROOT,
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + "\n" + proc.stderr).splitlines()[-60:])
        pytest.fail(f"site build failed (exit {proc.returncode}):\n{tail}")
    return HTML


# Every request the test server answered with 400 or more, as "status path" (the browser may not report a
# favicon fetch, the server always sees it).
SERVER_ERRORS: list[str] = []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        if isinstance(code, int) and code >= 400:  # HTTPStatus is an int too
            SERVER_ERRORS.append(f"{int(code)} {self.path}")


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1 at a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


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
    """What one page did that it should not: requests leaving the site, console errors (404s logged by the
    browser among them), page errors, failed requests and error responses, and the server's error log."""

    def __init__(self) -> None:
        self.external: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.responses: list[str] = []
        self.server_mark = len(SERVER_ERRORS)

    def problems(self) -> list[str]:
        """Every recorded problem as a line of text."""
        return ([f"external request: {u}" for u in self.external] + [f"console error: {m}" for m in self.console]
                + [f"page error: {e}" for e in self.errors] + [f"request failed: {f}" for f in self.failed]
                + [f"error response: {r}" for r in self.responses]
                + [f"server answered: {r}" for r in SERVER_ERRORS[self.server_mark:]])


def open_page(context: Any, url: str, local: str) -> tuple[Any, PageLog]:
    """Open url with every request outside `local` (a URL prefix) aborted and recorded."""
    log = PageLog()
    page = context.new_page()
    # Generous: CI's two cores may be busy with notebook kernels while the pages render.
    page.set_default_timeout(PAGE_TIMEOUT_MS)

    def route(r: Any) -> None:
        req_url = r.request.url
        if req_url.startswith(local) or req_url.startswith(("data:", "blob:", "about:")):
            r.continue_()
        else:
            log.external.append(req_url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda msg: log.console.append(f"{msg.text} ({msg.location.get('url', '')})")
            if msg.type == "error" else None)
    page.on("pageerror", lambda err: log.errors.append(str(err)))
    page.on("requestfailed", lambda req: log.failed.append(f"{req.url}: {req.failure}")
            if req.url.startswith(local) else None)
    page.on("response", lambda resp: log.responses.append(f"{resp.status} {resp.url}") if resp.status >= 400 else None)
    page.goto(url, wait_until="load")
    return page, log


# ---------------------------------------------------------------- page checks (run inside the browser)

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
    page.wait_for_function(_CHARTS_SETTLED, timeout=CHART_TIMEOUT_MS)
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
        "document.querySelectorAll('span.math, div.math').length", timeout=CHART_TIMEOUT_MS)
    counts = page.evaluate(_MATH_REPORT)
    assert counts["errors"] == 0, f"MathJax errors: {counts}"
    assert counts["rendered"] > 0, f"math not rendered: {counts}"


def settle(page: Any) -> None:
    """Let late scripts (MathJax fonts, chart redraws) finish before the log is read."""
    page.wait_for_load_state("networkidle", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)


def save_screenshots(page: Any, name: str) -> None:
    """Save the chapter's first screen, the whole page, and its first explorer under _build/screenshots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); }")
    page.wait_for_timeout(200)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)
    embed = page.locator(".vega-embed:has(.vega-bind)").first
    embed.scroll_into_view_if_needed()
    embed.screenshot(path=str(SHOTS / f"{name}-explorer.png"))
    # The explorer in its page (for the README): scrolled so the chart sits below the page header.
    embed.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 180)")
    page.wait_for_timeout(200)
    page.screenshot(path=str(SHOTS / f"{name}-explorer-page.png"))


# ---------------------------------------------------------------- tests

def test_site_builds(site: Path) -> None:
    """The site builds from clean with warnings as errors and writes a page for every toc entry."""
    missing = [d for d in DOCS if not (site / f"{d}.html").exists()]
    assert not missing, f"toc pages missing from the build: {missing}"


def test_no_external_loads_in_html(site: Path) -> None:
    """No built page or style sheet names a script, style, font or image outside the site."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_site import external_loads

    assert external_loads(site) == []


@pytest.mark.parametrize("doc", CHAPTERS)
def test_notebook_has_stored_outputs(doc: str) -> None:
    """Every code cell of a chapter was executed and saved, so nbval's strict mode compares real outputs."""
    import nbformat

    nb = nbformat.read(ROOT / f"{doc}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert code, f"{doc} has no code cells"
    assert not unexecuted, f"{doc}: code cells {unexecuted} have no stored execution (run and save the notebook)"
    assert any(c.get("outputs") for c in code), f"{doc} has no stored outputs"


def test_every_page_has_the_books_icon(site: Path) -> None:
    """Each page links the project's favicon, and the file is in the build (no page asks for /favicon.ico)."""
    from bs4 import BeautifulSoup

    for doc in DOCS:
        page = site / f"{doc}.html"
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        icon = soup.find("link", rel=lambda rel: rel and "icon" in rel)
        assert icon is not None, f"{doc}: no <link rel=icon>"
        target = (page.parent / icon["href"]).resolve()
        assert target.is_file() and target.suffix == ".svg", f"{doc}: icon {icon['href']} is not in the build"


def test_notebooks_downloadable(site: Path) -> None:
    """Each chapter's source notebook is shipped with the site (the download button links to it)."""
    for doc in CHAPTERS:
        assert (site / "_sources" / f"{doc}.ipynb").exists(), doc


# What a desktop browser does for the tab icon: fetch the page's <link rel=icon>, or /favicon.ico without one.
# Headless Chromium skips it, so the test fetches it the same way.
_ICON_STATUS = """() => fetch((document.querySelector('link[rel~="icon"]') || {}).href || '/favicon.ico')
    .then(r => r.status, () => 0)"""


def check_page_offline(context: Any, url: str, local: str) -> None:
    """Open url: nothing loads from outside `local`, no errors are logged, charts and math render, and the
    tab icon a desktop browser would fetch is there."""
    page, log = open_page(context, url, local)
    try:
        check_charts(page)
        check_math(page)
        if url.startswith("http"):
            assert page.evaluate(_ICON_STATUS) == 200, f"{url}: the tab icon is missing"
        settle(page)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


@pytest.mark.parametrize("doc", DOCS)
def test_page_offline(browser_context: Any, server: str, doc: str) -> None:
    """The page loads nothing from outside the site, logs no errors, and its charts and math render."""
    check_page_offline(browser_context, f"{server}{doc}.html", server)


_CONTROLS = ".vega-bind input[type=range], .vega-bind select, .vega-bind input[type=radio]"

# Every explorer input as (embed index, binding index, kind, the values it can take, its current value).
_BINDINGS = """() => [...document.querySelectorAll('.vega-embed')].flatMap((embed, e) =>
    [...embed.querySelectorAll('.vega-bind')].map((bind, b) => {
        const name = (bind.querySelector('.vega-bind-name') || bind).textContent.trim();
        const select = bind.querySelector('select');
        const radios = [...bind.querySelectorAll('input[type=radio]')];
        const range = bind.querySelector('input[type=range]');
        if (select) return {e, b, name, kind: 'select', values: [...select.options].map(o => o.value),
                            value: select.value};
        if (radios.length) return {e, b, name, kind: 'radio', values: radios.map(r => r.value),
                                   value: (radios.find(r => r.checked) || radios[0]).value};
        return {e, b, name, kind: 'range', values: [range.min, range.max], value: range.value};
    }))"""

_SET_BINDING = """([e, b, kind, value]) => {
    const bind = document.querySelectorAll('.vega-embed')[e].querySelectorAll('.vega-bind')[b];
    if (kind === 'select') { const s = bind.querySelector('select'); s.value = value;
                             s.dispatchEvent(new Event('change', {bubbles: true})); }
    else if (kind === 'radio') { const r = [...bind.querySelectorAll('input[type=radio]')].find(r => r.value === value);
                                 r.click(); }
    else { const r = bind.querySelector('input[type=range]'); r.value = value;
           r.dispatchEvent(new Event('input', {bubbles: true}));
           r.dispatchEvent(new Event('change', {bubbles: true})); }
}"""

_SVG_OF = "e => document.querySelectorAll('.vega-embed')[e].querySelector('svg').innerHTML"


def walk_explorer_controls(page: Any) -> tuple[int, list[str]]:
    """Move every explorer input (slider, list, radio buttons) over its values, the others at their defaults;
    returns how many inputs there are and the names of those whose every value left the chart unchanged."""
    bindings = page.evaluate(_BINDINGS)
    dead = []
    for binding in bindings:
        e, b, kind, start = binding["e"], binding["b"], binding["kind"], binding["value"]
        before = page.evaluate(_SVG_OF, e)
        changed = False
        for value in binding["values"]:
            if value == start:
                continue
            page.evaluate(_SET_BINDING, [e, b, kind, value])
            page.wait_for_timeout(150)
            changed |= page.evaluate(_SVG_OF, e) != before
        page.evaluate(_SET_BINDING, [e, b, kind, start])
        page.wait_for_timeout(150)
        assert page.evaluate(_SVG_OF, e) == before, f"{binding['name']}: the chart differs after going back"
        if not changed:
            dead.append(binding["name"])
    return len(bindings), dead


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_explorer_control_moves_its_chart(browser_context: Any, server: str, doc: str) -> None:
    """Each explorer input (slider, list or radio buttons), moved over its values with the others at their
    defaults, redraws its chart with no kernel; a screenshot of the chapter is saved."""
    page, log = open_page(browser_context, f"{server}{doc}.html", server)
    try:
        check_charts(page)
        check_math(page)
        count, dead = walk_explorer_controls(page)
        assert count > 0, f"{doc}: no explorer control ({_CONTROLS}) on the page"
        assert not dead, f"{doc}: explorer controls that change nothing over their values: {dead}"
        settle(page)
        save_screenshots(page, Path(doc).name)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


def test_chapter_from_file_url(browser_context: Any, site: Path) -> None:
    """The first chapter also works opened straight from disk (file://), with nothing fetched outside the site."""
    doc = CHAPTERS[0] if CHAPTERS else DOCS[0]
    local = site.resolve().as_uri() + "/"
    check_page_offline(browser_context, f"{local}{doc}.html", local)


# ---------------------------------------------------------------- what a reader sees

# A call that is plumbing, not the model: a page that shows one has a cell the reader should not see.
PLUMBING = ("glue(",)


@pytest.mark.parametrize("doc", CHAPTERS)
def test_no_plumbing_cell_shows(site: Path, doc: str) -> None:
    """Glue calls and other plumbing are in hidden cells (myst-nb's remove-input tag); the reader sees the
    cells that run the model and draw its chart."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((site / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")
    shown = [div.get_text() for div in soup.select("div.cell_input")]
    plumbing = [text.strip().splitlines()[0] for text in shown if any(p in text for p in PLUMBING)]
    assert not plumbing, f"{doc}: cells showing plumbing (tag them remove-input): {plumbing}"


# Widths a reader uses: a desktop window and a phone.
WIDTHS = (1280, 390)
MIN_CHART_SCALE = 0.5  # a chart drawn at less than half its size is too small to read: it must stack instead
# The convoy chapter was 18,500 px; the review asked for 11,000 at 1,400 px wide. The width tests run at 1,280 px,
# where the same page wraps into more lines: 12,000.
MAX_HEIGHT_PX = {"notebooks/02_convoys": 12_000}

_OVERFLOW_REPORT = """(MIN_SCALE) => {
    const main = document.querySelector('main') || document.body;
    const limit = main.getBoundingClientRect().right + 1;
    const out = [];
    for (const el of main.querySelectorAll('.latch-chart svg, .latch-chart .vega-bindings, .cell_output img')) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > limit) out.push(el.tagName + ' ' + Math.round(r.right) + ' > ' + Math.round(limit));
    }
    for (const el of main.querySelectorAll('h1, h2, h3, h4')) {
        const r = el.getBoundingClientRect();
        if (r.right > limit || el.scrollWidth > el.clientWidth + 1) out.push('heading ' + el.textContent.slice(0, 40));
    }
    for (const svg of main.querySelectorAll('.latch-chart svg')) {
        const natural = Number(svg.getAttribute('width')), shown = svg.getBoundingClientRect().width;
        if (natural > 0 && shown / natural < MIN_SCALE)
            out.push('chart drawn at ' + Math.round(100 * shown / natural) + '% of its size: '
                     + (svg.closest('.latch-chart').textContent.slice(0, 40) || svg.getAttribute('aria-label')));
    }
    for (const el of main.querySelectorAll('.cell_output td, .cell_output th')) {
        if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflow !== 'visible')
            out.push('cut cell: ' + el.textContent.slice(0, 40));
    }
    const wide = [...main.querySelectorAll('*')].filter(el => el.scrollWidth > window.innerWidth + 1
        && el.children.length && getComputedStyle(el).overflowX === 'visible').slice(-3)
        .map(el => el.tagName + '.' + el.className + ' ' + el.scrollWidth + ' px');
    return {items: out, wide: wide, page: document.documentElement.scrollWidth, view: window.innerWidth,
            height: document.documentElement.scrollHeight};
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_fits_the_column(browser_context: Any, server: str, doc: str, width: int) -> None:
    """At desktop and phone widths no chart, heading, input row or table cell is cut off by the text column, no
    chart shrinks below half its size (two-panel explorers stack instead), the page does not scroll sideways,
    and a chapter with a height budget keeps to it."""
    page, log = open_page(browser_context, f"{server}{doc}.html", server)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        check_charts(page)
        # A chart wider than the column is laid out again for it (models/book/render.py), once or twice, after
        # the window's resize settles.
        page.wait_for_timeout(400)
        page.wait_for_function("() => [...document.querySelectorAll('.latch-chart')]"
                               ".every(el => el.dataset.laidOut === 'true')", timeout=PAGE_TIMEOUT_MS)
        page.wait_for_timeout(300)
        report = page.evaluate(_OVERFLOW_REPORT, MIN_CHART_SCALE)
        assert not report["items"], f"{doc} at {width} px: {report['items']}"
        assert report["page"] <= report["view"], f"{doc} at {width} px scrolls sideways: {report}"
        budget = MAX_HEIGHT_PX.get(doc)
        if budget is not None and width == WIDTHS[0]:
            assert report["height"] <= budget, f"{doc} is {report['height']} px tall at {width} px (budget {budget})"
    finally:
        page.close()


def test_search_lists_each_page_once_with_an_excerpt(browser_context: Any, server: str) -> None:
    """Searching the site (served over HTTP, as search excerpts need) lists each page once, with words from it."""
    page, log = open_page(browser_context, f"{server}search.html?q=convoy", server)
    try:
        page.wait_for_function("() => /Search finished/.test(document.body.innerText)", timeout=PAGE_TIMEOUT_MS)
        page.wait_for_timeout(1500)  # excerpts arrive one fetch per result
        results = page.evaluate("""() => [...document.querySelectorAll('#search-results ul.search > li')].map(li => ({
            page: li.querySelector('a').getAttribute('href').split('#')[0],
            excerpt: (li.querySelector('p.context') || {textContent: ''}).textContent}))""")
        status = page.inner_text("#search-results p.search-summary")
        pages = [r["page"] for r in results]
        assert len(pages) >= 5 and len(set(pages)) == len(pages), f"a page listed twice: {pages}"
        assert f"found {len(pages)} page" in status, status
        bad = [r for r in results if len(r["excerpt"].strip(". ")) < 40 or ".ipynb" in r["excerpt"][:20]]
        assert not bad, f"results without a real excerpt: {bad}"
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


# ---------------------------------------------------------------- chart text (issue 33)

# Two tick labels of one axis closer than this on the screen read as one number ("4,0005,000").
MIN_TICK_GAP_PX = 3

# Every axis tick label, axis title, legend label and legend title of every chart, with its screen box and the
# axis or legend it belongs to; and every chart text Vega cut with an ellipsis (a text mark's limit).
_CHART_TEXTS = """() => [...document.querySelectorAll('.latch-chart')].map((chart, c) => {
    const svg = chart.querySelector('svg');
    if (!svg) return {chart: c, texts: [], cut: []};
    const kinds = {'role-axis-label': 'tick', 'role-axis-title': 'axis title', 'role-legend-label': 'legend label',
                   'role-legend-title': 'legend title'};
    const texts = [], groups = new Map();
    for (const [cls, kind] of Object.entries(kinds)) {
        for (const t of svg.querySelectorAll('g.' + cls + ' text')) {
            if (!t.textContent.trim() || t.getAttribute('opacity') === '0') continue;  // a label Vega dropped
            const owner = t.closest('g.role-axis, g.role-legend') || svg;
            if (!groups.has(owner)) groups.set(owner, groups.size);
            const r = t.getBoundingClientRect();
            texts.push({kind, text: t.textContent, group: groups.get(owner),
                        box: [r.left, r.top, r.right, r.bottom]});
        }
    }
    const cut = [...svg.querySelectorAll('text')].map(t => t.textContent).filter(s => s.includes('\\u2026'));
    const title = (svg.querySelector('g.role-title-text text') || {}).textContent || chart.id;
    return {chart: c, title, texts, cut};
})"""


def text_collisions(report: list[dict[str, Any]]) -> list[str]:
    """Pairs of chart texts that overlap, and tick labels of one axis closer than MIN_TICK_GAP_PX, as lines."""
    found = []
    for chart in report:
        texts = chart["texts"]
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                # Side by side, ticks of one axis keep a gap; any other pair (or ticks one above the other, whose
                # boxes carry the font's line gap) only must not overlap.
                gap = MIN_TICK_GAP_PX if a["kind"] == b["kind"] == "tick" and a["group"] == b["group"] else -0.5
                ax0, ay0, ax1, ay1 = a["box"]
                bx0, by0, bx1, by1 = b["box"]
                if min(ax1, bx1) - max(ax0, bx0) > -gap and min(ay1, by1) - max(ay0, by0) > 1:
                    found.append(f"{chart['title'][:50]!r}: {a['kind']} {a['text']!r} meets {b['kind']} {b['text']!r}")
    return found


def open_laid_out(context: Any, server: str, doc: str, width: int) -> tuple[Any, PageLog, list[str]]:
    """The chapter at ``width`` px with every chart in its final layout; also returns its console warnings."""
    page, log = open_page(context, f"{server}{doc}.html", server)
    warnings: list[str] = []
    page.on("console", lambda msg: warnings.append(msg.text) if msg.type == "warning" else None)
    page.set_viewport_size({"width": width, "height": 900})
    check_charts(page)
    page.wait_for_timeout(400)  # the resize settles, then charts too wide are laid out again (models/book/render.py)
    page.wait_for_function("() => [...document.querySelectorAll('.latch-chart')]"
                           ".every(el => el.dataset.laidOut === 'true')", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)
    return page, log, warnings


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("doc", CHAPTERS)
def test_chart_text_never_collides_or_is_cut(browser_context: Any, server: str, doc: str, width: int) -> None:
    """At desktop and phone widths, in every chart, no tick label runs into its neighbour, no axis title, legend
    label or tick label overlaps another, no text is cut with an ellipsis, and Vega logs no warning."""
    page, log, warnings = open_laid_out(browser_context, server, doc, width)
    try:
        report = page.evaluate(_CHART_TEXTS)
        assert report and any(chart["texts"] for chart in report), f"{doc}: no chart text found"
        collisions = text_collisions(report)
        assert not collisions, f"{doc} at {width} px: " + "\n".join(collisions)
        cut = [f"{chart['title'][:50]!r}: {text!r}" for chart in report for text in chart["cut"]]
        assert not cut, f"{doc} at {width} px, texts cut short: " + "\n".join(cut)
        vega = [w for w in warnings if "WARN" in w or "vega" in w.lower()]
        assert not vega, f"{doc} at {width} px, Vega warnings: {vega}"
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


def test_text_collisions_finds_run_together_labels() -> None:
    """The collision rule itself: abutting tick labels of one axis collide, the same gap between axes does not,
    and an axis title over a tick label does."""
    def text(kind: str, label: str, group: int, box: list[float]) -> dict[str, Any]:
        return {"kind": kind, "text": label, "group": group, "box": box}

    run_together = [{"title": "t", "texts": [text("tick", "4,000", 0, [0, 0, 30, 11]),
                                             text("tick", "5,000", 0, [31, 0, 61, 11])]}]
    apart = [{"title": "t", "texts": [text("tick", "4,000", 0, [0, 0, 30, 11]),
                                      text("tick", "5,000", 1, [31, 0, 61, 11])]}]
    title_over = [{"title": "t", "texts": [text("tick", "100", 0, [0, 0, 20, 11]),
                                           text("axis title", "ms", 1, [10, 5, 40, 16])]}]
    assert text_collisions(run_together) and not text_collisions(apart) and text_collisions(title_over)


# ---------------------------------------------------------------- what exercises and prose show (issue 33)

# A number printed with more digits than a reader can use: 1961.9383951343925, 79985.39098.
_RAW_FLOAT = r"\d\.\d{5,}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_exercise_outputs_are_rounded_with_no_index(site: Path, doc: str) -> None:
    """Every exercise run's output (a hide-cell cell) shows its numbers rounded, and its tables show no pandas
    row index (a bare 0, 1, 2 column or a stacked index name row)."""
    import re

    from bs4 import BeautifulSoup

    soup = BeautifulSoup((site / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")
    raw, indexed = [], []
    for cell in soup.select("div.cell.tag_hide-cell div.cell_output"):
        for shown in cell.select("pre, table"):
            text = shown.get_text(" ")
            raw += [m.group(0) for m in re.finditer(_RAW_FLOAT, text)]
        for table in cell.select("table"):
            if table.select("tbody th, th.row_heading, th.index_name, th.blank"):
                indexed.append((table.find("caption") or table).get_text(" ")[:60])
    assert not raw, f"{doc}: exercise outputs with unrounded numbers: {raw[:5]}"
    assert not indexed, f"{doc}: exercise tables showing a pandas index: {indexed}"


def test_preface_lists_every_chapter() -> None:
    """The preface's chapter list has one entry per chapter in the table of contents, "Your server" included."""
    import re

    preface = (ROOT / "book" / "preface.md").read_text(encoding="utf-8")
    listed = preface.split("## What each chapter shows", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^\d+\. \*\*([^*]+)\*\*", listed, flags=re.M)
    assert len(entries) == len(CHAPTERS), entries
    assert "Your server" in entries, entries


def test_your_server_points_to_its_example_in_the_right_direction() -> None:
    """Chapter 9's upload panel says where the example's analysis is, and it is there: the panel comes after the
    cells that fit the example, so the note says "above"."""
    import nbformat

    from models.book.widgets import SNAPSHOT_NOTE

    nb = nbformat.read(ROOT / "notebooks" / "09_your_server.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    panel = next(k for k, src in enumerate(code) if "snapshot_panel(" in src)
    fitted = next(k for k, src in enumerate(code) if "fitting.fit(snapshot)" in src)
    assert ("above" in SNAPSHOT_NOTE) == (fitted < panel) and ("below" in SNAPSHOT_NOTE) == (fitted > panel)


def test_nested_explorer_caption_describes_its_default(site: Path) -> None:
    """Chapter 4's explorer opens with no co-tenant; its caption's first sentence describes that case, not the
    co-tenant one the list switches to."""
    import json
    import re

    page = (site / "notebooks" / "04_nested_transactions.html").read_text(encoding="utf-8")
    specs = [json.loads(m) for m in re.findall(r"var spec = (\{.*?\});\n", page)]
    explorer = next(s for s in specs if any(p["name"] == "d_co_tenant" for p in s.get("params", [])))
    default = next(p["value"] for p in explorer["params"] if p["name"] == "d_co_tenant")
    first = " ".join(explorer["title"]["subtitle"] if isinstance(explorer["title"]["subtitle"], list)
                     else [explorer["title"]["subtitle"]]).split(". ")[0]
    assert default == "none" and "no co-tenant" in first, (default, first)


_COMPARISON_FIT = """(caption) => {
    const table = [...document.querySelectorAll('.cell_output table')]
        .find(t => (t.querySelector('caption') || {textContent: ''}).textContent.includes(caption));
    if (!table) return null;
    const column = table.closest('.cell_output').getBoundingClientRect().width;
    const cut = [...table.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.textContent.slice(0, 40));
    return {table: table.getBoundingClientRect().width, column, cut,
            headers: [...table.querySelectorAll('thead th')].map(th => th.textContent.trim())};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_fairness_comparison_table_reads_whole(browser_context: Any, server: str, width: int) -> None:
    """Chapter 3's model-against-White table, "how" included, is no wider than the text column at desktop and phone
    widths (no scrolling needed to read a row) and no cell is cut."""
    page, log = open_page(browser_context, f"{server}notebooks/03_fairness.html", server)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)
        fit = page.evaluate(_COMPARISON_FIT, "parallel insert and the model")
        assert fit is not None, "chapter 3's comparison table is missing"
        assert fit["table"] <= fit["column"] + 1, f"at {width} px the table is {fit} px wide"
        assert not fit["cut"], f"cut cells at {width} px: {fit['cut']}"
        assert "basis" in fit["headers"], fit["headers"]
    finally:
        page.close()
