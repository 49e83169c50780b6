"""Result records and the statistics both cross-check simulators share.

The SimPy and Ciw versions only produce raw timestamps per latch request:
when it was requested, when ownership was granted, when the holder started
running with the latch, and when it released it. Everything a test compares
(mean wait, queue length, throughput, utilisation) is computed here, once, so
that a disagreement between the two libraries can only come from the
simulations themselves and never from two ways of counting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DISTS = ("fixed", "exponential")


def check_common(hold_ms: float, hold_dist: str, handoff_ms: float, count: int, warmup: int | None,
                 count_name: str) -> int:
    """Validate the parameters both systems share and return the resolved warm-up count."""
    if not hold_ms > 0:
        raise ValueError(f"hold_ms={hold_ms!r}: must be > 0")
    if hold_dist not in DISTS:
        raise ValueError(f"hold_dist={hold_dist!r}: must be one of {DISTS}")
    if not handoff_ms >= 0:
        raise ValueError(f"handoff_ms={handoff_ms!r}: must be >= 0")
    if int(count) != count or count < 2:
        raise ValueError(f"{count_name}={count!r}: must be an integer >= 2")
    if warmup is None:
        warmup = int(count) // 10
    if int(warmup) != warmup or not 0 <= warmup < count - 1:
        raise ValueError(f"warmup={warmup!r}: must be an integer in [0, {count_name} - 2]")
    return int(warmup)


def check_closed(workers: int, think_ms: float, think_dist: str) -> None:
    """Check the closed system's own parameters (the shared ones are in check_common)."""
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers!r}: must be an integer >= 1")
    if think_dist not in ("fixed", "exponential") or not think_ms >= 0:
        raise ValueError(f"think_ms={think_ms!r}, think_dist={think_dist!r}: need think_ms >= 0 and "
                         "think_dist 'fixed' or 'exponential'")


@dataclass(frozen=True)
class OpenResult:
    """Open ("convoy") run: per-request waits after warm-up and the usual queue measures."""

    simulator: str
    arrival_rate_per_ms: float
    hold_ms: float
    hold_dist: str
    handoff_ms: float
    n_requests: int
    warmup: int
    seed: int
    waits_ms: np.ndarray = field(repr=False)
    mean_wait_ms: float
    mean_queue_length: float
    throughput_per_ms: float
    window_ms: float
    waited_fraction: float


@dataclass(frozen=True)
class ClosedResult:
    """Closed ("closed-latch", machine repairman) run: throughput, response, utilisation, waits."""

    simulator: str
    workers: int
    hold_ms: float
    hold_dist: str
    handoff_ms: float
    think_ms: float
    think_dist: str
    n_acquires: int
    warmup: int
    seed: int
    waits_ms: np.ndarray = field(repr=False)
    release_ms: np.ndarray = field(repr=False)
    mean_wait_ms: float
    mean_response_ms: float
    throughput_per_ms: float
    utilisation_held: float
    utilisation_owned: float
    window_ms: float
    waited_fraction: float
    elapsed_ms: float


def summarise_open(simulator: str, params: dict, arrive: np.ndarray, start: np.ndarray,
                   end: np.ndarray, warmup: int) -> OpenResult:
    """Turn per-request (arrival, hold start, release) times, in arrival order, into an OpenResult."""
    arrive, start, end = (np.asarray(a, dtype=np.float64) for a in (arrive, start, end))
    n = arrive.size
    t0, t1 = arrive[warmup], arrive[n - 1]
    length = t1 - t0
    waits = start[warmup:] - arrive[warmup:]
    # time-average number of requests that arrived but do not yet run with the latch
    overlap = np.clip(np.minimum(start, t1) - np.maximum(arrive, t0), 0.0, None)
    done = np.count_nonzero((end > t0) & (end <= t1))
    return OpenResult(
        simulator=simulator, waits_ms=waits, mean_wait_ms=float(waits.mean()),
        mean_queue_length=float(overlap.sum() / length), throughput_per_ms=float(done / length),
        window_ms=float(length), waited_fraction=float(np.mean(waits > 0)), warmup=warmup, **params,
    )


def summarise_closed(simulator: str, params: dict, request: np.ndarray, grant: np.ndarray,
                     start: np.ndarray, end: np.ndarray, warmup: int) -> ClosedResult:
    """Turn per-acquire (request, grant, hold start, release) times, in release order, into a ClosedResult."""
    request, grant, start, end = (np.asarray(a, dtype=np.float64) for a in (request, grant, start, end))
    n = end.size
    t0 = end[warmup - 1] if warmup > 0 else 0.0
    t1 = end[n - 1]
    length = t1 - t0
    sl = slice(warmup, n)
    waits = start[sl] - request[sl]
    return ClosedResult(
        simulator=simulator, waits_ms=waits, release_ms=end[sl].copy(), mean_wait_ms=float(waits.mean()),
        mean_response_ms=float((end[sl] - request[sl]).mean()),
        throughput_per_ms=float((n - warmup) / length),
        utilisation_held=float((end[sl] - start[sl]).sum() / length),
        utilisation_owned=float((end[sl] - grant[sl]).sum() / length),
        window_ms=float(length), waited_fraction=float(np.mean(waits > 0)), elapsed_ms=float(t1),
        warmup=warmup, **params,
    )
