"""The appendix's tables: validation.readable formats the cells, charts.dmv_table draws them whole."""

from __future__ import annotations

import pandas as pd

from models.book import charts
from models.book.analysis import validation


def test_readable_signs_errors_and_the_table_never_truncates_a_cell():
    table = pd.DataFrame({"hold": ["fixed", "exponential"], "error_pct": [0.5, -1.25], "within_ci": [True, False],
                          "seed": [101, 1102], "reference": ["x" * 120, "short"]})
    shown = validation.readable(table, list(table.columns))
    assert list(shown.columns) == ["hold", "error (%)", "exact inside interval", "seed", "reference"]
    html = charts.dmv_table(shown, "A test table").to_html()
    assert "+0.50" in html and "-1.25" in html and ">no<" in html and "1,102" in html
    assert "x" * 120 in html and "..." not in html


def test_readable_takes_digits_per_column():
    table = pd.DataFrame({"utilisation": [0.5], "mean_wait_ms": [1.23456]})
    shown = validation.readable(table, ["utilisation", "mean_wait_ms"], digits=4, precision={"utilisation": 2})
    assert shown.iloc[0].tolist() == ["0.50", "1.2346"]
