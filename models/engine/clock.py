"""The engine's clock: every time is a whole number of ticks of 2**-10 us, held in a float64.

Each duration is rounded to the tick where it enters the engine (parameters,
program constants, random draws).  Sums and differences of whole ticks are
exact in float64 up to 2**53 ticks (about 100 days), so a 4 ms quantum is
used up at exactly 4000 us however many bursts it took, and events that should
coincide do.  Floating-point times without ticks drifted: ``(t + 4000) - t``
can be 3999.9999999995, and a worker then ran a second quantum.  A tick
(0.98 ns) is far below any cost the book models.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from models.engine.jit import JIT

TICKS_PER_US = 1024.0
TICK_US = 1.0 / TICKS_PER_US


@njit(**JIT)
def on_tick(us):
    """``us`` rounded to the nearest whole tick (ties to even); exact for every |us| below 2**43."""
    return np.rint(us * TICKS_PER_US) * TICK_US


def to_ticks(us: float | np.ndarray) -> float | np.ndarray:
    """The Python-side twin of :func:`on_tick`, for parameters and arrays before a run."""
    rounded = np.rint(np.asarray(us, dtype=np.float64) * TICKS_PER_US) * TICK_US
    return float(rounded) if rounded.ndim == 0 else rounded
