"""Pending events: a binary heap keyed by (time, sequence), a ring of events due now, and a front slot.

An event is a time and one int64 key (sequence, kind and worker packed so
that a key compare is a sequence compare).  Events due now go to a ring and
skip the heap; an event earlier than all pending ones waits in a front slot,
where it would otherwise have climbed to the root and been popped straight
back out.  Any exact priority queue pops the same sequence, so none of this
changes a result.  Each worker has at most one pending event.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.jit import JIT_HOT, JIT_INLINE
from models.engine.state import (
    EV_SEQ_SHIFT, EV_WORKER_BITS, GF_FRONT_TIME, G_FRONT_FULL, G_FRONT_KEY, G_HEAP_LENGTH, G_RING_HEAD,
    G_RING_LENGTH, G_EVENT_SEQ, tables,
)

WORKER_MASK = (1 << EV_WORKER_BITS) - 1


@njit(**JIT_HOT)
def push_event(mem, when, kind, w, now):
    """Schedule event ``kind`` for worker ``w`` at time ``when``.

    An event due at the current instant skips the heap: it goes to a FIFO ring
    of immediate events that the loop drains before it takes anything later,
    which saves the heap traffic of zero-cost wake-ups and context switches.
    An event earlier than every pending one (a short burst, often) goes to the
    front slot, which holds the earliest event when it is full: it would have
    climbed to the heap's root and been taken from there next.
    """
    t = tables(mem)
    run_cells = t.run_cells
    if when <= now:
        ring = t.ring
        slot = run_cells[G_RING_HEAD] + run_cells[G_RING_LENGTH]
        if slot >= ring.shape[0]:
            slot -= ring.shape[0]
        ring[slot] = (kind << EV_WORKER_BITS) | w
        run_cells[G_RING_LENGTH] += 1
        return
    run_times, heap_t, heap_k = t.run_times, t.heap_t, t.heap_k
    key = (run_cells[G_EVENT_SEQ] << EV_SEQ_SHIFT) | (kind << EV_WORKER_BITS) | w
    run_cells[G_EVENT_SEQ] += 1  # a later sequence number than any pending event's: ties go to the others
    if run_cells[G_FRONT_FULL] == 1:
        front_t = run_times[GF_FRONT_TIME]
        if when < front_t:  # the new event takes the front; the old front goes to the heap
            front_k = run_cells[G_FRONT_KEY]
            run_times[GF_FRONT_TIME] = when
            run_cells[G_FRONT_KEY] = key
            when, key = front_t, front_k
    elif run_cells[G_HEAP_LENGTH] == 0 or when < heap_t[0]:
        run_cells[G_FRONT_FULL] = 1
        run_times[GF_FRONT_TIME] = when
        run_cells[G_FRONT_KEY] = key
        return
    i = run_cells[G_HEAP_LENGTH]
    run_cells[G_HEAP_LENGTH] = i + 1
    while i > 0:  # move the hole up past every later parent
        parent = (i - 1) >> 1
        tp = heap_t[parent]
        if tp < when or (tp == when and heap_k[parent] < key):
            break
        heap_t[i] = tp
        heap_k[i] = heap_k[parent]
        i = parent
    heap_t[i] = when
    heap_k[i] = key


@njit(**JIT_INLINE)
def next_event_time(mem):
    """When the earliest pending event is due (the front slot's, else the heap root's); inf if none is."""
    t = tables(mem)
    if t.run_cells[G_FRONT_FULL] == 1:
        return t.run_times[GF_FRONT_TIME]
    if t.run_cells[G_HEAP_LENGTH] > 0:
        return t.heap_t[0]
    return np.inf


@njit(**JIT_INLINE)
def pop_event(mem):
    """Remove the earliest pending event and return its key (its time is :func:`next_event_time`'s)."""
    t = tables(mem)
    run_cells, heap_t, heap_k = t.run_cells, t.heap_t, t.heap_k
    if run_cells[G_FRONT_FULL] == 1:
        run_cells[G_FRONT_FULL] = 0
        return run_cells[G_FRONT_KEY]
    first = heap_k[0]
    n = run_cells[G_HEAP_LENGTH] - 1
    run_cells[G_HEAP_LENGTH] = n
    last_t, last_k = heap_t[n], heap_k[n]
    i = 0
    while True:  # move the hole at the root down until the last entry fits there
        child = 2 * i + 1
        if child >= n:
            break
        right = child + 1
        if right < n and (heap_t[right] < heap_t[child]
                          or (heap_t[right] == heap_t[child] and heap_k[right] < heap_k[child])):
            child = right
        if last_t < heap_t[child] or (last_t == heap_t[child] and last_k < heap_k[child]):
            break
        heap_t[i] = heap_t[child]
        heap_k[i] = heap_k[child]
        i = child
    heap_t[i] = last_t
    heap_k[i] = last_k
    return first
