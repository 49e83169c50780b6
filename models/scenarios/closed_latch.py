"""The closed latch: a fixed set of workers taking turns on one exclusive latch.

Each worker loops: CPU work outside the latch (``think_ms``), a yield point,
an EX acquire, ``hold_ms`` of CPU holding the latch, a release.  Workers are
bound to schedulers round-robin.  With zero overheads (``wakeup_us=0``,
``context_switch_us=0``) and at least as many schedulers as workers this is
the machine-repairman model: N customers, a delay station with mean think Z
and one FIFO server with mean service S, solved exactly by Mean Value
Analysis (exactly product form when think and hold are exponential).
"""

from __future__ import annotations

from typing import Any

from models.engine.program import DISTRIBUTIONS, EX, Program
from models.counters import evidence
from models.counters.snapshot import Snapshot
from models.params import Param, ParameterError, common_params, latch_knobs
from models.scenarios.base import Capture, DiagnosisRule, RoundTrip, Scenario, Throughput, no_rows
from models.workload import LatchSpec, Workload

PARAMS = (
    Param("workers", "int", 8, "", 1, 1024, help="worker threads contending for the latch"),
    Param("think_ms", "float", 1.0, "ms", 0.0, 10_000.0, help="CPU work between latch holds"),
    Param("think_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="think time exactly think_ms, or exponential with that mean"),
    Param("hold_ms", "float", 0.1, "ms", 0.0001, 1000.0, help="time each acquire holds the EX latch"),
    Param("hold_dist", "choice", "exponential", choices=("fixed", "exponential"),
          help="hold time exactly hold_ms, or exponential with that mean"),
    Param("acquires", "int", 20_000, "", 1, 5_000_000, help="latch acquires in all, shared out over the workers"),
) + common_params(schedulers=8)


def build(values: dict[str, Any]) -> Workload:
    """One program per worker: its share of the acquires as a loop."""
    prog = Program()
    n, total = values["workers"], values["acquires"]
    starts, scheds = [], []
    for w in range(n):
        share = total // n + (1 if w < total % n else 0)
        start = prog.start()
        if share > 0:
            body = prog.cpu(values["think_ms"] * 1000.0, DISTRIBUTIONS[values["think_dist"]])
            prog.yield_point()
            prog.acquire(0, EX)
            prog.cpu(values["hold_ms"] * 1000.0, DISTRIBUTIONS[values["hold_dist"]])
            prog.release(0, EX)
            prog.loop(body, share)
        prog.end()
        starts.append(start)
        scheds.append(w % values["schedulers"])
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=scheds,
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["task"] * n,
        latches=[LatchSpec("CLOSED_LATCH", "LATCH", **latch_knobs(values))],
        schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=total,
    )


def check(values: dict[str, Any]) -> None:
    """Every worker needs at least one acquire to do."""
    if values["acquires"] < values["workers"]:
        raise ParameterError(
            f"acquires={values['acquires']} is fewer than workers={values['workers']}: "
            "use acquires >= workers so every worker takes the latch")


# ----------------------------------------------------------------------------- the fit


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """A fixed set of sessions in a loop: the repairman through the arrival theorem (:func:`closed_repairman`)."""
    cls = evidence.top_class(snap)
    workers, workers_how = evidence.workload_sessions(snap, setup["workers"], "workers")
    obs, visits_per_s, rate_how, hold, think, how = evidence.closed_latch_core(snap, cls, workers)
    schedulers, sched_how = evidence.schedulers(snap)
    fitted = {"hold_ms": (hold / 1000.0, "ms", how), "think_ms": (think / 1000.0, "ms", how)}
    settings = {"workers": (workers, workers_how), "schedulers": (schedulers, sched_how)}
    assumed = {"hold_dist": ("the hold's spread: a snapshot gives means", "per-acquire hold times (a trace)"),
               "think_dist": ("the think time's spread", "per-acquire timestamps (a trace)")}
    switch_us = setup["context_switch_us"]  # the model's own switch, as assumed
    bounds: dict = {}
    evidence.handoff(fitted, assumed, obs, switch_us, evidence.shared_schedulers(workers, schedulers),
                     queued_us=evidence.runnable_delay_us(snap)[0], bounds=bounds)
    return evidence.Point(fitted, settings, assumed, visits_per_s, bounds=bounds,
                          caveats=evidence.instance_caveats(snap))


def claims(clue: evidence.Clue) -> list[str] | None:
    """Any other LATCH wait: a fixed set of sessions taking the latch in a loop (the rule tried last)."""
    if clue.family != "LATCH":
        return None
    if clue.latch_class is None:
        return ["sys.dm_os_latch_stats names no class: a generic latch"]
    acquires, batches = evidence.acquires_and_batches(clue)
    why = (f"{batches:,.0f} batch requests for {acquires:,.0f} acquires: sessions take the latch many times per "
           "batch" if acquires else "no acquire count (the extended-events session) to compare batches with")
    return [f"{why}, a fixed set of sessions in a loop (the closed-latch model)"]


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """One acquire per visit, and at least one per worker."""
    return {"acquires": min(max(visits, values["workers"]), 5_000_000)}


SCENARIO = Scenario(
    name="closed-latch", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="acquires"),
    reported_waits=("LATCH",),
    capture=Capture(session_param="workers", rows=no_rows),
    diagnosis=DiagnosisRule(label="LATCH_EX", looks_like="LATCH_EX on another class: one acquire per batch, or many",
                            rank=7, claims=claims),
    estimate=estimate, size_run=size_run, size_params=("acquires",), changes=(),
    round_trip=RoundTrip(values={"workers": 16, "acquires": 40_000}),
)
