"""Latch policies (models.engine.latch.POLICIES): who gets the latch, when, and what the requester does meanwhile.

Each deterministic case gives every worker a scheduler of its own and zero
switch cost, so the acquire log's times are exact sums of the programs' times.
Only the Result's tables are read (acquire_log, trace, spin_stats, workers).
"""

from __future__ import annotations

import numpy as np
import pytest

from models.engine.latch import COMPATIBLE, POLICIES
from models.engine.program import EX, EXPONENTIAL, FIXED, MODE_NAMES, SH, Program
from models.result import build
from models.workload import LatchSpec, Workload, simulate

MODE_INDEX = {name: k for k, name in enumerate(MODE_NAMES)}


def _holder(prog: Program, mode: int, hold_us: float) -> int:
    start = prog.acquire(0, mode)
    prog.cpu(hold_us, FIXED)
    prog.release(0, mode)
    prog.end()
    return start


def _run(workers: list[tuple[float, int, float]], policy: str, wakeup_us: float = 0.0, **spec):
    """One worker per (arrival_us, mode, hold_us) on a scheduler of its own: acquire latch 0, hold, release."""
    prog = Program()
    starts = [_holder(prog, mode, hold) for _, mode, hold in workers]
    n = len(workers)
    latch = LatchSpec("L", policy=policy, **spec)
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=list(range(n)),
                  worker_arrival_us=[w[0] for w in workers], worker_daemon=[False] * n, worker_kind=["t"] * n,
                  latches=[latch], schedulers=n, context_switch_us=0.0, wakeup_us=wakeup_us, expected_acquires=n)
    res = build(simulate(wl, seed=1, record_acquires=n, trace_events=10_000), "policy", {}, 1)
    assert not res.truncated, res.truncated_reason
    log = res.acquire_log.set_index("worker").sort_index()
    assert list(log.index) == list(range(n))
    return res, log


def _intervals(trace, worker: int, state: str) -> list[float]:
    """Start and end (ms) of each of ``worker``'s intervals in ``state``, flattened in time order."""
    rows = trace[(trace["worker"] == worker) & (trace["state"] == state)].sort_values("start_ms")
    return [float(v) for r in rows.itertuples() for v in (r.start_ms, r.end_ms)]


def _approx(pairs):
    return pytest.approx([v for p in pairs for v in p])


# ---------------------------------------------------------------- fair


def test_fair_grants_in_the_order_of_suspension_and_a_newcomer_queues_behind():
    """H holds EX until 0.1 ms; A, B, C ask at 10, 20, 30 us; N asks at 120 us, when A owns the latch but has
    not yet run (wake-up 50 us).  Each is granted in the order it queued, N last."""
    res, log = _run([(0.0, EX, 100.0), (10.0, EX, 100.0), (20.0, EX, 100.0), (30.0, EX, 100.0),
                     (120.0, EX, 100.0)], "fair", wakeup_us=50.0)
    assert list(log["grant_ms"]) == pytest.approx([0.0, 0.1, 0.25, 0.4, 0.55])
    assert list(log["run_ms"]) == pytest.approx([0.0, 0.15, 0.3, 0.45, 0.6])
    assert list(log["suspended"]) == [False, True, True, True, True]
    assert list(log["queue_seq"]) == [-1, 0, 1, 2, 3]
    # a fair latch never spins
    assert res.spin_stats[["collisions", "spins", "backoffs"]].to_numpy().sum() == 0


def test_fair_newcomer_does_not_take_a_compatible_latch_while_someone_is_queued():
    """S1 holds SH; E queues for EX; S2 asks SH while only SH is held: compatible, yet it queues behind E."""
    res, log = _run([(0.0, SH, 100.0), (10.0, EX, 100.0), (20.0, SH, 10.0)], "fair")
    assert list(log["grant_ms"]) == pytest.approx([0.0, 0.1, 0.2])
    assert bool(log.loc[2, "suspended"]) and log.loc[2, "queue_seq"] == 1


