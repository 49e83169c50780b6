"""The charts and explorers as a reader meets them (issue 43): on a phone and a desktop, light and dark.

- An explorer's controls and each of its panels are on screen together: a reader who moves a slider sees the
  panel it redraws (on a phone the panels stand one above the other, taller than the screen).
- Chart text is drawn at least MIN_TEXT_PX[width] on the screen (its font size times the SVG's scale).
- Legend swatches are drawn whole, even for a translucent mark (a confidence band).
- Every chart has an accessible name (its title, not Vega's "Vega visualization") and a description.
- Charts draw, in the page's theme, with the vega bundle loaded with ``defer`` as well as without.
"""
from __future__ import annotations

import json
import re
from typing import Any

import nbformat
import pytest

from site_support import VIEWS, CHAPTERS, LAID_OUT, PAGE_TIMEOUT_MS, ROOT, at_rest, check_charts, open_page, settle

pytestmark = pytest.mark.site

WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")
# The smallest chart text on the screen (px): beside 16 px prose, 13 on a desktop and 12 on a phone.
MIN_TEXT_PX = {1280: 13, 390: 12}
# A panel counts as on screen with the controls when at least this share of its height is in view, uncovered.
MIN_PANEL_SHOWN = 0.5
VEGA_DEFAULT_NAME = "Vega visualization"
PHONE_WINDOW_PX = 740  # the height of a phone's window the page gets (844 px screen less the browser's bars)


def _explorer_chapters() -> list[str]:
    """The chapters whose stored charts have bound inputs (sliders, lists, radio buttons)."""
    from models.book.render import SPEC_MIMETYPE

    found = []
    for doc in CHAPTERS:
        cells = nbformat.read(ROOT / f"{doc}.ipynb", as_version=4).cells
        specs = [o["data"][SPEC_MIMETYPE] for c in cells if c.cell_type == "code" for o in c.outputs
                 if SPEC_MIMETYPE in o.get("data", {})]
        if any("bind" in p for s in specs for p in s.get("params", []) if isinstance(p, dict)):
            found.append(doc)
    return found


EXPLORER_CHAPTERS = _explorer_chapters()


def _open(context: Any, server: str, doc: str, width: int, scheme: str) -> tuple[Any, Any]:
    """The chapter at ``width`` px in ``scheme``, every chart drawn and laid out in the page's theme."""
    page, log = open_page(context, f"{server}{doc}.html", server, scheme, width)
    check_charts(page)
    page.wait_for_function("(scheme) => [...document.querySelectorAll('.latch-chart')].every(el => "
                           "el.dataset.laidOut === 'true' && el.dataset.theme === scheme)", arg=scheme,
                           timeout=PAGE_TIMEOUT_MS)
    at_rest(page)
    return page, log


# ---------------------------------------------------------------- controls beside their chart

# A chart's own title (its lines joined), not its panels' titles or a facet's headers (inside a scope).
_TITLE_OF = ("(groups => groups.filter(g => g.depth === Math.min(...groups.map(h => h.depth))))("
             "[...el.querySelectorAll('svg g.role-title')].map(g => ({g, depth: (n => { let d = 0; "
             "while (n) { n = n.parentElement; d++; } return d; })(g)}))).map(({g}) => "
             "[...g.querySelectorAll('g.role-title-text text')].map(t => t.textContent).join(' ')).join(' ')")

# Each explorer (a chart with bound inputs) and its panels (the plots: a concatenation's cells with axes).
_EXPLORERS = """() => [...document.querySelectorAll('.latch-chart')].map((chart, c) => ({
    c, panels: [...chart.querySelectorAll('svg g.role-scope > g, svg g.root > g')].filter(g => g.querySelector(':scope > g > g.role-axis'))
        .length, controls: chart.querySelectorAll('.vega-bind').length})).filter(e => e.controls > 0)"""

# Panel p of chart c scrolled to a quarter of the way down the window (where a reader who scrolled to it reads
# it); then how much of the panel is in view above the controls, and which controls are out of view or covered.
_PANEL_WITH_CONTROLS = """([c, p]) => {
    const chart = document.querySelectorAll('.latch-chart')[c];
    const panel = [...chart.querySelectorAll('svg g.role-scope > g, svg g.root > g')]
        .filter(g => g.querySelector(':scope > g > g.role-axis'))[p].querySelector(':scope > path.background');
    let box = panel.getBoundingClientRect();
    window.scrollBy(0, box.top - window.innerHeight / 4);
    box = panel.getBoundingClientRect();
    const form = chart.querySelector('.vega-bindings').getBoundingClientRect();
    const bottom = Math.min(window.innerHeight, form.top < window.innerHeight ? form.top : window.innerHeight);
    const shown = Math.max(0, Math.min(box.bottom, bottom) - Math.max(box.top, 0));
    const hidden = [...chart.querySelectorAll('.vega-bind input, .vega-bind select')].filter(input => {
        const r = input.getBoundingClientRect();
        if (r.top < 0 || r.bottom > window.innerHeight || r.width < 1) return true;
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return !(hit && (hit === input || input.contains(hit) || hit.contains(input)));
    }).map(input => input.name + (input.type === 'radio' ? '=' + input.value : ''));
    const title = (el => %s)(chart) || chart.id;
    return {title, shown: shown / box.height, height: Math.round(box.height), hidden};
}""" % _TITLE_OF


