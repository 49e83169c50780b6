"""From a DMV snapshot to the scenario that explains it, its parameters with an uncertainty each, and the evidence.

:func:`diagnose` names the dominant contention from the wait and latch
statistics; :func:`fit` chooses the scenario, estimates its parameters from
the snapshot's rates with the queueing relations each docstring below gives
(Little's law, the arrival theorem, exact MVA), and measures how far those
estimates move: it writes :data:`REPLICATES` snapshots of the fitted model
with other seeds, fits each again, and scales their spread to the captured
interval.  Parameters the snapshot cannot determine keep the scenario's
values and are listed, with the measurement that would determine them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import models
from models.analytic import mva_repairman
from models.calibration import CONTEXT_SWITCH_US
from models.params import ParameterError, shown
from models.scenarios import cci_insert as cci
from models.scenarios import last_page_insert as lpi
from models.scenarios import parallel_insert as pin
from models.scenarios import version_store as vs
from models.stored import FITTED, significant
from models.snapshot import BATCHES, INTERVAL_S, LATCH_SPINS, TRANSACTIONS, VERSION_KB, Snapshot, from_model

REPLICATES = 6          # fitted-model snapshots whose refits give each estimate's spread
MIN_REPLICATES = 2      # the fewest that give a spread (one refit has no standard deviation)
MIN_WAIT_SHARE = 0.01   # the top wait must hold at least this share of the schedulers' time to be the problem
HOT_SHARE = 0.5         # one index must hold at least this share of the page latch waits to be a hot page
BUSY_SWITCHES = 1.5     # a co-tenant's scheduler switches at least this many times as often as the median one
TARGET_VISITS = 20_000  # latch acquires (or calls) a replicate's window holds, when the interval holds more
SPREAD = 2.0            # low and high are the estimate -/+ this many standard deviations

# Waits that are idle time, not work waiting (the usual filter of wait-statistics scripts).
BENIGN = frozenset("""
BROKER_EVENTHANDLER BROKER_RECEIVE_WAITFOR BROKER_TASK_STOP BROKER_TO_FLUSH BROKER_TRANSMITTER CHECKPOINT_QUEUE
CHKPT CLR_AUTO_EVENT CLR_MANUAL_EVENT CLR_SEMAPHORE DBMIRROR_DBM_EVENT DBMIRROR_EVENTS_QUEUE DBMIRROR_WORKER_QUEUE
DBMIRRORING_CMD DIRTY_PAGE_POLL DISPATCHER_QUEUE_SEMAPHORE EXECSYNC FSAGENT FT_IFTS_SCHEDULER_IDLE_WAIT
FT_IFTSHC_MUTEX HADR_CLUSAPI_CALL HADR_FILESTREAM_IOMGR_IOCOMPLETION HADR_LOGCAPTURE_WAIT
HADR_NOTIFICATION_DEQUEUE HADR_TIMER_TASK HADR_WORK_QUEUE KSOURCE_WAKEUP LAZYWRITER_SLEEP LOGMGR_QUEUE
MEMORY_ALLOCATION_EXT_IDLE ONDEMAND_TASK_QUEUE PARALLEL_REDO_DRAIN_WORKER PARALLEL_REDO_LOG_CACHE
PARALLEL_REDO_TRAN_LIST PARALLEL_REDO_WORKER_SYNC PARALLEL_REDO_WORKER_WAIT_WORK PREEMPTIVE_XE_GETTARGETSTATE
PWAIT_ALL_COMPONENTS_INITIALIZED PWAIT_DIRECTLOGCONSUMER_GETNEXT QDS_ASYNC_QUEUE
QDS_CLEANUP_STALE_QUERIES_TASK_MAIN_LOOP_SLEEP QDS_PERSIST_TASK_MAIN_LOOP_SLEEP QDS_SHUTDOWN_QUEUE
REDO_THREAD_PENDING_WORK REQUEST_FOR_DEADLOCK_SEARCH RESOURCE_QUEUE SERVER_IDLE_CHECK SLEEP_BPOOL_FLUSH
SLEEP_DBSTARTUP SLEEP_DCOMSTARTUP SLEEP_MASTERDBREADY SLEEP_MASTERMDREADY SLEEP_MASTERUPGRADED SLEEP_MSDBSTARTUP
SLEEP_SYSTEMTASK SLEEP_TASK SLEEP_TEMPDBSTARTUP SNI_HTTP_ACCEPT SOS_WORK_DISPATCHER SP_SERVER_DIAGNOSTICS_SLEEP
SQLTRACE_BUFFER_FLUSH SQLTRACE_INCREMENTAL_FLUSH_SLEEP SQLTRACE_WAIT_ENTRIES UCS_SESSION_REGISTRATION
VDI_CLIENT_OTHER WAIT_FOR_RESULTS WAIT_XTP_CKPT_CLOSE WAIT_XTP_HOST_WAIT WAIT_XTP_OFFLINE_CKPT_NEW_LOG
WAIT_XTP_RECOVERY WAITFOR WAITFOR_TASKSHUTDOWN XE_DISPATCHER_JOIN XE_DISPATCHER_WAIT XE_LIVE_TARGET_TVF
XE_TIMER_EVENT CXCONSUMER SOS_SCHEDULER_YIELD
""".split())
# SOS_SCHEDULER_YIELD and CXCONSUMER are left out of the ranking: they are CPU queueing and a
# parallel query's coordinator waiting for its workers, the shape of the work rather than a resource.

NOT_A_LATCH = "not a latch problem: look elsewhere"
MISSING = "not in the capture: "  # how a setting the capture lacks says so (the fit then lists it as assumed)

# What each diagnosis looks like in the counters, and the model that explains it (diagnose() applies it).
DIAGNOSES: dict[str, tuple[str, str]] = {
    "NESTING_TRANSACTION_FULL": ("LATCH_EX, on that latch class", "parallel-insert"),
    "PAGELATCH": ("PAGELATCH_EX on one index", "last-page-insert"),
    "APPEND_ONLY_STORAGE_INSERT_POINT": ("LATCH_EX, on that latch class", "version-store"),
    "RESOURCE_SEMAPHORE": ("queries waiting for memory grants", "cci-insert"),
    "MEMORY_ALLOCATION_EXT": ("preemptive memory calls to the OS", "cci-decommit"),
    "LATCH_EX": ("LATCH_EX on another class: one acquire per batch, or many", "convoy or closed-latch"),
    NOT_A_LATCH: ("any other top wait, or none", "none"),
}


class FitError(ParameterError):
    """A snapshot that names a contention but whose counts its model cannot fit: missing, contradictory or beyond it."""

    kind = "cannot fit"


@dataclass(frozen=True)
class Diagnosis:
    """The dominant contention, the scenario that models it, and why."""

    name: str               # NESTING_TRANSACTION_FULL, PAGELATCH, ..., or NOT_A_LATCH
    scenario: str | None
    evidence: list[str]


@dataclass(frozen=True)
class Estimate:
    """One parameter of the fitted model: its value, a range, and where it comes from."""

    estimate: Any
    low: Any
    high: Any
    unit: str
    basis: str  # "fitted" (from the snapshot's rates), "read" (from its settings and counters) or "assumed"
    how: str
    clipped: str = ""  # "low" or "high": the relation gave a value beyond the model's range, held at that bound


@dataclass
class Fit:
    """A fitted snapshot: diagnosis, scenario, parameters, evidence and what stays undetermined."""

    diagnosis: Diagnosis
    scenario: str | None
    params: dict[str, Estimate]
    undetermined: list[dict[str, str]]
    interval_s: float
    rate_per_s: float           # the visits (acquires, calls) per second the fit used for sizing model runs
    replicates: list[dict[str, Any]] = field(default_factory=list)  # the refitted parameters of each replicate
    scale: float = 1.0          # the replicates' spread times this is the capture's: sqrt(window / interval)

    @property
    def evidence(self) -> list[str]:
        """Everything the diagnosis and the estimates rest on, as sentences."""
        return list(self.diagnosis.evidence) + [f"{name}: {e.how}" for name, e in self.params.items()
                                                 if e.basis != "assumed"]

    def model_params(self, which: str = "estimate") -> dict[str, Any]:
        """The fitted model's parameters (estimates, or each one's low or high end) for models.run."""
        return {name: getattr(e, which) for name, e in self.params.items()}

    def to_dict(self) -> dict[str, Any]:
        """The fit as plain data: scenario, params (estimate, low, high), evidence, undetermined."""
        return {
            "diagnosis": self.diagnosis.name,
            "scenario": self.scenario,
            "params": {name: {"estimate": _plain(e.estimate), "low": _plain(e.low), "high": _plain(e.high),
                              "unit": e.unit, "basis": e.basis, "how": e.how, "clipped": e.clipped or None}
                       for name, e in self.params.items()},
            "evidence": self.evidence,
            "undetermined": self.undetermined,
            "interval_s": self.interval_s,
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The fit as a JSON document."""
        return json.dumps(self.to_dict(), indent=indent)


