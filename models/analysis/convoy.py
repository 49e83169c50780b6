"""Helpers for the convoy chapter: capacities, queue length over time and time-to-convoy detection.

Everything here is a pure function of numbers or of a run's acquire log
(``Result.acquire_log`` from ``models.run(..., record_acquires=N)``), so the
chapter's claims can be tested without plotting anything.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["capacities", "md1_mean_wait_ms", "by_request", "queue_length", "queue_series",
           "wait_per_request_ahead", "convoy_onset_ms", "onset_summary"]


def capacities(hold_ms: float, handoff_us: float) -> tuple[float, float]:
    """Requests per second one EX latch can serve: (1/hold with no queue, 1/(hold + hand-off) with one)."""
    if hold_ms <= 0 or handoff_us < 0:
        raise ValueError(f"hold_ms={hold_ms} must be > 0 and handoff_us={handoff_us} >= 0")
    return 1000.0 / hold_ms, 1000.0 / (hold_ms + handoff_us / 1000.0)


def md1_mean_wait_ms(rate_per_s: float, hold_ms: float) -> float:
    """M/D/1 mean wait in queue, Wq = rho S / (2 (1 - rho)), in ms (inf at or above saturation)."""
    rho = rate_per_s * hold_ms / 1000.0
    if rho < 0:
        raise ValueError(f"rate_per_s={rate_per_s} must be >= 0")
    return math.inf if rho >= 1.0 else rho * hold_ms / (2.0 * (1.0 - rho))


def by_request(log: pd.DataFrame) -> pd.DataFrame:
    """The acquire log in request order with each request's wait (request -> running with the latch)."""
    out = log.sort_values(["request_ms", "queue_seq"], kind="stable").reset_index(drop=True)
    return out.assign(wait_ms=out["run_ms"] - out["request_ms"])


def queue_length(log: pd.DataFrame, times_ms: np.ndarray, *, include_holder: bool = False) -> np.ndarray:
    """How many requests wait for the latch at each time (requested, not yet running with it).

    With ``include_holder`` the request running with the latch counts too (requests in the system).
    """
    t = np.asarray(times_ms, dtype=float)
    ends = log["release_ms" if include_holder else "run_ms"].to_numpy()
    arrived = np.searchsorted(np.sort(log["request_ms"].to_numpy()), t, side="right")
    left = np.searchsorted(np.sort(ends), t, side="right")
    return (arrived - left).astype(int)


def queue_series(log: pd.DataFrame, until_ms: float, points: int = 400) -> pd.DataFrame:
    """Queue length sampled on an even time grid from 0 to ``until_ms`` (for a line chart)."""
    t = np.linspace(0.0, until_ms, points)
    return pd.DataFrame({"time_ms": t, "queue": queue_length(log, t)})


def wait_per_request_ahead(log: pd.DataFrame) -> float:
    """Least-squares slope of a request's wait against the requests waiting ahead of it (ms per request).

    Each waiter ahead must hold the latch (and, under a fair latch, be handed it) before this one runs,
    so the slope estimates the service time per request: the hold, plus the hand-off once a queue exists.
    """
    df = by_request(log)
    req = df["request_ms"].to_numpy()
    ahead = queue_length(df, req) - 1  # the request itself counts as waiting at its own request time
    ahead = np.maximum(ahead, 0)
    if np.ptp(ahead) == 0:
        raise ValueError("no variation in the queue ahead: the slope is undefined")
    slope, _ = np.polyfit(ahead, df["wait_ms"].to_numpy(), 1)
    return float(slope)


def convoy_onset_ms(request_ms: np.ndarray, wait_ms: np.ndarray, threshold_ms: float) -> float:
    """When the convoy formed: the request time from which every later request waited over the threshold.

    A convoy here is a wait above ``threshold_ms`` that never comes back down before the end of the
    run; NaN when the last request waited ``threshold_ms`` or less (no convoy at the end).
    ``request_ms`` must be in increasing order, ``wait_ms`` aligned with it.
    """
    t = np.asarray(request_ms, dtype=float)
    w = np.asarray(wait_ms, dtype=float)
    if t.shape != w.shape or t.size == 0:
        raise ValueError("request_ms and wait_ms must be non-empty and of equal length")
    if np.any(np.diff(t) < 0):
        raise ValueError("request_ms must be in increasing order")
    low = np.flatnonzero(w <= threshold_ms)
    if low.size == 0:
        return float(t[0])
    if low[-1] == t.size - 1:
        return math.nan
    return float(t[low[-1] + 1])


def onset_summary(onsets: pd.DataFrame, horizon_s: float) -> pd.DataFrame:
    """Per arrival rate: runs, share that convoyed within the horizon, and median time to convoy (s)."""
    rows = []
    for rate, grp in onsets.groupby("arrival_rate_per_s", sort=True):
        t = grp["time_to_convoy_s"].to_numpy(dtype=float)
        hit = np.isfinite(t) & (t <= horizon_s)
        censored = np.where(hit, t, math.inf)  # a run that never convoyed counts as "later than any"
        median = float(np.median(censored)) if len(t) else math.nan
        rows.append({"arrival_rate_per_s": float(rate), "runs": int(len(t)),
                     "convoyed": int(hit.sum()), "share": float(hit.mean()) if len(t) else 0.0,
                     "median_s": median if math.isfinite(median) else math.nan})
    return pd.DataFrame(rows)
