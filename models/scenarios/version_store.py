"""Updates under row versioning: every version is appended at one insert point guarded by one EX latch (assumed).

With read committed snapshot or snapshot isolation on, an update first copies
the row's pre-change version into tempdb's version store.  Versions are only
ever appended after the last one written, and where that is lives behind the
APPEND_ONLY_STORAGE_INSERT_POINT latch, taken in EX mode only (Randal, 2021).
The model has one insert point, and so one such latch, for the whole instance:
an assumption, since no source says how many there are.  Each connection loops for ever, as Randal's scripts did, and
the run measures updates per second over a window of ``window_ms``:

* CPU outside the latch: ``cpu_per_update_us`` (plus the reads of a mixed
  workload, ``read_fraction`` of all statements at ``cpu_per_read_us`` each,
  and ADR's extra cost per update when ``adr`` is on), then a yield point;
* with versioning on (and ADR off), one append per 8,000-byte chunk of the
  version (Randal's chunks): ACQUIRE the latch in EX, hold it ``hold_us``,
  RELEASE.  Versions fill pages back to back (8,096 bytes of records per
  8,192-byte page), and the append that needs a new page also holds the latch
  ``new_page_us`` longer; one update in ``new_unit_every`` starts a new
  append-only allocation unit and holds it ``new_unit_us`` longer;
* then ``think_us`` (exponential, default 0) off the scheduler: a commit's
  log flush or the client's round trip, which Randal's loop had none of
  (forced delayed durability, one batch).

Which appends allocate is laid out in each connection's program from the
version size (a repeating block of updates whose page allocations match
bytes / 8,096 closely, see :func:`page_rate`), with each connection at its
own phase, so the program stays short however long the window.  With ``adr`` on, versions go to the user database's
persistent version store: no insert-point latch, ``adr_cpu_us`` more CPU per
update (an assumption: the seed reports "much worse" without a figure).

The defaults are round illustrative values; Randal's calibrated setup is
:data:`models.book.analysis.version_store.SETUP`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from models.engine.program import DISTRIBUTIONS, EX, FIXED, Program
from models.counters import evidence
from models.counters.snapshot import TRANSACTIONS, VERSION_KB, Snapshot
from models.params import Param, ParameterError, common_params, latch_knobs
from models.calibration import WAKEUP_BAND_US
from models.scenarios.base import (
    Band, Capture, Change, DiagnosisRule, RoundTrip, Scenario, Throughput, database_share_band, wakeup_band,
)
from models.result import build as result_of
from models.workload import LatchSpec, Workload, simulate

CHUNK_BYTES = 8_000        # Randal: a version is appended in chunks of at most 8,000 bytes
PAGE_RECORD_BYTES = 8_096  # an 8,192-byte page less its 96-byte header
BLOCK = 32                 # most updates a block writes out one by one (longer blocks loop a plain update)
FOREVER = 2**62
MAX_UPDATES = 5_000_000    # bound on the updates a window may hold (the run's event budget)

PARAMS = (
    Param("connections", "int", 10, "", 1, 1024, help="connections updating in a loop"),
    Param("versioning", "choice", "on", choices=("off", "on"),
          help="read committed snapshot or snapshot isolation: each update appends a version"),
    Param("row_bytes", "int", 420, "bytes", 1, 64_000, help="size of the row version copied into the version store"),
    Param("cpu_per_update_us", "float", 100.0, "us", 1.0, 100_000.0,
          help="CPU of one update outside the insert-point latch"),
    Param("cpu_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="CPU outside the latch exactly its mean, or exponential with that mean"),
    Param("hold_us", "float", 7.0, "us", 0.01, 10_000.0, help="time one append holds the insert-point latch"),
    Param("new_page_us", "float", 20.0, "us", 0.0, 100_000.0,
          help="extra hold for the append that starts a new version-store page"),
    Param("new_unit_every", "int", 3_600_000, "updates", 100, 10**12,
          help="updates between two new append-only allocation units"),
    Param("new_unit_us", "float", 500.0, "us", 0.0, 1_000_000.0,
          help="extra hold for the append that starts a new allocation unit"),
    Param("adr", "choice", "off", choices=("off", "on"),
          help="accelerated database recovery: versions in the user database, no insert-point latch"),
    Param("adr_cpu_us", "float", 100.0, "us", 0.0, 100_000.0, help="extra CPU per update with ADR on"),
    Param("read_fraction", "float", 0.0, "", 0.0, 0.99, help="share of statements that only read"),
    Param("cpu_per_read_us", "float", 50.0, "us", 0.0, 100_000.0, help="CPU of one read statement"),
    Param("think_us", "float", 0.0, "us", 0.0, 1_000_000.0,
          help="mean time off the scheduler after each update (a commit's log flush, the client's round trip), "
               "exponential; none in Randal's loop"),
    Param("window_ms", "float", 500.0, "ms", 1.0, 100_000.0, help="simulated time over which updates are counted"),
) + common_params(schedulers=12)


def latched(values: dict[str, Any]) -> bool:
    """True when updates take the insert-point latch: versioning on and ADR off."""
    return values["versioning"] == "on" and values["adr"] == "off"


def chunks(row_bytes: int) -> int:
    """Appends per version: one per 8,000-byte chunk."""
    return max(1, math.ceil(row_bytes / CHUNK_BYTES))


def outside_us(values: dict[str, Any]) -> float:
    """Mean CPU between two updates outside the latch: the update, its share of reads, ADR's extra cost."""
    reads_per_update = values["read_fraction"] / (1.0 - values["read_fraction"])
    return (values["cpu_per_update_us"] + reads_per_update * values["cpu_per_read_us"]
            + (values["adr_cpu_us"] if values["adr"] == "on" else 0.0))


