"""The simulation state: plain numpy arrays, one row per worker, scheduler or latch.

numba compiles the event loop over these arrays (no jitclass, which cannot be
cached).  The column names below are the only place where the layout is
written down; every kernel indexes with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Worker states (also the trace states).
RUNNING, RUNNABLE, SPINNING, SUSPENDED, BACKOFF, NEW, DONE = 0, 1, 2, 3, 4, 5, 6
STATE_NAMES = ("running", "runnable", "spinning", "suspended", "backoff", "new", "done")

# Worker flags set when a worker is made runnable, read when it next runs.
FLAG_NONE, FLAG_GRANTED, FLAG_RETRY, FLAG_YIELDED = 0, 1, 2, 3

# Worker integer columns.
(W_STATE, W_SCHED, W_PC, W_LOOP0, W_LOOP1, W_NEXT, W_PREV, W_QNEXT, W_FLAG,
 W_BOOSTED, W_ACQ, W_LATCH, W_MODE, W_DAEMON, W_LOG, W_BACKOFFS, W_WAITED,
 W_QSEQ, W_NCOLS) = range(19)

# Worker float columns (times in microseconds).
(WF_ARRIVE, WF_TREQ, WF_TSUSP, WF_TSIG, WF_TSTATE, WF_QSTART, WF_CPU, WF_SPIN,
 WF_LATCHWAIT, WF_WAITACC, WF_SIGACC, WF_BURSTEND, WF_TENQ, WF_NCOLS) = range(14)

# Scheduler integer and float columns.
S_CUR, S_HEAD, S_TAIL, S_BOOSTRUN, S_SWITCHES, S_LOAD, S_QLEN, S_NCOLS = range(8)
SF_BUSY, SF_NCOLS = 0, 1

# Latch integer columns: held counts per mode come first (KP..DT = 0..4).
(L_QHEAD, L_QTAIL, L_QLEN, L_POLICY, L_SPINNERS, L_ACQ, L_COLL, L_SPINS,
 L_BACKOFFS, L_QSEQ, L_SPINS_PER_ROUND, L_MAX_BACKOFFS, L_NCOLS) = range(5, 18)
# Latch float columns.
(LF_LATSUM, LF_QAREA, LF_QLAST, LF_QRES, LF_CONTCOST, LF_SPIN_US, LF_BACKOFF_US,
 LF_NCOLS) = range(8)
# Per latch and mode wait statistics (float): count, time, max, signal time.
LW_COUNT, LW_TIME, LW_MAX, LW_SIG, LW_NCOLS = range(5)

FAIR, UNFAIR = 0, 1
POLICIES = {"fair": FAIR, "unfair": UNFAIR}

# Global integer cells.
(G_EVENTS, G_SEQ, G_HEAPN, G_NEXT_ARRIVAL, G_MAIN_LEFT, G_TRACEN, G_LOGN,
 G_SAMPLEN, G_YIELDS, G_STATUS, G_NOW_HEAD, G_NOW_LEN, G_NCOLS) = range(13)
# Global float cells.
(GF_NOW, GF_END, GF_YIELD_WAIT, GF_YIELD_MAX, GF_QUANTUM, GF_SWITCH, GF_WAKEUP,
 GF_MAX_TIME, GF_NCOLS) = range(9)

# Kernel return codes.
STATUS_DONE, STATUS_CHUNK, STATUS_EVENT_BOUND, STATUS_TIME_BOUND, STATUS_STUCK = 0, 1, 2, 3, 4

# Event kinds on the heap.
EV_CPU_DONE, EV_DISPATCHED, EV_SPIN_DONE, EV_BACKOFF_DONE, EV_WAKE = 0, 1, 2, 3, 4

# Boost a signalled worker to the head of the runnable queue at most this many times in a row.
MAX_BOOSTS_IN_A_ROW = 1000

# Acquire log columns (int and float).
AL_WORKER, AL_LATCH, AL_MODE, AL_SUSPENDED, AL_QSEQ, AL_NCOLS = range(6)
ALF_REQUEST, ALF_GRANT, ALF_RUN, ALF_RELEASE, ALF_NCOLS = range(5)


@dataclass
class State:
    """Every array the event loop reads or writes, allocated once per run."""

    wi: np.ndarray
    wf: np.ndarray
    si: np.ndarray
    sf: np.ndarray
    li: np.ndarray
    lf: np.ndarray
    lw: np.ndarray
    gi: np.ndarray
    gf: np.ndarray
    rng: np.ndarray
    heap_t: np.ndarray
    heap_i: np.ndarray
    trace_i: np.ndarray
    trace_f: np.ndarray
    log_i: np.ndarray
    log_f: np.ndarray
    samples: np.ndarray

    def arrays(self) -> tuple:
        """The arrays in the order the kernel takes them."""
        return (self.wi, self.wf, self.si, self.sf, self.li, self.lf, self.lw,
                self.gi, self.gf, self.rng, self.heap_t, self.heap_i,
                self.trace_i, self.trace_f, self.log_i, self.log_f, self.samples)


def allocate(workers: int, schedulers: int, latches: int, trace_events: int,
             logged_acquires: int, samples: int) -> State:
    """Allocate zeroed state for a run of this size."""
    wi = np.zeros((workers, W_NCOLS), np.int64)
    wi[:, W_NEXT] = -1
    wi[:, W_PREV] = -1
    wi[:, W_QNEXT] = -1
    wi[:, W_LATCH] = -1
    wi[:, W_LOG] = -1
    wi[:, W_STATE] = NEW
    si = np.zeros((schedulers, S_NCOLS), np.int64)
    si[:, S_CUR] = -1
    si[:, S_HEAD] = -1
    si[:, S_TAIL] = -1
    li = np.zeros((latches, L_NCOLS), np.int64)
    li[:, L_QHEAD] = -1
    li[:, L_QTAIL] = -1
    heap_cap = 2 * (workers + 8)  # the heap, then a ring of the same size for immediate events
    return State(
        wi=wi, wf=np.zeros((workers, WF_NCOLS)), si=si, sf=np.zeros((schedulers, SF_NCOLS)),
        li=li, lf=np.zeros((latches, LF_NCOLS)), lw=np.zeros((latches, 5, LW_NCOLS)),
        gi=np.zeros(G_NCOLS, np.int64), gf=np.zeros(GF_NCOLS), rng=np.zeros(1, np.uint64),
        heap_t=np.zeros(heap_cap), heap_i=np.zeros((heap_cap, 3), np.int64),
        trace_i=np.zeros((trace_events, 3), np.int64), trace_f=np.zeros((trace_events, 2)),
        log_i=np.zeros((logged_acquires, AL_NCOLS), np.int64),
        log_f=np.zeros((logged_acquires, ALF_NCOLS)), samples=np.zeros(samples),
    )
