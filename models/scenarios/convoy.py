"""The convoy: an open stream of requests for one exclusive latch.

Each request is a new task placed on the least-loaded scheduler (as SQL
Server places new tasks: fewest workers running or runnable, then fewest tasks); it acquires the latch in EX mode, holds it for
``hold_ms`` of CPU, releases it and ends.  One latch held 2 ms serves at most
500 evenly spaced requests a second; under the fair policy every contended
hand-off adds ``wakeup_us + context_switch_us`` of owned-but-idle time, so
once a queue exists the capacity falls to 1 / (hold + hand-off).

Its defaults are the article's idealised latch (a free hand-off: ``wakeup_us``
and ``context_switch_us`` are 0, where the other scenarios default to a
realistic 20 us + 5 us), so ``python -m models run convoy`` is the M/D/1
queue below; set both to see what a hand-off costs.

Reduction to queueing theory: with ``wakeup_us=0``, ``context_switch_us=0``,
Poisson arrivals and enough schedulers that a granted request never waits
for a CPU (only the holder uses a CPU for longer than an instant and a new
task goes to a scheduler with nothing running, so ``schedulers >= 2``
suffices; the default 8 leaves room), the latch is
a single FIFO server and the run is exactly an M/D/1 queue (``hold_dist``
fixed) or an M/M/1 queue (exponential); the mean wait is the total latch
wait divided by the acquires.
"""

from __future__ import annotations

from typing import Any

from models.engine.program import DISTRIBUTIONS, EX, Program
from models.params import Param, ParameterError, Scenario, common_params, latch_knobs
from models.workload import LatchSpec, Workload

PARAMS = (
    Param("arrival_rate_per_s", "float", 400.0, "req/s", 0.1, 1_000_000.0,
          help="mean rate at which requests for the latch arrive"),
    Param("arrivals", "choice", "poisson", choices=("poisson", "even"),
          help="Poisson (random) arrivals or evenly spaced ones"),
    Param("hold_ms", "float", 2.0, "ms", 0.0001, 1000.0, help="time each request holds the EX latch"),
    Param("hold_dist", "choice", "fixed", choices=("fixed", "exponential"),
          help="hold time exactly hold_ms, or exponential with that mean"),
    Param("requests", "int", 20_000, "", 1, 2_000_000, help="requests to simulate"),
    Param("initial_queue", "int", 0, "", 0, 100_000,
          help="requests already waiting at time 0 (a burst that starts a convoy)"),
) + common_params(schedulers=8, context_switch_us=0.0, wakeup_us=0.0)


def build(v: dict[str, Any]) -> Workload:
    """One program (acquire, hold, release, end) run by every request."""
    prog = Program()
    start = prog.start()
    prog.acquire(0, EX)
    prog.cpu(v["hold_ms"] * 1000.0, DISTRIBUTIONS[v["hold_dist"]])
    prog.release(0, EX)
    prog.end()
    burst, n = v["initial_queue"], v["requests"]
    gap = 1e6 / v["arrival_rate_per_s"]
    total = burst + n
    arrival = [0.0] * burst + [k * gap for k in range(n)]
    return Workload(
        program=prog, worker_start=[start] * total, worker_scheduler=[-1] * total,
        worker_arrival_us=arrival, worker_daemon=[False] * total,
        worker_kind=["task"] * total,
        latches=[LatchSpec("CONVOY_LATCH", "LATCH", **latch_knobs(v))],
        schedulers=v["schedulers"], quantum_us=v["quantum_ms"] * 1000.0,
        context_switch_us=v["context_switch_us"], wakeup_us=v["wakeup_us"],
        expected_acquires=total,
        poisson_from=burst if v["arrivals"] == "poisson" else -1, poisson_gap_us=gap,
    )


def check(v: dict[str, Any]) -> None:
    """Combinations the catalogue ranges alone cannot rule out."""
    if v["initial_queue"] + v["requests"] > 2_000_000:
        raise ParameterError(
            f"initial_queue + requests = {v['initial_queue'] + v['requests']} is too many: "
            "use at most 2,000,000 in all")


SCENARIO = Scenario("convoy", __doc__.strip().splitlines()[0], PARAMS, build, check)
