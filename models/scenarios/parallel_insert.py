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

Under the unfair policy a requester that finds the latch held spins in
rounds of ``spin_us``, looking at the latch after each; ``spin_rounds`` rounds
make a spin cycle, after which it backs off (the default, one round, looks
once per back-off; chapter 3 looks every 0.5 us over a fitted 50 us cycle).

``busy_scheduler`` puts a CPU-bound MAXDOP 1 query (the co-tenant: it always
uses its full quantum) on that scheduler, sharing it with the parallel worker
bound there.
"""

from __future__ import annotations

import math
from typing import Any

from models.engine.program import DISTRIBUTIONS, EX, EXPONENTIAL, FIXED, Program
from models.counters import evidence
from models.counters.snapshot import Snapshot
from models.params import MAX_DOP, Param, ParameterError, common_params, latch_knobs
from models.scenarios.base import (
    LOWER_MAXDOP, Band, Capture, Change, DiagnosisRule, RoundTrip, Scenario, Throughput,
)
from models.workload import LatchSpec, Workload

EXTENT_PAGES = 8
RECORDS_PER_EXTENT = 3
FOREVER = 2**62
ERLANG_STAGES = 4  # cpu_dist="erlang4": the CPU between log records as four exponential stages of a quarter each

PARAMS = (
    Param("maxdop", "int", 8, "", 1, MAX_DOP, help="parallel workers inserting (degree of parallelism)"),
    Param("rows", "int", 2_000_000, "rows", 1, 200_000_000, help="rows inserted in all"),
    Param("rows_per_page", "int", 100, "rows/page", 1, 8060, help="rows that fit on one 8 KB page"),
    Param("logging", "choice", "minimal", choices=("minimal", "full"),
          help="minimal: about 3 log records per extent; full: also one page image per page"),
    Param("cpu_per_row_us", "float", 1.0, "us", 0.0, 10_000.0, help="CPU to read and process one row"),
    Param("cpu_per_log_record_us", "float", 5.0, "us", 0.0, 10_000.0,
          help="CPU to prepare one log record, outside the latch"),
    Param("cpu_dist", "choice", "exponential", choices=("fixed", "erlang4", "exponential"),
          help="CPU between log records exactly its mean, Erlang-4 (four exponential quarters) or exponential"),
    Param("hold_us", "float", 2.0, "us", 0.01, 10_000.0, help="time the latch is held to add one log record"),
    Param("contender_cost_us", "float", 0.0, "us", 0.0, 1000.0,
          help="extra hold time per worker contending for the latch (cache-line coherency)"),
    Param("spin_rounds", "int", 1, "", 1, 100_000,
          help="spin rounds (spin_us each, the latch checked after each) before a back-off (unfair policy)"),
    Param("busy_scheduler", "int", -1, "", -1, 255,
          help="scheduler shared with a CPU-bound MAXDOP 1 query (-1: none)"),
) + common_params(schedulers=24)


def log_records(values: dict[str, Any]) -> int:
    """Log records (so latch acquires) the insert writes: 3 per extent, plus 1 per page if fully logged."""
    pages = math.ceil(values["rows"] / values["rows_per_page"])
    extents = math.ceil(pages / EXTENT_PAGES)
    return RECORDS_PER_EXTENT * extents + (pages if values["logging"] == "full" else 0)


def build(values: dict[str, Any]) -> Workload:
    """One program per worker with its share of log records, plus the optional co-tenant."""
    prog = Program()
    n = values["maxdop"]
    records = log_records(values)
    rows_per_record = values["rows"] / records
    between = rows_per_record * values["cpu_per_row_us"] + values["cpu_per_log_record_us"]
    dist = None if values["cpu_dist"] == "erlang4" else DISTRIBUTIONS[values["cpu_dist"]]
    starts = []
    for w in range(n):
        share = records // n + (1 if w < records % n else 0)
        starts.append(prog.start())
        if share > 0:
            if dist is None:  # Erlang-4: four exponential stages of a quarter of the mean each, back to back
                body = prog.cpu(between / ERLANG_STAGES, EXPONENTIAL)
                for _ in range(ERLANG_STAGES - 1):
                    prog.cpu(between / ERLANG_STAGES, EXPONENTIAL)
            else:
                body = prog.cpu(between, dist)
            prog.yield_point()
            if n > 1:
                prog.acquire(0, EX)
                prog.cpu(values["hold_us"], FIXED, contended_latch=0)
                prog.release(0, EX)
            else:
                prog.cpu(values["hold_us"], FIXED)
            prog.loop(body, share)
        prog.end()
    scheds = list(range(n))
    kinds = ["task"] * n
    daemon = [False] * n
    if values["busy_scheduler"] >= 0:
        starts.append(prog.start())
        body = prog.cpu(values["quantum_ms"] * 1000.0, FIXED)
        prog.yield_point()
        prog.loop(body, FOREVER)
        prog.end()
        scheds.append(values["busy_scheduler"])
        kinds.append("co-tenant")
        daemon.append(True)
    total = len(starts)
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=scheds,
        worker_arrival_us=[0.0] * total, worker_daemon=daemon, worker_kind=kinds,
        latches=[LatchSpec("NESTING_TRANSACTION_FULL", "LATCH",
                           contender_cost_us=values["contender_cost_us"], rounds_per_backoff=values["spin_rounds"],
                           **latch_knobs(values))],
        schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=records if n > 1 else 0, work_units=records,
        extra={"log_records": records, "rows_per_record": rows_per_record,
               "cpu_between_records_us": between},
    )


TABLE = "dbo.orders.HEAP"  # the heap the model's insert fills, as the capture script names a heap (index_id 0)


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """The rows the insert wrote (leaf_insert_count of the heap): each log record acquired covers its rows."""
    acquires = float(result.latch_stats["acquires"].sum()) if len(result.latch_stats) else 0.0
    rows = round(acquires * float(result.extra.get("rows_per_record", 0.0)))
    if rows <= 0:
        return []
    return [{"source": "index_insert", "name": TABLE, "count": float(rows)},
            {"source": "index_allocation", "name": TABLE, "count": float(math.ceil(rows / values["rows_per_page"]))}]


def check(values: dict[str, Any]) -> None:
    """MAXDOP and the co-tenant must fit on the schedulers; the run must stay bounded."""
    if values["maxdop"] > values["schedulers"]:
        raise ParameterError(
            f"maxdop={values['maxdop']} is more than schedulers={values['schedulers']}: "
            f"use maxdop from 1 to {values['schedulers']} (parallel workers need distinct schedulers)")
    if values["busy_scheduler"] >= values["schedulers"]:
        raise ParameterError(
            f"busy_scheduler={values['busy_scheduler']} is not a scheduler: "
            f"use -1 (none) or 0 to {values['schedulers'] - 1}")
    records = log_records(values)
    if records > 5_000_000:
        raise ParameterError(
            f"rows={values['rows']} with rows_per_page={values['rows_per_page']} and logging={values['logging']!r} "
            f"writes {records:,} log records: use at most 5,000,000 (fewer rows or more rows per page)")


# ----------------------------------------------------------------------------- the fit


BUSY_CPU = 2.0  # a co-tenant's scheduler uses at least this many times the CPU of the workers' median one
BUSY_SWITCHES = 1.5  # ... or, on an instance with nothing else running, switches this many times the median one


def _latch_policy(obs: evidence.LatchObs, cls: str) -> tuple[str, str]:
    """Fair, as SQL Server's latches queue, except a NESTING_TRANSACTION_FULL latch that spins more than it waits.

    Trace flag 3933 makes only the nesting-transaction latches unfair (White,
    2022); LATCH_SPIN_STATS counts every latch's spinning, so it says
    something of this class only when the class's waits all but vanish.
    """
    if cls == "NESTING_TRANSACTION_FULL" and obs.spins > obs.waits:
        return "unfair", (f"{obs.spins:,.0f} LATCH_SPIN_STATS collisions against {obs.waits:,.0f} waits: "
                          "requesters spin and barge (trace flag 3933)")
    if cls == "NESTING_TRANSACTION_FULL":
        return "fair", (f"{obs.spins:,.0f} LATCH_SPIN_STATS collisions against {obs.waits:,.0f} waits: "
                        "waiters queue (no trace flag 3933)")
    return "fair", "SQL Server's latches queue their waiters first come, first served"


def _spin_fit(obs: evidence.LatchObs) -> dict[str, tuple[float, str, str]]:
    """Spins per spin round, for a latch that spins: each collision spins a round, and one more after each back-off."""
    if obs.spins <= obs.waits or obs.spin_rounds <= 0:
        return {}
    return {"spins_per_round": (obs.spin_count / obs.spin_rounds, "",
                                f"{obs.spin_count:,.0f} spins over {obs.spins:,.0f} collisions and "
                                f"{obs.spin_rounds - obs.spins:,.0f} back-offs (one spin round each)")}


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """MAXDOP workers logging through NESTING_TRANSACTION_FULL: the closed repairman per log record.

    The CPU between two log records is split into rows and the record's own
    work with the scenario's default rows per record (the snapshot cannot
    tell rows from records); a co-tenant shows as scheduler yields on the one
    scheduler with far more context switches than the others.
    """
    cls = "NESTING_TRANSACTION_FULL"
    schedulers, sched_how = evidence.schedulers(snap)
    maxdop, maxdop_how = evidence.dop(snap, schedulers)
    busy, busy_how = find_co_tenant(snap, maxdop)
    paged = rows_per_page_read(snap)
    if paged is not None:
        setup = dict(setup, rows_per_page=paged[0])
    obs = evidence.latch_obs(snap, cls, "LATCH")
    logged = None
    counted = _records_from_rows(snap, setup)
    if counted is not None and not obs.acquires and setup["logging"] == "minimal" \
            and obs.waits > counted[0] * snap.interval_s + maxdop:
        # More waits than a minimally logged insert writes records (3 an extent): every page is logged too.
        setup = dict(setup, logging="full")
        logged = ("full", f"{obs.waits:,.0f} waits, more than the {counted[0] * snap.interval_s:,.0f} log records a "
                          "minimally logged insert of those rows writes: fully logged")
    per_record = setup["rows"] / log_records(setup)
    assumed = {"contender_cost_us": ("a cost that grows with contenders needs the throughput at two MAXDOPs",
                                     "snapshots at two or more MAXDOPs"),
               "rows_per_page": ("rows and log records are not told apart",
                                 "the rows inserted (the table's row count)"),
               "cpu_per_log_record_us": ("the CPU of a log record apart from its rows': the time between records "
                                         "is one sum", "inserts of two row sizes (the time per record against the "
                                         "rows per record)")}
    fitted: dict[str, tuple[float, str, str]] = {}
    bounds: dict = {}
    if busy >= 0:
        # Hand-offs to the worker behind the co-tenant wait out its quantum: they swamp the hold, and the
        # workers no longer keep pace (the ones on schedulers of their own finish first).  The CPU per log
        # record still shows: the schedulers' CPU less the co-tenant's (its scheduler's CPU beyond what the
        # median worker's scheduler used), over the records.
        counted = _records_from_rows(snap, setup)
        visits_per_s, rate_how = counted if counted and not obs.acquires else evidence.visit_rate(snap, cls, obs)
        sched = snap.table("scheduler")
        cpu = sched.set_index(sched["name"].astype(int))["time_ms"].fillna(0.0)
        workers = cpu[(cpu.index != busy) & (cpu > 0)]
        co_tenant = max(float(cpu.get(busy, 0.0)) - float(workers.median()) if len(workers) else 0.0, 0.0)
        think = (float(cpu.sum()) - co_tenant) * 1000.0 / (visits_per_s * snap.interval_s) - setup["hold_us"]
        rate_how += (f"; {float(cpu.sum()):,.0f} ms of scheduler CPU less the co-tenant's {co_tenant:,.0f} ms, "
                     f"less the {setup['hold_us']:g} us hold assumed")
        assumed["hold_us"] = ("hand-offs to the worker that shares a scheduler with the co-tenant wait out its "
                              "quantum and swamp the hold", "a snapshot without the co-tenant")
        assumed["wakeup_us"] = evidence.SHARED_HANDOFF
    else:
        unfair = _latch_policy(obs, cls)[0] == "unfair"
        counted = _records_from_rows(snap, setup)
        obs, visits_per_s, rate_how, hold, think, how = evidence.closed_latch_core(snap, cls, maxdop, unfair=unfair,
                                                                                   counted=counted)
        fitted["hold_us"] = (hold, "us", how)
        if not unfair:  # an unfair latch hands nothing off: its few waits say nothing of a hand-off
            switch_us = setup["context_switch_us"]  # the model's own switch, as assumed
            evidence.handoff(fitted, assumed, obs, switch_us, queued_us=evidence.runnable_delay_us(snap)[0],
                             bounds=bounds)
    cpu_row = (think - setup["cpu_per_log_record_us"]) / per_record
    fitted["cpu_per_row_us"] = (cpu_row, "us", f"the {think:,.1f} us between log records ({rate_how}, Little's "
                                f"law) less {setup['cpu_per_log_record_us']:g} us per record, over {per_record:.1f} "
                                "rows per record")
    policy, policy_how = _latch_policy(obs, cls)
    if policy == "unfair":
        fitted.update(_spin_fit(obs))
        assumed["spin_us"] = ("the CPU one spin round takes: the counters give spins, not their time",
                              "a CPU profile of the spinning (ETW sampling)")
    settings = {"maxdop": (maxdop, maxdop_how), "schedulers": (schedulers, sched_how),
                "policy": (policy, policy_how), "busy_scheduler": (busy, busy_how)}
    if paged is not None:
        settings["rows_per_page"] = paged
        del assumed["rows_per_page"]
    if logged is not None:
        settings["logging"] = logged
    elif counted is not None and not obs.acquires:
        assumed["logging"] = ("minimal or full logging changes the log records per row, which the waits allow "
                              "either way", "the database's recovery model and the insert's TABLOCK hint (minimal "
                              "logging needs both), or the latch_acquired count")
    return evidence.Point(fitted, settings, assumed, visits_per_s, bounds=bounds)


def find_co_tenant(snap: Snapshot, maxdop: int) -> tuple[int, str]:
    """The scheduler a CPU-bound query shares with the insert's workers (-1: none), and why.

    A co-tenant burns whole quanta, so its scheduler's CPU stands out among the workers' (the busiest maxdop
    schedulers; idle ones, or other work spread over every scheduler, would hide or fake it).  Where nothing but
    the insert runs, a scheduler that switches BUSY_SWITCHES times as often as the median (idle ones included)
    stands out even while the workers keep their own CPUs as busy.
    """
    yields = snap.get("wait", "SOS_SCHEDULER_YIELD")
    sched = snap.table("scheduler")
    if not (yields > 0 and len(sched) and (snap.setting("sessions") or 1) >= 2):
        return -1, "not one SOS_SCHEDULER_YIELD wait: no scheduler is shared"
    ranked = sched.assign(cpu=sched["time_ms"].fillna(0.0)).sort_values("cpu", ascending=False)
    top, median = ranked.iloc[0], float(ranked["cpu"].iloc[1:max(maxdop, 2)].median())
    if top["cpu"] >= BUSY_CPU * max(median, 1.0):
        return int(top["name"]), (f"{yields:,.0f} SOS_SCHEDULER_YIELD waits with {snap.setting('sessions')} "
                                  f"sessions, and scheduler {int(top['name'])} used {top['cpu']:,.0f} ms of CPU (the "
                                  f"median of the {maxdop} busiest {median:,.0f}): a CPU-bound query shares it")
    switching = ranked.sort_values("count", ascending=False).iloc[0]
    typical = max(float(sched["count"].median()), 1.0)
    if (ranked["cpu"].iloc[maxdop + 1:] <= 0).all() and switching["count"] >= BUSY_SWITCHES * typical:
        return int(switching["name"]), (f"{yields:,.0f} SOS_SCHEDULER_YIELD waits with {snap.setting('sessions')} "
                                        f"sessions, nothing else running, and scheduler {int(switching['name'])} "
                                        f"switched {switching['count']:,.0f} times (the median scheduler "
                                        f"{typical:,.0f}): a CPU-bound query shares it")
    return -1, (f"{yields:,.0f} SOS_SCHEDULER_YIELD waits, but no scheduler uses {BUSY_CPU:g} times the median CPU "
                f"of the busiest ({top['cpu']:,.0f} against {median:,.0f} ms): no co-tenant")


def _records_from_rows(snap: Snapshot, setup: dict[str, Any]) -> tuple[float, str] | None:
    """Log records per second from the rows the most-inserted table took (leaf_insert_count), None without them.

    Each record the insert logs under the latch covers rows / log_records rows (the assumed rows per page and
    logging set it): the default capture's index rows stand for the latch_acquired count it lacks.
    """
    if not snap.has("index_insert"):
        return None
    inserts = snap.table("index_insert").sort_values("count", ascending=False).iloc[0]
    if not inserts["count"] > 0:
        return None
    per_record = setup["rows"] / log_records(setup)
    records = float(inserts["count"]) / per_record
    return records / snap.interval_s, (f"{inserts['count']:,.0f} rows inserted into {inserts['name']} "
                                       f"(leaf_insert_count) at {per_record:,.1f} rows per log record")


def rows_per_page_read(snap: Snapshot) -> tuple[int, str] | None:
    """Rows per page from the most-inserted table's rows over its leaf pages allocated, None without both."""
    if not snap.has("index_insert") or not snap.has("index_allocation"):
        return None
    inserts = snap.table("index_insert").sort_values("count", ascending=False).iloc[0]
    pages = snap.get("index_allocation", inserts["name"])
    if not pages > 0 or not inserts["count"] > 0:
        return None
    per_page = max(1, min(8060, round(float(inserts["count"]) / pages)))
    return per_page, (f"{inserts['count']:,.0f} rows over {pages:,.0f} leaf pages allocated to {inserts['name']} "
                      "(leaf_insert_count over leaf_allocation_count)")


