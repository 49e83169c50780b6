"""Latches: five modes, their compatibility matrix, a FIFO wait queue per latch, and every latch policy.

The matrix is the one in Microsoft's latch-contention guide: KP is compatible
with everything but DT; SH with KP, SH and UP; UP with KP and SH; EX with KP
only; DT with nothing.  A latch row holds how many holders it has in each
mode, so a request is grantable when every mode held is compatible with it.

Latch policies (per latch):

* fair: a release hands ownership to the head waiter (and to compatible
  waiters right behind it) and signals it; the latch is owned but idle until
  the new owner runs, so each contended hand-off costs wake-up, runnable
  delay and a context switch.  Newcomers queue behind waiters.
* unfair: a release frees the latch and signals the head waiter, which must
  try again when it runs; any running requester may take the latch first
  (barging).  A requester that finds the latch held spins in rounds of
  ``spin_us``, checking the latch after each; after ``rounds_per_backoff``
  failed rounds (a spin cycle) it backs off ``backoff_us * 2**k`` keeping its
  scheduler, spins another cycle, and after ``max_backoffs`` back-offs
  suspends in the FIFO queue.  With one round per back-off (the default) a
  spinner checks the latch once per back-off.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.events import push_event
from models.engine.jit import JIT, JIT_HOT, JIT_INLINE
from models.engine.scheduler import give_up_scheduler, set_state, signal
from models.engine.state import (
    ALF_GRANT, ALF_RELEASE, ALF_REQUEST, ALF_RUN, AL_LATCH, AL_MODE, AL_QUEUE_SEQ, AL_SUSPENDED, AL_WORKER, BACKOFF,
    EV_BACKOFF_DONE, EV_SPIN_DONE, FLAG_GRANTED, FLAG_RETRY, G_LOG_USED, G_SAMPLES_USED, LF_BACKOFF_US,
    LF_LATENCY_SUM, LF_QUEUE_AREA, LF_QUEUE_CHANGED_AT, LF_QUEUE_RESIDENCE, LF_SPIN_US, LW_COUNT, LW_MAX,
    LW_SIGNAL_TIME, LW_TIME, L_ACQUIRES, L_BACKOFFS, L_COLLISIONS, L_HELD, L_MAX_BACKOFFS, L_POLICY, L_QUEUE_HEAD,
    L_QUEUE_LENGTH, L_QUEUE_SEQ, L_QUEUE_TAIL, L_ROUNDS_PER_BACKOFF, L_SPINNERS, L_SPINS, L_SPINS_PER_ROUND,
    RUNNING, SF_BUSY, SPINNING, SUSPENDED, WF_CPU, WF_LATCH_WAIT, WF_SIGNAL_WAIT_SO_FAR, WF_SPIN, WF_ENQUEUED_AT,
    WF_REQUESTED_AT, WF_SIGNALLED_AT, WF_SUSPENDED_AT, WF_WAIT_SO_FAR, W_ACQUIRES, W_BACKOFFS, W_FLAG, W_LATCH,
    W_LOG_ROW, W_MODE, W_PROGRAM_COUNTER, W_LATCH_QUEUE_NEXT, W_QUEUE_SEQ, W_SPIN_ROUNDS, W_SCHEDULER, W_WAITED,
    tables,
)

# COMPATIBLE[requested, held], modes in the order KP, SH, UP, EX, DT.
COMPATIBLE = np.array([
    [1, 1, 1, 1, 0],
    [1, 1, 1, 0, 0],
    [1, 1, 0, 0, 0],
    [1, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
], dtype=np.int64)


# The same matrix for the compiled code, as bit masks: bits 5 * requested .. 5 * requested + 4
# are the held modes that conflict with the requested one.
CONFLICTS = sum(1 << (5 * requested + held) for requested in range(5) for held in range(5)
                if not COMPATIBLE[requested, held])


@njit(**JIT)
def grantable(latches, latch, mode):
    """True when no mode currently held on ``latch`` conflicts with ``mode``."""
    return latches[latch, L_HELD] & (CONFLICTS >> (5 * mode)) & 31 == 0


@njit(**JIT)
def hold(latches, latch, mode):
    """One more holder of ``latch`` in ``mode``."""
    latches[latch, mode] += 1
    latches[latch, L_HELD] |= 1 << mode


@njit(**JIT)
def unhold(latches, latch, mode):
    """One holder of ``latch`` in ``mode`` fewer."""
    latches[latch, mode] -= 1
    if latches[latch, mode] == 0:
        latches[latch, L_HELD] &= ~(1 << mode)


@njit(**JIT)
def _account_queue(latches, latch_times, latch, now):
    """Add the queue length since the last change to the queue-length integral."""
    since = latch_times[latch, LF_QUEUE_CHANGED_AT]
    latch_times[latch, LF_QUEUE_AREA] += latches[latch, L_QUEUE_LENGTH] * (now - since)
    latch_times[latch, LF_QUEUE_CHANGED_AT] = now


@njit(**JIT)
def enqueue(latches, latch_times, workers, worker_times, latch, w, now):
    """Append worker ``w`` to the latch's FIFO wait queue."""
    _account_queue(latches, latch_times, latch, now)
    tail = latches[latch, L_QUEUE_TAIL]
    workers[w, W_LATCH_QUEUE_NEXT] = -1
    if tail < 0:
        latches[latch, L_QUEUE_HEAD] = w
    else:
        workers[tail, W_LATCH_QUEUE_NEXT] = w
    latches[latch, L_QUEUE_TAIL] = w
    latches[latch, L_QUEUE_LENGTH] += 1
    workers[w, W_QUEUE_SEQ] = latches[latch, L_QUEUE_SEQ]
    latches[latch, L_QUEUE_SEQ] += 1
    worker_times[w, WF_ENQUEUED_AT] = now


