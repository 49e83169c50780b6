"""Concurrent MAXDOP 1 columnstore inserts whose compression gives memory back to the OS through one serialised path.

Each session runs one serial insert of ``rowgroups`` rowgroups.  Compressing
a rowgroup takes ``cpu_per_rowgroup_ms`` of CPU, cut into
``os_calls_per_rowgroup`` pieces; after each piece the session frees
``pages_per_call`` 8 KB pages and takes as many back, which goes through the
operating system (Obbish's ETW traces: SOS_MemoryWorkSpace::FreePage, then
MapUserPhysicalPages in the kernel).  The model makes that path one server,
first come first served, costing ``page_us`` per page (``page_us_lpim`` or
``page_us_no_lpim``); pieces and calls are exponential by default (the
pages a call frees vary), which makes the model the machine-repairman
queue while each session has a scheduler of its own:

* ``lpim`` on: the call runs in the kernel on the session's own thread.
  SQLOS does not know about it, so the session keeps its scheduler and the
  time spent queued and working there is CPU (privileged time), not a wait.
* ``lpim`` off: the call is made preemptively, so the session leaves its
  scheduler and the time shows as a wait, which the model names
  MEMORY_ALLOCATION_EXT.

That wait name is the model's assumption, as is the split between a CPU
path with LPIM and a waited one without.  Microsoft documents
MEMORY_ALLOCATION_EXT as any allocation from SQL Server's internal memory
pool or the operating system (SQL Server 2016 and later), with or without
LPIM, not as this decommit path; common wait-statistics scripts filter it
out as benign.  Obbish tied 91% of the no-LPIM time to memory-related waits
without naming them in his text, and read them as allocating rather than
freeing memory.

Every session gets its memory grant at once (Obbish's server had memory to
spare).  The defaults are Obbish's 96-core test as calibrated in
:mod:`models.book.analysis.cci`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from models.engine import state
from models.engine.program import DISTRIBUTIONS, OS_PREEMPTIVE, OS_SPIN, Program
from models.counters import evidence
from models.counters.snapshot import ROWGROUPS_COMPRESSED, Snapshot
from models.params import Param, ParameterError, scheduling_params
from models.scenarios.base import Capture, Change, DiagnosisRule, RoundTrip, Scenario, Throughput
from models.scenarios.cci_insert import NOT_KNOWN, ROWGROUP_ROWS
from models.workload import Workload

PAGE_BYTES = 8_192

# What is known of this scenario's behaviour per SQL Server version (columns: cci_insert.VERSION_COLUMNS).
# Obbish's post names no version or build for its test; the advice he draws from it is for 2017.
_OBBISH_2017 = "measured, version not named; his advice from it is for 2017 (Obbish)"
_NO_834 = "not with columnstore indexes (Microsoft)"
VERSIONS = (
    ("columnstore compression gives memory back to the OS, through one path that slows many sessions",
     NOT_KNOWN, _OBBISH_2017, _OBBISH_2017, NOT_KNOWN, NOT_KNOWN, "Obbish, 2018d"),
    ("lock pages in memory advised for columnstore loads",
     "Obbish saw LPIM cause problems he did not trace; still a starting point", "advised (Obbish)",
     "advised (Obbish)", NOT_KNOWN, NOT_KNOWN, "Obbish, 2018d"),
    ("trace flag 834 (large pages)", _NO_834, _NO_834 + "; did not help this load (Obbish)",
     _NO_834 + "; did not help this load (Obbish)", _NO_834 + "; trace flag 876 instead",
     _NO_834 + "; trace flag 876 instead", "Microsoft, Trace flags; Obbish, 2018d"),
)
MAX_CALLS = 5_000_000  # OS calls a run may make in all (bounds its events)

PARAMS = (
    Param("sessions", "int", 96, "", 1, 512, help="concurrent MAXDOP 1 columnstore inserts"),
    Param("lpim", "choice", "on", choices=("on", "off"),
          help="lock pages in memory: on, the OS path is kernel CPU; off, a preemptive wait (the model's assumption)"),
    Param("rowgroups", "int", 10, "", 1, 1_000, help="rowgroups each insert compresses"),
    Param("cpu_per_rowgroup_ms", "float", 2_400.0, "ms", 0.0, 1_000_000.0,
          help="CPU to read and compress one rowgroup, outside the OS path"),
    Param("os_calls_per_rowgroup", "int", 356, "", 1, 100_000,
          help="times per rowgroup the session frees pages and takes them back"),
    Param("pages_per_call", "float", 208.5, "pages", 0.0, 1_000_000.0, help="8 KB pages freed (and re-taken) per call"),
    Param("page_us_lpim", "float", 1.33, "us", 0.0, 10_000.0,
          help="OS path time per page with lock pages in memory (serialised)"),
    Param("page_us_no_lpim", "float", 5.16, "us", 0.0, 10_000.0,
          help="OS path time per page without lock pages in memory (serialised)"),
    Param("cpu_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="each piece of compression exactly its mean, or exponential with that mean"),
    Param("os_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="each OS call's time exactly its mean, or exponential with that mean (the pages freed vary)"),
) + scheduling_params(schedulers=96)


def call_us(values: dict[str, Any]) -> float:
    """One OS call's own time in the serialised path: its pages times the cost per page."""
    per_page = values["page_us_lpim"] if values["lpim"] == "on" else values["page_us_no_lpim"]
    return values["pages_per_call"] * per_page


