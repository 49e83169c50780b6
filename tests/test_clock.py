"""The engine's clock: whole ticks make time arithmetic exact, so a quantum ends when it should.

Before the clock had ticks, ``now - quantum_start >= quantum`` failed when a
float sum landed at 3999.9999... us, and a CPU-bound co-tenant kept its
scheduler for a second quantum (about 2 stints in 64 in the nested-transactions
chapter).  These tests fail on that engine.
"""

from __future__ import annotations

import numpy as np
import pytest

import models
from models.engine import clock
from models.engine.program import EXPONENTIAL, FIXED, Program
from models.engine.state import G_TRACE_USED
from models.result import build
from models.workload import LatchSpec, Workload, simulate


def _intervals(trace, worker: int, state: str) -> np.ndarray:
    """Lengths (ms) of ``worker``'s intervals in ``state``."""
    rows = trace[(trace["worker"] == worker) & (trace["state"] == state)]
    return (rows["end_ms"] - rows["start_ms"]).to_numpy()


def test_quantum_rounding_bug_co_tenant_never_keeps_a_waiting_worker_past_one_quantum():
    """A co-tenant alone with one parallel worker, over many quanta: once the worker waits, the
    co-tenant finishes its quantum and yields, so the wait never exceeds one quantum (4 ms)."""
    quantum_ms = 4.0
    res = models.run("parallel-insert", maxdop=2, schedulers=2, busy_scheduler=0, rows=1_000_000,
                     cpu_per_row_us=0.094, cpu_per_log_record_us=0.0, hold_us=1.5, wakeup_us=1.0,
                     context_switch_us=0.5, contender_cost_us=0.3, quantum_ms=quantum_ms,
                     trace_events=200_000)
    workers = res.workers
    co_tenant = int(workers.query("kind == 'co-tenant'")["worker"].iloc[0])
    partner = int(workers.query("kind == 'task' and scheduler == 0")["worker"].iloc[0])
    stints = _intervals(res.trace, co_tenant, "running")
    waits = _intervals(res.trace, partner, "runnable")
    assert len(stints) >= 50, "the run should cover many quanta"
    switch_ms = res.params["context_switch_us"] / 1000.0
    # The co-tenant's burst is one quantum: a stint is a switch plus whole bursts, and it yields after one
    # whenever the partner is runnable; the partner never waits longer than the co-tenant's current burst.
    assert waits.max() <= quantum_ms, f"the partner waited {waits.max():.6f} ms for a {quantum_ms} ms quantum"
    longest = stints.max()
    bursts = (longest - switch_ms) / quantum_ms
    assert bursts == pytest.approx(round(bursts), abs=1e-9), longest


@pytest.mark.parametrize("burst_us", [100.0, 0.1 * 1000 / 3, 1000.0 / 7, 4000.0])
def test_quantum_rounding_bug_cpu_bound_pair_each_runs_whole_quanta(burst_us):
    """Two CPU-bound workers share one scheduler with fixed bursts: each stint is the fewest whole bursts
    that use the quantum (exactly 4 ms when the burst divides it), never one burst more."""
    quantum_us, switch_us = 4000.0, 0.5
    prog = Program()
    starts = []
    for _ in range(2):
        starts.append(prog.start())
        body = prog.cpu(burst_us, FIXED)
        prog.yield_point()
        prog.loop(body, int(200 * quantum_us / burst_us))
        prog.end()
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=[0, 0], worker_arrival_us=[0.0, 0.0],
                  worker_daemon=[False, False], worker_kind=["task", "task"], latches=[LatchSpec("L")],
                  schedulers=1, quantum_us=quantum_us, context_switch_us=switch_us)
    res = build(simulate(wl, seed=1, trace_events=10_000), "pair", {}, 1)
    burst = clock.to_ticks(burst_us)
    expected_us = np.ceil(quantum_us / burst - 1e-12) * burst + switch_us
    for w in (0, 1):
        stints_us = _intervals(res.trace, w, "running")[:-1] * 1000.0  # the last stint runs to the end alone
        assert len(stints_us) >= 100
        assert np.abs(stints_us - expected_us).max() < 1e-6, (burst_us, stints_us.max(), expected_us)


def test_ticks_make_sums_of_durations_exact():
    """Any sum of whole ticks is exact, in any order: the property the quantum test relies on."""
    rng = np.random.default_rng(5)
    bursts = clock.to_ticks(rng.exponential(37.3, size=10_000))
    start = clock.to_ticks(123_456_789.123)
    forward = start
    for b in bursts:
        forward += b
    backward = start
    for b in bursts[::-1]:
        backward += b
    assert forward == backward
    assert forward - start == pytest.approx(bursts.sum(), abs=0)
    assert np.all(bursts * clock.TICKS_PER_US == np.rint(bursts * clock.TICKS_PER_US))


def test_every_engine_time_is_a_whole_tick():
    """Trace times and acquire-log times of a run with exponential draws, spins and hand-offs lie on ticks."""
    prog = Program()
    starts = []
    for _ in range(6):
        starts.append(prog.start())
        body = prog.cpu(3.3, EXPONENTIAL)
        prog.yield_point()
        prog.acquire(0)
        prog.cpu(0.77, EXPONENTIAL)
        prog.release(0)
        prog.loop(body, 300)
        prog.end()
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=[-1] * 6,
                  worker_arrival_us=[0.1 * k for k in range(6)], worker_daemon=[False] * 6,
                  worker_kind=["task"] * 6, latches=[LatchSpec("L", policy="unfair", spin_us=0.37,
                                                                backoff_us=1.1, contender_cost_us=0.03)],
                  schedulers=3, quantum_us=10.0, context_switch_us=0.31, wakeup_us=0.7)
    raw = simulate(wl, seed=3, trace_events=50_000, record_acquires=2_000)
    ticks = np.concatenate([raw.state.trace_f[: raw.state.run_cells[G_TRACE_USED]].ravel(), raw.state.log_f.ravel()])
    ticks = ticks[ticks >= 0] * clock.TICKS_PER_US
    assert np.array_equal(ticks, np.rint(ticks))


def test_max_sim_ms_beyond_the_exact_clock_is_refused():
    with pytest.raises(models.ParameterError, match="max_sim_ms=10000000000.0 is out of range"):
        models.run("convoy", requests=10, max_sim_ms=1e10)
