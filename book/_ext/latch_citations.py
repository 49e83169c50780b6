"""Citations that name one source each, and links from the notebooks that read as text in JupyterLab too.

- **Labels**: every reference is labelled "Author, Year", with a/b/c suffixes where two share both
  ("Obbish, 2019a", "Obbish, 2019b"), or "Author, short title" where the entry has a ``shorttitle``
  (Microsoft's documentation pages: "Microsoft, sys.dm_os_latch_stats"), by a pybtex label style (``latch``) and the bibliography style
  that uses it (``latch``); citations print that label (sphinxcontrib-bibtex's ``label`` referencing with
  a ``"; "`` between grouped labels, registered as ``latch``), so a label stands for exactly one reference.
- **Anchors**: a reference's id on the references page is ``cite-<key>`` (``bibtex_cite_id``) and a glossary
  term's is Sphinx's ``term-<term>``. The notebooks cite and link glossary terms with plain Markdown links to
  those anchors (``[Microsoft, sys.dm_os_latch_stats](../book/references.md#cite-mslearn-latch-stats)``), which
  jupyterlab-myst renders as text links, where ``{cite}`` and ``{term}`` roles show raw keys and log errors.
  MyST resolves a link's ``#anchor`` only among a page's heading slugs, so this extension adds these ids to
  the slugs of the references and glossary pages, and each page's explicit labels to its own (a chapter
  links to another chapter's section the same way): a link to an id that does not exist still warns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from docutils import nodes
from pybtex.plugin import register_plugin as register_pybtex
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin as register_bibtex
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.label import LabelReferenceStyle

NAME = "latch"
# Page -> id prefix of the anchors the notebooks link to on it.
LINKED_IDS = {"book/references": "cite-", "book/glossary": "term-"}


def _plain(latex: str) -> str:
    """A BibTeX field or name part as plain text (braces and accents decoded)."""
    return Text.from_latex(latex).render_as("text")


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
        persons = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_plain(" ".join(p.last_names) or " ".join(p.first_names)) for p in persons]
        if not names:
            names = [_plain(entry.fields.get("organization") or entry.fields.get("title", entry.key))]
        who = names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2 else f"{names[0]} et al."
        if "shorttitle" in entry.fields:  # one author's many pages (Microsoft's): named by what they are
            return f"{who}, {_plain(entry.fields['shorttitle'])}"
        year = entry.fields.get("year")
        return f"{who}, {year}" if year else who


class AuthorYearStyle(PlainStyle):
    """pybtex's plain bibliography, labelled by :class:`AuthorYearLabelStyle`."""

    default_label_style = NAME


@dataclass
class SemicolonLabelReferenceStyle(LabelReferenceStyle):
    """The label referencing style with "; " between the labels of a grouped citation."""

    bracket_parenthetical: BracketStyle = field(default_factory=lambda: BracketStyle(sep="; "))
    bracket_textual: BracketStyle = field(default_factory=lambda: BracketStyle(sep="; "))


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
    register_bibtex("sphinxcontrib.bibtex.style.referencing", NAME, SemicolonLabelReferenceStyle)
    app.connect("doctree-read", add_linked_ids)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
