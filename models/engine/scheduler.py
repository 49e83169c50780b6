"""SQLOS schedulers: one runnable queue per scheduler, a linked list over the worker rows.

A worker is in at most one runnable queue, so ``W_NEXT``/``W_PREV`` on the
worker row are enough for a deque with O(1) push at either end: the head is
where a signalled (boosted) worker goes, the tail where a yielding or newly
arrived worker goes.
"""

from __future__ import annotations

from numba import njit

from models.engine.events import push_event
from models.engine.jit import JIT, JIT_CALL, JIT_HOT
from models.engine.state import (
    EV_DISPATCHED, EV_SLEEP_DONE, EV_WAKE, FLAG_YIELDED, GF_OS_MAXWAIT, GF_SWITCH, GF_WAKEUP, G_TRACE_USED,
    G_YIELDS, MAX_BOOSTS_IN_A_ROW, NEW, RUNNABLE, RUNNING, SF_BUSY, SLEEPING, SUSPENDED, S_BOOSTS_IN_A_ROW,
    S_RUNNING_WORKER, S_RUNNABLE_HEAD, S_LOAD, S_RUNNABLE_COUNT, S_SWITCHES, S_RUNNABLE_TAIL, WF_SLEPT,
    WF_SIGNALLED_AT, WF_STATE_SINCE, W_BOOSTED, W_FLAG, W_NEXT, W_PROGRAM_COUNTER, W_PREV, W_SCHEDULER, W_STATE,
    tables,
)


@njit(**JIT)
def push_back(schedulers, workers, s, w):
    """Append worker ``w`` to the tail of scheduler ``s``'s runnable queue."""
    tail = schedulers[s, S_RUNNABLE_TAIL]
    workers[w, W_PREV] = tail
    workers[w, W_NEXT] = -1
    if tail < 0:
        schedulers[s, S_RUNNABLE_HEAD] = w
    else:
        workers[tail, W_NEXT] = w
    schedulers[s, S_RUNNABLE_TAIL] = w
    schedulers[s, S_RUNNABLE_COUNT] += 1


@njit(**JIT)
def push_front(schedulers, workers, s, w):
    """Put worker ``w`` at the head of scheduler ``s``'s runnable queue."""
    head = schedulers[s, S_RUNNABLE_HEAD]
    workers[w, W_NEXT] = head
    workers[w, W_PREV] = -1
    if head < 0:
        schedulers[s, S_RUNNABLE_TAIL] = w
    else:
        workers[head, W_PREV] = w
    schedulers[s, S_RUNNABLE_HEAD] = w
    schedulers[s, S_RUNNABLE_COUNT] += 1


@njit(**JIT)
def pop_front(schedulers, workers, s):
    """Remove and return the head of scheduler ``s``'s runnable queue (-1 if empty)."""
    w = schedulers[s, S_RUNNABLE_HEAD]
    if w < 0:
        return -1
    nxt = workers[w, W_NEXT]
    schedulers[s, S_RUNNABLE_HEAD] = nxt
    if nxt < 0:
        schedulers[s, S_RUNNABLE_TAIL] = -1
    else:
        workers[nxt, W_PREV] = -1
    workers[w, W_NEXT] = -1
    schedulers[s, S_RUNNABLE_COUNT] -= 1
    return w


# ---------------------------------------------------------------- workers on schedulers


@njit(**JIT_HOT)
def set_state(mem, w, state, now):
    """Move worker ``w`` to ``state``, closing its previous interval in the trace."""
    t = tables(mem)
    workers, worker_times = t.workers, t.worker_times
    old = workers[w, W_STATE]
    if old == state:
        return
    trace_i = t.trace_i
    # a run without a trace skips it all
    if trace_i.shape[0] > 0 and old < NEW and now > worker_times[w, WF_STATE_SINCE]:
        run_cells, trace_f = t.run_cells, t.trace_f
        n = run_cells[G_TRACE_USED]
        if n < trace_i.shape[0]:
            trace_i[n, 0] = w
            trace_i[n, 1] = workers[w, W_SCHEDULER]
            trace_i[n, 2] = old
            trace_f[n, 0] = worker_times[w, WF_STATE_SINCE]
            trace_f[n, 1] = now
            run_cells[G_TRACE_USED] = n + 1
    workers[w, W_STATE] = state
    worker_times[w, WF_STATE_SINCE] = now


