"""What the fit reads off a snapshot, shared by every scenario's diagnosis rule and estimator.

The helpers here turn a capture's counts into the rates the queueing
relations need (a latch class's waits, hand-off and visit rate; the
settings; the closed repairman's hold and think), and name what is missing
or contradictory as a :class:`FitError`.  :class:`Clue` is what a scenario's
diagnosis rule reads; :class:`Refusal` is how a rule says the pattern is its
family's but no model here covers it, naming what the capture shows
instead.  It also places page latch waits (tempdb's pages, allocation
pages, the captured database), finds columnstore work in a capture and
parses @@VERSION (SQL Server 2016 to 2025).  Nothing here names a scenario.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from models.counters.snapshot import (
    BATCHES, DELTA_ROWGROUPS_CREATED, LATCH_SPINS, ROWGROUPS_COMPRESSED, SYSTEM_DATABASES, TEMPDB_ID,
    Snapshot,
)
from models.calibration import CONTEXT_SWITCH_US, WAKEUP_BAND_US
from models.params import ParameterError


@dataclass(frozen=True)
class Clue:
    """What a diagnosis rule reads: the capture, its top wait and, for a latch wait, the family and top class.

    ``latch_class`` is the non-buffer class with the most wait time (None when
    sys.dm_os_latch_stats names none); ``lead`` is the sentence that opens
    every diagnosis's evidence.
    """

    snap: Snapshot
    top_wait: str
    family: str | None
    latch_class: str | None
    lead: str


def acquires_and_batches(clue: Clue) -> tuple[float, float]:
    """The top class's latch_acquired count (0: not captured) and the Batch Requests over the interval."""
    snap, cls = clue.snap, clue.latch_class
    acquires = snap.get("xevent", cls) if cls is not None and snap.has("xevent", cls) else 0.0
    return acquires, snap.get("counter", BATCHES)


NOT_A_LATCH = "not a latch problem: look elsewhere"
# What the diagnosis names when the top wait is not a latch's: each points where to look (see models.counters.advice).
HEALTHY = "nothing waits enough to be a problem"
LOG_WRITES = "log writes (WRITELOG): the transaction log's write latency"
PARALLELISM = "parallelism waits (CXPACKET, CXSYNC_PORT, CXSYNC_CONSUMER): the shape of parallel plans"
PAGE_READS = "page reads (PAGEIOLATCH): data-file reads, I/O latency or too little memory"
LOCK_WAITS = "lock waits (LCK_M_*): blocking between transactions, not latches"
OTHER_WAIT = "another wait on top: no latch or memory-grant problem of this book"
NO_MODEL = "recognised, but no model here covers it"  # a refusal that names nothing more specific


class Refusal(Exception):
    """A rule's word that the capture is its family's pattern but no model here covers it (with the evidence why).

    ``name`` says what the capture shows instead, when the rule can tell (tempdb allocation contention, a capture
    from the wrong database, ...): the diagnosis is then called that, with no model fitted.
    """

    def __init__(self, evidence: list[str], name: str = NO_MODEL) -> None:
        super().__init__("; ".join(evidence))
        self.evidence = evidence
        self.name = name


MISSING = "not in the capture: "  # how a setting the capture lacks says so (the fit then lists it as assumed)


class FitError(ParameterError):
    """A snapshot that names a contention but whose counts its model cannot fit: missing, contradictory or beyond it."""

    kind = "cannot fit"


class FitInputError(FitError):
    """A fit asked for wrongly (a value assumed that the snapshot determines, a parameter the scenario lacks): bad
    input, not an answer about the capture."""

    kind = "bad input"


def latch_family(wait_type: str) -> str | None:
    """LATCH or PAGELATCH for a latch wait type (PAGEIOLATCH is I/O: not a latch problem)."""
    m = re.fullmatch(r"(PAGELATCH|LATCH)_(KP|SH|UP|EX|DT)", wait_type)
    return m.group(1) if m else None


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
    handoff_low_us: float | None = None   # the signal wait per wait if the family's other waits had all theirs
    handoff_high_us: float | None = None  # ... and if they had none (None: the class is its family's only waiter)
    signal_us: float | None = None        # the whole signal wait per wait, where handoff_us is only the latch's part


