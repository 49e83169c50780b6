"""Citations that name one source each, and links from the notebooks that read as text in JupyterLab too.

- **Labels**: every reference is labelled "Author, Year", with a/b/c suffixes where two share both
  ("Obbish, 2019a", "Obbish, 2019b"), or "Author, short title" where the entry has a ``shorttitle``
  (Microsoft's documentation pages: "Microsoft, sys.dm_os_latch_stats"), by a pybtex label style (``latch``) and the bibliography style
  that uses it (``latch``); citations print that label (sphinxcontrib-bibtex's ``label`` referencing with
  a ``"; "`` between grouped labels, registered as ``latch``), so a label stands for exactly one reference.
- **Order**: the references page lists the references in alphabetical order of their labels (author, then year
  or the short title, then title; case and accents ignored: ``latch`` sorting style), so the a/b/c suffixes run
  down the page in title order, as book/references.md says above the list.
- **Markup**: the list is a ``role="list"`` whose entries are ``role="listitem"`` (docutils writes the DPUB role
  ``doc-biblioentry``, which axe-core's aria-required-children rejects under a list), and on the references page
  a label sits on its own line above its entry, where a long label or URL breaks instead of widening the page.
- **Anchors**: a reference's id on the references page is ``cite-<key>`` (``bibtex_cite_id``) and a glossary
  term's is Sphinx's ``term-<term>``. The notebooks cite and link glossary terms with plain Markdown links to
  those anchors (``[Microsoft, sys.dm_os_latch_stats](../book/references.md#cite-mslearn-latch-stats)``), which
  jupyterlab-myst renders as text links, where ``{cite}`` and ``{term}`` roles show raw keys and log errors.
  MyST resolves a link's ``#anchor`` only among a page's heading slugs, so this extension adds these ids to
  the slugs of the references and glossary pages, and each page's explicit labels to its own (a chapter
  links to another chapter's section the same way): a link to an id that does not exist still warns.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from docutils import nodes
from pybtex.plugin import register_plugin as register_pybtex
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin as register_bibtex
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.label import LabelReferenceStyle

NAME = "latch"
# Page -> id prefix of the anchors the notebooks link to on it.
LINKED_IDS = {"book/references": "cite-", "book/glossary": "term-"}
REFERENCES_PAGE = "book/references"
# The references page's list: each label on its own line, entries spaced, and labels and URLs (long, with no
# spaces: "Microsoft, sys.dm_tran_active_snapshot_database_transactions") broken rather than widening the page.
REFERENCES_CSS = """<style>
main div.citation-list > div.citation { margin: 0 0 0.9em; }
main div.citation > span.label { float: none; display: block; font-weight: 600; overflow-wrap: anywhere; }
main div.citation > p { margin-left: 1.5em; overflow-wrap: anywhere; }
</style>
"""


def _plain(latex: str) -> str:
    """A BibTeX field or name part as plain text (braces and accents decoded)."""
    return Text.from_latex(latex).render_as("text")


def fold(text: str) -> str:
    """Text as the references' order compares it: case and accents ignored ("Poché" sorts as "poche")."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).strip()


def label_parts(entry: Any) -> tuple[str, str]:
    """A reference's label in two parts: who ("Surname", "A & B", "A et al." or the organisation) and what
    tells its references apart (the short title where the entry has one, else the year; may be empty)."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_plain(" ".join(p.last_names) or " ".join(p.first_names)) for p in persons]
    if not names:
        names = [_plain(entry.fields.get("organization") or entry.fields.get("title", entry.key))]
    who = names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2 else f"{names[0]} et al."
    if "shorttitle" in entry.fields:  # one author's many pages (Microsoft's): named by what they are
        return who, _plain(entry.fields["shorttitle"])
    return who, entry.fields.get("year", "")


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels "Surname, Year" ("A & B", "A et al.") or "Surname, short title", suffixed a, b, c in
    bibliography order where two references would otherwise share a label."""

    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterable[str]:
        labels = [self.format_label(entry) for entry in sorted_entries]
        count, seen = Counter(labels), Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                yield label + chr(ord("a") + seen[label])
                seen[label] += 1

    def format_label(self, entry: Any) -> str:
        who, what = label_parts(entry)
        return f"{who}, {what}" if what else who


class LabelOrderSortingStyle(BaseSortingStyle):
    """References in alphabetical order of their labels: author, then year or short title, then title (which
    orders the a/b/c suffixes), case and accents ignored; "Randal, 2010" comes before "Randal, 2014" whatever the
    initials, and "Microsoft, Accelerated database recovery" before "Microsoft, sys.dm_os_latch_stats"."""

    def sorting_key(self, entry: Any) -> tuple[str, str, str]:
        who, what = label_parts(entry)
        return fold(who), fold(what), fold(_plain(entry.fields.get("title", "")))


class AuthorYearStyle(PlainStyle):
    """pybtex's plain bibliography, labelled by :class:`AuthorYearLabelStyle` and sorted by
    :class:`LabelOrderSortingStyle`; a URL or DOI prints as a link (the plain style's web references)."""

    default_label_style = NAME
    default_sorting_style = NAME


@dataclass
class SemicolonLabelReferenceStyle(LabelReferenceStyle):
    """The label referencing style with "; " between the labels of a grouped citation."""

    bracket_parenthetical: BracketStyle = field(default_factory=lambda: BracketStyle(sep="; "))
    bracket_textual: BracketStyle = field(default_factory=lambda: BracketStyle(sep="; "))


def visit_citation(self: Any, node: nodes.citation) -> None:
    """Open a reference as a list item (docutils' own visitor, with role listitem for doc-biblioentry)."""
    if not isinstance(node.previous_sibling(), type(node)):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def depart_citation(self: Any, node: nodes.citation) -> None:
    """Close a reference, and the list after the last one."""
    self.body.append("</div>\n")
    if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
        self.body.append("</div>\n")


def add_references_css(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                       doctree: Any) -> None:
    """Give the references page (alone) the layout of its list: :data:`REFERENCES_CSS` in its head."""
    if pagename == REFERENCES_PAGE:
        context["metatags"] = context.get("metatags", "") + REFERENCES_CSS


def add_linked_ids(app: Sphinx, doctree: nodes.document) -> None:
    """Make the references' and glossary terms' ids, and every page's own labels (``(name)=``), targets a
    Markdown link's #anchor may name (``[chapter 1's query](01_latches_and_scheduling.ipynb#name)``)."""
    docname = app.env.docname
    slugs = app.env.metadata[docname].setdefault("myst_slugs", {})
    prefix = LINKED_IDS.get(docname)
    linked = {i: i for i in doctree.ids if prefix and i.startswith(prefix)}
    linked.update({name: node_id for name, node_id in doctree.nameids.items()
                   if node_id and doctree.nametypes.get(name)})  # explicit targets
    for anchor, node_id in linked.items():
        if anchor not in slugs:
            node = doctree.ids[node_id]
            slugs[anchor] = (node.line or 0, node_id, node.astext() or anchor)


def setup(app: Sphinx) -> dict[str, Any]:
    register_pybtex("pybtex.style.labels", NAME, AuthorYearLabelStyle)
    register_pybtex("pybtex.style.formatting", NAME, AuthorYearStyle)
    register_pybtex("pybtex.style.sorting", NAME, LabelOrderSortingStyle)
    register_bibtex("sphinxcontrib.bibtex.style.referencing", NAME, SemicolonLabelReferenceStyle)
    app.connect("doctree-read", add_linked_ids)
    app.connect("html-page-context", add_references_css)
    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