@njit(**JIT_HOT)
def switch_to(mem, s, w, boosted, now):
    """Scheduler ``s`` switches to worker ``w``, which runs once the context switch is over.

    A run of boosted workers is counted so that boosting stops after
    ``MAX_BOOSTS_IN_A_ROW``; a worker that was not boosted ends the run.
    """
    t = tables(mem)
    schedulers, scheduler_times, run_times = t.schedulers, t.scheduler_times, t.run_times
    schedulers[s, S_RUNNING_WORKER] = w
    if not boosted:
        schedulers[s, S_BOOSTS_IN_A_ROW] = 0
    schedulers[s, S_SWITCHES] += 1
    scheduler_times[s, SF_BUSY] += run_times[GF_SWITCH]
    set_state(mem, w, RUNNING, now)
    push_event(mem, now + run_times[GF_SWITCH], EV_DISPATCHED, w, now)


@njit(**JIT_HOT)
def try_dispatch(mem, s, now):
    """If scheduler ``s`` is free, switch to the head of its runnable queue."""
    t = tables(mem)
    workers, schedulers = t.workers, t.schedulers
    if schedulers[s, S_RUNNING_WORKER] >= 0 or schedulers[s, S_RUNNABLE_HEAD] < 0:
        return
    w = pop_front(schedulers, workers, s)
    boosted = workers[w, W_BOOSTED] == 1
    workers[w, W_BOOSTED] = 0
    switch_to(mem, s, w, boosted, now)


@njit(**JIT_HOT)
def make_runnable(mem, w, boost, now):
    """Put ``w`` in its scheduler's runnable queue, at the head if boosted."""
    t = tables(mem)
    workers, schedulers = t.workers, t.schedulers
    s = workers[w, W_SCHEDULER]
    set_state(mem, w, RUNNABLE, now)
    if boost and schedulers[s, S_BOOSTS_IN_A_ROW] < MAX_BOOSTS_IN_A_ROW:
        schedulers[s, S_BOOSTS_IN_A_ROW] += 1
        workers[w, W_BOOSTED] = 1
        push_front(schedulers, workers, s, w)
    else:
        if boost:
            schedulers[s, S_BOOSTS_IN_A_ROW] = 0
        workers[w, W_BOOSTED] = 0
        push_back(schedulers, workers, s, w)


@njit(**JIT_HOT)
def wake(mem, w, now):
    """A signalled worker's wake-up is over: it is runnable, boosted, and may get its scheduler.

    On a free scheduler with nobody runnable (the common case when each
    worker has a scheduler of its own), the worker is switched to at once:
    queueing it and taking it straight back out changes nothing but time.
    """
    t = tables(mem)
    schedulers = t.schedulers
    s = t.workers[w, W_SCHEDULER]
    if (schedulers[s, S_RUNNING_WORKER] < 0 and schedulers[s, S_RUNNABLE_HEAD] < 0
            and schedulers[s, S_BOOSTS_IN_A_ROW] < MAX_BOOSTS_IN_A_ROW):
        schedulers[s, S_BOOSTS_IN_A_ROW] += 1
        switch_to(mem, s, w, True, now)
    else:
        make_runnable(mem, w, True, now)
        try_dispatch(mem, s, now)


@njit(**JIT_HOT)
def signal(mem, w, flag, now):
    """Signal suspended worker ``w``; it becomes runnable after the wake-up cost."""
    t = tables(mem)
    t.workers[w, W_FLAG] = flag
    t.worker_times[w, WF_SIGNALLED_AT] = now
    if t.run_times[GF_WAKEUP] > 0.0:
        push_event(mem, now + t.run_times[GF_WAKEUP], EV_WAKE, w, now)
    else:
        wake(mem, w, now)


