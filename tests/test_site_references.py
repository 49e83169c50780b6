"""The References page and the book's citations (issue 43): every reference has a link (a URL or a DOI), the
list is in the order the page states, every reference is cited and every citation names one reference, the
list's ARIA structure is valid, and on a phone neither a label nor a URL makes the page scroll sideways.

The stated order is that of the labels: alphabetical by author, then by year or, for the documentation pages
labelled by subject, by that subject, ignoring case and accents; references sharing author and year are told
apart by a, b, c in the order of their titles (book/references.md says so in a line above the list).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from pybtex.database import parse_file
from pybtex.richtext import Text

from site_support import ROOT, at_rest, open_page  # tests/ is on sys.path (pytest puts a test file's folder there)

pytestmark = pytest.mark.site

REFERENCES = "book/references.html"
BIB = ROOT / "book" / "references.bib"
WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")
# A label's a/b/c suffix: "Obbish, 2018b" -> ("Obbish, 2018", "b").
SUFFIX = re.compile(r"^(.*\d{4})([a-z])$")


def fold(text: str) -> str:
    """Text as the order compares it: case and accents ignored ("Poché" sorts as "poche")."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).strip()


def reference_entries(site: Path) -> list[dict[str, Any]]:
    """The References page's entries in page order: id (cite-<key>), label (no brackets), text and links."""
    soup = BeautifulSoup((site / REFERENCES).read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main") or soup
    entries = []
    for entry in main.select(".citation"):
        label = entry.find(class_="label")
        entries.append({"id": entry.get("id", ""), "label": " ".join(label.get_text().strip("[] \n").split()),
                        "text": " ".join(entry.get_text().split()),
                        "hrefs": [a["href"] for a in entry.find_all("a", href=True)]})
    return entries


def citation_links(page: Path) -> list[tuple[str, str]]:
    """(label text, reference id) for every link on a built page into the References page's entries."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    out = []
    for a in (soup.find("main") or soup).find_all("a", href=True):
        path, _, anchor = a["href"].partition("#")
        if path.endswith("references.html") and anchor.startswith("cite-"):
            out.append((" ".join(a.get_text().split()), anchor))
    return out


def citing_pages(site: Path) -> dict[str, set[str]]:
    """Reference id -> the pages (other than the References page) that cite it."""
    cited: dict[str, set[str]] = {}
    for page in sorted(site.glob("book/*.html")) + sorted(site.glob("notebooks/*.html")) + [site / "index.html"]:
        if page.name == "references.html" or not page.exists():
            continue
        for _, ref_id in citation_links(page):
            cited.setdefault(ref_id, set()).add(page.relative_to(site).as_posix())
    return cited


def bib_titles() -> dict[str, str]:
    """Reference id -> its title as plain text (braces and LaTeX decoded), from book/references.bib."""
    data = parse_file(str(BIB))
    return {"cite-" + key.replace("_", "-"): Text.from_latex(entry.fields.get("title", "")).render_as("text")
            for key, entry in data.entries.items()}


def order_key(label: str, title: str) -> tuple[str, str, str]:
    """Where the stated order puts a reference: its label's author, then its year or subject, then its title."""
    base = SUFFIX.sub(r"\1", label)
    who, sep, when = base.rpartition(", ")
    return (fold(who), fold(when), fold(title)) if sep else (fold(base), "", fold(title))


def out_of_order(entries: list[dict[str, Any]], titles: dict[str, str]) -> list[str]:
    """The entries that come before the one above them in the stated order (with that one), as text."""
    keys = [order_key(e["label"], titles.get(e["id"], "")) for e in entries]
    return [f"{entries[i]['label']!r} after {entries[i - 1]['label']!r}"
            for i in range(1, len(keys)) if keys[i] < keys[i - 1]]


def suffix_errors(entries: list[dict[str, Any]]) -> list[str]:
    """Labels whose a/b/c suffixes are not a, b, c... on consecutive entries in the list's order."""
    runs: dict[str, list[tuple[int, str]]] = {}
    for position, entry in enumerate(entries):
        match = SUFFIX.match(entry["label"])
        if match:
            runs.setdefault(match.group(1), []).append((position, match.group(2)))
    errors = []
    for base, run in runs.items():
        letters = "".join(letter for _, letter in run)
        positions = [p for p, _ in run]
        if letters != "abcdefghijklmnopqrstuvwxyz"[:len(run)] or positions != list(range(positions[0], positions[0] + len(run))):
            errors.append(f"{base}: suffixes {letters!r} at positions {positions}")
    return errors


# ---------------------------------------------------------------- the list's content

def test_every_reference_has_a_link(site: Path) -> None:
    """Every reference shows a working address: an http(s) URL or a DOI, as a link."""
    entries = reference_entries(site)
    assert len(entries) >= 90, f"only {len(entries)} references found"
    missing = [e["label"] for e in entries if not any(h.startswith(("http://", "https://")) for h in e["hrefs"])]
    assert not missing, f"{len(missing)} of {len(entries)} references have no URL or DOI: {missing}"


def test_references_in_the_stated_order(site: Path) -> None:
    """The list is in the order the page states (author, then year or subject, then title; case and accents
    ignored), the page states it, and shared labels' a/b/c suffixes follow that order."""
    entries = reference_entries(site)
    wrong = out_of_order(entries, bib_titles())
    assert not wrong, f"{len(wrong)} references out of order: {wrong[:12]}"
    assert not suffix_errors(entries), suffix_errors(entries)
    soup = BeautifulSoup((site / REFERENCES).read_text(encoding="utf-8"), "html.parser")
    intro = " ".join((soup.find("main") or soup).get_text().split())
    assert re.search(r"alphabetical order of (their|the) labels", intro), "the page does not state its order"


def test_every_reference_is_cited_and_every_citation_resolves(site: Path) -> None:
    """Every reference is cited from at least one page, and every citation link names an entry of the list."""
    ids = {e["id"] for e in reference_entries(site)}
    cited = citing_pages(site)
    never = sorted(ids - set(cited))
    assert not never, f"{len(never)} references are never cited: {never}"
    dangling = sorted(ref_id for ref_id in cited if ref_id not in ids)
    assert not dangling, f"citations name no entry of the References page: {dangling}"


def test_bibliography_aria_structure(site: Path) -> None:
    """The list's ARIA roles are valid: a role=list holds only listitems (at least one), each listitem sits in a
    list, and no entry carries the DPUB role doc-biblioentry (deprecated; axe-core's aria-required-children)."""
    soup = BeautifulSoup((site / REFERENCES).read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main") or soup
    lists = main.select('[role="list"]')
    assert lists, "the bibliography is not marked as a list"
    for lst in lists:
        children = lst.find_all(recursive=False)
        roles = [c.get("role") or c.name for c in children]
        assert children and all(r in ("listitem", "li") for r in roles), f"role=list children: {roles[:8]}"
    for item in main.select('[role="listitem"]'):
        assert item.parent.get("role") == "list" or item.parent.name in ("ul", "ol"), "a listitem outside a list"
    assert not main.select('[role="doc-biblioentry"]'), "entries still carry role=doc-biblioentry"
    entries = main.select(".citation")
    assert entries and all(e.get("role") == "listitem" for e in entries)


# ---------------------------------------------------------------- the page in a browser

_OVERFLOW = """() => {
    const doc = document.documentElement, width = doc.clientWidth;
    const over = [...document.querySelectorAll('main .citation .label, main .citation a')]
        .map(el => [el.textContent.trim().slice(0, 60), Math.round(el.getBoundingClientRect().right)])
        .filter(([, right]) => right > width + 1);
    return {scrollWidth: doc.scrollWidth, clientWidth: width, over: over.slice(0, 8), count: over.length};
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_references_page_fits_the_window(server: str, browser_context: Any, width: int, scheme: str) -> None:
    """At 1,280 and 390 px, light and dark, the References page does not scroll sideways and no label or URL
    reaches past the window's right edge (long labels and URLs break)."""
    page, log = open_page(browser_context, server + REFERENCES, server, scheme, width)
    try:
        at_rest(page)
        report = page.evaluate(_OVERFLOW)
        assert report["scrollWidth"] <= report["clientWidth"], f"the page scrolls sideways at {width} px: {report}"
        assert not report["count"], f"labels or links past the right edge at {width} px: {report}"
        assert not log.problems(), log.problems()
    finally:
        page.close()
