"""Stored outputs do not depend on the CPU: fitted numbers are rounded before they are glued or drawn.

Each analysis helper whose result a notebook glues or plots runs twice, once
as is and once "on another CPU" (tests/cpu_jitter.py nudges every BLAS- or
solver-backed result by 6e-8, more than a change of OpenBLAS kernel does):
the raw fit moves, what is stored does not.  nbval runs every notebook under
the same jitter (conftest.py); the last test checks that it really does.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import models
from models import analytic
from models.book import render, stored
from models.book.analysis import convoy as cv
from models.book.analysis import validation

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_jitter  # noqa: E402


def test_significant_rounds_floats_and_leaves_exact_values_alone():
    assert stored.significant(0.1434761116101261, 4) == 0.1435
    assert stored.significant(0.1434761126205209, 4) == 0.1435
    assert stored.significant(123456.789012345, 6) == 123457.0
    assert stored.significant(-2.5e-7, 2) == -2.5e-7
    assert stored.significant(265536.0) == 265536.0 and stored.significant(12345678901.0) == 12345678901.0
    assert stored.significant(7) == 7 and stored.significant(True) is True and stored.significant("x") == "x"
    assert math.isnan(stored.significant(float("nan"))) and stored.significant(float("inf")) == float("inf")
    assert isinstance(stored.significant(np.float64(1.23456789)), float)


def test_fitted_rounds_every_field_of_a_fit():
    fit = stored.fitted(analytic.USLFit(13225.557497011105, 0.14347513749717153, 0.041027892490553365,
                                        4.5739, 0.9412345))
    assert (fit.lambda_, fit.sigma, fit.kappa, fit.peak_n, fit.r_squared) == (13230.0, 0.1435, 0.04103, 4.574, 0.9412)


def test_glue_stores_the_rounded_value_for_the_prose():
    assert stored.glue("x_test", np.float64(0.1434761116101261)) == 0.1434761116
    assert stored.quoted.x_test == 0.1434761116 and type(stored.quoted.x_test) is float
    assert f"{stored.quoted.x_test:.2f}" == "0.14"  # what {eval}`f"{quoted.x_test:.2f}"` shows in the prose


def test_glue_refuses_a_name_the_prose_cannot_read():
    with pytest.raises(ValueError, match="not a Python identifier"):
        stored.glue("2w-2s", 1.0)


def test_chart_data_is_rounded_in_the_spec():
    spec = {"data": {"values": [{"y": 0.1434761116101261}, {"y": float("nan")}, {"y": 3}]}}
    spec = {"mark": "point", "encoding": {"y": {"field": "y", "type": "quantitative"}}, **spec}
    out = render.offline_renderer(spec)[render.NOTEBOOK_MIMETYPE]
    assert out["$schema"].endswith("/vega/v5.json")  # the Vega JupyterLab bundles draws it as is
    assert out["data"][0]["values"] == [{"y": 0.143476}, {"y": None}, {"y": 3}]
    source = render.offline_renderer(spec)[render.SPEC_MIMETYPE]  # the Vega-Lite spec, stored beside it
    assert source["data"]["values"] == [{"y": 0.143476}, {"y": None}, {"y": 3}]
    nudged = {**spec, "data": {"values": [{"y": 0.1434761126205209}, {"y": float("nan")}, {"y": 3}]}}
    assert render.chart_id(spec) == render.chart_id(nudged)


def test_the_jitter_moves_raw_fits():
    """Guard against a jitter that does nothing: the raw USL fit and least-squares slope change under it."""
    n = np.arange(1, 13, dtype=float)
    x = 1000 * analytic.usl(n, 0.05, 0.01) * (1 + 0.01 * np.sin(n))
    plain = analytic.usl_fit(n, x)
    with cpu_jitter.active():
        assert cpu_jitter.installed()
        moved = analytic.usl_fit(n, x)
        slope_moved = np.polyfit(n, x, 1)[0]
    assert not cpu_jitter.installed()
    assert moved.sigma != plain.sigma and slope_moved != np.polyfit(n, x, 1)[0]
    assert stored.fitted(moved) == stored.fitted(plain)


def test_jitter_keeps_each_routines_result_shape():
    """Jittered routines still return what callers expect (result objects, named tuples, arrays)."""
    from scipy import optimize, stats

    plain = stats.linregress([1, 2, 3, 4], [2.0, 4.1, 6.0, 8.3])
    with cpu_jitter.active():
        reg = stats.linregress([1, 2, 3, 4], [2.0, 4.1, 6.0, 8.3])
        popt, _ = optimize.curve_fit(lambda x, a, b: a * x + b, np.arange(5.0), 2 * np.arange(5.0) + 1)
        eig = np.linalg.eigh(np.eye(2))
        root = optimize.root(lambda x: x - 2, 0.0)
    assert type(reg).__name__ == "LinregressResult" and reg.slope != plain.slope and reg.intercept_stderr > 0
    assert popt.shape == (2,) and eig.eigenvalues.shape == (2,) and root.success


def test_usl_table_is_the_same_on_another_cpu():
    """The appendix's USL table and fit (glued and charted) come out identical under the jitter."""
    kwargs = dict(maxdops=(1, 2, 4, 8, 12, 16), rows=60_000)
    table, fit = validation.usl_table(**kwargs)
    with cpu_jitter.active():
        table_j, fit_j = validation.usl_table(**kwargs)
    assert fit == fit_j
    assert table.equals(table_j)


