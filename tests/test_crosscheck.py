"""The SimPy and Ciw latch models agree with queueing theory, with each other and with the engine.

Theory (hand-off 0): M/D/1 and M/M/1 mean wait for the open system, exact MVA
for the closed machine-repairman system. With a hand-off delay H > 0 the open
system is an M/G/1 queue with exceptional first service (Welch 1964): a request
that finds the latch free is served for S, one that queues owns it for H + S.
Agreement means: inside a 99% confidence interval from batch means (one run)
or from independent replications (several seeds).
"""

from __future__ import annotations

import numpy as np
import pytest

from models.crosscheck import (
    ciw_closed_latch,
    ciw_convoy,
    engine_closed_latch,
    engine_convoy,
    simpy_closed_latch,
    simpy_convoy,
)
from models.statistics import batch_means, batch_means_ci, difference_ci


def _engine_available() -> bool:
    """True once models.run exists (the engine is written in parallel with these checks)."""
    try:
        import models
    except ImportError:
        return False
    return hasattr(models, "run")


needs_engine = pytest.mark.skipif(not _engine_available(), reason="models.run (the engine) not available")

LEVEL = 0.99
BATCHES = 20
ENGINE_SEED = 10**7
SIMS_OPEN = {"simpy": simpy_convoy, "ciw": ciw_convoy}
SIMS_CLOSED = {"simpy": simpy_closed_latch, "ciw": ciw_closed_latch}


def open_wait_theory(lam: float, hold_ms: float, hold_dist: str, handoff_ms: float = 0.0) -> float:
    """Mean wait (arrival -> start of hold) of the open latch: Pollaczek-Khinchine with exceptional first service."""
    m0 = hold_ms
    m0_2 = hold_ms**2 if hold_dist == "fixed" else 2 * hold_ms**2
    m1 = hold_ms + handoff_ms
    m1_2 = m0_2 + 2 * handoff_ms * hold_ms + handoff_ms**2
    rho = lam * m1
    p_free = (1 - rho) / (1 - rho + lam * m0)  # fraction of requests that find the latch free
    residual = lam * (p_free * m0_2 + (1 - p_free) * m1_2) / 2
    return residual / (1 - rho) + handoff_ms * (1 - p_free)


def mva(workers: int, hold_ms: float, think_ms: float) -> tuple[float, float]:
    """Exact MVA for the machine-repairman model: (throughput per ms, latch response time ms) at N workers."""
    q = 0.0
    x = r = 0.0
    for n in range(1, workers + 1):
        r = hold_ms * (1 + q)
        x = n / (think_ms + r)
        q = x * r
    return x, r


def assert_in_ci(values: np.ndarray, target: float, what: str) -> None:
    """Assert that target lies in the batch-means confidence interval of values' mean."""
    mean, half = batch_means_ci(values, BATCHES, LEVEL)
    assert abs(mean - target) <= half, f"{what}: mean {mean:.5g} +- {half:.3g} vs {target:.5g}"


