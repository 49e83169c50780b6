"""SQLOS schedulers: the runnable-queue primitives, and what a run shows of them.

The primitives (models.engine.scheduler.push_back, push_front, pop_front) are
driven on plain int64 arrays sized with the column counts, so these tests do
not depend on how the state tables are named.  The end-to-end tests read only
the Result's tables (trace, wait_stats, workers, acquire_log).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from models.engine import state as st
from models.engine.program import EX, FIXED, Program
from models.engine.scheduler import pop_front, push_back, push_front
from models.result import build
from models.workload import LatchSpec, Workload, simulate

# ---------------------------------------------------------------- the queue primitives


def _empty(workers: int, schedulers: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Scheduler and worker rows as allocate() leaves them: empty queues, unlinked workers."""
    si = np.zeros((schedulers, st.S_NCOLS), np.int64)
    si[:, [st.S_RUNNING_WORKER, st.S_RUNNABLE_HEAD, st.S_RUNNABLE_TAIL]] = -1
    wi = np.zeros((workers, st.W_NCOLS), np.int64)
    wi[:, [st.W_NEXT, st.W_PREV]] = -1
    return si, wi


def _forward(si, wi, s) -> list[int]:
    """The queue from head to tail, following W_NEXT (bounded, so a cycle fails instead of hanging)."""
    out, w = [], si[s, st.S_RUNNABLE_HEAD]
    while w >= 0 and len(out) <= wi.shape[0]:
        out.append(int(w))
        w = wi[w, st.W_NEXT]
    return out


def _backward(si, wi, s) -> list[int]:
    """The queue from tail to head, following W_PREV."""
    out, w = [], si[s, st.S_RUNNABLE_TAIL]
    while w >= 0 and len(out) <= wi.shape[0]:
        out.append(int(w))
        w = wi[w, st.W_PREV]
    return out


def _check_links(si, wi, s, expected: list[int]) -> None:
    assert _forward(si, wi, s) == expected
    assert _backward(si, wi, s) == expected[::-1]
    assert si[s, st.S_RUNNABLE_COUNT] == len(expected)
    assert si[s, st.S_RUNNABLE_HEAD] == (expected[0] if expected else -1)
    assert si[s, st.S_RUNNABLE_TAIL] == (expected[-1] if expected else -1)


def test_push_back_then_pop_front_is_first_in_first_out():
    si, wi = _empty(5)
    for w in (3, 0, 4, 1):
        push_back(si, wi, 0, w)
    _check_links(si, wi, 0, [3, 0, 4, 1])
    popped = [pop_front(si, wi, 0) for _ in range(4)]
    assert popped == [3, 0, 4, 1]
    _check_links(si, wi, 0, [])


def test_push_front_puts_the_worker_at_the_head():
    si, wi = _empty(4)
    push_back(si, wi, 0, 0)
    push_back(si, wi, 0, 1)
    push_front(si, wi, 0, 2)
    _check_links(si, wi, 0, [2, 0, 1])
    push_front(si, wi, 0, 3)
    _check_links(si, wi, 0, [3, 2, 0, 1])
    assert pop_front(si, wi, 0) == 3
    assert pop_front(si, wi, 0) == 2


def test_push_front_on_an_empty_queue_sets_head_and_tail():
    si, wi = _empty(2)
    push_front(si, wi, 0, 1)
    _check_links(si, wi, 0, [1])
    push_back(si, wi, 0, 0)
    _check_links(si, wi, 0, [1, 0])


def test_pop_front_of_an_empty_queue_returns_minus_one_and_changes_nothing():
    si, wi = _empty(3)
    before_si, before_wi = si.copy(), wi.copy()
    assert pop_front(si, wi, 0) == -1
    assert np.array_equal(si, before_si) and np.array_equal(wi, before_wi)
    push_back(si, wi, 0, 2)
    assert pop_front(si, wi, 0) == 2
    assert pop_front(si, wi, 0) == -1
    assert si[0, st.S_RUNNABLE_COUNT] == 0  # never below zero


def test_pop_front_clears_the_popped_workers_link_and_the_new_heads_back_link():
    si, wi = _empty(3)
    for w in (0, 1, 2):
        push_back(si, wi, 0, w)
    assert pop_front(si, wi, 0) == 0
    assert wi[0, st.W_NEXT] == -1  # the popped worker points nowhere
    assert wi[1, st.W_PREV] == -1  # the new head has no predecessor
    _check_links(si, wi, 0, [1, 2])
    # the popped worker can be queued again, at either end, without a stale link
    push_front(si, wi, 0, 0)
    _check_links(si, wi, 0, [0, 1, 2])
    assert pop_front(si, wi, 0) == 0 and pop_front(si, wi, 0) == 1
    push_back(si, wi, 0, 0)
    _check_links(si, wi, 0, [2, 0])


def test_queues_of_two_schedulers_are_independent():
    si, wi = _empty(4, schedulers=2)
    push_back(si, wi, 0, 0)
    push_back(si, wi, 1, 1)
    push_front(si, wi, 1, 2)
    push_back(si, wi, 0, 3)
    _check_links(si, wi, 0, [0, 3])
    _check_links(si, wi, 1, [2, 1])
    assert pop_front(si, wi, 1) == 2
    _check_links(si, wi, 0, [0, 3])


