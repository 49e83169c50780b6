"""The scheduling chapter's derived figures: what a shorter scheduler quantum costs a latch's throughput.

One run of the chapter's timeline workload is one seed's draw of think and hold times, so a change between two
quanta is read over many seeds, paired by seed (both quanta see the same draws), with a t interval from
:mod:`models.statistics`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import models
from models.statistics import mean_ci

__all__ = ["QUANTUM_SEEDS", "quantum_loss_pct"]

QUANTUM_SEEDS = tuple(range(1, 21))  # the 20 seeds the prose's interval is read over


def quantum_loss_pct(workload: Mapping[str, Any], short_ms: float = 1.0, long_ms: float = 4.0,
                     seeds: Iterable[int] = QUANTUM_SEEDS) -> tuple[float, float]:
    """Throughput lost with a ``short_ms`` quantum against a ``long_ms`` one, in % of the long one's, over ``seeds``.

    Each seed runs the ``closed-latch`` ``workload`` at both quanta; the result is the mean of the per-seed losses and
    its 95 % half-width (positive: the short quantum is slower).  Pairing by seed takes the draws' own spread out.
    """
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("seeds=() is out of range: give one or more seeds")
    if short_ms <= 0 or long_ms <= 0:
        raise ValueError(f"short_ms={short_ms} and long_ms={long_ms} are out of range: use quanta above 0 ms")
    throughput = {quantum: [models.run("closed-latch", quantum_ms=quantum, **dict(workload, seed=seed)).throughput_per_s
                            for seed in seeds] for quantum in (long_ms, short_ms)}
    change_pct, half_width = mean_ci([100 * (short / long - 1)
                                      for long, short in zip(throughput[long_ms], throughput[short_ms])])
    return -change_pct, half_width
