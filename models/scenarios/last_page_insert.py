"""Concurrent single-row inserts into a clustered index: the hot last page and what spreads it.

Each session makes ``inserts_per_session / batch_rows`` calls, each after
``think_us`` away from SQL Server (the client's round trip; seed 002's login
check made it long).  A call spends ``cpu_before_us`` of CPU (parse, plan,
the row's own work), then inserts ``batch_rows`` rows.  Each row's key comes
from the key strategy at run time (:mod:`models.engine.btree`), and its insert walks
the index as SQL Server's does (Microsoft's latch-contention guide): SH on
the root, SH on the leaf's parent, EX on the leaf, each parent released once
its child is latched (latch coupling), ``cpu_under_us`` of work under the leaf
latch, release.  Rows of one call that land on the page already held share
its latch: one acquire per page touched.

A full leaf sends the insert down the split path: it lets the leaf go, walks
again taking the parent in EX, takes the allocation latch for ``alloc_us``,
and holds the leaf ``new_page_us`` longer to format the new page, plus
``move_row_us`` per row moved.  An ascending key starts an empty page at the
end (nothing moves); any other key splits the page in the middle.  A full
parent is split under an EX root.  With ``optimize_for_sequential_key`` on,
an unfair gate per scheduler and tree lets one session per scheduler into
the part of the insert that latches pages (BTREE_INSERT_FLOW_CONTROL), and a
session whose quantum has less left than its insert needs yields first.

Latch classes: BUFFER (every index page, PAGELATCH_SH/EX) and ALLOCATION (the
model's stand-in for the allocation structures a new page takes, LATCH_EX).
The defaults are round illustrative values; the calibrated setups of seeds
002 and 004 are in :mod:`models.analysis.hot_page`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from models.engine import state as st
from models.engine.program import (
    BR_ALWAYS, BR_FULL, BR_MORE_ROWS, BR_NOT_FULL, BR_OUTSIDE, BR_PARENT_FULL, DISTRIBUTIONS, EX, EXPONENTIAL,
    FIND_LEAF, FIND_PARENT, FIND_ROOT, FIXED, R_GATE, R_LEAF, R_NEW, R_PARENT, R_ROOT, SCALED, SH, Program,
    register,
)
from models.params import Param, ParameterError, Scenario, common_params, latch_knobs
from models.workload import IndexSpec, LatchSpec, Workload

PAGE_ROW_BYTES = 8_096   # an 8,192-byte page less its 96-byte header
SLOT_BYTES = 2           # each row's entry in the page's slot array
MAX_ROW_BYTES = 8_060    # SQL Server's largest in-row record
CHILD_POINTER_BYTES = 9  # a non-leaf row: its key plus a 6-byte page pointer, a status byte and a slot
KEY_BYTES = {"identity": 8, "guid": 16, "reverse-bits": 4, "hash-bucket": 9, "partitioned": 8}
MAX_ROWS = 2_000_000     # rows a run may insert (one latch per page the run could allocate)
MAX_PAGES = 500_000      # pages a run may allocate: each has its latch and its row of the page table

PARAMS = (
    Param("sessions", "int", 100, "", 1, 4096, help="sessions inserting concurrently"),
    Param("inserts_per_session", "int", 200, "rows", 1, 1_000_000, help="rows each session inserts"),
    Param("key", "choice", "identity", choices=tuple(KEY_BYTES),
          help="leading clustered key: ascending identity, random GUID, bit-reversed identity, "
               "identity modulo buckets, or identity hash-partitioned"),
    Param("buckets", "int", 16, "", 1, 4096, help="hash buckets of the hash-bucket key"),
    Param("partitions", "int", 16, "", 1, 128,
          help="partitions of the partitioned key (one B-tree each; a key keeps its tree in 7 bits)"),
    Param("row_bytes", "int", 60, "bytes", 9, MAX_ROW_BYTES, help="size of one row on the page, overhead included"),
    Param("optimize_for_sequential_key", "choice", "off", choices=("off", "on"),
          help="SQL Server 2019's insert flow control: one session per scheduler into the page-latch path"),
    Param("batch_rows", "int", 1, "rows", 1, 10_000, help="rows one call inserts (a table-valued parameter)"),
    Param("think_us", "float", 3_300.0, "us", 0.0, 1_000_000.0,
          help="mean time between calls spent outside SQL Server (client round trip)"),
    Param("cpu_before_us", "float", 100.0, "us", 0.0, 100_000.0, help="CPU of a call before it latches a page"),
    Param("cpu_under_us", "float", 20.0, "us", 0.01, 100_000.0, help="CPU per row under the leaf page latch"),
    Param("cpu_dist", "choice", "fixed", choices=("fixed", "exponential"),
          help="CPU bursts exactly their mean, or exponential with that mean"),
    Param("new_page_us", "float", 120.0, "us", 0.0, 100_000.0, help="extra hold of the leaf to format a new page"),
    Param("alloc_us", "float", 20.0, "us", 0.0, 100_000.0, help="hold of the allocation latch per new page"),
    Param("move_row_us", "float", 1.0, "us", 0.0, 10_000.0, help="extra hold per row a mid-page split moves"),
) + common_params(schedulers=16)


def rows_per_page(row_bytes: int) -> int:
    """Rows an 8 KB page holds: 8,096 bytes over the row plus its 2-byte slot."""
    return max(1, PAGE_ROW_BYTES // (row_bytes + SLOT_BYTES))


def fanout(key: str) -> int:
    """Children a non-leaf page holds: 8,096 bytes over the key plus pointer, status and slot bytes."""
    return PAGE_ROW_BYTES // (KEY_BYTES[key] + CHILD_POINTER_BYTES)


def trees(v: dict[str, Any]) -> int:
    """B-trees the rows go into: one per partition for the partitioned key, else one."""
    return v["partitions"] if v["key"] == "partitioned" else 1


def total_rows(v: dict[str, Any]) -> int:
    """Rows the run inserts."""
    return v["sessions"] * v["inserts_per_session"]


def max_pages(v: dict[str, Any]) -> int:
    """Pages the run can allocate at most (leaf and non-leaf), from how splits fill pages.

    A mid-page split leaves both pages at least half full and rows are never
    deleted, so leaves under half full are the trees' first pages and pages
    started at the end of a full page: at most R / floor(c/2) + R / c + 2t
    leaves for R rows, c rows a page and t trees (R + t when a page holds one
    row).  A non-leaf split leaves both halves with fanout / 2 children.
    """
    n, t, c = total_rows(v), trees(v), rows_per_page(v["row_bytes"])
    leaves = n + t if c == 1 else n // (c // 2) + n // c + 2 * t + 2
    return leaves + leaves // max(1, fanout(v["key"]) // 2) + 2 * t + 2


def _walk(prog: Program, root_mode: int, parent_mode: int) -> None:
    """Walk down to the row's leaf: root, parent, leaf, each latch let go once the next is held."""
    prog.acquire(register(R_ROOT), root_mode)
    prog.find(FIND_PARENT)
    prog.acquire(register(R_PARENT), parent_mode)
    if root_mode == SH and parent_mode == SH:
        prog.release(register(R_ROOT), SH)
    prog.find(FIND_LEAF)
    prog.acquire(register(R_LEAF), EX)


