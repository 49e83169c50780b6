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

from models.state import (
    G_SEM_GRANTED, G_SEM_LOGN, G_SEM_QHEAD, G_SEM_QLEN, G_SEM_QTAIL, G_SEM_TARGET, GL_GRANTED, GL_TIME,
    GL_WAITERS, GRANT_WAITING, W_GNEXT, W_GRANTED, W_GWANT, W_OUTCOME,
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
