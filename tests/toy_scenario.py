"""A toy scenario, as a new chapter would add one: one module, and one line in models/scenarios/__init__.py.

Workers take one EX latch in turn, each holding it ``hold_us``, ``rounds``
times.  It carries every fact a Scenario needs; tests/test_scenario_facts.py
registers it and drives it through the command line, a snapshot, the fit's
diagnosis table, the what-ifs and a panel without touching any other module.
"""

from __future__ import annotations

from typing import Any

from models.engine.program import EX, Program
from models.counters import evidence
from models.counters.snapshot import Snapshot
from models.params import Param, common_params, latch_knobs
from models.scenarios.base import Capture, Change, DiagnosisRule, Scenario, Throughput, no_rows
from models.workload import LatchSpec, Workload

PARAMS = (
    Param("workers", "int", 4, "", 1, 64, help="workers taking the latch in turn"),
    Param("hold_us", "float", 50.0, "us", 1.0, 10_000.0, help="time each acquire holds the latch"),
    Param("rounds", "int", 100, "", 1, 100_000, help="acquires per worker"),
    *common_params(schedulers=4),
)


def build(values: dict[str, Any]) -> Workload:
    """Each worker: ``rounds`` times acquire, hold, release; then end."""
    prog = Program()
    start = prog.start()
    prog.acquire(0, EX)
    prog.cpu(values["hold_us"])
    prog.release(0, EX)
    prog.unit()
    prog.loop(start, values["rounds"])
    prog.end()
    n = values["workers"]
    return Workload(program=prog, worker_start=[start] * n, worker_scheduler=[-1] * n,
                    worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["toy"] * n,
                    latches=[LatchSpec("TOY_LATCH", **latch_knobs(values))], schedulers=values["schedulers"],
                    quantum_us=values["quantum_ms"] * 1000.0, context_switch_us=values["context_switch_us"],
                    wakeup_us=values["wakeup_us"], expected_acquires=n * values["rounds"], count_units=True)


def claims(clue: evidence.Clue) -> list[str] | None:
    """LATCH waits led by TOY_LATCH."""
    if clue.family == "LATCH" and clue.latch_class == "TOY_LATCH":
        return ["workers take TOY_LATCH in turn"]
    return None


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """The toy has no estimator of its own: it refuses, by name, rather than guess."""
    raise evidence.FitError("the toy scenario has no estimator")


SCENARIO = Scenario(
    name="toy", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=None,
    throughput=Throughput(counts="acquires"),
    reported_waits=("LATCH",),
    capture=Capture(session_param="workers", rows=no_rows),
    diagnosis=DiagnosisRule(label="TOY_LATCH", looks_like="LATCH_EX on TOY_LATCH", rank=0, claims=claims),
    estimate=estimate,
    size_run=lambda values, visits, seconds: {"rounds": max(1, visits // values["workers"])},
    size_params=("rounds",),
    changes=(Change(name="shorter-hold", what="half the hold", value="the new hold (us)", param="hold_us",
                    sets=lambda fitted, given: {"hold_us": given if given is not None else fitted["hold_us"] / 2}),),
)