def latch_obs(snap: Snapshot, cls: str, family: str) -> LatchObs:
    """The class's waits and time, its share of the family's signal wait, and its acquires if captured."""
    waits, wait_ms = snap.get("latch", cls), snap.get("latch", cls, "time_ms")
    rows = snap.table("wait")
    rows = rows[rows["name"].str.fullmatch(rf"{family}_(KP|SH|UP|EX|DT)")]
    count, signal = rows["count"].sum(), rows["signal_time_ms"].fillna(0).sum()
    acquires = snap.get("xevent", cls) if snap.has("xevent", cls) else None
    collisions = snap.get("spinlock", LATCH_SPINS)
    low = high = None
    # The DMVs keep whole milliseconds: a difference of two reads is good to a millisecond either way, which over
    # few waits is a range of hand-offs (a model's capture keeps microseconds, and so a far narrower one).
    whole = bool(len(rows)) and bool((rows["signal_time_ms"].fillna(0) % 1 == 0).all())
    slack_ms = 1.0 if whole else 0.001
    if count > 0 and whole:
        low, high = max(signal - slack_ms, 0.0) * 1000.0 / count, (signal + slack_ms) * 1000.0 / count
    if family == "LATCH" and 0 < waits < count:
        # sys.dm_os_wait_stats sums the signal wait over every latch class of the family; the other classes' waits
        # may hold any of it, up to their own wait time (sys.dm_os_latch_stats), so the class's share is a range.
        latches = snap.table("latch")
        others_ms = float(latches[~latches["name"].isin(["BUFFER", cls])]["time_ms"].fillna(0).sum())
        high = (signal + slack_ms) * 1000.0 / waits
        low = max(signal - others_ms - slack_ms, 0.0) * 1000.0 / waits
        low, high = min(low, signal * 1000.0 / count), max(high, signal * 1000.0 / count)
    return LatchObs(waits, wait_ms * 1000.0, signal * 1000.0 / count if count else 0.0, acquires, collisions,
                    snap.get("spinlock", LATCH_SPINS, "spins"),
                    collisions + snap.get("spinlock", LATCH_SPINS, "backoffs"), low, high)


def handoff(fitted: dict, assumed: dict, obs: LatchObs, switch_us: float, shared: bool = False,
            queued_us: float = 0.0, bounds: dict | None = None) -> None:
    """The wake-up from the signal wait per wait, less the scenario's context switch ``switch_us`` (their split is assumed).

    The signal wait runs from a release to the next owner running: the
    waiter's wake-up plus the switch to it.  With ``shared`` schedulers (more
    sessions than schedulers, or a co-tenant) it also holds the time a woken
    waiter queues for its CPU, which the model produces by itself: then the
    wake-up keeps the book's calibrated value.  Where other latch classes share
    the family's signal wait, or the capture shows ``queued_us`` of CPU
    queueing per wait, the wake-up's range is what those allow (into ``bounds``).
    """
    bounds = {} if bounds is None else bounds
    if shared:
        assumed["wakeup_us"] = SHARED_HANDOFF
        return
    fitted["wakeup_us"] = (obs.handoff_us - switch_us, "us",
                           f"signal wait per wait {obs.signal_us or obs.handoff_us:.1f} us ({obs.waits:,.0f} waits), "
                           + (f"of which {obs.handoff_us:.1f} us is the latch's (the rest CPU queueing), "
                              if obs.signal_us else "")
                           + f"is the hand-off: the wake-up plus the {switch_us:g} us switch to the waiter")
    assumed["context_switch_us"] = ("how the hand-off splits into the wake-up and the switch to the waiter",
                                    "a trace of Windows context switches (ETW)")
    low = obs.handoff_low_us if obs.handoff_low_us is not None else obs.handoff_us
    high = obs.handoff_high_us if obs.handoff_high_us is not None else obs.handoff_us
    low = min(max(low - queued_us, 0.0), obs.handoff_us)
    high = max(high, obs.handoff_us)
    if high - low > 1e-6 * max(high, 1.0):
        value, unit, how = fitted["wakeup_us"]
        fitted["wakeup_us"] = (value, unit, how + f"; the family's other latch waits and {queued_us:,.1f} us of CPU "
                                                  f"queueing per wait put the hand-off between {low:,.1f} and "
                                                  f"{high:,.1f} us")
        bounds["wakeup_us"] = (max(low - switch_us, 0.0), max(high - switch_us, 0.0))


# The longest hand-off the fit will charge to a latch: the top of the book's wake-up band and a switch
# (models.calibration: a wake-up from an idle core to several times White's, 1 to 30 us, plus 2 us).
HANDOFF_CEILING_US = WAKEUP_BAND_US[1] + CONTEXT_SWITCH_US

