"""The engine's convoy and closed-latch runs, summarised exactly like the SimPy and Ciw versions.

The engine is configured so that it should reduce to the same two systems:
fair policy, ``context_switch_us=0``, the hand-off as ``wakeup_us``, and enough
schedulers that a worker never waits for a CPU (64 for the open system, one
per worker for the closed one). Its acquire log gives request, grant, start of
hold and release of every acquire, which go through the same summary code as
the other two simulators.

One difference is handled here rather than hidden: the engine's closed-latch
scenario gives each worker a fixed share of the acquires, so near the end of a
run workers drop out and the latch is less contended. The adapter runs 25%
more acquires than asked and keeps the first ``n_acquires`` releases, all of
which happen while every worker is still active.
"""

from __future__ import annotations

import numpy as np

import models
from ._summary import ClosedResult, OpenResult, check_common, summarise_closed, summarise_open

__all__ = ["engine_convoy", "engine_closed_latch"]

CLOSED_EXTRA = 1.25


def engine_convoy(lam: float, hold_ms: float = 2.0, hold_dist: str = "fixed", handoff_ms: float = 0.0,
                  n_requests: int = 20000, seed: int = 1, warmup: int | None = None,
                  schedulers: int = 64) -> OpenResult:
    """Run the engine's "convoy" scenario as the open latch system (Poisson, fair, no CPU waits)."""
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_requests, warmup, "n_requests")
    n = int(n_requests)
    res = models.run("convoy", arrival_rate_per_s=lam * 1000.0, arrivals="poisson", hold_ms=hold_ms,
                     hold_dist=hold_dist, requests=n, schedulers=schedulers, context_switch_us=0.0,
                     wakeup_us=handoff_ms * 1000.0, policy="fair", seed=seed, record_acquires=n)
    log = res.acquire_log.sort_values("request_ms", kind="stable")
    params = dict(arrival_rate_per_ms=lam, hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  n_requests=n, seed=seed)
    return summarise_open("engine", params, log["request_ms"].to_numpy(), log["run_ms"].to_numpy(),
                          log["release_ms"].to_numpy(), warmup)


def engine_closed_latch(workers: int, hold_ms: float = 0.1, hold_dist: str = "exponential",
                        handoff_ms: float = 0.0, think_ms: float = 1.0, think_dist: str = "exponential",
                        n_acquires: int = 20000, seed: int = 1, warmup: int | None = None) -> ClosedResult:
    """Run the engine's "closed-latch" scenario as the machine-repairman system with a fair hand-off."""
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_acquires, warmup, "n_acquires")
    n = int(n_acquires)
    total = max(int(np.ceil(n * CLOSED_EXTRA)), int(workers))
    res = models.run("closed-latch", workers=int(workers), schedulers=int(workers), think_ms=think_ms,
                     think_dist=think_dist, hold_ms=hold_ms, hold_dist=hold_dist, acquires=total,
                     context_switch_us=0.0, wakeup_us=handoff_ms * 1000.0, policy="fair", seed=seed,
                     record_acquires=total)
    log = res.acquire_log.sort_values("release_ms", kind="stable").iloc[:n]
    params = dict(workers=int(workers), hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  think_ms=think_ms, think_dist=think_dist, n_acquires=n, seed=seed)
    return summarise_closed("engine", params, log["request_ms"].to_numpy(), log["grant_ms"].to_numpy(),
                            log["run_ms"].to_numpy(), log["release_ms"].to_numpy(), warmup)
