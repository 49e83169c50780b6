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
def log(gi, glog, now):
    """Note the semaphore's state after a change (the log is bounded: once full it stops)."""
    n = gi[G_SEM_LOGN]
    if n < glog.shape[0]:
        glog[n, GL_TIME] = now
        glog[n, GL_GRANTED] = gi[G_SEM_GRANTED]
        glog[n, GL_WAITERS] = gi[G_SEM_QLEN]
        gi[G_SEM_LOGN] = n + 1


@njit(**_JIT)
def fits_now(gi, kb):
    """A new request of ``kb`` is granted at once: nobody queued, and it fits under the target."""
    return gi[G_SEM_QLEN] == 0 and gi[G_SEM_GRANTED] + kb <= gi[G_SEM_TARGET]


@njit(**_JIT)
def give(gi, wi, w, kb, outcome):
    """Grant ``kb`` to worker ``w`` with ``outcome`` (granted or forced)."""
    gi[G_SEM_GRANTED] += kb
    wi[w, W_GRANTED] = kb
    wi[w, W_OUTCOME] = outcome


@njit(**_JIT)
def take_back(gi, wi, w):
    """Return worker ``w``'s grant to the semaphore."""
    gi[G_SEM_GRANTED] -= wi[w, W_GRANTED]
    wi[w, W_GRANTED] = 0


@njit(**_JIT)
def enqueue(gi, wi, w):
    """Put ``w`` at the tail of the grant queue."""
    wi[w, W_GNEXT] = -1
    wi[w, W_OUTCOME] = GRANT_WAITING
    if gi[G_SEM_QTAIL] >= 0:
        wi[gi[G_SEM_QTAIL], W_GNEXT] = w
    else:
        gi[G_SEM_QHEAD] = w
    gi[G_SEM_QTAIL] = w
    gi[G_SEM_QLEN] += 1


@njit(**_JIT)
def head_fits(gi, wi):
    """The queue's head (or -1) if its request now fits under the target."""
    head = gi[G_SEM_QHEAD]
    if head >= 0 and gi[G_SEM_GRANTED] + wi[head, W_GWANT] <= gi[G_SEM_TARGET]:
        return head
    return -1


@njit(**_JIT)
def remove(gi, wi, w):
    """Take ``w`` out of the grant queue, wherever it stands (the queue is short: a walk is enough)."""
    prev, k = -1, gi[G_SEM_QHEAD]
    while k >= 0 and k != w:
        prev, k = k, wi[k, W_GNEXT]
    if k < 0:
        return
    after = wi[w, W_GNEXT]
    if prev >= 0:
        wi[prev, W_GNEXT] = after
    else:
        gi[G_SEM_QHEAD] = after
    if gi[G_SEM_QTAIL] == w:
        gi[G_SEM_QTAIL] = prev
    wi[w, W_GNEXT] = -1
    gi[G_SEM_QLEN] -= 1


# ---------------------------------------------------------------- waiting for a grant


@njit(**JIT_CALL)
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


@njit(**JIT_CALL)
def serve_grants(mem, now):
    """Grant the queue's requests in order while the head fits under the target (FIFO: no skipping)."""
    t = tables(mem)
    gi, wi = t.gi, t.wi
    while True:
        head = head_fits(gi, wi)
        if head < 0:
            break
        remove(gi, wi, head)
        give(gi, wi, head, wi[head, W_GWANT], GRANT_GRANTED)
        end_wait_for_grant(mem, head, now)
    log(gi, t.glog, now)


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
    gi, wi, wf = t.gi, t.wi, t.wf
    wf[w, WF_GTIMER] = -1.0
    if wi[w, W_OUTCOME] != GRANT_WAITING:
        return
    if wf[w, WF_GDEADLINE] > now:
        wf[w, WF_GTIMER] = wf[w, WF_GDEADLINE]
        push_event(mem, wf[w, WF_GDEADLINE], EV_TIMEOUT, w, now)
        return
    remove(gi, wi, w)
    if gi[G_SEM_GRANTED] + wi[w, W_GNEED] <= gi[G_SEM_LIMIT]:
        give(gi, wi, w, wi[w, W_GNEED], GRANT_FORCED)
        gi[G_SEM_FORCED] += 1
    else:
        wi[w, W_OUTCOME] = GRANT_FAILED
        gi[G_SEM_TIMEOUTS] += 1
    end_wait_for_grant(mem, w, now)
    serve_grants(mem, now)
