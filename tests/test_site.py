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


# ---------------------------------------------------------------- citations (issue 33)

def citation_links(page: Path) -> list[tuple[str, str]]:
    """(label text, reference id) for every link on a built page into the references page's entries:
    sphinxcontrib-bibtex's citations and the notebooks' Markdown citation links alike."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main") or soup
    out = []
    for a in main.find_all("a", href=True):
        path, _, anchor = a["href"].partition("#")
        if (path.endswith("references.html") or (page.name == "references.html" and not path)) and anchor.startswith("cite-"):
            out.append((" ".join(a.get_text().split()), anchor))
    return out


def test_every_citation_label_names_one_reference(site: Path) -> None:
    """A citation's label stands for exactly one reference, on every page, and is that reference's label in
    the references list; the list itself shows no raw LaTeX."""
    from bs4 import BeautifulSoup

    refs = BeautifulSoup((site / "book" / "references.html").read_text(encoding="utf-8"), "html.parser")
    listed = {}
    for entry in refs.select("main [role='doc-biblioentry'], main .citation"):
        label = entry.find(class_="label")
        if entry.get("id", "").startswith("cite-") and label is not None:
            listed[entry["id"]] = label.get_text().strip("[] ")
    assert len(listed) >= 60 and len(set(listed.values())) == len(listed), (
        f"labels shared in the references: {sorted(v for v in listed.values() if list(listed.values()).count(v) > 1)}")
    text = (refs.find("main") or refs).get_text()
    assert "$" not in text and "\\" not in text, "raw LaTeX in the references page"
    by_label: dict[str, set[str]] = {}
    wrong = []
    pages = sorted(site.glob("book/*.html")) + sorted(site.glob("notebooks/*.html"))
    for page in pages:
        for label, ref_id in citation_links(page):
            by_label.setdefault(label, set()).add(ref_id)
            if listed.get(ref_id) != label:
                wrong.append(f"{page.name}: '{label}' -> {ref_id} (listed as {listed.get(ref_id)!r})")
    assert sum(len(v) for v in by_label.values()) >= 40, f"too few citations found: {by_label}"
    shared = {label: ids for label, ids in by_label.items() if len(ids) > 1}
    assert not shared and not wrong, f"ambiguous citations {shared}; mislabelled {wrong[:10]}"
