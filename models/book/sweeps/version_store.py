"""Explorer grid for the version-store chapter: connections x versioning x version size x latch policy.

Randal's setup (:data:`models.book.analysis.version_store.SETUP`: 12 schedulers, 125 us per update, the fitted
5.37 us hold) over a 200 ms window, 5 seeds per point.
"""

from models.book.analysis.version_store import SETUP
from models.book.sweep import Sweep

SWEEP = Sweep(
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