def _plain(x: Any) -> Any:
    """A value as JSON shows it: numbers to FITTED significant digits (a fit is no more exact than that)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    return significant(x, FITTED)


# ----------------------------------------------------------------------------- diagnosis


def _waits(snap: Snapshot):
    """The wait rows that are work waiting, by wait time, largest first."""
    w = snap.table("wait")
    w = w[~w["name"].isin(BENIGN) & (w["time_ms"].fillna(0) > 0)]
    return w.sort_values("time_ms", ascending=False).reset_index(drop=True)


def _latch_family(wait_type: str) -> str | None:
    """LATCH or PAGELATCH for a latch wait type (PAGEIOLATCH is I/O: not a latch problem)."""
    m = re.fullmatch(r"(PAGELATCH|LATCH)_(KP|SH|UP|EX|DT)", wait_type)
    return m.group(1) if m else None


def diagnose(snap: Snapshot) -> Diagnosis:
    """The dominant contention: the top wait that is work waiting, and for a latch wait its top latch class."""
    waits = _waits(snap)
    per_s = 1.0 / snap.interval_s
    if waits.empty:
        return Diagnosis(NOT_A_LATCH, None, ["no wait other than idle ones, CPU queueing (SOS_SCHEDULER_YIELD) "
                                             "and parallel coordination (CXCONSUMER) took any time"])
    top = waits.iloc[0]
    total = waits["time_ms"].sum()
    share = top["time_ms"] / total
    lead = (f"{top['name']} is the top wait: {top['time_ms'] * per_s:,.1f} ms of waiting per second "
            f"({share:.0%} of the ranked wait time), {top['count'] * per_s:,.1f} waits per second")
    schedulers = snap.setting("schedulers") or max(len(snap.table("scheduler")), 1)
    floor = MIN_WAIT_SHARE * schedulers * 1000.0  # ms of waiting per second
    if top["time_ms"] * per_s < floor:
        return Diagnosis(NOT_A_LATCH, None, [lead, f"that is less than {MIN_WAIT_SHARE:.0%} of the {schedulers} "
                                                   f"schedulers' time ({floor:,.0f} ms per second): nothing here "
                                                   "waits enough to be the problem"])
    family = _latch_family(top["name"])
    if top["name"] == "RESOURCE_SEMAPHORE":
        return _diagnosis("RESOURCE_SEMAPHORE",
                          [lead, "queries wait for memory grants; the book's grant model is the columnstore "
                                "insert's (chapter 7), so the fit treats the queries as such inserts"])
    if top["name"] == "MEMORY_ALLOCATION_EXT":
        return _diagnosis("MEMORY_ALLOCATION_EXT",
                          [lead, "sessions wait on preemptive memory calls to the OS: the decommit model "
                                "(lock pages in memory off)"])
    if family is None:
        others = ", ".join(waits["name"].head(3))
        return Diagnosis(NOT_A_LATCH, None, [lead, f"the top waits ({others}) are not latch or memory-grant "
                                                   "waits, so no model here explains them"])
    latches = snap.table("latch")
    if family == "PAGELATCH":
        return _page_latch(snap, top, lead)
    named = latches[~latches["name"].isin(["BUFFER"])].sort_values("time_ms", ascending=False)
    if named.empty:
        return Diagnosis("LATCH_EX", "closed-latch", [lead, "sys.dm_os_latch_stats names no class: a generic latch"])
    cls = named.iloc[0]["name"]
    cls_share = named.iloc[0]["time_ms"] / max(latches["time_ms"].sum(), 1e-12)
    evidence = [lead, f"{cls} holds {cls_share:.0%} of the non-buffer latch wait time in sys.dm_os_latch_stats"]
    if cls == "NESTING_TRANSACTION_FULL":
        return _diagnosis(cls, evidence + ["parallel workers of one insert log through their parent "
                                           "transaction's latch"])
    if cls == "APPEND_ONLY_STORAGE_INSERT_POINT":
        return _diagnosis(cls, evidence + ["row versions queue for tempdb's version-store insert point"])
    acquires = snap.get("xevent", cls) if snap.has("xevent", cls) else 0.0
    batches = snap.get("counter", BATCHES)
    if acquires and batches >= 0.5 * acquires:
        evidence.append(f"{batches:,.0f} batch requests for {acquires:,.0f} acquires: each request takes the "
                        "latch about once, an open stream of requests (the convoy model)")
        return Diagnosis("LATCH_EX", "convoy", evidence)
    why = (f"{batches:,.0f} batch requests for {acquires:,.0f} acquires: sessions take the latch many times per "
           "batch" if acquires else "no acquire count (the extended-events session) to compare batches with")
    evidence.append(f"{why}, a fixed set of sessions in a loop (the closed-latch model)")
    return Diagnosis("LATCH_EX", "closed-latch", evidence)


def _diagnosis(name: str, evidence: list[str]) -> Diagnosis:
    """A diagnosis with one model, the one :data:`DIAGNOSES` names for it."""
    return Diagnosis(name, DIAGNOSES[name][1], evidence)


def _page_latch(snap: Snapshot, top: Any, lead: str) -> Diagnosis:
    """PAGELATCH on top: the hot page when the waits are writers' and sit on one index (and one page, if sampled).

    PAGELATCH_UP on top is allocation-page contention (tempdb's PFS, GAM and
    SGAM pages), and waits spread over many indexes are not one hot page:
    neither is a model of this book.
    """
    if top["name"] == "PAGELATCH_UP":
        return Diagnosis(NOT_A_LATCH, None, [lead, "PAGELATCH_UP is the latch of allocation pages (PFS, GAM, SGAM), "
                                                   "typically tempdb's: no model here covers it"])
    evidence = [lead]
    index = snap.table("index")
    if len(index) and index["count"].sum() > 0:
        hot = index.sort_values("count", ascending=False).iloc[0]
        hot_share = hot["count"] / index["count"].sum()
        where = (f"{hot['name']} holds {hot_share:.0%} of the page latch waits of {len(index)} "
                 f"index{'es' if len(index) > 1 else ''}")
        if hot_share < HOT_SHARE:
            return Diagnosis(NOT_A_LATCH, None, evidence + [where + f": under {HOT_SHARE:.0%}, so the waits are "
                                                            "spread, not one hot page, which no model here covers"])
        evidence.append(where + ": one hot index")
    pages = snap.table("page")
    if len(pages) and pages["count"].sum() > 0:
        page = pages.sort_values("count", ascending=False).iloc[0]
        evidence.append(f"page {page['name']} had {page['count'] / pages['count'].sum():.0%} of the page latch "
                        f"waiters seen at the two reads")
    ex, sh = snap.get("wait", "PAGELATCH_EX"), snap.get("wait", "PAGELATCH_SH")
    if ex <= sh:
        return Diagnosis(NOT_A_LATCH, None, evidence + [f"PAGELATCH_SH waits ({sh:,.0f}) are as many as "
                                                        f"PAGELATCH_EX ({ex:,.0f}): readers, not inserts at one "
                                                        "page's end, which no model here covers"])
    evidence.append(f"PAGELATCH_EX waits outnumber PAGELATCH_SH {ex:,.0f} to {sh:,.0f}: writers queue for one "
                    "page, as inserts at the end of an ascending key do")
    return _diagnosis("PAGELATCH", evidence)


# ----------------------------------------------------------------------------- the queueing relations


@dataclass(frozen=True)
class LatchObs:
    """A latch class's rates over the interval (times in microseconds)."""

    waits: float          # waits (sys.dm_os_latch_stats waiting_requests_count)
    wait_us: float        # their total time
    handoff_us: float     # signal wait per wait: wake-up plus the switch to the waiter
    acquires: float | None  # from the extended events, when captured
    spins: float          # collisions in LATCH_SPIN_STATS
    spin_count: float = 0.0  # its spins
    spin_rounds: float = 0.0  # collisions plus back-offs: the spin rounds