def handoff_ceiling_us(snap: Snapshot) -> float:
    """The longest hand-off a capture's signal wait is charged to the latch: HANDOFF_CEILING_US where the capture
    measured the instance's CPU queue (the runnable_tasks setting), so that the rest can be named CPU queueing;
    no ceiling otherwise (a model's own snapshot, whose signal waits hold the queueing its own schedulers make)."""
    return HANDOFF_CEILING_US if snap.setting("runnable_tasks") is not None else math.inf


SHARED_HANDOFF = ("the signal wait also holds time spent queued for a busy scheduler, so the wake-up is not "
                  "told apart from it", "a capture at a quiet time with fewer active sessions than schedulers, or a "
                  "trace of Windows context switches (ETW)")


def shared_schedulers(sessions: int, schedulers: int) -> bool:
    """Whether woken sessions may queue for a scheduler (more of them than schedulers)."""
    return sessions > schedulers


def runnable_delay_us(snap: Snapshot) -> tuple[float, str]:
    """The time a woken task waits for a CPU (us), which every signal wait holds beside the wake-up, and how known.

    From the ``runnable_tasks`` setting by Little's law (tasks waiting for a CPU over the rate tasks are switched
    in, the schedulers' context switches); else from SOS_SCHEDULER_YIELD, whose whole wait is signal wait (a
    yielding task goes straight to the runnable queue: Microsoft Learn, sys.dm_os_wait_stats); else 0, unknown.
    """
    switches = float(snap.table("scheduler")["count"].fillna(0).sum())
    runnable = snap.setting("runnable_tasks")
    if runnable is not None and switches > 0:
        delay = float(runnable) * snap.interval_s * 1e6 / switches
        return delay, (f"{float(runnable):,.2f} runnable tasks on average over {switches / snap.interval_s:,.0f} "
                       f"context switches per second (Little's law): {delay:,.1f} us queued for a CPU per switch")
    yields = snap.get("wait", "SOS_SCHEDULER_YIELD")
    if yields > 0:
        delay = snap.get("wait", "SOS_SCHEDULER_YIELD", "signal_time_ms") * 1000.0 / yields
        return delay, f"SOS_SCHEDULER_YIELD's signal wait, {delay:,.1f} us per yield, is time queued for a CPU"
    return 0.0, "the capture shows no CPU queueing (no runnable_tasks setting, no SOS_SCHEDULER_YIELD)"


def feasible_handoff(customers: int, cycle_us: float, p_wait: float, handoff_us: float, queued_us: float,
                     ceiling_us: float = math.inf) -> tuple[float, str]:
    """The hand-off per wait the repairman can charge to the latch, and what was left out of the signal wait.

    A signal wait runs from a release to the waiter running, so it holds the hand-off and, on busy schedulers,
    time queued for a CPU.  No hand-off is longer than ``ceiling_us`` (the top of the wake-up band and a
    switch): above it, the signal wait less the CPU queueing the capture shows (``queued_us`` a wait,
    :func:`runnable_delay_us`) is the latch's, or the ceiling where that leaves nothing.  A fair latch is owned
    but idle from its release to the next owner running, so the hand-offs must also fit in the time between
    acquires: where they do not, the queueing is charged to the CPU too, and where even the rest does not fit,
    the hand-off is held at half the time between acquires and the signal wait's rest is left unexplained.
    """
    room = cycle_us / customers / max(min(p_wait, 1.0), 1e-12)  # hand-off per wait that would fill all the time
    if handoff_us > ceiling_us:
        net = handoff_us - queued_us if 0.0 < handoff_us - queued_us <= ceiling_us else ceiling_us
        if net < 0.9 * room:
            return net, (f"the signal wait per wait, {handoff_us:,.1f} us, is longer than any hand-off (the wake-up "
                         f"band's top and a switch, {ceiling_us:,.1f} us): the latch's hand-off is taken as "
                         f"{net:,.1f} us and the rest is CPU queueing ({queued_us:,.1f} us a switch, charged to the "
                         "CPU)")
        handoff_us = net
    if handoff_us < 0.9 * room:
        return handoff_us, ""
    net = max(handoff_us - queued_us, 0.0)
    if net < 0.9 * room:
        return net, (f"the signal wait per wait, {handoff_us:,.1f} us, would keep the latch idle longer than the "
                     f"{cycle_us / customers:,.1f} us between acquires: {queued_us:,.1f} us of it is CPU queueing "
                     f"(charged to the CPU), so the latch's hand-off is taken as {net:,.1f} us")
    held = 0.5 * room
    return held, (f"the signal wait per wait, {handoff_us:,.1f} us, would keep the latch idle longer than the "
                  f"{cycle_us / customers:,.1f} us between acquires even less the {queued_us:,.1f} us the capture "
                  f"shows of CPU queueing: most of it is time the latch was not idle (other pages' waits, or CPU "
                  f"queueing the capture does not show), and the hand-off is held at {held:,.1f} us; a capture "
                  "with the runnable_tasks setting would say how much is CPU queueing")


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
    from models.analytic import mva_repairman  # scipy, which analytic needs, is loaded only when a fit runs

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
    from models.analytic import mva_repairman  # scipy, which analytic needs, is loaded only when a fit runs

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


