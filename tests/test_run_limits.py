"""Runs cut short report only what happened before the cut (hypothesis).

A run stops at ``max_sim_ms`` of simulated time, after ``max_events``
events, or when its measurement window closes (version-store).  Whatever was
under way then (a context switch, a CPU burst, a spin, a back-off, a sleep,
an OS call) counts only for its elapsed part, so every time and count a
Result reports is finite and non-negative, and the elapsed time and the
events stay within the limits.  Over every scenario in its catalogue ranges
(small workloads) and over generated worker programs that use the sleep,
OS-call, memory-grant, fork/join and B-tree instructions; and a run stays a
pure function of its inputs.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import fingerprints
import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import models
from models.engine.program import (
    BR_ALWAYS, BR_FAILED, BR_FULL, BR_MORE_ROWS, BR_OUTSIDE, EX, EXPONENTIAL, FIND_LEAF, FIND_PARENT,
    FIND_ROOT, FIXED, MODE_NAMES, OS_PREEMPTIVE, OS_SPIN, R_GATE, R_LEAF, R_NEW, R_PARENT, R_ROOT, SCALED,
    Program, register,
)
from models.engine.state import (
    DONE, GF_OS_BUSY, GF_OS_KERNEL, GF_OS_QUEUE, NEW, STATUS_DONE, STATUS_TIME_BOUND, WF_KERNEL, WF_OS_WAIT,
    WF_SLEPT, W_STATE, State,
)
from models.params import Param, ParameterError
from models.result import TABLES, Result, build
from models.workload import IndexSpec, LatchSpec, MemorySpec, Workload, simulate

# The most of each size a drawn workload may take (the catalogue's own bound where it is lower): small runs, so
# that many fit in the test's time.  Every other parameter is drawn over its whole catalogue range.
SMALL = {
    "requests": 300, "initial_queue": 40, "workers": 12, "acquires": 600, "maxdop": 6, "rows": 40_000,
    "rows_per_page": 400, "busy_scheduler": 5, "sessions": 12, "inserts_per_session": 24, "buckets": 8,
    "partitions": 4, "batch_rows": 4, "connections": 12, "window_ms": 30.0, "new_unit_every": 2_000, "queries": 4,
    "rows_per_query": 200_000, "max_server_memory_mb": 16_384, "start_gap_s": 0.02, "grant_timeout_s": 0.05,
    "rowgroups": 3, "os_calls_per_rowgroup": 20, "cpu_per_rowgroup_ms": 30.0, "schedulers": 6,
}
# A query that has not ended at the cut has no elapsed time yet (models.scenarios.cci_insert): NaN says so.
NOT_YET = {("queries", "elapsed_ms")}
# Columns that name a row rather than measure it; a task that has not arrived has no scheduler yet (-1).
NAMES = {("workers", "worker"), ("workers", "scheduler"), ("schedulers", "scheduler")}
EXAMPLES = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def parameter(p: Param) -> st.SearchStrategy:
    """Values of catalogue entry ``p``: its choices, or its range cut to the small bound of its size."""
    if p.kind == "choice":
        return st.sampled_from(p.choices)
    high = min(p.high, SMALL.get(p.name, p.high))
    if p.kind == "int":
        return st.integers(int(p.low), int(high))
    return st.floats(p.low, high, exclude_min=p.above_low)


def consistent(name: str, v: dict[str, Any]) -> dict[str, Any]:
    """``v`` adjusted, within each parameter's range, to pass the scenario's checks of one parameter against another."""
    if name == "closed-latch":
        v["acquires"] = max(v["acquires"], v["workers"])
    elif name == "parallel-insert":
        v["maxdop"] = min(v["maxdop"], v["schedulers"])
        v["busy_scheduler"] = min(v["busy_scheduler"], v["schedulers"] - 1)
    elif name == "last-page-insert":
        v["inserts_per_session"] = v["batch_rows"] * max(1, v["inserts_per_session"] // v["batch_rows"])
    return v


@st.composite
def scenario_runs(draw, names=tuple(models.scenarios())) -> tuple[str, dict[str, Any]]:
    """A scenario and parameters drawn from its catalogue (small workloads)."""
    name = draw(st.sampled_from(names))
    v = {p.name: draw(parameter(p)) for p in models.scenarios()[name].params}
    return name, consistent(name, v)


def run_quietly(name: str, **kwargs: Any) -> Result:
    """``models.run`` without the warning a truncated run gives; a combination the scenario refuses is no example."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return models.run(name, **kwargs)
        except ParameterError:
            reject()


