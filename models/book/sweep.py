"""Parameter sweeps behind the static explorers: a grid of replicated runs written to ``book/data``.

A sweep is a scenario, a grid (parameter -> values), fixed overrides and a
number of replications.  Each grid point runs once per seed (``seed``,
``seed + 1``, ...; or seeds of its own with ``seeds_per_point``); the stored row holds, for every metric, the mean over the
seeds and the half-width of its 95% confidence interval (Student t).  A run is
a pure function of (point, seed), and the means are summed exactly
(``math.fsum``) in seed order, so the stored table is the same whichever
executor ran the runs: in this process, on a local process pool (the default)
or on a Dask distributed cluster.

A module there may define a :class:`Study` instead (``STUDY``): precomputed
data that is not a grid of runs, such as the coverage study of the fit's
ranges, written by its own function in one process (``--quick`` runs its
smaller version).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import os
import pkgutil
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pandas as pd
from tqdm import tqdm

import models
from models.book.stored import CI_SUFFIX, data_dir
from models.files import write_text_atomic
from models.params import ParameterError
from models.statistics import mean_ci

METRICS = ("elapsed_ms", "throughput_per_s", "acquires", "waiting_requests_count", "wait_time_ms",
           "max_wait_time_ms", "p50_wait_ms", "p99_wait_ms", "mean_wait_ms",
           "signal_wait_time_ms", "collisions", "spins", "backoffs")
FLOAT_FORMAT = "%.6g"  # what the CSV keeps: more than a chart shows, and no CPU's last digits


def __getattr__(name: str) -> Any:
    """``DATA_DIR`` (:func:`models.book.stored.data_dir`), looked up when named: importing this module (a Dask
    worker does) reads no folder."""
    if name == "DATA_DIR":
        return data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Sweep:
    """A named grid of runs of one scenario, each point replicated over ``replications`` seeds."""

    name: str
    scenario: str
    grid: dict[str, list[Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    replications: int = 5
    doc: str = ""
    # False: every point runs the same seeds (neighbouring points differ only by their parameters, so a
    # curve is smooth).  True: each point gets seeds of its own, so the points' errors are independent
    # (a validation grid, where n points agreeing with a formula should be n independent checks).
    seeds_per_point: bool = False
    # What each run is measured by: "latch" (the latch DMVs, METRICS) or "query" (the per-query table of a
    # workload with memory grants, QUERY_METRICS).
    measure: str = "latch"

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as a parameter dict (fixed values included, seed = the first seed)."""
        keys = list(self.grid)
        return [dict(self.fixed, **dict(zip(keys, combo)))
                for combo in itertools.product(*(self.grid[k] for k in keys))]

    def params(self, point: dict[str, Any]) -> dict[str, Any]:
        """The scenario's parameters at a grid point: the point itself (a sweep whose grid holds labels maps them)."""
        return point

    def seeds(self, k: int = 0) -> list[int]:
        """The seeds point ``k`` (in :meth:`points` order) runs with."""
        first = int(self.fixed.get("seed", 1)) + (k * self.replications if self.seeds_per_point else 0)
        return list(range(first, first + self.replications))

    def index(self, point: dict[str, Any]) -> int:
        """The position of ``point`` (matched on the grid's keys) in :meth:`points`."""
        key = [point[k] for k in self.grid]
        for k, candidate in enumerate(self.points()):
            if [candidate[g] for g in self.grid] == key:
                return k
        raise ValueError(f"point {key} is not on the grid of sweep {self.name!r}")

    def metric_names(self) -> tuple[str, ...]:
        """The metrics this sweep stores."""
        return MEASURES[self.measure][0]

    def columns(self) -> list[str]:
        """The stored table's columns: the grid, then each metric's mean and CI half-width."""
        return list(self.grid) + [c for m in self.metric_names() for c in (m, m + CI_SUFFIX)]


