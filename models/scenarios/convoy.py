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
from models.counters import evidence
from models.counters.snapshot import BATCHES, Snapshot
from models.params import Param, ParameterError, common_params, latch_knobs
from models.scenarios.base import Capture, DiagnosisRule, RoundTrip, Scenario, Throughput
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


def build(values: dict[str, Any]) -> Workload:
    """One program (acquire, hold, release, end) run by every request."""
    prog = Program()
    start = prog.start()
    prog.acquire(0, EX)
    prog.cpu(values["hold_ms"] * 1000.0, DISTRIBUTIONS[values["hold_dist"]])
    prog.release(0, EX)
    prog.end()
    burst, n = values["initial_queue"], values["requests"]
    gap = 1e6 / values["arrival_rate_per_s"]
    total = burst + n
    arrival = [0.0] * burst + [k * gap for k in range(n)]
    return Workload(
        program=prog, worker_start=[start] * total, worker_scheduler=[-1] * total,
        worker_arrival_us=arrival, worker_daemon=[False] * total,
        worker_kind=["task"] * total,
        latches=[LatchSpec("CONVOY_LATCH", "LATCH", **latch_knobs(values))],
        schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=total,
        poisson_from=burst if values["arrivals"] == "poisson" else -1, poisson_gap_us=gap,
    )


def check(values: dict[str, Any]) -> None:
    """Combinations the catalogue ranges alone cannot rule out."""
    if values["initial_queue"] + values["requests"] > 2_000_000:
        raise ParameterError(
            f"initial_queue + requests = {values['initial_queue'] + values['requests']} is too many: "
            "use at most 2,000,000 in all")


# ----------------------------------------------------------------------------- the fit


def estimate(snap: Snapshot, setup: dict[str, Any]) -> evidence.Point:
    """An open stream: rate from the acquires, hold from the busy time the waits show (PASTA), hand-off from signals.

    With Poisson arrivals a request finds the latch owned with probability
    equal to the share of time it is owned: waits / acquires = rate x (hold
    + hand-off x waits / acquires).  The mean wait then tells a fixed hold
    from an exponential one (Pollaczek-Khinchine: twice the wait for the same utilisation).
    """
    cls = evidence.top_class(snap)
    obs = evidence.latch_obs(snap, cls, "LATCH")
    lam, rate_how = evidence.visit_rate(snap, cls, obs, counter=BATCHES)
    p = evidence.waited_share(obs.waits, lam * snap.interval_s, f"latch {cls}", rate_how)
    hold_us = p / lam * 1e6 - obs.handoff_us * p
    mean_wait_us = obs.wait_us / (lam * snap.interval_s)
    s = hold_us + obs.handoff_us * p
    rho = min(lam * s / 1e6, 0.999)
    # PK: mean wait = lam E[S^2] / (2 (1 - rho)); E[S^2] = S^2 (1 + cv2)
    cv2 = 2 * (1 - rho) * mean_wait_us / (lam / 1e6 * s * s) - 1 if s > 0 else 0.0
    dist = "exponential" if cv2 > 0.5 else "fixed"
    schedulers, sched_how = evidence.schedulers(snap)
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
    switch_us = setup["context_switch_us"]  # the model's own switch, as assumed
    bounds: dict = {}
    evidence.handoff(fitted, assumed, obs, switch_us, queued_us=evidence.runnable_delay_us(snap)[0], bounds=bounds)
    return evidence.Point(fitted, settings, assumed, lam, bounds=bounds)


def claims(clue: evidence.Clue) -> list[str] | None:
    """LATCH waits on a class no other rule claims, about one acquire per batch request: an open stream."""
    if clue.family != "LATCH" or clue.latch_class is None:
        return None
    acquires, batches = evidence.acquires_and_batches(clue)
    if acquires and batches >= 0.5 * acquires:
        return [f"{batches:,.0f} batch requests for {acquires:,.0f} acquires: each request takes the latch about "
                "once, an open stream of requests (the convoy model)"]
    return None


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """Each request is a batch of its own."""
    return [{"source": "counter", "name": BATCHES, "count": float(result.latch_stats["acquires"].sum())}]


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """One request per visit."""
    return {"requests": min(visits, 2_000_000)}


SCENARIO = Scenario(
    name="convoy", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="requests"),
    reported_waits=("LATCH",),
    capture=Capture(session_param=None, rows=capture_rows),
    diagnosis=DiagnosisRule(label="LATCH_EX", looks_like="LATCH_EX on another class: one acquire per batch, or many",
                            rank=6, claims=claims),
    estimate=estimate, size_run=size_run, size_params=("requests", "initial_queue"), changes=(),
    # The coverage study runs it at 360 requests/s, so that a draw 15% up in rate and hold stays below saturation:
    # above it the open model has no steady state to fit.
    round_trip=RoundTrip(values={"arrival_rate_per_s": 420.0, "wakeup_us": 7.7, "context_switch_us": 2.0},
                         study_values={"arrival_rate_per_s": 360.0}, study_spread=0.15),
)