def claims(clue: evidence.Clue) -> list[str] | None:
    """LATCH waits led by NESTING_TRANSACTION_FULL: a parallel insert's workers logging through one transaction."""
    if clue.family == "LATCH" and clue.latch_class == "NESTING_TRANSACTION_FULL":
        return ["parallel workers of one insert log through their parent transaction's latch"]
    return None


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """Rows enough for ``visits`` log records."""
    return {"rows": min(int(visits * values["rows"] / log_records(values)) + 1, 200_000_000)}


def _move_co_tenant(fitted: dict[str, Any], given: float | None) -> dict[str, Any]:
    """The co-tenant to the given scheduler, else to one the insert does not use (-1: none is free)."""
    if given is not None:
        return {"busy_scheduler": int(given)}
    return {"busy_scheduler": fitted["maxdop"] if fitted["maxdop"] < fitted["schedulers"] else -1}


CHANGES = (
    LOWER_MAXDOP,
    Change(name="unfair-latch", what="trace flag 3933: the unfair latch", value="",
           sets=lambda fitted, given: {"policy": "unfair"},  # the flag reaches only nesting-transaction latches
           unless=lambda fitted: "the latch is unfair already" if fitted.get("policy") == "unfair" else "",
           leaves_out="trace flag 3933 is White's test of the unfair latch on SQL Server 2019 CTP 2.5 to 2022 CTP "
                      "2.1, not a documented setting: test it away from production first"),
    Change(name="move-co-tenant", what="move the co-tenant off the insert", value="its new scheduler (-1: none)",
           sets=_move_co_tenant, param="busy_scheduler",
           unless=lambda fitted: "no co-tenant was found" if fitted["busy_scheduler"] < 0 else ""),
)


SCENARIO = Scenario(
    name="parallel-insert", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="log records"),
    reported_waits=("LATCH",),
    capture=Capture(session_param=None, rows=capture_rows,
                    sessions=lambda values: 1 + (values["busy_scheduler"] >= 0)),  # the insert, and the co-tenant
    diagnosis=DiagnosisRule(label="NESTING_TRANSACTION_FULL", looks_like="LATCH_EX, on that latch class", rank=1,
                            claims=claims),
    estimate=estimate, size_run=size_run, size_params=("rows",), changes=CHANGES,
    bands=(Band(param="cpu_per_log_record_us", low=0.0, high=10.0,
                what="the CPU of a log record apart from its rows'",
                measure="inserts of two row sizes (the time per record against the rows per record)"),),
    round_trip=RoundTrip(values={"maxdop": 16, "hold_us": 6.0}, window={"start_s": 0.02, "interval_s": 0.1}),
)
