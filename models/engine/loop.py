"""The event loop: SQLOS schedulers running worker programs against latches, one compiled loop for every scenario.

A scheduler runs one worker at a time and never pre-empts it: the worker gives it up when it suspends on a
latch, ends, or yields with its quantum used up while another worker is runnable (SOS_SCHEDULER_YIELD).  A
RUNNABLE -> RUNNING switch costs ``context_switch_us``; a signalled worker is runnable ``wakeup_us`` later, at
the head of its queue (at most 1000 times in a row).  Simultaneous events run in the order they were
scheduled, arrivals first.  Latch policies are :mod:`models.engine.latch`'s; grants, forked workers and OS
calls run in :func:`query_step` (:mod:`models.engine.queries`) with two timer events (:func:`on_timer`).  A
run that stops early keeps the elapsed part of what was under way, though a switch, a burst, a spin, a sleep
or an OS call is charged in full when it starts (:func:`finish`).  The hot chain is inlined into
:func:`run_events` for speed; ``benchmarks/loop_design.md`` says how and what each step measured.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.btree import index_step
from models.engine.events import WORKER_MASK, next_event_time, pop_event, push_event
from models.engine.grants import on_grant_timeout
from models.engine.jit import JIT_CALL, JIT_INLINE, branch_without_jump_tables
from models.engine.latch import acquire, complete_acquire, on_spin_done, release, spin_round
from models.engine.program import ACQUIRE, CPU, END, GRANT, LOOP, OSCALL, RELEASE, SCALED, SLEEP, UNIT, YIELD
from models.engine.queries import end_child, query_step
from models.engine.rng import draw
from models.engine.scheduler import (
    give_up_scheduler, on_arrival, on_sleep_done, set_state, sleep_worker, wake, yield_scheduler,
)
from models.engine.state import (
    DONE, EV_BACKOFF_DONE, EV_CPU_DONE, EV_DISPATCHED, EV_SLEEP_DONE, EV_SPIN_DONE, EV_START, EV_WAKE,
    EV_WORKER_BITS, FLAG_GRANTED, FLAG_NONE, FLAG_RETRY, FLAG_YIELDED, GF_END, GF_FRONT_TIME, GF_LOG_AHEAD,
    GF_MAX_TIME, GF_NOW, GF_OS_BUSY, GF_OS_KERNEL, GF_OS_MAXWAIT, GF_OS_QUEUE, GF_OS_WAIT, GF_QUANTUM, GF_YIELD_MAX,
    GF_YIELD_WAIT, G_EVENTS, G_FRONT_FULL, G_FRONT_KEY, G_HEAP_LENGTH, G_MAIN_LEFT, G_NEXT_ARRIVAL, G_RING_HEAD,
    G_RING_LENGTH, G_STATUS, G_UNITS_DONE, LF_CONTENDER_COST, LF_SPIN_US, L_QUEUE_LENGTH, L_SPINNERS, L_SPINS,
    L_SPINS_PER_ROUND, NEW, P_A, P_B, P_C, P_OP, SF_BUSY, STATUS_CHUNK, STATUS_DONE, STATUS_EVENT_BOUND,
    STATUS_STUCK, STATUS_TIME_BOUND, SUSPENDED, S_RUNNABLE_HEAD, S_LOAD, WF_ARRIVAL, WF_CPU, WF_KERNEL,
    WF_OS_CALL_START, WF_OS_WAIT, WF_QUANTUM_START, WF_SIGNAL_WAIT_SO_FAR, WF_SLEPT, WF_SPIN, WF_REQUESTED_AT,
    WF_SIGNALLED_AT, WF_STATE_SINCE, WF_SUSPENDED_AT, WF_WAIT_SO_FAR, W_BACKOFFS, W_DAEMON, W_FLAG, W_LATCH,
    W_LOOP0, W_MODE, W_PARENT, W_PROGRAM_COUNTER, W_REGISTER0, W_SCALE, W_SCHEDULER, W_STATE, W_WAITED, tables,
)


@njit(**JIT_INLINE)
def execute(mem, w, now):
    """Run worker ``w``'s program from its program counter until it must wait for time.

    The common instructions are handled here; the rare outcomes (the latch is
    taken, the quantum is up with others waiting, END) call kernels of their own.
    """
    t = tables(mem)
    workers, worker_times, schedulers, scheduler_times = t.workers, t.worker_times, t.schedulers, t.scheduler_times
    latches, latch_times, prog_i, prog_x = t.latches, t.latch_times, t.prog_i, t.prog_x
    s = workers[w, W_SCHEDULER]
    pc = workers[w, W_PROGRAM_COUNTER]  # kept in a register; written back before every exit
    while True:
        op = prog_i[pc, P_OP]
        if op == CPU:
            dist, us = prog_i[pc, P_A], prog_x[pc]  # SCALED: us per row the last SPLIT moved
            if dist == SCALED:
                dur = us * workers[w, W_SCALE]
            else:
                dur = draw(t.rng, t.run_times, GF_LOG_AHEAD, dist, us)
            contended = -1  # a latch whose every contender adds to the burst
            if prog_i[pc, P_C]:
                contended = prog_i[pc, P_B]
                if contended < 0:  # a register, as for ACQUIRE
                    contended = workers[w, W_REGISTER0 - 1 - contended]
            if contended >= 0:
                contenders = latches[contended, L_QUEUE_LENGTH] + latches[contended, L_SPINNERS]
                dur += latch_times[contended, LF_CONTENDER_COST] * contenders
            workers[w, W_PROGRAM_COUNTER] = pc + 1
            worker_times[w, WF_CPU] += dur
            scheduler_times[s, SF_BUSY] += dur
            push_event(mem, now + dur, EV_CPU_DONE, w, now)
            return
        elif op == ACQUIRE:
            latch, mode = prog_i[pc, P_A], prog_i[pc, P_B]
            if latch < 0:  # a register: the latch the index walk put there, or none
                latch = workers[w, W_REGISTER0 - 1 - latch]
                if latch < 0:
                    pc += 1
                    continue
            if workers[w, W_LATCH] != latch:  # a fresh request, not a retry after a signal
                workers[w, W_LATCH] = latch
                workers[w, W_MODE] = mode
                workers[w, W_WAITED] = 0
                workers[w, W_BACKOFFS] = 0
                worker_times[w, WF_REQUESTED_AT] = now
                worker_times[w, WF_WAIT_SO_FAR] = 0.0
                worker_times[w, WF_SIGNAL_WAIT_SO_FAR] = 0.0
            if acquire(mem, w, latch, mode, now):
                pc += 1
            else:
                workers[w, W_PROGRAM_COUNTER] = pc
                return
        elif op == RELEASE:
            latch, mode = prog_i[pc, P_A], prog_i[pc, P_B]
            if latch < 0:  # a register, as for ACQUIRE
                latch = workers[w, W_REGISTER0 - 1 - latch]
            if latch >= 0:
                release(mem, w, latch, mode, now)
            pc += 1
        elif op == YIELD:
            margin_us = prog_x[pc]  # yield this much before the quantum ends
            pc += 1
            used = now - worker_times[w, WF_QUANTUM_START]
            if used >= t.run_times[GF_QUANTUM] - margin_us:
                if schedulers[s, S_RUNNABLE_HEAD] >= 0:
                    workers[w, W_PROGRAM_COUNTER] = pc
                    yield_scheduler(mem, w, now)
                    return
                if used >= t.run_times[GF_QUANTUM]:
                    worker_times[w, WF_QUANTUM_START] = now
        elif op == LOOP:
            body, slot, times = prog_i[pc, P_A], W_LOOP0 + prog_i[pc, P_B], prog_i[pc, P_C]
            count = workers[w, slot] + 1
            if count < times:
                workers[w, slot] = count
                pc = body
            else:
                workers[w, slot] = 0
                pc += 1
        elif op == END:
            workers[w, W_PROGRAM_COUNTER] = pc
            end_worker(mem, w, now)
            return
        elif op == UNIT:
            t.run_cells[G_UNITS_DONE] += 1
            pc += 1
        elif op == SLEEP:
            dist, us = prog_i[pc, P_A], prog_x[pc]
            workers[w, W_PROGRAM_COUNTER] = pc + 1
            sleep_worker(mem, w, draw(t.rng, t.run_times, GF_LOG_AHEAD, dist, us), now)
            return
        elif op < GRANT:  # the index instructions
            pc = index_step(mem, w, pc, now)
        else:  # the query instructions: memory grants, parallel workers, OS calls
            pc = query_step(mem, w, pc, now)
            if pc < 0:
                return


@njit(**JIT_INLINE)
def on_dispatched(mem, w, now):
    """The context switch is over: ``w`` runs with a fresh quantum (and goes on executing)."""
    t = tables(mem)
    workers, worker_times, run_times = t.workers, t.worker_times, t.run_times
    worker_times[w, WF_QUANTUM_START] = now
    flag = workers[w, W_FLAG]
    if flag == FLAG_GRANTED or flag == FLAG_RETRY:
        worker_times[w, WF_WAIT_SO_FAR] += now - worker_times[w, WF_SUSPENDED_AT]
        worker_times[w, WF_SIGNAL_WAIT_SO_FAR] += now - worker_times[w, WF_SIGNALLED_AT]
    if flag == FLAG_GRANTED:
        complete_acquire(mem, w, now)
        workers[w, W_PROGRAM_COUNTER] += 1
    elif flag == FLAG_YIELDED:
        wait = now - worker_times[w, WF_SIGNALLED_AT]
        run_times[GF_YIELD_WAIT] += wait
        if wait > run_times[GF_YIELD_MAX]:
            run_times[GF_YIELD_MAX] = wait
    workers[w, W_FLAG] = FLAG_NONE


@njit(**JIT_CALL)
def end_worker(mem, w, now):
    """``w`` reached END: it is done and leaves its scheduler; the run ends with the last main worker."""
    t = tables(mem)
    run_cells = t.run_cells
    set_state(mem, w, DONE, now)
    t.schedulers[t.workers[w, W_SCHEDULER], S_LOAD] -= 1
    if t.workers[w, W_DAEMON] == 0:
        run_cells[G_MAIN_LEFT] -= 1
        if run_cells[G_MAIN_LEFT] == 0:
            t.run_times[GF_END] = now
    parent = t.workers[w, W_PARENT]
    if parent >= 0:
        end_child(mem, parent, now)
    give_up_scheduler(mem, w, now)


@njit(**JIT_CALL)
def on_timer(mem, w, kind, now):
    """A timer fires: a forked worker starts, or a grant request's time-out is due."""
    if kind == EV_START:
        on_arrival(mem, w, now)
    else:
        on_grant_timeout(mem, w, now)