def figures(res: Result) -> dict[str, pd.DataFrame]:
    """Every table of figures a Result reports: the DMV-shaped ones and those among its extras (queries...)."""
    tables = {name: getattr(res, name) for name in TABLES}
    tables.update({name: table for name, table in res.extra.items() if isinstance(table, pd.DataFrame)})
    return tables


def assert_sound(res: Result, limit_ms: float, max_events: int) -> None:
    """Elapsed time and events within the limits; every figure finite and non-negative; parts within wholes."""
    # ``limit_ms`` may not be a whole number of the clock's ticks: the end is, and may sit a rounding above it.
    assert 0.0 <= res.elapsed_ms <= limit_ms * (1 + 1e-12), (res.elapsed_ms, limit_ms)
    assert 0 <= res.extra["events"] <= max_events
    for name, table in figures(res).items():
        for column in table.select_dtypes("number").columns.difference([c for t, c in NAMES if t == name]):
            values = table[column].to_numpy(dtype=np.float64)
            if (name, column) in NOT_YET and res.truncated:
                values = values[~np.isnan(values)]
            assert np.isfinite(values).all() and (values >= 0).all(), (name, column, table[column].tolist())
    for key, value in res.extra.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert math.isfinite(value) and value >= 0, (key, value)
    assert math.isfinite(res.throughput_per_s) and res.throughput_per_s >= 0
    unplaced = res.workers[res.workers["scheduler"] < 0]
    assert (unplaced["scheduler"] == -1).all() and (unplaced[["acquires", "cpu_ms"]] == 0).all(axis=None)
    assert (res.acquire_wait_ms >= 0).all()
    tolerance = 1e-9 * max(1.0, res.elapsed_ms)  # the tables' milliseconds are the engine's microseconds / 1000
    assert (res.schedulers["busy_ms"] <= res.elapsed_ms + tolerance).all()
    assert (res.workers["spin_ms"] <= res.workers["cpu_ms"] + tolerance).all()
    assert res.workers["cpu_ms"].sum() <= res.schedulers["busy_ms"].sum() + tolerance * len(res.workers)
    waits = res.wait_stats
    assert (waits["signal_wait_time_ms"] <= waits["wait_time_ms"] + tolerance).all()
    if res.trace is not None and len(res.trace):
        assert (res.trace["start_ms"] <= res.trace["end_ms"]).all()
        assert res.trace["end_ms"].max() <= res.elapsed_ms


# ---------------------------------------------------------------- what was under way, exactly


def cut_at_400_us(activities: list[str], context_switch_us: float = 0.0) -> tuple[State, Result]:
    """Run one worker per activity, each on a scheduler of its own from time 0, and stop the run at 400 us.

    A CPU burst and a sleep would take 1,000 us, an OS call 300 us of the serialised path's work.  "hold" and
    "spin" both take the one latch (unfair, spinning in rounds of 300 us) and hold it for 1,000 us: the first to
    ask holds it, the next spins.  A worker that arrives at 400 us is the last event before ``max_sim_ms`` = 0.45,
    so the run ends there.
    """
    prog = Program()
    starts = []
    for activity in activities:
        starts.append(prog.start())
        if activity == "cpu":
            prog.cpu(1000.0)
        elif activity == "sleep":
            prog.sleep(1000.0)
        elif activity in ("hold", "spin"):
            prog.acquire(0, EX)
            prog.cpu(1000.0)
            prog.release(0, EX)
        else:
            prog.oscall(300.0, OS_SPIN if activity == "spin-call" else OS_PREEMPTIVE)
        prog.end()
    starts.append(prog.end())
    n = len(starts)
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=list(range(n)),
                  worker_arrival_us=[0.0] * (n - 1) + [400.0], worker_daemon=[False] * n, worker_kind=["task"] * n,
                  latches=[LatchSpec("L", policy="unfair", spin_us=300.0, spins_per_round=30, max_backoffs=1,
                                     backoff_us=0.0)],
                  schedulers=n, context_switch_us=context_switch_us, os_wait_type="MEMORY_ALLOCATION_EXT")
    raw = simulate(wl, 1, max_sim_ms=0.45)
    res = build(raw, "cut", {}, 1)
    assert raw.status == STATUS_TIME_BOUND and res.elapsed_ms == 0.4
    return raw.state, res