def test_fair_release_hands_the_latch_to_every_compatible_waiter_at_the_head():
    """H holds EX; S1-S3 queue for SH, then E for EX, then S4 for SH.  H's release grants S1-S3 together; E waits
    for the last of them; S4, though compatible with the SH holders, stays behind E (no skipping)."""
    res, log = _run([(0.0, EX, 100.0), (10.0, SH, 50.0), (20.0, SH, 50.0), (30.0, SH, 50.0), (40.0, EX, 100.0),
                     (50.0, SH, 10.0)], "fair", wakeup_us=20.0)
    assert list(log["grant_ms"]) == pytest.approx([0.0, 0.1, 0.1, 0.1, 0.17, 0.29])
    assert list(log["run_ms"]) == pytest.approx([0.0, 0.12, 0.12, 0.12, 0.19, 0.31])
    assert list(log["release_ms"]) == pytest.approx([0.1, 0.17, 0.17, 0.17, 0.29, 0.32])


def test_fair_random_contention_is_fifo_and_newcomers_never_overtake():
    """Twelve workers over four schedulers, EX and SH with random think times: waiters are granted in queue order,
    and no acquire granted at its request happened while a waiter was queued."""
    prog = Program()
    starts = []
    for k in range(12):
        starts.append(prog.start())
        body = prog.cpu(20.0, EXPONENTIAL)
        prog.yield_point()
        mode = SH if k % 3 == 0 else EX
        prog.acquire(0, mode)
        prog.cpu(4.0, EXPONENTIAL)
        prog.release(0, mode)
        prog.loop(body, 40)
        prog.end()
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=[k % 4 for k in range(12)],
                  worker_arrival_us=[float(k) for k in range(12)], worker_daemon=[False] * 12,
                  worker_kind=["t"] * 12, latches=[LatchSpec("L", policy="fair")], schedulers=4,
                  quantum_us=50.0, context_switch_us=0.5, wakeup_us=3.0, expected_acquires=480)
    res = build(simulate(wl, seed=7, record_acquires=480), "fair", {}, 7)
    log = res.acquire_log
    assert len(log) == 480
    waited = log[log["suspended"]].sort_values("queue_seq")
    assert len(waited) > 100  # the case is contended enough to mean something
    assert list(waited["queue_seq"]) == list(range(len(waited)))  # every suspension was granted once
    assert (np.diff(waited["grant_ms"].to_numpy()) >= 0).all()
    ex_waits = waited[waited["mode"] == "EX"]["grant_ms"].to_numpy()
    assert (np.diff(ex_waits) > 0).all()  # two EX grants never share an instant
    queued = waited[["request_ms", "grant_ms"]].to_numpy()
    for t in log[~log["suspended"]]["request_ms"]:
        overtaken = (queued[:, 0] < t) & (queued[:, 1] > t)
        assert not overtaken.any(), f"a newcomer at {t} ms was granted past a waiter"


# ---------------------------------------------------------------- unfair


def test_unfair_a_running_requester_barges_ahead_of_a_suspended_waiter():
    """H holds EX until 0.1 ms; W asks at 10 us, spins one round and suspends (max_backoffs=0).  H's release
    signals W, which needs 50 us to wake; N asks at 120 us, finds the latch free and takes it.  W, running at
    150 us, finds it held again, spins, suspends, and gets it only after N."""
    res, log = _run([(0.0, EX, 100.0), (10.0, EX, 100.0), (120.0, EX, 100.0)], "unfair", wakeup_us=50.0,
                    max_backoffs=0, spin_us=1.0, spins_per_round=10)
    assert log.loc[2, "request_ms"] > log.loc[1, "request_ms"]
    assert log.loc[2, "grant_ms"] < log.loc[1, "grant_ms"]     # the later requester got it first
    assert not log.loc[2, "suspended"] and log.loc[2, "grant_ms"] == pytest.approx(0.12)
    assert bool(log.loc[1, "suspended"]) and log.loc[1, "grant_ms"] == pytest.approx(0.22 + 0.05)
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (2, 20, 0)  # W's first try and its retry