def metrics(result) -> dict[str, Any]:
    """The explorer's metric columns for one run."""
    latch = result.latch_stats.iloc[0]
    waits = result.wait_stats
    latch_rows = waits[waits["wait_type"].str.contains("LATCH")]
    spin = result.spin_stats.iloc[0]
    return {
        "elapsed_ms": result.elapsed_ms, "throughput_per_s": result.throughput_per_s,
        "acquires": int(latch["acquires"]),
        "waiting_requests_count": int(latch["waiting_requests_count"]),
        "wait_time_ms": float(latch["wait_time_ms"]),
        "max_wait_time_ms": float(latch["max_wait_time_ms"]),
        "p50_wait_ms": float(latch["p50_wait_ms"]), "p99_wait_ms": float(latch["p99_wait_ms"]),
        "mean_wait_ms": result.mean_wait_ms,
        "signal_wait_time_ms": float(latch_rows["signal_wait_time_ms"].sum()),
        "collisions": int(spin["collisions"]), "spins": int(spin["spins"]),
        "backoffs": int(spin["backoffs"]),
    }


QUERY_METRICS = ("elapsed_ms", "granted", "forced_minimum", "error_8645", "grant_wait_ms", "query_elapsed_ms",
                 "compressed_rowgroups", "delta_store_rowgroups", "peak_granted_mb")


def query_metrics(result) -> dict[str, Any]:
    """A memory-grant run's metric columns: outcomes counted, mean wait and run time, rowgroups, peak grant."""
    q = result.queries
    ran = q[q["outcome"] != "error_8645"]
    return {
        "elapsed_ms": result.elapsed_ms,
        **{o: int((q["outcome"] == o).sum()) for o in ("granted", "forced_minimum", "error_8645")},
        "grant_wait_ms": float(q["grant_wait_ms"].mean()),
        "query_elapsed_ms": float(ran["elapsed_ms"].mean()) if len(ran) else 0.0,
        "compressed_rowgroups": int(q["compressed_rowgroups"].sum()),
        "delta_store_rowgroups": int(q["delta_store_rowgroups"].sum()),
        "peak_granted_mb": float(result.extra["grants"]["granted_mb"].max()),
    }


MEASURES: dict[str, tuple[tuple[str, ...], Callable[[Any], dict[str, Any]]]] = {
    "latch": (METRICS, metrics), "query": (QUERY_METRICS, query_metrics)}


def run_one(scenario: str, params: dict[str, Any], measure: str = "latch") -> dict[str, Any]:
    """One run's metrics (the unit of work an executor ships to a process or a Dask worker)."""
    return MEASURES[measure][1](models.run(scenario, **params))


def summarise(sweep: Sweep, runs: list[dict[str, Any]]) -> pd.DataFrame:
    """The stored table from every run's metrics, in (point, seed) order."""
    r = sweep.replications
    rows = []
    for k, point in enumerate(sweep.points()):
        row = {key: point[key] for key in sweep.grid}
        reps = runs[k * r:(k + 1) * r]
        for m in sweep.metric_names():
            row[m], row[m + CI_SUFFIX] = mean_ci([float(rep[m]) for rep in reps])
        rows.append(row)
    return pd.DataFrame(rows, columns=sweep.columns())


def tasks(sweep: Sweep) -> list[tuple[str, dict[str, Any], str]]:
    """Every run of the sweep as (scenario, parameters, measure), point by point, seed by seed."""
    return [(sweep.scenario, dict(sweep.params(point), seed=seed), sweep.measure)
            for k, point in enumerate(sweep.points()) for seed in sweep.seeds(k)]


DASK_CONNECT_S = 10  # how long a Dask scheduler has to answer before a sweep sent to it is refused


def _call(job: tuple[Callable, tuple]) -> Any:
    fn, args = job
    return fn(*args)