@pytest.mark.parametrize("width,scheme", VIEWS)
@pytest.mark.parametrize("doc", EXPLORER_CHAPTERS)
def test_explorer_controls_and_each_panel_share_the_screen(browser_context: Any, server: str, doc: str, width: int,
                                                           scheme: str) -> None:
    """Scrolled to each panel of an explorer, every control of that explorer is on screen and uncovered, and at
    least half the panel is in view above them: moving a slider shows the chart it redraws."""
    page, log = _open(browser_context, server, doc, width, scheme)
    try:
        if width < 600:  # a phone's window under its browser's bars (390 x 844 screen)
            page.set_viewport_size({"width": width, "height": PHONE_WINDOW_PX})
            page.wait_for_function(LAID_OUT, timeout=PAGE_TIMEOUT_MS)
            at_rest(page)
        explorers = page.evaluate(_EXPLORERS)
        assert explorers, f"{doc}: no explorer on the page"
        apart = []
        for explorer in explorers:
            assert explorer["panels"], f"{doc}: an explorer with no panel found"
            for p in range(explorer["panels"]):
                seen = page.evaluate(_PANEL_WITH_CONTROLS, [explorer["c"], p])
                if seen["hidden"] or seen["shown"] < MIN_PANEL_SHOWN:
                    apart.append(f"{seen['title'][:50]!r} panel {p + 1}: {seen['shown']:.0%} of its "
                                 f"{seen['height']} px in view, controls out of view {seen['hidden']}")
        assert not apart, f"{doc} at {width} px ({scheme}):\n" + "\n".join(apart)
        settle(page)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


# ---------------------------------------------------------------- chart text, legends, names

# Every visible text of every chart with its size on the screen, and every legend swatch's opacity.
_CHART_READING = """() => [...document.querySelectorAll('.latch-chart')].map(chart => {
    const svg = chart.querySelector('svg');
    const title = (el => %s)(chart) || chart.id;
    if (!svg) return {title, texts: [], swatches: []};
    const scale = svg.getBoundingClientRect().width / Number(svg.getAttribute('width'));
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()
        && t.getAttribute('opacity') !== '0' && t.getBoundingClientRect().width > 0).map(t => ({
        text: t.textContent.slice(0, 30), px: parseFloat(getComputedStyle(t).fontSize) * scale,
        role: ((t.closest('g[class*="role-"]') || {}).getAttribute || (() => ''))
              .call(t.closest('g[class*="role-"]'), 'class').split(' ').find(n => n.startsWith('role-')) || ''}));
    const swatches = [...svg.querySelectorAll('g.role-legend-symbol path')].map(s => {
        const style = getComputedStyle(s);
        return Math.min(Number(style.opacity), Number(style.fillOpacity), Number(style.strokeOpacity));
    });
    return {title, texts, swatches};
})""" % _TITLE_OF


@pytest.mark.parametrize("width,scheme", VIEWS)
@pytest.mark.parametrize("doc", CHAPTERS)
def test_chart_text_is_large_and_legends_are_whole(browser_context: Any, server: str, doc: str, width: int,
                                                   scheme: str) -> None:
    """Every chart text (titles, axis and legend labels and titles, marks) is at least MIN_TEXT_PX on the screen,
    and every legend swatch is drawn fully opaque."""
    page, log = _open(browser_context, server, doc, width, scheme)
    try:
        charts = page.evaluate(_CHART_READING)
        assert any(chart["texts"] for chart in charts), f"{doc}: no chart text found"
        small = [f"{c['title'][:40]!r}: {t['role']} {t['text']!r} at {t['px']:.1f} px" for c in charts
                 for t in c["texts"] if t["px"] < MIN_TEXT_PX[width] - 0.05]
        assert not small, f"{doc} at {width} px, text under {MIN_TEXT_PX[width]} px:\n" + "\n".join(small[:20])
        faint = [f"{c['title'][:40]!r}: {min(c['swatches']):.2f}" for c in charts
                 if c["swatches"] and min(c["swatches"]) < 0.99]
        assert not faint, f"{doc}: legend swatches drawn translucent: {faint}"
        settle(page)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