def _insert_row(prog: Program, v: dict[str, Any]) -> int:
    """The row's own work under the leaf latch, then the insert; returns its address."""
    start = prog.cpu(v["cpu_under_us"], DISTRIBUTIONS[v["cpu_dist"]])
    prog.insert()
    prog.unit()
    return start


def alloc_latch(v: dict[str, Any]) -> int:
    """The allocation latch's index: after the roots (latches 0 .. trees - 1), before the gates and pages."""
    return trees(v)


def _split(prog: Program, v: dict[str, Any], nonleaf: bool) -> None:
    """Allocate a page, split the leaf (and its parent when ``nonleaf``), and insert the row there."""
    prog.acquire(alloc_latch(v), EX)
    prog.cpu(v["alloc_us"], FIXED)
    prog.release(alloc_latch(v), EX)
    prog.split()
    prog.acquire(register(R_NEW), EX)  # the new page: nobody else can reach it yet
    prog.cpu(v["new_page_us"] * (2 if nonleaf else 1), FIXED)
    prog.cpu(v["move_row_us"], SCALED)
    _insert_row(prog, v)
    prog.release(register(R_NEW), EX)


def program(v: dict[str, Any]) -> tuple[Program, int]:
    """The one program every session runs (keys are made at run time); returns it and its start."""
    prog = Program()
    calls = v["inserts_per_session"] // v["batch_rows"]
    flow = v["optimize_for_sequential_key"] == "on"
    margin = v["cpu_under_us"] * v["batch_rows"] if flow else 0.0
    start = call = prog.start()
    if v["think_us"] > 0:
        prog.sleep(v["think_us"], EXPONENTIAL)
    prog.cpu(v["cpu_before_us"], DISTRIBUTIONS[v["cpu_dist"]])
    prog.row(v["batch_rows"])
    walk = prog.find(FIND_ROOT)
    prog.yield_point(margin)
    prog.acquire(register(R_GATE), EX)
    _walk(prog, SH, SH)
    prog.release(register(R_PARENT), SH)
    to_split = prog.branch(BR_FULL)
    put = _insert_row(prog, v)
    to_next = prog.branch(BR_MORE_ROWS)
    prog.release(register(R_LEAF), EX)
    finish = prog.release(register(R_GATE), EX)
    prog.loop(call, calls, slot=0)
    prog.end()
    # The next row of the call: on the page held, insert it there; else let the page go and walk again.
    prog.patch(to_next, prog.row())
    to_leave = prog.branch(BR_OUTSIDE)
    prog.branch(BR_ALWAYS, put)
    prog.patch(to_leave, prog.release(register(R_LEAF), EX))
    prog.release(register(R_GATE), EX)
    prog.branch(BR_ALWAYS, walk)
    # The leaf is full: let it go and walk again with the parent in EX.
    prog.patch(to_split, prog.release(register(R_LEAF), EX))
    prog.acquire(register(R_ROOT), SH)
    prog.find(FIND_PARENT)
    prog.acquire(register(R_PARENT), EX)
    to_widen = prog.branch(BR_PARENT_FULL)
    prog.release(register(R_ROOT), SH)
    prog.find(FIND_LEAF)
    prog.acquire(register(R_LEAF), EX)
    to_late = prog.branch(BR_NOT_FULL)
    _split(prog, v, nonleaf=False)
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    after = prog.branch(BR_MORE_ROWS)
    prog.branch(BR_ALWAYS, finish)
    prog.patch(after, prog.release(register(R_GATE), EX))  # more rows in the call: walk again
    prog.row()
    prog.branch(BR_ALWAYS, walk)
    # Someone split the page while this session waited: insert without splitting.
    prog.patch(to_late, _insert_row(prog, v))
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.branch(BR_ALWAYS, after)
    # The parent is full too: start over from an EX root and split both.
    prog.patch(to_widen, prog.release(register(R_PARENT), EX))
    prog.release(register(R_ROOT), SH)
    _walk(prog, EX, EX)
    to_late_root = prog.branch(BR_NOT_FULL)
    _split(prog, v, nonleaf=True)
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.branch(BR_ALWAYS, after)
    prog.patch(to_late_root, _insert_row(prog, v))
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.branch(BR_ALWAYS, after)
    return prog, start


