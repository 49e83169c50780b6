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
again taking the parent in EX, latches the allocation page in UP for
``alloc_us`` (SQL Server latches PFS, GAM and SGAM pages in PAGELATCH_UP),
and holds the leaf ``new_page_us`` longer to format the new page, plus
``move_row_us`` per row moved.  An ascending key starts an empty page at the
end (nothing moves); any other key splits the page in the middle.  A full
parent is split under an EX root.  After its last release a call waits
``log_flush_us`` for its commit's log flush (WRITELOG), in its duration but
off every latch.

A page latch's hold grows by ``contender_cost_us`` for every worker queued on
it when the row's work starts: the queue's own cost on the owner, which
Lahoud (2019) describes as throughput falling as insert threads are added,
and which feeds itself (a longer hold, a longer queue) into the convoy she
calls a cliff.  No source measures such a cost or names its cause; its form
(in proportion to the queue) is the model's assumption and its size is fitted.  With ``optimize_for_sequential_key`` on,
an unfair gate per scheduler and tree lets one session per scheduler into
the part of the insert that latches pages (BTREE_INSERT_FLOW_CONTROL), and a
session whose quantum has less left than its insert needs yields first.

Latch classes: BUFFER (every index page and the allocation page,
PAGELATCH_SH/UP/EX).

The defaults are the costs chapter 9's fit assumes: the hot-page chapter's
calibration of Poché's machine (seed 002) as issue 41 left it, for 200
inserts a session instead of 1,000.  That calibration charged a new page's
allocation on top of a row's work that already held it (the batched 4.16 us
a row); chapter 5 now takes the page share out (1.62 us of the row's own
work) and runs its main setting at the 40 us hold Poché's throttled waits
favour (:data:`models.book.analysis.hot_page.SETUP_002`), each end with the
queue's cost and the new page refitted.  Moving the fit to it is left open: on the test
corpus it moves the fit's self-correction of the call's CPU past the truth
on the busy-instance capture, which needs its own study.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from models.engine import state
from models.engine.program import (
    BR_ALWAYS, BR_FULL, BR_MORE_ROWS, BR_NOT_FULL, BR_OUTSIDE, BR_PARENT_FULL, DISTRIBUTIONS, EX, EXPONENTIAL,
    FIND_LEAF, FIND_PARENT, FIND_ROOT, FIXED, R_GATE, R_LEAF, R_NEW, R_PARENT, R_ROOT, SCALED, SH, UP,
    Program, register,
)
from models.counters import evidence
from models.counters.snapshot import BATCHES, TRANSACTIONS, Snapshot
from models.params import MAX_SESSIONS, Param, ParameterError, common_params, latch_knobs
from models.calibration import WAKEUP_BAND_US
from models.scenarios.base import (
    OTHER_IN_DATABASE, Band, Capture, Change, DiagnosisRule, RoundTrip, Scenario, Throughput, database_share_band,
    wakeup_band,
)
from models.workload import IndexSpec, LatchSpec, Workload, simulate

PAGE_ROW_BYTES = 8_096   # an 8,192-byte page less its 96-byte header
SLOT_BYTES = 2           # each row's entry in the page's slot array
MAX_ROW_BYTES = 8_060    # SQL Server's largest in-row record
CHILD_POINTER_BYTES = 9  # a non-leaf row: its key plus a 6-byte page pointer, a status byte and a slot
KEY_BYTES = {"identity": 8, "guid": 16, "reverse-bits": 4, "hash-bucket": 9, "partitioned": 8}
MAX_ROWS = 2_000_000     # rows a run may insert (one latch per page the run could allocate)
MAX_PAGES = 500_000      # pages a run may allocate: each has its latch and its row of the page table

PARAMS = (
    Param("sessions", "int", 100, "", 1, MAX_SESSIONS, help="sessions inserting concurrently"),
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
    Param("think_us", "float", 3_310.0, "us", 0.0, 1_000_000.0,
          help="mean time between calls spent outside SQL Server (client round trip)"),
    Param("cpu_before_us", "float", 112.19, "us", 0.0, 100_000.0, help="CPU of a call before it latches a page"),
    Param("cpu_under_us", "float", 4.16, "us", 0.01, 100_000.0, help="CPU per row under the leaf page latch"),
    Param("cpu_dist", "choice", "fixed", choices=("fixed", "exponential"),
          help="CPU bursts exactly their mean, or exponential with that mean"),
    Param("new_page_us", "float", 79.3, "us", 0.0, 100_000.0, help="extra hold of the leaf to format a new page"),
    Param("alloc_us", "float", 20.0, "us", 0.0, 100_000.0,
          help="hold of the allocation page's latch (PAGELATCH_UP) per new page"),
    Param("log_flush_us", "float", 9.4, "us", 0.0, 100_000.0,
          help="the commit's log flush per call, after the page latches are released (WRITELOG)"),
    Param("contender_cost_us", "float", 2.7, "us", 0.0, 1_000.0,
          help="extra hold of a page latch per worker queued on it when it is taken (the queue's cost, fitted)"),
    Param("move_row_us", "float", 1.0, "us", 0.0, 10_000.0, help="extra hold per row a mid-page split moves"),
) + common_params(schedulers=16)