def test_a_cut_keeps_the_elapsed_part_of_a_burst_a_sleep_and_a_context_switch():
    s, res = cut_at_400_us(["cpu", "sleep"])
    assert res.workers["cpu_ms"].tolist() == [0.4, 0.0, 0.0]
    assert res.schedulers["busy_ms"].tolist() == [0.4, 0.0, 0.0]
    assert s.worker_times[1, WF_SLEPT] == 400.0
    # Mid-way through its context switch a worker has used no CPU; its scheduler has spent the switch so far.
    s, res = cut_at_400_us(["cpu"], context_switch_us=1000.0)
    assert res.workers["cpu_ms"].tolist() == [0.0, 0.0]
    assert res.schedulers["busy_ms"].tolist() == [0.4, 0.0]
    assert res.schedulers["idle_ms"].tolist() == [0.0, 0.4]


def test_a_cut_keeps_the_elapsed_part_of_a_spin_round_and_its_spins():
    # The second worker spins from 0 to 300 us, backs off for no time and spins again: a third of that round is done.
    s, res = cut_at_400_us(["hold", "spin"])
    assert res.workers["cpu_ms"].tolist() == [0.4, 0.4, 0.0]
    assert res.workers["spin_ms"].tolist() == [0.0, 0.4, 0.0]
    assert res.spin_stats[["collisions", "spins", "backoffs"]].values.tolist() == [[1, 40, 1]]


def test_a_cut_keeps_the_elapsed_part_of_os_calls_working_and_queued():
    # Three calls at once: the path works on them from 0, 300 and 600 us; at 400 us the second is a third done.
    s, res = cut_at_400_us(["spin-call"] * 3)
    assert res.workers["cpu_ms"].tolist() == [0.3, 0.4, 0.4, 0.0]
    assert s.worker_times[:3, WF_KERNEL].tolist() == [300.0, 400.0, 400.0]
    assert (s.run_times[GF_OS_KERNEL], s.run_times[GF_OS_BUSY], s.run_times[GF_OS_QUEUE]) == (1100.0, 400.0, 700.0)
    s, res = cut_at_400_us(["preemptive-call"] * 3)
    assert res.workers["cpu_ms"].tolist() == [0.0] * 4
    assert s.worker_times[:3, WF_OS_WAIT].tolist() == [300.0, 400.0, 400.0]
    assert (s.run_times[GF_OS_KERNEL], s.run_times[GF_OS_BUSY], s.run_times[GF_OS_QUEUE]) == (400.0, 400.0, 700.0)
    wait = res.wait_stats.set_index("wait_type").loc["MEMORY_ALLOCATION_EXT"]
    assert (wait["waiting_tasks_count"], wait["wait_time_ms"], wait["max_wait_time_ms"]) == (3, 1.1, 0.4)


# ---------------------------------------------------------------- every scenario, cut short


@EXAMPLES
@given(scenario_runs(), st.floats(0.001, 60.0), st.integers(1, 20_000), st.sampled_from([0, 500]))
def test_a_scenario_cut_short_reports_only_what_happened(case, max_sim_ms, max_events, trace_events):
    name, v = case
    res = run_quietly(name, **v, max_sim_ms=max_sim_ms, max_events=max_events, trace_events=trace_events)
    limit = min(max_sim_ms, v["window_ms"]) if "window_ms" in v else max_sim_ms
    assert_sound(res, limit, max_events)


@EXAMPLES
@given(scenario_runs(names=("version-store",)), st.integers(1, 200_000))
def test_a_window_closes_on_what_happened_within_it(case, max_events):
    _, v = case
    res = run_quietly("version-store", **v, max_events=max_events, trace_events=500)
    assert_sound(res, v["window_ms"], max_events)
    assert res.truncated == (res.extra["events"] == max_events)


# ---------------------------------------------------------------- purity


@settings(EXAMPLES, max_examples=100)
@given(scenario_runs(), st.floats(0.001, 60.0), st.integers(1, 20_000))
def test_the_same_inputs_give_the_same_result(case, max_sim_ms, max_events):
    name, v = case
    first = run_quietly(name, **v, max_sim_ms=max_sim_ms, max_events=max_events, trace_events=200)
    again = run_quietly(name, **v, max_sim_ms=max_sim_ms, max_events=max_events, trace_events=200)
    assert first.to_json() == again.to_json()
    assert fingerprints.fingerprint(first) == fingerprints.fingerprint(again)


@settings(EXAMPLES, max_examples=100)
@given(st.integers(1, 8), st.integers(0, 2**31 - 1), st.integers(1, 2**31 - 2))
def test_another_seed_gives_other_draws(workers, seed, step):
    other = (seed + step) % (2**31 - 1)
    params = dict(workers=workers, acquires=4 * workers, think_dist="exponential", hold_dist="exponential")
    first = run_quietly("closed-latch", **params, seed=seed)
    second = run_quietly("closed-latch", **params, seed=other)
    assert first.to_json() != second.to_json()