def _latch_obs(snap: Snapshot, cls: str, family: str) -> LatchObs:
    """The class's waits and time, its share of the family's signal wait, and its acquires if captured."""
    waits, wait_ms = snap.get("latch", cls), snap.get("latch", cls, "time_ms")
    rows = snap.table("wait")
    rows = rows[rows["name"].str.fullmatch(rf"{family}_(KP|SH|UP|EX|DT)")]
    count, signal = rows["count"].sum(), rows["signal_time_ms"].fillna(0).sum()
    acquires = snap.get("xevent", cls) if snap.has("xevent", cls) else None
    collisions = snap.get("spinlock", LATCH_SPINS)
    return LatchObs(waits, wait_ms * 1000.0, signal * 1000.0 / count if count else 0.0, acquires, collisions,
                    snap.get("spinlock", LATCH_SPINS, "spins"),
                    collisions + snap.get("spinlock", LATCH_SPINS, "backoffs"))


def _handoff(fitted: dict, assumed: dict, obs: LatchObs, scenario: str, shared: bool = False) -> None:
    """The wake-up from the signal wait per wait, less the scenario's context switch (their split is assumed).

    The signal wait runs from a release to the next owner running: the
    waiter's wake-up plus the switch to it.  With ``shared`` schedulers (more
    sessions than schedulers, or a co-tenant) it also holds the time a woken
    waiter queues for its CPU, which the model produces by itself: then the
    wake-up keeps the book's calibrated value.
    """
    if shared:
        assumed["wakeup_us"] = SHARED_HANDOFF
        return
    switch = models.get_scenario(scenario).param("context_switch_us").default
    fitted["wakeup_us"] = (obs.handoff_us - switch, "us",
                           f"signal wait per wait {obs.handoff_us:.1f} us ({obs.waits:,.0f} waits) is the hand-off: "
                           f"the wake-up plus the {switch:g} us switch to the waiter")
    assumed["context_switch_us"] = ("how the hand-off splits into the wake-up and the switch to the waiter",
                                    "a trace of Windows context switches (ETW)")


SHARED_HANDOFF = ("the signal wait also holds time spent queued for a busy scheduler, so the wake-up is not "
                  "told apart from it", "a snapshot with no more sessions than schedulers")


def _shared(sessions: int, schedulers: int) -> bool:
    """Whether woken sessions may queue for a scheduler (more of them than schedulers)."""
    return sessions > schedulers


def _policy(obs: LatchObs, cls: str) -> tuple[str, str]:
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


def _spins(obs: LatchObs) -> dict[str, tuple[float, str, str]]:
    """Spins per spin round, for a latch that spins: each collision spins a round, and one more after each back-off."""
    if obs.spins <= obs.waits or obs.spin_rounds <= 0:
        return {}
    return {"spins_per_round": (obs.spin_count / obs.spin_rounds, "",
                                f"{obs.spin_count:,.0f} spins over {obs.spins:,.0f} collisions and "
                                f"{obs.spin_rounds - obs.spins:,.0f} back-offs (one spin round each)")}


def closed_repairman(customers: int, cycle_us: float, wait_us: float, p_wait: float,
                     handoff_us: float) -> tuple[float, float]:
    """Hold and think (us) of the machine-repairman that matches a closed latch's rates.

    ``customers`` workers each go round a cycle of ``cycle_us`` (customers /
    throughput): think, wait ``wait_us`` on average, hold.  Little's law
    gives think = cycle - wait - hold; the arrival theorem says a request
    finds the latch owned with the probability the other customers - 1 keep
    it owned, which exact MVA gives for each hold.  The hold that makes it
    ``p_wait`` is found by bisection (the chance grows with the hold).
    """
    if customers < 2 or p_wait <= 0:
        raise FitError(f"{customers} worker(s) and {p_wait:.1%} of acquires waiting: a latch nobody waits for "
                       "shows nothing of its hold; capture while the contention is on")
    top = cycle_us - wait_us
    saturated = cycle_us / customers - handoff_us * min(p_wait, 1.0)  # the latch owned all the time
    if saturated <= 0:
        raise FitError(f"{p_wait:.1%} of acquires waited {handoff_us:,.1f} us of hand-off each, more than the "
                       f"{cycle_us / customers:,.1f} us between acquires ({customers} workers): the hand-offs alone "
                       "exceed the time there was, so the signal wait or the acquire count is wrong")
    if top <= 0:
        # The workers waited as long as they went round (waits counted as they end may have begun before the
        # interval): the latch was saturated, its hold the busy-time bound, and the think time below 0 says so.
        return saturated, top - saturated

    def owned(hold: float) -> float:
        think = max(cycle_us - wait_us - hold, 0.0)
        m = mva_repairman(customers - 1, think, hold + handoff_us * p_wait)
        return float(m.utilisation[-1])

    # The latch cannot be owned more than all the time: hold + hand-off x p_wait <= cycle / customers.
    low, high = 1e-9 * top, min(top, saturated)
    if owned(high) < p_wait or owned(low) >= p_wait:
        # Saturated: even the bound leaves requests waiting, or the hand-offs alone keep the latch owned as often
        # as requests found it so. The latch is then owned all the time, and the bound is the hold.
        return high, cycle_us - wait_us - high
    for _ in range(100):
        mid = 0.5 * (low + high)
        if owned(mid) < p_wait:
            low = mid
        else:
            high = mid
    hold = 0.5 * (low + high)
    return hold, cycle_us - wait_us - hold


