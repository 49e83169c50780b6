"""A clustered index as the insert path sees it: leaf pages in key order, their parents, splits.

The hot-page scenario needs to know, for every row a worker inserts, which
leaf page its key lands on, whether that page is full, and what a split does,
and it must know it at run time: keys come from the run's own identity
counter or generator, so a long run needs no program as long as its inserts.
The index has three levels: a root per tree (one tree, or one per partition),
non-leaf pages holding at most ``fanout`` children each, and leaf pages
holding at most ``capacity`` rows each (8,096 bytes of rows per 8 KB page).

A page is one row of the ``pages`` table and its keys, in order, one row of
``keys``; ``leaves`` lists the leaf pages in key order, so finding a key's
leaf is a binary search over their low bounds.  The engine calls these
kernels from its instructions (:mod:`models.engine.program`: ROW, FIND, BRANCH,
INSERT, SPLIT); they only change the index, never a latch.  A split is SQL
Server's: a key above every key on the full page starts an empty page at the
end, any other key moves the upper half of the rows to a new page.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.jit import JIT, JIT_CALL
from models.engine.program import (
    BRANCH, BR_ALWAYS, BR_FORCED, BR_FULL, BR_MORE_ROWS, BR_NOT_FULL, BR_OUTSIDE, BR_PARENT_FULL, FIND,
    FIND_LEAF, FIND_ROOT, INSERT, ROW, R_GATE, R_LEAF, R_NEW, R_PARENT, R_ROOT,
)
from models.engine.rng import next_u64
from models.engine.state import (
    BT_BUCKETS, BT_CAPACITY, BT_COUNTER, BT_END_SPLITS, BT_FANOUT, BT_GATE_LATCH0, BT_HEAT_USED, BT_LEAVES,
    BT_MID_SPLITS, BT_NONLEAF_SPLITS, BT_OVERFLOW, BT_PAGES, BT_PAGE_LATCH0, BT_ROOT_LATCH0, BT_SCHEDULERS,
    BT_STRATEGY, BT_TREES, GF_END, GRANT_FAILED, GRANT_FORCED, G_MAIN_LEFT, PG_LEVEL, PG_LOW, PG_PARENT, PG_ROWS,
    PG_TREE, P_A, P_B, P_C, P_OP, W_BATCH, W_KEY, W_GRANT_OUTCOME, W_PAGE, W_REGISTER0, W_SCALE, W_SCHEDULER,
    tables,
)

# Key strategies: how the next row's clustered key is made.
IDENTITY, GUID, REVERSE_BITS, HASH_BUCKET, PARTITIONED = 0, 1, 2, 3, 4
STRATEGIES = {"identity": IDENTITY, "guid": GUID, "reverse-bits": REVERSE_BITS,
              "hash-bucket": HASH_BUCKET, "partitioned": PARTITIONED}

TREE_SHIFT = 56      # a key is tree << 56 | the key within its tree
BUCKET_SHIFT = 40    # a hash-bucket key is bucket << 40 | identity
REVERSED_BITS = 31   # Biondi's INVERTI_BIT reverses the low 31 bits of an int
_JIT = JIT


def initialise(bt: np.ndarray, pages: np.ndarray, leaves: np.ndarray, strategy: int, capacity: int,
               fanout: int, buckets: int, trees: int, page_latch0: int, root_latch0: int,
               gate_latch0: int, n_schedulers: int) -> None:
    """An empty index: each tree is a root over one non-leaf page over one empty leaf page."""
    bt[:] = 0
    bt[BT_STRATEGY], bt[BT_CAPACITY], bt[BT_FANOUT], bt[BT_BUCKETS] = strategy, capacity, fanout, buckets
    bt[BT_TREES], bt[BT_PAGE_LATCH0], bt[BT_ROOT_LATCH0] = trees, page_latch0, root_latch0
    bt[BT_GATE_LATCH0], bt[BT_SCHEDULERS], bt[BT_COUNTER] = gate_latch0, n_schedulers, 1
    for tree in range(trees):
        parent, leaf = 2 * tree, 2 * tree + 1
        pages[parent] = 0
        pages[parent, PG_PARENT], pages[parent, PG_TREE], pages[parent, PG_LEVEL] = -1, tree, 1
        pages[parent, PG_ROWS] = 1
        pages[leaf] = 0
        pages[leaf, PG_PARENT], pages[leaf, PG_TREE] = parent, tree
        pages[leaf, PG_LOW] = tree << TREE_SHIFT
        leaves[tree] = leaf
    bt[BT_PAGES], bt[BT_LEAVES] = 2 * trees, trees


@njit(**_JIT)
def reverse_bits(value):
    """The low 31 bits of ``value`` in reverse order (Biondi's INVERTI_BIT)."""
    out = 0
    for _ in range(REVERSED_BITS):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


@njit(**_JIT)
def next_key(bt, rng):
    """The next row's key under the index's strategy (identity values are the instance-wide counter)."""
    strategy = bt[BT_STRATEGY]
    if strategy == GUID:
        return np.int64(next_u64(rng) >> np.uint64(64 - TREE_SHIFT))
    n = bt[BT_COUNTER]
    bt[BT_COUNTER] = n + 1
    if strategy == REVERSE_BITS:
        return reverse_bits(n)
    if strategy == HASH_BUCKET:
        return ((n % bt[BT_BUCKETS]) << BUCKET_SHIFT) | n
    if strategy == PARTITIONED:
        return ((n % bt[BT_TREES]) << TREE_SHIFT) | n
    return n


@njit(**_JIT)
def position(pages, leaves, n_leaves, key):
    """Where in key order the leaf holding ``key`` is: the last leaf whose low bound is <= key."""
    lo, hi = 0, n_leaves - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if pages[leaves[mid], PG_LOW] <= key:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(**_JIT)
def leaf_of(bt, pages, leaves, key):
    """The leaf page ``key`` belongs on."""
    return leaves[position(pages, leaves, bt[BT_LEAVES], key)]


@njit(**_JIT)
def tree_of(key):
    """The tree (partition) a key belongs to."""
    return key >> TREE_SHIFT


@njit(**_JIT)
def full(bt, pages, page):
    """True when ``page`` has no room for one more row (or child, for a non-leaf page)."""
    cap = bt[BT_CAPACITY] if pages[page, PG_LEVEL] == 0 else bt[BT_FANOUT]
    return pages[page, PG_ROWS] >= cap


@njit(**_JIT)
def outside(bt, pages, leaves, page, key):
    """True when ``key`` does not belong on leaf ``page`` or the page is full: the insert must find another."""
    if full(bt, pages, page):
        return True
    return leaf_of(bt, pages, leaves, key) != page


@njit(**_JIT)
def insert(bt, pages, keys, heat, page, key, now):
    """Add one row with ``key`` to leaf ``page`` (keys stay in order) and log the insert for the heat map."""
    k = pages[page, PG_ROWS]
    while k > 0 and keys[page, k - 1] > key:  # ascending keys stop at once
        keys[page, k] = keys[page, k - 1]
        k -= 1
    keys[page, k] = key
    pages[page, PG_ROWS] += 1
    n = bt[BT_HEAT_USED]
    if n < heat.shape[0]:
        heat[n, 0] = now
        heat[n, 1] = page
        bt[BT_HEAT_USED] = n + 1


@njit(**_JIT)
def _new_page(bt, pages, parent, tree, level):
    """Allocate an empty page under ``parent``; -1 (and the overflow flag) when the page table is full."""
    page = bt[BT_PAGES]
    if page >= pages.shape[0]:
        bt[BT_OVERFLOW] = 1
        return -1
    bt[BT_PAGES] = page + 1
    pages[page, PG_ROWS] = 0
    pages[page, PG_PARENT] = parent
    pages[page, PG_TREE] = tree
    pages[page, PG_LEVEL] = level
    return page


@njit(**_JIT)
def _split_parent(bt, pages, leaves, at):
    """Split the non-leaf parent of the leaf at position ``at``: the upper half of its children move to a new one."""
    parent = pages[leaves[at], PG_PARENT]
    sibling = _new_page(bt, pages, -1, pages[parent, PG_TREE], 1)
    if sibling < 0:
        return
    first, last = at, at
    n = bt[BT_LEAVES]
    while first > 0 and pages[leaves[first - 1], PG_PARENT] == parent:
        first -= 1
    while last + 1 < n and pages[leaves[last + 1], PG_PARENT] == parent:
        last += 1
    half = first + (last - first + 1) // 2
    for k in range(half, last + 1):
        pages[leaves[k], PG_PARENT] = sibling
    pages[sibling, PG_ROWS] = last + 1 - half
    pages[parent, PG_ROWS] -= last + 1 - half
    bt[BT_NONLEAF_SPLITS] += 1


@njit(**_JIT)
def split(bt, pages, leaves, keys, page, key):
    """Split full leaf ``page`` for ``key``; return (the page the key now goes to, the new page, rows moved).

    A key above every key on the page starts an empty page after it and moves
    nothing (SQL Server's split at the end of a page, which ascending keys
    always take); any other key moves the upper half of the rows to the new
    page.  A full parent is split first (the caller holds the root in EX for
    that).  With no page left in the table, nothing changes and the overflow
    flag ends the run.
    """
    at = position(pages, leaves, bt[BT_LEAVES], pages[page, PG_LOW])
    if pages[pages[page, PG_PARENT], PG_ROWS] >= bt[BT_FANOUT]:
        _split_parent(bt, pages, leaves, at)
    parent = pages[page, PG_PARENT]
    fresh = _new_page(bt, pages, parent, pages[page, PG_TREE], 0)
    if fresh < 0:
        return page, page, 0
    pages[parent, PG_ROWS] += 1
    rows = pages[page, PG_ROWS]
    if rows == 0 or key > keys[page, rows - 1]:
        pages[fresh, PG_LOW] = key
        moved = 0
        target = fresh
        bt[BT_END_SPLITS] += 1
    else:
        moved = max(1, rows // 2)
        keep = rows - moved
        for k in range(moved):
            keys[fresh, k] = keys[page, keep + k]
        pages[fresh, PG_LOW] = keys[page, keep]
        pages[fresh, PG_ROWS] = moved
        pages[page, PG_ROWS] = keep
        target = fresh if key >= pages[fresh, PG_LOW] else page
        bt[BT_MID_SPLITS] += 1
    n = bt[BT_LEAVES]
    for k in range(n, at + 1, -1):  # the new leaf goes right after the old one in key order
        leaves[k] = leaves[k - 1]
    leaves[at + 1] = fresh
    bt[BT_LEAVES] = n + 1
    return target, fresh, moved


@njit(**_JIT)
def page_latch(bt, page):
    """The latch (BUFFER class) guarding ``page``."""
    return bt[BT_PAGE_LATCH0] + page


@njit(**_JIT)
def root_latch(bt, tree):
    """The latch guarding ``tree``'s root page."""
    return bt[BT_ROOT_LATCH0] + tree


@njit(**_JIT)
def gate_latch(bt, tree, scheduler):
    """OPTIMIZE_FOR_SEQUENTIAL_KEY's insert gate for ``tree`` on ``scheduler`` (-1 when the option is off)."""
    if bt[BT_GATE_LATCH0] < 0:
        return -1
    return bt[BT_GATE_LATCH0] + tree * bt[BT_SCHEDULERS] + scheduler


# ---------------------------------------------------------------- the index instructions


@njit(**JIT_CALL)
def index_step(mem, w, pc, now):
    """Run one index instruction (ROW, FIND, BRANCH, INSERT, SPLIT) for ``w``; return the next address.

    These only read and change the index (:mod:`models.engine.btree`) and the
    worker's registers; the latches they name are taken by ACQUIREs.
    """
    t = tables(mem)
    workers, bt, pages, leaves = t.workers, t.bt, t.pages, t.leaves
    prog_i = t.prog_i
    op = prog_i[pc, P_OP]
    key = workers[w, W_KEY]
    if op == ROW:
        workers[w, W_KEY] = next_key(bt, t.rng)
        if prog_i[pc, P_B] == 1:  # the row starts a call; operand c is its row count
            workers[w, W_BATCH] = prog_i[pc, P_C]
    elif op == FIND:
        stage = prog_i[pc, P_B]
        if stage == FIND_ROOT:
            tree = tree_of(key)
            workers[w, W_REGISTER0 + R_ROOT] = root_latch(bt, tree)
            workers[w, W_REGISTER0 + R_GATE] = gate_latch(bt, tree, workers[w, W_SCHEDULER])
        else:
            leaf = leaf_of(bt, pages, leaves, key)
            if stage == FIND_LEAF:
                workers[w, W_PAGE] = leaf
                workers[w, W_REGISTER0 + R_LEAF] = page_latch(bt, leaf)
            else:
                workers[w, W_REGISTER0 + R_PARENT] = page_latch(bt, pages[leaf, PG_PARENT])
    elif op == BRANCH:
        page = workers[w, W_PAGE]
        condition = prog_i[pc, P_B]
        if condition == BR_ALWAYS:
            jump = True
        elif condition == BR_FULL:
            jump = full(bt, pages, page)
        elif condition == BR_NOT_FULL:
            jump = not full(bt, pages, page)
        elif condition == BR_PARENT_FULL:
            jump = full(bt, pages, workers[w, W_REGISTER0 + R_PARENT] - bt[BT_PAGE_LATCH0])
        elif condition == BR_OUTSIDE:
            jump = outside(bt, pages, leaves, page, key)
        elif condition == BR_MORE_ROWS:
            jump = workers[w, W_BATCH] > 0
        elif condition == BR_FORCED:
            jump = workers[w, W_GRANT_OUTCOME] == GRANT_FORCED
        else:  # BR_FAILED
            jump = workers[w, W_GRANT_OUTCOME] == GRANT_FAILED
        if jump:
            return prog_i[pc, P_A]  # the branch target
    elif op == INSERT:
        insert(bt, pages, t.keys, t.heat, workers[w, W_PAGE], key, now)
        workers[w, W_BATCH] -= 1
    else:  # SPLIT
        target, fresh, moved = split(bt, pages, leaves, t.keys, workers[w, W_PAGE], key)
        if bt[BT_OVERFLOW] == 1:  # the page table is full: end the run (simulate() reports it)
            t.run_cells[G_MAIN_LEFT] = 0
            t.run_times[GF_END] = now
        workers[w, W_PAGE] = target
        workers[w, W_REGISTER0 + R_NEW] = page_latch(bt, fresh)
        workers[w, W_SCALE] = moved
    return pc + 1
