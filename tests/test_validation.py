"""The appendix's comparisons that tests elsewhere do not already assert.

Convoy vs M/D/1 and M/M/1 and closed-latch vs MVA are asserted in
tests/test_engine_theory.py; SimPy and Ciw agreement in tests/test_crosscheck.py.
"""

from __future__ import annotations

import pytest

from models.analysis import validation as v


def test_one_scheduler_cpu_queue_is_mm1():
    row = v.cpu_queue(1, 0.8, tasks=100_000)
    assert row["simulated_wait_ms"] == pytest.approx(row["mmc_wait_ms"], rel=0.05)


@pytest.mark.parametrize("servers", [2, 4])
def test_per_scheduler_queues_lie_between_pooled_and_split(servers):
    row = v.cpu_queue(servers, 0.8, tasks=60_000)
    assert row["mmc_wait_ms"] < row["simulated_wait_ms"] < row["split_mm1_wait_ms"]


def test_usl_fits_the_contended_insert_with_an_interior_peak():
    table, fit = v.usl_table()
    best = int(table.loc[table["simulated_log_records_per_s"].idxmax(), "maxdop"])
    assert fit.r_squared > 0.9 and fit.kappa > 0
    assert 2 <= fit.peak_n <= 12 and abs(fit.peak_n - best) <= 4


def test_without_coherency_cost_the_fit_finds_no_early_peak():
    table, fit = v.usl_table(contender_cost_us=0.0)
    plateau = table["simulated_log_records_per_s"].iloc[-4:]
    assert plateau.max() / plateau.min() < 1.02  # flat at 1 / (hold + hand-off)


def test_convergence_half_width_shrinks_with_run_length():
    table = v.convergence_table()
    assert table["ci_half_ms"].is_monotonic_decreasing or table["ci_half_ms"].iloc[-1] < table["ci_half_ms"].iloc[0] / 3


def test_open_queue_table_within_three_percent():
    table = v.open_queue_table([0.5, 0.8], requests=300_000)
    assert (table["error_pct"].abs() < 3).all()