def repairman_service(customers: int, cycle_us: float, response_us: float) -> tuple[float, float]:
    """Service and think (us) of the repairman whose response per visit is ``response_us`` (queue and service).

    Think = cycle - response (Little's law); the service is where exact MVA's
    response for ``customers`` equals the observed one (bisection: it grows
    with the service).
    """
    think = max(cycle_us - response_us, 0.0)
    low, high = 0.0, response_us
    for _ in range(100):
        mid = 0.5 * (low + high)
        r = float(mva_repairman(customers, think, max(mid, 1e-12)).response_time[-1])
        if r < response_us:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high), think


# ----------------------------------------------------------------------------- one estimator per scenario


@dataclass
class Point:
    """One scenario's estimates from one snapshot, before their spread is known."""

    fitted: dict[str, tuple[float, str, str]]     # name -> (value, unit, how)
    settings: dict[str, tuple[Any, str]]          # name -> (value, how)
    assumed: dict[str, tuple[str, str]]           # name -> (why undetermined, what would determine it)
    rate_per_s: float                             # visits per second, for sizing model runs
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)  # ranges a fit knows without replicates


def _setting(snap: Snapshot, name: str, fallback: Any, what: str) -> tuple[Any, str]:
    value = snap.setting(name)
    if value is None:
        return fallback, f"{MISSING}no {name} setting, so {what} {fallback!r}"
    return value, f"the capture's {name} setting"


def _need(value: float | None, what: str) -> float:
    if value is None or not value > 0:
        raise FitError(what)
    return float(value)


def _visit_rate(snap: Snapshot, cls: str, obs: LatchObs, per_visit: float = 1.0,
                counter: str | None = None) -> tuple[float, str]:
    """Visits to the latch per second: the extended events' acquires, else a performance counter."""
    if obs.acquires:
        return obs.acquires / snap.interval_s, f"{obs.acquires:,.0f} latch_acquired events for {cls}"
    if counter and snap.get("counter", counter) > 0:
        n = snap.get("counter", counter) * per_visit
        return n / snap.interval_s, f"{snap.get('counter', counter):,.0f} {counter} (no latch_acquired events)"
    raise FitError(f"the snapshot has no latch_acquired count for {cls}"
                   + (f" and no {counter} counter" if counter else "")
                   + ": capture with the extended-events session (@xevents = 1) so the fit knows the acquire rate")


def _schedulers(snap: Snapshot) -> tuple[int, str]:
    return _setting(snap, "schedulers", 8, "schedulers")


def _cpu_ms(snap: Snapshot) -> float:
    return float(snap.table("scheduler")["time_ms"].fillna(0).sum())


def est_convoy(snap: Snapshot) -> Point:
    """An open stream: rate from the acquires, hold from the busy time the waits show (PASTA), hand-off from signals.

    With Poisson arrivals a request finds the latch owned with probability
    equal to the share of time it is owned: waits / acquires = rate x (hold
    + hand-off x waits / acquires).  The mean wait then tells a fixed hold
    from an exponential one (Pollaczek-Khinchine: twice the wait for the same utilisation).
    """
    cls = _top_class(snap)
    obs = _latch_obs(snap, cls, "LATCH")
    lam, rate_how = _visit_rate(snap, cls, obs, counter=BATCHES)
    p = _waited_share(obs.waits, lam * snap.interval_s, f"latch {cls}", rate_how)
    hold_us = p / lam * 1e6 - obs.handoff_us * p
    mean_wait_us = obs.wait_us / (lam * snap.interval_s)
    s = hold_us + obs.handoff_us * p
    rho = min(lam * s / 1e6, 0.999)
    # PK: mean wait = lam E[S^2] / (2 (1 - rho)); E[S^2] = S^2 (1 + cv2)
    cv2 = 2 * (1 - rho) * mean_wait_us / (lam / 1e6 * s * s) - 1 if s > 0 else 0.0
    dist = "exponential" if cv2 > 0.5 else "fixed"
    schedulers, sched_how = _schedulers(snap)
    settings = {"schedulers": (schedulers, sched_how), "hold_dist": (dist, f"the mean wait {mean_wait_us:,.0f} us "
                f"per request at utilisation {rho:.2f} puts the hold's squared coefficient of variation "
                + (f"near {cv2:.1f} (0: fixed, 1: exponential)" if cv2 >= -0.05 else
                   f"at {cv2:.1f}, below a fixed hold's 0: the waits are shorter than Pollaczek-Khinchine gives for "
                   "Poisson arrivals, so the arrivals are smoother than Poisson; the nearest hold, fixed, is used"))}
    fitted = {"arrival_rate_per_s": (lam, "req/s", rate_how + " over the interval"),
              "hold_ms": (hold_us / 1000.0, "ms", f"{p:.1%} of requests waited, so the latch was owned that share "
                          "of the time (Poisson arrivals see time averages); owned time per request less the "
                          "hand-offs")}
    assumed = {"arrivals": ("Poisson arrivals assumed: a snapshot has counts, not arrival times",
                            "arrival timestamps (an extended-events trace of batch starts)")}
    _handoff(fitted, assumed, obs, "convoy")
    return Point(fitted, settings, assumed, lam)


def _top_class(snap: Snapshot) -> str:
    """The non-buffer latch class with the most wait time, or FitError when sys.dm_os_latch_stats has none."""
    latches = snap.table("latch")
    latches = latches[(latches["name"] != "BUFFER") & (latches["count"].fillna(0) > 0)]
    if latches.empty:
        raise FitError("no latch row other than BUFFER has waits (count above 0): the latch model needs "
                       "sys.dm_os_latch_stats rows for the class that waits")
    return str(latches.sort_values("time_ms", ascending=False).iloc[0]["name"])


def _waited_share(found: float, visits: float, what: str, visits_how: str) -> float:
    """``found / visits``: the share of visits that found the latch owned, or FitError when it is 0 or above 1."""
    if found <= 0:
        raise FitError(f"{what}: no acquire found the latch owned over the interval (0 waits or spins): a latch "
                       "nobody waits for shows nothing of its hold; capture while the contention is on")
    if found > visits * (1.0 + 1e-9) + 0.5:  # every visit may find it owned (a saturated latch), not more
        raise FitError(f"{what}: {found:,.0f} acquires found the latch owned but {visits_how} gives only "
                       f"{visits:,.0f} acquires; one of the two counts is wrong (lost events, or another workload's "
                       "counters)")
    return min(found / visits, 1.0)


def _check_wait_budget(what: str, wait_us: float, customers: int, interval_s: float, longest_ms: float) -> None:
    """FitError when ``customers`` sessions could not have waited ``wait_us`` in the interval.

    A wait's time is counted when it ends, so a wait that ended in the interval may have begun before it: each
    session waits at most the interval plus the longest wait (``longest_ms``, the DMV's max_wait_time_ms).
    """
    budget_us = customers * (interval_s * 1e6 + longest_ms * 1000.0)
    if wait_us > budget_us:
        raise FitError(f"{what}: {wait_us / 1000.0:,.0f} ms of waiting in {interval_s:g} s, but {customers} sessions "
                       f"can wait at most {budget_us / 1000.0:,.0f} ms (the interval plus the longest wait, "
                       f"{longest_ms:,.0f} ms, each): the sessions setting or the wait time is wrong")


