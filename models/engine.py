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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models import latch as lt
from models import scheduler as sch
from models.program import ACQUIRE, CPU, END, LOOP, RELEASE, YIELD
from models.rng import draw
from models.state import (
    ALF_GRANT, ALF_RELEASE, ALF_REQUEST, ALF_RUN, AL_LATCH, AL_MODE, AL_QSEQ,
    AL_SUSPENDED, AL_WORKER, BACKOFF, DONE, EV_BACKOFF_DONE, EV_CPU_DONE,
    EV_DISPATCHED, EV_SPIN_DONE, EV_WAKE, FAIR, FLAG_GRANTED, FLAG_NONE,
    FLAG_RETRY, FLAG_YIELDED, G_EVENTS, G_HEAPN, G_LOGN, G_MAIN_LEFT,
    G_NEXT_ARRIVAL, G_NOW_HEAD, G_NOW_LEN, G_SAMPLEN, G_SEQ, G_STATUS, G_TRACEN, G_YIELDS, GF_END,
    GF_MAX_TIME, GF_NOW, GF_QUANTUM, GF_SWITCH, GF_WAKEUP, GF_YIELD_MAX,
    GF_YIELD_WAIT, L_ACQ, L_BACKOFFS, L_COLL, L_MAX_BACKOFFS, L_POLICY, L_QHEAD,
    L_QLEN, L_SPINNERS, L_SPINS, L_SPINS_PER_ROUND, LF_BACKOFF_US, LF_CONTCOST,
    LF_LATSUM, LF_SPIN_US, LW_COUNT, LW_MAX, LW_SIG, LW_TIME, MAX_BOOSTS_IN_A_ROW,
    NEW, RUNNABLE, RUNNING, S_BOOSTRUN, S_CUR, S_HEAD, S_LOAD, S_QLEN, S_SWITCHES,
    SF_BUSY, SPINNING, STATUS_CHUNK, STATUS_DONE, STATUS_EVENT_BOUND,
    STATUS_STUCK, STATUS_TIME_BOUND, SUSPENDED, W_ACQ, W_BACKOFFS, W_BOOSTED,
    W_DAEMON, W_FLAG, W_LATCH, W_LOG, W_LOOP0, W_MODE, W_PC, W_QSEQ, W_SCHED,
    W_STATE, W_WAITED, WF_ARRIVE, WF_BURSTEND, WF_CPU, WF_LATCHWAIT, WF_QSTART,
    WF_SIGACC, WF_SPIN, WF_TREQ, WF_TSIG, WF_TSTATE, WF_TSUSP, WF_WAITACC,
)

# ---------------------------------------------------------------- event heap


@njit(cache=True, _nrt=False, error_model="numpy")
def _before(heap_t, heap_i, i, j):
    """Heap order: earlier time first, then earlier sequence number."""
    if heap_t[i] != heap_t[j]:
        return heap_t[i] < heap_t[j]
    return heap_i[i, 0] < heap_i[j, 0]


@njit(cache=True, _nrt=False, error_model="numpy")
def _swap(heap_t, heap_i, i, j):
    heap_t[i], heap_t[j] = heap_t[j], heap_t[i]
    for k in range(3):
        heap_i[i, k], heap_i[j, k] = heap_i[j, k], heap_i[i, k]


@njit(cache=True, _nrt=False, error_model="numpy")
def push_event(gi, heap_t, heap_i, t, kind, w, now):
    """Schedule event ``kind`` for worker ``w`` at time ``t``.

    An event due at the current instant skips the heap: it goes to a FIFO of
    immediate events (stored at the far end of the heap arrays) that the loop
    drains before it takes anything later, which saves the heap traffic of
    zero-cost wake-ups and context switches.
    """
    if t <= now:
        ring = heap_t.shape[0] // 2
        slot = ring + (gi[G_NOW_HEAD] + gi[G_NOW_LEN]) % ring
        heap_t[slot] = t
        heap_i[slot, 1] = kind
        heap_i[slot, 2] = w
        gi[G_NOW_LEN] += 1
        return
    n = gi[G_HEAPN]
    heap_t[n] = t
    heap_i[n, 0] = gi[G_SEQ]
    heap_i[n, 1] = kind
    heap_i[n, 2] = w
    gi[G_SEQ] += 1
    gi[G_HEAPN] = n + 1
    while n > 0:
        parent = (n - 1) // 2
        if _before(heap_t, heap_i, n, parent):
            _swap(heap_t, heap_i, n, parent)
            n = parent
        else:
            break


