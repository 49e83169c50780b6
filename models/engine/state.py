"""The simulation state: one buffer of 8-byte words, cut into fixed-shape tables.

Every table the event loop reads or writes (one row per worker, scheduler or
latch; the event heap; the trace and acquire log; the program) is a view into
one int64 buffer (float tables read its words as float64).  A compiled kernel
takes the buffer's address, one machine word, where it used to take seventeen
arrays: numba passes each array as seven to nine words, so a call in the hot
chain moved about 160 of them through the stack.  :func:`tables`, inlined into
each kernel, cuts the views it needs from the sizes and offsets that
:func:`allocate` writes into the buffer's first cells; column counts are
constants, so an index is one multiply-add.  The column names below are the
only place where the layout is written down; every kernel indexes with them.
(numba compiles over plain arrays: a jitclass cannot be cached.)  The views and their
indexing without wraparound or bounds checks are :mod:`models.engine.numba_internals`'.

The numba cache is keyed on every file of the engine (:mod:`models.engine.jit`),
so an edit here recompiles every kernel that cuts these tables.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from models.engine.numba_internals import NO_RUNTIME, fixed, view
from models.engine.numba_internals import Table  # noqa: F401 - cache indexes written before it moved name it here

# Worker states (also the trace states).
RUNNING, RUNNABLE, SPINNING, SUSPENDED, BACKOFF, NEW, DONE, SLEEPING = 0, 1, 2, 3, 4, 5, 6, 7
STATE_NAMES = ("running", "runnable", "spinning", "suspended", "backoff", "new", "done", "sleeping")

# Worker flags set when a worker is made runnable, read when it next runs.
FLAG_NONE, FLAG_GRANTED, FLAG_RETRY, FLAG_YIELDED = 0, 1, 2, 3

# Worker integer columns (the ``workers`` table, one row per worker).
(W_STATE, W_SCHEDULER, W_PROGRAM_COUNTER, W_LOOP0, W_LOOP1, W_LOOP2, W_NEXT, W_PREV, W_LATCH_QUEUE_NEXT, W_FLAG,
 W_BOOSTED, W_ACQUIRES, W_LATCH, W_MODE, W_DAEMON, W_LOG_ROW, W_BACKOFFS, W_WAITED,
 W_QUEUE_SEQ, W_KEY, W_PAGE, W_REGISTER0, W_REGISTER1, W_REGISTER2, W_REGISTER3, W_REGISTER4, W_BATCH, W_SCALE,
 W_PARENT, W_CHILDREN, W_GRANT_WANTED_KB, W_GRANT_NEEDED_KB, W_GRANTED_KB, W_GRANT_OUTCOME, W_GRANT_QUEUE_NEXT,
 W_GRANT_QUEUE, W_SPIN_ROUNDS, W_NCOLS) = range(38)
LOOP_SLOTS = 3  # nested loops a program may use (W_LOOP0 .. W_LOOP2)
REGISTERS = 5  # latch registers an ACQUIRE or RELEASE may name instead of a latch (W_REGISTER0 .. W_REGISTER4)

# Worker float columns (the ``worker_times`` table; microseconds).  WF_OS_CALL_START: when the worker's last OS
# call began its work in the serialised path (it queued from the call until then).
(WF_ARRIVAL, WF_REQUESTED_AT, WF_SUSPENDED_AT, WF_SIGNALLED_AT, WF_STATE_SINCE, WF_QUANTUM_START, WF_CPU, WF_SPIN,
 WF_LATCH_WAIT, WF_WAIT_SO_FAR, WF_SIGNAL_WAIT_SO_FAR, WF_OS_CALL_START, WF_ENQUEUED_AT, WF_SLEPT,
 WF_GRANT_REQUESTED_AT, WF_GRANT_DEADLINE, WF_GRANT_TIMER, WF_GRANT_WAIT, WF_JOIN_STARTED_AT, WF_KERNEL, WF_OS_WAIT,
 WF_NCOLS) = range(22)

# A worker's memory grant (W_GRANT_OUTCOME): none asked, waiting in the grant queue, granted what it asked,
# forced to its required minimum at the time-out, or failed at the time-out (error 8645).
GRANT_NONE, GRANT_WAITING, GRANT_GRANTED, GRANT_FORCED, GRANT_FAILED = range(5)
GRANT_OUTCOMES = ("none", "waiting", "granted", "forced_minimum", "error_8645")

# Scheduler integer and float columns (the ``schedulers`` and ``scheduler_times`` tables).
(S_RUNNING_WORKER, S_RUNNABLE_HEAD, S_RUNNABLE_TAIL, S_BOOSTS_IN_A_ROW, S_SWITCHES, S_LOAD, S_RUNNABLE_COUNT,
 S_NCOLS) = range(8)
SF_BUSY, SF_NCOLS = 0, 1

# Latch integer columns (the ``latches`` table): held counts per mode come first (KP..DT = 0..4); L_HELD
# has bit m set while mode m is held, so a grant check is one mask test (models.engine.latch).
(L_QUEUE_HEAD, L_QUEUE_TAIL, L_QUEUE_LENGTH, L_POLICY, L_SPINNERS, L_ACQUIRES, L_COLLISIONS, L_SPINS,
 L_BACKOFFS, L_QUEUE_SEQ, L_SPINS_PER_ROUND, L_MAX_BACKOFFS, L_HELD, L_ROUNDS_PER_BACKOFF, L_NCOLS) = range(5, 20)
# Latch float columns (the ``latch_times`` table; microseconds).
(LF_LATENCY_SUM, LF_QUEUE_AREA, LF_QUEUE_CHANGED_AT, LF_QUEUE_RESIDENCE, LF_CONTENDER_COST, LF_SPIN_US, LF_BACKOFF_US,
 LF_NCOLS) = range(8)
# Per latch and mode wait statistics (the ``latch_waits`` table, float): count, time, max, signal time.
LW_COUNT, LW_TIME, LW_MAX, LW_SIGNAL_TIME, LW_NCOLS = range(5)


# Run-wide integer cells (the ``run_cells`` table): counters, sizes and offsets.
(G_EVENTS, G_EVENT_SEQ, G_HEAP_LENGTH, G_NEXT_ARRIVAL, G_MAIN_LEFT, G_TRACE_USED, G_LOG_USED,
 G_SAMPLES_USED, G_YIELDS, G_STATUS, G_RING_HEAD, G_RING_LENGTH, G_FRONT_FULL, G_FRONT_KEY, G_UNITS_DONE,
 # Table sizes, written once by allocate(); tables() cuts the views from them.
 G_WORKERS, G_SCHEDULERS, G_LATCHES, G_PROGRAM, G_TRACE_ROWS, G_LOG_ROWS, G_SAMPLES,
 # Where each table starts in the buffer (in words), also written once by allocate().
 AT_WORKERS, AT_SCHEDULERS, AT_LATCHES, AT_HEAP_K, AT_RING, AT_ORDER, AT_PROG_I, AT_TRACE_I, AT_LOG_I,
 AT_RNG, AT_RUN_TIMES, AT_WORKER_TIMES, AT_SCHEDULER_TIMES, AT_LATCH_TIMES, AT_LATCH_WAITS, AT_HEAP_T,
 AT_PROG_X, AT_TRACE_F, AT_LOG_F, AT_SAMPLES,
 AT_BT, AT_PAGES, AT_LEAVES, AT_HEAT, AT_KEYS, G_PAGES, G_HEAT_ROWS, G_KEY_SLOTS,
 # The memory-grant semaphore (models.engine.grants): KB granted, target and limit; queries waiting in all its
 # queues; counters.
 AT_GLOG, G_GLOG_ROWS, G_SEM_GRANTED, G_SEM_TARGET, G_SEM_LIMIT, G_SEM_WAITING,
 G_SEM_GRANTS, G_SEM_FORCED, G_SEM_TIMEOUTS, G_SEM_WAITS, G_SEM_LOG_USED, G_JOIN_WAITS,
 # The serialised OS path (OSCALL): calls, and the calls made preemptively (a wait).
 G_OS_CALLS, G_OS_WAITS,
 # The semaphore's wait queues by cost (queue 0 is served first): GRANT_QUEUES heads from G_SEM_QUEUE_HEADS, then as
 # many tails from G_SEM_QUEUE_TAILS.
 G_SEM_QUEUE_HEADS) = range(65)
GRANT_QUEUES = 8  # wait queues a semaphore keeps: the engine's room, not SQL Server's count (the program picks one)
G_SEM_QUEUE_TAILS = G_SEM_QUEUE_HEADS + GRANT_QUEUES
G_NCOLS = G_SEM_QUEUE_TAILS + GRANT_QUEUES
# Run-wide float cells (the ``run_times`` table; microseconds).
(GF_NOW, GF_END, GF_YIELD_WAIT, GF_YIELD_MAX, GF_QUANTUM, GF_SWITCH, GF_WAKEUP,
 GF_MAX_TIME, GF_FRONT_TIME, GF_LOG_AHEAD,
 GF_SEM_WAIT, GF_SEM_MAXWAIT, GF_JOIN_WAIT, GF_JOIN_MAXWAIT,
 GF_OS_FREE, GF_OS_BUSY, GF_OS_QUEUE, GF_OS_KERNEL, GF_OS_WAIT, GF_OS_MAXWAIT, GF_NCOLS) = range(21)

# Kernel return codes.
STATUS_DONE, STATUS_CHUNK, STATUS_EVENT_BOUND, STATUS_TIME_BOUND, STATUS_STUCK = 0, 1, 2, 3, 4

# Event kinds on the heap.
EV_CPU_DONE, EV_DISPATCHED, EV_SPIN_DONE, EV_BACKOFF_DONE, EV_WAKE, EV_SLEEP_DONE = 0, 1, 2, 3, 4, 5
# Timers: a memory-grant time-out, and the start of a worker its query forked (models.engine.loop.on_timer).
EV_TIMEOUT, EV_START = 6, 7

# An event is one int64 key beside its time: sequence number, kind and worker packed so that
# comparing keys compares sequence numbers (ties in time run in the order they were scheduled).
EV_WORKER_BITS = 22                   # workers per run: fewer than 2**22 (4,194,304)
EV_KIND_BITS = 3
EV_SEQ_SHIFT = EV_WORKER_BITS + EV_KIND_BITS
MAX_WORKERS = 2**EV_WORKER_BITS - 1
MAX_HEAP_PUSHES = 2**(63 - EV_SEQ_SHIFT) - 1  # sequence numbers stay below this (2.7e11 > max_events)

# Boost a signalled worker to the head of the runnable queue at most this many times in a row.
MAX_BOOSTS_IN_A_ROW = 1000

# Acquire log columns (int and float).
AL_WORKER, AL_LATCH, AL_MODE, AL_SUSPENDED, AL_QUEUE_SEQ, AL_NCOLS = range(6)
ALF_REQUEST, ALF_GRANT, ALF_RUN, ALF_RELEASE, ALF_NCOLS = range(5)

# Trace columns (int: worker, scheduler, state; float: start, end).
TR_NCOLS, TRF_NCOLS = 3, 2
# Program columns (``prog_i``): the opcode and its operands a, b, c, whose meaning depends on the opcode (the
# table in models.engine.program); operand x is ``prog_x``.
P_OP, P_A, P_B, P_C, P_NCOLS = range(5)

# B-tree cells (models.engine.btree): the index's shape and counters, one row of int64.
(BT_STRATEGY, BT_CAPACITY, BT_FANOUT, BT_BUCKETS, BT_TREES, BT_COUNTER, BT_PAGES, BT_LEAVES,
 BT_PAGE_LATCH0, BT_ROOT_LATCH0, BT_GATE_LATCH0, BT_SCHEDULERS, BT_MID_SPLITS, BT_END_SPLITS,
 BT_NONLEAF_SPLITS, BT_HEAT_USED, BT_OVERFLOW, BT_NCOLS) = range(18)
# B-tree page columns: rows (children for a non-leaf page), parent page (-1: the root), tree,
# low key bound, level (0 leaf, 1 non-leaf).  A leaf's keys, in order, are its row of ``keys``; where
# each insert went is the insert log (``heat``).
PG_ROWS, PG_PARENT, PG_TREE, PG_LOW, PG_LEVEL, PG_NCOLS = range(6)
# The grant log: after each change of the semaphore, its time, KB granted and queries waiting.
GL_TIME, GL_GRANTED, GL_WAITERS, GL_NCOLS = range(4)


Tables = namedtuple("Tables", (
    "run_cells", "workers", "schedulers", "latches", "heap_k", "ring", "order", "prog_i", "trace_i", "log_i",
    "rng", "run_times", "worker_times", "scheduler_times", "latch_times", "latch_waits", "heap_t", "prog_x",
    "trace_f", "log_f", "samples",
    "bt", "pages", "leaves", "heat", "keys", "glog"))


def shapes(n_workers: int, n_schedulers: int, n_latches: int, program: int, trace_rows: int, log_rows: int,
           samples: int, pages: int = 0, heat_rows: int = 0, key_slots: int = 0, grant_log_rows: int = 0,
           ) -> dict[str, tuple[tuple[int, ...], type]]:
    """Every table's shape and dtype, in buffer order (the run-wide cells first)."""
    heap = 2 * n_workers + 8  # each worker has at most one pending event, and at most one timer
    i8, f8 = np.int64, np.float64
    return {
        "run_cells": ((G_NCOLS,), i8), "workers": ((n_workers, W_NCOLS), i8),
        "schedulers": ((n_schedulers, S_NCOLS), i8), "latches": ((n_latches, L_NCOLS), i8),
        "heap_k": ((heap,), i8), "ring": ((heap,), i8),
        "order": ((n_workers,), i8), "prog_i": ((program, P_NCOLS), i8),
        "trace_i": ((trace_rows, TR_NCOLS), i8), "log_i": ((log_rows, AL_NCOLS), i8),
        "rng": ((1,), np.uint64), "run_times": ((GF_NCOLS,), f8), "worker_times": ((n_workers, WF_NCOLS), f8),
        "scheduler_times": ((n_schedulers, SF_NCOLS), f8), "latch_times": ((n_latches, LF_NCOLS), f8),
        "latch_waits": ((n_latches, 5, LW_NCOLS), f8), "heap_t": ((heap,), f8), "prog_x": ((program,), f8),
        "trace_f": ((trace_rows, TRF_NCOLS), f8), "log_f": ((log_rows, ALF_NCOLS), f8),
        "samples": ((samples, 2), f8),  # (latency, latch index) per acquire
        "bt": ((BT_NCOLS,), i8), "pages": ((pages, PG_NCOLS), i8), "leaves": ((pages,), i8),
        "heat": ((heat_rows, 2), f8), "keys": ((pages, key_slots), i8),
        "glog": ((grant_log_rows, GL_NCOLS), f8),
    }


