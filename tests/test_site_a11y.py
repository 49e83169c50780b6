"""Accessibility of the site: axe-core finds nothing critical or serious on any page (and every part of a page
sits in a landmark), at desktop and phone widths, light and dark; every control of the chrome shows a focus
ring a keyboard reader can see.

axe-core is pinned in package.json (a devDependency: `npm ci` installs it, scripts/vendor_assets.py checks it;
the site never ships it) and injected into each page with Playwright's add_script_tag.
"""
from __future__ import annotations

from typing import Any

import pytest

from site_support import VIEWS, DOCS, ROOT, check_charts, check_math, open_page, settle

pytestmark = pytest.mark.site

WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")
PAGES = DOCS + ["search", "genindex"]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# What fails: every critical or serious finding, and `region` (moderate: content outside every landmark, which a
# screen reader's landmark navigation skips).
FAILING_IMPACTS = {"critical", "serious"}
FAILING_RULES = {"region"}

# axe's color-contrast rule is left to check_contrast (tests/site_support.py), which test_site.py runs on every
# page with the same WCAG ratio, charts' text included (light at 1,280 px; dark at 1,280 and 390 px); in axe it
# is the slowest rule by far.
_AXE_RUN = """() => axe.run(document, {resultTypes: ['violations'], rules: {'color-contrast': {enabled: false}}}).then(result => result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))})))"""


@pytest.mark.parametrize("width,scheme", VIEWS)
@pytest.mark.parametrize("doc", PAGES)
def test_axe_finds_nothing_serious(browser_context: Any, server: str, doc: str, width: int, scheme: str) -> None:
    """axe-core, run on the page once its charts are drawn and its math typeset, reports no critical or serious
    violation and no content outside the page's landmarks."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` (package.json pins axe-core)")
    page, log = open_page(browser_context, f"{server}{doc}.html", server, scheme, width)
    try:
        check_charts(page)
        check_math(page)
        settle(page)
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(_AXE_RUN)
        failing = [v for v in violations if v["impact"] in FAILING_IMPACTS or v["id"] in FAILING_RULES]
        assert not failing, f"{doc} at {width} px, {scheme}:\n" + "\n".join(
            f"  {v['impact']} {v['id']} ({v['help']}): " + "; ".join(v["targets"][:6])
            + (f" and {len(v['targets']) - 6} more" if len(v["targets"]) > 6 else "") for v in failing)
    finally:
        page.close()


# The chrome's controls a reader reaches with Tab: the sidebar toggles, the article header's buttons (download
# menu, full screen, theme, search), the search field, the previous/next links.
CONTROLS = [".bd-header-article button.primary-toggle", ".bd-header-article button.secondary-toggle",
            ".dropdown-download-buttons > button.dropdown-toggle", ".bd-header-article .btn-fullscreen-button",
            ".bd-header-article .theme-switch-button", ".bd-header-article button.search-button",
            ".bd-sidebar-primary .search-button-field", ".prev-next-area a.left-prev", ".prev-next-area a.right-next"]
MIN_RING_CONTRAST = 3.0  # WCAG 2.2 focus appearance / non-text contrast

# The focused control's outline (style, width, colour) and the colour behind it: the first opaque background up
# the tree (translucent ones composited over it), else the page's.
_RING = """(el) => {
    const rgba = (c) => { const m = (c || '').match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
        const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
    const lum = ([r, g, b]) => 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    const layers = [];
    for (let node = el.parentElement; node; node = node.parentElement) {
        const bg = rgba(getComputedStyle(node).backgroundColor);
        if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let behind = rgba(getComputedStyle(document.body).backgroundColor) || [255, 255, 255, 1];
    if (behind[3] < 1) behind = [255, 255, 255, 1];
    for (const layer of layers.reverse()) {
        behind = [0, 1, 2].map(i => layer[i] * layer[3] + behind[i] * (1 - layer[3])).concat([1]);
    }
    const style = getComputedStyle(el);
    const ring = rgba(style.outlineColor);
    const [hi, lo] = [lum(ring), lum(behind)].sort((a, b) => b - a);
    return {focusVisible: el.matches(':focus-visible'), style: style.outlineStyle,
            width: parseFloat(style.outlineWidth), contrast: (hi + 0.05) / (lo + 0.05)};
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_chrome_controls_show_a_focus_ring(browser_context: Any, server: str, width: int, scheme: str) -> None:
    """Each control of the chrome shown at this width, focused from the keyboard, draws an outline at least 2 px
    wide and 3:1 against what is behind it; so does each entry of the open download menu."""
    page, log = open_page(browser_context, f"{server}notebooks/03_fairness.html", server, scheme, width)
    try:
        settle(page)
        page.keyboard.press("Tab")  # the reader is on the keyboard: focus() then shows :focus-visible
        checked, bad = [], []
        for selector in CONTROLS:
            control = page.locator(selector).locator("visible=true").first
            if control.count() == 0:
                continue
            control.focus()
            ring = control.evaluate(_RING)
            checked.append(selector)
            if not (ring["focusVisible"] and ring["style"] not in ("none", "hidden") and ring["width"] >= 2
                    and ring["contrast"] >= MIN_RING_CONTRAST):
                bad.append(f"{selector}: {ring}")
        # The download menu opened from the keyboard: its entries.
        page.locator(".dropdown-download-buttons > button.dropdown-toggle").focus()
        page.keyboard.press("Enter")
        page.wait_for_selector(".dropdown-download-buttons .dropdown-menu.show")
        for _ in range(page.locator(".dropdown-download-buttons .dropdown-item").count()):
            page.keyboard.press("ArrowDown")
            ring = page.evaluate(f"() => ({_RING})(document.activeElement)")
            name = page.evaluate("() => document.activeElement.textContent.trim()")
            checked.append(f"menu entry {name}")
            if not (ring["focusVisible"] and ring["style"] != "none" and ring["width"] >= 2
                    and ring["contrast"] >= MIN_RING_CONTRAST):
                bad.append(f"menu entry {name}: {ring}")
        assert len(checked) >= 7, f"only {checked} found at {width} px"
        assert not bad, f"at {width} px, {scheme}, no visible focus ring:\n" + "\n".join(bad)
        assert not log.problems(), "\n".join(log.problems())
    finally:
        page.close()