def _ignore_interrupts() -> None:
    """Pool worker start-up: ignore Ctrl-C, which the parent handles (else every worker prints a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Block Ctrl-C in this thread while it starts worker processes, so each starts with it blocked (a child
    inherits the mask) instead of dying of it mid-import; one pressed meanwhile arrives when the mask is restored."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows has no signal masks
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _checked_jobs(jobs: int | None) -> int:
    """The number of processes ``jobs`` asks for (None: every CPU), or a ParameterError naming it."""
    cpus = os.cpu_count() or 1
    if jobs is None:
        return cpus
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= cpus:
        raise ParameterError(f"jobs={jobs!r} is out of range: use a whole number of processes from 1 to {cpus} "
                             f"(this machine's CPUs)")
    return jobs


async def _handshake(address: str) -> None:
    """Connect to ``address`` and exchange Dask's greeting, within DASK_CONNECT_S in all."""
    from distributed.comm import connect  # Dask: loaded only when a sweep is sent to a cluster

    comm = await asyncio.wait_for(connect(address, timeout=DASK_CONNECT_S), DASK_CONNECT_S)
    await comm.close()


def _dask_client(address: str) -> Any:
    """A Dask client connected to the scheduler at ``address``, or a ParameterError naming it and why not.

    The greeting is tried first, on an event loop of its own with a deadline: distributed's Client waits
    for it without one, so a peer that accepts the connection and stays silent would hang it.
    """
    from distributed import Client  # Dask: loaded only when a sweep is sent to a cluster

    try:
        with ThreadPoolExecutor(1) as probe:  # a thread: the caller may be running an event loop (Jupyter)
            probe.submit(asyncio.run, _handshake(address)).result()
        client = Client(address, timeout=DASK_CONNECT_S)
    except ValueError:
        raise ParameterError(f"dask={address!r} is not an address: use tcp://HOST:PORT") from None
    except TypeError:  # tls:// without certificates, or ucx://, which this distributed no longer has
        raise ParameterError(f"dask={address!r} uses a protocol a sweep cannot connect with: "
                             f"use tcp://HOST:PORT") from None
    except (OSError, TimeoutError):
        raise ParameterError(f"dask={address!r} is unreachable: no Dask scheduler answered within "
                             f"{DASK_CONNECT_S} s") from None
    except Exception as err:  # a peer that answers, but not as Dask does (SSH, HTTP, stray bytes)
        raise ParameterError(f"dask={address!r} answered, but not as a Dask scheduler ({type(err).__name__}): "
                             "use the scheduler's tcp://HOST:PORT") from None
    if not client.scheduler_info().get("workers"):  # runs sent there would wait for ever
        client.close()
        raise ParameterError(f"dask={address!r} has no workers: start `dask worker {address}` on the machines "
                             "that should run the sweep")
    return client


