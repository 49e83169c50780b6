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
from models.params import Param, ParameterError, Scenario, common_params, latch_knobs
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


def build(v: dict[str, Any]) -> Workload:
    """One program per worker: its share of the acquires as a loop."""
    prog = Program()
    n, total = v["workers"], v["acquires"]
    starts, scheds = [], []
    for w in range(n):
        share = total // n + (1 if w < total % n else 0)
        start = prog.start()
        if share > 0:
            body = prog.cpu(v["think_ms"] * 1000.0, DISTRIBUTIONS[v["think_dist"]])
            prog.yield_point()
            prog.acquire(0, EX)
            prog.cpu(v["hold_ms"] * 1000.0, DISTRIBUTIONS[v["hold_dist"]])
            prog.release(0, EX)
            prog.loop(body, share)
        prog.end()
        starts.append(start)
        scheds.append(w % v["schedulers"])
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=scheds,
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["task"] * n,
        latches=[LatchSpec("CLOSED_LATCH", "LATCH", **latch_knobs(v))],
        schedulers=v["schedulers"], quantum_us=v["quantum_ms"] * 1000.0,
        context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"],
        expected_acquires=total,
    )


def check(v: dict[str, Any]) -> None:
    """Every worker needs at least one acquire to do."""
    if v["acquires"] < v["workers"]:
        raise ParameterError(
            f"acquires={v['acquires']} is fewer than workers={v['workers']}: "
            "use acquires >= workers so every worker takes the latch")


SCENARIO = Scenario("closed-latch", __doc__.strip().splitlines()[0], PARAMS, build, check)
