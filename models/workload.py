"""The Python front of the engine: what a workload is, and the one call that runs it.

A scenario builds a :class:`Workload` (programs, workers, latches,
schedulers, costs); :func:`simulate` lays it into the state buffer, runs the
compiled loop (:mod:`models.engine.loop`) in chunks and returns the raw
arrays as a :class:`RawRun`, which :mod:`models.result` turns into DMV-shaped tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from models.engine import btree
from models.engine.clock import to_ticks
from models.engine.latch import POLICIES
from models.engine.loop import run_events
from models.engine.program import CPU, EXPONENTIAL, GRANT, OSCALL, SLEEP, YIELD, Program
from models.engine.rng import poisson_arrivals, seed_state, start_ahead
from models.engine.state import (
    BT_OVERFLOW, GF_LOG_AHEAD, GF_MAX_TIME, GF_NOW, GF_QUANTUM, GF_SWITCH, GF_WAKEUP, G_EVENTS, G_MAIN_LEFT,
    G_SEM_LIMIT, G_SEM_TARGET, LF_BACKOFF_US, LF_CONTENDER_COST, LF_SPIN_US, L_ACQUIRES, L_MAX_BACKOFFS, L_POLICY,
    L_ROUNDS_PER_BACKOFF, L_SPINS_PER_ROUND, MAX_WORKERS, P_A, P_B, P_OP, STATUS_CHUNK, WF_ARRIVAL, W_DAEMON,
    W_PROGRAM_COUNTER, W_SCHEDULER, State, allocate,
)


@dataclass
class LatchSpec:
    """One latch: its class name for the DMVs, wait-type prefix, policy and spin knobs.

    A spec with ``wait_type`` set is a gate that SQLOS reports under a wait
    type of its own (BTREE_INSERT_FLOW_CONTROL), not in sys.dm_os_latch_stats.
    """

    latch_class: str
    wait_prefix: str = "LATCH"
    policy: str = "fair"
    spin_us: float = 1.0
    spins_per_round: int = 100
    max_backoffs: int = 4
    backoff_us: float = 5.0
    rounds_per_backoff: int = 1  # spin rounds, the latch checked after each, before a back-off
    contender_cost_us: float = 0.0
    wait_type: str = ""       # a wait type of its own instead of prefix_MODE (not then a latch class in the DMV)
    shown_modes: tuple[str, ...] = ("EX",)  # wait rows shown even with no waits


@dataclass
class IndexSpec:
    """The clustered index a hot-page workload inserts into (:mod:`models.engine.btree`).

    ``pages`` bounds the pages the run may allocate (leaf and non-leaf);
    ``heat_rows`` is how many inserts are logged (time, page) for a heat map.
    Latch ``page_latch0 + p`` guards page ``p``, ``root_latch0 + t`` tree
    ``t``'s root, and ``gate_latch0 + t * schedulers + s`` the flow-control
    gate of tree ``t`` on scheduler ``s`` (-1: no gates).
    """

    strategy: str
    capacity: int
    fanout: int
    buckets: int
    trees: int
    pages: int
    heat_rows: int
    page_latch0: int
    root_latch0: int
    gate_latch0: int = -1


@dataclass
class MemorySpec:
    """The memory-grant semaphore (:mod:`models.engine.grants`): grants wait above ``target_kb``; forced ones fail above ``limit_kb``."""

    target_kb: int
    limit_kb: int


@dataclass
class Workload:
    """Everything the event loop needs: programs, workers, latches, schedulers and costs.

    ``worker_scheduler`` is -1 for a task placed on the least-loaded scheduler
    when it arrives.  Workers from ``poisson_from`` on arrive as a Poisson
    stream with mean gap ``poisson_gap_us`` (drawn from the run's generator);
    the others arrive at ``worker_arrival_us``.

    ``window_us`` > 0 makes the run a measurement over that much simulated
    time, as a performance counter samples a workload that never ends (its
    workers loop for ever): the run stops when the window closes and is not
    truncated.  ``count_units`` makes the throughput the program's UNIT
    instructions per second instead of ``work_units`` or latch acquires.

    A worker with an infinite arrival time never arrives by itself: it is a
    parallel worker that its query's coordinator starts with FORK (the
    workers right after the coordinator).  ``memory`` sets up the grant
    semaphore.  ``expected_events`` and ``expected_ms`` size the event bound
    and the progress reports of a workload without latches.
    """

    program: Program
    worker_start: list[int]
    worker_scheduler: list[int]
    worker_arrival_us: list[float]
    worker_daemon: list[bool]
    worker_kind: list[str]
    latches: list[LatchSpec]
    schedulers: int
    quantum_us: float = 4000.0
    context_switch_us: float = 0.0
    wakeup_us: float = 0.0
    expected_acquires: int = 0
    work_units: int = -1
    poisson_from: int = -1
    poisson_gap_us: float = 0.0
    window_us: float = 0.0
    count_units: bool = False
    index: IndexSpec | None = None
    memory: MemorySpec | None = None
    os_wait_type: str = ""  # the wait type of a preemptive OSCALL ("": the program makes none)
    expected_events: int = 0
    expected_ms: float = 0.0
    collect: Callable[[State], dict] | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class RawRun:
    """The arrays a finished run leaves behind, before they become a Result."""

    workload: Workload
    state: State
    status: int
    max_events: int
    max_sim_ms: float


def simulate(workload: Workload, seed: int, *, trace_events: int = 0, record_acquires: int = 0,
             max_events: int = 0, max_sim_ms: float = 1e9,
             progress: Callable[[float], None] | None = None, chunk: int = 2_000_000) -> RawRun:
    """Run a workload to completion (or to a bound) and return its raw state.

    Every time the workload gives is rounded to the clock's tick here
    (:mod:`models.engine.clock`), so the event loop's time arithmetic is exact.
    """
    n_workers = len(workload.worker_start)
    if n_workers > MAX_WORKERS:
        raise ValueError(f"{n_workers:,} workers: the engine runs at most {MAX_WORKERS:,} per run")
    samples = min(max(workload.expected_acquires, 1), 5_000_000)
    prog_i, prog_x = workload.program.arrays()
    index = workload.index
    memory = workload.memory
    s = allocate(n_workers, workload.schedulers, len(workload.latches), prog_i.shape[0], trace_events,
                 record_acquires, samples, index.pages if index else 0, index.heat_rows if index else 0,
                 index.capacity if index else 0, 4 * n_workers + 16 if memory else 0)
    # Fixed durations go on the tick once; exponential ones keep their exact mean.
    ops = prog_i[:, P_OP]
    timed = (ops == CPU) | (ops == SLEEP)  # operand a: the distribution
    on_tick_x = ((timed & (prog_i[:, P_A] != EXPONENTIAL)) | (ops == YIELD) | (ops == GRANT)
                 | ((ops == OSCALL) & (prog_i[:, P_B] != EXPONENTIAL)))
    s.prog_i[:] = prog_i
    s.prog_x[:] = np.where(on_tick_x, to_ticks(prog_x), prog_x)
    if index is not None:
        btree.initialise(s.bt, s.pages, s.leaves, btree.STRATEGIES[index.strategy], index.capacity, index.fanout,
                         index.buckets, index.trees, index.page_latch0, index.root_latch0, index.gate_latch0,
                         workload.schedulers)
    s.workers[:, W_PROGRAM_COUNTER] = workload.worker_start
    s.workers[:, W_SCHEDULER] = workload.worker_scheduler
    s.workers[:, W_DAEMON] = np.asarray(workload.worker_daemon, dtype=np.int64)
    s.worker_times[:, WF_ARRIVAL] = to_ticks(workload.worker_arrival_us)
    for k, spec in enumerate(workload.latches):
        s.latches[k, L_POLICY] = POLICIES.index(spec.policy)
        s.latches[k, L_SPINS_PER_ROUND] = spec.spins_per_round
        s.latches[k, L_MAX_BACKOFFS] = spec.max_backoffs
        s.latches[k, L_ROUNDS_PER_BACKOFF] = spec.rounds_per_backoff
        s.latch_times[k, LF_SPIN_US] = to_ticks(spec.spin_us)
        s.latch_times[k, LF_BACKOFF_US] = to_ticks(spec.backoff_us)
        s.latch_times[k, LF_CONTENDER_COST] = to_ticks(spec.contender_cost_us)
    forked = ~np.isfinite(np.asarray(workload.worker_arrival_us, dtype=np.float64))  # started by FORK, if at all
    s.run_cells[G_MAIN_LEFT] = int(((s.workers[:, W_DAEMON] == 0) & ~forked).sum())
    if memory is not None:
        s.run_cells[G_SEM_TARGET] = memory.target_kb
        s.run_cells[G_SEM_LIMIT] = memory.limit_kb
    s.run_times[GF_QUANTUM] = to_ticks(workload.quantum_us)
    s.run_times[GF_SWITCH] = to_ticks(workload.context_switch_us)
    s.run_times[GF_WAKEUP] = to_ticks(workload.wakeup_us)
    s.run_times[GF_MAX_TIME] = max_sim_ms * 1000.0
    if workload.window_us > 0:
        s.run_times[GF_MAX_TIME] = min(s.run_times[GF_MAX_TIME], to_ticks(workload.window_us))
    s.rng[:] = seed_state(seed)
    if workload.poisson_from >= 0:
        poisson_arrivals(s.rng, s.worker_times[:, WF_ARRIVAL], workload.poisson_from, workload.poisson_gap_us)
    start_ahead(s.rng, s.run_times, GF_LOG_AHEAD)
    s.order[:] = np.argsort(s.worker_times[:, WF_ARRIVAL], kind="stable")
    if max_events <= 0:
        max_events = (60 * max(workload.expected_acquires, 1) + 4 * workload.expected_events
                      + 20 * n_workers + 1_000_000)
    expected = max(workload.expected_acquires, 1)
    done_events = 0
    while True:
        status = run_events(s.address, max_events, min(done_events + chunk, max_events))
        done_events = int(s.run_cells[G_EVENTS])
        if progress is not None:
            if workload.window_us > 0:
                done = s.run_times[GF_NOW] / s.run_times[GF_MAX_TIME]
            elif workload.expected_ms > 0:
                done = s.run_times[GF_NOW] / 1000.0 / workload.expected_ms
            else:
                done = s.latches[:, L_ACQUIRES].sum() / expected
            progress(min(1.0, done) if status == STATUS_CHUNK else 1.0)
        if status != STATUS_CHUNK:
            if index is not None and s.bt[BT_OVERFLOW]:
                raise RuntimeError(f"the index outgrew its table of {index.pages:,} pages: the scenario's "
                                   "page bound is too small for this run")
            return RawRun(workload, s, int(status), max_events, max_sim_ms)
