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
:data:`models.book.analysis.cci.SETUP`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from models.engine import state
from models.engine.program import BR_ALWAYS, BR_FAILED, BR_FORCED, Program
from models.engine.state import GRANT_FORCED, GRANT_GRANTED, GRANT_OUTCOMES
from models.fitting import evidence
from models.fitting.snapshot import Snapshot
from models.params import MAX_DOP, Param, ParameterError, scheduling_params
from models.scenarios.base import LOWER_MAXDOP, Capture, Change, DiagnosisRule, Scenario, Throughput, no_rows
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
    Param("maxdop", "int", 2, "", 1, MAX_DOP, help="parallel workers per insert (degree of parallelism)"),
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


def query_memory_mb(values: dict[str, Any]) -> float:
    """The default pool's memory for query grants: 75% of max server memory."""
    return QUERY_MEMORY_SHARE * values["max_server_memory_mb"]


def target_mb(values: dict[str, Any]) -> float:
    """The regular resource semaphore's target: grants above it wait."""
    return TARGET_SHARE * query_memory_mb(values)


def grant_mb(values: dict[str, Any]) -> float:
    """One insert's grant: its ask per worker times DOP, capped at max_grant_percent (25%) of the pool's query memory."""
    cap = values.get("max_grant_percent", MAX_GRANT_PERCENT) / 100.0  # a partial setup (analysis.cci.SETUP) keeps 25%
    return min(values["grant_mb_per_dop"] * values["maxdop"], cap * query_memory_mb(values))


def worker_cpu_us(values: dict[str, Any]) -> float:
    """CPU one parallel worker needs at most (compressing or writing delta stores, whichever costs more)."""
    return values["rows_per_query"] / values["maxdop"] * max(values["compress_us_per_row"], values["delta_us_per_row"])


def bursts(values: dict[str, Any]) -> float:
    """CPU bursts the run takes at most, which bound its events."""
    return values["queries"] * values["maxdop"] * worker_cpu_us(values) / BURST_US


def worker_rows(values: dict[str, Any]) -> list[int]:
    """Rows each parallel worker of one insert gets (an even split; the first workers take the remainder)."""
    base, extra = divmod(values["rows_per_query"], values["maxdop"])
    return [base + (1 if k < extra else 0) for k in range(values["maxdop"])]


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


def program(values: dict[str, Any]) -> tuple[Program, int]:
    """The coordinator's program (grant, start workers, wait, free) and the workers' two; returns it and its start."""
    prog = Program()
    per_worker = values["rows_per_query"] / values["maxdop"]
    compress = _work(prog, per_worker * values["compress_us_per_row"])
    delta = _work(prog, per_worker * values["delta_us_per_row"]) if values["behaviour"] == "cu14" else -1
    kb = int(round(grant_mb(values) * KB_PER_MB))
    start = prog.grant(kb, kb, values["grant_timeout_s"] * 1e6)
    failed = prog.branch(BR_FAILED)
    to_delta = prog.branch(BR_FORCED) if delta >= 0 else -1
    prog.fork(compress, values["maxdop"])
    started = prog.branch(BR_ALWAYS)
    if to_delta >= 0:
        prog.patch(to_delta, prog.fork(delta, values["maxdop"]))
    prog.patch(started, prog.join())
    prog.free()
    prog.patch(failed, prog.end())
    return prog, start


def _collect(values: dict[str, Any]):
    """What the run adds to ``Result.extra``: the per-query table, the grant log and the semaphore's counters."""
    def collect(final: state.State) -> dict[str, Any]:
        n, dop = values["queries"], values["maxdop"]
        coord = np.arange(n) * (dop + 1)
        outcome = final.workers[coord, state.W_OUTCOME]
        shares = worker_rows(values)
        rows = []
        for q, w in enumerate(coord):
            done = outcome[q] in (state.GRANT_GRANTED, state.GRANT_FORCED)
            compress = outcome[q] == state.GRANT_GRANTED or values["behaviour"] == "rtm"
            groups = [rowgroups(r, compress) for r in shares] if done else [(0, 0)]
            ended = final.workers[w, state.W_STATE] == state.DONE
            rows.append({
                "query": q + 1,
                "start_ms": final.worker_times[w, state.WF_ARRIVE] / 1000.0,
                "grant_wait_ms": final.worker_times[w, state.WF_GWAIT] / 1000.0,
                "outcome": state.GRANT_OUTCOMES[outcome[q]],
                "granted_mb": grant_mb(values) if done else 0.0,  # given back by FREE at the end: the grant, not what is left
                "compressed_rowgroups": sum(g[0] for g in groups),
                "delta_store_rowgroups": sum(g[1] for g in groups),
                "elapsed_ms": (final.worker_times[w, state.WF_TSTATE] - final.worker_times[w, state.WF_ARRIVE]) / 1000.0 if ended else np.nan,
            })
        table = pd.DataFrame(rows)
        n_log = int(final.run_cells[state.G_SEM_LOGN])
        glog = final.glog[:n_log]
        return {
            "queries": table,
            "grants": pd.DataFrame({"time_ms": glog[:, state.GL_TIME] / 1000.0,
                                    "granted_mb": glog[:, state.GL_GRANTED] / KB_PER_MB,
                                    "waiters": glog[:, state.GL_WAITERS].astype(np.int64)}),
            "grant_mb": grant_mb(values),
            "target_mb": target_mb(values),
            "limit_mb": float(values["max_server_memory_mb"]),
            "forced_grant_count": int(final.run_cells[state.G_SEM_FORCED]),
            "timeout_error_count": int(final.run_cells[state.G_SEM_TIMEOUTS]),
        }
    return collect