def assert_same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Assert two series' means do not differ significantly (Welch's t over their batch means)."""
    diff, half = difference_ci(batch_means(a, BATCHES)[2], batch_means(b, BATCHES)[2], LEVEL)
    assert abs(diff) <= half, f"{what}: means differ by {diff:.3g}, allowed {half:.3g}"


# --- against theory, hand-off 0 -------------------------------------------------------------


@pytest.mark.parametrize("sim", sorted(SIMS_OPEN))
@pytest.mark.parametrize("hold_dist,rho", [("fixed", 0.5), ("fixed", 0.8), ("exponential", 0.5),
                                           ("exponential", 0.7)])
def test_open_matches_md1_mm1(sim: str, hold_dist: str, rho: float) -> None:
    """Open system with no hand-off is M/D/1 (fixed hold) or M/M/1 (exponential hold)."""
    hold = 2.0
    lam = rho / hold
    n = 40000 if sim == "simpy" else 20000
    res = SIMS_OPEN[sim](lam, hold, hold_dist, 0.0, n, seed=11)
    target = open_wait_theory(lam, hold, hold_dist)
    assert target == pytest.approx(rho * hold / ((2 if hold_dist == "fixed" else 1) * (1 - rho)))
    assert_in_ci(res.waits_ms, target, f"{sim} {hold_dist} rho={rho}")
    assert res.throughput_per_ms == pytest.approx(lam, rel=0.03)
    # Little's law on the wait queue: Lq = lam * Wq
    assert res.mean_queue_length == pytest.approx(res.throughput_per_ms * res.mean_wait_ms, rel=0.03)
    assert res.waited_fraction == pytest.approx(rho, abs=0.02)  # PASTA: P(latch held) = rho


@pytest.mark.parametrize("sim", sorted(SIMS_CLOSED))
@pytest.mark.parametrize("workers", [1, 4, 8, 16])
def test_closed_matches_mva(sim: str, workers: int) -> None:
    """Closed system with exponential think and hold and no hand-off is the exact-MVA machine repairman."""
    hold, think = 0.1, 1.0
    n = 40000 if sim == "simpy" else 20000
    res = SIMS_CLOSED[sim](workers, hold, "exponential", 0.0, think, "exponential", n, seed=5)
    x, r = mva(workers, hold, think)
    n0 = res.warmup
    assert_in_ci(res.waits_ms, r - hold, f"{sim} N={workers} wait")
    assert res.mean_response_ms == pytest.approx(r, rel=0.03, abs=0.003)
    assert res.throughput_per_ms == pytest.approx(x, rel=0.02)
    assert res.utilisation_held == pytest.approx(x * hold, rel=0.02)
    assert res.utilisation_owned == pytest.approx(res.utilisation_held)
    assert n0 == n // 10


def test_closed_throughput_ci_from_release_gaps() -> None:
    """Throughput is 1 / mean gap between releases; that mean's batch CI covers 1/X(N) from MVA."""
    hold, think = 0.1, 1.0
    for workers in (2, 8):
        x, _ = mva(workers, hold, think)
        for name, sim in SIMS_CLOSED.items():
            res = sim(workers, hold, "exponential", 0.0, think, "exponential", 20000, seed=9)
            assert_in_ci(np.diff(res.release_ms), 1.0 / x, f"{name} N={workers} release gap")


# --- against theory with the hand-off delay (M/G/1 with exceptional first service) ---------


@pytest.mark.parametrize("sim", sorted(SIMS_OPEN))
@pytest.mark.parametrize("hold_dist,lam,handoff", [("fixed", 0.3, 0.5), ("fixed", 0.2, 1.5),
                                                   ("exponential", 0.2, 0.5)])
def test_open_handoff_matches_exceptional_first_service(sim: str, hold_dist: str, lam: float,
                                                        handoff: float) -> None:
    """A waited request owns the latch H ms before holding: Welch's M/G/1 with exceptional first service."""
    hold = 2.0
    n = 40000 if sim == "simpy" else 20000
    res = SIMS_OPEN[sim](lam, hold, hold_dist, handoff, n, seed=21)
    assert_in_ci(res.waits_ms, open_wait_theory(lam, hold, hold_dist, handoff), f"{sim} H={handoff}")
    p_free = (1 - lam * (hold + handoff)) / (1 - lam * handoff)
    assert res.waited_fraction == pytest.approx(1 - p_free, abs=0.02)


# --- SimPy against Ciw, hand-off > 0 --------------------------------------------------------


@pytest.mark.parametrize("hold_dist,think_dist", [("exponential", "exponential"), ("fixed", "exponential")])
def test_closed_handoff_simpy_agrees_with_ciw(hold_dist: str, think_dist: str) -> None:
    """Closed system with a hand-off delay: SimPy and Ciw agree on wait, response and utilisations."""
    args = (8, 0.1, hold_dist, 0.02, 1.0, think_dist, 20000)
    a = simpy_closed_latch(*args, seed=3)
    b = ciw_closed_latch(*args, seed=4)
    assert_same(a.waits_ms, b.waits_ms, "closed H wait")
    assert a.throughput_per_ms == pytest.approx(b.throughput_per_ms, rel=0.02)
    assert a.utilisation_owned == pytest.approx(b.utilisation_owned, rel=0.02)
    # owned-idle time is H per waited acquire
    for res in (a, b):
        gap = (res.utilisation_owned - res.utilisation_held) * res.window_ms
        assert gap == pytest.approx(0.02 * res.waited_fraction * (res.n_acquires - res.warmup), rel=1e-6)
    # the hand-off costs throughput: MVA without it is an upper bound
    assert a.throughput_per_ms < mva(8, 0.1, 1.0)[0]


def test_runs_are_deterministic_and_seeded() -> None:
    """Same seed, same result; different seed, different result (each library's own seeding)."""
    for sim in SIMS_OPEN.values():
        r1, r2, r3 = (sim(0.3, 2.0, "exponential", 0.5, 3000, seed=s) for s in (1, 1, 2))
        assert np.array_equal(r1.waits_ms, r2.waits_ms)
        assert r1.mean_wait_ms != r3.mean_wait_ms
    for sim in SIMS_CLOSED.values():
        r1, r2 = (sim(4, 0.1, "exponential", 0.01, 1.0, "fixed", 3000, seed=7) for _ in range(2))
        assert np.array_equal(r1.waits_ms, r2.waits_ms)


