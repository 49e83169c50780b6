"""The floor for the engine's speed: the closed latch as a bare compiled heap simulation.

N workers, each on its own CPU, think for an exponential time, then take one
EX latch (FIFO, handed to the head waiter on release) for an exponential
hold.  Two events per acquire (think done, hold done) in a binary heap of
(time, sequence) keys, a SplitMix64 generator, nothing else: no schedulers,
no statistics beyond a count, no trace.  It is written here, apart from the
engine, so the benchmark compares the engine against code that shares none
of its choices.
"""

from __future__ import annotations

import numpy as np
from numba import njit

THINK_DONE, HOLD_DONE = 0, 1


@njit(cache=True)
def _uniform(state):
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _push(times, seqs, kinds, who, n, t, seq, kind, w):
    i = n
    while i > 0:
        parent = (i - 1) // 2
        if times[parent] < t or (times[parent] == t and seqs[parent] < seq):
            break
        times[i], seqs[i], kinds[i], who[i] = times[parent], seqs[parent], kinds[parent], who[parent]
        i = parent
    times[i], seqs[i], kinds[i], who[i] = t, seq, kind, w


@njit(cache=True)
def _pop(times, seqs, kinds, who, n):
    """Remove the root of a heap of n entries (the caller has read it); returns nothing."""
    n -= 1
    t, seq, kind, w = times[n], seqs[n], kinds[n], who[n]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and (times[child + 1] < times[child]
                              or (times[child + 1] == times[child] and seqs[child + 1] < seqs[child])):
            child += 1
        if t < times[child] or (t == times[child] and seq < seqs[child]):
            break
        times[i], seqs[i], kinds[i], who[i] = times[child], seqs[child], kinds[child], who[child]
        i = child
    times[i], seqs[i], kinds[i], who[i] = t, seq, kind, w


@njit(cache=True)
def closed_latch(workers: int, think_us: float, hold_us: float, acquires: int, seed: int) -> float:
    """Simulate until ``acquires`` acquires are granted; return the simulated time (us)."""
    state = np.array([np.uint64(seed)])
    times = np.empty(workers)
    seqs = np.empty(workers, np.int64)
    kinds = np.empty(workers, np.int64)
    who = np.empty(workers, np.int64)
    queue = np.empty(workers, np.int64)  # FIFO ring of waiting workers
    head, length, owner = 0, 0, -1
    n, seq, granted, now = 0, 0, 0, 0.0
    for w in range(workers):
        _push(times, seqs, kinds, who, n, -think_us * np.log1p(-_uniform(state)), seq, THINK_DONE, w)
        n += 1
        seq += 1
    while granted < acquires:
        now, kind, w = times[0], kinds[0], who[0]
        _pop(times, seqs, kinds, who, n)
        n -= 1
        if kind == THINK_DONE:
            if owner < 0:
                owner = w
                granted += 1
                _push(times, seqs, kinds, who, n, now - hold_us * np.log1p(-_uniform(state)), seq, HOLD_DONE, w)
                n += 1
                seq += 1
            else:
                queue[(head + length) % workers] = w
                length += 1
        else:
            _push(times, seqs, kinds, who, n, now - think_us * np.log1p(-_uniform(state)), seq, THINK_DONE, w)
            n += 1
            seq += 1
            if length > 0:
                owner = queue[head]
                head = (head + 1) % workers
                length -= 1
                granted += 1
                _push(times, seqs, kinds, who, n, now - hold_us * np.log1p(-_uniform(state)), seq, HOLD_DONE,
                      owner)
                n += 1
                seq += 1
            else:
                owner = -1
    return now