def _accessible(page: Any, selector: str) -> list[dict[str, str]]:
    """The name and description Chromium's accessibility tree gives each element matching ``selector``."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        found = []
        for node in cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector})["nodeIds"]:
            ax = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node, "fetchRelatives": False})["nodes"][0]
            found.append({"name": ax.get("name", {}).get("value", ""),
                          "description": ax.get("description", {}).get("value", ""),
                          "role": ax.get("role", {}).get("value", "")})
        return found
    finally:
        cdp.detach()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_chart_has_a_name_and_a_description(browser_context: Any, server: str, doc: str, width: int) -> None:
    """A screen reader announces each chart by its title (never "Vega visualization") and reads its description:
    the chart's caption (and for an explorer, the inputs that redraw it)."""
    page, log = _open(browser_context, server, doc, width, "light")
    try:
        titles = page.evaluate(f"() => [...document.querySelectorAll('.latch-chart')].map(el => {_TITLE_OF})")
        charts = _accessible(page, ".latch-chart")
        assert charts and len(charts) == len(titles), f"{doc}: {len(charts)} charts in the tree, {len(titles)} drawn"
        bad = []
        for chart, title in zip(charts, titles):
            name, description = chart["name"].strip(), chart["description"].strip()
            if not name or name == VEGA_DEFAULT_NAME:
                bad.append(f"{title[:50]!r}: named {name!r}")
            elif re.sub(r"\s+", "", name) != re.sub(r"\s+", "", title):
                bad.append(f"{title[:50]!r}: named {name!r}, not its title")
            if len(description.split()) < 5:
                bad.append(f"{title[:50]!r}: described as {description!r}")
        assert not bad, f"{doc}:\n" + "\n".join(bad)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


# ---------------------------------------------------------------- the vega bundle deferred

_BUNDLE_TAG = re.compile(r'<script(?=[^>]*vega-embed-bundle\.js)([^>]*)>')
_CHROME_TAG = re.compile(r'<script(?=[^>]*site-chrome\.js)([^>]*)>')


def _deferred(html: str, which: str) -> str:
    """The page's HTML with the vega bundle's script tag deferred ("bundle"), site-chrome.js's too ("both"), or
    neither ("none": both in <head>, run as parsed)."""
    for tag, defer in ((_BUNDLE_TAG, which != "none"), (_CHROME_TAG, which == "both")):
        html, count = tag.subn(lambda m: "<script" + re.sub(r"\s+defer(=\"[^\"]*\")?", "", m.group(1))
                               + (" defer>" if defer else ">"), html)
        assert count == 1, f"{tag.pattern} found {count} times"
    return html


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("deferred", ["none", "bundle", "both"])
def test_charts_draw_with_the_bundle_deferred(browser_context: Any, server: str, deferred: str, scheme: str) -> None:
    """Each chart's script waits for the vega bundle: loaded in <head> as built, or with ``defer`` (alone, or
    site-chrome.js too), every chart of the convoy chapter draws in the page's theme."""
    doc = "notebooks/02_convoys"
    page = browser_context.new_page()
    try:
        page.emulate_media(color_scheme=scheme)
        def serve_deferred(route: Any) -> None:
            response = route.fetch()
            route.fulfill(response=response, body=_deferred(response.text(), deferred))
        page.route(f"{server}{doc}.html", serve_deferred)
        errors: list[str] = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(f"{server}{doc}.html", wait_until="load")
        tags = page.evaluate("() => [...document.scripts].filter(s => /vega-embed-bundle|site-chrome/.test(s.src))"
                             ".map(s => [s.src.split('/').pop().split('?')[0], s.defer])")
        assert dict(tags)["vega-embed-bundle.js"] == (deferred != "none"), tags
        check_charts(page)
        page.wait_for_function(LAID_OUT, timeout=PAGE_TIMEOUT_MS)
        themes = page.evaluate("() => [...document.querySelectorAll('.latch-chart')].map(el => el.dataset.theme)")
        assert themes and set(themes) == {scheme}, f"charts drawn in {themes} on a {scheme} page ({deferred} deferred)"
        assert not errors, errors
    finally:
        page.close()


def test_deferring_rewrites_only_the_script_tags() -> None:
    """The test's own rewrite: the bundle's tag gains defer once, an existing defer is not doubled."""
    html = ('<script src="../_static/vega/vega-embed-bundle.js?v=1"></script>'
            '<script defer="defer" src="../_static/site-chrome.js?v=2"></script>')
    assert _deferred(html, "bundle").count(" defer>") == 1
    assert json.dumps(_deferred(html, "both")).count("defer") == 2
    assert "defer" not in _deferred(html, "none")