def build(values: dict[str, Any]) -> Workload:
    """Per insert: its coordinator (arriving at its start) and then its ``maxdop`` workers (started by FORK)."""
    prog, start = program(values)
    n, dop = values["queries"], values["maxdop"]
    starts, arrivals, kinds = [], [], []
    for q in range(n):
        starts += [start] * (dop + 1)  # a worker's address is set by FORK
        arrivals += [q * values["start_gap_s"] * 1e6] + [math.inf] * dop
        kinds += ["coordinator"] + ["worker"] * dop
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=[-1] * len(starts), worker_arrival_us=arrivals,
        worker_daemon=[False] * len(starts), worker_kind=kinds, latches=[], schedulers=values["schedulers"],
        quantum_us=values["quantum_ms"] * 1000.0, context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        work_units=0,
        memory=MemorySpec(target_kb=int(target_mb(values) * KB_PER_MB), limit_kb=values["max_server_memory_mb"] * KB_PER_MB),
        expected_events=int(3 * (bursts(values) + n * dop)),
        expected_ms=(n * dop * worker_cpu_us(values) / values["schedulers"] + n * values["start_gap_s"] * 1e6
                     + values["grant_timeout_s"] * 1e6) / 1000.0,
        collect=_collect(values),
    )


def check(values: dict[str, Any]) -> None:
    """A bounded number of CPU bursts (so of events)."""
    if bursts(values) > MAX_BURSTS:
        raise ParameterError(
            f"queries={values['queries']} x rows_per_query={values['rows_per_query']:,} at "
            f"{max(values['compress_us_per_row'], values['delta_us_per_row'])} us per row is {bursts(values):,.0f} CPU bursts of "
            f"{BURST_US / 1000:g} ms: use at most {MAX_BURSTS:,} (fewer queries or rows)")