@njit(**JIT)
def dequeue(latches, latch_times, workers, worker_times, latch, now):
    """Remove and return the head waiter of the latch (-1 if none)."""
    w = latches[latch, L_QUEUE_HEAD]
    if w < 0:
        return -1
    _account_queue(latches, latch_times, latch, now)
    nxt = workers[w, W_LATCH_QUEUE_NEXT]
    latches[latch, L_QUEUE_HEAD] = nxt
    if nxt < 0:
        latches[latch, L_QUEUE_TAIL] = -1
    workers[w, W_LATCH_QUEUE_NEXT] = -1
    latches[latch, L_QUEUE_LENGTH] -= 1
    latch_times[latch, LF_QUEUE_RESIDENCE] += now - worker_times[w, WF_ENQUEUED_AT]
    return w


# ---------------------------------------------------------------- policies
#
# A latch's policy decides three things, all in this section: whether a request is granted
# (``acquire``), what a requester does when it is not (``wait_for_latch``), and what a release does
# for the waiters (``release``).  A spinning policy also decides what a spin round's end does
# (``on_spin_done``).  A new policy is a name in POLICIES and its branches here.

FAIR, UNFAIR = 0, 1
POLICIES = ("fair", "unfair")  # by code: the choices a scenario's ``policy`` parameter offers


@njit(**JIT_HOT)
def complete_acquire(mem, w, now):
    """Record a finished acquire: the worker now runs holding the latch."""
    t = tables(mem)
    workers, worker_times, run_cells = t.workers, t.worker_times, t.run_cells
    latches, latch_times, latch_waits = t.latches, t.latch_times, t.latch_waits
    latch = workers[w, W_LATCH]
    mode = workers[w, W_MODE]
    latency = now - worker_times[w, WF_REQUESTED_AT]
    latches[latch, L_ACQUIRES] += 1
    workers[w, W_ACQUIRES] += 1
    latch_times[latch, LF_LATENCY_SUM] += latency
    samples = t.samples
    n = run_cells[G_SAMPLES_USED]
    if n < samples.shape[0]:
        samples[n, 0] = latency
        samples[n, 1] = latch
        run_cells[G_SAMPLES_USED] = n + 1
    if workers[w, W_WAITED] == 1:
        wait = worker_times[w, WF_WAIT_SO_FAR]
        latch_waits[latch, mode, LW_COUNT] += 1
        latch_waits[latch, mode, LW_TIME] += wait
        latch_waits[latch, mode, LW_SIGNAL_TIME] += worker_times[w, WF_SIGNAL_WAIT_SO_FAR]
        if wait > latch_waits[latch, mode, LW_MAX]:
            latch_waits[latch, mode, LW_MAX] = wait
        worker_times[w, WF_LATCH_WAIT] += wait
    log_i, log_f = t.log_i, t.log_f
    if log_i.shape[0] > 0:  # without an acquire log, W_LOG_ROW is never set and stays -1
        k = run_cells[G_LOG_USED]
        if k < log_i.shape[0]:
            log_i[k, AL_WORKER] = w
            log_i[k, AL_LATCH] = latch
            log_i[k, AL_MODE] = mode
            log_i[k, AL_SUSPENDED] = workers[w, W_WAITED]
            log_i[k, AL_QUEUE_SEQ] = workers[w, W_QUEUE_SEQ] if workers[w, W_WAITED] == 1 else -1
            log_f[k, ALF_REQUEST] = worker_times[w, WF_REQUESTED_AT]
            log_f[k, ALF_GRANT] = worker_times[w, WF_SIGNALLED_AT] if workers[w, W_FLAG] == FLAG_GRANTED else now
            log_f[k, ALF_RUN] = now
            log_f[k, ALF_RELEASE] = -1.0
            run_cells[G_LOG_USED] = k + 1
            workers[w, W_LOG_ROW] = k
        else:
            workers[w, W_LOG_ROW] = -1
    workers[w, W_LATCH] = -1