@njit(**JIT_HOT)
def give_up_scheduler(mem, w, now):
    """Worker ``w`` leaves its scheduler; the next runnable worker gets it."""
    t = tables(mem)
    s = t.workers[w, W_SCHEDULER]
    t.schedulers[s, S_RUNNING_WORKER] = -1
    try_dispatch(mem, s, now)


@njit(**JIT_CALL)
def yield_scheduler(mem, w, now):
    """``w`` used up its quantum and another worker is runnable: go to the tail of the queue."""
    t = tables(mem)
    workers, worker_times = t.workers, t.worker_times
    s = workers[w, W_SCHEDULER]
    t.run_cells[G_YIELDS] += 1
    workers[w, W_FLAG] = FLAG_YIELDED
    worker_times[w, WF_SIGNALLED_AT] = now
    t.schedulers[s, S_RUNNING_WORKER] = -1
    make_runnable(mem, w, False, now)
    try_dispatch(mem, s, now)


@njit(**JIT_CALL)
def leave_scheduler_waiting(mem, w, pc, now):
    """``w`` suspends (its program goes on at ``pc`` when it runs again) and gives its scheduler up."""
    tables(mem).workers[w, W_PROGRAM_COUNTER] = pc
    set_state(mem, w, SUSPENDED, now)
    give_up_scheduler(mem, w, now)


@njit(**JIT_CALL)
def sleep_worker(mem, w, dur, now):
    """``w`` leaves its scheduler for ``dur`` us (outside SQL Server: no wait type counts it)."""
    t = tables(mem)
    t.worker_times[w, WF_SLEPT] += dur
    set_state(mem, w, SLEEPING, now)
    give_up_scheduler(mem, w, now)
    push_event(mem, now + dur, EV_SLEEP_DONE, w, now)


@njit(**JIT_CALL)
def on_sleep_done(mem, w, now):
    """A sleep or a preemptive OS call is over: ``w`` joins the tail of its scheduler's runnable queue.

    It goes there as a new request would.  A worker in an OS call has been
    SUSPENDED since the call (a sleeper is SLEEPING): its wait began at its
    last change of state.
    """
    t = tables(mem)
    if t.workers[w, W_STATE] == SUSPENDED:  # the longest OS wait is taken as waits end (and at a cut: finish)
        t.run_times[GF_OS_MAXWAIT] = max(t.run_times[GF_OS_MAXWAIT], now - t.worker_times[w, WF_STATE_SINCE])
    make_runnable(mem, w, False, now)
    try_dispatch(mem, t.workers[w, W_SCHEDULER], now)


@njit(**JIT_CALL)
def cpu_demand(schedulers, s):
    """Workers running or runnable on scheduler ``s``."""
    return schedulers[s, S_RUNNABLE_COUNT] + (1 if schedulers[s, S_RUNNING_WORKER] >= 0 else 0)


@njit(**JIT_CALL)
def on_arrival(mem, w, now):
    """A task arrives: bind it to its scheduler and make it runnable.

    An unbound task goes to the least-loaded scheduler: the fewest workers
    running or runnable, then the fewest tasks, then the lowest index.
    """
    t = tables(mem)
    workers, schedulers = t.workers, t.schedulers
    s = workers[w, W_SCHEDULER]
    if s < 0:
        s = 0
        for k in range(1, schedulers.shape[0]):
            dk, ds = cpu_demand(schedulers, k), cpu_demand(schedulers, s)
            if dk < ds or (dk == ds and schedulers[k, S_LOAD] < schedulers[s, S_LOAD]):
                s = k
        workers[w, W_SCHEDULER] = s
    schedulers[s, S_LOAD] += 1
    t.worker_times[w, WF_STATE_SINCE] = now
    make_runnable(mem, w, False, now)
    try_dispatch(mem, s, now)
