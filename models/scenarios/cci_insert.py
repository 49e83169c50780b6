"""Parallel INSERT...SELECT WITH (TABLOCK) into clustered columnstore tables, queued for memory grants.

Each query is a coordinator plus ``maxdop`` parallel workers.  The
coordinator asks the default pool's resource semaphore for the query's
grant (:mod:`models.engine.grants`): ``grant_mb_per_dop`` per worker, capped at
``max_grant_percent`` of the pool's query memory (REQUEST_MAX_MEMORY_GRANT_PERCENT,
25% by default).  The pool's query memory is 75% of ``max_server_memory_mb``; the
regular semaphore's target is a little less, the rest kept for the
small-query semaphore; a grant that would go over the target waits in FIFO
order (RESOURCE_SEMAPHORE).  After ``grant_timeout_s`` a waiting query is
forced its required grant, which for a columnstore insert is the whole grant
(Obbish saw the timed-out queries run with the same grant as the others), if
the semaphore stays under max server memory; else it fails with error 8645.

Once it has memory the coordinator starts its workers, which share the
grant, waits for them (CXCONSUMER) and gives the grant back.  Each worker
reads and inserts its share of ``rows_per_query``: compressing it into
rowgroups of up to 1,048,576 rows costs ``compress_us_per_row`` per row; a
remainder under 102,400 rows stays in a delta store.  With ``behaviour``
``cu14`` (SQL Server 2017 CU14) a query forced at the time-out writes every
row to delta stores instead (``delta_us_per_row``), using little of its
grant.  The defaults are round values; Obbish's setup is
:data:`models.analysis.cci.SETUP`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from models.engine import state as st
from models.engine.program import BR_ALWAYS, BR_FAILED, BR_FORCED, Program
from models.params import Param, ParameterError, Scenario, scheduling_params
from models.workload import MemorySpec, Workload

KB_PER_MB = 1024
QUERY_MEMORY_SHARE = 0.75  # of max server memory, for query grants (Aschenbrenner 2018)
MAX_GRANT_PERCENT = 25.0   # of the pool's query memory, per query (REQUEST_MAX_MEMORY_GRANT_PERCENT's default)
TARGET_SHARE = 0.95        # assumed: the regular semaphore's target, after the small-query semaphore's part
ROWGROUP_ROWS = 1_048_576  # the most rows a rowgroup (or a delta store) holds
MIN_BULK_ROWS = 102_400    # fewer rows than this stay in a delta store
BURST_US = 2_000.0         # a worker's CPU between yield points
MAX_BURSTS = 5_000_000     # CPU bursts a run may take in all (bounds its events)

PARAMS = (
    Param("queries", "int", 5, "", 1, 64, help="columnstore inserts started together (or start_gap_s apart)"),
    Param("maxdop", "int", 2, "", 1, 64, help="parallel workers per insert (degree of parallelism)"),
    Param("max_server_memory_mb", "int", 8_000, "MB", 1_024, 4_194_304, help="max server memory"),
    Param("grant_mb_per_dop", "float", 1_000.0, "MB", 1.0, 1_000_000.0,
          help="memory grant an insert asks for per parallel worker (before the 25% cap)"),
    Param("rows_per_query", "int", 4_194_304, "rows", 1, 100_000_000, help="rows each insert writes"),
    Param("behaviour", "choice", "rtm", choices=("rtm", "cu14"),
          help="SQL Server 2017 build: rtm compresses after a forced grant; cu14 writes delta stores"),
    Param("max_grant_percent", "float", MAX_GRANT_PERCENT, "%", 1.0, 100.0,
          help="REQUEST_MAX_MEMORY_GRANT_PERCENT: the most of the pool's query memory one query's grant may take"),
    Param("grant_timeout_s", "float", 25.0, "s", 0.001, 3_600.0,
          help="how long a query waits for its grant (25 s for columnstore inserts, not configurable)"),
    Param("start_gap_s", "float", 0.0, "s", 0.0, 3_600.0, help="time between the starts of consecutive inserts"),
    Param("compress_us_per_row", "float", 20.0, "us", 0.0, 10_000.0,
          help="a worker's CPU per row read and compressed into a rowgroup"),
    Param("delta_us_per_row", "float", 4.0, "us", 0.0, 10_000.0,
          help="a worker's CPU per row read and written to a delta store"),
) + scheduling_params(schedulers=8, draws=False)


def query_memory_mb(v: dict[str, Any]) -> float:
    """The default pool's memory for query grants: 75% of max server memory."""
    return QUERY_MEMORY_SHARE * v["max_server_memory_mb"]


