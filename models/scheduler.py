"""SQLOS schedulers: one runnable queue per scheduler, a linked list over the worker rows.

A worker is in at most one runnable queue, so ``W_NEXT``/``W_PREV`` on the
worker row are enough for a deque with O(1) push at either end: the head is
where a signalled (boosted) worker goes, the tail where a yielding or newly
arrived worker goes.
"""

from __future__ import annotations

from numba import njit

from models.state import S_HEAD, S_QLEN, S_TAIL, W_NEXT, W_PREV


@njit(cache=True, _nrt=False, error_model="numpy")
def push_back(si, wi, s, w):
    """Append worker ``w`` to the tail of scheduler ``s``'s runnable queue."""
    tail = si[s, S_TAIL]
    wi[w, W_PREV] = tail
    wi[w, W_NEXT] = -1
    if tail < 0:
        si[s, S_HEAD] = w
    else:
        wi[tail, W_NEXT] = w
    si[s, S_TAIL] = w
    si[s, S_QLEN] += 1


@njit(cache=True, _nrt=False, error_model="numpy")
def push_front(si, wi, s, w):
    """Put worker ``w`` at the head of scheduler ``s``'s runnable queue."""
    head = si[s, S_HEAD]
    wi[w, W_NEXT] = head
    wi[w, W_PREV] = -1
    if head < 0:
        si[s, S_TAIL] = w
    else:
        wi[head, W_PREV] = w
    si[s, S_HEAD] = w
    si[s, S_QLEN] += 1


@njit(cache=True, _nrt=False, error_model="numpy")
def pop_front(si, wi, s):
    """Remove and return the head of scheduler ``s``'s runnable queue (-1 if empty)."""
    w = si[s, S_HEAD]
    if w < 0:
        return -1
    nxt = wi[w, W_NEXT]
    si[s, S_HEAD] = nxt
    if nxt < 0:
        si[s, S_TAIL] = -1
    else:
        wi[nxt, W_PREV] = -1
    wi[w, W_NEXT] = -1
    si[s, S_QLEN] -= 1
    return w