@njit(cache=True, _nrt=False, error_model="numpy")
def pop_event(gi, heap_t, heap_i):
    """Remove the earliest event into slot ``n - 1`` of the heap and return that slot."""
    n = gi[G_HEAPN] - 1
    _swap(heap_t, heap_i, 0, n)
    gi[G_HEAPN] = n
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        if left + 1 < n and _before(heap_t, heap_i, left + 1, left):
            child = left + 1
        if _before(heap_t, heap_i, child, i):
            _swap(heap_t, heap_i, child, i)
            i = child
        else:
            break
    return n


# ---------------------------------------------------------------- bookkeeping


@njit(cache=True, _nrt=False, error_model="numpy")
def set_state(wi, wf, gi, trace_i, trace_f, w, state, now):
    """Move worker ``w`` to ``state``, closing its previous interval in the trace."""
    old = wi[w, W_STATE]
    if old == state:
        return
    if old < NEW and now > wf[w, WF_TSTATE]:
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


@njit(cache=True, _nrt=False, error_model="numpy")
def complete_acquire(wi, wf, li, lf, lw, gi, log_i, log_f, samples, w, now):
    """Record a finished acquire: the worker now runs holding the latch."""
    latch = wi[w, W_LATCH]
    mode = wi[w, W_MODE]
    latency = now - wf[w, WF_TREQ]
    li[latch, L_ACQ] += 1
    wi[w, W_ACQ] += 1
    lf[latch, LF_LATSUM] += latency
    n = gi[G_SAMPLEN]
    if n < samples.shape[0]:
        samples[n] = latency
        gi[G_SAMPLEN] = n + 1
    if wi[w, W_WAITED] == 1:
        wait = wf[w, WF_WAITACC]
        lw[latch, mode, LW_COUNT] += 1
        lw[latch, mode, LW_TIME] += wait
        lw[latch, mode, LW_SIG] += wf[w, WF_SIGACC]
        if wait > lw[latch, mode, LW_MAX]:
            lw[latch, mode, LW_MAX] = wait
        wf[w, WF_LATCHWAIT] += wait
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


@njit(cache=True, _nrt=False, error_model="numpy")
def try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, s, now):
    """If scheduler ``s`` is free, switch to the head of its runnable queue."""
    if si[s, S_CUR] >= 0 or si[s, S_HEAD] < 0:
        return
    w = sch.pop_front(si, wi, s)
    si[s, S_CUR] = w
    if wi[w, W_BOOSTED] == 0:
        si[s, S_BOOSTRUN] = 0
    wi[w, W_BOOSTED] = 0
    si[s, S_SWITCHES] += 1
    sf[s, SF_BUSY] += gf[GF_SWITCH]
    set_state(wi, wf, gi, trace_i, trace_f, w, RUNNING, now)
    wf[w, WF_BURSTEND] = now + gf[GF_SWITCH]
    push_event(gi, heap_t, heap_i, now + gf[GF_SWITCH], EV_DISPATCHED, w, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def make_runnable(wi, wf, si, gi, trace_i, trace_f, w, boost, now):
    """Put ``w`` in its scheduler's runnable queue, at the head if boosted."""
    s = wi[w, W_SCHED]
    set_state(wi, wf, gi, trace_i, trace_f, w, RUNNABLE, now)
    if boost and si[s, S_BOOSTRUN] < MAX_BOOSTS_IN_A_ROW:
        si[s, S_BOOSTRUN] += 1
        wi[w, W_BOOSTED] = 1
        sch.push_front(si, wi, s, w)
    else:
        if boost:
            si[s, S_BOOSTRUN] = 0
        wi[w, W_BOOSTED] = 0
        sch.push_back(si, wi, s, w)


@njit(cache=True, _nrt=False, error_model="numpy")
def signal(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, flag, now):
    """Signal suspended worker ``w``; it becomes runnable after the wake-up cost."""
    wi[w, W_FLAG] = flag
    wf[w, WF_TSIG] = now
    if gf[GF_WAKEUP] > 0.0:
        push_event(gi, heap_t, heap_i, now + gf[GF_WAKEUP], EV_WAKE, w, now)
    else:
        make_runnable(wi, wf, si, gi, trace_i, trace_f, w, True, now)
        try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, wi[w, W_SCHED], now)


