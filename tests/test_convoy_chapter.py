"""The convoy chapter's claims: capacities, hysteresis, recovery, onset detection and its stored data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import models
from models.analysis import convoy as cv
from models.sweep import DATA_DIR, run_point
from models.sweeps import convoy as sweep_def

BIG = {"wakeup_us": 195.0, "context_switch_us": 5.0}


def _run(**kw):
    n = kw.get("requests", 20_000) + kw.get("initial_queue", 0)
    return models.run("convoy", hold_ms=2.0, record_acquires=n, **kw)


def test_capacities_and_md1():
    assert cv.capacities(2.0, 0.0) == (500.0, 500.0)
    assert cv.capacities(2.0, 200.0)[1] == pytest.approx(1000 / 2.2)
    assert cv.md1_mean_wait_ms(400, 2.0) == pytest.approx(4.0)
    assert math.isinf(cv.md1_mean_wait_ms(500, 2.0))
    with pytest.raises(ValueError):
        cv.capacities(0.0, 10.0)


def test_md1_helper_agrees_with_analytic_module_when_present():
    analytic = pytest.importorskip("models.analytic")
    assert cv.md1_mean_wait_ms(400, 2.0) == pytest.approx(analytic.md1(0.4, 2.0).mean_wait)


def test_convoy_onset_definition():
    t = np.arange(10.0)
    assert math.isnan(cv.convoy_onset_ms(t, np.zeros(10), 5.0))            # never above
    assert cv.convoy_onset_ms(t, np.full(10, 9.0), 5.0) == 0.0            # above from the start
    w = np.array([0, 9, 9, 0, 0, 9, 9, 9, 9, 9], dtype=float)             # an excursion that came back
    assert cv.convoy_onset_ms(t, w, 5.0) == 5.0
    w[-1] = 0.0                                                            # ends healthy: no convoy
    assert math.isnan(cv.convoy_onset_ms(t, w, 5.0))
    with pytest.raises(ValueError):
        cv.convoy_onset_ms(t[::-1], w, 5.0)


def test_onset_summary_counts_censored_runs_as_later():
    df = pd.DataFrame({"arrival_rate_per_s": [460] * 4, "time_to_convoy_s": [1.0, 2.0, np.nan, 70.0]})
    row = cv.onset_summary(df, horizon_s=60.0).iloc[0]
    assert row["convoyed"] == 2 and row["share"] == 0.5
    assert math.isnan(row["median_s"])  # half never convoyed within the horizon: no finite median
    df.loc[2, "time_to_convoy_s"] = 3.0
    assert cv.onset_summary(df, 60.0).iloc[0]["median_s"] == pytest.approx(2.5)


def test_queue_growth_is_one_hold_per_request_ahead():
    free = _run(arrival_rate_per_s=550, arrivals="even", requests=1000, wakeup_us=0, context_switch_us=0)
    assert free.throughput_per_s == pytest.approx(500.0, rel=1e-3)
    assert cv.wait_per_request_ahead(free.acquire_log) == pytest.approx(2.0, rel=1e-3)
    handed = _run(arrival_rate_per_s=1000, arrivals="even", requests=1000, **BIG)
    assert cv.wait_per_request_ahead(handed.acquire_log) == pytest.approx(2.2, rel=1e-3)


def test_queue_length_from_log():
    res = _run(arrival_rate_per_s=480, arrivals="even", requests=1000, initial_queue=20, **BIG)
    q = cv.queue_length(res.acquire_log, np.array([1.0, 1000.0, 2000.0]))
    assert 15 <= q[0] <= 20  # the burst reaches the latch as its tasks get onto their schedulers
    growth = (q[2] - q[1]) / 1.0
    assert growth == pytest.approx(480 - 1000 / 2.2, abs=2)
    assert (cv.queue_length(res.acquire_log, [1000.0], include_holder=True) == q[1] + 1).all()


@pytest.mark.parametrize("rate,drains", [(440, True), (460, False)])
def test_recovery_needs_load_below_convoy_capacity(rate, drains):
    res = _run(arrival_rate_per_s=rate, arrivals="even", requests=3000, initial_queue=50, **BIG)
    q = cv.queue_series(res.acquire_log, 6000.0, 61)["queue"].to_numpy()
    assert bool(q[-1] == 0) is drains
    assert bool(q[-1] > 50) is (not drains)


def test_hysteresis_with_default_handoff():
    """The band exists at the realistic 25 us hand-off too, only narrower (493.8 to 500 req/s)."""
    kw = dict(arrival_rate_per_s=497, arrivals="even", requests=3000, wakeup_us=20.0, context_switch_us=5.0)
    assert _run(**kw).latch_stats.loc[0, "waiting_requests_count"] == 0
    stuck = _run(initial_queue=10, **kw)
    assert stuck.throughput_per_s < 497 - 1


def test_poisson_convoy_detected_above_and_not_below():
    def onset(rate):
        res = _run(arrival_rate_per_s=rate, requests=int(rate * 30), seed=3, **BIG)
        log = cv.by_request(res.acquire_log)
        return cv.convoy_onset_ms(log["request_ms"].to_numpy(), log["wait_ms"].to_numpy(), 100.0)
    assert math.isnan(onset(400))
    assert onset(490) < 20_000


def test_sweep_definition_and_stored_rows_are_fresh():
    sweep = sweep_def.SWEEP
    assert sweep.scenario == "convoy"
    stored = pd.read_csv(DATA_DIR / "convoy.csv")
    assert len(stored) == len(sweep.points())
    for k in (0, 97, 311):  # a sample of grid points, recomputed
        point = sweep.points()[k]
        row = run_point(sweep, point)
        for col in ("throughput_per_s", "mean_wait_ms", "p99_wait_ms"):
            assert stored.loc[k, col] == pytest.approx(row[col], rel=1e-4, abs=1e-6), (k, col)


def test_onset_table_is_fresh():
    stored = pd.read_csv(DATA_DIR / sweep_def.ONSET_FILE)
    assert len(stored) == len(sweep_def.ONSET_RATES) * sweep_def.ONSET_SEEDS
    for rate, seed in ((470, 2), (440, 1)):
        row = sweep_def.onset_row(rate, seed)
        old = stored[(stored["arrival_rate_per_s"] == rate) & (stored["seed"] == seed)].iloc[0]
        if math.isnan(row["time_to_convoy_s"]):
            assert math.isnan(old["time_to_convoy_s"])
        else:
            assert old["time_to_convoy_s"] == pytest.approx(row["time_to_convoy_s"], rel=1e-4)
