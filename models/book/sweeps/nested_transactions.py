"""Explorer grid for the nested-transactions chapter: MAXDOP x quantum x policy x co-tenant.

Obbish's fast query at 1/256 of its rows (the main setup of :mod:`models.book.analysis.nested`, hand-off 9.7 us:
7 rows a page, so 25,368 rows fill 453 whole extents and write 1,359 log records, 347,904 at full scale), so each of the 20 seeds per point runs in
a few milliseconds.  The quantum is a knob for understanding only: SQL Server's is fixed at 4 ms.
"""

from models.book.analysis.nested import SETUP, cpu_per_row_us
from models.book.sweep import Sweep

SWEEP = Sweep(
    name="nested_transactions",
    scenario="parallel-insert",
    grid={
        "maxdop": [1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24],
        "quantum_ms": [2.0, 4.0],
        "policy": ["fair", "unfair"],
        "busy_scheduler": [-1, 0],
    },
    fixed=dict(SETUP, rows=25_368, cpu_per_row_us=round(cpu_per_row_us("fast", SETUP["hold_us"]), 6), seed=1),
    replications=20,
    doc=__doc__,
)
