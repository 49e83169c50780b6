"""A query's instructions: its memory grant (GRANT, FREE), its parallel workers (FORK, JOIN), OS calls (OSCALL).

A coordinator asks the memory-grant semaphore (:mod:`models.engine.grants`)
for its query's grant, waiting in its FIFO queue with a time-out timer; once
granted or forced it starts its parallel workers (FORK), waits for them
(JOIN) and frees the grant.  An OS call waits its turn in one serialised
path, spinning (CPU) or preemptively (a wait).  These run off the latch
path; a run that uses none of them does exactly what it did before they existed.
"""

from __future__ import annotations

from numba import njit

from models.engine import grants
from models.engine.events import push_event
from models.engine.grants import serve_grants
from models.engine.jit import JIT_CALL
from models.engine.program import FORK, FREE, GRANT, JOIN, OS_SPIN
from models.engine.rng import draw
from models.engine.scheduler import leave_scheduler_waiting, signal
from models.engine.state import (
    EV_CPU_DONE, EV_SLEEP_DONE, EV_START, EV_TIMEOUT, FLAG_NONE, GF_JOIN_MAXWAIT, GF_JOIN_WAIT, GF_LOG_AHEAD,
    GF_OS_BUSY, GF_OS_FREE, GF_OS_KERNEL, GF_OS_QUEUE, GF_OS_WAIT, GRANT_GRANTED, G_JOIN_WAITS, G_MAIN_LEFT,
    G_OS_CALLS, G_OS_WAITS, SF_BUSY, SUSPENDED, WF_CPU, WF_GDEADLINE, WF_GREQ, WF_GTIMER, WF_GWAIT, WF_JOINT,
    WF_KERNEL, WF_OSSTART, WF_OSWAIT, W_CHILDREN, W_GNEED, W_GWANT, W_PARENT, W_PC, W_SCHED, W_STATE, tables,
)


@njit(**JIT_CALL)
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


@njit(**JIT_CALL)
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
        if grants.fits_now(gi, a):
            grants.give(gi, wi, w, a, GRANT_GRANTED)
            grants.log(gi, t.glog, now)
            return pc + 1
        grants.enqueue(gi, wi, w)
        grants.log(gi, t.glog, now)
        deadline = now + t.prog_x[pc]
        wf[w, WF_GDEADLINE] = deadline
        if wf[w, WF_GTIMER] <= now:  # no timer pending (one left from an earlier request re-arms itself)
            wf[w, WF_GTIMER] = deadline
            push_event(mem, deadline, EV_TIMEOUT, w, now)
        leave_scheduler_waiting(mem, w, pc + 1, now)
        return -1
    if op == FREE:
        grants.take_back(gi, wi, w)
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
