"""What a run returns: elapsed time, throughput and the DMV-shaped tables.

The tables carry the column names of sys.dm_os_latch_stats,
sys.dm_os_wait_stats and sys.dm_os_spinlock_stats, so a reader can hold them
beside the output of their own server.  Times are in milliseconds here (the
engine counts microseconds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from models.engine.clock import to_ticks
from models.engine.program import MODE_NAMES
from models.engine.state import (
    ALF_GRANT, ALF_RELEASE, ALF_REQUEST, ALF_RUN, AL_LATCH, AL_MODE, AL_QUEUE_SEQ, AL_SUSPENDED, AL_WORKER, BACKOFF,
    GF_END, GF_JOIN_MAXWAIT, GF_JOIN_WAIT, GF_MAX_TIME, GF_OS_MAXWAIT, GF_OS_WAIT, GF_SEM_MAXWAIT, GF_SEM_WAIT,
    GF_YIELD_MAX, GF_YIELD_WAIT, G_EVENTS, G_JOIN_WAITS, G_LOG_USED, G_OS_WAITS, G_SAMPLES_USED, G_SEM_WAITS,
    G_TRACE_USED, G_UNITS_DONE, G_YIELDS, LF_LATENCY_SUM, LF_QUEUE_AREA, LF_QUEUE_RESIDENCE, LW_COUNT, LW_MAX,
    LW_SIGNAL_TIME, LW_TIME, L_ACQUIRES, L_BACKOFFS, L_COLLISIONS, L_SPINS, SF_BUSY, STATE_NAMES, STATUS_DONE,
    STATUS_EVENT_BOUND, STATUS_STUCK, STATUS_TIME_BOUND, S_SWITCHES, WF_CPU, WF_LATCH_WAIT, WF_SPIN, W_ACQUIRES,
    W_SCHEDULER, State,
)
from models.workload import RawRun

TRACE_STATES = STATE_NAMES[:BACKOFF + 1]  # a trace row's state: running, runnable, spinning, suspended, backoff
TABLES = ("latch_stats", "wait_stats", "spin_stats", "schedulers", "workers")
# The latch and spinlock tables' columns, kept when a workload has no latch (and so no rows).
LATCH_COLUMNS = ["latch_class", "waiting_requests_count", "wait_time_ms", "max_wait_time_ms", "acquires",
                 "p50_wait_ms", "p95_wait_ms", "p99_wait_ms"]
SPIN_COLUMNS = ["name", "collisions", "spins", "backoffs"]
_BOUND_TEXT = {
    STATUS_EVENT_BOUND: "the run reached max_events={max_events} before the workload finished",
    STATUS_TIME_BOUND: "the run reached max_sim_ms={max_sim_ms} of simulated time before the workload finished",
    STATUS_STUCK: "no worker could make progress (every remaining worker waits on a latch nobody will release)",
}


@dataclass
class Result:
    """The outcome of one run of a scenario; a pure function of (scenario, params, seed)."""

    scenario: str
    params: dict[str, Any]
    seed: int
    elapsed_ms: float
    throughput_per_s: float
    truncated: bool
    truncated_reason: str
    latch_stats: pd.DataFrame
    wait_stats: pd.DataFrame
    spin_stats: pd.DataFrame
    schedulers: pd.DataFrame
    workers: pd.DataFrame
    trace: pd.DataFrame | None
    acquire_wait_ms: np.ndarray
    acquire_log: pd.DataFrame | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def queries(self) -> pd.DataFrame | None:
        """One row per query, for the workloads that run queries with memory grants (else None)."""
        return self.extra.get("queries")

    def _summary(self) -> dict[str, Any]:
        """The result's scalars: scenario, parameters, seed, elapsed time, throughput, truncation."""
        return {"scenario": self.scenario, "params": self.params, "seed": self.seed, "elapsed_ms": self.elapsed_ms,
                "throughput_per_s": self.throughput_per_s, "truncated": self.truncated}

    def _tables(self) -> dict[str, pd.DataFrame]:
        """The result's tables by name (the per-query table only for workloads with queries)."""
        tables = {name: getattr(self, name) for name in TABLES}
        if self.queries is not None:
            tables["queries"] = self.queries
        return tables

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready data (tables as lists of rows)."""
        return dict(self._summary(), **{name: json.loads(table.to_json(orient="records"))
                                         for name, table in self._tables().items()})

    def to_json(self) -> str:
        """The result as a JSON document: one key a line, each table a compact list of rows.

        Each table is written by pandas straight to text, without a Python object per cell, so a run with
        millions of workers prints in the memory its table takes.
        """
        fields = [f"{json.dumps(key)}: {json.dumps(value)}" for key, value in self._summary().items()]
        fields += [f"{json.dumps(name)}: {table.to_json(orient='records')}" for name, table in self._tables().items()]
        return "{\n  " + ",\n  ".join(fields) + "\n}"

    @property
    def mean_wait_ms(self) -> float:
        """Mean time from latch request to running with the latch, over every acquire."""
        acquires = self.latch_stats["acquires"].sum()
        return float(self.extra["latency_sum_ms"] / acquires) if acquires else 0.0

    def __repr__(self) -> str:
        flag = " TRUNCATED" if self.truncated else ""
        return (f"Result({self.scenario!r}, elapsed_ms={self.elapsed_ms:.3f}, "
                f"throughput_per_s={self.throughput_per_s:.1f}{flag})")


def _percentiles(x: np.ndarray, qs: list[float]) -> list[float]:
    """The ``qs`` percentiles of ``x`` from one partial sort (0.0 each for no samples)."""
    return [float(v) for v in np.percentile(x, qs)] if x.size else [0.0] * len(qs)


def _query_wait_rows(s: State, wl: Any) -> list[dict[str, Any]]:
    """The waits of the query instructions, for the workloads that use them (SQL Server tracks no signal wait here).

    RESOURCE_SEMAPHORE: memory-grant waits (counted when they end: granted,
    forced or failed).  CXCONSUMER: a coordinator waiting for its parallel
    workers.  The preemptive OS path under ``wl.os_wait_type``.
    """
    def row(name: str, count: int, time_us: float, max_us: float) -> dict[str, Any]:
        return {"wait_type": name, "waiting_tasks_count": int(count), "wait_time_ms": float(time_us) / 1000.0,
                "max_wait_time_ms": float(max_us) / 1000.0, "signal_wait_time_ms": 0.0}

    rows = []
    if wl.memory is not None:
        rows.append(row("RESOURCE_SEMAPHORE", s.run_cells[G_SEM_WAITS], s.run_times[GF_SEM_WAIT],
                        s.run_times[GF_SEM_MAXWAIT]))
    if not np.isfinite(np.asarray(wl.worker_arrival_us, dtype=np.float64)).all():
        rows.append(row("CXCONSUMER", s.run_cells[G_JOIN_WAITS], s.run_times[GF_JOIN_WAIT],
                        s.run_times[GF_JOIN_MAXWAIT]))
    if wl.os_wait_type:
        rows.append(row(wl.os_wait_type, s.run_cells[G_OS_WAITS], s.run_times[GF_OS_WAIT],
                        s.run_times[GF_OS_MAXWAIT]))
    return rows


def build(raw: RawRun, scenario: str, params: dict[str, Any], seed: int) -> Result:
    """Turn a finished run's arrays into a Result."""
    s, wl = raw.state, raw.workload
    elapsed_us = float(s.run_times[GF_END])
    # A run over a measurement window ends on its time bound by design; only a user's bound below it truncates.
    window_closed = (wl.window_us > 0 and raw.status == STATUS_TIME_BOUND
                     and s.run_times[GF_MAX_TIME] == to_ticks(wl.window_us))
    truncated = raw.status != STATUS_DONE and not window_closed
    reason = _BOUND_TEXT.get(raw.status, "").format(max_events=raw.max_events,
                                                    max_sim_ms=raw.max_sim_ms)
    sampled = s.samples[: s.run_cells[G_SAMPLES_USED]]
    samples, sample_latch = sampled[:, 0] / 1000.0, sampled[:, 1].astype(np.int64)

    latch_rows, wait_rows, spin_rows = [], [], []
    classes = list(dict.fromkeys(spec.latch_class for spec in wl.latches if not spec.wait_type))
    for cls in classes:
        idx = [k for k, spec in enumerate(wl.latches) if spec.latch_class == cls]
        latch_waits = s.latch_waits[idx]
        waits = float(latch_waits[:, :, LW_COUNT].sum())
        latch_rows.append({
            "latch_class": cls,
            "waiting_requests_count": int(waits),
            "wait_time_ms": float(latch_waits[:, :, LW_TIME].sum()) / 1000.0,
            "max_wait_time_ms": float(latch_waits[:, :, LW_MAX].max()) / 1000.0,
            "acquires": int(s.latches[idx, L_ACQUIRES].sum()),
            # per-acquire wait percentiles over the sampled acquires of this class's latches
            **dict(zip(("p50_wait_ms", "p95_wait_ms", "p99_wait_ms"),
                       _percentiles(samples[np.isin(sample_latch, idx)], [50, 95, 99]))),
        })
        spin_rows.append({
            "name": cls,
            "collisions": int(s.latches[idx, L_COLLISIONS].sum()),
            "spins": int(s.latches[idx, L_SPINS].sum()),
            "backoffs": int(s.latches[idx, L_BACKOFFS].sum()),
        })

    def wait_row(name: str, latch_waits: np.ndarray) -> dict[str, Any]:
        return {
            "wait_type": name,
            "waiting_tasks_count": int(latch_waits[:, LW_COUNT].sum()),
            "wait_time_ms": float(latch_waits[:, LW_TIME].sum()) / 1000.0,
            "max_wait_time_ms": float(latch_waits[:, LW_MAX].max()) / 1000.0,
            "signal_wait_time_ms": float(latch_waits[:, LW_SIGNAL_TIME].sum()) / 1000.0,
        }

    prefixes = list(dict.fromkeys(spec.wait_prefix for spec in wl.latches if not spec.wait_type))
    for prefix in prefixes:
        idx = [k for k, spec in enumerate(wl.latches) if spec.wait_prefix == prefix and not spec.wait_type]
        shown = set().union(*(wl.latches[k].shown_modes for k in idx))
        for mode, mode_name in enumerate(MODE_NAMES):
            latch_waits = s.latch_waits[idx, mode]
            if latch_waits[:, LW_COUNT].sum() == 0 and mode_name not in shown:
                continue
            wait_rows.append(wait_row(f"{prefix}_{mode_name}", latch_waits))
    for name in dict.fromkeys(spec.wait_type for spec in wl.latches if spec.wait_type):
        idx = [k for k, spec in enumerate(wl.latches) if spec.wait_type == name]
        wait_rows.append(wait_row(name, s.latch_waits[idx, MODE_NAMES.index("EX")]))  # a gate is taken in EX only
    wait_rows += _query_wait_rows(s, wl)
    wait_rows.append({
        "wait_type": "SOS_SCHEDULER_YIELD",
        "waiting_tasks_count": int(s.run_cells[G_YIELDS]),
        "wait_time_ms": float(s.run_times[GF_YIELD_WAIT]) / 1000.0,
        "max_wait_time_ms": float(s.run_times[GF_YIELD_MAX]) / 1000.0,
        "signal_wait_time_ms": float(s.run_times[GF_YIELD_WAIT]) / 1000.0,
    })

    busy = s.scheduler_times[:, SF_BUSY] / 1000.0
    schedulers = pd.DataFrame({
        "scheduler": np.arange(wl.schedulers),
        "busy_ms": busy,
        "idle_ms": elapsed_us / 1000.0 - busy,
        "context_switches": s.schedulers[:, S_SWITCHES],
    })
    workers = pd.DataFrame({
        "worker": np.arange(len(wl.worker_start)),
        "scheduler": s.workers[:, W_SCHEDULER],
        "kind": wl.worker_kind,
        "acquires": s.workers[:, W_ACQUIRES],
        "latch_wait_ms": s.worker_times[:, WF_LATCH_WAIT] / 1000.0,
        "cpu_ms": s.worker_times[:, WF_CPU] / 1000.0,
        "spin_ms": s.worker_times[:, WF_SPIN] / 1000.0,
    })
    trace = None
    if s.trace_i.shape[0]:
        n = int(s.run_cells[G_TRACE_USED])
        trace = pd.DataFrame({
            "worker": s.trace_i[:n, 0],
            "scheduler": s.trace_i[:n, 1],
            "state": pd.Categorical.from_codes(s.trace_i[:n, 2], TRACE_STATES),
            "start_ms": s.trace_f[:n, 0] / 1000.0,
            "end_ms": s.trace_f[:n, 1] / 1000.0,
        })
    log = None
    if s.log_i.shape[0]:
        n = int(s.run_cells[G_LOG_USED])
        log = pd.DataFrame({
            "worker": s.log_i[:n, AL_WORKER], "latch": s.log_i[:n, AL_LATCH],
            "mode": [MODE_NAMES[m] for m in s.log_i[:n, AL_MODE]],
            "suspended": s.log_i[:n, AL_SUSPENDED].astype(bool),
            "queue_seq": s.log_i[:n, AL_QUEUE_SEQ],
            "request_ms": s.log_f[:n, ALF_REQUEST] / 1000.0,
            "grant_ms": s.log_f[:n, ALF_GRANT] / 1000.0,
            "run_ms": s.log_f[:n, ALF_RUN] / 1000.0,
            "release_ms": s.log_f[:n, ALF_RELEASE] / 1000.0,
        })
    units = wl.work_units if wl.work_units >= 0 else (int(s.latches[0, L_ACQUIRES]) if len(wl.latches) else 0)
    if truncated:
        units = int(s.latches[0, L_ACQUIRES]) if len(wl.latches) else 0
    if wl.count_units:
        units = int(s.run_cells[G_UNITS_DONE])
    extra = dict(wl.extra)
    extra.update({
        "latency_sum_ms": float(s.latch_times[:, LF_LATENCY_SUM].sum()) / 1000.0,
        "queue_area_ms": float(s.latch_times[:, LF_QUEUE_AREA].sum()) / 1000.0,
        "queue_residence_ms": float(s.latch_times[:, LF_QUEUE_RESIDENCE].sum()) / 1000.0,
        "events": int(s.run_cells[G_EVENTS]),
    })
    if wl.count_units:
        extra["units"] = int(s.run_cells[G_UNITS_DONE])
    if wl.collect is not None:
        extra.update(wl.collect(s))
    return Result(
        scenario=scenario, params=params, seed=seed,
        elapsed_ms=elapsed_us / 1000.0,
        throughput_per_s=units / (elapsed_us / 1e6) if elapsed_us > 0 else 0.0,
        truncated=truncated, truncated_reason=reason,
        latch_stats=pd.DataFrame(latch_rows, columns=LATCH_COLUMNS), wait_stats=pd.DataFrame(wait_rows),
        spin_stats=pd.DataFrame(spin_rows, columns=SPIN_COLUMNS), schedulers=schedulers, workers=workers,
        trace=trace, acquire_wait_ms=samples, acquire_log=log, extra=extra,
    )