@dataclass
class Point:
    """One scenario's estimates from one snapshot, before their spread is known."""

    fitted: dict[str, tuple[float, str, str]]     # name -> (value, unit, how)
    settings: dict[str, tuple[Any, str]]          # name -> (value, how)
    assumed: dict[str, tuple[str, str]]           # name -> (why undetermined, what would determine it)
    rate_per_s: float                             # visits per second, for sizing model runs
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)  # ranges a fit knows without replicates
    caveats: list[str] = field(default_factory=list)  # assumptions the estimates rest on, said in the evidence


def setting(snap: Snapshot, name: str, fallback: Any, what: str) -> tuple[Any, str]:
    value = snap.setting(name)
    if value is None:
        return fallback, f"{MISSING}no {name} setting, so {what} {fallback!r}"
    return value, f"the capture's {name} setting"


def workload_sessions(snap: Snapshot, fallback: int, what: str) -> tuple[int, str]:
    """The sessions of the captured workload: the captured database's (database_sessions), else the instance's.

    The instance's count holds every other workload's sessions too, which the fit would charge to this one.
    """
    if snap.setting("database_sessions"):
        return int(snap.setting("database_sessions")), ("the capture's database_sessions setting: the user sessions "
                                                        "of the captured database")
    value, how = setting(snap, "sessions", fallback, what)
    if not how.startswith(MISSING):
        how += (" (the instance's: no database_sessions setting, so any other work's sessions are charged to this "
                "workload)")
    return value, how


def need(value: float | None, what: str) -> float:
    if value is None or not value > 0:
        raise FitError(what)
    return float(value)


def visit_rate(snap: Snapshot, cls: str, obs: LatchObs, per_visit: float = 1.0,
                counter: str | None = None) -> tuple[float, str]:
    """Visits to the latch per second: the extended events' acquires, else a performance counter."""
    if obs.acquires:
        return obs.acquires / snap.interval_s, f"{obs.acquires:,.0f} latch_acquired events for {cls}"
    if counter and snap.get("counter", counter) > 0:
        n = snap.get("counter", counter) * per_visit
        return n / snap.interval_s, f"{snap.get('counter', counter):,.0f} {counter} (no latch_acquired events)"
    raise FitError(f"the snapshot has no latch_acquired count for {cls}"
                   + (f" and no {counter} counter" if counter else "")
                   + f": capture with the extended-events session (@xevents = 1, @xevent_class = '{cls}') so the fit "
                     "knows the acquire rate")


def schedulers(snap: Snapshot) -> tuple[int, str]:
    return setting(snap, "schedulers", 8, "schedulers")


def cpu_ms(snap: Snapshot) -> float:
    """The schedulers' CPU over the interval (ms): the whole instance's."""
    return float(snap.table("scheduler")["time_ms"].fillna(0).sum())


def workload_cpu_ms(snap: Snapshot) -> tuple[float, str]:
    """The captured workload's CPU (ms): its database's sessions' (database_cpu_ms), else the instance's schedulers'."""
    if snap.setting("database_cpu_ms") is not None and (snap.setting("database_cpu_ms") > 0 or not snap.has("scheduler")):
        return float(snap.setting("database_cpu_ms")), "the captured database's sessions' CPU (database_cpu_ms)"
    return cpu_ms(snap), ("the schedulers' CPU, the whole instance's (no database_cpu_ms setting, so other work's "
                          "CPU is charged to this workload)")


