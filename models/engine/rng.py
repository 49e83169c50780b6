"""A seeded SplitMix64 generator in compiled code, so a run depends only on its seed.

numba's own ``np.random`` state is global to the process; a generator that
lives in a one-element array travels with the run's state instead, gives the
same stream on every machine, and survives the run being split into chunks.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.clock import on_tick
from models.engine.jit import JIT

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


def seed_state(seed: int) -> np.ndarray:
    """A fresh generator state for ``seed``: the seed scrambled by SplitMix64's own finaliser.

    Scrambling matters: SplitMix64 steps its state by a constant, so states
    ``seed`` and ``seed + 1`` (unscrambled) would give the same stream shifted
    by one draw.
    """
    z = (seed + 0x5851F42D4C957F2D) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    return np.array([z ^ (z >> 31)], dtype=np.uint64)


@njit(**JIT)
def next_u64(rng):
    """Advance the generator and return 64 random bits."""
    rng[0] += _GOLDEN
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(**JIT)
def uniform(rng):
    """A uniform draw in [0, 1)."""
    return float(next_u64(rng) >> np.uint64(11)) * _TWO_TO_MINUS_53


@njit(**JIT)
def exponential(rng, mean):
    """An exponential draw with the given mean."""
    return -mean * np.log1p(-uniform(rng))


@njit(**JIT)
def start_ahead(rng, ahead, k):
    """Compute the first exponential draw's logarithm into ``ahead[k]`` (see :func:`draw`)."""
    ahead[k] = np.log1p(-uniform(rng))


@njit(**JIT)
def draw(rng, ahead, k, dist, mean):
    """A duration in whole clock ticks: ``mean`` itself when ``dist`` is 0 (fixed; the engine puts
    fixed durations on the tick once, before the run), else an exponential draw rounded to the tick.

    ``ahead[k]`` holds ``log1p(-u)`` of this draw, computed at the previous one
    (:func:`start_ahead` computes the first).  The value is exactly
    ``exponential(rng, mean)``'s; computing the logarithm one draw early takes
    it off the path from one event to the next (nothing waits for it), which
    made the engine's loop 15 to 25% faster (``benchmarks/engine.py``: 0.78x to
    0.89x the bare heap simulation at 8 workers, 0.80x to 0.91x at 64).
    """
    if dist == 0:
        return mean
    log = ahead[k]
    ahead[k] = np.log1p(-uniform(rng))
    return on_tick(-mean * log)


@njit(**JIT)
def poisson_arrivals(rng, arrive, first, gap):
    """Fill arrival times of workers ``first..`` with a Poisson stream from time 0 (gaps in whole ticks)."""
    t = 0.0
    for w in range(first, arrive.shape[0]):
        t += on_tick(exponential(rng, gap))
        arrive[w] = t