def _run_on_dask(client: Any, fn: Callable[..., Any], arglist: list[tuple], results: list[Any], bar: Any) -> None:
    """Fill ``results`` through the Dask ``client``, then close it; on any error or Ctrl-C cancel what is left."""
    from distributed import as_completed as dask_completed  # Dask: loaded only when a sweep is sent to a cluster

    futures: list[Any] = []
    try:
        futures = client.map(_call, [(fn, args) for args in arglist], pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        for future in dask_completed(futures):
            results[index[future.key]] = future.result()
            bar.update()
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        client.close()


def _run_on_pool(workers: int, fn: Callable[..., Any], arglist: list[tuple], results: list[Any], bar: Any) -> None:
    """Fill ``results`` on ``workers`` local processes; on any error or Ctrl-C cancel the rest and stop them."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                             initializer=_ignore_interrupts) as pool:
        try:
            futures = {}
            for k, args in enumerate(arglist):  # the pool starts a process with each of the first runs submitted
                with _interrupts_held() if k < workers else contextlib.nullcontext():
                    futures[pool.submit(fn, *args)] = k
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update()
        except BaseException:
            # Workers ignore Ctrl-C and would finish their runs first: stop them (as Python 3.14's
            # ProcessPoolExecutor.terminate_workers does), after cancelling every run not started.
            processes = list((pool._processes or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            for process in processes:
                process.join()
            raise


class RunRate:
    """How fast a sweep's runs finish, and so how long the rest will take, measured from finished runs only.

    The first run each worker process finishes also carries its start-up (the process starting, the
    engine loading from its cache, or compiling), so the rate is counted from the moment the first
    ``startup_runs`` runs have finished: there is no estimate before a run finishes after that.
    """

    def __init__(self, total: int, startup_runs: int = 1, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.startup_runs, self.clock = total, max(1, startup_runs), clock
        self.done = 0
        self.since: tuple[float, int] | None = None  # (time, runs done) when the start-up runs had finished

    def finished(self, runs: int = 1) -> None:
        """Count ``runs`` more finished runs."""
        self.done += runs
        if self.since is None and self.done >= self.startup_runs:
            self.since = (self.clock(), self.done)

    def remaining_s(self) -> float | None:
        """Seconds until every run is done at the rate measured since start-up; None until it can be measured."""
        if self.done >= self.total:
            return 0.0
        if self.since is None:
            return None
        start, done = self.since
        spent = self.clock() - start
        if self.done <= done or spent <= 0:
            return None
        return (self.total - self.done) * spent / (self.done - done)

    def status(self) -> str:
        """What the progress line says after its counts: start-up, the rate being measured, or the time left."""
        if self.done >= self.total:
            return "done"
        if self.since is None:
            return "starting the workers and loading the engine"
        left = self.remaining_s()
        return "measuring the rate" if left is None else f"about {duration_text(left)} left"


def duration_text(seconds: float) -> str:
    """``seconds`` as a person reads a wait: 40 s, 3 min, 1.5 h."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _Progress:
    """A tqdm bar that counts finished runs and shows :class:`RunRate`'s time left, not tqdm's own guess.

    (tqdm's estimate counts the workers' start-up as work: 4,160 runs whose first took 24 s to come
    back read as 28 hours for a sweep of 42 s.)
    """

    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs [{elapsed}{postfix}]"

    def __init__(self, total: int, label: str, startup_runs: int, enabled: bool) -> None:
        self.rate = RunRate(total, startup_runs)
        self.bar = tqdm(total=total, desc=label, disable=not enabled, file=sys.stderr, miniters=1,
                        bar_format=self.FORMAT, postfix=self.rate.status())

    def update(self, runs: int = 1) -> None:
        self.rate.finished(runs)
        self.bar.set_postfix_str(self.rate.status(), refresh=False)
        self.bar.update(runs)

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.close()


def run_all(fn: Callable[..., Any], arglist: list[tuple], *, jobs: int | None = None, dask: str | None = None,
            label: str = "runs", progress: bool = True) -> list[Any]:
    """``[fn(*args) for args in arglist]``, in that order, run on ``jobs`` processes or a Dask cluster.

    ``jobs=1`` runs here, in order; ``jobs=None`` uses every CPU, and more
    than that is refused.  ``dask`` is the address of a running Dask
    scheduler (``tcp://host:8786``) whose workers can import this package; one
    that does not answer within ``DASK_CONNECT_S`` is refused.  A progress
    bar counts finished runs, with the time left at the rate measured once the
    workers have started (:class:`RunRate`).  Ctrl-C (or a failed run) cancels
    the runs not yet finished before the exception goes on.
    """
    workers = _checked_jobs(jobs)
    client = None if dask is None else _dask_client(dask)  # refused before the bar is drawn
    results: list[Any] = [None] * len(arglist)
    pooled = client is None and workers > 1 and len(arglist) >= 2
    with _Progress(len(arglist), label, workers if pooled else 1, progress) as bar:
        if client is not None:
            _run_on_dask(client, fn, arglist, results, bar)
        elif not pooled:
            for k, args in enumerate(arglist):
                results[k] = fn(*args)
                bar.update()
        else:
            _run_on_pool(workers, fn, arglist, results, bar)
    return results


def run_sweep(sweep: Sweep, *, jobs: int | None = None, dask: str | None = None,
              progress: bool = True) -> pd.DataFrame:
    """Run every replication of every grid point and return the stored table."""
    runs = run_all(run_one, tasks(sweep), jobs=jobs, dask=dask, label=sweep.name, progress=progress)
    return summarise(sweep, runs)


def run_point(sweep: Sweep, point: dict[str, Any]) -> dict[str, Any]:
    """One grid point's row (grid values, then each metric's mean and CI), its seeds run here."""
    runs = [run_one(sweep.scenario, dict(sweep.params(point), seed=seed), sweep.measure)
            for seed in sweep.seeds(sweep.index(point))]
    return summarise(replace(sweep, grid={k: [point[k]] for k in sweep.grid}), runs).iloc[0].to_dict()


@dataclass(frozen=True)
class Study:
    """Precomputed data that is not a grid of runs (a study of the fit, say): a name and its own writer.

    ``write(out_dir, quick=..., progress=...)`` computes the study in this process and writes its tables
    whole (temp file and rename), returning their paths; ``quick`` is a smaller version for tests.
    """

    name: str
    write: Callable[..., list[Path]]
    doc: str = ""


def _modules() -> dict[str, Any]:
    """Every module under ``models/book/sweeps`` that defines a SWEEP or a STUDY, by its name."""
    from models.book import sweeps as package  # its modules import this one: loaded once this one is

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"models.book.sweeps.{info.name}")
        if isinstance(getattr(module, "SWEEP", None), Sweep):
            found[module.SWEEP.name] = module
        elif isinstance(getattr(module, "STUDY", None), Study):
            found[module.STUDY.name] = module
    return found