def top_class(snap: Snapshot) -> str:
    """The non-buffer latch class with the most wait time, or FitError when sys.dm_os_latch_stats has none."""
    latches = snap.table("latch")
    latches = latches[(latches["name"] != "BUFFER") & (latches["count"].fillna(0) > 0)]
    if latches.empty:
        raise FitError("no latch row other than BUFFER has waits (count above 0): the latch model needs "
                       "sys.dm_os_latch_stats rows for the class that waits")
    return str(latches.sort_values("time_ms", ascending=False).iloc[0]["name"])


def waited_share(found: float, visits: float, what: str, visits_how: str, in_flight: int = 0) -> float:
    """``found / visits``: the share of visits that found the latch owned, or FitError when it is 0 or above 1.

    A wait is counted when it starts and an acquire (or the update it serves) when it ends, so up to
    ``in_flight`` more waits than acquires (the sessions still waiting at the second read) are no contradiction.
    """
    if found <= 0:
        raise FitError(f"{what}: no acquire found the latch owned over the interval (0 waits or spins): a latch "
                       "nobody waits for shows nothing of its hold; capture while the contention is on")
    if found > visits * (1.0 + 1e-9) + 0.5 + in_flight:  # every visit may find it owned (saturated), not more
        raise FitError(f"{what}: {found:,.0f} acquires found the latch owned but {visits_how} gives only "
                       f"{visits:,.0f} acquires; one of the two counts is wrong (lost events, or another workload's "
                       "counters)")
    return min(found / visits, 1.0)


def check_wait_budget(what: str, wait_us: float, customers: int, interval_s: float, longest_ms: float) -> None:
    """FitError when ``customers`` sessions could not have waited ``wait_us`` in the interval.

    A wait's time is counted when it ends, so a wait that ended in the interval may have begun before it: each
    session waits at most the interval plus the longest wait (``longest_ms``, the DMV's max_wait_time_ms).
    """
    budget_us = customers * (interval_s * 1e6 + longest_ms * 1000.0)
    if wait_us > budget_us:
        raise FitError(f"{what}: {wait_us / 1000.0:,.0f} ms of waiting in {interval_s:g} s, but {customers} sessions "
                       f"can wait at most {budget_us / 1000.0:,.0f} ms (the interval plus the longest wait, "
                       f"{longest_ms:,.0f} ms, each): the sessions setting or the wait time is wrong")


def closed_latch_core(snap: Snapshot, cls: str, customers: int,
                       per_visit_counter: tuple[str | None, float] = (None, 1.0), unfair: bool = False,
                       counted: tuple[float, str] | None = None):
    """The closed repairman's hold and think per visit for ``cls``, and the rates behind them.

    A fair latch's requests that found it owned are its waits; an unfair one's are its spin collisions
    (they spin instead of waiting, and nothing is handed off).  ``counted`` (visits per second, how) stands
    for the acquires where the capture has no extended events and the scenario counts its visits itself.
    """
    obs = latch_obs(snap, cls, "LATCH")
    counter, per_visit = per_visit_counter
    if counted is not None and not obs.acquires:  # the scenario counted its visits itself (no extended events)
        visits_per_s, rate_how = counted
    else:
        visits_per_s, rate_how = visit_rate(snap, cls, obs, per_visit, counter)
    visits = visits_per_s * snap.interval_s
    found = obs.spins if unfair else obs.waits
    p = waited_share(found, visits, f"latch {cls}", rate_how, customers)
    check_wait_budget(f"latch {cls}", obs.wait_us, customers, snap.interval_s,
                       snap.get("latch", cls, "max_time_ms"))
    wait = obs.wait_us / visits
    charged = 0.0
    if not unfair:
        charged, _ = feasible_handoff(customers, customers / visits_per_s * 1e6, p, obs.handoff_us,
                                      runnable_delay_us(snap)[0], handoff_ceiling_us(snap))
        if charged < obs.handoff_us:
            # The rest of each signal wait was CPU queueing: the wake-up is fitted from the latch's part, and the
            # queueing leaves the latch wait for the time between acquires, which the model's schedulers (without
            # the instance's other work) do not produce.
            wait = max(wait - (obs.handoff_us - charged) * obs.waits / visits, 0.0)
            obs = dataclasses.replace(obs, handoff_us=charged, signal_us=obs.handoff_us)
    hold, think = closed_repairman(customers, customers / visits_per_s * 1e6, wait, p, charged)
    how = (f"{customers} workers at {visits_per_s:,.0f} acquires/s go round a cycle of {customers / visits_per_s * 1e6:,.1f} us with "
           f"{wait:,.2f} us of latch wait per acquire and {p:.1%} of acquires finding the latch owned "
           f"({'spin collisions' if unfair else 'waits'}): exact MVA's repairman (arrival theorem) gives this hold, "
           "Little's law the rest of the cycle")
    return obs, visits_per_s, rate_how, hold, think, how


