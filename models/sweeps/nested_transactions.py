"""Explorer grid for the nested-transactions chapter: MAXDOP x quantum x policy x co-tenant.

Obbish's fast query at 1/256 of its rows (the calibrated setup of
:mod:`models.analysis.nested`), so each of the 20 seeds per point runs in a few milliseconds.
"""

from models.analysis.nested import SETUP, cpu_per_row_us
from models.sweep import Sweep

SWEEP = Sweep(
    name="nested_transactions",
    scenario="parallel-insert",
    grid={
        "maxdop": [1, 2, 4, 6, 8, 12, 16, 20, 24],
        "quantum_ms": [2.0, 4.0],
        "policy": ["fair", "unfair"],
        "busy_scheduler": [-1, 0],
    },
    fixed=dict(SETUP, rows=375_000, cpu_per_row_us=round(cpu_per_row_us("fast", SETUP["hold_us"]), 6), seed=1),
    replications=20,
    doc=__doc__,
)