def _closed_latch_core(snap: Snapshot, cls: str, customers: int,
                       per_visit_counter: tuple[str | None, float] = (None, 1.0), unfair: bool = False):
    """The closed repairman's hold and think per visit for ``cls``, and the rates behind them.

    A fair latch's requests that found it owned are its waits; an unfair one's are its spin collisions
    (they spin instead of waiting, and nothing is handed off).
    """
    obs = _latch_obs(snap, cls, "LATCH")
    counter, per_visit = per_visit_counter
    x, rate_how = _visit_rate(snap, cls, obs, per_visit, counter)
    visits = x * snap.interval_s
    found = obs.spins if unfair else obs.waits
    p = _waited_share(found, visits, f"latch {cls}", rate_how)
    _check_wait_budget(f"latch {cls}", obs.wait_us, customers, snap.interval_s,
                       snap.get("latch", cls, "max_time_ms"))
    wait = obs.wait_us / visits
    hold, think = closed_repairman(customers, customers / x * 1e6, wait, p, 0.0 if unfair else obs.handoff_us)
    how = (f"{customers} workers at {x:,.0f} acquires/s go round a cycle of {customers / x * 1e6:,.1f} us with "
           f"{wait:,.2f} us of latch wait per acquire and {p:.1%} of acquires finding the latch owned "
           f"({'spin collisions' if unfair else 'waits'}): exact MVA's repairman (arrival theorem) gives this hold, "
           "Little's law the rest of the cycle")
    return obs, x, rate_how, hold, think, how


def est_closed_latch(snap: Snapshot) -> Point:
    """A fixed set of sessions in a loop: the repairman through the arrival theorem (:func:`closed_repairman`)."""
    cls = _top_class(snap)
    workers, workers_how = _setting(snap, "sessions", 8, "workers")
    obs, x, rate_how, hold, think, how = _closed_latch_core(snap, cls, workers)
    schedulers, sched_how = _schedulers(snap)
    fitted = {"hold_ms": (hold / 1000.0, "ms", how), "think_ms": (think / 1000.0, "ms", how)}
    settings = {"workers": (workers, workers_how), "schedulers": (schedulers, sched_how)}
    assumed = {"hold_dist": ("the hold's spread: a snapshot gives means", "per-acquire hold times (a trace)"),
               "think_dist": ("the think time's spread", "per-acquire timestamps (a trace)")}
    _handoff(fitted, assumed, obs, "closed-latch", _shared(workers, schedulers))
    return Point(fitted, settings, assumed, x)


def est_parallel_insert(snap: Snapshot) -> Point:
    """MAXDOP workers logging through NESTING_TRANSACTION_FULL: the closed repairman per log record.

    The CPU between two log records is split into rows and the record's own
    work with the scenario's default rows per record (the snapshot cannot
    tell rows from records); a co-tenant shows as scheduler yields on the one
    scheduler with far more context switches than the others.
    """
    cls = "NESTING_TRANSACTION_FULL"
    schedulers, sched_how = _schedulers(snap)
    maxdop, maxdop_how = _dop(snap, schedulers)
    busy, busy_how = -1, "not one SOS_SCHEDULER_YIELD wait: no scheduler is shared"
    yields = snap.get("wait", "SOS_SCHEDULER_YIELD")
    sched = snap.table("scheduler")
    if yields > 0 and len(sched) and (snap.setting("sessions") or 1) >= 2:
        top = sched.sort_values("count", ascending=False).iloc[0]
        median = float(sched["count"].median())
        if top["count"] >= BUSY_SWITCHES * max(median, 1.0):
            busy = int(top["name"])
            busy_how = (f"{yields:,.0f} SOS_SCHEDULER_YIELD waits with {snap.setting('sessions')} sessions, and "
                        f"scheduler {busy} switched {top['count']:,.0f} times (the median scheduler "
                        f"{median:,.0f}): a CPU-bound query shares it")
        else:
            busy_how = (f"{yields:,.0f} SOS_SCHEDULER_YIELD waits, but no scheduler switches {BUSY_SWITCHES:g} "
                        f"times as often as the median ({top['count']:,.0f} against {median:,.0f}): no co-tenant")
    d = models.get_scenario("parallel-insert").defaults()
    per_record = d["rows"] / pin.log_records(d)
    obs = _latch_obs(snap, cls, "LATCH")
    assumed = {"contender_cost_us": ("a cost that grows with contenders needs the throughput at two MAXDOPs",
                                     "snapshots at two or more MAXDOPs"),
               "rows_per_page": ("rows and log records are not told apart",
                                 "the rows inserted (the table's row count)")}
    fitted: dict[str, tuple[float, str, str]] = {}
    if busy >= 0:
        # Hand-offs to the worker behind the co-tenant wait out its quantum: they swamp the hold, and the
        # workers no longer keep pace (the ones on schedulers of their own finish first).  The CPU per log
        # record still shows: the schedulers' CPU less the co-tenant's (its scheduler's CPU beyond what the
        # median worker's scheduler used), over the records.
        x, rate_how = _visit_rate(snap, cls, obs)
        cpu = sched.set_index(sched["name"].astype(int))["time_ms"].fillna(0.0)
        workers = cpu[(cpu.index != busy) & (cpu > 0)]
        co_tenant = max(float(cpu.get(busy, 0.0)) - float(workers.median()) if len(workers) else 0.0, 0.0)
        think = (float(cpu.sum()) - co_tenant) * 1000.0 / (x * snap.interval_s) - d["hold_us"]
        rate_how += (f"; {float(cpu.sum()):,.0f} ms of scheduler CPU less the co-tenant's {co_tenant:,.0f} ms, "
                     f"less the {d['hold_us']:g} us hold assumed")
        assumed["hold_us"] = ("hand-offs to the worker that shares a scheduler with the co-tenant wait out its "
                              "quantum and swamp the hold", "a snapshot without the co-tenant")
        assumed["wakeup_us"] = SHARED_HANDOFF
    else:
        unfair = _policy(obs, cls)[0] == "unfair"
        obs, x, rate_how, hold, think, how = _closed_latch_core(snap, cls, maxdop, unfair=unfair)
        fitted["hold_us"] = (hold, "us", how)
        if not unfair:  # an unfair latch hands nothing off: its few waits say nothing of a hand-off
            _handoff(fitted, assumed, obs, "parallel-insert")
    cpu_row = (think - d["cpu_per_log_record_us"]) / per_record
    fitted["cpu_per_row_us"] = (cpu_row, "us", f"the {think:,.1f} us between log records ({rate_how}, Little's "
                                f"law) less {d['cpu_per_log_record_us']:g} us per record, over {per_record:.1f} "
                                "rows per record")
    policy, policy_how = _policy(obs, cls)
    if policy == "unfair":
        fitted.update(_spins(obs))
        assumed["spin_us"] = ("the CPU one spin round takes: the counters give spins, not their time",
                              "a CPU profile of the spinning (ETW sampling)")
    settings = {"maxdop": (maxdop, maxdop_how), "schedulers": (schedulers, sched_how),
                "policy": (policy, policy_how), "busy_scheduler": (busy, busy_how)}
    return Point(fitted, settings, assumed, x)