@njit(cache=True, _nrt=False, error_model="numpy")
def release(wi, wf, si, sf, li, lf, gi, gf, heap_t, heap_i, trace_i, trace_f, log_f, w, latch,
            mode, now):
    """Release ``latch`` held by ``w`` and hand it on (fair) or signal a waiter (unfair)."""
    li[latch, mode] -= 1
    k = wi[w, W_LOG]
    if k >= 0:
        log_f[k, ALF_RELEASE] = now
        wi[w, W_LOG] = -1
    if li[latch, L_POLICY] == FAIR:
        while li[latch, L_QLEN] > 0:
            head = li[latch, L_QHEAD]
            want = wi[head, W_MODE]
            if not lt.grantable(li, latch, want):
                break
            lt.dequeue(li, lf, wi, wf, latch, now)
            li[latch, want] += 1
            signal(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, head, FLAG_GRANTED, now)
    elif li[latch, L_QLEN] > 0:
        head = li[latch, L_QHEAD]
        if lt.grantable(li, latch, wi[head, W_MODE]):
            lt.dequeue(li, lf, wi, wf, latch, now)
            signal(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, head, FLAG_RETRY, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def give_up_scheduler(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now):
    """Worker ``w`` leaves its scheduler; the next runnable worker gets it."""
    s = wi[w, W_SCHED]
    si[s, S_CUR] = -1
    try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, s, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def spin_round(wi, wf, sf, li, lf, gi, heap_t, heap_i, trace_i, trace_f, w, now):
    """Start one spin round on the latch ``w`` is acquiring (CPU time on its scheduler)."""
    latch = wi[w, W_LATCH]
    set_state(wi, wf, gi, trace_i, trace_f, w, SPINNING, now)
    li[latch, L_SPINNERS] += 1
    li[latch, L_SPINS] += li[latch, L_SPINS_PER_ROUND]
    dur = lf[latch, LF_SPIN_US]
    wf[w, WF_CPU] += dur
    wf[w, WF_SPIN] += dur
    sf[wi[w, W_SCHED], SF_BUSY] += dur
    wf[w, WF_BURSTEND] = now + dur
    push_event(gi, heap_t, heap_i, now + dur, EV_SPIN_DONE, w, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def execute(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
            trace_i, trace_f, log_i, log_f, samples, w, now):
    """Run worker ``w``'s program from its program counter until it must wait for time."""
    s = wi[w, W_SCHED]
    while True:
        pc = wi[w, W_PC]
        op = prog_i[pc, 0]
        a = prog_i[pc, 1]
        b = prog_i[pc, 2]
        if op == CPU:
            dur = draw(rng, a, prog_x[pc])
            if b >= 0:
                dur += lf[b, LF_CONTCOST] * (li[b, L_QLEN] + li[b, L_SPINNERS])
            wi[w, W_PC] = pc + 1
            wf[w, WF_CPU] += dur
            sf[s, SF_BUSY] += dur
            wf[w, WF_BURSTEND] = now + dur
            push_event(gi, heap_t, heap_i, now + dur, EV_CPU_DONE, w, now)
            return
        elif op == ACQUIRE:
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
                li[a, b] += 1
                complete_acquire(wi, wf, li, lf, lw, gi, log_i, log_f, samples, w, now)
                wi[w, W_PC] = pc + 1
            elif fair:
                suspend(wi, wf, si, sf, li, lf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now)
                return
            else:
                li[a, L_COLL] += 1
                wi[w, W_BACKOFFS] = 0
                spin_round(wi, wf, sf, li, lf, gi, heap_t, heap_i, trace_i, trace_f, w, now)
                return
        elif op == RELEASE:
            release(wi, wf, si, sf, li, lf, gi, gf, heap_t, heap_i, trace_i, trace_f, log_f, w, a, b, now)
            wi[w, W_PC] = pc + 1
        elif op == YIELD:
            wi[w, W_PC] = pc + 1
            if now - wf[w, WF_QSTART] >= gf[GF_QUANTUM]:
                if si[s, S_HEAD] >= 0:
                    gi[G_YIELDS] += 1
                    wi[w, W_FLAG] = FLAG_YIELDED
                    wf[w, WF_TSIG] = now
                    si[s, S_CUR] = -1
                    make_runnable(wi, wf, si, gi, trace_i, trace_f, w, False, now)
                    try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, s, now)
                    return
                wf[w, WF_QSTART] = now
        elif op == LOOP:
            slot = W_LOOP0 + b
            count = wi[w, slot] + 1
            if count < prog_i[pc, 3]:
                wi[w, slot] = count
                wi[w, W_PC] = a
            else:
                wi[w, slot] = 0
                wi[w, W_PC] = pc + 1
        else:  # END
            set_state(wi, wf, gi, trace_i, trace_f, w, DONE, now)
            si[s, S_LOAD] -= 1
            if wi[w, W_DAEMON] == 0:
                gi[G_MAIN_LEFT] -= 1
                if gi[G_MAIN_LEFT] == 0:
                    gf[GF_END] = now
            give_up_scheduler(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now)
            return


@njit(cache=True, _nrt=False, error_model="numpy")
def suspend(wi, wf, si, sf, li, lf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now):
    """Suspend ``w`` in the FIFO queue of the latch it is acquiring."""
    set_state(wi, wf, gi, trace_i, trace_f, w, SUSPENDED, now)
    wi[w, W_WAITED] = 1
    wf[w, WF_TSUSP] = now
    lt.enqueue(li, lf, wi, wf, wi[w, W_LATCH], w, now)
    give_up_scheduler(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now)


# ---------------------------------------------------------------- event handlers


@njit(cache=True, _nrt=False, error_model="numpy")
def on_dispatched(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                  trace_i, trace_f, log_i, log_f, samples, w, now):
    """The context switch is over: ``w`` runs with a fresh quantum."""
    wf[w, WF_QSTART] = now
    flag = wi[w, W_FLAG]
    if flag == FLAG_GRANTED or flag == FLAG_RETRY:
        wf[w, WF_WAITACC] += now - wf[w, WF_TSUSP]
        wf[w, WF_SIGACC] += now - wf[w, WF_TSIG]
    if flag == FLAG_GRANTED:
        complete_acquire(wi, wf, li, lf, lw, gi, log_i, log_f, samples, w, now)
        wi[w, W_PC] += 1
    elif flag == FLAG_YIELDED:
        wait = now - wf[w, WF_TSIG]
        gf[GF_YIELD_WAIT] += wait
        if wait > gf[GF_YIELD_MAX]:
            gf[GF_YIELD_MAX] = wait
    wi[w, W_FLAG] = FLAG_NONE
    execute(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
            trace_i, trace_f, log_i, log_f, samples, w, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def on_spin_done(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                 trace_i, trace_f, log_i, log_f, samples, w, now):
    """A spin round ended: take the latch if free, else back off or suspend."""
    latch = wi[w, W_LATCH]
    mode = wi[w, W_MODE]
    li[latch, L_SPINNERS] -= 1
    if lt.grantable(li, latch, mode):
        set_state(wi, wf, gi, trace_i, trace_f, w, RUNNING, now)
        li[latch, mode] += 1
        complete_acquire(wi, wf, li, lf, lw, gi, log_i, log_f, samples, w, now)
        wi[w, W_PC] += 1
        execute(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                trace_i, trace_f, log_i, log_f, samples, w, now)
    elif wi[w, W_BACKOFFS] < li[latch, L_MAX_BACKOFFS]:
        pause = lf[latch, LF_BACKOFF_US] * 2.0 ** wi[w, W_BACKOFFS]
        wi[w, W_BACKOFFS] += 1
        li[latch, L_BACKOFFS] += 1
        set_state(wi, wf, gi, trace_i, trace_f, w, BACKOFF, now)
        push_event(gi, heap_t, heap_i, now + pause, EV_BACKOFF_DONE, w, now)
    else:
        suspend(wi, wf, si, sf, li, lf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def cpu_demand(si, s):
    """Workers running or runnable on scheduler ``s``."""
    return si[s, S_QLEN] + (1 if si[s, S_CUR] >= 0 else 0)


@njit(cache=True, _nrt=False, error_model="numpy")
def on_arrival(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, w, now):
    """A task arrives: bind it to its scheduler and make it runnable.

    An unbound task goes to the least-loaded scheduler: the fewest workers
    running or runnable, then the fewest tasks, then the lowest index.
    """
    s = wi[w, W_SCHED]
    if s < 0:
        s = 0
        for k in range(1, si.shape[0]):
            dk, ds = cpu_demand(si, k), cpu_demand(si, s)
            if dk < ds or (dk == ds and si[k, S_LOAD] < si[s, S_LOAD]):
                s = k
        wi[w, W_SCHED] = s
    si[s, S_LOAD] += 1
    wf[w, WF_TSTATE] = now
    make_runnable(wi, wf, si, gi, trace_i, trace_f, w, False, now)
    try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, s, now)


@njit(cache=True, _nrt=False, error_model="numpy")
def finish(wi, wf, si, sf, gi, trace_i, trace_f, end):
    """Close open trace intervals at ``end`` and remove CPU booked past it."""
    for w in range(wi.shape[0]):
        state = wi[w, W_STATE]
        if state == DONE or state == NEW:
            continue
        over = wf[w, WF_BURSTEND] - end
        if (state == RUNNING or state == SPINNING) and over > 0.0:
            wf[w, WF_CPU] -= over
            sf[wi[w, W_SCHED], SF_BUSY] -= over
        wf[w, WF_BURSTEND] = end
        set_state(wi, wf, gi, trace_i, trace_f, w, DONE, end)


@njit(cache=True, _nrt=False, error_model="numpy")
def _dispatch_event(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                    trace_i, trace_f, log_i, log_f, samples, kind, w, now):
    """Hand event ``kind`` of worker ``w`` to its handler."""
    if kind == EV_CPU_DONE:
        execute(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                trace_i, trace_f, log_i, log_f, samples, w, now)
    elif kind == EV_DISPATCHED:
        on_dispatched(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t,
                      heap_i, trace_i, trace_f, log_i, log_f, samples, w, now)
    elif kind == EV_SPIN_DONE:
        on_spin_done(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t,
                     heap_i, trace_i, trace_f, log_i, log_f, samples, w, now)
    elif kind == EV_BACKOFF_DONE:
        spin_round(wi, wf, sf, li, lf, gi, heap_t, heap_i, trace_i, trace_f, w, now)
    else:  # EV_WAKE
        make_runnable(wi, wf, si, gi, trace_i, trace_f, w, True, now)
        try_dispatch(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f,
                     wi[w, W_SCHED], now)


@njit(cache=True, _nrt=False, error_model="numpy")
def run_events(prog_i, prog_x, order, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t,
               heap_i, trace_i, trace_f, log_i, log_f, samples, max_events, chunk_end):
    """Process events until the main workers finish, a bound is hit or the chunk ends."""
    n_arrivals = order.shape[0]
    while True:
        if gi[G_MAIN_LEFT] == 0:
            finish(wi, wf, si, sf, gi, trace_i, trace_f, gf[GF_END])
            gi[G_STATUS] = STATUS_DONE
            return STATUS_DONE
        if gi[G_EVENTS] >= max_events:
            gi[G_STATUS] = STATUS_EVENT_BOUND
            break
        if gi[G_EVENTS] >= chunk_end:
            return STATUS_CHUNK
        if gi[G_NOW_LEN] > 0:  # immediate events first
            ring = heap_t.shape[0] // 2
            slot = ring + gi[G_NOW_HEAD]
            gi[G_NOW_HEAD] = (gi[G_NOW_HEAD] + 1) % ring
            gi[G_NOW_LEN] -= 1
            gi[G_EVENTS] += 1
            _dispatch_event(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t,
                            heap_i, trace_i, trace_f, log_i, log_f, samples,
                            heap_i[slot, 1], heap_i[slot, 2], gf[GF_NOW])
            continue
        k = gi[G_NEXT_ARRIVAL]
        t_arrival = wf[order[k], WF_ARRIVE] if k < n_arrivals else np.inf
        t_event = heap_t[0] if gi[G_HEAPN] > 0 else np.inf
        if t_arrival == np.inf and t_event == np.inf:
            gi[G_STATUS] = STATUS_STUCK
            break
        now = min(t_arrival, t_event)
        if now > gf[GF_MAX_TIME]:
            gi[G_STATUS] = STATUS_TIME_BOUND
            break
        gf[GF_NOW] = now
        gi[G_EVENTS] += 1
        if t_arrival <= t_event:
            gi[G_NEXT_ARRIVAL] = k + 1
            on_arrival(wi, wf, si, sf, gi, gf, heap_t, heap_i, trace_i, trace_f, order[k], now)
            continue
        slot = pop_event(gi, heap_t, heap_i)
        _dispatch_event(prog_i, prog_x, wi, wf, si, sf, li, lf, lw, gi, gf, rng, heap_t, heap_i,
                        trace_i, trace_f, log_i, log_f, samples, heap_i[slot, 1],
                        heap_i[slot, 2], now)
    gf[GF_END] = gf[GF_NOW]
    finish(wi, wf, si, sf, gi, trace_i, trace_f, gf[GF_END])
    return gi[G_STATUS]


# ---------------------------------------------------------------- Python front

from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

from models import state as st  # noqa: E402
from models.clock import on_tick, to_ticks  # noqa: E402
from models.program import FIXED, Program  # noqa: E402
from models.rng import exponential, seed_state  # noqa: E402


@dataclass
class LatchSpec:
    """One latch: its class name for the DMVs, wait-type prefix, policy and spin knobs."""

    latch_class: str
    wait_prefix: str = "LATCH"
    policy: str = "fair"
    spin_us: float = 1.0
    spins_per_round: int = 100
    max_backoffs: int = 4
    backoff_us: float = 5.0
    contender_cost_us: float = 0.0


@dataclass
class Workload:
    """Everything the event loop needs: programs, workers, latches, schedulers and costs.

    ``worker_scheduler`` is -1 for a task placed on the least-loaded scheduler
    when it arrives.  Workers from ``poisson_from`` on arrive as a Poisson
    stream with mean gap ``poisson_gap_us`` (drawn from the run's generator);
    the others arrive at ``worker_arrival_us``.
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
    samples = min(max(workload.expected_acquires, 1), 5_000_000)
    s = st.allocate(n_workers, workload.schedulers, len(workload.latches), trace_events,
                    record_acquires, samples)
    prog_i, prog_x = workload.program.arrays()
    fixed_cpu = (prog_i[:, 0] == CPU) & (prog_i[:, 1] == FIXED)  # exponential ones keep their exact mean
    prog_x = np.where(fixed_cpu, to_ticks(prog_x), prog_x)
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
    s.gi[st.G_MAIN_LEFT] = int(n_workers - s.wi[:, st.W_DAEMON].sum())
    s.gf[st.GF_QUANTUM] = to_ticks(workload.quantum_us)
    s.gf[st.GF_SWITCH] = to_ticks(workload.context_switch_us)
    s.gf[st.GF_WAKEUP] = to_ticks(workload.wakeup_us)
    s.gf[st.GF_MAX_TIME] = max_sim_ms * 1000.0
    s.rng[:] = seed_state(seed)
    if workload.poisson_from >= 0:
        _poisson_arrivals(s.rng, s.wf, workload.poisson_from, workload.poisson_gap_us)
    order = np.argsort(s.wf[:, st.WF_ARRIVE], kind="stable").astype(np.int64)
    if max_events <= 0:
        max_events = 60 * max(workload.expected_acquires, 1) + 20 * n_workers + 1_000_000
    expected = max(workload.expected_acquires, 1)
    done_events = 0
    while True:
        status = run_events(prog_i, prog_x, order, *s.arrays(), max_events,
                            min(done_events + chunk, max_events))
        done_events = int(s.gi[st.G_EVENTS])
        if progress is not None:
            progress(min(1.0, s.li[:, st.L_ACQ].sum() / expected) if status == st.STATUS_CHUNK else 1.0)
        if status != st.STATUS_CHUNK:
            return RawRun(workload, s, int(status), max_events, max_sim_ms)
