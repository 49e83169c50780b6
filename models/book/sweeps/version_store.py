"""Explorer grid for the version-store chapter: connections x versioning x version size x latch policy.

Randal's setup (:data:`models.book.analysis.version_store.SETUP`: 12 schedulers, 125 us per update) over a
200 ms window, 5 seeds per point, each latch policy with its own hold fitted to Randal's 60,000
(:data:`~models.book.analysis.version_store.HOLD_BY_POLICY`: 5.37 us fair, 11.32 us unfair).
"""

from __future__ import annotations

from typing import Any

from models.book.analysis.version_store import HOLD_BY_POLICY, SETUP
from models.book.sweep import Sweep


class PolicyHoldSweep(Sweep):
    """A sweep whose every point takes the hold fitted for its latch policy."""

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as a parameter dict, with ``hold_us`` set from its ``policy``."""
        return [dict(point, hold_us=HOLD_BY_POLICY[point["policy"]]) for point in super().points()]


SWEEP = PolicyHoldSweep(
    name="version_store",
    scenario="version-store",
    grid={
        "connections": [1, 2, 4, 6, 8, 10, 12, 14, 16, 24, 32],
        "versioning": ["off", "on"],
        "row_bytes": [100, 434, 2000, 8000, 16000],
        "policy": ["fair", "unfair"],
    },
    fixed=dict(SETUP, window_ms=200.0, seed=1),
    replications=5,
    doc=__doc__,
)
