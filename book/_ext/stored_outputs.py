"""The site from the notebooks' stored outputs (``execute_notebooks: "off"``): what `make execute` stored, nbval checks.

Two things the site used to get from running each notebook again come from the stored notebook instead:

- The prose's inline expressions (``{eval}`f"{quoted.x:.1f}"```). myst-nb 1.4 evaluates them only in a
  running kernel (executablebooks/MyST-NB#596); here each is read from its markdown cell's
  ``user_expressions`` (written by scripts/execute_notebooks.py, read by jupyterlab-myst), in reading order.
  An expression whose next stored value is missing or belongs to another expression, or a stored value no
  sentence shows, fails the build: the stored values must be those of the prose as it stands.
- Charts. A notebook stores a chart in its notebook form (models/book/render.py: Vega 5, a PNG and the
  Vega-Lite spec); the site form (a div and a script calling the page's vega bundle) is made here from the
  stored spec by ``render.site_html``, the function an executed build called.
- Scripts by page (html-page-context): the vega bundle (0.9 MB) on the pages that draw a chart, and on no other;
  MathJax (1.1 MB) only on a page with math of its own (Sphinx also loads it on a page whose toctree holds a page
  with math: the preface, as the book's root).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from myst_nb.core.execute.base import NotebookClientBase
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from models.book import render

METADATA_KEY = "user_expressions"  # jupyterlab-myst's markdown cell metadata key
# The vega/vega-lite/vega-embed bundle (scripts/vendor_assets.py writes it into _static/), and how a page loads it.
VEGA_BUNDLE = "vega/vega-embed-bundle.js"
VEGA_LOADING: str | None = "defer"  # each chart's script waits for it (models/book/render.py)
# The mark of a chart drawn on the page (render.site_html's div).
CHART_MARK = 'class="latch-chart"'
# Each notebook's stored inline values still to be shown, in reading order: {notebook path: [(expression, data)]}.
_PENDING: dict[str, list[tuple[str, dict[str, Any]]]] = {}


def site_chart(data: dict[str, Any]) -> dict[str, Any]:
    """A stored chart output's data in the site's form (text/html and its text/plain stand-in); other data as is."""
    spec = data.get(render.SPEC_MIMETYPE)
    if spec is None:
        return data
    return {"text/html": render.site_html(spec), "text/plain": data.get("text/plain", "")}


def rendered_markdown(cell: dict[str, Any]) -> bool:
    """True for a markdown cell myst-nb renders (it skips empty cells and those tagged remove-cell)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return (cell["cell_type"] == "markdown" and bool("".join(cell["source"]).strip())
            and "remove-cell" not in tags and "remove_cell" not in tags)


def stored_values(nb: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every stored inline value of the rendered markdown cells, as (expression, data), in reading order."""
    return [(entry["expression"], entry["result"].get("data", {})) for cell in nb["cells"] if rendered_markdown(cell)
            for entry in cell.get("metadata", {}).get(METADATA_KEY, []) if entry["result"].get("status") == "ok"]


def _read_stored(app: Sphinx, docname: str, source: list[str]) -> None:
    """source-read: a notebook's charts in the site's form, and its stored inline values queued for {eval}."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb":
        return
    nb = json.loads(source[0])
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            if "data" in output:
                output["data"] = site_chart(output["data"])
    _PENDING[str(path.resolve())] = stored_values(nb)
    source[0] = json.dumps(nb)


def stored_value(client: NotebookClientBase, expression: str) -> list[nbformat.NotebookNode]:
    """The next stored value of the notebook, if it is this expression's (myst-nb's eval_variable with no kernel)."""
    pending = _PENDING.get(str(Path(client.path).resolve())) if client.path is not None else None
    if pending is None:
        raise NotImplementedError  # myst-nb reports "This document does not have a running kernel"
    if not pending:
        raise LookupError(f"no stored value for {expression!r}: run `make execute` to store the prose's values")
    stored, data = pending[0]
    if stored != expression:
        raise LookupError(f"the next stored value is for {stored!r}, not {expression!r}: the prose changed since "
                          "`make execute` stored its values")
    pending.pop(0)
    return [nbformat.from_dict({"output_type": "execute_result", "data": data, "metadata": {}})]


def _all_shown(app: Sphinx, doctree: Any) -> None:
    """doctree-read: every stored inline value of a notebook was shown by a sentence of its prose."""
    path = str(Path(app.env.doc2path(app.env.docname)).resolve())
    left = _PENDING.pop(path, [])
    if left:
        raise ExtensionError(f"{app.env.docname}: stored inline values no sentence shows "
                             f"{[expression for expression, _ in left[:5]]}: run `make execute`")


def _page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """html-page-context: the vega bundle on a page that draws a chart, on no other; MathJax only where the page
    itself holds math (run after sphinx.ext.mathjax's listener, which adds it)."""
    if CHART_MARK in context.get("body", ""):
        app.add_js_file(VEGA_BUNDLE, loading_method=VEGA_LOADING)
    if not app.env.get_domain("math").data["has_equations"].get(pagename, False):
        scripts = context.get("script_files", [])
        scripts[:] = [js for js in scripts if not _mathjax(app, js)]


def _mathjax(app: Sphinx, js: Any) -> bool:
    """True for the MathJax script sphinx.ext.mathjax adds to a page (at _static/<mathjax_path>) or its config."""
    filename = str(getattr(js, "filename", js) or "")
    body = getattr(js, "attributes", {}).get("body", "")
    return filename.endswith("/" + app.config.mathjax_path) or body.startswith("window.MathJax =")


def setup(app: Sphinx) -> dict[str, Any]:
    """Read charts and inline values from the stored notebooks when myst-nb does not execute them."""
    def install(app: Sphinx, config: Any) -> None:
        if config.nb_execution_mode != "off":
            return
        NotebookClientBase.eval_variable = stored_value  # the base client is the one used with execution off
        app.connect("source-read", _read_stored)
        app.connect("doctree-read", _all_shown)

    app.connect("config-inited", install)
    app.connect("html-page-context", _page_scripts, priority=600)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