@njit(inline="always", error_model="numpy", **NO_RUNTIME)
def tables(mem):
    """Every table as a view into the buffer at address ``mem``, from the sizes and offsets in its first cells.

    Inlined into each kernel, so a kernel pays only for the views it uses: one
    load of the table's offset and, for row tables, of its row count.
    """
    i8, f8 = np.int64, np.float64
    nw, ns, nl = fixed(mem, G_WORKERS), fixed(mem, G_SCHEDULERS), fixed(mem, G_LATCHES)
    heap = 2 * nw + 8
    return Tables(
        view(mem, 0, (G_NCOLS,), i8), view(mem, fixed(mem, AT_WORKERS), (nw, W_NCOLS), i8),
        view(mem, fixed(mem, AT_SCHEDULERS), (ns, S_NCOLS), i8),
        view(mem, fixed(mem, AT_LATCHES), (nl, L_NCOLS), i8), view(mem, fixed(mem, AT_HEAP_K), (heap,), i8),
        view(mem, fixed(mem, AT_RING), (heap,), i8), view(mem, fixed(mem, AT_ORDER), (nw,), i8),
        view(mem, fixed(mem, AT_PROG_I), (fixed(mem, G_PROGRAM), P_NCOLS), i8),
        view(mem, fixed(mem, AT_TRACE_I), (fixed(mem, G_TRACE_ROWS), TR_NCOLS), i8),
        view(mem, fixed(mem, AT_LOG_I), (fixed(mem, G_LOG_ROWS), AL_NCOLS), i8), view(mem, fixed(mem, AT_RNG), (1,), np.uint64),
        view(mem, fixed(mem, AT_RUN_TIMES), (GF_NCOLS,), f8),
        view(mem, fixed(mem, AT_WORKER_TIMES), (nw, WF_NCOLS), f8),
        view(mem, fixed(mem, AT_SCHEDULER_TIMES), (ns, SF_NCOLS), f8),
        view(mem, fixed(mem, AT_LATCH_TIMES), (nl, LF_NCOLS), f8),
        view(mem, fixed(mem, AT_LATCH_WAITS), (nl, 5, LW_NCOLS), f8), view(mem, fixed(mem, AT_HEAP_T), (heap,), f8),
        view(mem, fixed(mem, AT_PROG_X), (fixed(mem, G_PROGRAM),), f8),
        view(mem, fixed(mem, AT_TRACE_F), (fixed(mem, G_TRACE_ROWS), TRF_NCOLS), f8),
        view(mem, fixed(mem, AT_LOG_F), (fixed(mem, G_LOG_ROWS), ALF_NCOLS), f8),
        view(mem, fixed(mem, AT_SAMPLES), (fixed(mem, G_SAMPLES), 2), f8),
        view(mem, fixed(mem, AT_BT), (BT_NCOLS,), i8),
        view(mem, fixed(mem, AT_PAGES), (fixed(mem, G_PAGES), PG_NCOLS), i8),
        view(mem, fixed(mem, AT_LEAVES), (fixed(mem, G_PAGES),), i8),
        view(mem, fixed(mem, AT_HEAT), (fixed(mem, G_HEAT_ROWS), 2), f8),
        view(mem, fixed(mem, AT_KEYS), (fixed(mem, G_PAGES), fixed(mem, G_KEY_SLOTS)), i8),
        view(mem, fixed(mem, AT_GLOG), (fixed(mem, G_GLOG_ROWS), GL_NCOLS), f8))


