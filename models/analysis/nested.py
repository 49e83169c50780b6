"""The nested-transactions chapter: Obbish's SELECT INTO, its MAXDOP curve and the busy-scheduler floor.

Obbish (2019) measured about 360,000 NESTING_TRANSACTION_FULL acquires (3 per
extent, minimal logging) on 24 schedulers; the model runs 1/64 of the rows
with the same costs per log record, so times scale by :data:`SCALE`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

import models

SCALE = 64
LATCHES = 360_000          # Obbish's round figure for both queries
QUANTUM_MS = 4.0
MAXDOP1_MS = {"fast": 9_565.0, "slow": 17_101.0}   # measured serial run times
ROWS_PER_RECORD = 100 * 8 / 3                      # 100 rows a page, 8 pages an extent, 3 records an extent


def cpu_per_record_us(query: str) -> float:
    """CPU between two log records, from the serial run time: MAXDOP 1 time / latches."""
    return MAXDOP1_MS[query] * 1000.0 / LATCHES


def latches_per_quantum(query: str) -> float:
    """Obbish's measure: latches a worker could take in one 4 ms quantum without waiting."""
    return LATCHES / (MAXDOP1_MS[query] / QUANTUM_MS)


def cpu_per_row_us(query: str, hold_us: float) -> float:
    """The scenario's per-row CPU that reproduces the serial time (the hold is paid serially too)."""
    return (cpu_per_record_us(query) - hold_us) / ROWS_PER_RECORD


# hold 1.5 us and hand-off 1.5 us: about 3 us a record through the latch, so it saturates near
# MAXDOP 26.6 / 3 ~ 8-9 (the measured optimum); contender cost 0.3 us per waiting worker makes
# elapsed time rise past it (the coherency term; 0 gives the flat curve of plain queueing theory).
SETUP: dict[str, Any] = dict(
    schedulers=24, rows=1_500_000, rows_per_page=100, logging="minimal", cpu_per_log_record_us=0.0,
    hold_us=1.5, wakeup_us=1.0, context_switch_us=0.5, contender_cost_us=0.3,
)


def run(query: str = "fast", **overrides: Any) -> "models.Result":
    """The calibrated insert for the fast or slow query."""
    params = dict(SETUP, cpu_per_row_us=cpu_per_row_us(query, SETUP["hold_us"]))
    params.update(overrides)
    return models.run("parallel-insert", **params)


def maxdop_curve(maxdops=(1, 2, 4, 6, 8, 12, 16, 20, 24), **overrides: Any) -> pd.DataFrame:
    """Elapsed time (scaled to the full insert) and total latch wait against MAXDOP for both queries."""
    rows = []
    for query in ("fast", "slow"):
        for n in maxdops:
            res = run(query, maxdop=n, **overrides)
            latch = res.latch_stats.iloc[0]
            rows.append({"query": query, "maxdop": n, "elapsed_s": res.elapsed_ms * SCALE / 1000.0,
                         "latch_wait_s": latch["wait_time_ms"] * SCALE / 1000.0,
                         "waited_pct": 100 * latch["waiting_requests_count"] / max(latch["acquires"], 1)})
    return pd.DataFrame(rows)


def tipping_point(curve: pd.DataFrame, query: str) -> int:
    """The MAXDOP with the shortest elapsed time."""
    part = curve[curve["query"] == query]
    return int(part.loc[part["elapsed_s"].idxmin(), "maxdop"])


def floor_ms(result, scheduler: int = 0) -> dict[str, float]:
    """Obbish's floor: acquires by the worker on the shared scheduler x quantum x fraction that waited."""
    log = result.acquire_log
    worker = int(result.workers.query("kind == 'task' and scheduler == @scheduler")["worker"].iloc[0])
    mine = log[log["worker"] == worker]
    fraction = float(mine["suspended"].mean())
    quantum = float(result.params["quantum_ms"])
    return {"acquires": float(len(mine)), "fraction_waited": fraction, "quantum_ms": quantum,
            "floor_ms": len(mine) * quantum * fraction, "elapsed_ms": result.elapsed_ms}


def busy_table(maxdops=(8, 16, 24), quanta=(2.0, 4.0), query: str = "fast") -> pd.DataFrame:
    """The co-tenant's slowdown and the floor formula against the simulated elapsed time."""
    rows = []
    for n in maxdops:
        base = run(query, maxdop=n)
        for q in quanta:
            res = run(query, maxdop=n, quantum_ms=q, busy_scheduler=0, record_acquires=10_000)
            row = {"maxdop": n, **floor_ms(res), "alone_ms": base.elapsed_ms if q == QUANTUM_MS else float("nan")}
            row["slowdown"] = res.elapsed_ms / base.elapsed_ms
            rows.append(row)
    return pd.DataFrame(rows)
