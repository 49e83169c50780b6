"""Latches: five modes, their compatibility matrix, and a FIFO wait queue per latch.

The matrix is the one in Microsoft's latch-contention guide: KP is compatible
with everything but DT; SH with KP, SH and UP; UP with KP and SH; EX with KP
only; DT with nothing.  A latch row holds how many holders it has in each
mode, so a request is grantable when every mode held is compatible with it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.state import (L_HELD, L_QHEAD, L_QLEN, L_QSEQ, L_QTAIL, LF_QAREA, LF_QLAST,
                          LF_QRES, W_QNEXT, W_QSEQ, WF_TENQ)

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


@njit(cache=True, _nrt=False, error_model="numpy")
def grantable(li, latch, mode):
    """True when no mode currently held on ``latch`` conflicts with ``mode``."""
    return li[latch, L_HELD] & (CONFLICTS >> (5 * mode)) & 31 == 0


@njit(cache=True, _nrt=False, error_model="numpy")
def hold(li, latch, mode):
    """One more holder of ``latch`` in ``mode``."""
    li[latch, mode] += 1
    li[latch, L_HELD] |= 1 << mode


@njit(cache=True, _nrt=False, error_model="numpy")
def unhold(li, latch, mode):
    """One holder of ``latch`` in ``mode`` fewer."""
    li[latch, mode] -= 1
    if li[latch, mode] == 0:
        li[latch, L_HELD] &= ~(1 << mode)


@njit(cache=True, _nrt=False, error_model="numpy")
def _account_queue(li, lf, latch, now):
    """Add the queue length since the last change to the queue-length integral."""
    lf[latch, LF_QAREA] += li[latch, L_QLEN] * (now - lf[latch, LF_QLAST])
    lf[latch, LF_QLAST] = now


@njit(cache=True, _nrt=False, error_model="numpy")
def enqueue(li, lf, wi, wf, latch, w, now):
    """Append worker ``w`` to the latch's FIFO wait queue."""
    _account_queue(li, lf, latch, now)
    tail = li[latch, L_QTAIL]
    wi[w, W_QNEXT] = -1
    if tail < 0:
        li[latch, L_QHEAD] = w
    else:
        wi[tail, W_QNEXT] = w
    li[latch, L_QTAIL] = w
    li[latch, L_QLEN] += 1
    wi[w, W_QSEQ] = li[latch, L_QSEQ]
    li[latch, L_QSEQ] += 1
    wf[w, WF_TENQ] = now


@njit(cache=True, _nrt=False, error_model="numpy")
def dequeue(li, lf, wi, wf, latch, now):
    """Remove and return the head waiter of the latch (-1 if none)."""
    w = li[latch, L_QHEAD]
    if w < 0:
        return -1
    _account_queue(li, lf, latch, now)
    nxt = wi[w, W_QNEXT]
    li[latch, L_QHEAD] = nxt
    if nxt < 0:
        li[latch, L_QTAIL] = -1
    wi[w, W_QNEXT] = -1
    li[latch, L_QLEN] -= 1
    lf[latch, LF_QRES] += now - wf[w, WF_TENQ]
    return w