# ---------------------------------------------------------------- generated worker programs


def session_program(prog: Program, think_us: float, call_rows: int, calls: int, alloc_latch: int) -> int:
    """A session's inserts into the index: per call, walk root, parent and leaf in EX, insert or split; its start.

    The whole tree's root is held in EX through an insert (one walker per tree, so no split can move what a
    walker holds); the flow-control gate (a register holding -1 when the index has none) comes first.
    """
    start = prog.start()
    if think_us > 0:
        prog.sleep(think_us, EXPONENTIAL)
    prog.cpu(20.0, EXPONENTIAL)
    prog.row(call_rows)
    walk = prog.find(FIND_ROOT)
    prog.yield_point()
    prog.acquire(register(R_GATE), EX)
    prog.acquire(register(R_ROOT), EX)
    prog.find(FIND_PARENT)
    prog.acquire(register(R_PARENT), EX)
    prog.find(FIND_LEAF)
    prog.acquire(register(R_LEAF), EX)
    to_split = prog.branch(BR_FULL)
    put = prog.cpu(5.0, FIXED)
    prog.insert()
    prog.unit()
    to_next = prog.branch(BR_MORE_ROWS)
    done = prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.release(register(R_GATE), EX)
    prog.loop(start, calls, slot=0)
    prog.end()
    # The leaf is full: split it (and its parent if full) under the allocation latch, insert on the new page.
    prog.patch(to_split, prog.acquire(alloc_latch, EX))
    prog.cpu(10.0, FIXED)
    prog.release(alloc_latch, EX)
    prog.split()
    prog.acquire(register(R_NEW), EX)
    prog.cpu(1.0, SCALED)
    prog.insert()
    prog.unit()
    prog.release(register(R_NEW), EX)
    prog.branch(BR_ALWAYS, done)  # the call's other rows are not inserted
    # The call's next row: on the leaf held if it belongs there and fits, else walk again.
    prog.patch(to_next, prog.row())
    to_walk = prog.branch(BR_OUTSIDE)
    prog.branch(BR_ALWAYS, put)
    prog.patch(to_walk, prog.release(register(R_LEAF), EX))
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.release(register(R_GATE), EX)
    prog.branch(BR_ALWAYS, walk)
    return start


@st.composite
def worker_steps(draw, prog: Program, latches: int) -> int:
    """A parallel worker's program: a loop over drawn steps (CPU, sleep, OS call, latch hold, yield); its start."""
    start = prog.start()
    for kind in draw(st.lists(st.sampled_from(["cpu", "sleep", "spin-call", "preemptive-call", "latch", "yield"]),
                              min_size=1, max_size=5)):
        dist = draw(st.sampled_from([FIXED, EXPONENTIAL]))
        us = draw(st.floats(0.0, 400.0))
        if kind == "cpu":
            prog.cpu(us, dist)
        elif kind == "sleep":
            prog.sleep(us, dist)
        elif kind.endswith("call"):
            prog.oscall(us, OS_SPIN if kind == "spin-call" else OS_PREEMPTIVE, dist)
        elif kind == "latch":
            latch, mode = draw(st.integers(0, latches - 1)), draw(st.integers(0, len(MODE_NAMES) - 1))
            prog.acquire(latch, mode)
            prog.cpu(us, dist, contended_latch=latch if draw(st.booleans()) else None)
            prog.release(latch, mode)
        else:
            prog.yield_point(us)
    prog.loop(start, draw(st.integers(1, 4)), slot=1)
    prog.end()
    return start


