"""The nested-transactions chapter's claims at Obbish's calibrated setup."""

from __future__ import annotations

import pytest

from models.analysis import nested as nx


def test_serial_times_reproduce_the_measurements():
    curve = nx.maxdop_curve(maxdops=(1,))
    for query in ("fast", "slow"):
        got = float(curve.query("query == @query")["elapsed_s"].iloc[0]) * 1000
        assert got == pytest.approx(nx.MAXDOP1_MS[query], rel=0.01)


def test_interior_optimum_with_contender_cost_and_plateau_without():
    with_cost = nx.maxdop_curve(maxdops=(1, 4, 8, 16, 24))
    assert nx.tipping_point(with_cost, "fast") == 8
    fast = with_cost.query("query == 'fast'").set_index("maxdop")["elapsed_s"]
    assert fast[24] > 1.5 * fast[8]
    flat = nx.maxdop_curve(maxdops=(8, 16, 24), contender_cost_us=0.0).query("query == 'fast'")["elapsed_s"]
    assert flat.is_monotonic_decreasing or flat.max() / flat.min() < 1.05


def test_busy_cotenant_follows_the_floor_formula():
    table = nx.busy_table(maxdops=(8, 16), quanta=(2.0, 4.0))
    assert (table["slowdown"] > 10).all()
    ratio = table["elapsed_ms"] / table["floor_ms"]
    assert ((ratio >= 1.0) & (ratio < 1.1)).all()
    four = table.query("quantum_ms == 4.0").set_index("maxdop")["elapsed_ms"]
    assert four[16] < four[8]  # higher MAXDOP appears to help under a busy scheduler
