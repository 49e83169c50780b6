"""A query's instructions: its memory grant (GRANT, FREE), its parallel workers (FORK, JOIN), OS calls (OSCALL).

A coordinator asks the memory-grant semaphore (:mod:`models.engine.grants`)
for its query's grant, waiting in one of its queues by cost with a time-out timer; once
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
    G_OS_CALLS, G_OS_WAITS, P_A, P_B, P_C, P_OP, SF_BUSY, SUSPENDED, WF_CPU, WF_GRANT_DEADLINE,
    WF_GRANT_REQUESTED_AT, WF_GRANT_TIMER, WF_GRANT_WAIT, WF_JOIN_STARTED_AT, WF_KERNEL, WF_OS_CALL_START,
    WF_OS_WAIT, W_CHILDREN, W_GRANT_NEEDED_KB, W_GRANT_WANTED_KB, W_PARENT, W_PROGRAM_COUNTER, W_SCHEDULER, W_STATE,
    tables,
)


@njit(**JIT_CALL)
def end_child(mem, parent, now):
    """A forked worker ended: the last one wakes its parent if the parent waits at its JOIN."""
    t = tables(mem)
    workers, worker_times, run_times = t.workers, t.worker_times, t.run_times
    workers[parent, W_CHILDREN] -= 1
    if workers[parent, W_CHILDREN] > 0 or workers[parent, W_STATE] != SUSPENDED:
        return
    if t.prog_i[workers[parent, W_PROGRAM_COUNTER] - 1, P_OP] != JOIN:
        return
    wait = now - worker_times[parent, WF_JOIN_STARTED_AT]
    t.run_cells[G_JOIN_WAITS] += 1
    run_times[GF_JOIN_WAIT] += wait
    if wait > run_times[GF_JOIN_MAXWAIT]:
        run_times[GF_JOIN_MAXWAIT] = wait
    signal(mem, parent, FLAG_NONE, now)


@njit(**JIT_CALL)
def query_step(mem, w, pc, now):
    """Run one query instruction (GRANT, FREE, FORK, JOIN, OSCALL); the next address, or -1 if ``w`` stopped."""
    t = tables(mem)
    run_cells, run_times, workers, worker_times = t.run_cells, t.run_times, t.workers, t.worker_times
    prog_i = t.prog_i
    op = prog_i[pc, P_OP]
    if op == GRANT:
        requested_kb, required_kb, queue, timeout_us = prog_i[pc, P_A], prog_i[pc, P_B], prog_i[pc, P_C], t.prog_x[pc]
        workers[w, W_GRANT_WANTED_KB] = requested_kb
        workers[w, W_GRANT_NEEDED_KB] = required_kb
        worker_times[w, WF_GRANT_REQUESTED_AT] = now
        worker_times[w, WF_GRANT_WAIT] = 0.0
        if grants.fits_now(run_cells, requested_kb):
            grants.give(run_cells, workers, w, requested_kb, GRANT_GRANTED)
            grants.log(run_cells, t.glog, now)
            return pc + 1
        grants.enqueue(run_cells, workers, w, queue)
        grants.log(run_cells, t.glog, now)
        deadline = now + timeout_us
        worker_times[w, WF_GRANT_DEADLINE] = deadline
        if worker_times[w, WF_GRANT_TIMER] <= now:  # no timer pending (one left from an earlier request re-arms itself)
            worker_times[w, WF_GRANT_TIMER] = deadline
            push_event(mem, deadline, EV_TIMEOUT, w, now)
        leave_scheduler_waiting(mem, w, pc + 1, now)
        return -1
    if op == FREE:
        grants.take_back(run_cells, workers, w)
        serve_grants(mem, now)
        return pc + 1
    if op == FORK:
        child_start, n_children = prog_i[pc, P_A], prog_i[pc, P_C]  # the children are the workers after ``w``
        for k in range(1, n_children + 1):
            child = w + k
            workers[child, W_PARENT] = w
            # (its arrival stays infinite: the arrival list never takes it)
            workers[child, W_PROGRAM_COUNTER] = child_start
            push_event(mem, now, EV_START, child, now)
        workers[w, W_CHILDREN] += n_children
        run_cells[G_MAIN_LEFT] += n_children
        return pc + 1
    if op == JOIN:
        if workers[w, W_CHILDREN] == 0:
            return pc + 1
        worker_times[w, WF_JOIN_STARTED_AT] = now
        leave_scheduler_waiting(mem, w, pc + 1, now)
        return -1
    # OSCALL: first come, first served through one path; the worker's own call ends at ``done``.
    how, dist, mean_us = prog_i[pc, P_A], prog_i[pc, P_B], t.prog_x[pc]
    work = draw(t.rng, run_times, GF_LOG_AHEAD, dist, mean_us)
    start = max(now, run_times[GF_OS_FREE])
    done = start + work
    run_times[GF_OS_FREE] = done
    run_times[GF_OS_BUSY] += work
    run_times[GF_OS_QUEUE] += start - now
    run_cells[G_OS_CALLS] += 1
    worker_times[w, WF_OS_CALL_START] = start
    dur = done - now
    if how == OS_SPIN:  # in the kernel on this worker's thread: its scheduler stays busy
        workers[w, W_PROGRAM_COUNTER] = pc + 1
        worker_times[w, WF_CPU] += dur
        worker_times[w, WF_KERNEL] += dur
        run_times[GF_OS_KERNEL] += dur
        t.scheduler_times[workers[w, W_SCHEDULER], SF_BUSY] += dur
        push_event(mem, done, EV_CPU_DONE, w, now)
    else:  # preemptive: the scheduler is free meanwhile, and the time is a wait (its maximum: on_sleep_done)
        worker_times[w, WF_OS_WAIT] += dur
        run_times[GF_OS_KERNEL] += work
        run_times[GF_OS_WAIT] += dur
        run_cells[G_OS_WAITS] += 1
        leave_scheduler_waiting(mem, w, pc + 1, now)
        push_event(mem, done, EV_SLEEP_DONE, w, now)
    return -1