def test_bad_parameters_name_the_value() -> None:
    """Bad input raises ValueError naming the parameter and the value."""
    with pytest.raises(ValueError, match="lam=-1"):
        simpy_convoy(-1)
    with pytest.raises(ValueError, match="hold_dist='gamma'"):
        ciw_convoy(0.1, 2.0, "gamma")
    with pytest.raises(ValueError, match="workers=0"):
        simpy_closed_latch(0)
    with pytest.raises(ValueError, match="handoff_ms=-0.5"):
        ciw_closed_latch(2, handoff_ms=-0.5)


# --- the engine against theory, SimPy and Ciw ------------------------------------------------


@needs_engine
@pytest.mark.parametrize("hold_dist,lam,handoff", [("fixed", 0.4, 0.0), ("exponential", 0.35, 0.0),
                                                   ("fixed", 0.3, 0.5), ("exponential", 0.2, 0.5),
                                                   ("fixed", 0.2, 1.5)])
def test_engine_open_agrees_with_theory_simpy_and_ciw(hold_dist: str, lam: float, handoff: float) -> None:
    """Engine convoy (wakeup_us = H*1000, no switch cost, 64 schedulers) matches theory, SimPy and Ciw."""
    hold = 2.0
    # seeds far apart: the engine's SplitMix64 state is seed * golden + 1, so seed s + 1 replays seed s's
    # stream shifted by one draw; nearby seeds would not give independent runs
    eng = engine_convoy(lam, hold, hold_dist, handoff, 40000, seed=ENGINE_SEED)
    assert_in_ci(eng.waits_ms, open_wait_theory(lam, hold, hold_dist, handoff), f"engine H={handoff}")
    for name, other in (("simpy", simpy_convoy(lam, hold, hold_dist, handoff, 40000, seed=32)),
                        ("ciw", ciw_convoy(lam, hold, hold_dist, handoff, 20000, seed=33))):
        assert_same(eng.waits_ms, other.waits_ms, f"engine vs {name} H={handoff}")
        assert eng.waited_fraction == pytest.approx(other.waited_fraction, abs=0.02)
    assert eng.throughput_per_ms == pytest.approx(lam, rel=0.03)
    assert eng.mean_queue_length == pytest.approx(eng.throughput_per_ms * eng.mean_wait_ms, rel=0.03)


@needs_engine
@pytest.mark.parametrize("workers", [1, 4, 8, 16])
def test_engine_closed_matches_mva(workers: int) -> None:
    """Engine closed-latch with zero overheads is the machine repairman: MVA wait, throughput, utilisation."""
    hold, think = 0.1, 1.0
    eng = engine_closed_latch(workers, hold, "exponential", 0.0, think, "exponential", 40000, seed=41)
    x, r = mva(workers, hold, think)
    assert_in_ci(eng.waits_ms, r - hold, f"engine N={workers} wait")
    assert_in_ci(np.diff(eng.release_ms), 1.0 / x, f"engine N={workers} release gap")
    assert eng.utilisation_held == pytest.approx(x * hold, rel=0.02)
    assert eng.utilisation_owned == pytest.approx(eng.utilisation_held)


@needs_engine
@pytest.mark.parametrize("workers,hold_dist,think_dist,handoff", [
    (8, "exponential", "exponential", 0.02),
    (8, "fixed", "exponential", 0.05),
    (32, "exponential", "exponential", 0.01),
])
def test_engine_closed_handoff_agrees_with_simpy_and_ciw(workers: int, hold_dist: str, think_dist: str,
                                                          handoff: float) -> None:
    """Closed latch with a hand-off delay: engine, SimPy and Ciw agree on wait, throughput and utilisation."""
    args = (workers, 0.1, hold_dist, handoff, 1.0, think_dist)
    eng = engine_closed_latch(*args, 40000, seed=51)
    for other in (simpy_closed_latch(*args, 40000, seed=52), ciw_closed_latch(*args, 20000, seed=53)):
        assert_same(eng.waits_ms, other.waits_ms, f"engine vs {other.simulator} wait")
        assert_same(np.diff(eng.release_ms), np.diff(other.release_ms), f"engine vs {other.simulator} gap")
        assert eng.utilisation_owned == pytest.approx(other.utilisation_owned, rel=0.02)
        assert eng.utilisation_held == pytest.approx(other.utilisation_held, rel=0.02)
        assert eng.waited_fraction == pytest.approx(other.waited_fraction, abs=0.02)