def _dop(snap: Snapshot, schedulers: int) -> tuple[int, str]:
    """The degree of parallelism the queries ran at: the requests' own, else the server's MAXDOP setting."""
    if (snap.setting("request_dop") or 0) > 0:
        return snap.setting("request_dop"), "the largest dop of the requests seen at the two reads"
    if snap.setting("maxdop") is None:
        return schedulers, f"{MISSING}no maxdop setting, so {schedulers} (the schedulers)"
    if snap.setting("maxdop") == 0:
        return schedulers, "the server's maxdop 0: as many workers as schedulers"
    return snap.setting("maxdop"), ("the server's maxdop setting (a query hint or a database-scoped MAXDOP "
                                    "would differ: capture request_dop)")


def est_version_store(snap: Snapshot) -> Point:
    """Connections appending versions at APPEND_ONLY_STORAGE_INSERT_POINT: the closed repairman per append.

    The version size comes from the Version Generation rate counter (KB per
    update); the hold estimated is the mean per append, from which the new
    pages' share (default cost, the size's page rate) is taken away.
    """
    cls = "APPEND_ONLY_STORAGE_INSERT_POINT"
    d = models.get_scenario("version-store").defaults()
    connections, conn_how = _setting(snap, "sessions", d["connections"], "connections")
    updates = snap.get("counter", TRANSACTIONS)
    assumed = {}
    if updates > 0 and snap.get("counter", VERSION_KB) > 0:
        row_bytes = max(1, round(snap.get("counter", VERSION_KB) * 1024.0 / updates))
        bytes_how = (f"{snap.get('counter', VERSION_KB):,.0f} KB of versions over {updates:,.0f} transactions")
    else:
        row_bytes, bytes_how = d["row_bytes"], "no version-generation counter: the default size assumed"
        assumed["row_bytes"] = ("the version size", "the Version Generation rate (KB/s) counter and Transactions/sec")
    chunks = vs.chunks(row_bytes)
    obs, x, rate_how, hold, think, how = _closed_latch_core(snap, cls, connections, (TRANSACTIONS, chunks))
    hold_us = hold - d["new_page_us"] * float(vs.page_rate(row_bytes)) / chunks
    cpu = think * chunks
    fitted = {"hold_us": (hold_us, "us", how + f", less the new pages' share ({d['new_page_us']:g} us per page)"),
              "cpu_per_update_us": (cpu, "us", f"think time per append times {chunks} append(s) per update")}
    schedulers, sched_how = _schedulers(snap)
    _handoff(fitted, assumed, obs, "version-store", _shared(connections, schedulers))
    settings = {"connections": (connections, conn_how), "schedulers": (schedulers, sched_how)}
    if "row_bytes" not in assumed:
        settings["row_bytes"] = (row_bytes, bytes_how)
    assumed["new_page_us"] = ("the extra hold of a new page is part of the mean hold", "a latch hold-time trace")
    return Point(fitted, settings, assumed, x)


def est_last_page(snap: Snapshot) -> Point:
    """Sessions inserting at the end of an ascending key: the closed repairman on the last page's EX latch.

    Rows per second from the transactions (one row per call assumed); a row
    waits for the leaf when PAGELATCH_EX counts a wait; the hold per row
    less the split's share (a new page per page of rows) is the CPU under the
    latch; the CPU per row from the schedulers, less what is spent under the
    latch, is the call's CPU before it; the rest of the cycle is think time.
    """
    d = models.get_scenario("last-page-insert").defaults()
    sessions, sess_how = _setting(snap, "sessions", d["sessions"], "sessions")
    calls = snap.get("counter", TRANSACTIONS) or snap.get("counter", BATCHES)
    if not calls:
        raise FitError("the snapshot has no Transactions/sec or Batch Requests/sec counter: the fit needs the "
                       "rows inserted per second (capture the counters, as the script does by default)")
    rows = calls * d["batch_rows"]
    x = rows / snap.interval_s
    ex = snap.get("wait", "PAGELATCH_EX")
    wait_us = (snap.get("wait", "PAGELATCH_EX", "time_ms") + snap.get("wait", "PAGELATCH_SH", "time_ms")) * 1000.0
    obs = _latch_obs(snap, "BUFFER", "PAGELATCH")
    _check_wait_budget("PAGELATCH_EX and PAGELATCH_SH", wait_us, sessions, snap.interval_s,
                       max(snap.get("wait", f"PAGELATCH_{mode}", "max_time_ms") for mode in ("EX", "SH")))
    p, wait = ex / rows, wait_us / rows
    hold, think_all = closed_repairman(sessions, sessions / x * 1e6, wait, p, obs.handoff_us)
    per_page = lpi.rows_per_page(d["row_bytes"])
    under = hold - d["new_page_us"] / per_page
    cpu_row = _cpu_ms(snap) * 1000.0 / rows
    before = cpu_row - hold - d["alloc_us"] / per_page - CONTEXT_SWITCH_US * (1 + p)
    think = sessions / x * 1e6 - wait - cpu_row
    how = (f"{sessions} sessions at {x:,.0f} rows/s ({calls:,.0f} transactions), {wait:,.1f} us of page latch wait "
           f"per row, {p:.2f} PAGELATCH_EX waits per row (above 1: the last page is never free): the repairman and "
           f"the busy-time bound give a hold of {hold:,.1f} us")
    fitted = {"cpu_under_us": (under, "us", how + f", less the new page's share ({d['new_page_us']:g} us per "
                               f"{per_page} rows)"),
              "cpu_before_us": (before, "us", f"{cpu_row:,.1f} us of scheduler CPU per row less the latch hold, "
                                "the allocation's share and the switches"),
              "think_us": (think, "us", "the cycle per session less the waits and the CPU (Little's law)")}
    schedulers, sched_how = _schedulers(snap)
    settings = {"sessions": (sessions, sess_how), "schedulers": (schedulers, sched_how),
                "key": ("identity", "waits on one index's last page: an ascending key")}
    assumed = {"batch_rows": ("rows per call", "the rows inserted (the table's row count) beside the transactions"),
               "row_bytes": ("the row size", "the table's average record size (sys.dm_db_index_physical_stats)"),
               "new_page_us": ("a page split's extra hold is part of the mean hold per row",
                               "the splits' own latch holds (a trace of page splits)")}
    _handoff(fitted, assumed, obs, "last-page-insert", _shared(sessions, schedulers))
    return Point(fitted, settings, assumed, x)


