"""What each page loads: its weight within a budget, only the scripts it uses (the vega bundle where a chart is
drawn, deferred; MathJax where there is math), Font Awesome as a few kilobytes of the chrome's icons, and
/favicon.ico answered.

Weight is the sum of the response bodies Playwright sees for one page opened in a fresh profile from 127.0.0.1
(nothing cached), once its charts are drawn and its math typeset. Issue 43 measured 3.4-5.3 MB a page, no page
under 3.35 MB: Font Awesome's script and fonts (1.6 MB) and the vega bundle (0.9 MB) loaded everywhere.
"""
from __future__ import annotations

import re
import urllib.request
from typing import Any

import pytest

from site_support import DOCS, PAGE_TIMEOUT_MS, check_charts, check_math, open_page, settle

pytestmark = pytest.mark.site

WIDTHS = (1280, 390)
PAGES = DOCS + ["search", "genindex"]
# The budget of a page, in KB, as the sum of what it uses:
# - the chrome, on every page: the theme's style sheets (pydata-sphinx-theme.css alone is 387 KB), Bootstrap
#   and the theme's scripts, Sphinx's search tools and index (117 KB), the book's CSS and scripts, the icons:
#   about 850 KB; with the page's own HTML (up to 400 KB here; the capture script is 260 KB): 1,250 KB;
# - a page that draws charts adds the vega bundle (877 KB) and its chapter's longer HTML: 1,100 KB;
# - a page with math adds MathJax (1,134 KB) and the fonts it typesets with: 1,300 KB;
# - the search page adds the pages' text its excerpts are cut from (search-text.js, about 700 KB): 800 KB.
BUDGET_KB = {"chrome": 1250, "charts": 1100, "math": 1300, "search": 800}
# A Font Awesome file the chrome may load: its cut fonts are 1.5-3 KB (the theme's were 25-156 KB, its script 1.5 MB).
FONT_AWESOME_MAX_BYTES = 16_000
_FONT_AWESOME = re.compile(r"fontawesome|/fa-[a-z]+-\d+\.(woff2|ttf)", re.I)
_VEGA = "vega-embed-bundle.js"
_MATHJAX = "mathjax/tex-chtml.js"


def _load(context: Any, server: str, doc: str, width: int) -> tuple[Any, Any, list[tuple[str, int]]]:
    """Open the page at this width and wait until it is drawn and the network is idle; returns the page, its log
    and every response of the page as (url, body bytes)."""
    responses: list[Any] = []

    def record(response: Any) -> None:
        responses.append(response)

    context.on("response", record)  # from before the page opens (one test at a time per context)
    try:
        page, log = open_page(context, f"{server}{doc}.html", server, width=width)
        check_charts(page)
        check_math(page)
        settle(page)
    finally:
        context.remove_listener("response", record)
    bodies = []
    for response in responses:
        try:
            bodies.append((response.url, len(response.body())))
        except Exception:  # a redirect has no body
            bodies.append((response.url, 0))
    return page, log, bodies


# Every page at 1,280 px; on a phone, the pages of each kind (charts and math, a long reference list, the search):
# what a page loads does not depend on the window's width, which these check.
WEIGHED = [(doc, 1280) for doc in PAGES] + [(doc, 390) for doc in ("notebooks/02_convoys", "book/references", "search")]


@pytest.mark.parametrize("doc,width", WEIGHED)
def test_page_loads_what_it_uses(browser_context: Any, server: str, doc: str, width: int) -> None:
    """The page's bytes are within the budget of what it uses; the vega bundle is requested on a page that draws
    a chart, deferred, and on no other; MathJax only where there is math; no Font Awesome file is more than a
    few kilobytes (the 1.5 MB script not at all)."""
    page, log, bodies = _load(browser_context, server, doc, width)
    try:
        charts = page.locator(".latch-chart").count()
        math = page.locator("span.math, div.math").count()
        urls = [url for url, _ in bodies]
        vega = [url for url in urls if _VEGA in url]
        assert bool(vega) == (charts > 0), f"{doc}: {charts} charts, vega bundle requested {len(vega)} times"
        if charts:
            deferred = page.evaluate(f"() => [...document.scripts].filter(s => s.src.includes('{_VEGA}'))"
                                     ".map(s => s.defer)")
            assert deferred == [True], f"{doc}: the vega bundle's script is not deferred: {deferred}"
        mathjax = [url for url in urls if _MATHJAX in url]
        assert bool(mathjax) == (math > 0), f"{doc}: {math} formulas, MathJax requested {len(mathjax)} times"
        heavy_icons = [(url, size) for url, size in bodies if _FONT_AWESOME.search(url) and size > FONT_AWESOME_MAX_BYTES]
        assert not heavy_icons, f"{doc}: Font Awesome files over {FONT_AWESOME_MAX_BYTES} bytes: {heavy_icons}"
        budget = (BUDGET_KB["chrome"] + BUDGET_KB["charts"] * (charts > 0) + BUDGET_KB["math"] * (math > 0)
                  + BUDGET_KB["search"] * (doc == "search"))
        total = sum(size for _, size in bodies) / 1024
        largest = sorted(bodies, key=lambda item: -item[1])[:6]
        assert total <= budget, (f"{doc} at {width} px: {total:.0f} KB over its budget of {budget} KB; largest: "
                                 + ", ".join(f"{url.split('/')[-1].split('?')[0]} {size // 1024} KB" for url, size in largest))
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_favicon_ico_answered(browser_context: Any, server: str, width: int) -> None:
    """/favicon.ico (what a browser asks the site's root for when a page names no icon, as the root's redirect
    page does) is answered, with an icon made from the book's own, to the server's client and to the page the
    root redirects to (a page without open_page's router: Playwright's routing fails a fetch of /favicon.ico)."""
    with urllib.request.urlopen(f"{server}favicon.ico", timeout=PAGE_TIMEOUT_MS / 1000) as answer:
        assert answer.status == 200
        icon = answer.read()
    assert icon[:4] == b"\x00\x00\x01\x00", "not an .ico file"
    count = int.from_bytes(icon[4:6], "little")
    assert count >= 2 and b"\x89PNG" in icon, f"{count} images in the icon"
    page = browser_context.new_page()
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(server, wait_until="load")
        page.wait_for_url("**/book/preface.html", timeout=PAGE_TIMEOUT_MS)
        assert page.evaluate("() => fetch('/favicon.ico').then(r => r.status)") == 200
    finally:
        page.close()