@njit(**JIT_HOT)
def acquire(mem, w, latch, mode, now):
    """``w`` asks for ``latch`` in ``mode``: True if it holds it now, else it waits as the policy says.

    A fair latch grants only when nobody is queued (newcomers queue behind
    waiters); an unfair one grants whenever the modes held allow (barging).
    """
    t = tables(mem)
    latches = t.latches
    fair = latches[latch, L_POLICY] == FAIR
    if grantable(latches, latch, mode) and (not fair or latches[latch, L_QUEUE_LENGTH] == 0):
        hold(latches, latch, mode)
        complete_acquire(mem, w, now)
        return True
    wait_for_latch(mem, w, latch, fair, now)
    return False


@njit(**JIT_HOT)
def spin_round(mem, w, now):
    """Start one spin round on the latch ``w`` is acquiring (CPU time on its scheduler)."""
    t = tables(mem)
    workers, worker_times, latches, latch_times = t.workers, t.worker_times, t.latches, t.latch_times
    latch = workers[w, W_LATCH]
    set_state(mem, w, SPINNING, now)
    latches[latch, L_SPINNERS] += 1
    latches[latch, L_SPINS] += latches[latch, L_SPINS_PER_ROUND]
    dur = latch_times[latch, LF_SPIN_US]
    worker_times[w, WF_CPU] += dur
    worker_times[w, WF_SPIN] += dur
    t.scheduler_times[workers[w, W_SCHEDULER], SF_BUSY] += dur
    push_event(mem, now + dur, EV_SPIN_DONE, w, now)


@njit(**JIT_HOT)
def suspend(mem, w, now):
    """Suspend ``w`` in the FIFO queue of the latch it is acquiring."""
    t = tables(mem)
    workers, worker_times = t.workers, t.worker_times
    set_state(mem, w, SUSPENDED, now)
    workers[w, W_WAITED] = 1
    worker_times[w, WF_SUSPENDED_AT] = now
    enqueue(t.latches, t.latch_times, workers, worker_times, workers[w, W_LATCH], w, now)
    give_up_scheduler(mem, w, now)


@njit(**JIT_HOT)
def wait_for_latch(mem, w, latch, fair, now):
    """The latch ``w`` asks for is not grantable now: suspend (fair) or start spinning (unfair)."""
    if fair:
        suspend(mem, w, now)
    else:
        t = tables(mem)
        t.latches[latch, L_COLLISIONS] += 1
        t.workers[w, W_BACKOFFS] = 0
        t.workers[w, W_SPIN_ROUNDS] = 0
        spin_round(mem, w, now)


@njit(**JIT_HOT)
def release(mem, w, latch, mode, now):
    """Release ``latch`` held by ``w`` and hand it on (fair) or signal a waiter (unfair)."""
    t = tables(mem)
    workers, worker_times, latches, latch_times = t.workers, t.worker_times, t.latches, t.latch_times
    unhold(latches, latch, mode)
    k = workers[w, W_LOG_ROW]
    if k >= 0:
        t.log_f[k, ALF_RELEASE] = now
        workers[w, W_LOG_ROW] = -1
    if latches[latch, L_POLICY] == FAIR:
        while latches[latch, L_QUEUE_LENGTH] > 0:
            head = latches[latch, L_QUEUE_HEAD]
            want = workers[head, W_MODE]
            if not grantable(latches, latch, want):
                break
            dequeue(latches, latch_times, workers, worker_times, latch, now)
            hold(latches, latch, want)
            signal(mem, head, FLAG_GRANTED, now)
    elif latches[latch, L_QUEUE_LENGTH] > 0:
        head = latches[latch, L_QUEUE_HEAD]
        if grantable(latches, latch, workers[head, W_MODE]):
            dequeue(latches, latch_times, workers, worker_times, latch, now)
            signal(mem, head, FLAG_RETRY, now)


@njit(**JIT_INLINE)
def on_spin_done(mem, w, now):
    """A spin round ended: take the latch if free (True: go on executing), else spin on, back off or suspend."""
    t = tables(mem)
    workers, latches = t.workers, t.latches
    latch = workers[w, W_LATCH]
    mode = workers[w, W_MODE]
    latches[latch, L_SPINNERS] -= 1
    if grantable(latches, latch, mode):
        set_state(mem, w, RUNNING, now)
        hold(latches, latch, mode)
        complete_acquire(mem, w, now)
        workers[w, W_PROGRAM_COUNTER] += 1
        return True
    workers[w, W_SPIN_ROUNDS] += 1
    if workers[w, W_SPIN_ROUNDS] < latches[latch, L_ROUNDS_PER_BACKOFF]:  # the spin cycle goes on
        spin_round(mem, w, now)
        return False
    workers[w, W_SPIN_ROUNDS] = 0
    if workers[w, W_BACKOFFS] < latches[latch, L_MAX_BACKOFFS]:
        pause = t.latch_times[latch, LF_BACKOFF_US] * 2.0 ** workers[w, W_BACKOFFS]
        workers[w, W_BACKOFFS] += 1
        latches[latch, L_BACKOFFS] += 1
        set_state(mem, w, BACKOFF, now)
        push_event(mem, now + pause, EV_BACKOFF_DONE, w, now)
    else:
        suspend(mem, w, now)
    return False