@njit(**JIT_INLINE)
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
    workers, worker_times, scheduler_times, run_times = t.workers, t.worker_times, t.scheduler_times, t.run_times
    kind = (key >> EV_WORKER_BITS) & 7
    w = key & WORKER_MASK
    os_wait = kind == EV_SLEEP_DONE and workers[w, W_STATE] == SUSPENDED
    if os_wait:
        run_times[GF_OS_MAXWAIT] = max(run_times[GF_OS_MAXWAIT], end - worker_times[w, WF_STATE_SINCE])
    over = due - end
    if over <= 0.0:
        return
    s = workers[w, W_SCHEDULER]
    os_call = os_wait
    if kind == EV_DISPATCHED:  # a context switch: the scheduler's time, no worker's
        scheduler_times[s, SF_BUSY] -= over
    elif kind == EV_SPIN_DONE:  # the round's spins are spread evenly over it
        latch = workers[w, W_LATCH]
        spins, round_us = t.latches[latch, L_SPINS_PER_ROUND], t.latch_times[latch, LF_SPIN_US]
        t.latches[latch, L_SPINS] -= spins - int(spins * (round_us - over) / round_us)
        worker_times[w, WF_SPIN] -= over
        worker_times[w, WF_CPU] -= over
        scheduler_times[s, SF_BUSY] -= over
    elif kind == EV_CPU_DONE:
        worker_times[w, WF_CPU] -= over
        scheduler_times[s, SF_BUSY] -= over
        if t.prog_i[workers[w, W_PROGRAM_COUNTER] - 1, P_OP] == OSCALL:  # spinning in the kernel, queued or working
            os_call = True
            worker_times[w, WF_KERNEL] -= over
            run_times[GF_OS_KERNEL] -= over
    elif os_wait:
        worker_times[w, WF_OS_WAIT] -= over
        run_times[GF_OS_WAIT] -= over
        # the kernel's work, not the queueing
        run_times[GF_OS_KERNEL] -= due - max(worker_times[w, WF_OS_CALL_START], end)
    elif kind == EV_SLEEP_DONE:
        worker_times[w, WF_SLEPT] -= over
    if os_call:  # the serialised path: the call queued until its start, then was worked on until ``due``
        start = worker_times[w, WF_OS_CALL_START]
        run_times[GF_OS_QUEUE] -= max(start - end, 0.0)
        run_times[GF_OS_BUSY] -= due - max(start, end)


