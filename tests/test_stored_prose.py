"""The site shows the notebooks' stored outputs (book/_ext/stored_outputs.py): the checks that keep them current.

nbval compares every code cell's stored outputs (the charts' Vega-Lite specs and the tables included);
tests/nbval_prose.py does the same for the prose's stored inline values; and the site build refuses an
inline value its notebook does not store for the prose as it stands.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("stored_outputs", ROOT / "book" / "_ext" / "stored_outputs.py")
stored_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stored_outputs)


def tiny_notebook(stored_text: str, expressions: tuple[str, ...] = ("x",)) -> nbformat.NotebookNode:
    """A notebook computing x = 2 whose prose quotes {eval}`x`, storing ``stored_text`` for it."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    code = nbformat.v4.new_code_cell("x = 2", execution_count=1)
    prose = nbformat.v4.new_markdown_cell("The answer is {eval}`x`.")
    prose.metadata["user_expressions"] = [
        {"expression": e, "result": {"status": "ok", "data": {"text/plain": stored_text}, "metadata": {}}}
        for e in expressions]
    nb.cells = [code, prose]
    return nb


def test_nbval_fails_a_stale_stored_inline_value(tmp_path: Path) -> None:
    """Beside nbval, a notebook whose prose stores a value this run does not give, or stores it for an
    expression the prose no longer reads, fails; the current one passes."""
    for name, nb in {"current": tiny_notebook("2"), "stale": tiny_notebook("3"),
                     "edited": tiny_notebook("2", ("y",))}.items():
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    # Its own pytest process: the plugin as conftest.py loads it, on a kernel nbval starts (an outer limit
    # for a hung run only).
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "nbval_prose",
                           "--nbval", "--nbval-current-env", "-rA", "current.ipynb", "stale.ipynb", "edited.ipynb"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "PASSED current.ipynb::Cell 0" in out, out[-3000:]
    assert "FAILED stale.ipynb::Cell 0" in out and "x stored 3, this run 2" in out, out[-3000:]
    assert "FAILED edited.ipynb::Cell 0" in out and "the prose reads ['x']" in out, out[-3000:]


def client_for(nb: nbformat.NotebookNode, path: Path) -> SimpleNamespace:
    """What the site build's eval role sees: myst-nb's client for the notebook at ``path``, with its stored
    values queued as the build's source-read step queues them."""
    stored_outputs._PENDING[str(path.resolve())] = stored_outputs.stored_values(nb)
    return SimpleNamespace(path=path)


def test_the_build_shows_only_stored_values_in_reading_order(tmp_path: Path) -> None:
    """The site's inline value is the stored one; a value for another expression, or none left, is refused."""
    path = tmp_path / "nb.ipynb"
    client = client_for(tiny_notebook("2"), path)
    shown = stored_outputs.stored_value(client, "x")
    assert shown[0]["data"] == {"text/plain": "2"}
    with pytest.raises(LookupError, match="no stored value for 'x'"):
        stored_outputs.stored_value(client, "x")
    client = client_for(tiny_notebook("2"), path)
    with pytest.raises(LookupError, match="the next stored value is for 'x', not 'y'"):
        stored_outputs.stored_value(client, "y")


def test_the_build_draws_the_stored_chart_spec() -> None:
    """A stored chart becomes the site's chart from its stored Vega-Lite spec (the output nbval compares)."""
    from models.book import render

    spec = {"mark": "point", "data": {"values": [{"a": 1.5}]}, "encoding": {"x": {"field": "a"}}}
    stored = {render.SPEC_MIMETYPE: spec, render.NOTEBOOK_MIMETYPE: {}, "image/png": "", "text/plain": "<chart>"}
    assert stored_outputs.site_chart(stored) == {"text/html": render.site_html(spec), "text/plain": "<chart>"}
    table = {"text/html": "<table></table>", "text/plain": "t"}
    assert stored_outputs.site_chart(table) is table