def calls(values: dict[str, Any]) -> int:
    """OS calls one session makes."""
    return values["rowgroups"] * values["os_calls_per_rowgroup"]


def program(values: dict[str, Any]) -> tuple[Program, int]:
    """Every session's program: per rowgroup, pieces of compression each followed by an OS call."""
    prog = Program()
    start = prog.start()
    piece = prog.cpu(values["cpu_per_rowgroup_ms"] * 1000.0 / values["os_calls_per_rowgroup"], DISTRIBUTIONS[values["cpu_dist"]])
    prog.yield_point()
    prog.oscall(call_us(values), OS_SPIN if values["lpim"] == "on" else OS_PREEMPTIVE, DISTRIBUTIONS[values["os_dist"]])
    prog.loop(piece, values["os_calls_per_rowgroup"], slot=0)
    prog.loop(start, values["rowgroups"], slot=1)
    prog.end()
    return prog, start


def _collect(values: dict[str, Any]):
    """What the run adds to ``Result.extra``: per-session times and where the time went."""
    def collect(final: state.State) -> dict[str, Any]:
        elapsed = (final.worker_times[:, state.WF_STATE_SINCE] - final.worker_times[:, state.WF_ARRIVAL]) / 1000.0
        on_schedulers = float(final.worker_times[:, state.WF_CPU].sum()) / 1e6  # spinning in the kernel included (LPIM on)
        kernel = float(final.run_times[state.GF_OS_KERNEL]) / 1e6
        machine = on_schedulers + (kernel if values["lpim"] == "off" else 0.0)  # preemptive calls run off the schedulers
        return {
            "mean_elapsed_s": float(elapsed.mean()) / 1000.0,
            "max_elapsed_s": float(elapsed.max()) / 1000.0,
            "cpu_s": machine,
            "kernel_cpu_s": kernel,
            "kernel_share": kernel / machine if machine > 0 else 0.0,
            "os_wait_s": float(final.run_times[state.GF_OS_WAIT]) / 1e6,
            "os_queue_s": float(final.run_times[state.GF_OS_QUEUE]) / 1e6,
            "os_busy_s": float(final.run_times[state.GF_OS_BUSY]) / 1e6,
            "os_calls": int(final.run_cells[state.G_OS_CALLS]),
            "pages_freed": float(final.run_cells[state.G_OS_CALLS] * values["pages_per_call"]),
            "gb_freed": float(final.run_cells[state.G_OS_CALLS] * values["pages_per_call"] * PAGE_BYTES / 1e9),
            "sessions": pd.DataFrame({"session": np.arange(1, len(elapsed) + 1), "elapsed_ms": elapsed,
                                      "cpu_ms": final.worker_times[:, state.WF_CPU] / 1000.0,
                                      "kernel_cpu_ms": final.worker_times[:, state.WF_KERNEL] / 1000.0,
                                      "os_wait_ms": final.worker_times[:, state.WF_OS_WAIT] / 1000.0}),
        }
    return collect