def test_random_sequences_match_a_deque():
    """Hundreds of random pushes at either end and pops agree with collections.deque, links and length included."""
    rng = np.random.default_rng(20240531)
    n = 12
    si, wi = _empty(n)
    model: deque[int] = deque()
    for _ in range(600):
        outside = [w for w in range(n) if w not in model]
        choice = rng.integers(3)
        if choice < 2 and outside:
            w = int(rng.choice(outside))
            if choice == 0:
                push_back(si, wi, 0, w)
                model.append(w)
            else:
                push_front(si, wi, 0, w)
                model.appendleft(w)
        else:
            expected = model.popleft() if model else -1
            assert pop_front(si, wi, 0) == expected
        _check_links(si, wi, 0, list(model))


# ---------------------------------------------------------------- end to end


def _run(prog: Program, starts, scheds, arrivals, schedulers, latches=(), quantum_us=4000.0, wakeup_us=0.0,
         switch_us=0.0, record_acquires=0):
    n = len(starts)
    wl = Workload(program=prog, worker_start=list(starts), worker_scheduler=list(scheds),
                  worker_arrival_us=list(arrivals), worker_daemon=[False] * n, worker_kind=["task"] * n,
                  latches=list(latches), schedulers=schedulers, quantum_us=quantum_us,
                  context_switch_us=switch_us, wakeup_us=wakeup_us)
    res = build(simulate(wl, seed=1, trace_events=100_000, record_acquires=record_acquires), "test", {}, 1)
    assert not res.truncated, res.truncated_reason
    return res


def _cpu_bound(prog: Program, burst_us: float, bursts: int) -> int:
    start = prog.start()
    body = prog.cpu(burst_us, FIXED)
    prog.yield_point()
    prog.loop(body, bursts)
    prog.end()
    return start


def _stints(trace, state="running"):
    """(worker, start_ms, end_ms) of every interval in ``state``, in time order."""
    rows = trace[trace["state"] == state].sort_values(["start_ms", "worker"])
    return [(int(r.worker), float(r.start_ms), float(r.end_ms)) for r in rows.itertuples()]


def _sos_yield(res):
    return res.wait_stats.set_index("wait_type").loc["SOS_SCHEDULER_YIELD"]


def test_two_cpu_bound_workers_on_one_scheduler_alternate_a_quantum_each():
    """Quantum 4 ms, bursts of 1 ms, 10 bursts each: A runs 0-4, B 4-8, A 8-12, B 12-16, A 16-18, B 18-20.
    Each of the four yields waits one quantum except the last (B waits 2 ms for A's last two bursts)."""
    prog = Program()
    a = _cpu_bound(prog, 1000.0, 10)
    b = _cpu_bound(prog, 1000.0, 10)
    res = _run(prog, [a, b], [0, 0], [0.0, 0.0], schedulers=1)
    stints = _stints(res.trace)
    assert [w for w, _, _ in stints] == [0, 1, 0, 1, 0, 1]
    assert [t for _, s, e in stints for t in (s, e)] == pytest.approx([0, 4, 4, 8, 8, 12, 12, 16, 16, 18, 18, 20])
    assert res.elapsed_ms == pytest.approx(20.0)
    sos = _sos_yield(res)
    assert sos["waiting_tasks_count"] == 4
    assert sos["wait_time_ms"] == pytest.approx(4 + 4 + 4 + 2)
    assert sos["max_wait_time_ms"] == pytest.approx(4.0)
    assert sos["signal_wait_time_ms"] == pytest.approx(sos["wait_time_ms"])  # a yield's wait is all signal wait


def test_a_yield_goes_to_the_tail_so_three_workers_run_round_robin():
    """With three CPU-bound workers, a yielding worker runs again only after both others: A B C A B C ...
    (had it gone to the head, it would run again straight away and the others would starve)."""
    prog = Program()
    starts = [_cpu_bound(prog, 500.0, 24) for _ in range(3)]
    res = _run(prog, starts, [0, 0, 0], [0.0, 1.0, 2.0], schedulers=1, quantum_us=2000.0)
    stints = _stints(res.trace)
    assert [w for w, _, _ in stints] == [0, 1, 2] * 6
    assert all(e - s == pytest.approx(2.0) for _, s, e in stints)  # four 0.5 ms bursts: one quantum each
    sos = _sos_yield(res)
    # every stint ends in a yield, the last one too (the yield point follows the burst that used the quantum up)
    assert sos["waiting_tasks_count"] == 18
    assert sos["max_wait_time_ms"] == pytest.approx(4.0)  # a yielder waits for the two others' quanta


def test_no_yield_while_nobody_else_is_runnable():
    """A CPU-bound worker alone on its scheduler passes many quantum ends without yielding."""
    prog = Program()
    a = _cpu_bound(prog, 1000.0, 40)
    res = _run(prog, [a], [0], [0.0], schedulers=1)
    assert _sos_yield(res)["waiting_tasks_count"] == 0
    assert _stints(res.trace) == [(0, 0.0, 40.0)]