@dataclass
class State:
    """A run's buffer of 8-byte words and, for Python code reading the result, its tables as numpy views."""

    words: np.ndarray
    tables: Tables

    @property
    def address(self) -> int:
        """Where the buffer starts in memory: what the compiled kernels take."""
        return self.words.ctypes.data

    def __getattr__(self, name: str) -> np.ndarray:
        """``state.workers``, ``state.log_f``...: the table of that name."""
        if name in Tables._fields:
            return getattr(self.__dict__["tables"], name)
        raise AttributeError(name)


def allocate(n_workers: int, n_schedulers: int, n_latches: int, program: int, trace_events: int,
             logged_acquires: int, samples: int, pages: int = 0, heat_rows: int = 0, key_slots: int = 0,
             grant_log_rows: int = 0) -> State:
    """Allocate the buffer for a run of this size, write the sizes and offsets, and empty every table.

    ``pages``, ``heat_rows`` and ``key_slots`` (rows a page holds) size the B-tree
    tables (zero for a run without an index); ``grant_log_rows`` the memory-grant log.
    """
    layout = shapes(n_workers, n_schedulers, n_latches, program, trace_events, logged_acquires, samples,
                    pages, heat_rows, key_slots, grant_log_rows)
    assert tuple(layout) == Tables._fields
    lengths = [int(np.prod(shape)) for shape, _ in layout.values()]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    words = np.zeros(sum(lengths), np.int64)  # all-zero bits are 0.0 in the float tables too
    words[[G_WORKERS, G_SCHEDULERS, G_LATCHES, G_PROGRAM, G_TRACE_ROWS, G_LOG_ROWS, G_SAMPLES]] = (
        n_workers, n_schedulers, n_latches, program, trace_events, logged_acquires, samples)
    words[AT_WORKERS:AT_SAMPLES + 1] = starts[1:AT_SAMPLES - AT_WORKERS + 2]
    words[AT_BT:AT_KEYS + 1] = starts[AT_SAMPLES - AT_WORKERS + 2:-1]
    words[AT_GLOG] = starts[-1]
    words[[G_PAGES, G_HEAT_ROWS, G_KEY_SLOTS, G_GLOG_ROWS]] = (pages, heat_rows, key_slots, grant_log_rows)
    t = Tables(*(words[start:start + n].view(dtype).reshape(shape)
                 for start, n, (shape, dtype) in zip(starts, lengths, layout.values())))
    t.workers[:, [W_NEXT, W_PREV, W_LATCH_QUEUE_NEXT, W_LATCH, W_LOG_ROW, W_PAGE, W_REGISTER0, W_REGISTER1,
                  W_REGISTER2, W_REGISTER3, W_REGISTER4, W_PARENT, W_GRANT_QUEUE_NEXT]] = -1
    t.run_cells[G_SEM_QUEUE_HEADS:G_SEM_QUEUE_TAILS + GRANT_QUEUES] = -1  # every grant queue empty
    t.workers[:, W_STATE] = NEW
    t.schedulers[:, [S_RUNNING_WORKER, S_RUNNABLE_HEAD, S_RUNNABLE_TAIL]] = -1
    t.latches[:, [L_QUEUE_HEAD, L_QUEUE_TAIL]] = -1
    return State(words, t)