@st.composite
def generated_workloads(draw) -> Workload:
    """Queries (grant, fork, join, free) whose workers sleep, call the OS and hold latches, beside index inserts."""
    schedulers = draw(st.integers(1, 4))
    policy = draw(st.sampled_from(["fair", "unfair"]))
    knobs = dict(policy=policy, spin_us=draw(st.floats(0.1, 20.0)), spins_per_round=draw(st.integers(1, 1000)),
                 max_backoffs=draw(st.integers(0, 4)), backoff_us=draw(st.floats(0.0, 50.0)))
    n_plain = draw(st.integers(1, 3))  # latches the parallel workers hold
    key = draw(st.sampled_from(["identity", "guid", "reverse-bits", "hash-bucket", "partitioned"]))
    trees = draw(st.integers(1, 3)) if key == "partitioned" else 1
    gates = draw(st.booleans())
    n_sessions = draw(st.integers(0, 4))
    call_rows, calls = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    rows = n_sessions * call_rows * calls
    # Latches: the parallel workers' own, the roots, the allocation latch, the gates, then one per page.
    root0 = n_plain
    alloc = root0 + trees
    gate0 = alloc + 1
    page0 = gate0 + trees * schedulers
    pages = 3 * rows + 4 * trees + 16
    latches = ([LatchSpec(f"PLAIN{k}", **knobs) for k in range(n_plain)]
               + [LatchSpec("BUFFER", "PAGELATCH", **knobs)] * trees + [LatchSpec("ALLOCATION", **knobs)]
               + [LatchSpec("BTREE_INSERT_FLOW_CONTROL", policy="unfair", spin_us=0.1, spins_per_round=1,
                            max_backoffs=0, backoff_us=0.0, wait_type="BTREE_INSERT_FLOW_CONTROL")]
               * (trees * schedulers) + [LatchSpec("BUFFER", "PAGELATCH", **knobs)] * pages)
    prog = Program()
    starts, arrivals, scheds, kinds = [], [], [], []
    kb = draw(st.integers(1, 1000))
    timeout_us = draw(st.floats(1.0, 2000.0))
    for _ in range(draw(st.integers(1, 3))):
        dop = draw(st.integers(1, 3))
        child = draw(worker_steps(prog, n_plain))
        coordinator = prog.grant(kb, draw(st.integers(1, kb)), timeout_us)
        failed = prog.branch(BR_FAILED)
        prog.fork(child, dop)
        prog.join()
        prog.free()
        prog.patch(failed, prog.end())
        starts += [coordinator] + [child] * dop
        arrivals += [draw(st.floats(0.0, 500.0))] + [math.inf] * dop
        scheds += [draw(st.integers(-1, schedulers - 1)) for _ in range(dop + 1)]
        kinds += ["coordinator"] + ["worker"] * dop
    if n_sessions:
        session = session_program(prog, draw(st.sampled_from([0.0, 50.0])), call_rows, calls, alloc)
        starts += [session] * n_sessions
        arrivals += [draw(st.floats(0.0, 200.0)) for _ in range(n_sessions)]
        scheds += [s % schedulers for s in range(n_sessions)]
        kinds += ["session"] * n_sessions
    capacity = draw(st.integers(1, 4))
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=scheds, worker_arrival_us=arrivals,
        worker_daemon=[False] * len(starts), worker_kind=kinds, latches=latches, schedulers=schedulers,
        quantum_us=draw(st.sampled_from([50.0, 4000.0])), context_switch_us=draw(st.floats(0.0, 50.0)),
        wakeup_us=draw(st.floats(0.0, 50.0)), expected_acquires=64 * len(starts) + 8 * rows, work_units=0,
        memory=MemorySpec(target_kb=draw(st.integers(1, 3000)), limit_kb=draw(st.integers(1, 4000))),
        os_wait_type="MEMORY_ALLOCATION_EXT",
        index=IndexSpec(strategy=key, capacity=capacity, fanout=draw(st.integers(2, 4)),
                        buckets=draw(st.integers(1, 4)), trees=trees, pages=pages, heat_rows=rows + 1,
                        page_latch0=page0, root_latch0=root0, gate_latch0=gate0 if gates else -1),
    )


BUDGET = 20_000  # events a generated workload may take to finish (they take a few hundred at most)


@EXAMPLES
@given(generated_workloads(), st.integers(0, 1000))
def test_generated_programs_finish_within_their_budget(wl, seed):
    raw = simulate(wl, seed, max_events=BUDGET, trace_events=2_000)
    res = build(raw, "generated", {}, seed)
    assert raw.status == STATUS_DONE and not res.truncated, res.truncated_reason
    assert_sound(res, math.inf, BUDGET)
    # Every worker ended, but for the parallel workers of a query whose grant failed: those never started.
    never_started = raw.state.workers[:, W_STATE] == NEW
    assert (never_started | (raw.state.workers[:, W_STATE] == DONE)).all()
    assert not np.isfinite(np.asarray(wl.worker_arrival_us)[never_started]).any()


@EXAMPLES
@given(generated_workloads(), st.integers(0, 1000), st.floats(0.001, 3.0), st.integers(1, 400))
def test_generated_programs_cut_short_report_only_what_happened(wl, seed, max_sim_ms, max_events):
    raw = simulate(wl, seed, max_events=max_events, max_sim_ms=max_sim_ms, trace_events=2_000)
    assert_sound(build(raw, "generated", {}, seed), max_sim_ms, max_events)