def test_a_signalled_worker_is_boosted_ahead_of_workers_already_runnable():
    """W waits on a latch that H (another scheduler) holds until 1 ms; X runs and Y waits runnable on W's
    scheduler.  W's signal puts it at the head, so when X yields at 4 ms, W runs before Y (without the boost
    Y, queued since 3 us, would run first and W would wait until 8 ms)."""
    prog = Program()
    h = prog.start()
    prog.acquire(0, EX)
    prog.cpu(1000.0)
    prog.release(0, EX)
    prog.end()
    w = prog.start()
    prog.acquire(0, EX)
    prog.cpu(10.0)
    prog.release(0, EX)
    prog.end()
    x = _cpu_bound(prog, 100.0, 200)
    y = _cpu_bound(prog, 100.0, 200)
    res = _run(prog, [h, w, x, y], [1, 0, 0, 0], [0.0, 1.0, 2.0, 3.0], schedulers=2,
               latches=[LatchSpec("L", policy="fair")], record_acquires=10)
    on0 = [(wk, s) for wk, s, _ in _stints(res.trace) if wk != 0]
    # W suspended the instant it arrived (1 us); X ran from 2 us; after X's quantum, W (boosted), then Y
    assert [wk for wk, _ in on0[:4]] == [2, 1, 3, 2]
    assert on0[1][1] == pytest.approx(4.002)  # W runs the moment X yields
    log = res.acquire_log.set_index("worker")
    assert bool(log.loc[1, "suspended"]) and log.loc[1, "grant_ms"] == pytest.approx(1.0)
    assert log.loc[1, "run_ms"] == pytest.approx(4.002)
    # the boosted worker's time in the queue is the signal wait of its latch wait
    latch_ex = res.wait_stats.set_index("wait_type").loc["LATCH_EX"]
    assert latch_ex["signal_wait_time_ms"] == pytest.approx(4.002 - 1.0)


def test_a_worker_woken_on_an_idle_scheduler_runs_at_once_after_the_wake_up():
    """Wake-up 50 us, switch 2 us: W's latch is handed over at 1 ms, and W runs at 1.052 ms on its idle scheduler."""
    prog = Program()
    h = prog.start()
    prog.acquire(0, EX)
    prog.cpu(1000.0)
    prog.release(0, EX)
    prog.end()
    w = prog.start()
    prog.acquire(0, EX)
    prog.cpu(10.0)
    prog.release(0, EX)
    prog.end()
    res = _run(prog, [h, w], [0, 1], [0.0, 1.0], schedulers=2, latches=[LatchSpec("L", policy="fair")],
               wakeup_us=50.0, switch_us=2.0, record_acquires=10)
    log = res.acquire_log.set_index("worker")
    assert log.loc[1, "grant_ms"] == pytest.approx(1.002)  # H's release: 2 us switch + 1 ms hold
    assert log.loc[1, "run_ms"] == pytest.approx(1.002 + 0.050 + 0.002)


def test_an_unbound_arrival_goes_to_the_least_loaded_scheduler():
    """Fewest workers running or runnable first, then fewest tasks, then the lowest index.

    At 0: s0 has a running worker (demand 1, tasks 1), s1 two sleepers (0, 2), s2 one sleeper (0, 1).
    u0 (100 us) -> s2: least demand, then fewer tasks than s1 (a rule on tasks alone would say s0 or s2,
    demand with the lowest index s1).  u1 (200 us) -> s1: demand 0 beats s0's fewer tasks.
    u2 (300 us) -> s0: all demand 1, s0 has fewest tasks.  u3 (400 us) -> s2: s1 and s2 both demand 1, s2
    fewer tasks (2 against 3)."""
    prog = Program()
    busy = prog.start()
    prog.cpu(10_000.0)
    prog.end()
    sleeper = prog.start()
    prog.sleep(10_000.0)
    prog.end()
    starts = [busy, sleeper, sleeper, sleeper, busy, busy, busy, busy]
    scheds = [0, 1, 1, 2, -1, -1, -1, -1]
    arrivals = [0.0, 0.0, 0.0, 0.0, 100.0, 200.0, 300.0, 400.0]
    res = _run(prog, starts, scheds, arrivals, schedulers=3)
    assert list(res.workers["scheduler"]) == [0, 1, 1, 2, 2, 1, 0, 2]


def test_unbound_arrivals_on_idle_schedulers_spread_from_the_lowest_index():
    """Three unbound CPU-bound arrivals at once on three idle schedulers take one each, in index order; a
    fourth shares scheduler 0 (all tie on demand and tasks)."""
    prog = Program()
    busy = prog.start()
    prog.cpu(1_000.0)
    prog.end()
    res = _run(prog, [busy] * 4, [-1] * 4, [0.0] * 4, schedulers=3)
    assert list(res.workers["scheduler"]) == [0, 1, 2, 0]
    assert res.elapsed_ms == pytest.approx(2.0)  # two on scheduler 0, one after the other
