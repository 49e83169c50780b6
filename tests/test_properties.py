"""Invariants of the engine over random valid workloads (hypothesis).

Random workers run random programs over one to three latches in all five
modes, under either policy; whatever happens, holders stay compatible, every
acquire is released, the fair policy grants in FIFO order, per-worker
figures add up to the totals, schedulers are never busier than the clock and
Little's law holds on every latch queue.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.engine.clock import to_ticks
from models.engine.latch import COMPATIBLE
from models.engine.program import EXPONENTIAL, FIXED, MODE_NAMES, Program
from models.result import build
from models.workload import LatchSpec, Workload, simulate

MODE_INDEX = {name: k for k, name in enumerate(MODE_NAMES)}


@st.composite
def workloads(draw):
    n_latches = draw(st.integers(1, 3))
    n_workers = draw(st.integers(1, 10))
    schedulers = draw(st.integers(1, 6))
    policy = draw(st.sampled_from(["fair", "unfair"]))
    prog = Program()
    starts = []
    expected = 0
    for _ in range(n_workers):
        starts.append(prog.start())
        steps = draw(st.lists(st.tuples(st.integers(0, n_latches - 1), st.integers(0, 4),
                                        st.floats(0.0, 50.0), st.floats(0.1, 30.0),
                                        st.booleans()), min_size=1, max_size=4))
        body = prog.start()
        for latch, mode, think, hold, yields in steps:
            prog.cpu(think, EXPONENTIAL)
            if yields:
                prog.yield_point()
            prog.acquire(latch, mode)
            prog.cpu(hold, FIXED)
            prog.release(latch, mode)
        times = draw(st.integers(1, 6))
        prog.loop(body, times)
        prog.end()
        expected += times * len(steps)
    latches = [LatchSpec(f"L{k}", "LATCH", policy=policy, spin_us=draw(st.floats(0.5, 5.0)),
                         spins_per_round=10, max_backoffs=draw(st.integers(0, 3)), backoff_us=2.0)
               for k in range(n_latches)]
    wl = Workload(program=prog, worker_start=starts,
                  worker_scheduler=[draw(st.integers(-1, schedulers - 1)) for _ in starts],
                  worker_arrival_us=[draw(st.floats(0.0, 100.0)) for _ in starts],
                  worker_daemon=[False] * n_workers, worker_kind=["task"] * n_workers,
                  latches=latches, schedulers=schedulers,
                  quantum_us=draw(st.sampled_from([10.0, 100.0, 4000.0])),
                  context_switch_us=draw(st.floats(0.0, 5.0)), wakeup_us=draw(st.floats(0.0, 20.0)),
                  expected_acquires=expected)
    return wl, expected, draw(st.integers(0, 1000))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_invariants(case):
    wl, expected, seed = case
    raw = simulate(wl, seed, record_acquires=expected, trace_events=10_000)
    res = build(raw, "random", {}, seed)
    assert not res.truncated
    log = res.acquire_log
    assert len(log) == expected

    # Every acquire is released, after it ran, which is after it was requested and granted
    # (exactly: the engine's clock has whole ticks, so no tolerance is needed).
    assert (log["release_ms"] >= 0).all()
    assert (log["request_ms"] <= log["grant_ms"]).all()
    assert (log["grant_ms"] <= log["run_ms"]).all()
    assert (log["run_ms"] <= log["release_ms"]).all()

    # Never two incompatible holders: sweep each latch's ownership intervals in time order.
    for _, rows in log.groupby("latch"):
        events = []
        for r in rows.itertuples():
            events.append((r.release_ms, 0, MODE_INDEX[r.mode]))  # releases first at a tie
            events.append((r.grant_ms, 1, MODE_INDEX[r.mode]))
        held = np.zeros(5, dtype=int)
        for _, is_grant, mode in sorted(events):
            if is_grant:
                assert all(held[h] == 0 or COMPATIBLE[mode, h] for h in range(5)), (held, mode)
                held[mode] += 1
            else:
                held[mode] -= 1

    # The fair policy grants waiters in the order they queued.
    if wl.latches[0].policy == "fair":
        for _, rows in log[log["suspended"]].groupby("latch"):
            grants = rows.sort_values("queue_seq")["grant_ms"].to_numpy()
            assert (np.diff(grants) >= 0).all()

    # Per-worker figures add up to the totals.
    assert res.workers["acquires"].sum() == res.latch_stats["acquires"].sum() == expected
    assert np.isclose(res.workers["latch_wait_ms"].sum(), res.latch_stats["wait_time_ms"].sum())
    latch_waits = res.wait_stats[res.wait_stats["wait_type"].str.startswith("LATCH")]
    assert latch_waits["waiting_tasks_count"].sum() == res.latch_stats["waiting_requests_count"].sum()

    # Schedulers are never busier than the clock.
    assert (res.schedulers["busy_ms"] <= res.elapsed_ms + 1e-9).all()
    assert np.isclose(res.schedulers["busy_ms"].sum(), res.workers["cpu_ms"].sum()
                      + res.schedulers["context_switches"].sum() * to_ticks(wl.context_switch_us) / 1000.0)

    # Little's law on the latch queues: time-integral of queue length = total time spent queued.
    assert np.isclose(res.extra["queue_area_ms"], res.extra["queue_residence_ms"], rtol=1e-9, atol=1e-9)

    # Waits are non-negative and the maximum is at least the mean.
    assert (res.acquire_wait_ms >= -1e-12).all()
    for r in res.latch_stats.itertuples():
        if r.waiting_requests_count:
            assert r.max_wait_time_ms >= r.wait_time_ms / r.waiting_requests_count - 1e-12
    for r in res.wait_stats.itertuples():
        assert r.wait_time_ms >= 0 and r.signal_wait_time_ms <= r.wait_time_ms + 1e-9