def target_mb(v: dict[str, Any]) -> float:
    """The regular resource semaphore's target: grants above it wait."""
    return TARGET_SHARE * query_memory_mb(v)


def grant_mb(v: dict[str, Any]) -> float:
    """One insert's grant: its ask per worker times DOP, capped at max_grant_percent (25%) of the pool's query memory."""
    cap = v.get("max_grant_percent", MAX_GRANT_PERCENT) / 100.0  # a partial setup (analysis.cci.SETUP) keeps 25%
    return min(v["grant_mb_per_dop"] * v["maxdop"], cap * query_memory_mb(v))


def worker_cpu_us(v: dict[str, Any]) -> float:
    """CPU one parallel worker needs at most (compressing or writing delta stores, whichever costs more)."""
    return v["rows_per_query"] / v["maxdop"] * max(v["compress_us_per_row"], v["delta_us_per_row"])


def bursts(v: dict[str, Any]) -> float:
    """CPU bursts the run takes at most, which bound its events."""
    return v["queries"] * v["maxdop"] * worker_cpu_us(v) / BURST_US


def worker_rows(v: dict[str, Any]) -> list[int]:
    """Rows each parallel worker of one insert gets (an even split; the first workers take the remainder)."""
    base, extra = divmod(v["rows_per_query"], v["maxdop"])
    return [base + (1 if k < extra else 0) for k in range(v["maxdop"])]


def rowgroups(rows: int, compress: bool) -> tuple[int, int]:
    """(compressed rowgroups, delta stores) one worker leaves for ``rows`` rows.

    Compressing: full rowgroups of 1,048,576 rows, and a last, trimmed one if
    it has at least 102,400 rows (fewer stay in a delta store).  Without
    compression every 1,048,576 rows fill one delta store.
    """
    if not compress:
        return 0, math.ceil(rows / ROWGROUP_ROWS)
    full, left = divmod(rows, ROWGROUP_ROWS)
    if left >= MIN_BULK_ROWS:
        return full + 1, 0
    return full, 1 if left else 0


def _work(prog: Program, us: float) -> int:
    """A worker's program: ``us`` of CPU in bursts with a yield point after each; returns its start."""
    start = prog.start()
    bursts, left = divmod(us, BURST_US)
    if bursts >= 1:
        body = prog.cpu(BURST_US)
        prog.yield_point()
        prog.loop(body, int(bursts))
    if left > 0:
        prog.cpu(left)
    prog.end()
    return start


def program(v: dict[str, Any]) -> tuple[Program, int]:
    """The coordinator's program (grant, start workers, wait, free) and the workers' two; returns it and its start."""
    prog = Program()
    per_worker = v["rows_per_query"] / v["maxdop"]
    compress = _work(prog, per_worker * v["compress_us_per_row"])
    delta = _work(prog, per_worker * v["delta_us_per_row"]) if v["behaviour"] == "cu14" else -1
    kb = int(round(grant_mb(v) * KB_PER_MB))
    start = prog.grant(kb, kb, v["grant_timeout_s"] * 1e6)
    failed = prog.branch(BR_FAILED)
    to_delta = prog.branch(BR_FORCED) if delta >= 0 else -1
    prog.fork(compress, v["maxdop"])
    started = prog.branch(BR_ALWAYS)
    if to_delta >= 0:
        prog.patch(to_delta, prog.fork(delta, v["maxdop"]))
    prog.patch(started, prog.join())
    prog.free()
    prog.patch(failed, prog.end())
    return prog, start