def est_cci_decommit(snap: Snapshot) -> Point:
    """Sessions whose compression calls the OS through one serialised path: MVA's repairman on MEMORY_ALLOCATION_EXT.

    Every call waits (it is preemptive), so the wait per call is the
    response (queue and service) and MVA gives the service; pages per call
    and calls per rowgroup keep the scenario's values (Obbish's traces).
    """
    d = models.get_scenario("cci-decommit").defaults()
    sessions, sess_how = _setting(snap, "sessions", d["sessions"], "sessions")
    calls = _need(snap.get("wait", "MEMORY_ALLOCATION_EXT"), "no MEMORY_ALLOCATION_EXT waits to count OS calls by")
    x = calls / snap.interval_s
    _check_wait_budget("MEMORY_ALLOCATION_EXT", snap.get("wait", "MEMORY_ALLOCATION_EXT", "time_ms") * 1000.0,
                       sessions, snap.interval_s, snap.get("wait", "MEMORY_ALLOCATION_EXT", "max_time_ms"))
    response = snap.get("wait", "MEMORY_ALLOCATION_EXT", "time_ms") * 1000.0 / calls
    service, think = repairman_service(sessions, sessions / x * 1e6, response)
    how = (f"{sessions} sessions make {x:,.0f} OS calls/s, each waiting {response:,.1f} us: exact MVA's repairman "
           f"gives {service:,.1f} us of serialised work per call")
    fitted = {"page_us_no_lpim": (service / d["pages_per_call"], "us",
                                  how + f", over {d['pages_per_call']:g} pages per call"),
              "cpu_per_rowgroup_ms": (think * d["os_calls_per_rowgroup"] / 1000.0, "ms",
                                      f"the cycle per call less the wait (Little's law), {think:,.1f} us, times "
                                      f"{d['os_calls_per_rowgroup']} calls per rowgroup")}
    schedulers, sched_how = _schedulers(snap)
    settings = {"sessions": (sessions, sess_how), "schedulers": (schedulers, sched_how),
                "lpim": ("off", "MEMORY_ALLOCATION_EXT waits show only with lock pages in memory off")}
    assumed = {"page_us_lpim": ("the OS path's cost per page with lock pages in memory, which a capture without "
                                "it cannot show (Obbish's 1.33 us is used)", "a capture with lock pages in memory on"),
               "pages_per_call": ("pages freed per OS call", "an ETW trace of FreePage calls (Obbish's method)"),
               "os_calls_per_rowgroup": ("calls per rowgroup", "the rowgroups compressed in the interval")}
    return Point(fitted, settings, assumed, x)


def est_cci_insert(snap: Snapshot) -> Point:
    """Columnstore inserts queued for memory: the grant from how many queries got memory at once.

    The queries that did not wait fit under the semaphore's target together
    and one more would not: the grant lies between target / (k + 1) and
    target / k.  All waiters waiting the same time means they timed out, so
    that time is the time-out.  The CPU per row is the schedulers' CPU over
    the rows the queries that ran inserted (rows per query assumed).
    """
    d = models.get_scenario("cci-insert").defaults()
    queries, q_how = _setting(snap, "sessions", d["queries"], "queries")
    memory, m_how = _setting(snap, "max_server_memory_mb", d["max_server_memory_mb"], "max server memory")
    schedulers, sched_how = _schedulers(snap)
    maxdop, maxdop_how = _dop(snap, schedulers)
    v = dict(d, max_server_memory_mb=memory, maxdop=maxdop)
    waited = snap.get("wait", "RESOURCE_SEMAPHORE")
    wait_ms = snap.get("wait", "RESOURCE_SEMAPHORE", "time_ms")
    max_ms = snap.get("wait", "RESOURCE_SEMAPHORE", "max_time_ms")
    if waited > queries:
        raise FitError(f"RESOURCE_SEMAPHORE has count={waited:,.0f} waits from {queries} queries ({q_how}): a query "
                       "waits for its grant at most once, so the sessions setting or the wait count is wrong")
    if waited == 0 or waited == queries:
        raise FitError(f"RESOURCE_SEMAPHORE has {waited:,.0f} waits from {queries} queries ({q_how}): "
                       + ("no query waited, so the counts give the grant only an upper bound (target / queries)"
                          if waited == 0 else "every query waited, so the counts do not say how many grants fit "
                          "under the target at once")
                       + "; the grant is not determined by this snapshot")
    _check_wait_budget("RESOURCE_SEMAPHORE", wait_ms * 1000.0, queries, snap.interval_s, max_ms)
    at_once = max(int(queries - waited), 1)
    target = cci.target_mb(v)
    cap = cci.grant_mb(dict(v, grant_mb_per_dop=math.inf))
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
    cpu_us = _cpu_ms(snap) * 1000.0 - snap.get("wait", "SOS_SCHEDULER_YIELD") * d["context_switch_us"]
    assumed = {"rows_per_query": ("rows per insert", "the rows inserted (the columnstore's row count)"),
               "start_gap_s": ("when each insert started", "the queries' start times (sys.dm_exec_requests)")}
    if cpu_us > 0:
        fitted["compress_us_per_row"] = (cpu_us / (ran * d["rows_per_query"]), "us",
                                         f"{cpu_us / 1e6:,.1f} s of scheduler CPU over {ran:,.0f} queries of "
                                         f"{d['rows_per_query']:,} rows")
    else:
        assumed["compress_us_per_row"] = ("the CPU per row: the capture has no scheduler CPU",
                                          "the scheduler rows (sys.dm_os_schedulers total_cpu_usage_ms)")
    version = str(snap.setting("version", ""))
    cu = re.search(r"2017.*CU(\d+)", version)
    behaviour = "cu14" if cu and int(cu.group(1)) >= 14 else "rtm"
    settings = {"queries": (queries, q_how), "max_server_memory_mb": (memory, m_how),
                "maxdop": (maxdop, maxdop_how), "schedulers": (schedulers, sched_how),
                "behaviour": (behaviour, f"@@VERSION {version!r}" if version else f"{MISSING}no version, so RTM")}
    return Point(fitted, settings, assumed, ran / snap.interval_s, bounds)


ESTIMATORS: dict[str, Callable[[Snapshot], Point]] = {
    "convoy": est_convoy, "closed-latch": est_closed_latch, "parallel-insert": est_parallel_insert,
    "last-page-insert": est_last_page, "version-store": est_version_store, "cci-insert": est_cci_insert,
    "cci-decommit": est_cci_decommit,
}


# ----------------------------------------------------------------------------- sizing model runs


def sized(scenario: str, params: dict[str, Any], rate_per_s: float, seconds: float) -> dict[str, Any]:
    """``params`` with the workload's size set so a run at ``rate_per_s`` visits lasts at least ``seconds``."""
    p = dict(params)
    visits = max(int(math.ceil(rate_per_s * seconds)), 1)
    if scenario == "convoy":
        p["requests"] = min(visits, 2_000_000)
    elif scenario == "closed-latch":
        p["acquires"] = min(max(visits, p.get("workers", 8)), 5_000_000)
    elif scenario == "parallel-insert":
        d = dict(models.get_scenario(scenario).defaults(), **p)
        p["rows"] = min(int(visits * d["rows"] / pin.log_records(d)) + 1, 200_000_000)
    elif scenario == "last-page-insert":
        d = dict(models.get_scenario(scenario).defaults(), **p)
        per = max(int(math.ceil(visits / d["sessions"] / d["batch_rows"])), 1) * d["batch_rows"]
        most = lpi.MAX_ROWS // d["sessions"] // d["batch_rows"] * d["batch_rows"]
        if most < d["batch_rows"]:
            raise ParameterError(f"{d['sessions']} sessions of batch_rows={d['batch_rows']} rows per call need "
                                 f"{d['sessions'] * d['batch_rows']:,} rows for one call each, more than the "
                                 f"{lpi.MAX_ROWS:,} a run of the model inserts")
        p["inserts_per_session"] = min(per, most)
    elif scenario == "version-store":
        p["window_ms"] = min(seconds * 1000.0, 100_000.0)
    elif scenario == "cci-decommit":
        d = dict(models.get_scenario(scenario).defaults(), **p)
        p["rowgroups"] = min(max(int(math.ceil(visits / d["sessions"] / d["os_calls_per_rowgroup"])), 1), 1_000)
    return p