@njit(**JIT_CALL)
def finish(mem, end):
    """End the run at ``end``: keep only the elapsed part of what was under way, and close open trace intervals.

    What is under way is what the pending events end: the ring's (due now,
    at ``end``), the front slot's and the heap's.
    """
    t = tables(mem)
    run_cells, run_times, workers, ring = t.run_cells, t.run_times, t.workers, t.ring
    in_ring, in_front = run_cells[G_RING_LENGTH], run_cells[G_FRONT_FULL]
    for i in range(in_ring + in_front + run_cells[G_HEAP_LENGTH]):
        if i < in_ring:
            key, due = ring[(run_cells[G_RING_HEAD] + i) % ring.shape[0]], end
        elif i < in_ring + in_front:
            key, due = run_cells[G_FRONT_KEY], run_times[GF_FRONT_TIME]
        else:
            key, due = t.heap_k[i - in_ring - in_front], t.heap_t[i - in_ring - in_front]
        give_back_unelapsed(mem, key, due, end)
    for w in range(workers.shape[0]):
        state = workers[w, W_STATE]
        if state != DONE and state != NEW:
            set_state(mem, w, DONE, end)


@njit(**JIT_CALL)
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
    run_cells, run_times, worker_times, order, ring = t.run_cells, t.run_times, t.worker_times, t.order, t.ring
    n_arrivals = order.shape[0]
    events = run_cells[G_EVENTS]
    limit = min(max_events, chunk_end)
    max_time = run_times[GF_MAX_TIME]
    now = run_times[GF_NOW]
    k = run_cells[G_NEXT_ARRIVAL]
    t_arrival = worker_times[order[k], WF_ARRIVAL] if k < n_arrivals else np.inf
    status = STATUS_CHUNK
    while True:
        if run_cells[G_MAIN_LEFT] == 0:
            status = STATUS_DONE
            break
        if events >= limit:
            if events >= max_events:
                status = STATUS_EVENT_BOUND
            break
        if run_cells[G_RING_LENGTH] > 0:  # immediate events first
            head = run_cells[G_RING_HEAD]
            key = ring[head]
            run_cells[G_RING_HEAD] = head + 1 if head + 1 < ring.shape[0] else 0
            run_cells[G_RING_LENGTH] -= 1
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
                t_arrival = worker_times[order[k], WF_ARRIVAL] if k < n_arrivals else np.inf
                on_arrival(mem, w, now)
                continue
            key = pop_event(mem)
        events += 1
        kind = (key >> EV_WORKER_BITS) & 7
        w = key & WORKER_MASK
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
    run_cells[G_EVENTS] = events
    run_cells[G_NEXT_ARRIVAL] = k
    run_times[GF_NOW] = now
    if status == STATUS_CHUNK:
        return STATUS_CHUNK
    if status == STATUS_DONE:
        finish(mem, run_times[GF_END])
    else:
        run_times[GF_END] = now
        finish(mem, now)
    run_cells[G_STATUS] = status
    return status
