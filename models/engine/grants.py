"""The memory-grant semaphore: query memory in KB, a target, a limit, and wait queues by cost.

SQL Server gives a query its memory grant from its resource pool's resource
semaphore before the query starts, and returns it when the query ends.  A
request is granted at once only if nobody waits and the grant fits under the
semaphore's target; otherwise it waits (RESOURCE_SEMAPHORE), even when memory
is free.  Waiting queries are held in several queues by estimated cost
(sys.dm_exec_query_memory_grants' queue_id and wait_order), cheaper queries
served first ("Query Execution Timeouts in SQL Server", SQL Server engine
blog, 2006): the next candidate is the head of the cheapest queue that has
waiters, first in, first out within a queue, and a candidate that does not
fit blocks every query behind it.  The program says which queue a request
joins (GRANT's operand c); the cost boundaries between queues are not
documented in the book's sources, so the scenario chooses.

At the time-out a waiting query is forced its required minimum if the
semaphore's total stays under the limit, else it fails with error 8645
(Microsoft Learn, sys.dm_exec_query_resource_semaphores: forced_grant_count,
timeout_error_count).  What the limit is, is the scenario's choice: the
sources say only that a forced grant is given "if it can" be.  These kernels
only keep the books over the state tables; :mod:`models.engine` suspends,
wakes and times out the workers.
"""

from __future__ import annotations

from numba import njit

from models.engine.events import push_event
from models.engine.jit import JIT_CALL, JIT_INLINE
from models.engine.scheduler import signal
from models.engine.state import (
    EV_TIMEOUT, FLAG_NONE, GF_SEM_MAXWAIT, GF_SEM_WAIT, GL_GRANTED, GL_TIME, GL_WAITERS, GRANT_FAILED, GRANT_FORCED,
    GRANT_GRANTED, GRANT_QUEUES, GRANT_WAITING, G_SEM_FORCED, G_SEM_GRANTED, G_SEM_LIMIT, G_SEM_LOG_USED,
    G_SEM_QUEUE_HEADS, G_SEM_WAITING, G_SEM_QUEUE_TAILS, G_SEM_TARGET, G_SEM_TIMEOUTS, G_SEM_WAITS,
    WF_GRANT_DEADLINE, WF_GRANT_REQUESTED_AT, WF_GRANT_TIMER, WF_GRANT_WAIT, W_GRANT_NEEDED_KB, W_GRANT_QUEUE_NEXT,
    W_GRANT_QUEUE, W_GRANTED_KB, W_GRANT_WANTED_KB, W_GRANT_OUTCOME, tables,
)

_JIT = JIT_INLINE  # small: inlined where used


@njit(**_JIT)
def log(run_cells, glog, now):
    """Note the semaphore's state after a change (the log is bounded: once full it stops)."""
    n = run_cells[G_SEM_LOG_USED]
    if n < glog.shape[0]:
        glog[n, GL_TIME] = now
        glog[n, GL_GRANTED] = run_cells[G_SEM_GRANTED]
        glog[n, GL_WAITERS] = run_cells[G_SEM_WAITING]
        run_cells[G_SEM_LOG_USED] = n + 1


@njit(**_JIT)
def fits_now(run_cells, kb):
    """A new request of ``kb`` is granted at once: nobody queued in any queue, and it fits under the target."""
    return run_cells[G_SEM_WAITING] == 0 and run_cells[G_SEM_GRANTED] + kb <= run_cells[G_SEM_TARGET]


@njit(**_JIT)
def give(run_cells, workers, w, kb, outcome):
    """Grant ``kb`` to worker ``w`` with ``outcome`` (granted or forced)."""
    run_cells[G_SEM_GRANTED] += kb
    workers[w, W_GRANTED_KB] = kb
    workers[w, W_GRANT_OUTCOME] = outcome


@njit(**_JIT)
def take_back(run_cells, workers, w):
    """Return worker ``w``'s grant to the semaphore."""
    run_cells[G_SEM_GRANTED] -= workers[w, W_GRANTED_KB]
    workers[w, W_GRANTED_KB] = 0


@njit(**_JIT)
def enqueue(run_cells, workers, w, queue):
    """Put ``w`` at the tail of grant queue ``queue`` (0 is served first)."""
    workers[w, W_GRANT_QUEUE_NEXT] = -1
    workers[w, W_GRANT_QUEUE] = queue
    workers[w, W_GRANT_OUTCOME] = GRANT_WAITING
    tail = run_cells[G_SEM_QUEUE_TAILS + queue]
    if tail >= 0:
        workers[tail, W_GRANT_QUEUE_NEXT] = w
    else:
        run_cells[G_SEM_QUEUE_HEADS + queue] = w
    run_cells[G_SEM_QUEUE_TAILS + queue] = w
    run_cells[G_SEM_WAITING] += 1