def test_the_same_case_under_fair_keeps_the_order():
    res, log = _run([(0.0, EX, 100.0), (10.0, EX, 100.0), (120.0, EX, 100.0)], "fair", wakeup_us=50.0)
    assert list(log["grant_ms"]) == pytest.approx([0.0, 0.1, 0.25])
    assert bool(log.loc[2, "suspended"])


def test_unfair_compatible_newcomer_takes_the_latch_past_a_suspended_exclusive_waiter():
    """The fair case above with the unfair policy: S2's SH is granted at once, ahead of E, queued since 11 us."""
    res, log = _run([(0.0, SH, 100.0), (10.0, EX, 100.0), (20.0, SH, 10.0)], "unfair", max_backoffs=0)
    assert list(log["grant_ms"]) == pytest.approx([0.0, 0.1, 0.02])
    assert list(log["suspended"]) == [False, True, False]


def test_unfair_spins_and_backs_off_exponentially_then_suspends():
    """H holds until 1 ms; W asks at 10 us: spin 10-11, back off 5 us, spin 16-17, back off 10, spin 27-28, back off
    20, spin 48-49, then (max_backoffs=3 used up) suspend until H's release."""
    res, log = _run([(0.0, EX, 1_000.0), (10.0, EX, 10.0)], "unfair", spin_us=1.0, spins_per_round=100,
                    max_backoffs=3, backoff_us=5.0)
    us = 1e-3
    assert _intervals(res.trace, 1, "spinning") == _approx([(10 * us, 11 * us), (16 * us, 17 * us),
                                                            (27 * us, 28 * us), (48 * us, 49 * us)])
    assert _intervals(res.trace, 1, "backoff") == _approx([(11 * us, 16 * us), (17 * us, 27 * us),
                                                           (28 * us, 48 * us)])
    assert _intervals(res.trace, 1, "suspended") == _approx([(49 * us, 1.0)])
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (1, 400, 3)
    assert res.workers.loc[1, "spin_ms"] == pytest.approx(4 * us)
    assert bool(log.loc[1, "suspended"]) and log.loc[1, "grant_ms"] == pytest.approx(1.0)


def test_unfair_with_no_back_offs_suspends_after_one_spin_round():
    res, log = _run([(0.0, EX, 1_000.0), (10.0, EX, 10.0)], "unfair", spin_us=2.0, spins_per_round=50,
                    max_backoffs=0)
    assert _intervals(res.trace, 1, "spinning") == _approx([(0.010, 0.012)])
    assert _intervals(res.trace, 1, "backoff") == []
    assert _intervals(res.trace, 1, "suspended") == _approx([(0.012, 1.0)])
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (1, 50, 0)


def test_unfair_a_spinner_that_finds_the_latch_free_takes_it_without_suspending():
    """H releases at 12 us, during W's first back-off: W's second round takes the latch at 17 us."""
    res, log = _run([(0.0, EX, 12.0), (10.0, EX, 10.0)], "unfair", spin_us=1.0, spins_per_round=100,
                    max_backoffs=3, backoff_us=5.0)
    assert not log.loc[1, "suspended"]
    assert log.loc[1, "grant_ms"] == pytest.approx(0.017)
    assert _intervals(res.trace, 1, "suspended") == []
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (1, 200, 1)


