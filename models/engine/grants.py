"""The memory-grant semaphore: query memory in KB, a target, a hard limit and a FIFO grant queue.

SQL Server gives a query its memory grant from its resource pool's resource
semaphore before the query starts, and returns it when the query ends.  A
request is granted at once only if nobody is queued and the grant fits under
the semaphore's target; otherwise it joins a first-in, first-out queue (even
when memory is free), shown as RESOURCE_SEMAPHORE waits.  At the time-out a
waiting query is forced its required minimum if that fits under the limit,
else it fails with error 8645 (Microsoft Learn, sys.dm_exec_query_memory_grants
and CREATE WORKLOAD GROUP).  These kernels only keep the books over the state
tables; :mod:`models.engine` suspends, wakes and times out the workers.
"""

from __future__ import annotations

from numba import njit

from models.engine.events import push_event
from models.engine.jit import JIT_CALL
from models.engine.scheduler import signal
from models.engine.state import (
    EV_TIMEOUT, FLAG_NONE, GF_SEM_MAXWAIT, GF_SEM_WAIT, GL_GRANTED, GL_TIME, GL_WAITERS, GRANT_FAILED,
    GRANT_FORCED, GRANT_GRANTED, GRANT_WAITING, G_SEM_FORCED, G_SEM_GRANTED, G_SEM_LIMIT, G_SEM_LOGN,
    G_SEM_QHEAD, G_SEM_QLEN, G_SEM_QTAIL, G_SEM_TARGET, G_SEM_TIMEOUTS, G_SEM_WAITS, WF_GDEADLINE, WF_GREQ,
    WF_GTIMER, WF_GWAIT, W_GNEED, W_GNEXT, W_GRANTED, W_GWANT, W_OUTCOME, tables,
)

_JIT = dict(cache=True, _nrt=False, error_model="numpy", inline="always")  # small: inlined where used


@njit(**_JIT)
def log(run_cells, glog, now):
    """Note the semaphore's state after a change (the log is bounded: once full it stops)."""
    n = run_cells[G_SEM_LOGN]
    if n < glog.shape[0]:
        glog[n, GL_TIME] = now
        glog[n, GL_GRANTED] = run_cells[G_SEM_GRANTED]
        glog[n, GL_WAITERS] = run_cells[G_SEM_QLEN]
        run_cells[G_SEM_LOGN] = n + 1


@njit(**_JIT)
def fits_now(run_cells, kb):
    """A new request of ``kb`` is granted at once: nobody queued, and it fits under the target."""
    return run_cells[G_SEM_QLEN] == 0 and run_cells[G_SEM_GRANTED] + kb <= run_cells[G_SEM_TARGET]


@njit(**_JIT)
def give(run_cells, workers, w, kb, outcome):
    """Grant ``kb`` to worker ``w`` with ``outcome`` (granted or forced)."""
    run_cells[G_SEM_GRANTED] += kb
    workers[w, W_GRANTED] = kb
    workers[w, W_OUTCOME] = outcome


@njit(**_JIT)
def take_back(run_cells, workers, w):
    """Return worker ``w``'s grant to the semaphore."""
    run_cells[G_SEM_GRANTED] -= workers[w, W_GRANTED]
    workers[w, W_GRANTED] = 0


@njit(**_JIT)
def enqueue(run_cells, workers, w):
    """Put ``w`` at the tail of the grant queue."""
    workers[w, W_GNEXT] = -1
    workers[w, W_OUTCOME] = GRANT_WAITING
    if run_cells[G_SEM_QTAIL] >= 0:
        workers[run_cells[G_SEM_QTAIL], W_GNEXT] = w
    else:
        run_cells[G_SEM_QHEAD] = w
    run_cells[G_SEM_QTAIL] = w
    run_cells[G_SEM_QLEN] += 1


@njit(**_JIT)
def head_fits(run_cells, workers):
    """The queue's head (or -1) if its request now fits under the target."""
    head = run_cells[G_SEM_QHEAD]
    if head >= 0 and run_cells[G_SEM_GRANTED] + workers[head, W_GWANT] <= run_cells[G_SEM_TARGET]:
        return head
    return -1


@njit(**_JIT)
def remove(run_cells, workers, w):
    """Take ``w`` out of the grant queue, wherever it stands (the queue is short: a walk is enough)."""
    prev, k = -1, run_cells[G_SEM_QHEAD]
    while k >= 0 and k != w:
        prev, k = k, workers[k, W_GNEXT]
    if k < 0:
        return
    after = workers[w, W_GNEXT]
    if prev >= 0:
        workers[prev, W_GNEXT] = after
    else:
        run_cells[G_SEM_QHEAD] = after
    if run_cells[G_SEM_QTAIL] == w:
        run_cells[G_SEM_QTAIL] = prev
    workers[w, W_GNEXT] = -1
    run_cells[G_SEM_QLEN] -= 1


# ---------------------------------------------------------------- waiting for a grant


@njit(**JIT_CALL)
def end_wait_for_grant(mem, w, now):
    """``w``'s RESOURCE_SEMAPHORE wait is over (granted, forced or failed): count it and signal ``w``."""
    t = tables(mem)
    run_cells, run_times, worker_times = t.run_cells, t.run_times, t.worker_times
    wait = now - worker_times[w, WF_GREQ]
    worker_times[w, WF_GWAIT] = wait
    run_cells[G_SEM_WAITS] += 1
    run_times[GF_SEM_WAIT] += wait
    if wait > run_times[GF_SEM_MAXWAIT]:
        run_times[GF_SEM_MAXWAIT] = wait
    signal(mem, w, FLAG_NONE, now)


@njit(**JIT_CALL)
def serve_grants(mem, now):
    """Grant the queue's requests in order while the head fits under the target (FIFO: no skipping)."""
    t = tables(mem)
    run_cells, workers = t.run_cells, t.workers
    while True:
        head = head_fits(run_cells, workers)
        if head < 0:
            break
        remove(run_cells, workers, head)
        give(run_cells, workers, head, workers[head, W_GWANT], GRANT_GRANTED)
        end_wait_for_grant(mem, head, now)
    log(run_cells, t.glog, now)


@njit(**JIT_CALL)
def on_grant_timeout(mem, w, now):
    """A grant request's time-out fires.

    A request still queued leaves the queue and is forced its required
    minimum if that fits under the limit, else it fails (error 8645).  A
    worker keeps one timer at a time: a timer left from a request that was
    granted in time finds no request at its deadline and re-arms for the
    worker's next request, if it has one.
    """
    t = tables(mem)
    run_cells, workers, worker_times = t.run_cells, t.workers, t.worker_times
    worker_times[w, WF_GTIMER] = -1.0
    if workers[w, W_OUTCOME] != GRANT_WAITING:
        return
    if worker_times[w, WF_GDEADLINE] > now:
        worker_times[w, WF_GTIMER] = worker_times[w, WF_GDEADLINE]
        push_event(mem, worker_times[w, WF_GDEADLINE], EV_TIMEOUT, w, now)
        return
    remove(run_cells, workers, w)
    if run_cells[G_SEM_GRANTED] + workers[w, W_GNEED] <= run_cells[G_SEM_LIMIT]:
        give(run_cells, workers, w, workers[w, W_GNEED], GRANT_FORCED)
        run_cells[G_SEM_FORCED] += 1
    else:
        workers[w, W_OUTCOME] = GRANT_FAILED
        run_cells[G_SEM_TIMEOUTS] += 1
    end_wait_for_grant(mem, w, now)
    serve_grants(mem, now)
