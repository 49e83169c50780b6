"""A parallel insert whose workers log through the parent's NESTING_TRANSACTION_FULL latch.

At MAXDOP n the insert runs n workers on n distinct schedulers (the parent
task waits on the exchange and takes no latch, so it is not simulated).  Each
worker inserts its share of ``rows``; every log record it writes needs the
parent transaction's NESTING_TRANSACTION_FULL latch in EX mode.  Minimal
logging writes about 3 log records per extent (PFS, GAM and IAM changes, as
Obbish counted); full logging of a bulk load adds one page-image record per
page.  Between log records a worker spends ``rows_per_record x cpu_per_row_us
+ cpu_per_log_record_us`` of CPU, then holds the latch ``hold_us`` (plus
``contender_cost_us`` for every other worker then waiting or spinning on the
latch: the cost of the latch's cache lines moving between more cores).  A
serial insert (MAXDOP 1) works in the parent transaction and takes no latch.

``busy_scheduler`` puts a CPU-bound MAXDOP 1 query (the co-tenant: it always
uses its full quantum) on that scheduler, sharing it with the parallel worker
bound there.
"""

from __future__ import annotations

import math
from typing import Any

from models.engine.program import DISTRIBUTIONS, EX, FIXED, Program
from models.params import Param, ParameterError, Scenario, common_params, latch_knobs
from models.workload import LatchSpec, Workload

EXTENT_PAGES = 8
RECORDS_PER_EXTENT = 3
FOREVER = 2**62

PARAMS = (
    Param("maxdop", "int", 8, "", 1, 64, help="parallel workers inserting (degree of parallelism)"),
    Param("rows", "int", 2_000_000, "rows", 1, 200_000_000, help="rows inserted in all"),
    Param("rows_per_page", "int", 100, "rows/page", 1, 8060, help="rows that fit on one 8 KB page"),
    Param("logging", "choice", "minimal", choices=("minimal", "full"),
          help="minimal: about 3 log records per extent; full: also one page image per page"),
    Param("cpu_per_row_us", "float", 1.0, "us", 0.0, 10_000.0, help="CPU to read and process one row"),
    Param("cpu_per_log_record_us", "float", 5.0, "us", 0.0, 10_000.0,
          help="CPU to prepare one log record, outside the latch"),
    Param("cpu_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="CPU between log records exactly its mean, or exponential with that mean"),
    Param("hold_us", "float", 2.0, "us", 0.01, 10_000.0, help="time the latch is held to add one log record"),
    Param("contender_cost_us", "float", 0.0, "us", 0.0, 1000.0,
          help="extra hold time per worker contending for the latch (cache-line coherency)"),
    Param("busy_scheduler", "int", -1, "", -1, 255,
          help="scheduler shared with a CPU-bound MAXDOP 1 query (-1: none)"),
) + common_params(schedulers=24)


def log_records(v: dict[str, Any]) -> int:
    """Log records (so latch acquires) the insert writes: 3 per extent, plus 1 per page if fully logged."""
    pages = math.ceil(v["rows"] / v["rows_per_page"])
    extents = math.ceil(pages / EXTENT_PAGES)
    return RECORDS_PER_EXTENT * extents + (pages if v["logging"] == "full" else 0)


def build(v: dict[str, Any]) -> Workload:
    """One program per worker with its share of log records, plus the optional co-tenant."""
    prog = Program()
    n = v["maxdop"]
    records = log_records(v)
    rows_per_record = v["rows"] / records
    between = rows_per_record * v["cpu_per_row_us"] + v["cpu_per_log_record_us"]
    dist = DISTRIBUTIONS[v["cpu_dist"]]
    starts = []
    for w in range(n):
        share = records // n + (1 if w < records % n else 0)
        starts.append(prog.start())
        if share > 0:
            body = prog.cpu(between, dist)
            prog.yield_point()
            if n > 1:
                prog.acquire(0, EX)
                prog.cpu(v["hold_us"], FIXED, contended_latch=0)
                prog.release(0, EX)
            else:
                prog.cpu(v["hold_us"], FIXED)
            prog.loop(body, share)
        prog.end()
    scheds = list(range(n))
    kinds = ["task"] * n
    daemon = [False] * n
    if v["busy_scheduler"] >= 0:
        starts.append(prog.start())
        body = prog.cpu(v["quantum_ms"] * 1000.0, FIXED)
        prog.yield_point()
        prog.loop(body, FOREVER)
        prog.end()
        scheds.append(v["busy_scheduler"])
        kinds.append("co-tenant")
        daemon.append(True)
    total = len(starts)
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=scheds,
        worker_arrival_us=[0.0] * total, worker_daemon=daemon, worker_kind=kinds,
        latches=[LatchSpec("NESTING_TRANSACTION_FULL", "LATCH",
                           contender_cost_us=v["contender_cost_us"], **latch_knobs(v))],
        schedulers=v["schedulers"], quantum_us=v["quantum_ms"] * 1000.0,
        context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"],
        expected_acquires=records if n > 1 else 0, work_units=records,
        extra={"log_records": records, "rows_per_record": rows_per_record,
               "cpu_between_records_us": between},
    )


def check(v: dict[str, Any]) -> None:
    """MAXDOP and the co-tenant must fit on the schedulers; the run must stay bounded."""
    if v["maxdop"] > v["schedulers"]:
        raise ParameterError(
            f"maxdop={v['maxdop']} is more than schedulers={v['schedulers']}: "
            f"use maxdop from 1 to {v['schedulers']} (parallel workers need distinct schedulers)")
    if v["busy_scheduler"] >= v["schedulers"]:
        raise ParameterError(
            f"busy_scheduler={v['busy_scheduler']} is not a scheduler: "
            f"use -1 (none) or 0 to {v['schedulers'] - 1}")
    records = log_records(v)
    if records > 5_000_000:
        raise ParameterError(
            f"rows={v['rows']} with rows_per_page={v['rows_per_page']} and logging={v['logging']!r} "
            f"writes {records:,} log records: use at most 5,000,000 (fewer rows or more rows per page)")


SCENARIO = Scenario("parallel-insert", __doc__.strip().splitlines()[0], PARAMS, build, check)