def _collect(v: dict[str, Any]):
    """What the run adds to ``Result.extra``: the per-query table, the grant log and the semaphore's counters."""
    def collect(s: st.State) -> dict[str, Any]:
        n, dop = v["queries"], v["maxdop"]
        coord = np.arange(n) * (dop + 1)
        outcome = s.wi[coord, st.W_OUTCOME]
        shares = worker_rows(v)
        rows = []
        for q, w in enumerate(coord):
            done = outcome[q] in (st.GRANT_GRANTED, st.GRANT_FORCED)
            compress = outcome[q] == st.GRANT_GRANTED or v["behaviour"] == "rtm"
            groups = [rowgroups(r, compress) for r in shares] if done else [(0, 0)]
            ended = s.wi[w, st.W_STATE] == st.DONE
            rows.append({
                "query": q + 1,
                "start_ms": s.wf[w, st.WF_ARRIVE] / 1000.0,
                "grant_wait_ms": s.wf[w, st.WF_GWAIT] / 1000.0,
                "outcome": st.GRANT_OUTCOMES[outcome[q]],
                "granted_mb": grant_mb(v) if done else 0.0,  # given back by FREE at the end: the grant, not what is left
                "compressed_rowgroups": sum(g[0] for g in groups),
                "delta_store_rowgroups": sum(g[1] for g in groups),
                "elapsed_ms": (s.wf[w, st.WF_TSTATE] - s.wf[w, st.WF_ARRIVE]) / 1000.0 if ended else np.nan,
            })
        table = pd.DataFrame(rows)
        n_log = int(s.gi[st.G_SEM_LOGN])
        glog = s.glog[:n_log]
        return {
            "queries": table,
            "grants": pd.DataFrame({"time_ms": glog[:, st.GL_TIME] / 1000.0,
                                    "granted_mb": glog[:, st.GL_GRANTED] / KB_PER_MB,
                                    "waiters": glog[:, st.GL_WAITERS].astype(np.int64)}),
            "grant_mb": grant_mb(v),
            "target_mb": target_mb(v),
            "limit_mb": float(v["max_server_memory_mb"]),
            "forced_grant_count": int(s.gi[st.G_SEM_FORCED]),
            "timeout_error_count": int(s.gi[st.G_SEM_TIMEOUTS]),
        }
    return collect


def build(v: dict[str, Any]) -> Workload:
    """Per insert: its coordinator (arriving at its start) and then its ``maxdop`` workers (started by FORK)."""
    prog, start = program(v)
    n, dop = v["queries"], v["maxdop"]
    starts, arrivals, kinds = [], [], []
    for q in range(n):
        starts += [start] * (dop + 1)  # a worker's address is set by FORK
        arrivals += [q * v["start_gap_s"] * 1e6] + [math.inf] * dop
        kinds += ["coordinator"] + ["worker"] * dop
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=[-1] * len(starts), worker_arrival_us=arrivals,
        worker_daemon=[False] * len(starts), worker_kind=kinds, latches=[], schedulers=v["schedulers"],
        quantum_us=v["quantum_ms"] * 1000.0, context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"],
        work_units=0,
        memory=MemorySpec(target_kb=int(target_mb(v) * KB_PER_MB), limit_kb=v["max_server_memory_mb"] * KB_PER_MB),
        expected_events=int(3 * (bursts(v) + n * dop)),
        expected_ms=(n * dop * worker_cpu_us(v) / v["schedulers"] + n * v["start_gap_s"] * 1e6
                     + v["grant_timeout_s"] * 1e6) / 1000.0,
        collect=_collect(v),
    )


def check(v: dict[str, Any]) -> None:
    """A bounded number of CPU bursts (so of events)."""
    if bursts(v) > MAX_BURSTS:
        raise ParameterError(
            f"queries={v['queries']} x rows_per_query={v['rows_per_query']:,} at "
            f"{max(v['compress_us_per_row'], v['delta_us_per_row'])} us per row is {bursts(v):,.0f} CPU bursts of "
            f"{BURST_US / 1000:g} ms: use at most {MAX_BURSTS:,} (fewer queries or rows)")


SCENARIO = Scenario("cci-insert", __doc__.strip().splitlines()[0], PARAMS, build, check)