def build(values: dict[str, Any]) -> Workload:
    """One program; sessions round-robin over the schedulers, all starting at once."""
    prog, start = program(values)
    n, sched = values["sessions"], values["schedulers"]
    single_ms = values["rowgroups"] * values["cpu_per_rowgroup_ms"] + calls(values) * call_us(values) / 1000.0
    return Workload(
        program=prog, worker_start=[start] * n, worker_scheduler=[w % sched for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=[], schedulers=sched, quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"], work_units=0,
        os_wait_type="MEMORY_ALLOCATION_EXT" if values["lpim"] == "off" else "",
        expected_events=3 * n * calls(values),
        expected_ms=max(single_ms * max(1.0, n / sched), n * calls(values) * call_us(values) / 1000.0),
        collect=_collect(values),
    )


def check(values: dict[str, Any]) -> None:
    """A bounded number of OS calls (so of events)."""
    total = values["sessions"] * calls(values)
    if total > MAX_CALLS:
        raise ParameterError(
            f"sessions={values['sessions']} x rowgroups={values['rowgroups']} x os_calls_per_rowgroup="
            f"{values['os_calls_per_rowgroup']} is {total:,} OS calls: use at most {MAX_CALLS:,}")


# ----------------------------------------------------------------------------- the fit


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """Sessions whose compression calls the OS through one serialised path: MVA's repairman on MEMORY_ALLOCATION_EXT.

    Every call waits (it is preemptive), so the wait per call is the
    response (queue and service) and MVA gives the service; pages per call
    and calls per rowgroup keep the scenario's values (Obbish's traces).
    """
    sessions, sess_how = evidence.workload_sessions(snap, setup["sessions"], "sessions")
    calls = evidence.need(snap.get("wait", "MEMORY_ALLOCATION_EXT"), "no MEMORY_ALLOCATION_EXT waits to count OS calls by")
    visits_per_s = calls / snap.interval_s
    evidence.check_wait_budget("MEMORY_ALLOCATION_EXT", snap.get("wait", "MEMORY_ALLOCATION_EXT", "time_ms") * 1000.0,
                       sessions, snap.interval_s, snap.get("wait", "MEMORY_ALLOCATION_EXT", "max_time_ms"))
    response = snap.get("wait", "MEMORY_ALLOCATION_EXT", "time_ms") * 1000.0 / calls
    service, think = evidence.repairman_service(sessions, sessions / visits_per_s * 1e6, response)
    if not service > 0 or not think > 0:
        raise evidence.FitError(f"{sessions} sessions at {visits_per_s:,.0f} MEMORY_ALLOCATION_EXT waits/s of "
                                f"{response:,.1f} us each leave {think:,.1f} us of compression between calls and "
                                f"{service:,.1f} us of serialised work per call: a model of sessions that compress "
                                "between OS calls needs both above 0, so the waits are not this model's (the sessions "
                                "setting, or other work's waits, are in the counts)")
    how = (f"{sessions} sessions make {visits_per_s:,.0f} OS calls/s, each waiting {response:,.1f} us: exact MVA's repairman "
           f"gives {service:,.1f} us of serialised work per call")
    fitted = {"page_us_no_lpim": (service / setup["pages_per_call"], "us",
                                  how + f", over {setup['pages_per_call']:g} pages per call"),
              "cpu_per_rowgroup_ms": (think * setup["os_calls_per_rowgroup"] / 1000.0, "ms",
                                      f"the cycle per call less the wait (Little's law), {think:,.1f} us, times "
                                      f"{setup['os_calls_per_rowgroup']} calls per rowgroup")}
    schedulers, sched_how = evidence.schedulers(snap)
    settings = {"sessions": (sessions, sess_how), "schedulers": (schedulers, sched_how),
                "lpim": ("off", "assumed: the model's OS path is a wait (which it names MEMORY_ALLOCATION_EXT) only with "
                         "lock pages in memory off; Microsoft documents the wait as any memory allocation, with or "
                         "without it")}
    assumed = {"page_us_lpim": ("the OS path's cost per page with lock pages in memory, which a capture without "
                                "it cannot show (Obbish's 1.33 us is used)", "a capture with lock pages in memory on"),
               "pages_per_call": ("pages freed per OS call", "an ETW trace of FreePage calls (Obbish's method)"),
               "os_calls_per_rowgroup": ("calls per rowgroup", "the rowgroups compressed in the interval")}
    caveats = evidence.instance_caveats(snap)
    compressed = snap.get("counter", ROWGROUPS_COMPRESSED)
    if compressed > 0:
        caveats.append(f"the capture counts {compressed:,.0f} rowgroups compressed (SQLServer:Columnstore) for "
                       f"{calls:,.0f} MEMORY_ALLOCATION_EXT waits, {calls / compressed:,.0f} per rowgroup if every "
                       f"wait was a compression's OS call; the fit keeps the calibrated "
                       f"{setup['os_calls_per_rowgroup']} (rowgroups that span the capture's ends blur the count)")
    return evidence.Point(fitted, settings, assumed, visits_per_s, caveats=caveats)


# The least mean MEMORY_ALLOCATION_EXT wait that can be the model's OS call: a tenth of the calibrated call
# (208.5 pages at 5.16 us, about 1.1 ms, from Obbish's traces).  Microsoft documents the wait as any allocation
# from SQL Server's memory pool or the OS, and wait filters list it as benign: microsecond waits are those.
MIN_CALL_US = 0.1 * math.prod(p.default for p in PARAMS if p.name in ("pages_per_call", "page_us_no_lpim"))


def claims(clue: evidence.Clue) -> list[str] | None:
    """MEMORY_ALLOCATION_EXT on top, with columnstore work, calls long enough to be the OS path, and no locked pages.

    MEMORY_ALLOCATION_EXT alone is no trigger: it counts every allocation
    from SQL Server's memory pool or the OS (Microsoft Learn,
    sys.dm_os_wait_stats).  The decommit model needs columnstore compression
    in the capture (its rowgroup counters or COLUMNSTORE waits), a wait per
    call of at least MIN_CALL_US, and a memory model without locked pages;
    anything else refuses as not a latch problem.
    """
    if clue.top_wait != "MEMORY_ALLOCATION_EXT":
        return None
    snap = clue.snap
    count = snap.get("wait", "MEMORY_ALLOCATION_EXT")
    per_wait_us = snap.get("wait", "MEMORY_ALLOCATION_EXT", "time_ms") * 1000.0 / count if count else 0.0
    columnstore = evidence.columnstore_evidence(snap)
    model = str(snap.setting("sql_memory_model") or "")
    why = []
    if not columnstore:
        why.append("the capture shows no columnstore work (no SQLServer:Columnstore rowgroup counter moved and no "
                   "COLUMNSTORE wait)")
    if per_wait_us < MIN_CALL_US:
        why.append(f"a wait lasts {per_wait_us:,.1f} us on average, under the {MIN_CALL_US:,.0f} us a call that "
                   "gives compression memory back to the OS takes (a tenth of Obbish's)")
    if model.upper() in ("LOCK_PAGES", "LARGE_PAGES"):
        why.append(f"the memory model is {model}: with locked pages the OS path is kernel CPU, not this wait")
    if why:
        raise evidence.Refusal(["MEMORY_ALLOCATION_EXT counts every allocation from SQL Server's memory pool or the "
                                "OS, and wait filters list it as benign, so it is no trigger by itself"] + why,
                               name=evidence.NOT_A_LATCH)
    return [f"{', '.join(columnstore)}; waits of {per_wait_us:,.0f} us each"
            + (f", memory model {model}" if model else ", memory model not in the capture")
            + ": sessions compressing columnstore rowgroups wait on preemptive memory calls to the OS, the decommit "
            "model (lock pages in memory off)"]


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """The rowgroups the sessions finished (SQLServer:Columnstore) and the memory model lpim makes."""
    done = math.floor(result.extra.get("os_calls", 0) / values["os_calls_per_rowgroup"])
    return [{"source": "counter", "name": ROWGROUPS_COMPRESSED, "count": float(done)},
            {"source": "setting", "name": "sql_memory_model",
             "value": "LOCK_PAGES" if values["lpim"] == "on" else "CONVENTIONAL"}]


def rows_per_s(result: Any) -> float:
    """Rows compressed per second: every session's rowgroups, or in a run cut short, the rowgroups' worth of OS calls made."""
    params = result.params
    if result.truncated:
        rowgroups_done = result.extra["os_calls"] / params["os_calls_per_rowgroup"]
    else:
        rowgroups_done = params["sessions"] * params["rowgroups"]
    return rowgroups_done * ROWGROUP_ROWS / (result.elapsed_ms / 1000.0)


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """Rowgroups enough for ``visits`` OS calls."""
    per_session = visits / values["sessions"] / values["os_calls_per_rowgroup"]
    return {"rowgroups": min(max(int(math.ceil(per_session)), 1), 1_000)}


SCENARIO = Scenario(
    name="cci-decommit", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="rows", per_s=rows_per_s),
    reported_waits=("MEMORY_ALLOCATION_EXT",),
    capture=Capture(session_param="sessions", rows=capture_rows),
    diagnosis=DiagnosisRule(label="MEMORY_ALLOCATION_EXT", looks_like="MEMORY_ALLOCATION_EXT calls of a millisecond "
                            "or so, with columnstore rowgroups compressed", rank=5,
                            claims=claims),
    estimate=estimate, size_run=size_run, size_params=("rowgroups",),
    changes=(Change(name="lock-pages", what="lock pages in memory", value="", sets=lambda fitted, given: {"lpim": "on"}),),
    round_trip=RoundTrip(values={"lpim": "off", "sessions": 24, "schedulers": 24, "rowgroups": 2},
                         window={"start_s": 2.0, "interval_s": 10.0}),
)
