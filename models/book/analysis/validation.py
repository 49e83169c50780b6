"""Comparison tables for the appendix: the engine against closed forms and against itself.

Each function runs the engine and returns a tidy DataFrame beside the
matching formula from :mod:`models.analytic`, so the appendix notebook and
``tests/test_validation.py`` show and assert the same numbers.  Nothing here
draws: :func:`readable` formats a table's cells and headers, and the notebook
shows the result with :func:`models.book.charts.dmv_table`.

Seeds: every row of a comparison table runs from its own seed, the table's
base seed plus the row's index (shown in a ``seed`` column).  Rows that
shared one seed would share their random numbers, and their errors would
move together (every exponential row high, say); with a seed each, the rows
are independent checks.  The bases (:data:`OPEN_SEED`, ...) keep the tables
of one kind of run apart.  Every table also carries a ``reference`` column:
what the simulation is compared with, and whether anything was fitted.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

import models
from models import analytic, calibration
from models.book import stored
from models.book.analysis import cci, fairness, hot_page, nested, tempdb, version_store
from models.engine.program import EX, EXPONENTIAL, FIXED, Program
from models.files import write_text_atomic
from models.result import build
from models.scenarios import parallel_insert
from models.statistics import batch_means_ci, difference_ci, mean_ci
from models.workload import LatchSpec, Workload, simulate

FREE = {"wakeup_us": 0.0, "context_switch_us": 0.0}
ROOT = stored.book_root()  # the book's folder (models.book.stored says where: the one rule)

# First seed of each table (row k runs from base + k).
OPEN_SEED = 101       # convoy against Pollaczek-Khinchine
HANDOFF_SEED = 1      # convoy with a hand-off against Welch
REPAIRMAN_SEED = 201  # closed latch against MVA
SHARED_SEED = 1       # shared schedulers against the Markov chain (built from the instruction set)
CPU_SEED = 301        # per-scheduler CPU queues against M/M/c
UNFAIR_SEED = 401     # the unfair latch, spinning without limit, against Pollaczek-Khinchine
COTENANT_SEED = 501   # a scheduler shared with a CPU-bound co-tenant against M/G/1 with vacations
TEMPDB_SEED = 601     # tempdb's allocation pages against exact MVA of a closed network

EXACT = "exact closed form; nothing fitted"


def open_queue_table(rhos: list[float], hold_ms: float = 2.0, requests: int = 200_000,
                     seed: int = OPEN_SEED, seed_step: int = 1) -> pd.DataFrame:
    """Convoy mean wait and queue length against M/D/1 and M/M/1, with batch-means 95% intervals.

    Row k (fixed holds first, then exponential, each over ``rhos``) runs from
    seed ``seed + k * seed_step``; ``seed_step=0`` puts every row on one seed
    (to see what shared random numbers do to the errors).
    """
    if isinstance(seed_step, bool) or not isinstance(seed_step, int) or seed_step < 0:
        raise ValueError(f"seed_step={seed_step!r} is out of range: use a whole number, 0 or more")
    rows = []
    for dist, formula, name in (("fixed", analytic.md1, "M/D/1"), ("exponential", analytic.mm1, "M/M/1")):
        for rho in rhos:
            rate = rho / hold_ms * 1000.0
            row_seed = seed + len(rows) * seed_step
            res = models.run("convoy", arrival_rate_per_s=rate, hold_ms=hold_ms, hold_dist=dist,
                             requests=requests, seed=row_seed, **FREE)
            w = res.acquire_wait_ms
            mean, half = batch_means_ci(w[len(w) // 20:])
            theory = formula(rate / 1000.0, hold_ms)
            rows.append({"hold": dist, "utilisation": rho, "seed": row_seed, "simulated_wait_ms": mean,
                         "ci_half_ms": half, "formula_wait_ms": theory.mean_wait,
                         "simulated_queue": res.extra["queue_area_ms"] / res.elapsed_ms,
                         "formula_queue": theory.mean_queue_length,
                         "reference": f"Pollaczek-Khinchine {name}, {EXACT}"})
    return _errors(pd.DataFrame(rows))


def _errors(table: pd.DataFrame, sim: str = "simulated_wait_ms", exact: str = "formula_wait_ms") -> pd.DataFrame:
    """Add the signed relative error and whether the exact value lies inside the run's 95% interval."""
    table["error_pct"] = 100 * (table[sim] / table[exact] - 1)
    table["within_ci"] = (table[sim] - table[exact]).abs() <= table["ci_half_ms"]
    return table