def _collect(v: dict[str, Any]):
    """What the run adds to ``Result.extra``: splits, pages, query duration and the insert log for a heat map."""
    def collect(s: st.State) -> dict[str, Any]:
        bt = s.bt
        n_leaves = int(bt[st.BT_LEAVES])
        leaves = s.leaves[:n_leaves]
        rank = np.full(int(bt[st.BT_PAGES]), -1, dtype=np.int64)
        rank[leaves] = np.arange(n_leaves)
        n = int(bt[st.BT_HEATN])
        pages = s.heat[:n, 1].astype(np.int64)
        done = s.wi[:, st.W_STATE] == st.DONE
        duration_us = float((s.wf[done, st.WF_TSTATE] - s.wf[done, st.WF_ARRIVE] - s.wf[done, st.WF_SLEPT]).sum())
        rows = int(s.gi[st.G_UNITS])
        return {
            "rows": rows,
            "leaf_pages": n_leaves,
            "mid_splits": int(bt[st.BT_MID_SPLITS]),
            "end_splits": int(bt[st.BT_END_SPLITS]),
            "nonleaf_splits": int(bt[st.BT_NONLEAF_SPLITS]),
            "rows_per_page": rows_per_page(v["row_bytes"]),
            "query_duration_ms": duration_us / 1000.0,
            "cpu_ms": float(s.wf[:, st.WF_CPU].sum()) / 1000.0,
            "inserts": pd.DataFrame({
                "time_ms": s.heat[:n, 0] / 1000.0,
                "page": pages,
                "leaf_position": rank[pages] / max(1, n_leaves - 1),
            }),
        }
    return collect