def sweeps() -> dict[str, Sweep]:
    """Every sweep defined under ``models/book/sweeps``."""
    return {name: module.SWEEP for name, module in _modules().items() if hasattr(module, "SWEEP")}


def studies() -> dict[str, Study]:
    """Every study defined under ``models/book/sweeps`` (precomputed like a sweep, but not a grid)."""
    return {name: module.STUDY for name, module in _modules().items() if not hasattr(module, "SWEEP")}


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """Write a sweep table as the book stores it (6 significant digits), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, table.to_csv(index=False, float_format=FLOAT_FORMAT))


def write_sweep(name: str, out_dir: Path | None = None, *, jobs: int | None = None, dask: str | None = None,
                progress: bool = True, quick: bool = False) -> list[Path]:
    """Run the sweep called ``name``, write ``out_dir/NAME.csv`` (the book's :data:`DATA_DIR` by default) and any
    extra tables its module makes.

    A sweep module may define ``write_extra(out_dir, run) -> list[Path]`` for
    data that is not a grid of points; ``run`` is :func:`run_all` bound to the
    same executor.  A study (:class:`Study`) runs in this process whatever
    ``jobs`` says (it is one sequence of fits); ``quick`` asks it for its
    smaller version, and a grid refuses it.
    """
    out_dir = data_dir() if out_dir is None else out_dir
    modules = _modules()
    if name not in modules:
        raise ParameterError(f"sweep={name!r} is unknown: use one of {', '.join(sorted(modules)) or '(none)'}")
    if not hasattr(modules[name], "SWEEP"):
        if dask is not None:
            raise ParameterError(f"sweep={name!r} is a study, which runs in this process: drop --dask")
        return modules[name].STUDY.write(out_dir, quick=quick, progress=progress)
    if quick:
        raise ParameterError(f"sweep={name!r} is a grid, which has no quick version: drop --quick")
    known = {n: m.SWEEP for n, m in modules.items() if hasattr(m, "SWEEP")}
    paths = [write_table(run_sweep(known[name], jobs=jobs, dask=dask, progress=progress), out_dir / f"{name}.csv")]
    extra = getattr(modules[name], "write_extra", None)
    if extra is not None:
        def run(fn: Callable[..., Any], arglist: Iterable[tuple], label: str) -> list[Any]:
            return run_all(fn, list(arglist), jobs=jobs, dask=dask, label=label, progress=progress)
        paths += extra(out_dir, run)
    return paths