def test_unfair_a_spin_cycle_looks_at_the_latch_after_every_round_and_takes_it_at_the_first_look_after_release():
    """H releases at 12.2 us; W asks at 10 us and spins in 0.5 us rounds, up to 10 per cycle: it looks at 10.5, 11,
    ... and takes the latch at 12.5 us, five rounds in, without backing off."""
    res, log = _run([(0.0, EX, 12.2), (10.0, EX, 10.0)], "unfair", spin_us=0.5, spins_per_round=10,
                    rounds_per_backoff=10, max_backoffs=3, backoff_us=5.0)
    assert not log.loc[1, "suspended"] and log.loc[1, "grant_ms"] == pytest.approx(0.0125)
    assert _intervals(res.trace, 1, "spinning") == _approx([(0.010, 0.0125)])
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (1, 50, 0)
    assert res.workers.loc[1, "spin_ms"] == pytest.approx(0.0025)


def test_unfair_a_failed_spin_cycle_backs_off_then_spins_a_whole_cycle_again():
    """H holds until 1 ms; W asks at 10 us, cycles of three 1 us rounds, one back-off of 5 us: spin 10-13, back off
    13-18, spin 18-21, then suspend."""
    res, log = _run([(0.0, EX, 1_000.0), (10.0, EX, 10.0)], "unfair", spin_us=1.0, spins_per_round=100,
                    rounds_per_backoff=3, max_backoffs=1, backoff_us=5.0)
    us = 1e-3
    assert _intervals(res.trace, 1, "spinning") == _approx([(10 * us, 13 * us), (18 * us, 21 * us)])
    assert _intervals(res.trace, 1, "backoff") == _approx([(13 * us, 18 * us)])
    assert _intervals(res.trace, 1, "suspended") == _approx([(21 * us, 1.0)])
    spin = res.spin_stats.iloc[0]
    assert (spin["collisions"], spin["spins"], spin["backoffs"]) == (1, 600, 1)


# ---------------------------------------------------------------- every policy


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_runs_a_closed_workload_to_completion(policy):
    """Eight workers over three schedulers, EX, SH and UP, 25 passes each: every acquire happens, is released, and
    no two incompatible modes are ever held at once, whatever the policy (a new one is covered by its name)."""
    prog = Program()
    starts, modes = [], [EX, SH, EX, 2, SH, EX, SH, EX]
    for mode in modes:
        starts.append(prog.start())
        body = prog.cpu(8.0, EXPONENTIAL)
        prog.yield_point()
        prog.acquire(0, mode)
        prog.cpu(3.0, EXPONENTIAL)
        prog.release(0, mode)
        prog.loop(body, 25)
        prog.end()
    n = len(modes)
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=[-1] * n,
                  worker_arrival_us=[0.5 * k for k in range(n)], worker_daemon=[False] * n,
                  worker_kind=["t"] * n, latches=[LatchSpec("L", policy=policy, spin_us=1.0, spins_per_round=10,
                                                            max_backoffs=2, backoff_us=1.0)],
                  schedulers=3, quantum_us=40.0, context_switch_us=0.2, wakeup_us=2.0, expected_acquires=n * 25)
    res = build(simulate(wl, seed=3, record_acquires=n * 25), policy, {}, 3)
    assert not res.truncated, res.truncated_reason
    assert res.latch_stats["acquires"].iloc[0] == n * 25
    assert list(res.workers["acquires"]) == [25] * n
    log = res.acquire_log
    assert len(log) == n * 25 and (log["release_ms"] >= log["run_ms"]).all()
    assert list(log.groupby("worker")["mode"].first()) == [MODE_NAMES[m] for m in modes]
    assert res.acquire_wait_ms.max() > 0  # contended: the waiting paths ran
    events = sorted([(r.release_ms, 0, MODE_INDEX[r.mode]) for r in log.itertuples()]
                    + [(r.grant_ms, 1, MODE_INDEX[r.mode]) for r in log.itertuples()])
    held = np.zeros(5, dtype=int)
    for _, is_grant, mode in events:
        if is_grant:
            assert all(held[h] == 0 or COMPATIBLE[mode, h] for h in range(5)), (policy, held, mode)
            held[mode] += 1
        else:
            held[mode] -= 1
    assert not held.any()