def rows_per_page(row_bytes: int) -> int:
    """Rows an 8 KB page holds: 8,096 bytes over the row plus its 2-byte slot."""
    return max(1, PAGE_ROW_BYTES // (row_bytes + SLOT_BYTES))


def fanout(key: str) -> int:
    """Children a non-leaf page holds: 8,096 bytes over the key plus pointer, status and slot bytes."""
    return PAGE_ROW_BYTES // (KEY_BYTES[key] + CHILD_POINTER_BYTES)


def trees(values: dict[str, Any]) -> int:
    """B-trees the rows go into: one per partition for the partitioned key, else one."""
    return values["partitions"] if values["key"] == "partitioned" else 1


def total_rows(values: dict[str, Any]) -> int:
    """Rows the run inserts."""
    return values["sessions"] * values["inserts_per_session"]


def max_pages(values: dict[str, Any]) -> int:
    """Pages the run can allocate at most (leaf and non-leaf), from how splits fill pages.

    A mid-page split leaves both pages at least half full and rows are never
    deleted, so leaves under half full are the trees' first pages and pages
    started at the end of a full page: at most R / floor(c/2) + R / c + 2t
    leaves for R rows, c rows a page and t trees (R + t when a page holds one
    row).  A non-leaf split leaves both halves with fanout / 2 children.
    """
    n, t, c = total_rows(values), trees(values), rows_per_page(values["row_bytes"])
    leaves = n + t if c == 1 else n // (c // 2) + n // c + 2 * t + 2
    return leaves + leaves // max(1, fanout(values["key"]) // 2) + 2 * t + 2


def _walk(prog: Program, root_mode: int, parent_mode: int) -> None:
    """Walk down to the row's leaf: root, parent, leaf, each latch let go once the next is held."""
    prog.acquire(register(R_ROOT), root_mode)
    prog.find(FIND_PARENT)
    prog.acquire(register(R_PARENT), parent_mode)
    if root_mode == SH and parent_mode == SH:
        prog.release(register(R_ROOT), SH)
    prog.find(FIND_LEAF)
    prog.acquire(register(R_LEAF), EX)
    prog.cpu(0.0, FIXED, contended_latch=register(R_LEAF))  # what the workers queued behind add to this hold


def _insert_row(prog: Program, values: dict[str, Any]) -> int:
    """The row's own work under the leaf latch, then the insert; returns its address."""
    start = prog.cpu(values["cpu_under_us"], DISTRIBUTIONS[values["cpu_dist"]])
    prog.insert()
    prog.unit()
    return start


def alloc_latch(values: dict[str, Any]) -> int:
    """The allocation latch's index: after the roots (latches 0 .. trees - 1), before the gates and pages."""
    return trees(values)


def _split(prog: Program, values: dict[str, Any], nonleaf: bool) -> None:
    """Allocate a page, split the leaf (and its parent when ``nonleaf``), and insert the row there."""
    prog.acquire(alloc_latch(values), UP)
    prog.cpu(values["alloc_us"], FIXED)
    prog.release(alloc_latch(values), UP)
    prog.split()
    prog.acquire(register(R_NEW), EX)  # the new page: nobody else can reach it yet
    prog.cpu(values["new_page_us"] * (2 if nonleaf else 1), FIXED)
    prog.cpu(values["move_row_us"], SCALED)
    _insert_row(prog, values)
    prog.release(register(R_NEW), EX)


def program(values: dict[str, Any]) -> tuple[Program, int]:
    """The one program every session runs (keys are made at run time); returns it and its start."""
    prog = Program()
    calls = values["inserts_per_session"] // values["batch_rows"]
    flow = values["optimize_for_sequential_key"] == "on"
    margin = values["cpu_under_us"] * values["batch_rows"] if flow else 0.0
    start = call = prog.start()
    if values["think_us"] > 0:
        prog.sleep(values["think_us"], EXPONENTIAL)
    prog.cpu(values["cpu_before_us"], DISTRIBUTIONS[values["cpu_dist"]])
    prog.row(values["batch_rows"])
    walk = prog.find(FIND_ROOT)
    prog.yield_point(margin)
    prog.acquire(register(R_GATE), EX)
    _walk(prog, SH, SH)
    prog.release(register(R_PARENT), SH)
    to_split = prog.branch(BR_FULL)
    put = _insert_row(prog, values)
    to_next = prog.branch(BR_MORE_ROWS)
    prog.release(register(R_LEAF), EX)
    finish = prog.release(register(R_GATE), EX)
    if values["log_flush_us"] > 0:  # the commit: the call waits for its log records to reach the disk
        prog.sleep(values["log_flush_us"], FIXED)
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
    prog.cpu(0.0, FIXED, contended_latch=register(R_LEAF))
    to_late = prog.branch(BR_NOT_FULL)
    _split(prog, values, nonleaf=False)
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    after = prog.branch(BR_MORE_ROWS)
    prog.branch(BR_ALWAYS, finish)
    prog.patch(after, prog.release(register(R_GATE), EX))  # more rows in the call: walk again
    prog.row()
    prog.branch(BR_ALWAYS, walk)
    # Someone split the page while this session waited: insert without splitting.
    prog.patch(to_late, _insert_row(prog, values))
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.branch(BR_ALWAYS, after)
    # The parent is full too: start over from an EX root and split both.
    prog.patch(to_widen, prog.release(register(R_PARENT), EX))
    prog.release(register(R_ROOT), SH)
    _walk(prog, EX, EX)
    to_late_root = prog.branch(BR_NOT_FULL)
    _split(prog, values, nonleaf=True)
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.branch(BR_ALWAYS, after)
    prog.patch(to_late_root, _insert_row(prog, values))
    prog.release(register(R_LEAF), EX)
    prog.release(register(R_PARENT), EX)
    prog.release(register(R_ROOT), EX)
    prog.branch(BR_ALWAYS, after)
    return prog, start


def _collect(values: dict[str, Any]):
    """What the run adds to ``Result.extra``: splits, pages, query duration and the insert log for a heat map."""
    def collect(final: state.State) -> dict[str, Any]:
        bt = final.bt
        n_leaves = int(bt[state.BT_LEAVES])
        leaves = final.leaves[:n_leaves]
        rank = np.full(int(bt[state.BT_PAGES]), -1, dtype=np.int64)
        rank[leaves] = np.arange(n_leaves)
        n = int(bt[state.BT_HEAT_USED])
        pages = final.heat[:n, 1].astype(np.int64)
        done = final.workers[:, state.W_STATE] == state.DONE
        # Sleeps are time away from SQL Server but for the commits' log flushes, which a query's duration holds.
        flushes_us = int(done.sum()) * (values["inserts_per_session"] // values["batch_rows"]) * values["log_flush_us"]
        duration_us = float((final.worker_times[done, state.WF_STATE_SINCE] - final.worker_times[done, state.WF_ARRIVAL]
                             - final.worker_times[done, state.WF_SLEPT]).sum()) + flushes_us
        rows = int(final.run_cells[state.G_UNITS_DONE])
        return {
            "rows": rows,
            "leaf_pages": n_leaves,
            "mid_splits": int(bt[state.BT_MID_SPLITS]),
            "end_splits": int(bt[state.BT_END_SPLITS]),
            "nonleaf_splits": int(bt[state.BT_NONLEAF_SPLITS]),
            "rows_per_page": rows_per_page(values["row_bytes"]),
            "query_duration_ms": duration_us / 1000.0,
            "cpu_ms": float(final.worker_times[:, state.WF_CPU].sum()) / 1000.0,
            "inserts": pd.DataFrame({
                "time_ms": final.heat[:n, 0] / 1000.0,
                "page": pages,
                "leaf_position": rank[pages] / max(1, n_leaves - 1),
            }),
        }
    return collect


def build(values: dict[str, Any]) -> Workload:
    """One shared program; sessions bound to schedulers round-robin; latches: roots, allocation, gates, pages.

    The roots come first so that the BUFFER class is the first row of the latch statistics.
    """
    prog, start = program(values)
    n, s, t = values["sessions"], values["schedulers"], trees(values)
    pages = max_pages(values)
    knobs = latch_knobs(values)
    gate = LatchSpec("BTREE_INSERT_FLOW_CONTROL", policy="unfair", spin_us=0.1, spins_per_round=1,
                     max_backoffs=0, backoff_us=0.0, wait_type="BTREE_INSERT_FLOW_CONTROL")
    buffer = LatchSpec("BUFFER", "PAGELATCH", shown_modes=("SH", "UP", "EX"),
                       contender_cost_us=values["contender_cost_us"], **knobs)
    latches = [buffer] * (t + 1) + [gate] * (t * s) + [buffer] * pages
    rows = total_rows(values)
    return Workload(
        program=prog, worker_start=[start] * n, worker_scheduler=[w % s for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=latches, schedulers=s, quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=4 * rows, count_units=True,
        index=IndexSpec(strategy=values["key"], capacity=rows_per_page(values["row_bytes"]), fanout=fanout(values["key"]),
                        buckets=values["buckets"], trees=t, pages=pages, heat_rows=rows,
                        page_latch0=1 + t + t * s, root_latch0=0,
                        gate_latch0=1 + t if values["optimize_for_sequential_key"] == "on" else -1),
        collect=_collect(values),
    )


def check(values: dict[str, Any]) -> None:
    """Whole calls only, and a bounded number of rows."""
    if values["inserts_per_session"] % values["batch_rows"]:
        raise ParameterError(
            f"inserts_per_session={values['inserts_per_session']} is not a whole number of calls of "
            f"batch_rows={values['batch_rows']}: use a batch size that divides it")
    if total_rows(values) > MAX_ROWS:
        raise ParameterError(
            f"sessions={values['sessions']} x inserts_per_session={values['inserts_per_session']} is "
            f"{total_rows(values):,} rows: use at most {MAX_ROWS:,} in all")
    if max_pages(values) > MAX_PAGES:
        raise ParameterError(
            f"sessions={values['sessions']} x inserts_per_session={values['inserts_per_session']} rows of row_bytes="
            f"{values['row_bytes']} could fill {max_pages(values):,} pages: use at most {MAX_PAGES:,} (fewer or smaller rows)")


# ----------------------------------------------------------------------------- the fit


# What no capture can tell of the hot page (with the sessions' share and the wake-up, Scenario.bands), each with
# the measurement that would settle it: the one home of that advice, which the estimator's assumed values quote.
CPU_UNDER_BAND = Band(param="cpu_under_us", low=2.0, high=40.0,
                      what="the row's own work under the leaf latch (the rest of the hold is the queue's cost)",
                      measure="a batched insert's time per row (many rows in one call, as Poche's 500-row test)")
LOG_FLUSH_BAND = Band(param="log_flush_us", low=9.4, high=1_000.0, what="the commit's log flush per call",
                      measure="io_stall_write_ms per write of the database's log file (sys.dm_io_virtual_file_stats), "
                              "or WRITELOG per wait where the inserts' commits are most of them")


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """Sessions inserting at the end of an ascending key: the closed repairman on the last page's EX latch.

    Rows per second from the transactions (one row per call assumed); a row
    waits for the leaf when PAGELATCH_EX counts a wait.  The repairman gives
    the leaf's mean hold per row; less the split's share, it is the row's own
    work plus what the queue adds.  The row's work is assumed (the batched
    per-row cost) and the queue's cost per waiter is the one at which the
    model itself inserts the captured rows per second (:func:`queue_cost`).
    The CPU per row from the schedulers less the hold is the call's CPU before
    it; the rest of the cycle, less the commit's assumed flush, is think time.
    """
    sessions, sess_how = evidence.workload_sessions(snap, setup["sessions"], "sessions")
    calls = snap.get("counter", TRANSACTIONS) or snap.get("counter", BATCHES)
    if not calls:
        raise evidence.FitError("the snapshot has no Transactions/sec or Batch Requests/sec counter: the fit needs the "
                       "rows inserted per second (capture the counters, as the script does by default)")
    rows = calls * setup["batch_rows"]
    index = snap.table("index").sort_values("count", ascending=False)
    inserted = snap.get("index_insert", index.iloc[0]["name"]) if len(index) else 0.0
    if 0 < inserted < rows:
        # Transactions/sec counts the database's other work too: the hot index's own leaf inserts
        # (leaf_insert_count) are the rows, and the calls follow from the rows per call.
        rows = inserted
        calls = rows / setup["batch_rows"]
    visits_per_s = rows / snap.interval_s
    ex = snap.get("wait", "PAGELATCH_EX")
    wait_us = (snap.get("wait", "PAGELATCH_EX", "time_ms") + snap.get("wait", "PAGELATCH_SH", "time_ms")) * 1000.0
    obs = evidence.latch_obs(snap, "BUFFER", "PAGELATCH")
    instance = ex + snap.get("wait", "PAGELATCH_SH")
    if len(index) and 0 < index.iloc[0]["count"] < 0.999 * instance:
        # Other work waited on other pages too (the wait statistics are the instance's): the hot index's own row
        # (sys.dm_db_index_operational_stats) holds the inserts' waits, EX in the instance's proportion.
        ex *= float(index.iloc[0]["count"]) / instance
        wait_us = float(index.iloc[0]["time_ms"]) * 1000.0
    evidence.check_wait_budget("PAGELATCH_EX and PAGELATCH_SH", wait_us, sessions, snap.interval_s,
                       max(snap.get("wait", f"PAGELATCH_{mode}", "max_time_ms") for mode in ("EX", "SH")))
    p, wait = ex / rows, wait_us / rows
    queued_us, queued_how = evidence.runnable_delay_us(snap)
    charged, charged_how = evidence.feasible_handoff(sessions, sessions / visits_per_s * 1e6, p, obs.handoff_us,
                                                     queued_us, evidence.handoff_ceiling_us(snap))
    if charged < obs.handoff_us:  # feasible_handoff then says why in charged_how
        # The CPU queueing each wait ended with is the instance's, not the latch's: it leaves the latch wait for
        # the time between calls (think), which the model's schedulers, without the other work, do not produce.
        shifted_us = min(queued_us, obs.handoff_us - charged)  # per wait, moved from the latch to the think time
        waits_here = ex + snap.get("wait", "PAGELATCH_SH") * (ex / max(snap.get("wait", "PAGELATCH_EX"), 1e-9))
        wait_us = max(wait_us - shifted_us * waits_here, 0.0)
        wait = wait_us / rows
        charged_how += f"; {queued_how}, so as much of each wait is left out of the latch's wait"
        obs = dataclasses.replace(obs, handoff_us=charged, signal_us=obs.handoff_us)  # the latch's part of it
    hold, _ = evidence.closed_repairman(sessions, sessions / visits_per_s * 1e6, wait, p, charged)
    per_page = rows_per_page(setup["row_bytes"])
    work = hold - setup["new_page_us"] / per_page
    queue = wait_us / (snap.interval_s * 1e6)  # workers waiting on a page latch, on average
    cpu_total_ms, cpu_how = evidence.workload_cpu_ms(snap)
    cpu_row = cpu_total_ms * 1000.0 / rows
    before = cpu_row - hold - setup["alloc_us"] / per_page - setup["context_switch_us"] * (1 + p)
    flush_us, flush_how = setup["log_flush_us"], ""
    if snap.get("wait", "WRITELOG") >= 0.5 * calls:  # about a flush wait per call: the inserts' own commits
        flush_us = snap.get("wait", "WRITELOG", "time_ms") * 1000.0 / snap.get("wait", "WRITELOG")
        flush_how = (f"WRITELOG's {snap.get('wait', 'WRITELOG', 'time_ms'):,.0f} ms over "
                     f"{snap.get('wait', 'WRITELOG'):,.0f} waits: the commit's flush per call")
    think = sessions / visits_per_s * 1e6 - wait - cpu_row - flush_us / setup["batch_rows"]
    how = (f"{sessions} sessions at {visits_per_s:,.0f} rows/s ({calls:,.0f} transactions), {wait:,.1f} us of page latch wait "
           f"per row, {p:.2f} PAGELATCH_EX waits per row (above 1: some rows wait twice, and the page is seldom free): the repairman and "
           f"the busy-time bound give a hold of {hold:,.1f} us, {work:,.1f} us less the new page's share "
           f"({setup['new_page_us']:g} us per {per_page} rows)")
    fitted = {"cpu_before_us": (before, "us", f"{cpu_row:,.1f} us of CPU per row ({cpu_how}) less the latch hold, "
                                "the allocation's share and the switches"),
              "think_us": (think, "us", "the cycle per session less the waits, the CPU and the commit's flush "
                           "(Little's law)")}
    assumed = {"batch_rows": ("rows per call", "the insert's code, or leaf_insert_count against Transactions/sec "
                                               "at a time the database runs nothing else"),
               "row_bytes": ("the row size", "the table's average record size (sys.dm_db_index_physical_stats)"),
               "new_page_us": ("a page split's extra hold is part of the mean hold per row",
                               "the splits' own latch holds (a trace of page splits)"),
               "log_flush_us": ("the commit's log flush, which the capture does not split from the call",
                                LOG_FLUSH_BAND.measure)}
    if flush_how:
        del assumed["log_flush_us"]
    schedulers, sched_how = evidence.schedulers(snap)
    model = dict(setup, sessions=sessions, schedulers=schedulers, cpu_before_us=max(before, 0.0), log_flush_us=flush_us,
                 think_us=max(think, 0.0))
    # The row's work is assumed and the queue's cost fitted, whatever the load: a snapshot shows their sum, and a
    # light load (no queue) gives a cost of 0, which the model then has to reproduce like any other.
    cost, at_zero = queue_cost(model, visits_per_s)
    fitted["contender_cost_us"] = (
        cost, "us",
        how + f"; the row's assumed {setup['cpu_under_us']:g} us of work and what the leaf's queue adds (on average "
        f"{queue:,.1f} workers wait on a page latch; a hold meets fewer at the leaf): the cost per waiter at which the "
        f"model itself inserts {visits_per_s:,.0f} rows/s (without any, {at_zero:,.0f})")
    assumed["cpu_under_us"] = ("the row's own work under the latch (the queue's cost and the work share the hold)",
                               CPU_UNDER_BAND.measure)
    named = f"waits on one index's last page ({index.iloc[0]['name']}): an ascending key" if len(index) else \
        "waits on one index's last page: an ascending key"
    settings = {"sessions": (sessions, sess_how), "schedulers": (schedulers, sched_how), "key": ("identity", named)}
    if flush_how:
        settings["log_flush_us"] = (flush_us, flush_how)
    switch_us = setup["context_switch_us"]  # the model's own switch, as assumed
    bounds: dict = {}
    if snap.setting("database_cpu_ms") is not None:
        # The database's sessions' CPU holds any other work in that database too (as its sessions do: the sessions
        # band): up to OTHER_IN_DATABASE of it may not be the inserts', which lowers the CPU before the latch and
        # lengthens the think time by as much.  The ranges hold that span beside the sampling spread.
        spared = OTHER_IN_DATABASE * cpu_row
        bounds["cpu_before_us"] = (before - spared, before)
        bounds["think_us"] = (think, think + spared)
        caveats_cpu = [f"up to {OTHER_IN_DATABASE:.0%} of the database's CPU may be other work in it, "
                       f"{spared:,.1f} us a row: the ranges of cpu_before_us and think_us hold that span"]
    else:
        caveats_cpu = []
    evidence.handoff(fitted, assumed, obs, switch_us, evidence.shared_schedulers(sessions, schedulers),
                     queued_us=queued_us, bounds=bounds)
    caveats = _caveats(snap, snap.get("counter", TRANSACTIONS) or snap.get("counter", BATCHES)) + (
        [charged_how] if charged_how else []) + caveats_cpu
    return evidence.Point(fitted, settings, assumed, visits_per_s, caveats=caveats, bounds=bounds)


CALIBRATION_SEED = 1         # the model runs queue_cost makes: one fixed seed, so a fit is a pure function of its input
CALIBRATION_ROWS = 10_000    # rows each of those runs inserts
MAX_QUEUE_COST_US = 50.0     # the highest queue cost queue_cost tries


def model_rows_per_s(values: dict[str, Any]) -> float:
    """Rows per second of one run of the model at ``values`` (sized to CALIBRATION_ROWS rows)."""
    values = dict(values, **size_run(values, CALIBRATION_ROWS, 0.0))
    final = simulate(build(values), CALIBRATION_SEED).state
    return float(final.run_cells[state.G_UNITS_DONE]) / float(final.run_times[state.GF_END]) * 1e6


def queue_cost(values: dict[str, Any], rows_per_s: float, steps: int = 10) -> tuple[float, float]:
    """The queue's cost per waiter at which the model at ``values`` inserts ``rows_per_s``, and its rate without it.

    The cost feeds itself (a longer hold, a longer queue), so no closed form inverts it: the model is run and
    the cost bisected (rows/s fall as it grows).  At or over the rate without any cost, the cost is 0; a rate
    the model does not fall to even at MAX_QUEUE_COST_US is a FitError that says so.
    """
    at_zero = model_rows_per_s(dict(values, contender_cost_us=0.0))
    if rows_per_s >= at_zero:
        return 0.0, at_zero
    at_most = model_rows_per_s(dict(values, contender_cost_us=MAX_QUEUE_COST_US))
    if at_most > rows_per_s:
        raise evidence.FitError(
            f"the capture's {rows_per_s:,.0f} rows/s are fewer than the model inserts even with a queue cost of "
            f"{MAX_QUEUE_COST_US:g} us per waiter ({at_most:,.0f} rows/s): something else holds the inserts back "
            "(another latch, the log, the client), which this model does not have")
    low, high = 0.0, MAX_QUEUE_COST_US
    for _ in range(steps):
        mid = (low + high) / 2
        if model_rows_per_s(dict(values, contender_cost_us=mid)) > rows_per_s:
            low = mid
        else:
            high = mid
    return (low + high) / 2, at_zero


OTHER_WORK = 1.5  # more batch requests than this many per transaction: the instance ran other work too


def _caveats(snap: Snapshot, calls: float) -> list[str]:
    """What the estimate assumes of the capture: the instance's CPU and sessions are this workload's, a row a call."""
    said = evidence.instance_caveats(snap)
    batches, transactions = snap.get("counter", BATCHES), snap.get("counter", TRANSACTIONS)
    if transactions > 0 and batches > OTHER_WORK * transactions:
        said.append(f"the instance ran {batches:,.0f} batch requests for {transactions:,.0f} transactions of the "
                    "captured database: other work ran beside the inserts, so the CPU per row charged to them is an "
                    "upper bound")
    inserted = snap.table("index_insert")["count"].fillna(0).sum()
    if inserted > 0:
        said.append(f"the index rows count {inserted:,.0f} leaf inserts (leaf_insert_count) for {calls:,.0f} "
                    f"transactions, {inserted / calls:,.2f} rows per transaction; the fit takes the rows from the "
                    "fewer of the two (other work's transactions in the database, or several rows a call) and "
                    "assumes one row a call")
    else:
        said.append("the capture has no leaf_insert_count (index_insert rows), so the rows per call are not known "
                    "and one is assumed")
    return said


HOT_SHARE = 0.5  # one index must hold at least this share of the instance's page latch waits to be a hot page


# What to do when the capture's index rows cannot hold the waits.
CAPTURE_ADVICE = ("run the capture script in the user database whose inserts wait (sqlcmd -d DATABASE, or set "
                  "@database in the script): its index rows then say which index the waits are on")


def claims(clue: evidence.Clue) -> list[str] | None:
    """PAGELATCH on top: the hot page when one index of the captured user database holds the instance's waits.

    The index rows (sys.dm_db_index_operational_stats) are the captured
    database's, the wait statistics the whole instance's: the hot index must
    hold at least HOT_SHARE of the instance's page latch waits, the sampled
    waiters must be on the captured database's pages, and the waits must be
    writers' (EX above SH).  Tempdb and allocation pages were named before
    this rule (:func:`models.counters.evidence.page_latch_elsewhere`); a
    capture whose index rows are empty or a system database's refuses,
    naming the database context.
    """
    if clue.family != "PAGELATCH":
        return None
    if clue.top_wait != "PAGELATCH_EX" and clue.top_wait != "PAGELATCH_SH":
        raise evidence.Refusal([f"{clue.top_wait} on top, on pages that are not allocation pages: the hot page's "
                                "inserts wait in EX (and their walks in SH), so no model here covers it"])
    snap = clue.snap
    db_id, where = evidence.database_context(snap)
    system = evidence.system_database(snap)
    waits = snap.table("wait")
    instance = float(waits[waits["name"].str.fullmatch(r"PAGELATCH_(KP|SH|UP|EX|DT)")]["count"].fillna(0).sum())
    index = snap.table("index")
    index = index[index["count"].fillna(0) > 0]
    if system is not None:
        raise evidence.Refusal([f"the capture was taken in {system}, a system database: its index rows (here "
                                f"{len(index)}) are not the user tables' whose inserts wait, so the waits cannot be "
                                "placed on an index", CAPTURE_ADVICE], name=evidence.WRONG_DATABASE)
    if index.empty:
        raise evidence.Refusal([f"no index of {where} has page latch waits in the capture, so the instance's "
                                f"{instance:,.0f} page latch waits cannot be placed on an index (a capture from "
                                "another database, or one without the index rows)", CAPTURE_ADVICE],
                               name=evidence.WRONG_DATABASE)
    found = []
    pages = evidence.waited_pages(snap)
    if pages:
        top = pages[0]
        if db_id is not None and top.database_id != db_id:
            raise evidence.Refusal([f"the page latch waiters seen at the two reads were mostly on page "
                                    f"{top.database_id}:{top.file_id}:{top.page_id}, in database {top.database_id}, "
                                    f"not in {where} whose index rows the capture holds", CAPTURE_ADVICE],
                                   name=evidence.WRONG_DATABASE)
        found.append(f"page {top.database_id}:{top.file_id}:{top.page_id} had "
                     f"{top.waiters / sum(p.waiters for p in pages):.0%} of the page latch waiters seen at the two reads")
    hot = index.sort_values("count", ascending=False).iloc[0]
    share = hot["count"] / instance if instance > 0 else math.inf
    held = (f"{hot['name']} holds {min(share, 1.0):.0%} of the instance's page latch waits ({hot['count']:,.0f} of "
            f"{instance:,.0f} in sys.dm_os_wait_stats)")
    if share < HOT_SHARE:
        raise evidence.Refusal(found + [held + f": under {HOT_SHARE:.0%}, so most waits are elsewhere (other "
                                        "databases, tempdb, or spread over indexes), not one hot page of this "
                                        "database, which no model here covers"])
    found.insert(0, held + ": one hot index")
    if snap.has("index_tree", hot["name"]):
        tree = snap.get("index_tree", hot["name"])
        found.append(f"{tree / hot['count']:.0%} of its waits were on non-leaf pages (tree_page_latch_wait_count): "
                     "the rest on leaf pages")
    ex, sh = snap.get("wait", "PAGELATCH_EX"), snap.get("wait", "PAGELATCH_SH")
    if ex <= sh:
        raise evidence.Refusal(found + [f"PAGELATCH_SH waits ({sh:,.0f}) are as many as PAGELATCH_EX ({ex:,.0f}): "
                                        "readers, not inserts at one page's end, which no model here covers"])
    return found + [f"PAGELATCH_EX waits outnumber PAGELATCH_SH {ex:,.0f} to {sh:,.0f}: writers queue for one "
                    "page, as inserts at the end of an ascending key do"]


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """An insert call is a batch and a transaction; every page latch wait, row and leaf page is the one index's."""
    calls = float(result.extra.get("units", 0)) / values["batch_rows"]
    waits = result.wait_stats[result.wait_stats["wait_type"].str.startswith("PAGELATCH_")]
    name = "dbo.orders.PK_orders"
    allocated = float(result.extra.get("mid_splits", 0) + result.extra.get("end_splits", 0))
    return [{"source": "counter", "name": BATCHES, "count": calls},
            {"source": "counter", "name": TRANSACTIONS, "count": calls},
            {"source": "index", "name": name, "count": waits["waiting_tasks_count"].sum(),
             "time_ms": waits["wait_time_ms"].sum()},
            {"source": "index_insert", "name": name, "count": float(result.extra.get("units", 0))},
            {"source": "index_allocation", "name": name, "count": allocated}]


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """Whole calls per session enough for ``visits`` rows, within the rows a run inserts."""
    sessions, batch = values["sessions"], values["batch_rows"]
    per = max(int(math.ceil(visits / sessions / batch)), 1) * batch
    most = MAX_ROWS // sessions // batch * batch
    if most < batch:
        raise ParameterError(f"{sessions} sessions of batch_rows={batch} rows per call need {sessions * batch:,} "
                             f"rows for one call each, more than the {MAX_ROWS:,} a run of the model inserts")
    return {"inserts_per_session": min(per, most)}


CHANGES = (
    Change(name="hash-key", what="a hash-bucket leading key", value="the buckets", param="buckets",
           sets=lambda fitted, given: {"key": "hash-bucket",
                                       "buckets": int(given) if given is not None else fitted["schedulers"]}),
    Change(name="guid-key", what="a random GUID leading key", value="", sets=lambda fitted, given: {"key": "guid"},
           leaves_out="random keys split pages in the middle: pages half full, more of them to keep in memory and "
                      "read (PAGEIOLATCH), and fragmentation; the model has the splits' latch holds only"),
    Change(name="sequential-key", what="OPTIMIZE_FOR_SEQUENTIAL_KEY", value="",
           sets=lambda fitted, given: {"optimize_for_sequential_key": "on"}),
    Change(name="batch", what="10 rows per call (batching)", value="the rows per call", param="batch_rows",
           sets=lambda fitted, given: {"batch_rows": int(given) if given is not None else 10}),
)

# The round trip (chapter 9's example capture): the calibration the fit assumes (these defaults, every value a
# capture's command line should show named), 1,000 rows a session, read for 5 s from 0.5 s into the run.
ROUND_TRIP_PARAMS = ("sessions", "inserts_per_session", "schedulers", "row_bytes", "think_us", "cpu_before_us",
                     "cpu_under_us", "log_flush_us", "contender_cost_us", "new_page_us", "alloc_us", "move_row_us")
ROUND_TRIP = RoundTrip(
    values={name: 1_000 if name == "inserts_per_session" else next(p.default for p in PARAMS if p.name == name)
            for name in ROUND_TRIP_PARAMS},
    window={"start_s": 0.5, "interval_s": 5.0})


SCENARIO = Scenario(
    name="last-page-insert", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="rows"),
    reported_waits=("PAGELATCH", "BTREE_INSERT_FLOW_CONTROL"),  # flow control moves waiting to its own wait type
    capture=Capture(session_param="sessions", rows=capture_rows),
    diagnosis=DiagnosisRule(label="PAGELATCH", looks_like="PAGELATCH_EX, half of the instance's on one index of the "
                            "captured user database", rank=2, claims=claims),
    estimate=estimate, size_run=size_run, size_params=("inserts_per_session",), changes=CHANGES,
    bands=(
        database_share_band("sessions"),
        CPU_UNDER_BAND,
        wakeup_band(*WAKEUP_BAND_US),
        LOG_FLUSH_BAND,
    ),
    round_trip=ROUND_TRIP,
)
