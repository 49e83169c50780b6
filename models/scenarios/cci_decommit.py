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
  scheduler and the time shows as a wait (MEMORY_ALLOCATION_EXT).

Every session gets its memory grant at once (Obbish's server had memory to
spare).  The defaults are Obbish's 96-core test as calibrated in
:mod:`models.analysis.cci`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from models.engine import state as st
from models.engine.program import DISTRIBUTIONS, OS_PREEMPTIVE, OS_SPIN, Program
from models.params import Param, ParameterError, Scenario, scheduling_params
from models.workload import Workload

PAGE_BYTES = 8_192
MAX_CALLS = 5_000_000  # OS calls a run may make in all (bounds its events)

PARAMS = (
    Param("sessions", "int", 96, "", 1, 512, help="concurrent MAXDOP 1 columnstore inserts"),
    Param("lpim", "choice", "on", choices=("on", "off"),
          help="lock pages in memory: on, the OS path is kernel CPU; off, a preemptive wait"),
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


def call_us(v: dict[str, Any]) -> float:
    """One OS call's own time in the serialised path: its pages times the cost per page."""
    per_page = v["page_us_lpim"] if v["lpim"] == "on" else v["page_us_no_lpim"]
    return v["pages_per_call"] * per_page


def calls(v: dict[str, Any]) -> int:
    """OS calls one session makes."""
    return v["rowgroups"] * v["os_calls_per_rowgroup"]


def program(v: dict[str, Any]) -> tuple[Program, int]:
    """Every session's program: per rowgroup, pieces of compression each followed by an OS call."""
    prog = Program()
    start = prog.start()
    piece = prog.cpu(v["cpu_per_rowgroup_ms"] * 1000.0 / v["os_calls_per_rowgroup"], DISTRIBUTIONS[v["cpu_dist"]])
    prog.yield_point()
    prog.oscall(call_us(v), OS_SPIN if v["lpim"] == "on" else OS_PREEMPTIVE, DISTRIBUTIONS[v["os_dist"]])
    prog.loop(piece, v["os_calls_per_rowgroup"], slot=0)
    prog.loop(start, v["rowgroups"], slot=1)
    prog.end()
    return prog, start


def _collect(v: dict[str, Any]):
    """What the run adds to ``Result.extra``: per-session times and where the time went."""
    def collect(s: st.State) -> dict[str, Any]:
        elapsed = (s.wf[:, st.WF_TSTATE] - s.wf[:, st.WF_ARRIVE]) / 1000.0
        on_schedulers = float(s.wf[:, st.WF_CPU].sum()) / 1e6  # spinning in the kernel included (LPIM on)
        kernel = float(s.gf[st.GF_OS_KERNEL]) / 1e6
        machine = on_schedulers + (kernel if v["lpim"] == "off" else 0.0)  # preemptive calls run off the schedulers
        return {
            "mean_elapsed_s": float(elapsed.mean()) / 1000.0,
            "max_elapsed_s": float(elapsed.max()) / 1000.0,
            "cpu_s": machine,
            "kernel_cpu_s": kernel,
            "kernel_share": kernel / machine if machine > 0 else 0.0,
            "os_wait_s": float(s.gf[st.GF_OS_WAIT]) / 1e6,
            "os_queue_s": float(s.gf[st.GF_OS_QUEUE]) / 1e6,
            "os_busy_s": float(s.gf[st.GF_OS_BUSY]) / 1e6,
            "os_calls": int(s.gi[st.G_OS_CALLS]),
            "pages_freed": float(s.gi[st.G_OS_CALLS] * v["pages_per_call"]),
            "gb_freed": float(s.gi[st.G_OS_CALLS] * v["pages_per_call"] * PAGE_BYTES / 1e9),
            "sessions": pd.DataFrame({"session": np.arange(1, len(elapsed) + 1), "elapsed_ms": elapsed,
                                      "cpu_ms": s.wf[:, st.WF_CPU] / 1000.0,
                                      "kernel_cpu_ms": s.wf[:, st.WF_KERNEL] / 1000.0,
                                      "os_wait_ms": s.wf[:, st.WF_OSWAIT] / 1000.0}),
        }
    return collect


def build(v: dict[str, Any]) -> Workload:
    """One program; sessions round-robin over the schedulers, all starting at once."""
    prog, start = program(v)
    n, sched = v["sessions"], v["schedulers"]
    single_ms = v["rowgroups"] * v["cpu_per_rowgroup_ms"] + calls(v) * call_us(v) / 1000.0
    return Workload(
        program=prog, worker_start=[start] * n, worker_scheduler=[w % sched for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=[], schedulers=sched, quantum_us=v["quantum_ms"] * 1000.0,
        context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"], work_units=0,
        os_wait_type="MEMORY_ALLOCATION_EXT" if v["lpim"] == "off" else "",
        expected_events=3 * n * calls(v),
        expected_ms=max(single_ms * max(1.0, n / sched), n * calls(v) * call_us(v) / 1000.0),
        collect=_collect(v),
    )


def check(v: dict[str, Any]) -> None:
    """A bounded number of OS calls (so of events)."""
    total = v["sessions"] * calls(v)
    if total > MAX_CALLS:
        raise ParameterError(
            f"sessions={v['sessions']} x rowgroups={v['rowgroups']} x os_calls_per_rowgroup="
            f"{v['os_calls_per_rowgroup']} is {total:,} OS calls: use at most {MAX_CALLS:,}")


SCENARIO = Scenario("cci-decommit", __doc__.strip().splitlines()[0], PARAMS, build, check)
