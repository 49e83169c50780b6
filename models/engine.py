"""The event loop: SQLOS schedulers running worker programs against latches.

One compiled loop serves every scenario.  Events sit in a binary heap keyed
by (time, sequence number), so simultaneous events run in the order they were
scheduled; task arrivals come from a sorted list and run before heap events
at the same instant.  Each worker has at most one pending event, so the heap
never holds more than one entry per worker.

Scheduling follows SQLOS: a scheduler runs one worker at a time and never
pre-empts it.  The worker gives the scheduler up when it suspends on a latch,
ends, or reaches a yield point with its quantum used up while another worker
is runnable (SOS_SCHEDULER_YIELD).  Every RUNNABLE -> RUNNING switch costs
``context_switch_us`` of scheduler time.  A signalled worker becomes runnable
``wakeup_us`` after the signal and is boosted to the head of its runnable
queue, at most 1000 times in a row.

Latch policies (per latch):

* fair: a release hands ownership to the head waiter (and to compatible
  waiters right behind it) and signals it; the latch is owned but idle until
  the new owner runs, so each contended hand-off costs wake-up, runnable
  delay and a context switch.  Newcomers queue behind waiters.
* unfair: a release frees the latch and signals the head waiter, which must
  try again when it runs; any running requester may take the latch first
  (barging).  A requester that finds the latch held spins ``spin_us`` per
  round, backs off ``backoff_us * 2**k`` keeping its scheduler, and after
  ``max_backoffs`` back-offs suspends in the FIFO queue.

A run that stops before every worker is done (at ``max_sim_ms``, after
``max_events``, when its measurement window closes, or with daemons still
running as the last main worker ends) keeps only the elapsed part of what
was under way, though a context switch, a CPU burst, a spin, a sleep or an
OS call is charged in full when it starts (:func:`finish`).

Queries (the memory chapter): a coordinator asks the memory-grant semaphore
for its query's grant (:mod:`models.grants`), waiting in its FIFO queue with
a time-out timer; once granted or forced it starts its parallel workers
(FORK), waits for them (JOIN) and frees the grant.  An OS call waits its
turn in one serialised path, spinning (CPU) or preemptively (a wait).  These
instructions run in :func:`query_step`, off the latch path, and add two
timer events (:func:`on_timer`); a run that uses none of them does exactly
what it did before they existed.

How the loop is laid out, and why (``benchmarks/engine.py`` times it against
a bare heap simulation of the same model):

* State is one buffer (:mod:`models.state`); every kernel takes its address
  ``mem`` plus a few scalars, all passed in registers, and cuts the tables it
  needs with the inlined :func:`models.state.tables`.  The tables index
  without numba's wraparound of negative indices (about 9% of the loop).
* An event is a time and one int64 key (sequence, kind, worker packed so a
  key compare is a sequence compare) in a binary heap sifted by moving a
  hole, not by swaps.  Events due now go to a ring and skip the heap; an
  event earlier than all pending ones waits in a front slot, where it would
  otherwise have climbed to the root and been popped straight back out.
  Any exact priority queue pops the same sequence, so none of this changes
  a result.
* The whole hot chain is inlined into :func:`run_events`, so an event costs
  no call.  The kernels with a single call site (:func:`execute`,
  :func:`pop_event`, :func:`on_dispatched`, :func:`on_spin_done`) are inlined
  by numba (``inline="always"``); the ones called from several places
  (``_HOT``: pushing an event, a hand-off, a dispatch, the statistics of an
  acquire) carry LLVM's ``alwaysinline`` (numba's ``forceinline``): the cold
  compile stayed within its 13-17 s noise, where numba's own inlining of the
  same kernels made it 78 s.  Inlining the hand-off chain (``signal`` ->
  ``wake`` -> ``try_dispatch``) matters most: with ``signal`` left a call, 64
  contending workers ran 20% slower.  Yielding, ending and arrivals stay calls.
* :func:`run_events` keeps the event count, the clock and the next arrival
  in locals, and :func:`execute` the program counter, so the hot loop does
  not reload them from the buffer after every store.  Its five-way branches
  (event kind, opcode) are compare chains, not jump tables.
* An exponential draw's logarithm (``log1p``, a call into the C library and
  the slowest step of an acquire) is computed one draw ahead
  (:func:`models.rng.draw`): the loop never waits for it, and the processor
  overlaps it with the next events' work.  Same values, same order.
* Cheap checks first: a latch keeps a mask of the modes held, so a grant is
  one mask test; a run without a trace or an acquire log tests one fixed size
  and skips the rest; a woken worker whose scheduler is idle with nobody
  runnable is switched to without passing through the runnable queue.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from models import btree as bx
from models import grants as gr
from models import latch as lt
from models import scheduler as sch
from models.program import (
    ACQUIRE, BR_ALWAYS, BR_FAILED, BR_FORCED, BR_FULL, BR_MORE_ROWS, BR_NOT_FULL, BR_OUTSIDE,
    BR_PARENT_FULL, BRANCH, CPU, END, FIND, FIND_LEAF, FIND_ROOT, FORK, FREE, GRANT, INSERT, JOIN, LOOP,
    OS_SPIN, OSCALL, R_GATE, R_LEAF, R_NEW, R_PARENT, R_ROOT, RELEASE, ROW, SCALED, SLEEP, UNIT, YIELD,
)
from models.rng import draw
from models.state import (
    ALF_GRANT, ALF_RELEASE, ALF_REQUEST, ALF_RUN, AL_LATCH, AL_MODE, AL_QSEQ,
    AL_SUSPENDED, AL_WORKER, BACKOFF, BT_OVERFLOW, BT_PAGE_LATCH0, DONE, EV_BACKOFF_DONE, EV_CPU_DONE,
    EV_DISPATCHED, EV_SEQ_SHIFT, EV_SLEEP_DONE, EV_SPIN_DONE, EV_START, EV_TIMEOUT, EV_WAKE, EV_WORKER_BITS, FAIR,
    G_JOIN_WAITS, G_OS_CALLS, G_OS_WAITS, G_SEM_FORCED, G_SEM_GRANTED, G_SEM_LIMIT, G_SEM_TIMEOUTS, G_SEM_WAITS,
    GF_JOIN_MAXWAIT, GF_JOIN_WAIT, GF_OS_BUSY, GF_OS_FREE, GF_OS_KERNEL, GF_OS_MAXWAIT, GF_OS_QUEUE, GF_OS_WAIT,
    GF_SEM_MAXWAIT, GF_SEM_WAIT, GRANT_FAILED, GRANT_FORCED, GRANT_GRANTED, GRANT_WAITING,
    W_CHILDREN, W_GNEED, W_GWANT, W_OUTCOME, W_PARENT, WF_GDEADLINE, WF_GREQ, WF_GTIMER, WF_GWAIT, WF_JOINT,
    WF_KERNEL, WF_OSSTART, WF_OSWAIT,
    FLAG_GRANTED, FLAG_NONE, FLAG_RETRY, FLAG_YIELDED, G_EVENTS, G_FRONT, G_FRONT_K, G_HEAPN, G_LOGN,
    G_MAIN_LEFT, G_NEXT_ARRIVAL, G_NOW_HEAD, G_NOW_LEN, G_SAMPLEN, G_SEQ, G_STATUS,
    G_TRACEN, G_UNITS, G_YIELDS, GF_END, GF_MAX_TIME, GF_NOW, GF_QUANTUM, GF_SWITCH,
    GF_FRONT_T, GF_LOG_AHEAD, GF_WAKEUP, GF_YIELD_MAX, GF_YIELD_WAIT, L_ACQ, L_BACKOFFS, L_COLL,
    L_MAX_BACKOFFS, L_POLICY, L_QHEAD, L_QLEN, L_SPINNERS, L_SPINS,
    L_SPINS_PER_ROUND, LF_BACKOFF_US, LF_CONTCOST, LF_LATSUM, LF_SPIN_US,
    LW_COUNT, LW_MAX, LW_SIG, LW_TIME, MAX_BOOSTS_IN_A_ROW, NEW, PG_PARENT, RUNNABLE,
    RUNNING, S_BOOSTRUN, S_CUR, S_HEAD, S_LOAD, S_QLEN, S_SWITCHES, SF_BUSY,
    SLEEPING, SPINNING, STATUS_CHUNK, STATUS_DONE, STATUS_EVENT_BOUND, STATUS_STUCK,
    STATUS_TIME_BOUND, SUSPENDED, W_ACQ, W_BACKOFFS, W_BATCH, W_BOOSTED, W_DAEMON, W_FLAG,
    W_KEY, W_LATCH, W_LOG, W_LOOP0, W_MODE, W_PAGE, W_PC, W_QSEQ, W_REG0, W_SCALE, W_SCHED, W_STATE,
    W_WAITED, WF_ARRIVE, WF_CPU, WF_LATCHWAIT, WF_QSTART, WF_SIGACC, WF_SLEPT, WF_SPIN,
    WF_TREQ, WF_TSIG, WF_TSTATE, WF_TSUSP, WF_WAITACC, tables,
)

_WORKER_MASK = (1 << EV_WORKER_BITS) - 1
_BASE = dict(cache=True, _nrt=False, error_model="numpy")
_JIT = dict(_BASE, forceinline=False)  # a call of its own: rare paths and the loop itself
_HOT = dict(_BASE, forceinline=True)  # inlined by LLVM wherever it is called
_INLINE = dict(_BASE, inline="always")  # inlined by numba: kernels with one call site


@intrinsic
def branch_without_jump_tables(typingctx):
    """Compile the calling kernel's multi-way branches as compare chains, not jump tables.

    The event kind and the opcode each pick one of five or six paths; LLVM
    makes such a branch an indirect jump through a table, which the processor
    predicts worse than a short chain of compares (measured: about 2% of the loop's time).
    """
    def codegen(context, builder, sig, args):
        set.add(builder.function.attributes, '"no-jump-tables"="true"')  # a string attribute llvmlite has no name for
        return context.get_dummy_value()
    return types.none(), codegen


# ---------------------------------------------------------------- events


@njit(**_HOT)
def push_event(mem, when, kind, w, now):
    """Schedule event ``kind`` for worker ``w`` at time ``when``.

    An event due at the current instant skips the heap: it goes to a FIFO ring
    of immediate events that the loop drains before it takes anything later,
    which saves the heap traffic of zero-cost wake-ups and context switches.
    An event earlier than every pending one (a short burst, often) goes to the
    front slot, which holds the earliest event when it is full: it would have
    climbed to the heap's root and been taken from there next.
    """
    t = tables(mem)
    gi = t.gi
    if when <= now:
        ring = t.ring
        slot = gi[G_NOW_HEAD] + gi[G_NOW_LEN]
        if slot >= ring.shape[0]:
            slot -= ring.shape[0]
        ring[slot] = (kind << EV_WORKER_BITS) | w
        gi[G_NOW_LEN] += 1
        return
    gf, heap_t, heap_k = t.gf, t.heap_t, t.heap_k
    key = (gi[G_SEQ] << EV_SEQ_SHIFT) | (kind << EV_WORKER_BITS) | w
    gi[G_SEQ] += 1  # a later sequence number than any pending event's: ties go to the others
    if gi[G_FRONT] == 1:
        front_t = gf[GF_FRONT_T]
        if when < front_t:  # the new event takes the front; the old front goes to the heap
            front_k = gi[G_FRONT_K]
            gf[GF_FRONT_T] = when
            gi[G_FRONT_K] = key
            when, key = front_t, front_k
    elif gi[G_HEAPN] == 0 or when < heap_t[0]:
        gi[G_FRONT] = 1
        gf[GF_FRONT_T] = when
        gi[G_FRONT_K] = key
        return
    i = gi[G_HEAPN]
    gi[G_HEAPN] = i + 1
    while i > 0:  # move the hole up past every later parent
        parent = (i - 1) >> 1
        tp = heap_t[parent]
        if tp < when or (tp == when and heap_k[parent] < key):
            break
        heap_t[i] = tp
        heap_k[i] = heap_k[parent]
        i = parent
    heap_t[i] = when
    heap_k[i] = key


@njit(**_INLINE)
def next_event_time(mem):
    """When the earliest pending event is due (the front slot's, else the heap root's); inf if none is."""
    t = tables(mem)
    if t.gi[G_FRONT] == 1:
        return t.gf[GF_FRONT_T]
    if t.gi[G_HEAPN] > 0:
        return t.heap_t[0]
    return np.inf


@njit(**_INLINE)
def pop_event(mem):
    """Remove the earliest pending event and return its key (its time is :func:`next_event_time`'s)."""
    t = tables(mem)
    gi, heap_t, heap_k = t.gi, t.heap_t, t.heap_k
    if gi[G_FRONT] == 1:
        gi[G_FRONT] = 0
        return gi[G_FRONT_K]
    first = heap_k[0]
    n = gi[G_HEAPN] - 1
    gi[G_HEAPN] = n
    last_t, last_k = heap_t[n], heap_k[n]
    i = 0
    while True:  # move the hole at the root down until the last entry fits there
        child = 2 * i + 1
        if child >= n:
            break
        right = child + 1
        if right < n and (heap_t[right] < heap_t[child]
                          or (heap_t[right] == heap_t[child] and heap_k[right] < heap_k[child])):
            child = right
        if last_t < heap_t[child] or (last_t == heap_t[child] and last_k < heap_k[child]):
            break
        heap_t[i] = heap_t[child]
        heap_k[i] = heap_k[child]
        i = child
    heap_t[i] = last_t
    heap_k[i] = last_k
    return first


# ---------------------------------------------------------------- bookkeeping


@njit(**_HOT)
def set_state(mem, w, state, now):
    """Move worker ``w`` to ``state``, closing its previous interval in the trace."""
    t = tables(mem)
    wi, wf = t.wi, t.wf
    old = wi[w, W_STATE]
    if old == state:
        return
    trace_i = t.trace_i
    if trace_i.shape[0] > 0 and old < NEW and now > wf[w, WF_TSTATE]:  # a run without a trace skips it all
        gi, trace_f = t.gi, t.trace_f
        n = gi[G_TRACEN]
        if n < trace_i.shape[0]:
            trace_i[n, 0] = w
            trace_i[n, 1] = wi[w, W_SCHED]
            trace_i[n, 2] = old
            trace_f[n, 0] = wf[w, WF_TSTATE]
            trace_f[n, 1] = now
            gi[G_TRACEN] = n + 1
    wi[w, W_STATE] = state
    wf[w, WF_TSTATE] = now


@njit(**_HOT)
def complete_acquire(mem, w, now):
    """Record a finished acquire: the worker now runs holding the latch."""
    t = tables(mem)
    wi, wf, li, lf, lw, gi = t.wi, t.wf, t.li, t.lf, t.lw, t.gi
    latch = wi[w, W_LATCH]
    mode = wi[w, W_MODE]
    latency = now - wf[w, WF_TREQ]
    li[latch, L_ACQ] += 1
    wi[w, W_ACQ] += 1
    lf[latch, LF_LATSUM] += latency
    samples = t.samples
    n = gi[G_SAMPLEN]
    if n < samples.shape[0]:
        samples[n, 0] = latency
        samples[n, 1] = latch
        gi[G_SAMPLEN] = n + 1
    if wi[w, W_WAITED] == 1:
        wait = wf[w, WF_WAITACC]
        lw[latch, mode, LW_COUNT] += 1
        lw[latch, mode, LW_TIME] += wait
        lw[latch, mode, LW_SIG] += wf[w, WF_SIGACC]
        if wait > lw[latch, mode, LW_MAX]:
            lw[latch, mode, LW_MAX] = wait
        wf[w, WF_LATCHWAIT] += wait
    log_i, log_f = t.log_i, t.log_f
    if log_i.shape[0] > 0:  # without an acquire log, W_LOG is never set and stays -1
        k = gi[G_LOGN]
        if k < log_i.shape[0]:
            log_i[k, AL_WORKER] = w
            log_i[k, AL_LATCH] = latch
            log_i[k, AL_MODE] = mode
            log_i[k, AL_SUSPENDED] = wi[w, W_WAITED]
            log_i[k, AL_QSEQ] = wi[w, W_QSEQ] if wi[w, W_WAITED] == 1 else -1
            log_f[k, ALF_REQUEST] = wf[w, WF_TREQ]
            log_f[k, ALF_GRANT] = wf[w, WF_TSIG] if wi[w, W_FLAG] == FLAG_GRANTED else now
            log_f[k, ALF_RUN] = now
            log_f[k, ALF_RELEASE] = -1.0
            gi[G_LOGN] = k + 1
            wi[w, W_LOG] = k
        else:
            wi[w, W_LOG] = -1
    wi[w, W_LATCH] = -1


# ---------------------------------------------------------------- scheduling


@njit(**_HOT)
def switch_to(mem, s, w, boosted, now):
    """Scheduler ``s`` switches to worker ``w``, which runs once the context switch is over.

    A run of boosted workers is counted so that boosting stops after
    ``MAX_BOOSTS_IN_A_ROW``; a worker that was not boosted ends the run.
    """
    t = tables(mem)
    si, sf, gf = t.si, t.sf, t.gf
    si[s, S_CUR] = w
    if not boosted:
        si[s, S_BOOSTRUN] = 0
    si[s, S_SWITCHES] += 1
    sf[s, SF_BUSY] += gf[GF_SWITCH]
    set_state(mem, w, RUNNING, now)
    push_event(mem, now + gf[GF_SWITCH], EV_DISPATCHED, w, now)


@njit(**_HOT)
def try_dispatch(mem, s, now):
    """If scheduler ``s`` is free, switch to the head of its runnable queue."""
    t = tables(mem)
    wi, si = t.wi, t.si
    if si[s, S_CUR] >= 0 or si[s, S_HEAD] < 0:
        return
    w = sch.pop_front(si, wi, s)
    boosted = wi[w, W_BOOSTED] == 1
    wi[w, W_BOOSTED] = 0
    switch_to(mem, s, w, boosted, now)


@njit(**_HOT)
def make_runnable(mem, w, boost, now):
    """Put ``w`` in its scheduler's runnable queue, at the head if boosted."""
    t = tables(mem)
    wi, si = t.wi, t.si
    s = wi[w, W_SCHED]
    set_state(mem, w, RUNNABLE, now)
    if boost and si[s, S_BOOSTRUN] < MAX_BOOSTS_IN_A_ROW:
        si[s, S_BOOSTRUN] += 1
        wi[w, W_BOOSTED] = 1
        sch.push_front(si, wi, s, w)
    else:
        if boost:
            si[s, S_BOOSTRUN] = 0
        wi[w, W_BOOSTED] = 0
        sch.push_back(si, wi, s, w)


@njit(**_HOT)
def wake(mem, w, now):
    """A signalled worker's wake-up is over: it is runnable, boosted, and may get its scheduler.

    On a free scheduler with nobody runnable (the common case when each
    worker has a scheduler of its own), the worker is switched to at once:
    queueing it and taking it straight back out changes nothing but time.
    """
    t = tables(mem)
    si = t.si
    s = t.wi[w, W_SCHED]
    if si[s, S_CUR] < 0 and si[s, S_HEAD] < 0 and si[s, S_BOOSTRUN] < MAX_BOOSTS_IN_A_ROW:
        si[s, S_BOOSTRUN] += 1
        switch_to(mem, s, w, True, now)
    else:
        make_runnable(mem, w, True, now)
        try_dispatch(mem, s, now)


@njit(**_HOT)
def signal(mem, w, flag, now):
    """Signal suspended worker ``w``; it becomes runnable after the wake-up cost."""
    t = tables(mem)
    t.wi[w, W_FLAG] = flag
    t.wf[w, WF_TSIG] = now
    if t.gf[GF_WAKEUP] > 0.0:
        push_event(mem, now + t.gf[GF_WAKEUP], EV_WAKE, w, now)
    else:
        wake(mem, w, now)


@njit(**_HOT)
def release(mem, w, latch, mode, now):
    """Release ``latch`` held by ``w`` and hand it on (fair) or signal a waiter (unfair)."""
    t = tables(mem)
    wi, wf, li, lf = t.wi, t.wf, t.li, t.lf
    lt.unhold(li, latch, mode)
    k = wi[w, W_LOG]
    if k >= 0:
        t.log_f[k, ALF_RELEASE] = now
        wi[w, W_LOG] = -1
    if li[latch, L_POLICY] == FAIR:
        while li[latch, L_QLEN] > 0:
            head = li[latch, L_QHEAD]
            want = wi[head, W_MODE]
            if not lt.grantable(li, latch, want):
                break
            lt.dequeue(li, lf, wi, wf, latch, now)
            lt.hold(li, latch, want)
            signal(mem, head, FLAG_GRANTED, now)
    elif li[latch, L_QLEN] > 0:
        head = li[latch, L_QHEAD]
        if lt.grantable(li, latch, wi[head, W_MODE]):
            lt.dequeue(li, lf, wi, wf, latch, now)
            signal(mem, head, FLAG_RETRY, now)


@njit(**_HOT)
def give_up_scheduler(mem, w, now):
    """Worker ``w`` leaves its scheduler; the next runnable worker gets it."""
    t = tables(mem)
    s = t.wi[w, W_SCHED]
    t.si[s, S_CUR] = -1
    try_dispatch(mem, s, now)


@njit(**_HOT)
def spin_round(mem, w, now):
    """Start one spin round on the latch ``w`` is acquiring (CPU time on its scheduler)."""
    t = tables(mem)
    wi, wf, li, lf = t.wi, t.wf, t.li, t.lf
    latch = wi[w, W_LATCH]
    set_state(mem, w, SPINNING, now)
    li[latch, L_SPINNERS] += 1
    li[latch, L_SPINS] += li[latch, L_SPINS_PER_ROUND]
    dur = lf[latch, LF_SPIN_US]
    wf[w, WF_CPU] += dur
    wf[w, WF_SPIN] += dur
    t.sf[wi[w, W_SCHED], SF_BUSY] += dur
    push_event(mem, now + dur, EV_SPIN_DONE, w, now)


@njit(**_HOT)
def suspend(mem, w, now):
    """Suspend ``w`` in the FIFO queue of the latch it is acquiring."""
    t = tables(mem)
    wi, wf = t.wi, t.wf
    set_state(mem, w, SUSPENDED, now)
    wi[w, W_WAITED] = 1
    wf[w, WF_TSUSP] = now
    lt.enqueue(t.li, t.lf, wi, wf, wi[w, W_LATCH], w, now)
    give_up_scheduler(mem, w, now)


# ---------------------------------------------------------------- a worker's program


@njit(**_HOT)
def wait_for_latch(mem, w, latch, fair, now):
    """The latch ``w`` asks for is not grantable now: suspend (fair) or start spinning (unfair)."""
    if fair:
        suspend(mem, w, now)
    else:
        t = tables(mem)
        t.li[latch, L_COLL] += 1
        t.wi[w, W_BACKOFFS] = 0
        spin_round(mem, w, now)


@njit(**_JIT)
def yield_scheduler(mem, w, now):
    """``w`` used up its quantum and another worker is runnable: go to the tail of the queue."""
    t = tables(mem)
    wi, wf = t.wi, t.wf
    s = wi[w, W_SCHED]
    t.gi[G_YIELDS] += 1
    wi[w, W_FLAG] = FLAG_YIELDED
    wf[w, WF_TSIG] = now
    t.si[s, S_CUR] = -1
    make_runnable(mem, w, False, now)
    try_dispatch(mem, s, now)


@njit(**_JIT)
def end_worker(mem, w, now):
    """``w`` reached END: it is done and leaves its scheduler; the run ends with the last main worker."""
    t = tables(mem)
    gi = t.gi
    set_state(mem, w, DONE, now)
    t.si[t.wi[w, W_SCHED], S_LOAD] -= 1
    if t.wi[w, W_DAEMON] == 0:
        gi[G_MAIN_LEFT] -= 1
        if gi[G_MAIN_LEFT] == 0:
            t.gf[GF_END] = now
    parent = t.wi[w, W_PARENT]
    if parent >= 0:
        end_child(mem, parent, now)
    give_up_scheduler(mem, w, now)


@njit(**_JIT)
def sleep_worker(mem, w, dur, now):
    """``w`` leaves its scheduler for ``dur`` us (outside SQL Server: no wait type counts it)."""
    t = tables(mem)
    t.wf[w, WF_SLEPT] += dur
    set_state(mem, w, SLEEPING, now)
    give_up_scheduler(mem, w, now)
    push_event(mem, now + dur, EV_SLEEP_DONE, w, now)


@njit(**_JIT)
def on_sleep_done(mem, w, now):
    """A sleep or a preemptive OS call is over: ``w`` joins the tail of its scheduler's runnable queue.

    It goes there as a new request would.  A worker in an OS call has been
    SUSPENDED since the call (a sleeper is SLEEPING): its wait began at its
    last change of state.
    """
    t = tables(mem)
    if t.wi[w, W_STATE] == SUSPENDED:  # the longest OS wait is taken as waits end (and at a cut: finish)
        t.gf[GF_OS_MAXWAIT] = max(t.gf[GF_OS_MAXWAIT], now - t.wf[w, WF_TSTATE])
    make_runnable(mem, w, False, now)
    try_dispatch(mem, t.wi[w, W_SCHED], now)


@njit(**_JIT)
def index_step(mem, w, pc, now):
    """Run one index instruction (ROW, FIND, BRANCH, INSERT, SPLIT) for ``w``; return the next address.

    These only read and change the index (:mod:`models.btree`) and the
    worker's registers; the latches they name are taken by ACQUIREs.
    """
    t = tables(mem)
    wi, bt, pages, leaves = t.wi, t.bt, t.pages, t.leaves
    op, a, b = t.prog_i[pc, 0], t.prog_i[pc, 1], t.prog_i[pc, 2]
    key = wi[w, W_KEY]
    if op == ROW:
        wi[w, W_KEY] = bx.next_key(bt, t.rng)
        if b == 1:
            wi[w, W_BATCH] = t.prog_i[pc, 3]
    elif op == FIND:
        if b == FIND_ROOT:
            tree = bx.tree_of(key)
            wi[w, W_REG0 + R_ROOT] = bx.root_latch(bt, tree)
            wi[w, W_REG0 + R_GATE] = bx.gate_latch(bt, tree, wi[w, W_SCHED])
        else:
            leaf = bx.leaf_of(bt, pages, leaves, key)
            if b == FIND_LEAF:
                wi[w, W_PAGE] = leaf
                wi[w, W_REG0 + R_LEAF] = bx.page_latch(bt, leaf)
            else:
                wi[w, W_REG0 + R_PARENT] = bx.page_latch(bt, pages[leaf, PG_PARENT])
    elif op == BRANCH:
        page = wi[w, W_PAGE]
        if b == BR_ALWAYS:
            jump = True
        elif b == BR_FULL:
            jump = bx.full(bt, pages, page)
        elif b == BR_NOT_FULL:
            jump = not bx.full(bt, pages, page)
        elif b == BR_PARENT_FULL:
            jump = bx.full(bt, pages, wi[w, W_REG0 + R_PARENT] - bt[BT_PAGE_LATCH0])
        elif b == BR_OUTSIDE:
            jump = bx.outside(bt, pages, leaves, page, key)
        elif b == BR_MORE_ROWS:
            jump = wi[w, W_BATCH] > 0
        elif b == BR_FORCED:
            jump = wi[w, W_OUTCOME] == GRANT_FORCED
        else:  # BR_FAILED
            jump = wi[w, W_OUTCOME] == GRANT_FAILED
        if jump:
            return a
    elif op == INSERT:
        bx.insert(bt, pages, t.keys, t.heat, wi[w, W_PAGE], key, now)
        wi[w, W_BATCH] -= 1
    else:  # SPLIT
        target, fresh, moved = bx.split(bt, pages, leaves, t.keys, wi[w, W_PAGE], key)
        if bt[BT_OVERFLOW] == 1:  # the page table is full: end the run (simulate() reports it)
            t.gi[G_MAIN_LEFT] = 0
            t.gf[GF_END] = now
        wi[w, W_PAGE] = target
        wi[w, W_REG0 + R_NEW] = bx.page_latch(bt, fresh)
        wi[w, W_SCALE] = moved
    return pc + 1


# ---------------------------------------------------------------- queries: memory grants, parallel workers, OS calls


@njit(**_JIT)
def end_wait_for_grant(mem, w, now):
    """``w``'s RESOURCE_SEMAPHORE wait is over (granted, forced or failed): count it and signal ``w``."""
    t = tables(mem)
    gi, gf, wf = t.gi, t.gf, t.wf
    wait = now - wf[w, WF_GREQ]
    wf[w, WF_GWAIT] = wait
    gi[G_SEM_WAITS] += 1
    gf[GF_SEM_WAIT] += wait
    if wait > gf[GF_SEM_MAXWAIT]:
        gf[GF_SEM_MAXWAIT] = wait
    signal(mem, w, FLAG_NONE, now)


@njit(**_JIT)
def serve_grants(mem, now):
    """Grant the queue's requests in order while the head fits under the target (FIFO: no skipping)."""
    t = tables(mem)
    gi, wi = t.gi, t.wi
    while True:
        head = gr.head_fits(gi, wi)
        if head < 0:
            break
        gr.remove(gi, wi, head)
        gr.give(gi, wi, head, wi[head, W_GWANT], GRANT_GRANTED)
        end_wait_for_grant(mem, head, now)
    gr.log(gi, t.glog, now)


@njit(**_JIT)
def on_timer(mem, w, kind, now):
    """A forked worker starts, or a grant request's time-out fires.

    At the time-out a request still queued leaves the queue and is forced its
    required minimum if that fits under the limit, else it fails (error
    8645).  A worker keeps one timer at a time: a timer left from a request
    that was granted in time finds no request at its deadline and re-arms for
    the worker's next request, if it has one.
    """
    if kind == EV_START:
        on_arrival(mem, w, now)
        return
    t = tables(mem)
    gi, wi, wf = t.gi, t.wi, t.wf
    wf[w, WF_GTIMER] = -1.0
    if wi[w, W_OUTCOME] != GRANT_WAITING:
        return
    if wf[w, WF_GDEADLINE] > now:
        wf[w, WF_GTIMER] = wf[w, WF_GDEADLINE]
        push_event(mem, wf[w, WF_GDEADLINE], EV_TIMEOUT, w, now)
        return
    gr.remove(gi, wi, w)
    if gi[G_SEM_GRANTED] + wi[w, W_GNEED] <= gi[G_SEM_LIMIT]:
        gr.give(gi, wi, w, wi[w, W_GNEED], GRANT_FORCED)
        gi[G_SEM_FORCED] += 1
    else:
        wi[w, W_OUTCOME] = GRANT_FAILED
        gi[G_SEM_TIMEOUTS] += 1
    end_wait_for_grant(mem, w, now)
    serve_grants(mem, now)


@njit(**_JIT)
def end_child(mem, parent, now):
    """A forked worker ended: the last one wakes its parent if the parent waits at its JOIN."""
    t = tables(mem)
    wi, wf, gf = t.wi, t.wf, t.gf
    wi[parent, W_CHILDREN] -= 1
    if wi[parent, W_CHILDREN] > 0 or wi[parent, W_STATE] != SUSPENDED:
        return
    if t.prog_i[wi[parent, W_PC] - 1, 0] != JOIN:
        return
    wait = now - wf[parent, WF_JOINT]
    t.gi[G_JOIN_WAITS] += 1
    gf[GF_JOIN_WAIT] += wait
    if wait > gf[GF_JOIN_MAXWAIT]:
        gf[GF_JOIN_MAXWAIT] = wait
    signal(mem, parent, FLAG_NONE, now)


@njit(**_JIT)
def leave_scheduler_waiting(mem, w, pc, now):
    """``w`` suspends (its program goes on at ``pc`` when it runs again) and gives its scheduler up."""
    tables(mem).wi[w, W_PC] = pc
    set_state(mem, w, SUSPENDED, now)
    give_up_scheduler(mem, w, now)


@njit(**_JIT)
def query_step(mem, w, pc, now):
    """Run one query instruction (GRANT, FREE, FORK, JOIN, OSCALL); the next address, or -1 if ``w`` stopped."""
    t = tables(mem)
    gi, gf, wi, wf = t.gi, t.gf, t.wi, t.wf
    op, a, b, c = t.prog_i[pc, 0], t.prog_i[pc, 1], t.prog_i[pc, 2], t.prog_i[pc, 3]
    if op == GRANT:
        wi[w, W_GWANT] = a
        wi[w, W_GNEED] = b
        wf[w, WF_GREQ] = now
        wf[w, WF_GWAIT] = 0.0
        if gr.fits_now(gi, a):
            gr.give(gi, wi, w, a, GRANT_GRANTED)
            gr.log(gi, t.glog, now)
            return pc + 1
        gr.enqueue(gi, wi, w)
        gr.log(gi, t.glog, now)
        deadline = now + t.prog_x[pc]
        wf[w, WF_GDEADLINE] = deadline
        if wf[w, WF_GTIMER] <= now:  # no timer pending (one left from an earlier request re-arms itself)
            wf[w, WF_GTIMER] = deadline
            push_event(mem, deadline, EV_TIMEOUT, w, now)
        leave_scheduler_waiting(mem, w, pc + 1, now)
        return -1
    if op == FREE:
        gr.take_back(gi, wi, w)
        serve_grants(mem, now)
        return pc + 1
    if op == FORK:
        for k in range(1, c + 1):
            child = w + k
            wi[child, W_PARENT] = w
            wi[child, W_PC] = a  # (its arrival time stays infinite: the arrival list never takes it)
            push_event(mem, now, EV_START, child, now)
        wi[w, W_CHILDREN] += c
        gi[G_MAIN_LEFT] += c
        return pc + 1
    if op == JOIN:
        if wi[w, W_CHILDREN] == 0:
            return pc + 1
        wf[w, WF_JOINT] = now
        leave_scheduler_waiting(mem, w, pc + 1, now)
        return -1
    # OSCALL: first come, first served through one path; the worker's own call ends at ``done``.
    work = draw(t.rng, gf, GF_LOG_AHEAD, b, t.prog_x[pc])
    start = max(now, gf[GF_OS_FREE])
    done = start + work
    gf[GF_OS_FREE] = done
    gf[GF_OS_BUSY] += work
    gf[GF_OS_QUEUE] += start - now
    gi[G_OS_CALLS] += 1
    wf[w, WF_OSSTART] = start
    dur = done - now
    if a == OS_SPIN:  # in the kernel on this worker's thread: its scheduler stays busy
        wi[w, W_PC] = pc + 1
        wf[w, WF_CPU] += dur
        wf[w, WF_KERNEL] += dur
        gf[GF_OS_KERNEL] += dur
        t.sf[wi[w, W_SCHED], SF_BUSY] += dur
        push_event(mem, done, EV_CPU_DONE, w, now)
    else:  # preemptive: the scheduler is free meanwhile, and the time is a wait (its maximum: on_sleep_done)
        wf[w, WF_OSWAIT] += dur
        gf[GF_OS_KERNEL] += work
        gf[GF_OS_WAIT] += dur
        gi[G_OS_WAITS] += 1
        leave_scheduler_waiting(mem, w, pc + 1, now)
        push_event(mem, done, EV_SLEEP_DONE, w, now)
    return -1


@njit(**_INLINE)
def execute(mem, w, now):
    """Run worker ``w``'s program from its program counter until it must wait for time.

    The common instructions are handled here; the rare outcomes (the latch is
    taken, the quantum is up with others waiting, END) call kernels of their own.
    """
    t = tables(mem)
    wi, wf, si, sf, li, lf = t.wi, t.wf, t.si, t.sf, t.li, t.lf
    prog_i, prog_x = t.prog_i, t.prog_x
    s = wi[w, W_SCHED]
    pc = wi[w, W_PC]  # kept in a register; written back before every exit
    while True:
        op = prog_i[pc, 0]
        a = prog_i[pc, 1]
        b = prog_i[pc, 2]
        if op == CPU:
            if a == SCALED:
                dur = prog_x[pc] * wi[w, W_SCALE]
            else:
                dur = draw(t.rng, t.gf, GF_LOG_AHEAD, a, prog_x[pc])
            if b >= 0:
                dur += lf[b, LF_CONTCOST] * (li[b, L_QLEN] + li[b, L_SPINNERS])
            wi[w, W_PC] = pc + 1
            wf[w, WF_CPU] += dur
            sf[s, SF_BUSY] += dur
            push_event(mem, now + dur, EV_CPU_DONE, w, now)
            return
        elif op == ACQUIRE:
            if a < 0:  # a register: the latch the index walk put there, or none
                a = wi[w, W_REG0 - 1 - a]
                if a < 0:
                    pc += 1
                    continue
            if wi[w, W_LATCH] != a:  # a fresh request, not a retry after a signal
                wi[w, W_LATCH] = a
                wi[w, W_MODE] = b
                wi[w, W_WAITED] = 0
                wi[w, W_BACKOFFS] = 0
                wf[w, WF_TREQ] = now
                wf[w, WF_WAITACC] = 0.0
                wf[w, WF_SIGACC] = 0.0
            fair = li[a, L_POLICY] == FAIR
            if lt.grantable(li, a, b) and (not fair or li[a, L_QLEN] == 0):
                lt.hold(li, a, b)
                complete_acquire(mem, w, now)
                pc += 1
            else:
                wi[w, W_PC] = pc
                wait_for_latch(mem, w, a, fair, now)
                return
        elif op == RELEASE:
            if a < 0:
                a = wi[w, W_REG0 - 1 - a]
            if a >= 0:
                release(mem, w, a, b, now)
            pc += 1
        elif op == YIELD:
            pc += 1
            used = now - wf[w, WF_QSTART]
            if used >= t.gf[GF_QUANTUM] - prog_x[pc - 1]:  # x: yield this much before the quantum ends
                if si[s, S_HEAD] >= 0:
                    wi[w, W_PC] = pc
                    yield_scheduler(mem, w, now)
                    return
                if used >= t.gf[GF_QUANTUM]:
                    wf[w, WF_QSTART] = now
        elif op == LOOP:
            slot = W_LOOP0 + b
            count = wi[w, slot] + 1
            if count < prog_i[pc, 3]:
                wi[w, slot] = count
                pc = a
            else:
                wi[w, slot] = 0
                pc += 1
        elif op == END:
            wi[w, W_PC] = pc
            end_worker(mem, w, now)
            return
        elif op == UNIT:
            t.gi[G_UNITS] += 1
            pc += 1
        elif op == SLEEP:
            wi[w, W_PC] = pc + 1
            sleep_worker(mem, w, draw(t.rng, t.gf, GF_LOG_AHEAD, a, prog_x[pc]), now)
            return
        elif op < GRANT:  # the index instructions
            pc = index_step(mem, w, pc, now)
        else:  # the query instructions: memory grants, parallel workers, OS calls
            pc = query_step(mem, w, pc, now)
            if pc < 0:
                return


# ---------------------------------------------------------------- event handlers


@njit(**_INLINE)
def on_dispatched(mem, w, now):
    """The context switch is over: ``w`` runs with a fresh quantum (and goes on executing)."""
    t = tables(mem)
    wi, wf, gf = t.wi, t.wf, t.gf
    wf[w, WF_QSTART] = now
    flag = wi[w, W_FLAG]
    if flag == FLAG_GRANTED or flag == FLAG_RETRY:
        wf[w, WF_WAITACC] += now - wf[w, WF_TSUSP]
        wf[w, WF_SIGACC] += now - wf[w, WF_TSIG]
    if flag == FLAG_GRANTED:
        complete_acquire(mem, w, now)
        wi[w, W_PC] += 1
    elif flag == FLAG_YIELDED:
        wait = now - wf[w, WF_TSIG]
        gf[GF_YIELD_WAIT] += wait
        if wait > gf[GF_YIELD_MAX]:
            gf[GF_YIELD_MAX] = wait
    wi[w, W_FLAG] = FLAG_NONE


@njit(**_INLINE)
def on_spin_done(mem, w, now):
    """A spin round ended: take the latch if free (True: go on executing), else back off or suspend."""
    t = tables(mem)
    wi, li = t.wi, t.li
    latch = wi[w, W_LATCH]
    mode = wi[w, W_MODE]
    li[latch, L_SPINNERS] -= 1
    if lt.grantable(li, latch, mode):
        set_state(mem, w, RUNNING, now)
        lt.hold(li, latch, mode)
        complete_acquire(mem, w, now)
        wi[w, W_PC] += 1
        return True
    if wi[w, W_BACKOFFS] < li[latch, L_MAX_BACKOFFS]:
        pause = t.lf[latch, LF_BACKOFF_US] * 2.0 ** wi[w, W_BACKOFFS]
        wi[w, W_BACKOFFS] += 1
        li[latch, L_BACKOFFS] += 1
        set_state(mem, w, BACKOFF, now)
        push_event(mem, now + pause, EV_BACKOFF_DONE, w, now)
    else:
        suspend(mem, w, now)
    return False


@njit(**_JIT)
def cpu_demand(si, s):
    """Workers running or runnable on scheduler ``s``."""
    return si[s, S_QLEN] + (1 if si[s, S_CUR] >= 0 else 0)


@njit(**_JIT)
def on_arrival(mem, w, now):
    """A task arrives: bind it to its scheduler and make it runnable.

    An unbound task goes to the least-loaded scheduler: the fewest workers
    running or runnable, then the fewest tasks, then the lowest index.
    """
    t = tables(mem)
    wi, si = t.wi, t.si
    s = wi[w, W_SCHED]
    if s < 0:
        s = 0
        for k in range(1, si.shape[0]):
            dk, ds = cpu_demand(si, k), cpu_demand(si, s)
            if dk < ds or (dk == ds and si[k, S_LOAD] < si[s, S_LOAD]):
                s = k
        wi[w, W_SCHED] = s
    si[s, S_LOAD] += 1
    t.wf[w, WF_TSTATE] = now
    make_runnable(mem, w, False, now)
    try_dispatch(mem, s, now)


@njit(**_INLINE)
def give_back_unelapsed(mem, key, due, end):
    """Give back what was charged, ahead of time, for the part after ``end`` of pending event ``key`` (due at ``due``).

    A context switch, CPU burst, spin round, sleep or OS call is charged in
    full when it starts, since its length is known then; a run that stops at
    ``end`` before it is over keeps only its elapsed part.  A back-off, a
    wake-up and the timers charge nothing ahead.  A worker in a preemptive
    OS call is SUSPENDED (a sleeper is SLEEPING) and has waited since its
    last change of state: that wait, so far, counts towards the longest one.
    """
    t = tables(mem)
    wi, wf, sf, gf = t.wi, t.wf, t.sf, t.gf
    kind = (key >> EV_WORKER_BITS) & 7
    w = key & _WORKER_MASK
    os_wait = kind == EV_SLEEP_DONE and wi[w, W_STATE] == SUSPENDED
    if os_wait:
        gf[GF_OS_MAXWAIT] = max(gf[GF_OS_MAXWAIT], end - wf[w, WF_TSTATE])
    over = due - end
    if over <= 0.0:
        return
    s = wi[w, W_SCHED]
    os_call = os_wait
    if kind == EV_DISPATCHED:  # a context switch: the scheduler's time, no worker's
        sf[s, SF_BUSY] -= over
    elif kind == EV_SPIN_DONE:  # the round's spins are spread evenly over it
        latch = wi[w, W_LATCH]
        spins, round_us = t.li[latch, L_SPINS_PER_ROUND], t.lf[latch, LF_SPIN_US]
        t.li[latch, L_SPINS] -= spins - int(spins * (round_us - over) / round_us)
        wf[w, WF_SPIN] -= over
        wf[w, WF_CPU] -= over
        sf[s, SF_BUSY] -= over
    elif kind == EV_CPU_DONE:
        wf[w, WF_CPU] -= over
        sf[s, SF_BUSY] -= over
        if t.prog_i[wi[w, W_PC] - 1, 0] == OSCALL:  # spinning in the kernel, queued or working
            os_call = True
            wf[w, WF_KERNEL] -= over
            gf[GF_OS_KERNEL] -= over
    elif os_wait:
        wf[w, WF_OSWAIT] -= over
        gf[GF_OS_WAIT] -= over
        gf[GF_OS_KERNEL] -= due - max(wf[w, WF_OSSTART], end)  # the kernel's work, not the queueing
    elif kind == EV_SLEEP_DONE:
        wf[w, WF_SLEPT] -= over
    if os_call:  # the serialised path: the call queued until its start, then was worked on until ``due``
        start = wf[w, WF_OSSTART]
        gf[GF_OS_QUEUE] -= max(start - end, 0.0)
        gf[GF_OS_BUSY] -= due - max(start, end)


@njit(**_JIT)
def finish(mem, end):
    """End the run at ``end``: keep only the elapsed part of what was under way, and close open trace intervals.

    What is under way is what the pending events end: the ring's (due now,
    at ``end``), the front slot's and the heap's.
    """
    t = tables(mem)
    gi, gf, wi, ring = t.gi, t.gf, t.wi, t.ring
    in_ring, in_front = gi[G_NOW_LEN], gi[G_FRONT]
    for i in range(in_ring + in_front + gi[G_HEAPN]):
        if i < in_ring:
            key, due = ring[(gi[G_NOW_HEAD] + i) % ring.shape[0]], end
        elif i < in_ring + in_front:
            key, due = gi[G_FRONT_K], gf[GF_FRONT_T]
        else:
            key, due = t.heap_k[i - in_ring - in_front], t.heap_t[i - in_ring - in_front]
        give_back_unelapsed(mem, key, due, end)
    for w in range(wi.shape[0]):
        state = wi[w, W_STATE]
        if state != DONE and state != NEW:
            set_state(mem, w, DONE, end)


@njit(**_JIT)
def run_events(mem, max_events, chunk_end):
    """Process events until the main workers finish, a bound is hit or the chunk ends.

    Immediate events (due now) come first, then the earlier of the next task
    arrival and the heap's root; an arrival wins a tie.  Each event goes to its
    handler; :func:`execute` then runs the worker's program if the handler says so.
    The event count, the clock and the next arrival time live in locals and are
    written back to the buffer when the loop returns (no kernel reads them).
    """
    branch_without_jump_tables()
    t = tables(mem)
    gi, gf, wf, order, ring = t.gi, t.gf, t.wf, t.order, t.ring
    n_arrivals = order.shape[0]
    events = gi[G_EVENTS]
    limit = min(max_events, chunk_end)
    max_time = gf[GF_MAX_TIME]
    now = gf[GF_NOW]
    k = gi[G_NEXT_ARRIVAL]
    t_arrival = wf[order[k], WF_ARRIVE] if k < n_arrivals else np.inf
    status = STATUS_CHUNK
    while True:
        if gi[G_MAIN_LEFT] == 0:
            status = STATUS_DONE
            break
        if events >= limit:
            if events >= max_events:
                status = STATUS_EVENT_BOUND
            break
        if gi[G_NOW_LEN] > 0:  # immediate events first
            head = gi[G_NOW_HEAD]
            key = ring[head]
            gi[G_NOW_HEAD] = head + 1 if head + 1 < ring.shape[0] else 0
            gi[G_NOW_LEN] -= 1
        else:
            t_event = next_event_time(mem)
            if t_arrival == np.inf and t_event == np.inf:  # nothing left to happen, yet main workers are not done
                status = STATUS_STUCK
                break
            when = min(t_arrival, t_event)
            if when > max_time:
                status = STATUS_TIME_BOUND
                break
            now = when
            if t_arrival <= t_event:
                events += 1
                w = order[k]
                k += 1
                t_arrival = wf[order[k], WF_ARRIVE] if k < n_arrivals else np.inf
                on_arrival(mem, w, now)
                continue
            key = pop_event(mem)
        events += 1
        kind = (key >> EV_WORKER_BITS) & 7
        w = key & _WORKER_MASK
        if kind == EV_CPU_DONE:
            go = True
        elif kind == EV_DISPATCHED:
            on_dispatched(mem, w, now)
            go = True
        elif kind == EV_SPIN_DONE:
            go = on_spin_done(mem, w, now)
        elif kind == EV_BACKOFF_DONE:
            spin_round(mem, w, now)
            go = False
        elif kind == EV_WAKE:
            wake(mem, w, now)
            go = False
        elif kind == EV_SLEEP_DONE:
            on_sleep_done(mem, w, now)
            go = False
        else:  # the timers: a grant time-out, a forked worker's start
            on_timer(mem, w, kind, now)
            go = False
        if go:
            execute(mem, w, now)
    gi[G_EVENTS] = events
    gi[G_NEXT_ARRIVAL] = k
    gf[GF_NOW] = now
    if status == STATUS_CHUNK:
        return STATUS_CHUNK
    if status == STATUS_DONE:
        finish(mem, gf[GF_END])
    else:
        gf[GF_END] = now
        finish(mem, now)
    gi[G_STATUS] = status
    return status


# ---------------------------------------------------------------- Python front

from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

from models import state as st  # noqa: E402
from models.clock import on_tick, to_ticks  # noqa: E402
from models.program import EXPONENTIAL, Program  # noqa: E402
from models.rng import exponential, seed_state, start_ahead  # noqa: E402


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
    contender_cost_us: float = 0.0
    wait_type: str = ""       # a wait type of its own instead of prefix_MODE (not then a latch class in the DMV)
    shown_modes: tuple[str, ...] = ("EX",)  # wait rows shown even with no waits


@dataclass
class IndexSpec:
    """The clustered index a hot-page workload inserts into (:mod:`models.btree`).

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
    """The memory-grant semaphore (:mod:`models.grants`): grants wait above ``target_kb``; forced ones fail above ``limit_kb``."""

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
    collect: Callable[[st.State], dict] | None = None
    extra: dict = field(default_factory=dict)


@njit(cache=True, _nrt=False, error_model="numpy")
def _poisson_arrivals(rng, wf, first, gap):
    """Fill arrival times of workers ``first..`` with a Poisson stream from time 0 (gaps in whole ticks)."""
    t = 0.0
    for w in range(first, wf.shape[0]):
        t += on_tick(exponential(rng, gap))
        wf[w, WF_ARRIVE] = t


@dataclass
class RawRun:
    """The arrays a finished run leaves behind, before they become a Result."""

    workload: Workload
    state: st.State
    status: int
    max_events: int
    max_sim_ms: float


def simulate(workload: Workload, seed: int, *, trace_events: int = 0, record_acquires: int = 0,
             max_events: int = 0, max_sim_ms: float = 1e9,
             progress: Callable[[float], None] | None = None, chunk: int = 2_000_000) -> RawRun:
    """Run a workload to completion (or to a bound) and return its raw state.

    Every time the workload gives is rounded to the clock's tick here
    (:mod:`models.clock`), so the event loop's time arithmetic is exact.
    """
    n_workers = len(workload.worker_start)
    if n_workers > st.MAX_WORKERS:
        raise ValueError(f"{n_workers:,} workers: the engine runs at most {st.MAX_WORKERS:,} per run")
    samples = min(max(workload.expected_acquires, 1), 5_000_000)
    prog_i, prog_x = workload.program.arrays()
    index = workload.index
    memory = workload.memory
    s = st.allocate(n_workers, workload.schedulers, len(workload.latches), prog_i.shape[0], trace_events,
                    record_acquires, samples, index.pages if index else 0, index.heat_rows if index else 0,
                    index.capacity if index else 0, 4 * n_workers + 16 if memory else 0)
    # Fixed durations go on the tick once; exponential ones keep their exact mean.
    ops = prog_i[:, 0]
    timed = (ops == CPU) | (ops == SLEEP)
    on_tick_x = ((timed & (prog_i[:, 1] != EXPONENTIAL)) | (ops == YIELD) | (ops == GRANT)
                 | ((ops == OSCALL) & (prog_i[:, 2] != EXPONENTIAL)))
    s.prog_i[:] = prog_i
    s.prog_x[:] = np.where(on_tick_x, to_ticks(prog_x), prog_x)
    if index is not None:
        bx.initialise(s.bt, s.pages, s.leaves, bx.STRATEGIES[index.strategy], index.capacity, index.fanout,
                      index.buckets, index.trees, index.page_latch0, index.root_latch0, index.gate_latch0,
                      workload.schedulers)
    s.wi[:, st.W_PC] = workload.worker_start
    s.wi[:, st.W_SCHED] = workload.worker_scheduler
    s.wi[:, st.W_DAEMON] = np.asarray(workload.worker_daemon, dtype=np.int64)
    s.wf[:, st.WF_ARRIVE] = to_ticks(workload.worker_arrival_us)
    for k, spec in enumerate(workload.latches):
        s.li[k, st.L_POLICY] = st.POLICIES[spec.policy]
        s.li[k, st.L_SPINS_PER_ROUND] = spec.spins_per_round
        s.li[k, st.L_MAX_BACKOFFS] = spec.max_backoffs
        s.lf[k, st.LF_SPIN_US] = to_ticks(spec.spin_us)
        s.lf[k, st.LF_BACKOFF_US] = to_ticks(spec.backoff_us)
        s.lf[k, st.LF_CONTCOST] = to_ticks(spec.contender_cost_us)
    forked = ~np.isfinite(np.asarray(workload.worker_arrival_us, dtype=np.float64))  # started by FORK, if at all
    s.gi[st.G_MAIN_LEFT] = int(((s.wi[:, st.W_DAEMON] == 0) & ~forked).sum())
    if memory is not None:
        s.gi[st.G_SEM_TARGET] = memory.target_kb
        s.gi[st.G_SEM_LIMIT] = memory.limit_kb
    s.gf[st.GF_QUANTUM] = to_ticks(workload.quantum_us)
    s.gf[st.GF_SWITCH] = to_ticks(workload.context_switch_us)
    s.gf[st.GF_WAKEUP] = to_ticks(workload.wakeup_us)
    s.gf[st.GF_MAX_TIME] = max_sim_ms * 1000.0
    if workload.window_us > 0:
        s.gf[st.GF_MAX_TIME] = min(s.gf[st.GF_MAX_TIME], to_ticks(workload.window_us))
    s.rng[:] = seed_state(seed)
    if workload.poisson_from >= 0:
        _poisson_arrivals(s.rng, s.wf, workload.poisson_from, workload.poisson_gap_us)
    start_ahead(s.rng, s.gf, st.GF_LOG_AHEAD)
    s.order[:] = np.argsort(s.wf[:, st.WF_ARRIVE], kind="stable")
    if max_events <= 0:
        max_events = (60 * max(workload.expected_acquires, 1) + 4 * workload.expected_events
                      + 20 * n_workers + 1_000_000)
    expected = max(workload.expected_acquires, 1)
    done_events = 0
    while True:
        status = run_events(s.address, max_events, min(done_events + chunk, max_events))
        done_events = int(s.gi[st.G_EVENTS])
        if progress is not None:
            if workload.window_us > 0:
                done = s.gf[st.GF_NOW] / s.gf[st.GF_MAX_TIME]
            elif workload.expected_ms > 0:
                done = s.gf[st.GF_NOW] / 1000.0 / workload.expected_ms
            else:
                done = s.li[:, st.L_ACQ].sum() / expected
            progress(min(1.0, done) if status == st.STATUS_CHUNK else 1.0)
        if status != st.STATUS_CHUNK:
            if index is not None and s.bt[st.BT_OVERFLOW]:
                raise RuntimeError(f"the index outgrew its table of {index.pages:,} pages: the scenario's "
                                   "page bound is too small for this run")
            return RawRun(workload, s, int(status), max_events, max_sim_ms)