def build(v: dict[str, Any]) -> Workload:
    """One shared program; sessions bound to schedulers round-robin; latches: roots, allocation, gates, pages.

    The roots come first so that the BUFFER class is the first row of the latch statistics.
    """
    prog, start = program(v)
    n, s, t = v["sessions"], v["schedulers"], trees(v)
    pages = max_pages(v)
    knobs = latch_knobs(v)
    gate = LatchSpec("BTREE_INSERT_FLOW_CONTROL", policy="unfair", spin_us=0.1, spins_per_round=1,
                     max_backoffs=0, backoff_us=0.0, wait_type="BTREE_INSERT_FLOW_CONTROL")
    buffer = LatchSpec("BUFFER", "PAGELATCH", shown_modes=("SH", "EX"), **knobs)
    latches = ([buffer] * t + [LatchSpec("ALLOCATION", "LATCH", **knobs)] + [gate] * (t * s)
               + [buffer] * pages)
    rows = total_rows(v)
    return Workload(
        program=prog, worker_start=[start] * n, worker_scheduler=[w % s for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=latches, schedulers=s, quantum_us=v["quantum_ms"] * 1000.0,
        context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"],
        expected_acquires=4 * rows, count_units=True,
        index=IndexSpec(strategy=v["key"], capacity=rows_per_page(v["row_bytes"]), fanout=fanout(v["key"]),
                        buckets=v["buckets"], trees=t, pages=pages, heat_rows=rows,
                        page_latch0=1 + t + t * s, root_latch0=0,
                        gate_latch0=1 + t if v["optimize_for_sequential_key"] == "on" else -1),
        collect=_collect(v),
    )


def check(v: dict[str, Any]) -> None:
    """Whole calls only, and a bounded number of rows."""
    if v["inserts_per_session"] % v["batch_rows"]:
        raise ParameterError(
            f"inserts_per_session={v['inserts_per_session']} is not a whole number of calls of "
            f"batch_rows={v['batch_rows']}: use a batch size that divides it")
    if total_rows(v) > MAX_ROWS:
        raise ParameterError(
            f"sessions={v['sessions']} x inserts_per_session={v['inserts_per_session']} is "
            f"{total_rows(v):,} rows: use at most {MAX_ROWS:,} in all")
    if max_pages(v) > MAX_PAGES:
        raise ParameterError(
            f"sessions={v['sessions']} x inserts_per_session={v['inserts_per_session']} rows of row_bytes="
            f"{v['row_bytes']} could fill {max_pages(v):,} pages: use at most {MAX_PAGES:,} (fewer or smaller rows)")


SCENARIO = Scenario("last-page-insert", __doc__.strip().splitlines()[0], PARAMS, build, check)