def dop(snap: Snapshot, schedulers: int) -> tuple[int, str]:
    """The degree of parallelism the queries ran at: the requests' own, else the server's MAXDOP setting."""
    if (snap.setting("request_dop") or 0) > 0:
        return snap.setting("request_dop"), "the largest dop of the requests seen at the two reads"
    if snap.setting("maxdop") is None:
        return schedulers, f"{MISSING}no maxdop setting, so {schedulers} (the schedulers)"
    if snap.setting("maxdop") == 0:
        return schedulers, "the server's maxdop 0: as many workers as schedulers"
    return snap.setting("maxdop"), ("the server's maxdop setting (a query hint or a database-scoped MAXDOP "
                                    "would differ: capture request_dop)")


# ----------------------------------------------------------------------------- where page latch waits are

# Allocation pages repeat through a data file: a PFS page every 8,088 pages, a GAM and an SGAM page every 511,232
# (Microsoft Learn, "Pages and extents architecture guide"); page 1 is the first PFS, 2 the first GAM, 3 the
# first SGAM, and the later ones are the multiples of the interval (the SGAM one page after its GAM).  Poche (2023): a waiter on 2:1:1 or 2:1:3 is tempdb allocation contention, and larger page
# ids at those intervals are the same issue.
PFS_INTERVAL = 8_088
GAM_INTERVAL = 511_232
ALLOCATION_PAGES = "allocation-page contention (PFS, GAM, SGAM pages) in a user database"
UNPLACED_ALLOCATION = "allocation contention (tempdb or the captured database: page rows needed to say which)"
WRONG_DATABASE = "page latch waits the capture cannot place: capture from the user database"
GRANT_QUEUE = "a memory-grant queue (RESOURCE_SEMAPHORE) with no columnstore work: no model here"

@dataclass(frozen=True)
class WaitedPage:
    """A page latch waiters were seen on (sys.dm_os_waiting_tasks' db_id:file_id:page_id) and how many."""

    database_id: int
    file_id: int
    page_id: int
    waiters: float

    @property
    def kind(self) -> str | None:
        """PFS, GAM or SGAM for an allocation page, None for any other page."""
        return allocation_page(self.page_id)


def allocation_page(page_id: int) -> str | None:
    """PFS, GAM or SGAM when ``page_id`` is one of a data file's allocation pages, else None."""
    if page_id == 1 or (page_id > 0 and page_id % PFS_INTERVAL == 0):
        return "PFS"
    if page_id == 2 or (page_id > 0 and page_id % GAM_INTERVAL == 0):
        return "GAM"
    if page_id == 3 or (page_id > 1 and (page_id - 1) % GAM_INTERVAL == 0):
        return "SGAM"
    return None


def waited_pages(snap: Snapshot) -> list[WaitedPage]:
    """The capture's page rows as pages, most waiters first (rows whose name is no db:file:page are left out)."""
    out = []
    for row in snap.table("page").itertuples(index=False):
        m = re.match(r"\s*(\d+):(\d+):(\d+)", str(row.name))
        if m and row.count > 0:  # an empty count (NaN) is no waiter
            out.append(WaitedPage(int(m.group(1)), int(m.group(2)), int(m.group(3)), float(row.count)))
    return sorted(out, key=lambda p: -p.waiters)


def tempdb_share(snap: Snapshot) -> float:
    """The share of the sampled page latch waiters (page rows) that were on tempdb's pages (0 with no page rows)."""
    pages = waited_pages(snap)
    total = sum(p.waiters for p in pages)
    return sum(p.waiters for p in pages if p.database_id == TEMPDB_ID) / total if total > 0 else 0.0


def tempdb_kind(page: WaitedPage) -> str:
    """PFS, GAM or SGAM for one of tempdb's allocation pages; metadata for any other tempdb page (its system
    tables' pages, such as 2:1:118)."""
    return page.kind or "metadata"