def test_convoy_slope_is_the_same_on_another_cpu():
    """The convoy chapter's wait per request ahead (a least-squares slope), rounded as the chapter stores it."""
    res = models.run("convoy", arrival_rate_per_s=550, arrivals="even", hold_ms=2.0, requests=2000,
                     record_acquires=2000)
    raw = cv.wait_per_request_ahead(res.acquire_log)
    with cpu_jitter.active():
        raw_j = cv.wait_per_request_ahead(res.acquire_log)
    assert raw != raw_j
    assert stored.fitted(raw) == stored.fitted(raw_j)


def test_nbval_kernels_run_on_another_cpu():
    """A kernel started the way nbval starts one (this process's environment) has the jitter installed."""
    jupyter_client = pytest.importorskip("jupyter_client")
    out: list[dict] = []
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        reply = kc.execute_interactive("import numpy, scipy.optimize\n"
                                       "print(getattr(numpy.polyfit, '__cpu_jitter__', False),"
                                       " getattr(scipy.optimize.least_squares, '__cpu_jitter__', False))",
                                       timeout=600, output_hook=out.append)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok"
    text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
    assert text.split() == ["True", "True"], text


def test_every_inline_expression_is_one_the_site_build_accepts():
    """myst-nb refuses (with a build warning, which fails the site) any {eval} expression outside the pattern
    _config.yml configures: catch it here, before a three-minute build."""
    import json
    import re

    import yaml

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(yaml.safe_load((root / "_config.yml").read_text())["sphinx"]["config"]["nb_eval_name_regex"])
    bad = []
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                bad += [f"{notebook.name}: {e}" for e in re.findall(r"\{eval\}`([^`]+)`", "".join(cell["source"]))
                        if not pattern.match(e)]
    assert not bad, "inline expressions the site build would refuse:\n" + "\n".join(bad)


# ---------------------------------------------------------------- where the book's folder is: one rule

def _book(folder: Path) -> Path:
    """A folder that looks like the book's: its two Jupyter Book files."""
    folder.mkdir(parents=True, exist_ok=True)
    for marker in stored.BOOK_MARKERS:
        (folder / marker).write_text("")
    return folder


def test_the_book_is_the_nearest_folder_above_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(stored.BOOK_ROOT_VARIABLE, raising=False)
    book = _book(tmp_path / "book_root")
    notebooks = book / "notebooks"
    notebooks.mkdir()
    monkeypatch.chdir(notebooks)  # a notebook runs here; the tests and the command line from the root
    assert stored.book_root() == book.resolve()
    assert stored.data_dir() == book.resolve() / "book" / "data"
    assert stored.book_path("tests", "captures") == book.resolve() / "tests" / "captures"


def test_the_variable_names_the_book_from_anywhere(tmp_path, monkeypatch):
    book = _book(tmp_path / "elsewhere")
    monkeypatch.setenv(stored.BOOK_ROOT_VARIABLE, str(book))
    monkeypatch.chdir(tmp_path)
    assert stored.book_root() == book.resolve()
    monkeypatch.setenv(stored.BOOK_ROOT_VARIABLE, str(tmp_path))  # set on purpose, but not the book: no guessing
    with pytest.raises(stored.BookNotFound, match=f"{stored.BOOK_ROOT_VARIABLE}=.* is not the book's folder"):
        stored.book_root()


def test_no_book_found_says_which_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv(stored.BOOK_ROOT_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    assert stored.find_book_root() is None
    with pytest.raises(stored.BookNotFound, match=f"set {stored.BOOK_ROOT_VARIABLE} to its folder"):
        stored.book_root()


def test_the_book_layers_paths_ask_stored(tmp_path, monkeypatch):
    """sweep's DATA_DIR, validation's tables and chapter 9's corpus are all in the folder stored names."""
    from models.book import sweep
    from models.book.analysis import your_server

    book = stored.book_root()
    assert sweep.DATA_DIR == stored.data_dir() == book / "book" / "data"
    assert validation.GRID.parent == validation.SCORECARD.parent == stored.data_dir()
    assert your_server.CORPUS == book / "tests" / "captures" and your_server.CORPUS.is_dir()
    other = _book(tmp_path / "copy")
    monkeypatch.setenv(stored.BOOK_ROOT_VARIABLE, str(other))
    assert sweep.DATA_DIR == other.resolve() / "book" / "data"  # looked up when named, not at import