def replicate_window(point: Point, interval_s: float, scenario: str) -> tuple[float, float]:
    """(warm-up, window) in seconds of a replicate snapshot: about TARGET_VISITS visits, at most the interval."""
    if scenario == "cci-insert":
        return 0.0, interval_s
    window = max(min(interval_s, TARGET_VISITS / max(point.rate_per_s, 1e-9)), INTERVAL_S[0])
    return 0.1 * window, window


# ----------------------------------------------------------------------------- the fit


def _estimates(scenario: str, point: Point) -> tuple[dict[str, Any], dict[str, str]]:
    """A Point's values as a parameter dict, and which fitted values were held at a bound of the model's range.

    A setting the model cannot run (more sessions than it takes) is a FitError naming the setting; a fitted value
    beyond the catalogue's range is held at the bound and reported as clipped ("low" or "high").
    """
    spec = models.get_scenario(scenario)
    out: dict[str, Any] = {}
    for name, (value, how) in point.settings.items():
        try:
            out[name] = spec.param(name).check(value)
        except ParameterError as err:
            raise FitError(f"{how} gives {name}={value!r}, which the {scenario} model cannot run ({err})") from None
    clipped: dict[str, str] = {}
    for name, (value, _, how) in point.fitted.items():
        p = spec.param(name)
        if not math.isfinite(value):
            raise FitError(f"{name} came out as {value}: the counts behind it ({how}) do not give a number")
        out[name] = min(max(value, p.low), p.high)
        if out[name] != value:
            clipped[name] = "low" if value < p.low else "high"
        if p.kind == "int":
            out[name] = round(out[name])
    return out, clipped


def _clip_text(value: float, clipped: str, p: Any, unit: str) -> str:
    """How an estimate held at a bound says so."""
    bound = p.low if clipped == "low" else p.high
    return (f"; CLIPPED: the relation gives {value:,.4g} {unit}, {'below' if clipped == 'low' else 'above'} the "
            f"model's range, so the {clipped} bound {bound:,.4g} {unit} is used: the model does not reach this "
            "server's behaviour, and its what-ifs are not to be trusted")


def _estimator(name: str, snap: Snapshot) -> Point:
    """The scenario's estimator on ``snap``; an arithmetic failure inside it ends as a FitError, not a traceback."""
    try:
        return ESTIMATORS[name](snap)
    except ParameterError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError) as err:
        raise FitError(f"the {name} relations fail on this snapshot ({type(err).__name__}: {err}); its counts "
                       "contradict each other in a way no check named") from None


def fit(snap: Snapshot, *, scenario: str | None = None, replicates: int = REPLICATES,
        progress: Callable[[float], None] | None = None) -> Fit:
    """Diagnose ``snap``, fit its scenario (or ``scenario``), and measure each estimate's spread from replicates.

    Every way the snapshot can fail the fit ends as a FitError naming the count at fault; an estimate held at
    a bound of the model's range says so (``Estimate.clipped``, and in its ``how``).
    """
    if not isinstance(snap, Snapshot):
        raise FitError(f"snap={type(snap).__name__} is not a Snapshot: read one with models.snapshot.read or parse")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or not MIN_REPLICATES <= replicates <= 100:
        raise FitError(f"replicates={shown(replicates)} is out of range: use an integer from {MIN_REPLICATES} to 100 "
                       "(the refits whose spread gives each range)")
    if progress is not None and not callable(progress):
        raise FitError(f"progress={shown(progress)} is not allowed: use a function of the fraction done, or None")
    diagnosis = diagnose(snap)
    name = diagnosis.scenario if scenario is None else scenario
    if name is None:
        return Fit(diagnosis, None, {}, [], snap.interval_s, 0.0)
    spec = models.get_scenario(name)
    point = _estimator(name, snap)
    base, clipped = _estimates(name, point)
    start, window = replicate_window(point, snap.interval_s, name)
    reps: list[dict[str, Any]] = []
    if name != "cci-insert":  # its model draws nothing at random: the counts bound the grant instead
        for k in range(replicates):
            params = sized(name, dict(base, seed=k + 1), point.rate_per_s, 1.5 * (start + window))
            try:
                again = _estimator(name, from_model(name, params, start_s=start, interval_s=window))
            except FitError as err:
                raise FitError(f"the fitted {name} model's own snapshot (seed {k + 1}) does not fit back ({err}): "
                               "the estimates cannot be given a range, so none is given") from None
            except ParameterError as err:  # the fitted values make a run the scenario refuses
                raise FitError(f"the fitted {name} model cannot be run to measure its ranges ({err}); its "
                               "estimates are beyond what the model runs") from None
            refit = {n: v for n, (v, _, _) in again.fitted.items()}
            if not all(math.isfinite(v) for v in refit.values()):
                raise FitError(f"the fitted {name} model's own snapshot (seed {k + 1}) fits back to {refit}: the "
                               "estimates cannot be given a range, so none is given")
            reps.append(refit)
            if progress is not None:
                progress((k + 1) / replicates)
    scale = math.sqrt(window / snap.interval_s) if reps else 1.0
    params: dict[str, Estimate] = {}
    undetermined = []
    for pname, (value, how) in point.settings.items():
        missing = how.startswith(MISSING)
        params[pname] = Estimate(value, value, value, spec.param(pname).unit, "assumed" if missing else "read", how)
        if missing:
            undetermined.append({"param": pname, "assumed": _plain(value), "why": how,
                                 "measure": "the capture script's settings rows"})
    for pname, (value, unit, how) in point.fitted.items():
        p = spec.param(pname)
        est = base[pname]
        if pname in clipped:
            how += _clip_text(value, clipped[pname], p, unit)
        if pname in point.bounds:
            low, high = point.bounds[pname]
        elif reps:
            refits = np.array([r[pname] for r in reps])
            sd = float(np.std(refits, ddof=1))
            half = SPREAD * sd * scale
            bias = float(refits.mean()) - est
            if abs(bias) > SPREAD * sd / math.sqrt(len(reps)) and pname not in clipped:
                # The relation misses part of the mechanism: the model fitted back from its own snapshots comes
                # out off by ``bias`` on average, so the estimate is moved back by as much (a bootstrap bias
                # correction) and the range widened by the uncertainty of that mean.
                corrected = est - bias
                est = min(max(corrected, p.low), p.high)
                half = SPREAD * math.hypot(sd * scale, sd / math.sqrt(len(reps)))
                how += (f"; moved by {-bias:+,.3g} {unit}: the fitted model's own snapshots fit back "
                        f"{bias:+,.3g} {unit} off on average")
                if est != corrected:
                    clipped[pname] = "low" if corrected < p.low else "high"
                    how += _clip_text(corrected, clipped[pname], p, unit)
            low, high = est - half, est + half
        else:
            low = high = est
        low, high = max(min(low, est), p.low), min(max(high, est), p.high)
        if p.kind == "int":
            est, low, high = round(est), math.floor(low), math.ceil(high)
        params[pname] = Estimate(est, low, high, unit, "fitted", how, clipped.get(pname, ""))
    for pname, (what, measure) in point.assumed.items():
        value = spec.param(pname).default
        params[pname] = Estimate(value, value, value, spec.param(pname).unit, "assumed", what)
        undetermined.append({"param": pname, "assumed": _plain(value), "why": what, "measure": measure})
    return Fit(diagnosis, name, params, undetermined, snap.interval_s, point.rate_per_s, reps, scale)