def page_rate(row_bytes: int) -> Fraction:
    """New pages per update, bytes / 8,096 as a fraction a/b with a block of b updates a short program can hold.

    At least one page in BLOCK updates: the closest fraction with b <= BLOCK (off by under 1/(b BLOCK)).
    Fewer: one page in round(8,096 / bytes) updates (off by under half an update per page).
    """
    exact = Fraction(row_bytes, PAGE_RECORD_BYTES)
    if exact >= Fraction(1, BLOCK):
        return exact.limit_denominator(BLOCK)
    return Fraction(1, round(PAGE_RECORD_BYTES / row_bytes))


def _allocations(rate: Fraction, phase: float, updates: int) -> list[int]:
    """New pages started by each of ``updates`` consecutive updates at ``rate`` pages per update."""
    return [math.floor((i + 1) * rate + phase) - math.floor(i * rate + phase) for i in range(updates)]


def _update(prog: Program, values: dict[str, Any], pages: int, new_unit: bool) -> int:
    """One update: CPU outside the latch, a yield point, one latched append per chunk; returns its address."""
    start = prog.cpu(outside_us(values), DISTRIBUTIONS[values["cpu_dist"]])
    prog.yield_point()
    if latched(values):
        n = chunks(values["row_bytes"])
        for k in range(n):
            hold = values["hold_us"] + (pages // n + (1 if k < pages % n else 0)) * values["new_page_us"]
            if new_unit and k == 0:
                hold += values["new_unit_us"]
            prog.acquire(0, EX)
            prog.cpu(hold, FIXED)
            prog.release(0, EX)
    if values["think_us"] > 0:
        prog.sleep(values["think_us"], DISTRIBUTIONS["exponential"])
    prog.unit()
    return start


def _block(prog: Program, values: dict[str, Any], rate: Fraction, phase: float) -> int:
    """One block of ``rate.denominator`` updates with ``rate.numerator`` page allocations; returns its address.

    A block of up to BLOCK updates is written out; a longer one (one page in many updates) is
    a loop over a plain update (slot 0) and the update that allocates, at the connection's phase.
    """
    start = prog.start()
    size = rate.denominator
    if size <= BLOCK:
        for pages in _allocations(rate, phase, size):
            _update(prog, values, pages, False)
        return start
    before = min(size - 1, int(phase * size))  # plain updates ahead of the allocating one
    if before:
        prog.loop(_update(prog, values, 0, False), before, slot=0)
    _update(prog, values, 1, False)
    if size - 1 - before:
        prog.loop(_update(prog, values, 0, False), size - 1 - before, slot=0)
    return start


def _connection(prog: Program, values: dict[str, Any], w: int) -> int:
    """A connection's program: blocks of updates for ever (slot 1), a new allocation unit every ``unit_blocks`` blocks (slot 2).

    Connection ``w`` starts its pages at phase w / connections of a page and its first new unit
    after (w + 1) / connections of the interval, so the instance as a whole allocates evenly.
    """
    rate = page_rate(values["row_bytes"]) if latched(values) else Fraction(0)
    phase = w / values["connections"]
    start = prog.start()
    if not latched(values):
        prog.loop(_update(prog, values, 0, False), FOREVER, slot=1)
        return start
    blocks = unit_blocks(values)
    first = max(1, round((w + 1) / values["connections"] * blocks))
    prog.loop(_block(prog, values, rate, phase), first, slot=1)
    _update(prog, values, 0, True)
    segment = _block(prog, values, rate, phase)
    prog.loop(segment, blocks, slot=1)
    _update(prog, values, 0, True)
    prog.loop(segment, FOREVER, slot=2)
    return start


def unit_blocks(values: dict[str, Any]) -> int:
    """Blocks of updates between two new allocation units (``new_unit_every`` rounded to whole blocks)."""
    return max(1, round(values["new_unit_every"] / page_rate(values["row_bytes"]).denominator))


def expected_updates(values: dict[str, Any]) -> int:
    """An upper bound on the updates the window can hold: every busy scheduler doing nothing else."""
    busy = min(values["connections"], values["schedulers"])
    return math.ceil(values["window_ms"] * 1000.0 * busy / outside_us(values)) + values["connections"]


def build(values: dict[str, Any]) -> Workload:
    """One looping program per connection, connections bound to schedulers round-robin."""
    prog = Program()
    n = values["connections"]
    starts = [_connection(prog, values, w) for w in range(n)]
    updates = expected_updates(values)
    rate = page_rate(values["row_bytes"])
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=[w % values["schedulers"] for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["connection"] * n,
        latches=[LatchSpec("APPEND_ONLY_STORAGE_INSERT_POINT", "LATCH", **latch_knobs(values))],
        schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=updates * (chunks(values["row_bytes"]) if latched(values) else 1),  # sizes the event budget
        window_us=values["window_ms"] * 1000.0, count_units=True,
        extra={"appends_per_update": chunks(values["row_bytes"]) if latched(values) else 0,
               "pages_per_update": float(rate) if latched(values) else 0.0,
               "exact_pages_per_update": values["row_bytes"] / PAGE_RECORD_BYTES if latched(values) else 0.0,
               "updates_per_new_unit": unit_blocks(values) * rate.denominator + 1 if latched(values) else 0,
               "cpu_outside_us": outside_us(values)},
    )


def check(values: dict[str, Any]) -> None:
    """The window must hold a bounded number of updates."""
    updates = expected_updates(values)
    if updates * chunks(values["row_bytes"]) > MAX_UPDATES:
        raise ParameterError(
            f"window_ms={values['window_ms']:g} could hold up to {updates:,} updates "
            f"({chunks(values['row_bytes'])} append{'s' if chunks(values['row_bytes']) > 1 else ''} each) at "
            f"cpu_per_update_us={values['cpu_per_update_us']:g} on "
            f"{min(values['connections'], values['schedulers'])} busy schedulers: use at most {MAX_UPDATES:,} appends "
            "(a shorter window or more CPU per update)")


# ----------------------------------------------------------------------------- the fit


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """Connections appending versions at APPEND_ONLY_STORAGE_INSERT_POINT: the closed repairman per append.

    The version size comes from the Version Generation rate counter (KB per
    update); the hold estimated is the mean per append, from which the new
    pages' share (default cost, the size's page rate) is taken away.
    """
    cls = "APPEND_ONLY_STORAGE_INSERT_POINT"
    connections, conn_how = evidence.workload_sessions(snap, setup["connections"], "connections")
    updates = snap.get("counter", TRANSACTIONS)
    leaf_updates = float(snap.table("index_update")["count"].fillna(0).max()) if snap.has("index_update") else 0.0
    if 0 < leaf_updates < updates:
        # Transactions/sec counts the database's other work too: the most-updated index's leaf updates
        # (sys.dm_db_index_operational_stats leaf_update_count) are the versioned updates' own count.
        updates = leaf_updates
    assumed = {}
    if updates > 0 and snap.get("counter", VERSION_KB) > 0:
        row_bytes = max(1, round(snap.get("counter", VERSION_KB) * 1024.0 / updates))
        bytes_how = (f"{snap.get('counter', VERSION_KB):,.0f} KB of versions over {updates:,.0f} transactions")
    else:
        row_bytes, bytes_how = setup["row_bytes"], "no version-generation counter: the default size assumed"
        assumed["row_bytes"] = ("the version size", "the Version Generation rate (KB/s) counter and Transactions/sec")
    appends = chunks(row_bytes)
    counted = None
    if updates == leaf_updates:
        counted = (leaf_updates * appends / snap.interval_s,
                   f"{leaf_updates:,.0f} leaf updates of the most-updated index, {appends} append(s) each")
    obs, visits_per_s, rate_how, hold, think, how = evidence.closed_latch_core(snap, cls, connections,
                                                                               (TRANSACTIONS, appends), counted=counted)
    hold_us = hold - setup["new_page_us"] * float(page_rate(row_bytes)) / appends
    cpu = think * appends
    fitted = {"hold_us": (hold_us, "us", how + f", less the new pages' share ({setup['new_page_us']:g} us per page)"),
              "cpu_per_update_us": (cpu, "us", f"think time per append times {appends} append(s) per update")}
    schedulers, sched_how = evidence.schedulers(snap)
    if evidence.shared_schedulers(connections, schedulers):
        # More connections than schedulers: a waiter handed the latch may wait for its scheduler's other worker,
        # which the repairman leaves out, so both values are found again where the model itself gives the
        # captured appends per second and wait per append (method of simulated moments).
        model = dict(setup, connections=connections, schedulers=schedulers, row_bytes=row_bytes)
        wait_us = obs.wait_us / (visits_per_s * snap.interval_s)
        (hold_us, cpu), note = calibrate(model, visits_per_s, wait_us, max(hold_us, 0.1), max(cpu, 1.0))
        fitted = {"hold_us": (hold_us, "us", how + ", less the new pages' share"),
                  "cpu_per_update_us": (cpu, "us", f"the CPU per update at which the model at that hold makes "
                                        f"{visits_per_s:,.0f} appends/s ({note})")}
    switch_us = setup["context_switch_us"]  # the model's own switch, as assumed
    bounds: dict = {}
    evidence.handoff(fitted, assumed, obs, switch_us, evidence.shared_schedulers(connections, schedulers),
                     queued_us=evidence.runnable_delay_us(snap)[0], bounds=bounds)
    settings = {"connections": (connections, conn_how), "schedulers": (schedulers, sched_how)}
    if "row_bytes" not in assumed:
        settings["row_bytes"] = (row_bytes, bytes_how)
    assumed["new_page_us"] = ("the extra hold of a new page is part of the mean hold", "a latch hold-time trace")
    assumed["read_fraction"] = ("statements that only read between the updates: their CPU is counted in the CPU per "
                                "update", "Batch Requests against the leaf updates, or Query Store's read-only queries")
    return evidence.Point(fitted, settings, assumed, visits_per_s, bounds=bounds,
                          caveats=evidence.instance_caveats(snap))


CALIBRATION_SEED = 1          # the runs calibrate() makes: one fixed seed, so a fit is a pure function of its input
CALIBRATION_APPENDS = 6_000   # appends each of those runs measures
CALIBRATION_STEPS = 8         # fixed-point steps (one model run each)


def model_rates(values: dict[str, Any], appends_per_s: float) -> tuple[float, float]:
    """(appends per second, latch wait per append in us) of one run of the model at ``values``."""
    window_ms = min(max(CALIBRATION_APPENDS / max(appends_per_s, 1.0) * 1000.0, 5.0), 100_000.0)
    values = dict(values, window_ms=window_ms)
    result = result_of(simulate(build(values), CALIBRATION_SEED), "version-store", values, CALIBRATION_SEED)
    row = result.latch_stats[result.latch_stats["latch_class"] == "APPEND_ONLY_STORAGE_INSERT_POINT"]
    acquires = float(row["acquires"].sum())
    if acquires <= 0:
        return 0.0, 0.0
    return acquires / (result.elapsed_ms / 1000.0), float(row["wait_time_ms"].sum()) * 1000.0 / acquires


def calibrate(values: dict[str, Any], appends_per_s: float, wait_us: float, hold_us: float,
              cpu_us: float) -> tuple[tuple[float, float], str]:
    """The CPU per update at which the model at the repairman's hold gives ``appends_per_s``, and how close it came.

    The CPU is bisected in log space (the rate falls as it grows).  The hold stays the repairman's: with more
    connections than schedulers the wait per append is set mostly by waiters queued behind their scheduler's
    other worker, and moves too little with the hold to find it again (chapter 9's realistic captures).
    """
    tried: list[tuple[float, float, float, float, float]] = []

    def run(hold: float, cpu: float) -> tuple[float, float]:
        rate, wait = model_rates(dict(values, hold_us=hold, cpu_per_update_us=cpu), appends_per_s)
        if rate > 0:
            miss = abs(math.log(rate / appends_per_s)) + abs(math.log(max(wait, 1e-3) / max(wait_us, 1e-3)))
            tried.append((miss, hold, cpu, rate, wait))
        return rate, wait

    def bisect(low: float, high: float, too_high: Any) -> float:
        for _ in range(CALIBRATION_STEPS):
            mid = math.sqrt(low * high)
            if too_high(mid):
                high = mid
            else:
                low = mid
        return math.sqrt(low * high)

    cpu_us = bisect(1.0, max(20.0 * cpu_us, 1_000.0), lambda cpu: run(hold_us, cpu)[0] < appends_per_s)
    if not tried:
        raise evidence.FitError("the version-store model makes no appends at the repairman's values, so it cannot be "
                                "calibrated to the capture's rates: capture with fewer connections than schedulers")
    _, hold_us, cpu_us, rate, wait = min(tried)
    return (hold_us, cpu_us), (f"found again on the model's own runs, which the repairman leaves out with more "
                               f"connections than schedulers: {rate:,.0f} appends/s and {wait:,.1f} us of wait per "
                               f"append against the capture's {appends_per_s:,.0f} and {wait_us:,.1f}")


def claims(clue: evidence.Clue) -> list[str] | None:
    """LATCH waits led by APPEND_ONLY_STORAGE_INSERT_POINT: row versions queued for the version store."""
    if clue.family == "LATCH" and clue.latch_class == "APPEND_ONLY_STORAGE_INSERT_POINT":
        return ["row versions queue for tempdb's version-store insert point"]
    return None


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """Each update is a transaction (the connections loop inside one batch, as Randal's scripts did) and
    generates its row version's bytes."""
    units = float(result.extra.get("units", 0))
    versions_kb = units * values["row_bytes"] / 1024.0 if values["versioning"] == "on" else 0.0
    return [{"source": "counter", "name": TRANSACTIONS, "count": units},
            {"source": "counter", "name": VERSION_KB, "count": versions_kb}]


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """A measurement window as long as the run should be."""
    return {"window_ms": min(seconds * 1000.0, 100_000.0)}


SCENARIO = Scenario(
    name="version-store", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="updates"),
    reported_waits=("LATCH",),
    capture=Capture(session_param="connections", rows=capture_rows),
    diagnosis=DiagnosisRule(label="APPEND_ONLY_STORAGE_INSERT_POINT", looks_like="LATCH_EX, on that latch class",
                            rank=3, claims=claims),
    estimate=estimate, size_run=size_run, size_params=("window_ms",),
    changes=(Change(name="versioning-off", what="row versioning off (no RCSI or SI)", value="",
                    sets=lambda fitted, given: {"versioning": "off"},
                    leaves_out="turning RCSI or snapshot isolation off changes what readers see and brings back "
                               "readers blocking writers (LCK_M_S waits), which the model has none of; with "
                               "accelerated database recovery the versions go to the database's own version "
                               "store instead (sys.dm_tran_persistent_version_store_stats)"),),
    # The CPU's spread moves the fitted hold by about 1.6% (chapter 9's misspecification trips), beyond its range.
    range_over=(("cpu_dist", "hold_us"),),
    bands=(
        database_share_band("connections"),
        wakeup_band(*WAKEUP_BAND_US),
        Band(param="new_page_us", low=5.0, high=80.0,
             what="the extra hold of an append that starts a new version-store page",
             measure="a latch hold-time trace (no DMV splits the hold)"),
    ),
    round_trip=RoundTrip(values={"connections": 6, "row_bytes": 9_000}, window={"start_s": 0.05, "interval_s": 0.4}),
)
