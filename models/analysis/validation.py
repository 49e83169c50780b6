"""Comparison tables for the appendix: the engine against closed forms and against itself.

Each function runs the engine and returns a tidy DataFrame beside the
matching formula from :mod:`models.analytic`, so the appendix notebook and
``tests/test_validation.py`` show and assert the same numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import models
from models import analytic, stored
from models.engine import LatchSpec, Workload, simulate
from models.program import EX, EXPONENTIAL, Program
from models.result import build

FREE = {"wakeup_us": 0.0, "context_switch_us": 0.0}


def open_queue_table(rhos: list[float], hold_ms: float = 2.0, requests: int = 200_000,
                     seed: int = 1) -> pd.DataFrame:
    """Convoy mean wait and queue length against M/D/1 and M/M/1, with batch-means 95% intervals."""
    rows = []
    for dist, formula in (("fixed", analytic.md1), ("exponential", analytic.mm1)):
        for rho in rhos:
            rate = rho / hold_ms * 1000.0
            res = models.run("convoy", arrival_rate_per_s=rate, hold_ms=hold_ms, hold_dist=dist,
                             requests=requests, seed=seed, **FREE)
            w = res.acquire_wait_ms
            mean, half = analytic.batch_means_ci(w[len(w) // 20:])
            theory = formula(rate / 1000.0, hold_ms)
            rows.append({"hold": dist, "utilisation": rho, "simulated_wait_ms": mean, "ci_half_ms": half,
                         "formula_wait_ms": theory.mean_wait,
                         "simulated_queue": res.extra["queue_area_ms"] / res.elapsed_ms,
                         "formula_queue": theory.mean_queue_length})
    table = pd.DataFrame(rows)
    table["error_pct"] = 100 * (table["simulated_wait_ms"] / table["formula_wait_ms"] - 1)
    table["within_ci"] = (table["simulated_wait_ms"] - table["formula_wait_ms"]).abs() <= table["ci_half_ms"]
    return table


def handoff_queue_table(loads: list[float], hold_ms: float = 2.0, handoff_ms: float = 0.2,
                        requests: int = 300_000, seed: int = 1) -> pd.DataFrame:
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
            mean, half = analytic.batch_means_ci(w[len(w) // 20:])
            exact = analytic.fair_handoff_queue(rate, hold_ms, second_moment, handoff_ms)
            rows.append({"hold": dist, "load": load, "seed": row_seed, "simulated_wait_ms": mean,
                         "ci_half_ms": half, "formula_wait_ms": exact.mean_latch_wait,
                         "simulated_prob_wait": float((w > 0).mean()), "formula_prob_wait": exact.prob_wait})
    table = pd.DataFrame(rows)
    table["error_pct"] = 100 * (table["simulated_wait_ms"] / table["formula_wait_ms"] - 1)
    table["within_ci"] = (table["simulated_wait_ms"] - table["formula_wait_ms"]).abs() <= table["ci_half_ms"]
    return table


def convergence_table(rho: float = 0.9, hold_ms: float = 2.0, lengths=(10_000, 30_000, 100_000, 300_000),
                      seed: int = 1) -> pd.DataFrame:
    """How the 95% half-width of the M/M/1 mean wait shrinks with the run length at one utilisation."""
    rate = rho / hold_ms * 1000.0
    res = models.run("convoy", arrival_rate_per_s=rate, hold_ms=hold_ms, hold_dist="exponential",
                     requests=max(lengths), seed=seed, **FREE)
    exact = analytic.mm1(rate / 1000.0, hold_ms).mean_wait
    rows = []
    for n in lengths:
        w = res.acquire_wait_ms[:n]
        mean, half = analytic.batch_means_ci(w[len(w) // 20:])
        rows.append({"requests": n, "mean_wait_ms": mean, "ci_half_ms": half,
                     "relative_half_width_pct": 100 * half / exact, "formula_wait_ms": exact})
    return pd.DataFrame(rows)


def repairman_table(workers: list[int], think_ms: float = 1.0, hold_ms: float = 0.1,
                    acquires_per_worker: int = 5_000, seed: int = 1) -> pd.DataFrame:
    """Closed-latch throughput, response time and latch utilisation against exact MVA."""
    mva = analytic.mva_repairman(max(workers), think_ms, hold_ms)
    rows = []
    for n in workers:
        res = models.run("closed-latch", workers=n, schedulers=n, think_ms=think_ms, hold_ms=hold_ms,
                         acquires=acquires_per_worker * n, seed=seed, **FREE)
        x = res.throughput_per_s / 1000.0
        rows.append({"workers": n, "simulated_throughput_per_ms": x,
                     "mva_throughput_per_ms": float(mva.throughput[n - 1]),
                     "simulated_response_ms": res.mean_wait_ms + hold_ms,
                     "mva_response_ms": float(mva.response_time[n - 1]),
                     "simulated_utilisation": x * hold_ms, "mva_utilisation": float(mva.utilisation[n - 1])})
    table = pd.DataFrame(rows)
    table["throughput_error_pct"] = 100 * (table["simulated_throughput_per_ms"] / table["mva_throughput_per_ms"] - 1)
    table["response_error_pct"] = 100 * (table["simulated_response_ms"] / table["mva_response_ms"] - 1)
    return table


def shared_scheduler_table(cases=((3, 2), (4, 2), (4, 3), (5, 3), (6, 4)), think_ms: float = 1.0, hold_ms: float = 0.25,
                           acquires: int = 240_000, seed: int = 1) -> pd.DataFrame:
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
        mean, half = analytic.batch_means_ci(w[len(w) // 20:])
        exact = analytic.shared_scheduler_latch(n, sched, think_ms, hold_ms)
        rows.append({"workers": n, "schedulers": sched, "seed": seed + k, "chain_states": exact.states,
                     "simulated_throughput_per_ms": res.throughput_per_s / 1000.0,
                     "chain_throughput_per_ms": exact.throughput, "simulated_wait_ms": mean, "ci_half_ms": half,
                     "chain_wait_ms": exact.mean_latch_wait})
    table = pd.DataFrame(rows)
    table["throughput_error_pct"] = 100 * (table["simulated_throughput_per_ms"] / table["chain_throughput_per_ms"] - 1)
    table["wait_error_pct"] = 100 * (table["simulated_wait_ms"] / table["chain_wait_ms"] - 1)
    return table


def cpu_queue(servers: int, utilisation: float, service_ms: float = 1.0, tasks: int = 100_000,
              seed: int = 1) -> dict[str, float]:
    """Mean wait for a CPU when Poisson tasks of exponential CPU work arrive at ``servers`` schedulers.

    Built directly from the instruction set (no scenario has it): each task is
    one exponential CPU burst, placed on arrival on the least-loaded scheduler,
    with free context switches.  The wait is the time spent RUNNABLE, read
    from the trace.  Per-scheduler queues make this join-the-shortest-queue,
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
    wait = float((waited["end_ms"] - waited["start_ms"]).sum() / tasks)
    return {"servers": servers, "utilisation": utilisation, "simulated_wait_ms": wait,
            "mmc_wait_ms": analytic.mmc(rate_per_ms, service_ms, servers).mean_wait,
            "split_mm1_wait_ms": analytic.mm1(rate_per_ms / servers, service_ms).mean_wait}


def usl_table(maxdops=(1, 2, 4, 6, 8, 12, 16, 20, 24), contender_cost_us: float = 2.0,
              **params) -> tuple[pd.DataFrame, analytic.USLFit]:
    """Parallel-insert throughput against MAXDOP and the Universal Scalability Law fitted to it.

    The fit is rounded (:func:`models.stored.fitted`) before its curve is
    drawn: its last digits depend on the CPU's BLAS kernel.
    """
    base = dict(rows=400_000, logging="full", hold_us=8.0)
    base.update(params)
    xs = [models.run("parallel-insert", maxdop=n, contender_cost_us=contender_cost_us, **base).throughput_per_s
          for n in maxdops]
    fit = stored.fitted(analytic.usl_fit(np.array(maxdops), np.array(xs)))
    table = pd.DataFrame({"maxdop": list(maxdops), "simulated_log_records_per_s": xs,
                          "usl_log_records_per_s": fit.lambda_ * analytic.usl(np.array(maxdops), fit.sigma, fit.kappa)})
    return table, fit