def tempdb_pages_seen(snap: Snapshot) -> list[str]:
    """What the page rows say of tempdb's waiters: how many of the sampled waiters, over how many files, the
    shares by kind of page (PFS, GAM, SGAM, metadata) and the single busiest page."""
    pages = waited_pages(snap)
    total = sum(p.waiters for p in pages)
    tempdb = [p for p in pages if p.database_id == TEMPDB_ID]
    in_tempdb = sum(p.waiters for p in tempdb)
    if not tempdb or in_tempdb <= 0:
        return []
    top = tempdb[0]
    kinds = {kind: sum(p.waiters for p in tempdb if p.kind == kind) for kind in ("PFS", "GAM", "SGAM")}
    by_kind = ", ".join(f"{kind} pages {count / in_tempdb:.0%}" for kind, count in kinds.items() if count)
    metadata = in_tempdb - sum(kinds.values())
    if metadata > 0:
        by_kind += (", " if by_kind else "") + f"other pages (system tables: metadata) {metadata / in_tempdb:.0%}"
    files = len({p.file_id for p in tempdb})
    seen = (f"{in_tempdb:,.0f} of the {total:,.0f} page latch waiters sampled during the capture were on tempdb's "
            f"pages (database 2), over {files} file(s)" + (f": {by_kind}" if by_kind else "")
            + f"; the single page with the most was {top.database_id}:{top.file_id}:{top.page_id}"
            + (f" (a {top.kind} page)" if top.kind else "") + f", {top.waiters / in_tempdb:.0%} of them")
    alloc = sum(kinds.values())
    what = ("tempdb's allocation pages (PFS, GAM, SGAM) are latched by every session that creates temporary "
            "objects: not a user table's hot page" if alloc >= 0.5 * in_tempdb else
            "pages of tempdb that are not allocation pages are its system tables' (temporary-object metadata): not "
            "a user table's hot page")
    return [seen, what]


def page_latch_elsewhere(snap: Snapshot, top_wait: str) -> None:
    """Refusal naming the contention when the page latch waits are on a user database's allocation pages, or
    cannot be placed at all.

    Sampled waiters (page rows) mostly on tempdb's pages are left to the rules (the tempdb scenario claims
    them: :func:`tempdb_pages_seen` says what they show); mostly on a user database's allocation pages, that
    database's allocation contention, which no model here covers.  Without page rows, PAGELATCH_UP on top is
    allocation contention (allocation pages are latched UP; index pages SH and EX), in tempdb or in a user
    database (heap inserts, many page splits): the page rows would say which.  Otherwise nothing is said and
    the rules go on.
    """
    pages = waited_pages(snap)
    total = sum(p.waiters for p in pages)
    if total > 0:
        if tempdb_share(snap) >= 0.5:
            return
        alloc = [p for p in pages if p.kind]
        if sum(p.waiters for p in alloc) >= 0.5 * total:
            top = alloc[0]
            raise Refusal([f"{sum(p.waiters for p in alloc):,.0f} of the {total:,.0f} page latch waiters seen were "
                           f"on allocation pages, most on {top.database_id}:{top.file_id}:{top.page_id} (a "
                           f"{top.kind} page)", "allocation contention in that database: more data files of equal "
                           "size spread it; no model here covers it"], name=ALLOCATION_PAGES)
        return
    if top_wait == "PAGELATCH_UP":
        raise Refusal(["PAGELATCH_UP is the latch of allocation pages (PFS, GAM, SGAM): tempdb's, or a user "
                       "database's under heap inserts or many page splits, and the capture has no page rows to say "
                       "which: capture again while it waits to see the pages (the script's page rows)",
                       "if they are the captured database's: more data files of equal size spread the allocation "
                       "pages' load"],
                      name=UNPLACED_ALLOCATION)


def database_context(snap: Snapshot) -> tuple[int | None, str]:
    """The captured database's id (None when the capture does not say) and a phrase naming it."""
    db_id, name = snap.setting("database_id"), snap.setting("database")
    if db_id is None:
        return None, f"database {name}" if name else "the captured database (the capture does not name it)"
    return int(db_id), f"database {name or '?'} (id {db_id})"


def system_database(snap: Snapshot) -> str | None:
    """The system database the capture was taken from (master, tempdb, model, msdb), else None."""
    db_id = snap.setting("database_id")
    if db_id is not None and int(db_id) in SYSTEM_DATABASES:
        return SYSTEM_DATABASES[int(db_id)]
    name = str(snap.setting("database") or "").lower()
    return name if name in SYSTEM_DATABASES.values() else None