@njit(**_JIT)
def next_candidate(run_cells):
    """The next query to be granted: the head of the cheapest queue with waiters (-1 if nobody waits)."""
    for queue in range(GRANT_QUEUES):
        if run_cells[G_SEM_QUEUE_HEADS + queue] >= 0:
            return run_cells[G_SEM_QUEUE_HEADS + queue]
    return -1


@njit(**_JIT)
def head_fits(run_cells, workers):
    """The next candidate (or -1) if its request now fits under the target; nobody is taken past it."""
    head = next_candidate(run_cells)
    if head >= 0 and run_cells[G_SEM_GRANTED] + workers[head, W_GRANT_WANTED_KB] <= run_cells[G_SEM_TARGET]:
        return head
    return -1


@njit(**_JIT)
def remove(run_cells, workers, w):
    """Take ``w`` out of its grant queue, wherever it stands (a queue is short: a walk is enough)."""
    queue = workers[w, W_GRANT_QUEUE]
    prev, k = -1, run_cells[G_SEM_QUEUE_HEADS + queue]
    while k >= 0 and k != w:
        prev, k = k, workers[k, W_GRANT_QUEUE_NEXT]
    if k < 0:
        return
    after = workers[w, W_GRANT_QUEUE_NEXT]
    if prev >= 0:
        workers[prev, W_GRANT_QUEUE_NEXT] = after
    else:
        run_cells[G_SEM_QUEUE_HEADS + queue] = after
    if run_cells[G_SEM_QUEUE_TAILS + queue] == w:
        run_cells[G_SEM_QUEUE_TAILS + queue] = prev
    workers[w, W_GRANT_QUEUE_NEXT] = -1
    run_cells[G_SEM_WAITING] -= 1


# ---------------------------------------------------------------- waiting for a grant


@njit(**JIT_CALL)
def end_wait_for_grant(mem, w, now):
    """``w``'s RESOURCE_SEMAPHORE wait is over (granted, forced or failed): count it and signal ``w``."""
    t = tables(mem)
    run_cells, run_times, worker_times = t.run_cells, t.run_times, t.worker_times
    wait = now - worker_times[w, WF_GRANT_REQUESTED_AT]
    worker_times[w, WF_GRANT_WAIT] = wait
    run_cells[G_SEM_WAITS] += 1
    run_times[GF_SEM_WAIT] += wait
    if wait > run_times[GF_SEM_MAXWAIT]:
        run_times[GF_SEM_MAXWAIT] = wait
    signal(mem, w, FLAG_NONE, now)


@njit(**JIT_CALL)
def serve_grants(mem, now):
    """Grant waiting requests, cheapest queue first and in order within it, while the next one fits under the target.

    No skipping: a next candidate that does not fit keeps every query behind it (in its queue and in costlier
    ones) waiting, even one whose request would fit.
    """
    t = tables(mem)
    run_cells, workers = t.run_cells, t.workers
    while True:
        head = head_fits(run_cells, workers)
        if head < 0:
            break
        remove(run_cells, workers, head)
        give(run_cells, workers, head, workers[head, W_GRANT_WANTED_KB], GRANT_GRANTED)
        end_wait_for_grant(mem, head, now)
    log(run_cells, t.glog, now)


@njit(**JIT_CALL)
def on_grant_timeout(mem, w, now):
    """A grant request's time-out fires.

    A request still queued leaves its queue and is forced its required
    minimum if the semaphore's total stays under the limit, else it fails
    (error 8645).  A
    worker keeps one timer at a time: a timer left from a request that was
    granted in time finds no request at its deadline and re-arms for the
    worker's next request, if it has one.
    """
    t = tables(mem)
    run_cells, workers, worker_times = t.run_cells, t.workers, t.worker_times
    worker_times[w, WF_GRANT_TIMER] = -1.0
    if workers[w, W_GRANT_OUTCOME] != GRANT_WAITING:
        return
    if worker_times[w, WF_GRANT_DEADLINE] > now:
        worker_times[w, WF_GRANT_TIMER] = worker_times[w, WF_GRANT_DEADLINE]
        push_event(mem, worker_times[w, WF_GRANT_DEADLINE], EV_TIMEOUT, w, now)
        return
    remove(run_cells, workers, w)
    if run_cells[G_SEM_GRANTED] + workers[w, W_GRANT_NEEDED_KB] <= run_cells[G_SEM_LIMIT]:
        give(run_cells, workers, w, workers[w, W_GRANT_NEEDED_KB], GRANT_FORCED)
        run_cells[G_SEM_FORCED] += 1
    else:
        workers[w, W_GRANT_OUTCOME] = GRANT_FAILED
        run_cells[G_SEM_TIMEOUTS] += 1
    end_wait_for_grant(mem, w, now)
    serve_grants(mem, now)