def handoff_queue_table(loads: list[float], hold_ms: float = 2.0, handoff_ms: float = 0.2,
                        requests: int = 300_000, seed: int = HANDOFF_SEED) -> pd.DataFrame:
    """The fair latch with a hand-off (the convoy, ``wakeup_us`` = hand-off) against Welch's exact M/G/1.

    ``loads`` are the latch's owned share, arrival rate x (hand-off + hold).
    Each row runs from its own seed (``seed`` plus the row's index), so the
    rows' errors are independent of each other.
    """
    rows = []
    for dist, second_moment in (("fixed", hold_ms ** 2), ("exponential", 2 * hold_ms ** 2)):
        for load in loads:
            rate = load / (hold_ms + handoff_ms)  # per ms
            row_seed = seed + len(rows)
            res = models.run("convoy", arrival_rate_per_s=rate * 1000.0, hold_ms=hold_ms, hold_dist=dist,
                             requests=requests, seed=row_seed, wakeup_us=handoff_ms * 1000.0,
                             context_switch_us=0.0)
            w = res.acquire_wait_ms
            mean, half = batch_means_ci(w[len(w) // 20:])
            exact = analytic.fair_handoff_queue(rate, hold_ms, second_moment, handoff_ms)
            rows.append({"hold": dist, "load": load, "seed": row_seed, "simulated_wait_ms": mean,
                         "ci_half_ms": half, "formula_wait_ms": exact.mean_latch_wait,
                         "simulated_prob_wait": float((w > 0).mean()), "formula_prob_wait": exact.prob_wait,
                         "reference": f"Welch M/G/1 with exceptional first service, {EXACT}"})
    return _errors(pd.DataFrame(rows))


def convergence_table(rho: float = 0.9, hold_ms: float = 2.0,
                      lengths: Iterable[int] = (10_000, 30_000, 100_000, 300_000), seed: int = 1) -> pd.DataFrame:
    """How the 95% half-width of the M/M/1 mean wait shrinks with the run length at one utilisation.

    The rows are prefixes of one run (one seed), so they are nested, not independent.
    """
    rate = rho / hold_ms * 1000.0
    res = models.run("convoy", arrival_rate_per_s=rate, hold_ms=hold_ms, hold_dist="exponential",
                     requests=max(lengths), seed=seed, **FREE)
    exact = analytic.mm1(rate / 1000.0, hold_ms).mean_wait
    rows = []
    for n in lengths:
        w = res.acquire_wait_ms[:n]
        mean, half = batch_means_ci(w[len(w) // 20:])
        rows.append({"requests": n, "seed": seed, "mean_wait_ms": mean, "ci_half_ms": half,
                     "relative_half_width_pct": 100 * half / exact, "formula_wait_ms": exact,
                     "reference": f"Pollaczek-Khinchine M/M/1, {EXACT}"})
    return pd.DataFrame(rows)


def repairman_table(workers: list[int], think_ms: float = 1.0, hold_ms: float = 0.1,
                    acquires_per_worker: int = 20_000, seed: int = REPAIRMAN_SEED) -> pd.DataFrame:
    """Closed-latch throughput, response time and latch utilisation against exact MVA; row k on seed ``seed + k``.

    Throughput is measured over the whole run and over a window fixed before the run (``active_*``: up to
    :data:`ACTIVE_WINDOW_SHARE` of a worker's expected finishing time at MVA's rate); ``to_first_finish_*`` ends
    the window at the first worker's last release instead, a time the run chooses, kept to show its lean.
    """
    mva = analytic.mva_repairman(max(workers), think_ms, hold_ms)
    rows = []
    for k, n in enumerate(workers):
        res = models.run("closed-latch", workers=n, schedulers=n, think_ms=think_ms, hold_ms=hold_ms,
                         acquires=acquires_per_worker * n, seed=seed + k, record_acquires=acquires_per_worker * n,
                         **FREE)
        x = res.throughput_per_s / 1000.0
        # A fixed end, set before the run: 90% of the time a worker needs for its acquires at MVA's rate.
        window_end = ACTIVE_WINDOW_SHARE * acquires_per_worker * n / float(mva.throughput[n - 1])
        active, active_half = all_active_throughput(res.acquire_log, end_ms=window_end)
        to_first_finish = all_active_throughput(res.acquire_log)[0]  # the window the run chooses, for comparison
        rows.append({"workers": n, "acquires_per_worker": acquires_per_worker, "seed": seed + k,
                     "simulated_throughput_per_ms": x, "active_throughput_per_ms": active,
                     "active_ci_half_per_ms": active_half, "to_first_finish_per_ms": to_first_finish,
                     "mva_throughput_per_ms": float(mva.throughput[n - 1]),
                     "simulated_response_ms": res.mean_wait_ms + hold_ms,
                     "mva_response_ms": float(mva.response_time[n - 1]),
                     "simulated_utilisation": x * hold_ms, "mva_utilisation": float(mva.utilisation[n - 1]),
                     "reference": "exact MVA (machine repairman); nothing fitted"})
    table = pd.DataFrame(rows)
    table["throughput_error_pct"] = 100 * (table["simulated_throughput_per_ms"] / table["mva_throughput_per_ms"] - 1)
    table["active_error_pct"] = 100 * (table["active_throughput_per_ms"] / table["mva_throughput_per_ms"] - 1)
    table["to_first_finish_error_pct"] = 100 * (table["to_first_finish_per_ms"] / table["mva_throughput_per_ms"] - 1)
    table["active_within_ci"] = ((table["active_throughput_per_ms"] - table["mva_throughput_per_ms"]).abs()
                                 <= table["active_ci_half_per_ms"])
    table["response_error_pct"] = 100 * (table["simulated_response_ms"] / table["mva_response_ms"] - 1)
    return table


# The all-active window of repairman_table ends at this share of a worker's expected finishing time.
ACTIVE_WINDOW_SHARE = 0.9


# The tempdb scenario where it is a product-form network: SQL Server 2019 with memory-optimized metadata (PFS
# under SH, no system-table latch), one page per object (one GAM visit each way), exponential holds, the fair
# (FIFO) latch and free hand-offs.  The costs are fixed here, not taken from the scenario's defaults, so the section holds still.
TEMPDB_PRODUCT_FORM = {"version": "2019", "metadata": "memory-optimized", "pages_per_object": 1,
                       "hold_dist": "exponential", "cached_share": 0.0, "think_us": 0.0, "metadata_cpu_us": 0.0,
                       "cpu_per_object_us": 200.0, "pfs_us": 10.0, "gam_us": 10.0, "metadata_us": 30.0,
                       "policy": "fair", **FREE}


def tempdb_network(values: Mapping[str, Any]) -> tuple[float, list[float]]:
    """(delay, demands) in µs per temporary object: the closed network a product-form tempdb run is.

    Per object a session spends ``cpu_per_object_us`` on the CPU, two PFS updates under SH and two
    memory-optimized metadata writes (``metadata_us`` of CPU each): none of these ever waits while sessions
    do not outnumber schedulers, so together they are the delay.  The two GAM updates (create's and drop's)
    are the only latch that queues; they go to the object's file, the files taken in turn, so each file's
    GAM page is a FIFO station with a demand of 2 x ``gam_us`` / ``files`` per object.
    """
    if values["version"] != "2019" or values["metadata"] != "memory-optimized" or values["pages_per_object"] != 1:
        raise ValueError("the closed network needs version='2019', metadata='memory-optimized' and "
                         "pages_per_object=1 (only the GAM pages queue)")
    think = values["cpu_per_object_us"] + 2 * values["pfs_us"] + 2 * values["metadata_us"] + values["think_us"]
    return think, [2 * values["gam_us"] / values["files"]] * values["files"]


def tempdb_table(cases: Iterable[tuple[int, int]] = ((1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (32, 1), (4, 4),
                                                     (16, 4), (32, 4)),
                 window_ms: float = 4_000.0, seeds: int = 5, seed: int = TEMPDB_SEED,
                 **params: Any) -> pd.DataFrame:
    """tempdb's temporary objects per ms against exact MVA of its closed network, for (sessions, files) cases.

    Each row runs ``seeds`` windows of ``window_ms`` (row k on seeds ``seed + seeds * k`` onwards, a scheduler
    per session) under :data:`TEMPDB_PRODUCT_FORM` updated with ``params``; the interval is Student's t over
    the seeds.  ``mva_objects_per_ms`` is :func:`models.analytic.mva_network` with every file's GAM page a
    station (:func:`tempdb_network`).  ``per_file_objects_per_ms`` is what it would be if each file had its
    own sessions/files sessions (files times the one-station MVA): sessions are not tied to a file (each takes
    the files in turn, and they drift apart), so that is not what the model reduces to, and the table shows
    the gap.
    """
    rows = []
    for k, (n, files) in enumerate(cases):
        values = {**TEMPDB_PRODUCT_FORM, **params, "sessions": n, "files": files, "schedulers": n}
        first = seed + seeds * k
        rates = np.array([models.run("tempdb", **values, window_ms=window_ms, seed=first + j).throughput_per_s
                          for j in range(seeds)]) / 1000.0
        think, demands = tempdb_network(values)
        mva = 1000.0 * float(analytic.mva_network(n, think, demands).throughput[-1])
        per_file = (1000.0 * files * float(analytic.mva_repairman(n // files, think, 2 * values["gam_us"]).throughput[-1])
                    if n % files == 0 else float("nan"))
        mean, half = mean_ci(list(rates))
        rows.append({"sessions": n, "files": files, "seeds": f"{first}–{first + seeds - 1}",
                     "simulated_objects_per_ms": mean, "objects_ci_half_per_ms": half,
                     "mva_objects_per_ms": mva, "per_file_objects_per_ms": per_file,
                     "gam_utilisation": mva * 2 * values["gam_us"] / 1000.0 / files,
                     "reference": "exact MVA of the closed network (a station per file's GAM page); nothing fitted"})
    table = pd.DataFrame(rows)
    table["error_pct"] = 100 * (table["simulated_objects_per_ms"] / table["mva_objects_per_ms"] - 1)
    table["within_ci"] = ((table["simulated_objects_per_ms"] - table["mva_objects_per_ms"]).abs()
                          <= table["objects_ci_half_per_ms"])
    table["per_file_error_pct"] = 100 * (table["simulated_objects_per_ms"] / table["per_file_objects_per_ms"] - 1)
    return table


def all_active_throughput(log: pd.DataFrame, end_ms: float | None = None, warmup: float = 0.05,
                          batches: int = 20) -> tuple[float, float]:
    """Releases per ms while every worker is still working, with a 95% batch-means half-width.

    A closed run in which each worker has a fixed number of acquires ends with a tail in which fewer
    workers compete; the steady state (MVA) has all of them.  The window runs from ``warmup`` of the way
    to ``end_ms`` up to ``end_ms``; it is cut into ``batches`` equal parts, and the half-width is Student's t
    over the parts' rates.  ``end_ms`` should be fixed before the run: ending at the first worker's last
    release (the default, kept for comparison) is a time the run chooses, just after a worker got ahead, and
    it biases the rate upward.  An ``end_ms`` after the first worker finished is refused by name.
    """
    first_finish = float(log.groupby("worker")["release_ms"].max().min())
    end = first_finish if end_ms is None else float(end_ms)
    if not 0 < end <= first_finish:
        raise ValueError(f"end_ms={end_ms!r} is out of range: the window must end by the first worker's last "
                         f"release, {first_finish:.3f} ms")
    start = warmup * end
    edges = np.linspace(start, end, batches + 1)
    counts, _ = np.histogram(log["release_ms"].to_numpy(), bins=edges)
    rates = counts / np.diff(edges)
    return mean_ci(list(rates))  # the parts' rates are nearly independent: batch means over the window


def shared_scheduler_table(cases: Iterable[tuple[int, int]] = ((3, 2), (4, 2), (4, 3), (5, 3), (6, 4)),
                           think_ms: float = 1.0, hold_ms: float = 0.25, acquires: int = 240_000, seed: int = SHARED_SEED) -> pd.DataFrame:
    """Workers sharing schedulers and one fair latch, against the exact Markov chain of the same system.

    Built from the instruction set so that nothing but the chain's mechanism is
    in it: each worker loops over an exponential think burst and an exponential
    hold of one EX latch, bound to scheduler ``w % schedulers``, with free
    wake-ups and context switches and no yield point (the chain has no
    quantum).  Each row runs from its own seed.
    """
    rows = []
    for k, (n, sched) in enumerate(cases):
        prog = Program()
        start = prog.start()
        body = prog.cpu(think_ms * 1000.0, EXPONENTIAL)
        prog.acquire(0, EX)
        prog.cpu(hold_ms * 1000.0, EXPONENTIAL)
        prog.release(0, EX)
        prog.loop(body, acquires // n)
        prog.end()
        wl = Workload(program=prog, worker_start=[start] * n, worker_scheduler=[w % sched for w in range(n)],
                      worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["task"] * n,
                      latches=[LatchSpec("SHARED_LATCH")], schedulers=sched, quantum_us=4000.0,
                      expected_acquires=acquires // n * n)
        res = build(simulate(wl, seed + k), "shared-schedulers", {}, seed + k)
        w = res.acquire_wait_ms
        mean, half = batch_means_ci(w[len(w) // 20:])
        exact = analytic.shared_scheduler_latch(n, sched, think_ms, hold_ms)
        rows.append({"workers": n, "schedulers": sched, "seed": seed + k, "chain_states": exact.states,
                     "simulated_throughput_per_ms": res.throughput_per_s / 1000.0,
                     "chain_throughput_per_ms": exact.throughput, "simulated_wait_ms": mean, "ci_half_ms": half,
                     "chain_wait_ms": exact.mean_latch_wait,
                     "reference": "exact Markov chain of the same system; nothing fitted"})
    table = pd.DataFrame(rows)
    table["throughput_error_pct"] = 100 * (table["simulated_throughput_per_ms"] / table["chain_throughput_per_ms"] - 1)
    table["wait_error_pct"] = 100 * (table["simulated_wait_ms"] / table["chain_wait_ms"] - 1)
    return table


def shared_scheduler_costs(workers: int = 4, schedulers: int = 2, think_ms: float = 1.0,
                           hold_ms: float = 0.25) -> dict[str, float]:
    """What the latch costs when workers share schedulers, each against the right reference (acquires per ms).

    Think and hold both run on the CPU, so ``schedulers`` cap the loops at min(workers, schedulers) / (Z + S)
    even with no latch (:func:`models.analytic.cpu_capped_throughput`): the latch's own cost on shared
    schedulers is the chain's throughput against that cap, not against a scheduler each.  With a scheduler
    each, the latch's cost is MVA's throughput against workers / (Z + S).
    """
    chain = analytic.shared_scheduler_latch(workers, schedulers, think_ms, hold_ms)
    cap = analytic.cpu_capped_throughput(workers, schedulers, think_ms, hold_ms)
    own = float(analytic.mva_repairman(workers, think_ms, hold_ms).throughput[-1])
    free = analytic.cpu_capped_throughput(workers, workers, think_ms, hold_ms)
    return {"workers": workers, "schedulers": schedulers, "chain_throughput": chain.throughput,
            "cpu_cap": cap, "latch_cost_pct": 100 * (1 - chain.throughput / cap),
            "own_schedulers_throughput": own, "own_schedulers_cap": free,
            "own_schedulers_latch_cost_pct": 100 * (1 - own / free),
            "owned_idle_share": chain.owned_idle_share}


# The unfair latch's spinners never give up in the work-conserving check: a look interval of LOOK_US and no back-off.
UNFAIR_LOOK_US = 5.0
_NEVER_GIVE_UP = 2**40


def unfair_open_queue(utilisation: float, hold_ms: float = 1.0, hold_dist: str = "exponential",
                      look_us: float = UNFAIR_LOOK_US, requests: int = 100_000, seed: int = UNFAIR_SEED,
                      schedulers: int = 64) -> dict[str, Any]:
    """The unfair latch in its work-conserving limit against Pollaczek-Khinchine: Poisson requests, one EX hold each.

    Built from the instruction set as the convoy is (each request a task on the least-loaded of ``schedulers``),
    but the latch unfair and its spinners never back off or suspend: a requester that finds it held looks again
    every ``look_us`` on its own scheduler, and the first look after a release takes it.  Barging is free and no
    waiter sleeps, so the latch idles only between a release and the next look, under ``look_us``; as that goes
    to 0 the order of service is a race among the spinners, not FIFO, but no time is lost.  Any such order that
    does not look at the holds has FIFO's mean wait (Kingman, 1962), the Pollaczek-Khinchine value, and a wider
    spread than FIFO's (whose standard deviation is shown).  With 64 schedulers a spinner never waits for a CPU
    at these loads.
    """
    prog = Program()
    start = prog.start()
    prog.acquire(0, EX)
    prog.cpu(hold_ms * 1000.0, EXPONENTIAL if hold_dist == "exponential" else FIXED)
    prog.release(0, EX)
    prog.end()
    rate = utilisation / hold_ms  # per ms
    wl = Workload(program=prog, worker_start=[start] * requests, worker_scheduler=[-1] * requests,
                  worker_arrival_us=[0.0] * requests, worker_daemon=[False] * requests,
                  worker_kind=["task"] * requests,
                  latches=[LatchSpec("UNFAIR_LATCH", policy="unfair", spin_us=look_us, spins_per_round=1,
                                     rounds_per_backoff=_NEVER_GIVE_UP, max_backoffs=0, backoff_us=0.0)],
                  schedulers=schedulers, expected_acquires=requests, poisson_from=0, poisson_gap_us=1000.0 / rate)
    res = build(simulate(wl, seed, record_acquires=requests), "unfair-open", {}, seed)
    w = res.acquire_wait_ms
    mean, half = batch_means_ci(w[len(w) // 20:])
    moments = (hold_ms ** 2, hold_ms ** 3) if hold_dist == "fixed" else (2 * hold_ms ** 2, 6 * hold_ms ** 3)
    pk = analytic.mg1(rate, hold_ms, 0.0 if hold_dist == "fixed" else 1.0).mean_wait
    fifo_sd = float(np.sqrt(analytic.mg1_wait_variance(rate, hold_ms, *moments)))
    suspended = int(res.wait_stats.set_index("wait_type")["waiting_tasks_count"].get("LATCH_EX", 0))
    return {"hold": hold_dist, "utilisation": utilisation, "look_us": look_us, "seed": seed,
            "simulated_wait_ms": mean, "ci_half_ms": half, "formula_wait_ms": pk,
            "simulated_sd_ms": float(w[len(w) // 20:].std()), "fifo_sd_ms": fifo_sd, "suspended": suspended,
            "reference": f"Pollaczek-Khinchine mean (any order that ignores the holds: Kingman), {EXACT}"}


def unfair_open_queue_table(utilisations: Iterable[float] = (0.5, 0.8), holds: Iterable[str] = ("exponential", "fixed"),
                            requests: int = 200_000, look_us: float = UNFAIR_LOOK_US,
                            seed: int = UNFAIR_SEED) -> pd.DataFrame:
    """:func:`unfair_open_queue` for each hold and utilisation, row k on seed ``seed + k``."""
    rows = [unfair_open_queue(u, hold_dist=d, look_us=look_us, requests=requests, seed=seed + k)
            for k, (d, u) in enumerate((d, u) for d in holds for u in utilisations)]
    return _errors(pd.DataFrame(rows))


def cotenant_queue(utilisation: float, hold_ms: float = 1.0, hold_dist: str = "exponential",
                   quantum_ms: float = 4.0, tasks: int = 100_000, seed: int = COTENANT_SEED) -> dict[str, Any]:
    """One scheduler that serves the latch holder's requests and also runs a CPU-bound co-tenant.

    Built from the instruction set: Poisson requests, each a task bound to scheduler 0 that takes one EX latch,
    holds it for ``hold_ms`` of CPU and ends; beside them the co-tenant, a daemon that runs whole quanta of CPU
    with a yield point after each (chapter 4's co-tenant).  SQLOS never pre-empts, so a request waits RUNNABLE
    while the co-tenant runs, and the co-tenant leaves the CPU only at a yield point with its quantum used up
    and someone runnable: the scheduler takes vacations of one quantum.  At its yield the co-tenant goes to the
    tail of the runnable queue, behind the requests already waiting but ahead of those that arrive while they
    run, so service is gated.  The wait is the time a request spends RUNNABLE (read from the trace), against
    :func:`models.analytic.vacation_queue` with V fixed at one quantum.
    """
    prog = Program()
    co = prog.start()
    body = prog.cpu(quantum_ms * 1000.0, FIXED)
    prog.yield_point()
    prog.loop(body, _NEVER_GIVE_UP)
    prog.end()
    start = prog.start()
    prog.acquire(0, EX)
    prog.cpu(hold_ms * 1000.0, EXPONENTIAL if hold_dist == "exponential" else FIXED)
    prog.release(0, EX)
    prog.end()
    rate = utilisation / hold_ms
    n = tasks + 1  # the co-tenant is worker 0 and arrives at 0; the requests arrive as a Poisson stream after it
    wl = Workload(program=prog, worker_start=[co] + [start] * tasks, worker_scheduler=[0] * n,
                  worker_arrival_us=[0.0] * n, worker_daemon=[True] + [False] * tasks,
                  worker_kind=["co-tenant"] + ["task"] * tasks, latches=[LatchSpec("COTENANT_LATCH")],
                  schedulers=1, quantum_us=quantum_ms * 1000.0, expected_acquires=tasks, poisson_from=1,
                  poisson_gap_us=1000.0 / rate)
    res = build(simulate(wl, seed, trace_events=4 * tasks + 1_000), "co-tenant", {}, seed)
    trace = res.trace
    waited = trace[(trace["state"] == "runnable") & (trace["worker"] > 0)]
    per_task = np.zeros(tasks)
    np.add.at(per_task, waited["worker"].to_numpy() - 1, (waited["end_ms"] - waited["start_ms"]).to_numpy())
    mean, half = batch_means_ci(per_task[tasks // 20:])
    second = hold_ms ** 2 if hold_dist == "fixed" else 2 * hold_ms ** 2
    gated = analytic.vacation_queue(rate, hold_ms, second, quantum_ms, quantum_ms ** 2, "gated")
    exhaustive = analytic.vacation_queue(rate, hold_ms, second, quantum_ms, quantum_ms ** 2, "exhaustive")
    return {"hold": hold_dist, "utilisation": utilisation, "quantum_ms": quantum_ms, "seed": seed,
            "simulated_wait_ms": mean, "ci_half_ms": half, "formula_wait_ms": gated.mean_wait,
            "exhaustive_wait_ms": exhaustive.mean_wait, "pk_wait_ms": gated.pollaczek_khinchine,
            "reference": f"M/G/1 with multiple vacations of one quantum, gated service, {EXACT}"}


def cotenant_table(utilisations: Iterable[float] = (0.2, 0.5, 0.7), holds: Iterable[str] = ("exponential", "fixed"),
                   tasks: int = 100_000, seed: int = COTENANT_SEED) -> pd.DataFrame:
    """:func:`cotenant_queue` for each hold and utilisation, row k on seed ``seed + k``."""
    rows = [cotenant_queue(u, hold_dist=d, tasks=tasks, seed=seed + k)
            for k, (d, u) in enumerate((d, u) for d in holds for u in utilisations)]
    return _errors(pd.DataFrame(rows))


def vacation_curves(hold_ms: float = 1.0, quantum_ms: float = 4.0, top: float = 0.8, points: int = 40) -> pd.DataFrame:
    """The gated and exhaustive vacation formulas against utilisation (exponential hold, vacations of one quantum),
    for drawing under :func:`cotenant_table`'s points."""
    rows = []
    for rho in np.linspace(0.05, top, points):
        for service in ("gated", "exhaustive"):
            m = analytic.vacation_queue(rho / hold_ms, hold_ms, 2 * hold_ms ** 2, quantum_ms, quantum_ms ** 2, service)
            rows.append({"utilisation": rho, "mean_wait_ms": m.mean_wait, "series": f"{service} vacations (formula)"})
        rows.append({"utilisation": rho, "mean_wait_ms": analytic.mm1(rho / hold_ms, hold_ms).mean_wait,
                     "series": "no co-tenant (Pollaczek-Khinchine)"})
    return pd.DataFrame(rows)


def round_robin(workers: int, quanta: int, quantum_ms: float = 4.0, burst_ms: float = 1.0) -> dict[str, float]:
    """CPU-bound workers sharing one scheduler, against the exact round-robin schedule.

    Each worker needs ``quanta`` quanta of CPU, in bursts of ``burst_ms`` with a yield point after each,
    and starts runnable at time 0; context switches are free.  With the quantum a whole number of bursts,
    SQLOS's rule (run until the quantum is used up, then go to the back of the runnable queue) is exact
    round-robin, so nothing here is random: the run ends at workers x quanta x quantum; each worker yields
    (quanta - 1) times, each time after the other (workers - 1) have had a quantum each, so a yield's mean
    wait is (workers - 1) x quantum; and worker i finishes at ((quanta - 1) x workers + i + 1) x quantum.
    The model records a yield (SOS_SCHEDULER_YIELD) only when another worker takes the CPU, so a lone
    worker records none; ``server_yields`` is what SQL Server would count, one per exhausted quantum.
    """
    per_quantum = quantum_ms / burst_ms
    if not float(per_quantum).is_integer():
        raise ValueError(f"burst_ms={burst_ms} does not divide quantum_ms={quantum_ms}: use a burst that does")
    prog = Program()
    start = prog.start()
    body = prog.yield_point()  # before the burst, so a worker's last burst ends its program, not a turn
    prog.cpu(burst_ms * 1000.0)
    prog.loop(body, int(per_quantum) * quanta)
    prog.end()
    wl = Workload(program=prog, worker_start=[start] * workers, worker_scheduler=[0] * workers,
                  worker_arrival_us=[0.0] * workers, worker_daemon=[False] * workers,
                  worker_kind=["task"] * workers, latches=[LatchSpec("NONE")], schedulers=1,
                  quantum_us=quantum_ms * 1000.0, expected_acquires=0, work_units=workers,
                  expected_ms=workers * quanta * quantum_ms)
    res = build(simulate(wl, 1, trace_events=4 * workers * quanta + 16), "round-robin", {}, 1)
    yields = res.wait_stats.set_index("wait_type")
    count = float(yields.loc["SOS_SCHEDULER_YIELD", "waiting_tasks_count"]) if "SOS_SCHEDULER_YIELD" in yields.index else 0.0
    wait = float(yields.loc["SOS_SCHEDULER_YIELD", "wait_time_ms"]) if count else 0.0
    finish = res.trace.groupby("worker")["end_ms"].max().sort_values().to_numpy()
    exact_finish = np.array([((quanta - 1) * workers + i + 1) * quantum_ms for i in range(workers)])
    return {"workers": workers, "quanta": quanta, "elapsed_ms": res.elapsed_ms,
            "exact_elapsed_ms": workers * quanta * quantum_ms, "yields": count,
            "exact_yields": float(workers * (quanta - 1)) if workers > 1 else 0.0,
            "server_yields": float(workers * (quanta - 1)), "mean_yield_wait_ms": wait / count if count else 0.0,
            "exact_yield_wait_ms": (workers - 1) * quantum_ms if workers > 1 else 0.0,
            "mean_finish_ms": float(finish.mean()), "exact_mean_finish_ms": float(exact_finish.mean()),
            "largest_finish_gap_ms": float(np.abs(finish - exact_finish).max()),
            "reference": f"exact round-robin schedule, {EXACT}"}


def round_robin_table(cases: Iterable[tuple[int, int]] = ((1, 5), (2, 5), (4, 5), (8, 3))) -> pd.DataFrame:
    """:func:`round_robin` for each (workers, quanta) case."""
    return pd.DataFrame([round_robin(n, k) for n, k in cases])


def exact_drain_ms(rate_per_s: float, initial_queue: int, hold_ms: float, handoff_ms: float) -> float:
    """When a burst of ``initial_queue`` requests, met by evenly spaced arrivals, has drained from a fair latch.

    Nothing is random: at time 0 the burst and the stream's first request arrive together, then one request
    every 1/rate.  The first holds for S, every later one waits and occupies the latch for h + S, so arrival
    k (at k/rate) is the first to find the latch free when k/rate >= S + (Q + k - 1)(h + S).  Refuses a rate at
    or above 1/(h + S), where the backlog never drains.
    """
    gap = 1000.0 / rate_per_s
    per_waiter = hold_ms + handoff_ms
    if gap <= per_waiter:
        raise ValueError(f"rate_per_s={rate_per_s} is at or above the capacity with hand-offs, "
                         f"{1000.0 / per_waiter:.1f} per s: the burst never drains")
    k = int(np.ceil((hold_ms + (initial_queue - 1) * per_waiter) / (gap - per_waiter) - 1e-12))
    return max(k, 1) * gap


def drain_table(cases: Iterable[tuple[float, int, float]] = ((300, 50, 0.2), (400, 50, 0.2), (450, 20, 0.0),
                                                              (495, 100, 0.0097)),
                hold_ms: float = 2.0) -> pd.DataFrame:
    """The convoy with even arrivals and a burst at time 0 (``initial_queue``), against :func:`exact_drain_ms`.

    Each case is (arrival rate per s, burst size, hand-off in ms; the wake-up, with a free context switch).
    The simulated drain time is the request time of the first request after time 0 that finds the latch
    free.  The fluid approximation Q (h + S) / (1 - rate (h + S)) is shown beside it.
    """
    rows = []
    for rate, queue, handoff in cases:
        requests = int(2 * queue / max(1e-9, 1 - rate / 1000.0 * (hold_ms + handoff))) + 100
        res = models.run("convoy", arrival_rate_per_s=rate, arrivals="even", hold_ms=hold_ms, requests=requests,
                         initial_queue=queue, wakeup_us=handoff * 1000.0, context_switch_us=0.0,
                         record_acquires=requests + queue)
        log = res.acquire_log
        free = log[(log["request_ms"] > 0) & (log["grant_ms"] - log["request_ms"] <= 0)]
        rows.append({"arrival_rate_per_s": rate, "initial_queue": queue, "handoff_ms": handoff,
                     "simulated_drain_ms": float(free["request_ms"].min()) if len(free) else np.nan,
                     "exact_drain_ms": exact_drain_ms(rate, queue, hold_ms, handoff),
                     "fluid_drain_ms": queue * (hold_ms + handoff) / (1 - rate / 1000.0 * (hold_ms + handoff)),
                     "reference": f"exact deterministic schedule, {EXACT}"})
    return pd.DataFrame(rows)


def cpu_queue(servers: int, utilisation: float, service_ms: float = 1.0, tasks: int = 100_000,
              seed: int = CPU_SEED) -> dict[str, float]:
    """Mean wait for a CPU when Poisson tasks of exponential CPU work arrive at ``servers`` schedulers.

    Built directly from the instruction set (no scenario has it): each task is
    one exponential CPU burst, placed on arrival on the least-loaded scheduler,
    with free context switches.  The wait is the time spent RUNNABLE, read
    from the trace; its mean and 95% interval come from batch means after a
    5% warm-up, as in the other tables.  Per-scheduler queues make this join-the-shortest-queue,
    which lies between M/M/c (one pooled queue) and c separate M/M/1 queues.
    """
    prog = Program()
    start = prog.start()
    prog.cpu(service_ms * 1000.0, EXPONENTIAL)
    prog.end()
    rate_per_ms = utilisation * servers / service_ms
    wl = Workload(program=prog, worker_start=[start] * tasks, worker_scheduler=[-1] * tasks,
                  worker_arrival_us=[0.0] * tasks, worker_daemon=[False] * tasks,
                  worker_kind=["task"] * tasks, latches=[LatchSpec("NONE")], schedulers=servers,
                  expected_acquires=0, work_units=tasks, poisson_from=0,
                  poisson_gap_us=1000.0 / rate_per_ms)
    res = build(simulate(wl, seed, trace_events=2 * tasks + 16), "cpu-queue", {}, seed)
    trace = res.trace
    waited = trace.loc[trace["state"] == "runnable"]
    per_task = np.zeros(tasks)  # workers are numbered in arrival order
    np.add.at(per_task, waited["worker"].to_numpy(), (waited["end_ms"] - waited["start_ms"]).to_numpy())
    wait, half = batch_means_ci(per_task[tasks // 20:])
    return {"servers": servers, "utilisation": utilisation, "seed": seed, "simulated_wait_ms": wait,
            "ci_half_ms": half,
            "mmc_wait_ms": analytic.mmc(rate_per_ms, service_ms, servers).mean_wait,
            "split_mm1_wait_ms": analytic.mm1(rate_per_ms / servers, service_ms).mean_wait,
            "reference": (f"M/M/1, {EXACT}" if servers == 1 else
                          "bounds, not the model: Erlang C below, split M/M/1 above; nothing fitted")}


def cpu_queue_table(servers: Iterable[int] = (1, 2, 4, 8), utilisation: float = 0.8, tasks: int = 60_000,
                    seed: int = CPU_SEED) -> pd.DataFrame:
    """:func:`cpu_queue` for each scheduler count, row k on seed ``seed + k``."""
    return pd.DataFrame([cpu_queue(c, utilisation, tasks=tasks, seed=seed + k) for k, c in enumerate(servers)])


def usl_table(maxdops: Iterable[int] = (1, 2, 4, 6, 8, 12, 16, 20, 24), contender_cost_us: float = 2.0,
              **params: Any) -> tuple[pd.DataFrame, analytic.USLFit]:
    """Parallel-insert throughput against MAXDOP and the Universal Scalability Law fitted to it.

    The fit is rounded (:func:`models.book.stored.fitted`) before its curve is
    drawn: its last digits depend on the CPU's BLAS kernel.  Unlike the
    comparison tables, every MAXDOP runs from the same seed (the scenario's
    default, or ``seed`` in ``params``): the USL is fitted to the curve, not
    checked row by row, and common random numbers keep the run-to-run noise
    (about 1% here) out of the curve's shape.
    """
    base = dict(rows=400_000, logging="full", hold_us=8.0)
    base.update(params)
    xs = [models.run("parallel-insert", maxdop=n, contender_cost_us=contender_cost_us, **base).throughput_per_s
          for n in maxdops]
    fit = stored.fitted(analytic.usl_fit(np.array(maxdops), np.array(xs)))
    table = pd.DataFrame({"maxdop": list(maxdops), "simulated_log_records_per_s": xs,
                          "usl_log_records_per_s": fit.lambda_ * analytic.usl(np.array(maxdops), fit.sigma, fit.kappa)})
    table["reference"] = "USL fitted to these runs: fitted, agreement proves nothing"
    return table, fit


def usl_chapter4(query: str = "fast") -> tuple[pd.DataFrame, analytic.USLFit]:
    """The USL fitted to chapter 4's own curve at its main setting (no contender cost): log records per second
    of one query against MAXDOP, run as ``nested.maxdop_curve`` runs it (one seed), in the shape
    of :func:`usl_table`."""

    maxdops = np.array(nested.MAXDOPS)
    # The run of nested.maxdop_curve, one query only: log records over its elapsed time at full scale.
    xs = np.array([nested.MODEL_LATCHES / (nested.run(query, maxdop=int(n)).elapsed_ms * nested.SCALE / 1000.0)
                   for n in maxdops])
    fit = stored.fitted(analytic.usl_fit(maxdops, xs))
    table = pd.DataFrame({"maxdop": maxdops, "simulated_log_records_per_s": xs,
                          "usl_log_records_per_s": fit.lambda_ * analytic.usl(maxdops, fit.sigma, fit.kappa)})
    table["reference"] = "USL fitted to these runs: fitted, agreement proves nothing"
    return table, fit


def usl_fit_table(cases: dict[str, tuple[pd.DataFrame, analytic.USLFit]]) -> pd.DataFrame:
    """One row per :func:`usl_table` result: the fitted coefficients, the fit's peak (N_peak) and the simulated best MAXDOP."""
    rows = []
    for name, (table, fit) in cases.items():
        best = int(table.loc[table["simulated_log_records_per_s"].idxmax(), "maxdop"])
        rows.append({"run": name, "sigma": fit.sigma, "kappa": fit.kappa, "usl_peak_maxdop": fit.peak_n,
                     "simulated_best_maxdop": best, "r_squared": fit.r_squared,
                     "reference": f"USL fitted to the {len(table)} runs: fitted"})
    return pd.DataFrame(rows)


GRID = stored.data_dir() / "validation.csv"


def grid_against_welch(path: Path = GRID, hold_ms: float = 2.0) -> pd.DataFrame:
    """The explorer's stored grid (``python -m models sweep validation``) beside Welch's exact mean wait.

    With the context switch free, the wake-up is the whole hand-off, so every point, at every wake-up, is
    the M/G/1 queue with exceptional first service (:func:`models.analytic.fair_handoff_queue`); at zero
    wake-up that is Pollaczek-Khinchine.  ``inside`` says whether the exact value lies in the point's 95% band.
    """
    grid = pd.read_csv(path)
    exact = []
    for rate, dist, wakeup in zip(grid["arrival_rate_per_s"], grid["hold_dist"], grid["wakeup_us"]):
        second = hold_ms ** 2 if dist == "fixed" else 2 * hold_ms ** 2
        try:
            exact.append(analytic.fair_handoff_queue(rate / 1000.0, hold_ms, second, wakeup / 1000.0).mean_latch_wait)
        except ValueError:  # at or past saturation: no stationary mean
            exact.append(np.nan)
    grid["welch_wait_ms"] = exact
    grid["error_pct"] = 100 * (grid["mean_wait_ms"] / grid["welch_wait_ms"] - 1)
    grid["inside"] = (grid["mean_wait_ms"] - grid["welch_wait_ms"]).abs() <= grid["mean_wait_ms_ci95"]
    return grid


CROSSCHECK_STUDY = stored.data_dir() / "crosscheck.csv"
CROSSCHECK_SEEDS = tuple(range(21, 31))


def crosscheck_study(seeds: Iterable[int] = CROSSCHECK_SEEDS, count: int = 100_000, open_load: float = 0.35,
                     workers: int = 8) -> pd.DataFrame:
    """An open and a closed latch system with a fair hand-off, run by the engine, SimPy and Ciw on every seed.

    One row per run.  The three simulators draw from different generators, so one seed gives three
    independent runs; ten of 100,000 requests per simulator give a mean whose 95% interval is a few percent
    wide (one run's is 16 to 24%).  Slow with SimPy and Ciw (a few minutes): the appendix reads the stored
    result, :data:`CROSSCHECK_STUDY`.
    """
    from models import crosscheck  # SimPy and Ciw: imported only when the study runs

    rows = []
    for seed in seeds:
        for name, fn in (("engine", crosscheck.engine_convoy), ("SimPy", crosscheck.simpy_convoy),
                         ("Ciw", crosscheck.ciw_convoy)):
            r = fn(open_load, hold_ms=2.0, hold_dist="exponential", handoff_ms=0.2, n_requests=count, seed=seed)
            rows.append({"system": "open", "simulator": name, "seed": seed, "count": count,
                         "mean_wait_ms": float(np.mean(r.waits_ms))})
        for name, fn in (("engine", crosscheck.engine_closed_latch), ("SimPy", crosscheck.simpy_closed_latch),
                         ("Ciw", crosscheck.ciw_closed_latch)):
            r = fn(workers, hold_ms=0.1, hold_dist="exponential", handoff_ms=0.02, think_ms=1.0,
                   think_dist="exponential", n_acquires=count, seed=seed)
            rows.append({"system": "closed", "simulator": name, "seed": seed, "count": count,
                         "mean_wait_ms": float(np.mean(r.waits_ms))})
    return pd.DataFrame(rows)


def crosscheck_summary(runs: pd.DataFrame, open_load: float = 0.35) -> pd.DataFrame:
    """Per system and simulator: the mean over seeds, its 95% interval (Student t over the runs), and the
    difference from the reference, Welch's exact value for the open system and the engine for the closed
    one, with the 95% interval of that difference (Welch's t for two independent samples)."""
    exact = analytic.fair_handoff_queue(open_load, 2.0, 8.0, 0.2).mean_latch_wait
    rows = []
    for system, part in runs.groupby("system", sort=False):
        engine = part.loc[part["simulator"] == "engine", "mean_wait_ms"].to_numpy()
        for name, sim in part.groupby("simulator", sort=False):
            x = sim["mean_wait_ms"].to_numpy()
            mean, half = mean_ci(list(x))
            if system == "open":
                ref, ref_name = exact, "Welch, exact"
                diff, diff_half = mean - exact, half
            else:
                ref, ref_name = mean_ci(list(engine))[0], "the engine"
                diff, diff_half = difference_ci(list(x), list(engine))
            rows.append({"system": system, "simulator": name, "runs": len(x), "requests": int(sim["count"].sum()),
                         "mean_wait_ms": mean, "ci_half_ms": half, "compared_with": ref_name,
                         "reference_ms": ref, "difference_pct": 100 * diff / ref,
                         "difference_ci_pct": 100 * diff_half / ref})
    table = pd.DataFrame(rows)
    table["difference_excludes_zero"] = table["difference_pct"].abs() > table["difference_ci_pct"]
    # The engine against itself is no comparison.
    itself = (table["system"] == "closed") & (table["simulator"] == "engine")
    table.loc[itself, ["difference_pct", "difference_ci_pct"]] = np.nan
    table["difference_excludes_zero"] = table["difference_excludes_zero"].astype(object)
    table.loc[itself, "difference_excludes_zero"] = None
    return table


def write_crosscheck_study(path: Path = CROSSCHECK_STUDY) -> Path:
    """Run :func:`crosscheck_study` and store it whole."""
    return write_text_atomic(path, crosscheck_study().to_csv(index=False, float_format="%.9g"))


def pk_curves(hold_ms: float = 2.0, top: float = 0.92, points: int = 60) -> pd.DataFrame:
    """The M/D/1 and M/M/1 mean waits against utilisation, for drawing under the simulated points."""
    rho = np.linspace(0.05, top, points)
    fixed = pd.DataFrame({"utilisation": rho, "mean_wait_ms": rho * hold_ms / (2 * (1 - rho)), "hold": "fixed"})
    expo = pd.DataFrame({"utilisation": rho, "mean_wait_ms": rho * hold_ms / (1 - rho), "hold": "exponential"})
    return pd.concat([fixed, expo], ignore_index=True)


# ---------------------------------------------------------------- how the appendix shows a table

LABELS = {
    "hold": "hold", "utilisation": "ρ", "load": "load λ(h + S)", "seed": "seed",
    "simulated_wait_ms": "simulated wait (ms)", "ci_half_ms": "± 95% (ms)", "formula_wait_ms": "exact wait (ms)",
    "error_pct": "error (%)", "within_ci": "exact inside interval",
    "simulated_queue": "simulated queue", "formula_queue": "exact queue",
    "simulated_prob_wait": "simulated P(wait)", "formula_prob_wait": "exact P(wait)",
    "requests": "requests", "acquires_per_worker": "acquires per worker", "mean_wait_ms": "mean wait (ms)",
    "relative_half_width_pct": "± 95% (% of exact)",
    "workers": "workers", "schedulers": "schedulers", "chain_states": "chain states",
    "simulated_throughput_per_ms": "simulated acquires per ms", "mva_throughput_per_ms": "MVA acquires per ms",
    "chain_throughput_per_ms": "chain acquires per ms", "simulated_response_ms": "simulated response (ms)",
    "mva_response_ms": "MVA response (ms)", "throughput_error_pct": "throughput error (%)",
    "active_throughput_per_ms": "acquires per ms, all active", "active_ci_half_per_ms": "± 95%, all active",
    "active_error_pct": "error, all active (%)",
    "response_error_pct": "response error (%)", "wait_error_pct": "wait error (%)", "chain_wait_ms": "chain wait (ms)",
    "servers": "schedulers", "mmc_wait_ms": "Erlang C, pooled (ms)", "split_mm1_wait_ms": "split M/M/1 (ms)",
    "look_us": "look every (µs)", "simulated_sd_ms": "simulated σ of wait (ms)", "fifo_sd_ms": "FIFO σ (ms)",
    "suspended": "waits that suspended", "quantum_ms": "quantum (ms)", "exhaustive_wait_ms": "exhaustive (ms)",
    "pk_wait_ms": "no co-tenant (ms)",
    "run": "run", "sigma": "σ", "kappa": "κ", "usl_peak_maxdop": "USL peak N_peak",
    "simulated_best_maxdop": "best simulated MAXDOP", "r_squared": "R²", "system": "system",
    "simulator": "simulator", "reference": "reference",
    "sessions": "sessions", "files": "files", "seeds": "seeds",
    "simulated_objects_per_ms": "simulated objects per ms", "objects_ci_half_per_ms": "± 95% (per ms)",
    "mva_objects_per_ms": "MVA objects per ms", "per_file_objects_per_ms": "per-file MVA (per ms)",
    "per_file_error_pct": "error against per-file (%)", "gam_utilisation": "GAM page busy (MVA)",
}
_INTEGERS = {"seed", "requests", "workers", "schedulers", "chain_states", "servers", "simulated_best_maxdop",
             "acquires_per_worker", "suspended", "sessions", "files"}


def _cell(column: str, value: Any, digits: int) -> str:
    """One cell as the reader sees it: signed errors, yes/no, whole numbers with separators."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (str, np.str_)):
        return str(value)
    if column == "within_ci":
        return "yes" if value else "no"
    if column.endswith("error_pct"):
        return f"{value:+.{min(digits, 2)}f}"
    if column in _INTEGERS:
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def readable(table: pd.DataFrame, columns: list[str], digits: int = 3,
             precision: Mapping[str, int] | None = None) -> pd.DataFrame:
    """``columns`` of ``table`` as the appendix shows them: readable headers (:data:`LABELS`), every cell a string.

    Numbers get ``digits`` decimals (``precision`` overrides it per column), errors carry their sign
    (+ when the simulation is above the exact value) and whole-number columns thousands separators.
    The notebook draws the result with :func:`models.book.charts.dmv_table`, which never truncates a cell.
    """
    precision = precision or {}
    return pd.DataFrame({LABELS.get(column, column): [_cell(column, value, precision.get(column, digits))
                                                      for value in table[column]]
                         for column in columns})


# ---------------------------------------------------------------- validation against SQL Server: the scorecard

SCORECARD = stored.data_dir() / "scorecard.csv"
# The code whose change can move a chapter's comparison table: the scorecard records a digest of it.
SCORECARD_SOURCES = ("models/book/analysis/fairness.py", "models/book/analysis/nested.py",
                     "models/book/analysis/hot_page.py", "models/book/analysis/version_store.py",
                     "models/book/analysis/cci.py", "models/book/analysis/tempdb.py", "book/data/tempdb_band.csv",
                     "models/calibration.py", "models/scenarios/*.py")
_BASIS = ("basis", "fitted or predicted", "model was", "how")
_FIGURE = ("figure", "quantity", "measurement")
_MEASURED = ("published", "measured", "Obbish measured", "Randal measured", "Obbish", "White", "Randal")
_RATIO = ("model / published", "model / measured")
_NOTE = ("how", "note")


def _ch3_tables() -> list[tuple[str, pd.DataFrame]]:
    fair, unfair = fairness.run_policy("fair"), fairness.run_policy("unfair")
    return [("White, 2022", fairness.comparison(fair, unfair))]


def _ch4_tables() -> list[tuple[str, pd.DataFrame]]:
    return [("Obbish, 2018b", nested.model_against_measurement())]


def _ch5_tables() -> list[tuple[str, pd.DataFrame]]:
    table = hot_page.comparison_table()
    sources = {"002": "Poché, 2023b", "004": "Biondi, 2021"}
    return [(sources.get(str(seed), str(seed)), part.drop(columns="seed"))
            for seed, part in table.groupby("seed", sort=True)]


def _ch6_tables() -> list[tuple[str, pd.DataFrame]]:
    mixed = version_store.compare("read_fraction", [0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8])
    table = version_store.comparison_table(version_store.run(versioning="off"), version_store.run(), mixed)
    return [("Randal, 2021", table)]


def _ch7_tables() -> list[tuple[str, pd.DataFrame]]:
    # The comparison table holds both of Obbish's tests (the grants of 2019b, the decommit of 2018d); the scaling
    # table is 2018d's alone.
    return [("Obbish, 2019b and 2018d", cci.comparison_table()), ("Obbish, 2018d, scaling", cci.scaling_table())]


def _ch5b_tables() -> list[tuple[str, pd.DataFrame]]:

    band = pd.read_csv(stored.data_dir() / "tempdb_band.csv")   # as the chapter reads it
    return [("Lahoud, 2019 and 2018", tempdb.comparison_table(band, tempdb.band_runs(band)))]


# chapter number -> (notebook, the function that runs its model-against-measurement tables as the chapter does).
# The tempdb chapter, between 5 and 6, is "5b" (a string, as its file name has it); the others stay whole numbers.
CHAPTER_TABLES = {
    3: ("03_fairness", _ch3_tables), 4: ("04_nested_transactions", _ch4_tables), 5: ("05_hot_page", _ch5_tables),
    "5b": ("05b_tempdb", _ch5b_tables),
    6: ("06_version_store", _ch6_tables), 7: ("07_cci_memory_grants", _ch7_tables),
}
Chapter = int | str


def chapter_of(value: Any) -> Chapter:
    """A chapter as CHAPTER_TABLES keys it: 3 for 3 or "3", "5b" for "5b"."""
    text = str(value).strip()
    return int(text) if text.isdigit() else text


def chapter_key(value: Any) -> tuple[int, str]:
    """The book's order of chapters: 5, then 5b, then 6."""
    text = str(value).strip()
    digits = re.match(r"\d*", text).group(0)
    return (int(digits) if digits else 10**6, text[len(digits):])


def chapters_text(chapters: Iterable[Any] = tuple(CHAPTER_TABLES)) -> str:
    """The chapters as the appendix's prose names them: "3 to 7 and 5b" (a run of whole numbers, then the rest)."""
    whole = sorted(c for c in map(chapter_of, chapters) if isinstance(c, int))
    rest = sorted((c for c in map(chapter_of, chapters) if not isinstance(c, int)), key=chapter_key)
    run = (f"{whole[0]} to {whole[-1]}" if len(whole) > 2 and whole == list(range(whole[0], whole[-1] + 1))
           else ", ".join(map(str, whole)))
    return " and ".join(part for part in (run, ", ".join(rest)) if part)


def _first(table: pd.DataFrame, names: Iterable[str], skip: Iterable[str] = ()) -> str | None:
    return next((n for n in names if n in table.columns and n not in skip), None)


def _number(value: Any) -> str:
    """A table cell as text: numbers with separators and three significant figures below 100."""
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    v = float(value)
    if abs(v) >= 100 or v.is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


_MEASURED_NUMBER = re.compile(r"^(?:\d+/\d+ = )?([\d,]+(?:\.\d+)?) ?(%|ms|s)$")
_MODEL_NUMBER = re.compile(r"^([\d,]+(?:\.\d+)?)(?: ± [\d,.]+)? ?(%|ms|s)(?!\w)")


def _text_ratio(measured: str, model: str) -> float:
    """model / measured for two text cells that each open with one number in the same unit (%, ms or s):
    "33/36 = 91.7%" against "91.9 ± 0.5% (+0.2 points)"; NaN for anything else (words, ranges, "vs")."""
    m, n = _MEASURED_NUMBER.match(measured.strip()), _MODEL_NUMBER.match(model.strip())
    if m is None or n is None or m.group(2) != n.group(2):
        return np.nan
    top, bottom = float(n.group(1).replace(",", "")), float(m.group(1).replace(",", ""))
    return top / bottom if bottom else np.nan


_BAND_MODEL = re.compile(r"^([\d,]+(?:\.\d+)?) to ([\d,]+(?:\.\d+)?) ?(/s|%|ms|s)(?!\w)")
_STATED = re.compile(r"([\d,]+(?:\.\d+)?) ?(/s|%|ms|s)(?![\w/])")


def band_ratios(measured: str, model: str) -> tuple[float, float] | None:
    """model / measured at the two ends of a model cell that opens with a band ("73 to 433 /s (69 to 411 s)"),
    against the one figure of the measured cell in the same unit ("about 1 minute, about 500/s" gives 500/s); None
    when the model is no such band or the measured cell has no single figure in its unit."""
    band = _BAND_MODEL.match(str(model).strip())
    if band is None:
        return None
    stated = [float(n.replace(",", "")) for n, unit in _STATED.findall(str(measured)) if unit == band.group(3)]
    if len(stated) != 1 or stated[0] == 0:
        return None
    low, high = sorted(float(band.group(i).replace(",", "")) for i in (1, 2))
    return low / stated[0], high / stated[0]


def _nearest_one(ratios: tuple[float, float]) -> float:
    """The end of a band of ratios nearest 1 (the model's best over the band)."""
    return min(ratios, key=lambda r: abs(np.log(r)) if r > 0 else np.inf)


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers_in(value: Any) -> list[float]:
    """Every number a measured cell holds, at full precision: the cell itself if numeric, else each number in its text
    ("33/36 = 91.7%" gives 33, 36 and 91.7)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return [float(value)]
    return [float(m.replace(",", "")) for m in _NUMBER.findall(str(value))]


def predicted_rows(chapter: Chapter, source: str, table: pd.DataFrame,
                   words: tuple[str, ...] | None = ("predicted",)) -> pd.DataFrame:
    """The rows of one chapter's model-against-measurement table whose basis is *predicted*, in one shape.

    The chapters' tables differ in their columns; this finds the basis column (``basis``, or an older
    name), keeps the rows whose basis begins with one of ``words`` (by default "predicted"), and returns
    chapter, figure, source, measured, model (every model column, labelled), the model/measured ratio where
    the table gives numbers (from its ratio column, or else from a measured and a first model cell that each
    hold one number in the same unit, or else, for a model cell that gives a band, its end nearest the
    measurement: :func:`band_ratios`), the basis as written, the row's note on what it depends on, and every
    number of the measured cell at full precision (``numbers``, ";"-separated: what :func:`recount` traces).
    ``words=None`` keeps every row, whatever its basis.
    """
    basis_col = _first(table, _BASIS)
    figure_col = _first(table, _FIGURE)
    if basis_col is None or figure_col is None:
        raise ValueError(f"chapter {chapter}: no basis or figure column among {list(table.columns)}")
    measured_col = _first(table, _MEASURED) or next((c for c in table.columns if "measured" in c.lower()), None)
    model_cols = [c for c in table.columns if c.lower().startswith("model") and "/" not in c and c != basis_col]
    ratio_col = _first(table, _RATIO)
    note_col = _first(table, _NOTE, skip=(basis_col,))
    keep = (pd.Series(True, index=table.index) if words is None
            else table[basis_col].astype(str).str.strip().str.lower().str.startswith(tuple(words)))
    rows = []
    for _, r in table[keep].iterrows():
        figure = str(r[figure_col]) + (f", {r['run']}" if "run" in table.columns else "")
        if len(model_cols) == 1:
            model = _number(r[model_cols[0]])
        else:
            model = "; ".join(f"{_number(r[c])} ({c.removeprefix('model').strip(' ,()')})" for c in model_cols)
        if {"low", "high"} <= set(table.columns) and pd.notna(r["low"]):
            model += f" (band {_number(r['low'])} to {_number(r['high'])})"
        measured = _number(r[measured_col]) if measured_col else ""
        if ratio_col is not None and pd.notna(r[ratio_col]):
            ratio = float(r[ratio_col])
        else:
            ratio = _text_ratio(measured, _number(r[model_cols[0]])) if model_cols else np.nan
            ends = band_ratios(measured, _number(r[model_cols[0]])) if model_cols and pd.isna(ratio) else None
            ratio = _nearest_one(ends) if ends else ratio
        rows.append({"chapter": chapter, "notebook": CHAPTER_TABLES[chapter][0], "figure": figure, "source": source,
                     "measured": measured, "model": model, "ratio": ratio,
                     "basis": str(r[basis_col]), "depends_on": str(r[note_col]) if note_col else "",
                     "numbers": ";".join(f"{x:.10g}" for x in numbers_in(r[measured_col] if measured_col else None))})
    return pd.DataFrame(rows, columns=["chapter", "notebook", "figure", "source", "measured", "model", "ratio",
                                       "basis", "depends_on", "numbers"])


def _scenario_default(name: str) -> Any:
    """The default value of a parallel-insert parameter (what a chapter's SETUP leaves unset takes)."""
    return next(p.default for p in parallel_insert.PARAMS if p.name == name)


def _insert_chapter_rows() -> list[tuple[str, str, str, str]]:
    """Chapters 3 and 4's parameter chains, read from ``fairness.SETUP`` and ``nested.SETUP`` and the
    constants each is derived from (chapter, parameter, value, derived from)."""

    gaps3, gaps4 = (setup.get("cpu_dist", _scenario_default("cpu_dist")) for setup in (fairness.SETUP, nested.SETUP))
    gap_note = ("assumed: no source gives how the CPU between two log records varies; the rows that depend on "
                "it are predicted given this choice")
    # the gaps get their own row
    assumed3 = ", ".join(f"{k} = {fairness.SETUP[k]:g}" for k in fairness.ASSUMED if k != "cpu_dist")
    return [
        ("3", "log records R (the latch's acquires)", f"{fairness.RECORDS:,}",
         f"assumed: {fairness.SETUP['rows_per_page']} rows per page, one page-image record per page and 3 per extent "
         f"(the chapter moves R by ±15%)"),
        ("3", "hold", f"{fairness.HOLD_US:g} µs",
         f"White's fair run: {fairness.PUBLISHED['fair']['elapsed_s']:g} s / R − hand-off"),
        ("3", "CPU per row", f"{fairness.CPU_PER_ROW_US:g} µs",
         f"White's unfair run: {fairness.PUBLISHED['unfair']['elapsed_s']:g} s (a model run, fitted)"),
        ("3", "spin cycle", f"{fairness.SPIN_ROUNDS * fairness.SPIN_CHECK_US:g} µs "
                            f"({fairness.SPIN_ROUNDS} rounds of {fairness.SPIN_CHECK_US:g} µs)",
         f"White's unfair run: no more than {fairness.PUBLISHED['unfair']['backoffs']} back-offs (seed 1)"),
        ("3", "one spin", f"{fairness.NS_PER_SPIN:g} ns", "sized to White's 658 spins per collision (earlier spinner)"),
        ("3", "spin look, back-off, back-offs allowed, CPU per log record", assumed3, "assumed"),
        ("3", "CPU between log records", gaps3, gap_note),
        ("4", "hold", f"{nested.HOLD_US:g} µs",
         f"Obbish's co-tenant MAXDOP {nested.ALONE_BOUND_MAXDOP} run: "
         f"{nested.OBBISH_BUSY[nested.ALONE_BOUND_MAXDOP]['elapsed_ms']:,.0f}"
         f" ms / 'almost {nested.LARGEST_SLOWDOWN:g}' = {nested.ALONE_BOUND_MS:,.0f} ms alone, read as an equality"),
        ("4", "CPU per log record: fast, slow",
         f"{nested.cpu_per_record_us('fast'):.1f} µs, {nested.cpu_per_record_us('slow'):.1f} µs",
         f"Obbish's MAXDOP 1 times ({nested.MAXDOP1_MS['fast']:,.0f} ms, {nested.MAXDOP1_MS['slow']:,.0f} ms) over "
         f"his {nested.LATCHES:,} acquires"),
        ("4", "rows per page; log records per extent", f"{nested.ROWS_PER_PAGE}; 3",
         "input: his row size and his acquire count"),
        ("4", "hand-off", "the shared hand-off", "White's measurement of this latch class (first row)"),
        ("4", "the co-tenant's share of its scheduler", "equal turns", "built in (the model's quantum rule)"),
        ("4", "CPU between log records", gaps4, gap_note),
    ]


def handoff_floor() -> dict[str, float]:
    """What bounds the hand-off h from below, and the band's low end.

    White's two elapsed times give h >= (fair - unfair - idle) / W; his idle is unmeasured, so the bound is the
    model's, with the waits and idle of the run refitted at each h (``fairness.lower_handoff_range_us``): at face
    value, at both ends of his "around" (each time +-``fairness.ELAPSED_ROUNDING_S``), and with his own wait count in
    place of the model's.  The band's low end is the 2.0 us switch plus the book's least wake-up
    (``calibration.WAKEUP_BAND_US``).
    """
    bound = fairness.lower_handoff_range_us()
    return {"face_value_us": bound["face_value"], "narrowest_gap_us": bound["narrowest_gap"],
            "widest_gap_us": bound["widest_gap"], "with_whites_waits_us": bound["with_whites_waits"],
            "rounding_s": fairness.ELAPSED_ROUNDING_S, "switch_us": calibration.CONTEXT_SWITCH_US,
            "least_wakeup_us": calibration.WAKEUP_BAND_US[0],
            "band_low_us": calibration.CONTEXT_SWITCH_US + calibration.WAKEUP_BAND_US[0]}


def handoff_floor_text() -> str:
    """The ledger's words for :func:`handoff_floor`, numbers rounded as the reader sees them."""
    f = handoff_floor()
    where = "above" if f["band_low_us"] >= f["face_value_us"] else "below"
    return (f"an upper bound for that latch (the signal wait also holds CPU queueing); his two elapsed times bound it "
            f"from below only through the model ((fair − unfair − idle) / waits with the waits and idle of the model "
            f"refitted at each hand-off; from his figures alone, his idle unmeasured, there is no bound): "
            f"{f['face_value_us']:.1f} µs at face value, {f['narrowest_gap_us']:.1f} to {f['widest_gap_us']:.1f} µs "
            f"once each is read as ±{f['rounding_s']:g} s, {f['with_whites_waits_us']:.1f} µs with his wait count in "
            f"place of the model's; the band's low end, {f['band_low_us']:.1f} µs (the {f['switch_us']:.1f} µs switch "
            f"plus the book's least wake-up, {f['least_wakeup_us']:g} µs), lies {where} the face-value bound")


# The chapters whose own parameter tables the ledger gathers (after the shared costs and chapters 3 and 4's chains).
LEDGER_CHAPTERS: tuple[Chapter, ...] = (5, "5b", 6, 7)


def parameter_ledger() -> pd.DataFrame:
    """Every parameter the book derives from a measurement or assumes, with where it comes from, in one table.

    The shared costs of :mod:`models.calibration` first, then chapters 3 and 4's chains (from their SETUP),
    then each chapter's own parameter table (chapters 5, 5b, 6 and 7; a row's work under the leaf latch is
    chapter 5's; 5b's is read from its stored band, book/data/tempdb_band.csv, as the chapter reads it).  Columns:
    chapter, parameter, value, derived from.
    """

    rows = [
        ("all", "hand-off h (wake-up + context switch)", f"{calibration.HANDOFF_US} µs",
         f"White's fair run of NESTING_TRANSACTION_FULL: {calibration.WHITE_FAIR_SIGNAL_WAIT_MS:,.0f} ms of signal "
         f"wait over {calibration.WHITE_FAIR_LATCH_WAITS:,} LATCH_EX waits; {handoff_floor_text()}; an assumption "
         "for any other latch"),
        ("all", "split: context switch, wake-up", f"{calibration.CONTEXT_SWITCH_US} µs, {calibration.WAKEUP_US} µs",
         "the switch from Duffy's 4,000 to 10,000 cycles at 3 GHz; the wake-up is the rest (the book's split, "
         "not a measurement)"),
        *_insert_chapter_rows(),
    ]
    ledger = pd.DataFrame(rows, columns=["chapter", "parameter", "value", "derived from"])
    parts = [ledger]
    tempdb_band = pd.read_csv(stored.data_dir() / "tempdb_band.csv")
    tables = {5: hot_page.parameter_table, "5b": lambda: tempdb.parameter_table(tempdb_band),
              6: version_store.parameter_table, 7: cci.parameter_table}
    for chapter in LEDGER_CHAPTERS:
        table = tables[chapter]()
        origin = _first(table, ("source", "from"))
        derived = table[origin].astype(str) if origin else pd.Series([""] * len(table))
        kind = _first(table, ("kind", "basis"))
        if kind:
            derived = table[kind].astype(str) + ": " + derived
        name = table["parameter"].astype(str)
        if "scenario" in table.columns:
            name = table["scenario"].astype(str) + ": " + name
        parts.append(pd.DataFrame({"chapter": str(chapter), "parameter": name, "value": table["value"].astype(str),
                                   "derived from": derived}))
    return pd.concat(parts, ignore_index=True)


def sources_digest() -> str:
    """A short digest of the code the chapters' tables come from (:data:`SCORECARD_SOURCES`)."""
    h = hashlib.sha256()
    for pattern in SCORECARD_SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


FAIRNESS_BAND = stored.data_dir() / "fairness_band.csv"


def chapter3_band(path: Path = FAIRNESS_BAND) -> pd.DataFrame:
    """Chapter 3's predicted rows with a published figure across the chapter's stored band (mean over seeds).

    One row per figure of ``fairness.BAND_ROWS`` whose basis begins with "predicted", that has White's
    number, and whose number set no parameter (:func:`setters`): the model / White ratio at the lowest and highest hand-off of the band (log-record count as
    assumed), the smallest and largest ratio over the whole hand-off band, and at 9.7 us with the record
    count R moved by the band's factors.  Read from the stored study (``book/data/fairness_band.csv``).
    """
    summary = fairness.band_summary(pd.read_csv(path))
    handoffs = summary[summary["record_factor"] == 1.0].sort_values("handoff_us")
    moved_r = summary[summary["handoff_us"] == fairness.HANDOFF_US].sort_values("record_factor")
    rows = []
    fitted = [st for st in setters() if st.kind == "fitted"]
    for key, figure, white, word in fairness.BAND_ROWS:
        if white is None or not word.strip().lower().startswith("predicted"):
            continue
        if any(_matches(st, 3, "White, 2022", figure, [float(white)]) for st in fitted):
            continue  # its number set a parameter (the fair waits set h): not a prediction by the book's rule
        ratios = handoffs[key] / white
        r_ratios = moved_r[key] / white
        rows.append({"figure": figure, "White": white, "basis at 9.7 µs": word,
                     "lowest_handoff_us": float(handoffs["handoff_us"].iloc[0]),
                     "highest_handoff_us": float(handoffs["handoff_us"].iloc[-1]),
                     "ratio_at_lowest": float(ratios.iloc[0]), "ratio_at_highest": float(ratios.iloc[-1]),
                     "ratio_band_min": float(ratios.min()), "ratio_band_max": float(ratios.max()),
                     "r_factors": ", ".join(f"{f:g}" for f in moved_r["record_factor"]),
                     "ratio_r_min": float(r_ratios.min()), "ratio_r_max": float(r_ratios.max())})
    return pd.DataFrame(rows)


def build_scorecard(chapters: Iterable[Chapter] = tuple(CHAPTER_TABLES)) -> pd.DataFrame:
    """Every row of the chapters' model-against-measurement tables, run as each chapter runs them, with the
    chapter's basis as written; :func:`recount` then applies the book's rule to them.

    Slow (chapter 3's full-scale fair run alone takes about two minutes): the appendix reads the stored
    result, :data:`SCORECARD`, written by :func:`write_scorecard`.
    """
    parts = [predicted_rows(ch, source, table, words=None)
             for ch in chapters for source, table in CHAPTER_TABLES[ch][1]()]
    return pd.concat(parts, ignore_index=True)


def write_scorecard(path: Path = SCORECARD) -> Path:
    """Build the scorecard and store it whole, with the digest of the code it came from."""
    table = build_scorecard().assign(sources_digest=sources_digest())
    return write_text_atomic(path, table.to_csv(index=False, float_format="%.6g"))


def load_scorecard(path: Path = SCORECARD) -> pd.DataFrame:
    """The stored scorecard (text cells kept as text)."""
    card = pd.read_csv(path, dtype={"chapter": str, "measured": str, "model": str, "depends_on": str,
                                    "numbers": str}, keep_default_na=False, na_values={"ratio": [""]})
    return card.assign(chapter=card["chapter"].map(chapter_of).astype(object))


# ---------------------------------------------------------------- the book's rule, made executable

@dataclass(frozen=True)
class Setter:
    """Published numbers that set a parameter (``kind`` "fitted"), or that an assumption was made knowing
    (``kind`` "consistent"), traced through models/calibration.py and the chapters' fits.

    A scorecard row matches when its chapter is in ``chapters``, its source contains ``tables`` (if given), its
    figure matches the regular expression ``figure`` (if given), and its measured cell holds one of ``numbers``
    (any row that passes the other tests, if ``numbers`` is empty).  ``through`` names what then follows from
    the parameter: the chain.
    """

    parameter: str
    chapters: tuple[Chapter, ...]
    numbers: tuple[float, ...]
    how: str
    kind: str = "fitted"
    figure: str = ""
    tables: str = ""
    through: tuple[str, ...] = ()


def setters() -> tuple[Setter, ...]:
    """Every parameter the chapters' comparison rows can have set, with the published numbers that set it.

    Read from the constants the fits use (models/calibration.py and each chapter's module), so a number that
    changes there changes here.  Chapter 3's hand-off is the case the rule was written for: White's fair
    LATCH_EX wait count is the divisor of h, so the row that compares the model's count with it is fitted.
    """
    fair, unfair = fairness.PUBLISHED["fair"], fairness.PUBLISHED["unfair"]
    h_chain = ("chapter 3's hold (5.5 s / R − h)", "chapter 3's CPU per row and spin cycle (fitted after the hold)",
               "chapter 4's hold (fitted with h)", "the default wake-up of every scenario (chapters 5, 6 and 9 borrow it)")
    return (
        Setter("hand-off h", (3,), (calibration.WHITE_FAIR_SIGNAL_WAIT_MS, calibration.WHITE_FAIR_LATCH_WAITS),
               f"h = {calibration.WHITE_FAIR_SIGNAL_WAIT_MS:,.0f} ms / {calibration.WHITE_FAIR_LATCH_WAITS:,} waits "
               "(models/calibration.py)", through=h_chain),
        Setter("hand-off h", (3,), (fair["latch_wait_ms"],),
               f"this total holds the {calibration.WHITE_FAIR_SIGNAL_WAIT_MS:,.0f} ms of signal wait h is derived from",
               through=h_chain),
        Setter("hand-off h", (3,), (fair["latch_wait_ms"] - fair["signal_wait_ms"],),
               f"White's total less the {calibration.WHITE_FAIR_SIGNAL_WAIT_MS:,.0f} ms of signal wait h is derived "
               "from",
               through=h_chain),
        Setter("chapter 3's hold", (3,), (fair["elapsed_s"],), "hold = fair elapsed / R − h", figure="elapsed"),
        Setter("chapter 3's CPU per row", (3,), (unfair["elapsed_s"],), "fitted to the unfair elapsed time",
               figure="elapsed"),
        Setter("chapter 3's spin cycle", (3,), (unfair["backoffs"],), "spin rounds sized to give no more back-offs",
               figure="back"),
        Setter("chapter 3's nanoseconds per spin", (3,), (unfair["spins"], unfair["collisions"]),
               "sized to White's spins per collision (spins ÷ collisions)", figure="spin|collision"),
        Setter("chapter 3's look interval and back-offs allowed", (3,), (unfair["latch_waits"],),
               "assumed knowing White's 41 back-offs and 56 waits", kind="consistent", figure="waits"),
        Setter("chapter 4's hold", (4,),
               (nested.OBBISH_BUSY[nested.ALONE_BOUND_MAXDOP]["elapsed_ms"], nested.LARGEST_SLOWDOWN),
               f"fitted so that the fast query alone at MAXDOP {nested.ALONE_BOUND_MAXDOP} takes "
               f"{nested.OBBISH_BUSY[nested.ALONE_BOUND_MAXDOP]['elapsed_ms']:,.0f} ms / {nested.LARGEST_SLOWDOWN:g}"),
        Setter("chapter 4's CPU per log record", (4,), tuple(nested.MAXDOP1_MS.values()),
               "derived from his MAXDOP 1 times"),
        Setter("chapter 4's log records per extent", (4,), (nested.MEASURED_LATCHES,), "taken from his acquire count"),
        Setter("row's work under the leaf latch, cost per call", (5,),
               (hot_page.POCHE["serial_us_per_row"], hot_page.POCHE["batch500_us_per_row"]),
               "c + r = 23 µs and c + 500 r = 2,100 µs (models/calibration.py)",
               through=("chapter 7's delta-store rate (borrowed)",)),
        Setter("call's work before the latch", (5,), (hot_page.POCHE["throttled_narrow_waits_s"],),
               "the throttled narrow run's duration less these waits", figure="throttled narrow"),
        Setter("leaf hold at the band's 40 µs end", (5,), (hot_page.POCHE["throttled_narrow_waits_s"],),
               "that hold was chosen from this row", figure="throttled narrow"),
        Setter("wide row's extra work", (5,),
               (hot_page.POCHE["throttled_wide_s"], hot_page.POCHE["throttled_wide_waits_s"]),
               "the throttled wide run's duration less its waits", figure="throttled wide"),
        Setter("time between calls", (5,), (hot_page.POCHE["wall_s"], hot_page.POCHE["narrow_s"]),
               "wall clock a call less duration a call", figure="narrow rows: (wall|summed)"),
        Setter("hold added per queued worker", (5,), (hot_page.POCHE["wall_s"],), "fitted to the wall clock",
               figure="wall"),
        Setter("new page hold", (5,), (hot_page.POCHE["wide_s"],), "fitted to the wide rows' duration",
               figure="wide rows: summed"),
        Setter("client pace at 10 threads", (5,), (hot_page.POCHE["threads10_us_per_row"],), "fitted to it",
               figure="10 threads,"),
        Setter("seed 004's time between calls", (5,), (round(hot_page.BIONDI["rows"] / hot_page.BIONDI["identity_s"]),),
               "fitted to the identity key's rows per second", figure="identity"),
        Setter("CPU per update", (6,), (version_store.RANDAL["off_per_s"],), "derived from it",
               figure="versioning off"),
        Setter("hold per append", (6,), (version_store.RANDAL["on_per_s"],), "fitted to it",
               figure="READ_COMMITTED|on$"),
        Setter("compress_us_per_row", (7,), (cci.OBBISH["alone_s"],), "fitted to it", figure="alone",
               tables="2019b"),
        Setter("grant size and semaphore target", (7,), (cci.OBBISH["granted_at_once"],),
               "assumed knowing it", kind="consistent", figure="granted at once"),
        Setter("forced-grant limit", (7,), (cci.OBBISH["after_timeout"], 8645),
               "the limit was chosen to give his pattern", kind="consistent", figure="time-out|6th insert"),
        Setter("cpu_per_rowgroup_ms", (7,), (cci.WAITSTATS["alone_s"],), "fitted to the 25 s alone",
               figure="alone|1 session"),
        Setter("page_us_lpim", (7,), (cci.WAITSTATS["lpim_96_s"], *cci.LPIM_96_RANGE_S),
               "fitted to it (refitted at both ends of 'almost 4X')", figure="with LPIM, mean run time",
               tables="2019b"),
        Setter("page_us_no_lpim (the scaling band's high edge)", (7,), (cci.WAITSTATS["no_lpim_96_s"],),
               "fitted to it", figure="without LPIM, mean run time"),
        Setter("the scaling band's low edge", (7,), (), "half the CPU in the kernel, from 'most of it'",
               figure="CPU in the kernel", tables="scaling"),
        Setter("os_calls_per_rowgroup, pages_per_call", (7,),
               (cci.WAITSTATS["gb_freed_96"], cci.WAITSTATS["pages_freed_96"], cci.WAITSTATS["free_ops_96"]),
               "the same page count", figure="memory given back"),
        Setter("tempdb: the notebook's CPU per call", ("5b",), (tempdb.NOTEBOOK["on_s"], tempdb.NOTEBOOK["calls"]),
               f"fitted at each hold so that memory-optimized metadata gives {tempdb.NOTEBOOK['calls']:,} calls in "
               f"{tempdb.NOTEBOOK['on_s']:g} s (tempdb.fit_cpu)", figure="^notebook",
               through=("tempdb: the system-table CPU per write (fitted after it)",)),
        Setter("tempdb: the system-table CPU per write", ("5b",), (tempdb.NOTEBOOK["off_s"],),
               f"fitted at each hold so that disk-based system tables give {tempdb.NOTEBOOK['off_s']:g} s "
               "(tempdb.fit_metadata_cpu)", figure="^notebook",
               through=("the lab's system-table cost (the notebook's, borrowed)",)),
        Setter("tempdb: the lab's CPU per call", ("5b",), (tempdb.LAB["on_s"], tempdb.LAB["calls"]),
               f"fitted at each hold so that memory-optimized metadata gives {tempdb.LAB['calls']:,} calls in "
               f"{tempdb.LAB['on_s']:g} s (tempdb.fit_cpu)", figure="^lab"),
    )


def _matches(setter: Setter, chapter: Chapter, source: str, figure: str, numbers: list[float]) -> bool:
    if chapter_of(chapter) not in setter.chapters or setter.tables not in source:
        return False
    if setter.figure and not re.search(setter.figure, figure, re.IGNORECASE):
        return False
    return not setter.numbers or any(abs(x - v) <= 1e-9 * max(1.0, abs(v)) for v in setter.numbers for x in numbers)


def _chapter_word(basis: str) -> str:
    """The basis as the chapter wrote it, reduced to one of How to read's words."""
    b = basis.strip().lower()
    if b.startswith("predicted"):
        return "fitted" if "fitted" in b else "predicted"
    for word, prefixes in (("fitted", ("fitted", "guessed", "input", "sets", "its duration")),
                           ("follows from the fit", ("follows",)), ("built in", ("built in", "same")),
                           ("consistent", ("consistent",)), ("model only", ("model only", "model-only")),
                           ("assumed", ("assumed",))):
        if b.startswith(prefixes):
            return word
    return "other"


# A numeric prediction holds when the model lies within this factor of the measurement (either way).
HOLDS_WITHIN = 1.25
# A share read from counts (Obbish's "33/36 = 91.7%") holds where its count is a likely draw from the model's share:
# inside the central 95% of a binomial with the measurement's n and the model's share.  Near 100% a factor would let
# almost anything hold (within 25% of 91.7% is anything from 73% up), and one count's step (2.8 points) is finer
# than the count's own noise (about +-9 points at 36 acquires).
SHARE_LEVEL = 0.95
_SHARE = re.compile(r"(\d+)\s*/\s*(\d+)\s*=\s*[\d.]+\s*%")
_MODEL_SHARE = re.compile(r"(\d+(?:\.\d+)?)\s*±\s*[\d.]+\s*%")


def share_counts(measured: str) -> tuple[int, int] | None:
    """(k, n) of a share written as "k/n = ...%", or None for any other figure."""
    found = _SHARE.search(measured)
    return (int(found.group(1)), int(found.group(2))) if found and int(found.group(2)) > 0 else None


def share_holds(count: int, trials: int, model_share: float, level: float = SHARE_LEVEL) -> bool:
    """Whether ``count`` of ``trials`` lies inside the central ``level`` of a binomial with the model's share."""
    tail = (1.0 - level) / 2
    return bool(stats.binom.cdf(count, trials, model_share) >= tail and stats.binom.sf(count - 1, trials, model_share)
                >= tail)


def _verdict(ratio: float, basis: str, note: str, measured: str = "", model: str = "") -> str:
    """held, missed, split or untested.  A share read from counts is judged as a binomial draw at every setting the
    row shows (held at all, missed at all, else split); a model given as a band against one stated figure by the
    band's ends (held if the whole band lies within :data:`HOLDS_WITHIN`, missed if none of it does, else split); a
    number by its ratio; a row in words copies the chapter's own verdict (the code does not judge words)."""
    counts = share_counts(measured)
    shares = [float(x) / 100 for x in _MODEL_SHARE.findall(model)]
    if counts is not None and shares:
        inside = [share_holds(*counts, share) for share in shares]
        return "held" if all(inside) else "missed" if not any(inside) else "split"
    ends = band_ratios(measured, model)
    if ends is not None:  # a band: held if all of it lies within the factor, missed if none of it does
        low, high = ends
        if 1 / HOLDS_WITHIN <= low and high <= HOLDS_WITHIN:
            return "held"
        return "missed" if high < 1 / HOLDS_WITHIN or low > HOLDS_WITHIN else "split"
    if pd.notna(ratio):
        return "held" if 1 / HOLDS_WITHIN <= ratio <= HOLDS_WITHIN else "missed"
    text = f"{basis} {note}".lower()
    if "nothing to compare" in text:
        return "untested"
    if re.search(r"\bmiss", text):
        return "missed"
    if re.search(r"\bagrees\b|\binside\b", text):
        return "held"
    return "undecided"


def recount(card: pd.DataFrame) -> pd.DataFrame:
    """The stored card recounted by the book's rule: a row is *predicted* only if its number set no parameter.

    Adds ``sets`` (each parameter the row's measured number set, and how; an assumption made knowing it is marked
    so), ``sets_through`` (what follows from those parameters), ``chapter_word`` (the chapter's basis in How to
    read's words), ``counted_as`` (fitted if the number set a parameter; consistent if the chapter says predicted
    but an assumption was made knowing the number; else the chapter's word: the recount never strengthens it) and, for predicted rows, ``verdict`` (held within
    :data:`HOLDS_WITHIN` or missed; a share read from counts a likely binomial draw at every setting shown, else
    missed or split; for a row in words, the chapter's own verdict, copied) and ``weak`` (the chapter
    calls it a weak test).
    """
    found = setters()
    sets, through, counted, verdict, weak, word = [], [], [], [], [], []
    for r in card.itertuples():
        numbers = [float(x) for x in str(r.numbers).split(";") if x not in ("", "nan")]
        hits = [st for st in found if _matches(st, r.chapter, str(r.source), str(r.figure), numbers)]
        names = list(dict.fromkeys(f"{st.parameter} ({st.how})" if st.kind == "fitted" else
                                   f"{st.parameter} (an assumption: {st.how})" for st in hits))
        sets.append("; ".join(names))
        through.append("; ".join(dict.fromkeys(t for st in hits for t in st.through)))
        w = _chapter_word(str(r.basis))
        word.append(w)
        kinds = {st.kind for st in hits}
        # The recount only ever weakens a chapter's word: a number that set a parameter makes the row fitted; an
        # assumption chosen knowing it makes a "predicted" row consistent; anything else keeps the chapter's word.
        c = "fitted" if "fitted" in kinds else "consistent" if "consistent" in kinds and w == "predicted" else w
        counted.append(c)
        verdict.append(_verdict(r.ratio, str(r.basis), str(r.depends_on), str(r.measured), str(r.model))
                       if c == "predicted" else "")
        weak.append(c == "predicted" and "weak" in f"{r.basis} {r.depends_on}".lower())
    return card.assign(sets=sets, sets_through=through, chapter_word=word, counted_as=counted, verdict=verdict,
                       weak=weak)


def scorecard_counts(card: pd.DataFrame) -> dict[str, int]:
    """The recounted card's totals: rows, predictions and how many held, missed or had nothing to compare; the
    rows a chapter calls predicted that the rule counts otherwise."""
    predicted = card[card["counted_as"] == "predicted"]
    return {"rows": len(card), "predictions": len(predicted),
            "held": int((predicted["verdict"] == "held").sum()), "missed": int((predicted["verdict"] == "missed").sum()),
            "untested": int((predicted["verdict"] == "untested").sum()),
            "split": int((predicted["verdict"] == "split").sum()),
            "weak_held": int((predicted["weak"] & (predicted["verdict"] == "held")).sum()),
            "fitted": int((card["counted_as"] == "fitted").sum()),
            "consistent": int((card["counted_as"] == "consistent").sum()),
            "recounted": int(((card["chapter_word"] == "predicted") & (card["counted_as"] != "predicted")).sum())}


def chapter_summary(card: pd.DataFrame) -> pd.DataFrame:
    """Per chapter: predictions held, missed and untested, and the rows counted fitted, consistent or otherwise."""
    rows = []
    for ch in sorted(card["chapter"].unique(), key=chapter_key):
        part = card[card["chapter"] == ch]
        p = part[part["counted_as"] == "predicted"]
        rows.append({"chapter": chapter_of(ch), "notebook": part["notebook"].iloc[0],
                     "held": int((p["verdict"] == "held").sum()), "missed": int((p["verdict"] == "missed").sum()),
                     "untested": int((p["verdict"] == "untested").sum()),
                     "split": int((p["verdict"] == "split").sum()),
                     "fitted": int((part["counted_as"] == "fitted").sum()),
                     "consistent": int((part["counted_as"] == "consistent").sum()),
                     "other": int((~part["counted_as"].isin(["predicted", "fitted", "consistent"])).sum())})
    return pd.DataFrame(rows)


if __name__ == "__main__":  # python -m models.book.analysis.validation [scorecard|crosscheck]

    what = sys.argv[1:] or ["scorecard", "crosscheck"]
    if "scorecard" in what:
        print(write_scorecard())
    if "crosscheck" in what:
        print(write_crosscheck_study())