# ----------------------------------------------------------------------------- columnstore and versions


def columnstore_evidence(snap: Snapshot) -> list[str]:
    """What in the capture says columnstore work ran: the SQLServer:Columnstore rowgroup counters, COLUMNSTORE waits."""
    found = []
    for counter in (ROWGROUPS_COMPRESSED, DELTA_ROWGROUPS_CREATED):
        if snap.get("counter", counter) > 0:
            found.append(f"{snap.get('counter', counter):,.0f} {counter} (SQLServer:Columnstore)")
    waits = snap.table("wait")
    waits = waits[waits["name"].str.startswith("COLUMNSTORE") & (waits["count"].fillna(0) > 0)]
    found += [f"{row.count:,.0f} {row.name} waits" for row in waits.itertuples(index=False)]
    return found


# SQL Server's major version by release year (@@VERSION's product version, 13.x to 17.x; 2025 is 17.0, per its
# build list, KB5005684).
RELEASES = {13: 2016, 14: 2017, 15: 2019, 16: 2022, 17: 2025}


@dataclass(frozen=True)
class SqlVersion:
    """SQL Server's release, build and update level, as @@VERSION's first line gives them."""

    year: int          # 2016, 2017, 2019, 2022, 2025
    major: int         # 13 .. 17
    build: str         # the product version, e.g. 15.0.4188.2
    level: str         # RTM, SP1, SP2, SP3 (the product level)
    cu: int | None     # the cumulative update, when @@VERSION names one

    def __str__(self) -> str:
        return f"SQL Server {self.year} {self.level}" + (f" CU{self.cu}" if self.cu is not None else "") + f" ({self.build})"


def sql_version(text: str | None) -> SqlVersion | None:
    """@@VERSION's first line parsed, e.g. 'Microsoft SQL Server 2019 (RTM-CU14) (KB...) - 15.0.4188.2 (X64)'.

    None when the text is no SQL Server 2016 to 2025 version (an older or newer release, or no version).
    """
    if not text:
        return None
    build = re.search(r"\b(1[3-7])\.(\d+)\.(\d+)(?:\.(\d+))?\b", text)
    if build is None:
        return None
    major = int(build.group(1))
    year = re.search(r"SQL Server (\d{4})", text)
    if year is not None and int(year.group(1)) != RELEASES[major]:
        return None  # a year and a build that disagree: not a version this parser knows
    level = re.search(r"\((RTM|SP\d)(?:-(?:CU|GDR)?(\d+)?[^)]*)?\)", text)
    cu = re.search(r"\((?:RTM|SP\d)-CU(\d+)", text)
    return SqlVersion(RELEASES[major], major, build.group(0), level.group(1) if level else "RTM",
                      int(cu.group(1)) if cu else None)


def instance_caveats(snap: Snapshot) -> list[str]:
    """What a fit charges to one workload that the capture measured for the whole instance.

    The schedulers' CPU, Batch Requests/sec and the user sessions are the instance's; Transactions/sec, the index
    rows and (in a capture from the current script) database_sessions and database_cpu_ms are the captured
    database's.  A fit that reads the instance's counts as one workload's assumes nothing else ran.
    """
    _, where = database_context(snap)
    own = snap.setting("database_sessions") is not None and snap.setting("database_cpu_ms") is not None
    if own:
        said = [f"the sessions and CPU charged to the workload are those of {where} (database_sessions, "
                "database_cpu_ms): other work in that same database is charged to it too (the sessions band covers "
                "up to a fifth of them), and CPU spent in preemptive calls (PREEMPTIVE_* waits) counts in "
                "sys.dm_exec_sessions' cpu_time"]
    else:
        said = [f"ASSUMED: the schedulers' CPU, the batch requests and the user sessions are the whole instance's, and "
                f"the fit charges them all to the workload of {where} (the capture has no database_sessions and "
                "database_cpu_ms settings); other work on the instance would make the CPU per call and the sessions "
                "too high; and the schedulers' CPU (total_cpu_usage_ms) counts non-preemptive workers only, so CPU "
                "spent in preemptive calls (PREEMPTIVE_* waits) is missing from it and would make the CPU per call "
                "too low"]
    if system_database(snap):
        said.append(f"the capture was taken in {system_database(snap)}, a system database: its Transactions/sec and "
                    "index rows are not a user workload's")
    return said
