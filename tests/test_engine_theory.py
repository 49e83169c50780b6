"""The engine against closed forms: M/D/1, M/M/1 and the machine-repairman model by exact MVA."""

from __future__ import annotations

import numpy as np
import pytest

import models
from models import analytic
from models.statistics import batch_means_ci


# (hold_dist, utilisation, runs, requests per run): heavier traffic needs longer runs to converge.
CASES = [
    ("fixed", 0.5, 1, 200_000), ("fixed", 0.8, 1, 1_000_000), ("fixed", 0.9, 2, 2_000_000),
    ("exponential", 0.5, 1, 400_000), ("exponential", 0.8, 2, 1_000_000),
    ("exponential", 0.9, 4, 2_000_000),
]


@pytest.mark.parametrize("hold_dist,rho,runs,requests", CASES)
def test_convoy_matches_queueing_theory(hold_dist, rho, runs, requests):
    hold_ms = 2.0
    rate = rho / hold_ms * 1000.0
    waits = []
    for seed in range(1, runs + 1):
        res = models.run("convoy", arrival_rate_per_s=rate, hold_ms=hold_ms, hold_dist=hold_dist,
                         requests=requests, wakeup_us=0, context_switch_us=0, seed=seed)
        assert not res.truncated
        assert res.wait_stats.loc[0, "signal_wait_time_ms"] == 0.0  # no CPU queueing at all
        waits.append(res.acquire_wait_ms)
    samples = np.concatenate(waits)
    mean, half = batch_means_ci(samples[len(samples) // 20:], batches=20 * runs)  # a 5% warm-up dropped
    formula = analytic.md1 if hold_dist == "fixed" else analytic.mm1
    expected = formula(rate / 1000.0, hold_ms).mean_wait
    assert abs(mean - expected) <= half, (mean, half, expected)
    assert abs(mean - expected) <= 0.03 * expected, (mean, expected)


def test_convoy_mean_wait_is_total_wait_over_acquires():
    res = models.run("convoy", arrival_rate_per_s=400, hold_ms=2, requests=20_000,
                     wakeup_us=0, context_switch_us=0)
    total = res.latch_stats.loc[0, "wait_time_ms"] / res.latch_stats.loc[0, "acquires"]
    assert res.mean_wait_ms == pytest.approx(total, rel=1e-9)


@pytest.mark.parametrize("workers", [1, 2, 4, 8, 16])
def test_closed_latch_matches_exact_mva(workers):
    think_ms, hold_ms = 1.0, 0.1
    res = models.run("closed-latch", workers=workers, schedulers=workers, think_ms=think_ms,
                     hold_ms=hold_ms, think_dist="exponential", hold_dist="exponential",
                     acquires=150_000 * max(1, workers // 4), wakeup_us=0, context_switch_us=0)
    mva = analytic.mva_repairman(workers, think_ms, hold_ms)
    throughput = float(np.asarray(mva.throughput)[-1])  # acquires per ms at N = workers
    response = float(np.asarray(mva.response_time)[-1])
    assert res.throughput_per_s / 1000.0 == pytest.approx(throughput, rel=0.02)
    assert res.mean_wait_ms + hold_ms == pytest.approx(response, rel=0.02)


def test_fair_handoff_caps_convoy_capacity():
    """Once a queue exists each hand-off adds wake-up + switch: capacity is 1 / (hold + hand-off)."""
    hold_ms, wakeup_us, switch_us = 2.0, 150.0, 50.0
    res = models.run("convoy", arrival_rate_per_s=2000, arrivals="even", hold_ms=hold_ms,
                     requests=5000, wakeup_us=wakeup_us, context_switch_us=switch_us)
    capacity = 1000.0 / (hold_ms + (wakeup_us + switch_us) / 1000.0)
    assert res.throughput_per_s == pytest.approx(capacity, rel=0.01)


def test_hysteresis_even_arrivals_between_the_two_capacities():
    """Between 1/(hold + hand-off) and 1/hold: an empty start never queues, a burst never drains."""
    kw = dict(arrival_rate_per_s=480, arrivals="even", hold_ms=2.0, requests=4000,
              wakeup_us=150.0, context_switch_us=50.0)
    healthy = models.run("convoy", **kw)
    assert healthy.latch_stats.loc[0, "waiting_requests_count"] == 0
    burst = models.run("convoy", initial_queue=20, **kw)
    stats_ = burst.latch_stats.loc[0]
    assert stats_["waiting_requests_count"] == stats_["acquires"] - 1  # every request after the first waited