# ----------------------------------------------------------------------------- the fit


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """Columnstore inserts queued for memory: the grant from how many queries got memory at once.

    The queries that did not wait fit under the semaphore's target together
    and one more would not: the grant lies between target / (k + 1) and
    target / k.  All waiters waiting the same time means they timed out, so
    that time is the time-out.  The CPU per row is the schedulers' CPU over
    the rows the queries that ran inserted (rows per query assumed).
    """
    queries, q_how = evidence.setting(snap, "sessions", setup["queries"], "queries")
    memory, m_how = evidence.setting(snap, "max_server_memory_mb", setup["max_server_memory_mb"], "max server memory")
    schedulers, sched_how = evidence.schedulers(snap)
    maxdop, maxdop_how = evidence.dop(snap, schedulers)
    values = dict(setup, max_server_memory_mb=memory, maxdop=maxdop)
    waited = snap.get("wait", "RESOURCE_SEMAPHORE")
    wait_ms = snap.get("wait", "RESOURCE_SEMAPHORE", "time_ms")
    max_ms = snap.get("wait", "RESOURCE_SEMAPHORE", "max_time_ms")
    if waited > queries:
        raise evidence.FitError(f"RESOURCE_SEMAPHORE has count={waited:,.0f} waits from {queries} queries ({q_how}): a query "
                       "waits for its grant at most once, so the sessions setting or the wait count is wrong")
    if waited == 0 or waited == queries:
        raise evidence.FitError(f"RESOURCE_SEMAPHORE has {waited:,.0f} waits from {queries} queries ({q_how}): "
                       + ("no query waited, so the counts give the grant only an upper bound (target / queries)"
                          if waited == 0 else "every query waited, so the counts do not say how many grants fit "
                          "under the target at once")
                       + "; the grant is not determined by this snapshot")
    evidence.check_wait_budget("RESOURCE_SEMAPHORE", wait_ms * 1000.0, queries, snap.interval_s, max_ms)
    at_once = max(int(queries - waited), 1)
    target = target_mb(values)
    cap = grant_mb(dict(values, grant_mb_per_dop=math.inf))
    low, high = target / (at_once + 1), min(target / at_once, cap)
    if low >= high:  # the cap binds: every grant is the cap
        low = high
    grant = 0.5 * (low + high)
    fitted = {"grant_mb_per_dop": (grant / maxdop, "MB", f"{at_once} of {queries} queries got memory at once under "
                                   f"the {target:,.0f} MB target, so one grant is {low:,.0f} to {high:,.0f} MB")}
    bounds = {"grant_mb_per_dop": (low / maxdop, high / maxdop)}
    if waited and abs(wait_ms - waited * max_ms) <= 0.001 * wait_ms:
        fitted["grant_timeout_s"] = (max_ms / 1000.0, "s", f"all {waited:,.0f} waits lasted {max_ms / 1000:,.1f} s: "
                                     "they timed out")
        bounds["grant_timeout_s"] = (max_ms / 1000.0, max_ms / 1000.0)
    ran = snap.get("wait", "CXCONSUMER") or queries
    cpu_us = evidence.cpu_ms(snap) * 1000.0 - snap.get("wait", "SOS_SCHEDULER_YIELD") * setup["context_switch_us"]
    assumed = {"rows_per_query": ("rows per insert", "the rows inserted (the columnstore's row count)"),
               "start_gap_s": ("when each insert started", "the queries' start times (sys.dm_exec_requests)")}
    if cpu_us > 0:
        fitted["compress_us_per_row"] = (cpu_us / (ran * setup["rows_per_query"]), "us",
                                         f"{cpu_us / 1e6:,.1f} s of scheduler CPU over {ran:,.0f} queries of "
                                         f"{setup['rows_per_query']:,} rows")
    else:
        assumed["compress_us_per_row"] = ("the CPU per row: the capture has no scheduler CPU",
                                          "the scheduler rows (sys.dm_os_schedulers total_cpu_usage_ms)")
    version = str(snap.setting("version", ""))
    cu = re.search(r"2017.*CU(\d+)", version)
    behaviour = "cu14" if cu and int(cu.group(1)) >= 14 else "rtm"
    settings = {"queries": (queries, q_how), "max_server_memory_mb": (memory, m_how),
                "maxdop": (maxdop, maxdop_how), "schedulers": (schedulers, sched_how),
                "behaviour": (behaviour, f"@@VERSION {version!r}" if version else f"{evidence.MISSING}no version, so RTM")}
    return evidence.Point(fitted, settings, assumed, ran / snap.interval_s, bounds)


def claims(clue: evidence.Clue) -> list[str] | None:
    """RESOURCE_SEMAPHORE on top: queries wait for memory grants (the book's grant model is this insert's)."""
    if clue.top_wait == "RESOURCE_SEMAPHORE":
        return ["queries wait for memory grants; the book's grant model is the columnstore insert's (chapter 7), "
                "so the fit treats the queries as such inserts"]
    return None


def rows_per_s(result: Any) -> float:
    """Rows inserted per second by the queries that got memory (granted, or forced their minimum) and ended."""
    queries = result.queries
    if queries is None:
        return 0.0
    done = queries["outcome"].isin([GRANT_OUTCOMES[GRANT_GRANTED], GRANT_OUTCOMES[GRANT_FORCED]])
    done &= queries["elapsed_ms"].notna()  # a query a truncated run cut short has not inserted its rows yet
    return float(done.sum() * result.params["rows_per_query"] / (result.elapsed_ms / 1000.0))


CHANGES = (
    LOWER_MAXDOP,
    Change(name="more-memory", what="twice the max server memory", value="the new max server memory (MB)",
           sets=lambda fitted, given: {"max_server_memory_mb": int(given) if given is not None
                                       else 2 * fitted["max_server_memory_mb"]}, param="max_server_memory_mb"),
    Change(name="lower-grant", what="REQUEST_MAX_MEMORY_GRANT_PERCENT = 10", value="the percent",
           sets=lambda fitted, given: {"max_grant_percent": float(given) if given is not None else 10.0},
           param="max_grant_percent"),
)


SCENARIO = Scenario(
    name="cci-insert", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="rows", per_s=rows_per_s),
    reported_waits=("RESOURCE_SEMAPHORE",),
    capture=Capture(session_param="queries", rows=no_rows),
    diagnosis=DiagnosisRule(label="RESOURCE_SEMAPHORE", looks_like="queries waiting for memory grants", rank=4,
                            claims=claims),
    estimate=estimate, size_run=lambda values, visits, seconds: {}, size_params=("rows_per_query",),
    changes=CHANGES, replicated=False,  # it draws nothing at random: the counts bound the grant instead
)
