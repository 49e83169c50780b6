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

from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

import models
from models import analytic
from models.book import stored
from models.engine.program import EX, EXPONENTIAL, Program
from models.result import build
from models.workload import LatchSpec, Workload, simulate

FREE = {"wakeup_us": 0.0, "context_switch_us": 0.0}

# First seed of each table (row k runs from base + k).
OPEN_SEED = 101       # convoy against Pollaczek-Khinchine
HANDOFF_SEED = 1      # convoy with a hand-off against Welch
REPAIRMAN_SEED = 201  # closed latch against MVA
SHARED_SEED = 1       # shared schedulers against the Markov chain (built from the instruction set)
CPU_SEED = 301        # per-scheduler CPU queues against M/M/c

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
            mean, half = analytic.batch_means_ci(w[len(w) // 20:])
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
            mean, half = analytic.batch_means_ci(w[len(w) // 20:])
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
        mean, half = analytic.batch_means_ci(w[len(w) // 20:])
        rows.append({"requests": n, "seed": seed, "mean_wait_ms": mean, "ci_half_ms": half,
                     "relative_half_width_pct": 100 * half / exact, "formula_wait_ms": exact,
                     "reference": f"Pollaczek-Khinchine M/M/1, {EXACT}"})
    return pd.DataFrame(rows)


def repairman_table(workers: list[int], think_ms: float = 1.0, hold_ms: float = 0.1,
                    acquires_per_worker: int = 20_000, seed: int = REPAIRMAN_SEED) -> pd.DataFrame:
    """Closed-latch throughput, response time and latch utilisation against exact MVA; row k on seed ``seed + k``."""
    mva = analytic.mva_repairman(max(workers), think_ms, hold_ms)
    rows = []
    for k, n in enumerate(workers):
        res = models.run("closed-latch", workers=n, schedulers=n, think_ms=think_ms, hold_ms=hold_ms,
                         acquires=acquires_per_worker * n, seed=seed + k, **FREE)
        x = res.throughput_per_s / 1000.0
        rows.append({"workers": n, "acquires_per_worker": acquires_per_worker, "seed": seed + k,
                     "simulated_throughput_per_ms": x,
                     "mva_throughput_per_ms": float(mva.throughput[n - 1]),
                     "simulated_response_ms": res.mean_wait_ms + hold_ms,
                     "mva_response_ms": float(mva.response_time[n - 1]),
                     "simulated_utilisation": x * hold_ms, "mva_utilisation": float(mva.utilisation[n - 1]),
                     "reference": "exact MVA (machine repairman); nothing fitted"})
    table = pd.DataFrame(rows)
    table["throughput_error_pct"] = 100 * (table["simulated_throughput_per_ms"] / table["mva_throughput_per_ms"] - 1)
    table["response_error_pct"] = 100 * (table["simulated_response_ms"] / table["mva_response_ms"] - 1)
    return table


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
        mean, half = analytic.batch_means_ci(w[len(w) // 20:])
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
    wait, half = analytic.batch_means_ci(per_task[tasks // 20:])
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


def usl_fit_table(cases: dict[str, tuple[pd.DataFrame, analytic.USLFit]]) -> pd.DataFrame:
    """One row per :func:`usl_table` result: the fitted coefficients, the fit's peak and the simulated best MAXDOP."""
    rows = []
    for name, (table, fit) in cases.items():
        best = int(table.loc[table["simulated_log_records_per_s"].idxmax(), "maxdop"])
        rows.append({"run": name, "sigma": fit.sigma, "kappa": fit.kappa, "usl_peak_maxdop": fit.peak_n,
                     "simulated_best_maxdop": best, "r_squared": fit.r_squared,
                     "reference": f"USL fitted to the {len(table)} runs: fitted"})
    return pd.DataFrame(rows)


def crosscheck_table(open_load: float = 0.35, workers: int = 8, count: int = 20_000, seed: int = 11) -> pd.DataFrame:
    """The engine, SimPy and Ciw on one open and one closed latch system with a fair hand-off.

    The three simulators draw from different generators, so one seed gives
    three independent runs.  The open system also gets its exact mean from
    Welch's M/G/1 (:func:`models.analytic.fair_handoff_queue`); the closed one
    with a hand-off has no closed form here.  Half-widths are 95% (Student t
    over 20 batch means).
    """
    from models import crosscheck  # SimPy and Ciw: imported only when a cross-check runs
    from models.book.sweep import t95

    t = t95(19)
    reference = {"engine": "the engine (under test)", "SimPy": "SimPy: same system, own code; nothing fitted",
                 "Ciw": "Ciw: same system, own code; nothing fitted"}
    rows = []
    open_name = f"open, λ = {open_load:g} per ms, H = 0.2 ms"
    for name, fn in (("engine", crosscheck.engine_convoy), ("SimPy", crosscheck.simpy_convoy),
                     ("Ciw", crosscheck.ciw_convoy)):
        r = fn(open_load, hold_ms=2.0, hold_dist="exponential", handoff_ms=0.2, n_requests=count, seed=seed)
        m, se = crosscheck.batch_means(r.waits_ms)
        rows.append({"system": open_name, "simulator": name, "seed": seed, "mean_wait_ms": m, "ci_half_ms": t * se,
                     "reference": reference[name]})
    exact = analytic.fair_handoff_queue(open_load, 2.0, 8.0, 0.2).mean_latch_wait
    rows.append({"system": open_name, "simulator": "Welch formula", "seed": None, "mean_wait_ms": exact,
                 "ci_half_ms": None, "reference": EXACT})
    closed_name = f"closed, N = {workers}, H = 0.02 ms"
    for name, fn in (("engine", crosscheck.engine_closed_latch), ("SimPy", crosscheck.simpy_closed_latch),
                     ("Ciw", crosscheck.ciw_closed_latch)):
        r = fn(workers, hold_ms=0.1, hold_dist="exponential", handoff_ms=0.02, think_ms=1.0,
               think_dist="exponential", n_acquires=count, seed=seed)
        m, se = crosscheck.batch_means(r.waits_ms)
        rows.append({"system": closed_name, "simulator": name, "seed": seed, "mean_wait_ms": m,
                     "ci_half_ms": t * se, "reference": reference[name]})
    return pd.DataFrame(rows)


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
    "response_error_pct": "response error (%)", "wait_error_pct": "wait error (%)", "chain_wait_ms": "chain wait (ms)",
    "servers": "schedulers", "mmc_wait_ms": "Erlang C, pooled (ms)", "split_mm1_wait_ms": "split M/M/1 (ms)",
    "run": "run", "sigma": "σ", "kappa": "κ", "usl_peak_maxdop": "USL peak N*",
    "simulated_best_maxdop": "best simulated MAXDOP", "r_squared": "R²", "system": "system",
    "simulator": "simulator", "reference": "reference",
}
_INTEGERS = {"seed", "requests", "workers", "schedulers", "chain_states", "servers", "simulated_best_maxdop",
             "acquires_per_worker"}


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
