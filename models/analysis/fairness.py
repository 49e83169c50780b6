"""The fairness chapter's setup and tables: White's parallel insert, fair against unfair.

White (2022) inserted 64 x 1024 x 1024 rows at MAXDOP 11 on 12 schedulers with
full logging and measured the NESTING_TRANSACTION_FULL latch fair (default)
and unfair (trace flag 3933).  The model runs 1/64 of the rows with the same
per-record costs, so every count scales by 64 and every time per record stays
the same; :data:`SCALE` converts back for the comparison table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import models

SCALE = 64
# Calibrated from the article, each number explained in the chapter:
#  - 270 rows per page: a bigint, int and datetime row is about 30 bytes on disk.
#  - full logging: one page-image log record per page plus 3 allocation records per extent.
#  - hold 5 us, hand-off 12 us (wake-up 10 + switch 2): fair's 5.5 s for ~326,000 records is ~17 us
#    per record once every acquire waits (hold + hand-off); unfair's latch is then far from saturated.
#  - 0.7 us per row: unfair's 4.5 s over 11 workers leaves ~150 us of CPU per record per worker.
#  - spin 3 us rounds of 400 spins: about as many spins per collision as the article's 658.
SETUP: dict[str, Any] = dict(
    maxdop=11, schedulers=12, rows=1_048_576, rows_per_page=270, logging="full",
    cpu_per_row_us=0.7, cpu_per_log_record_us=5.0, hold_us=5.0, wakeup_us=10.0,
    context_switch_us=2.0, spin_us=3.0, spins_per_round=400, max_backoffs=3, backoff_us=5.0,
)

# White (2022), SQL Server 2019 CU17, the published tables.
PUBLISHED = {
    "fair": {"elapsed_s": 5.5, "latch_waits": 271_458, "max_wait_ms": 22.0, "collisions": 0,
             "spins": 0, "backoffs": 0},
    "unfair": {"elapsed_s": 4.5, "latch_waits": 56, "max_wait_ms": 1.0, "collisions": 337_110,
               "spins": 221_891_800, "backoffs": 41},
}


def run_policy(policy: str, **overrides: Any) -> "models.Result":
    """The calibrated insert under ``policy`` (any parameter can be overridden)."""
    return models.run("parallel-insert", **dict(SETUP, policy=policy, **overrides))


def model_figures(result) -> dict[str, float]:
    """The figures White published, from one model run, scaled up to the full row count."""
    latch, spin = result.latch_stats.iloc[0], result.spin_stats.iloc[0]
    return {"elapsed_s": result.elapsed_ms * SCALE / 1000.0,
            "latch_waits": float(latch["waiting_requests_count"] * SCALE),
            "max_wait_ms": float(latch["max_wait_time_ms"]),
            "collisions": float(spin["collisions"] * SCALE), "spins": float(spin["spins"] * SCALE),
            "backoffs": float(spin["backoffs"] * SCALE)}


def comparison(fair, unfair) -> pd.DataFrame:
    """Model against measurement for both policies, with the fair/unfair ratios."""
    model = {"fair": model_figures(fair), "unfair": model_figures(unfair)}
    rows = []
    for key in ("elapsed_s", "latch_waits", "max_wait_ms"):
        pf, pu = PUBLISHED["fair"][key], PUBLISHED["unfair"][key]
        mf, mu = model["fair"][key], model["unfair"][key]
        rows.append({"figure": key, "published fair": pf, "published unfair": pu,
                     "published fair/unfair": pf / pu, "model fair": mf, "model unfair": mu,
                     "model fair/unfair": mf / mu if mu else float("inf")})
    for key in ("collisions", "spins", "backoffs"):
        rows.append({"figure": f"unfair {key}", "published fair": np.nan,
                     "published unfair": PUBLISHED["unfair"][key], "published fair/unfair": np.nan,
                     "model fair": np.nan, "model unfair": model["unfair"][key],
                     "model fair/unfair": np.nan})
    return pd.DataFrame(rows)


def worst_share(result) -> float:
    """The worst-off worker's acquires as a share of the mean, while every worker still runs.

    Counted from the acquire log up to the moment the first worker finishes,
    so a fixed share of work per worker cannot hide starvation.
    """
    log = result.acquire_log
    tasks = result.workers[result.workers["kind"] == "task"]
    last = log.groupby("worker")["run_ms"].max()
    window = float(last.min())
    counts = log[log["run_ms"] <= window].groupby("worker").size().reindex(tasks["worker"], fill_value=0)
    return float(counts.min() / counts.mean())


def starvation_table(maxdops=(2, 4, 8, 11, 16), rows: int = 262_144) -> pd.DataFrame:
    """Worst-off worker's share of acquires under each policy as MAXDOP (contention) rises."""
    out = []
    for n in maxdops:
        for policy in ("fair", "unfair"):
            res = models.run("parallel-insert", record_acquires=20_000,
                             **dict(SETUP, policy=policy, maxdop=n, schedulers=max(12, n + 1), rows=rows))
            out.append({"maxdop": n, "policy": policy, "worst_share": worst_share(res),
                        "p99_wait_ms": float(res.latch_stats.loc[0, "p99_wait_ms"]),
                        "max_wait_ms": float(res.latch_stats.loc[0, "max_wait_time_ms"])})
    return pd.DataFrame(out)
