"""Explorer grid for the fairness chapter: White's insert at 1/256 scale, fair against unfair.

The calibrated setup of :mod:`models.book.analysis.fairness` with 262,144 rows, over
MAXDOP (up to 11 on White's 12 schedulers: his laptop's 12 logical CPUs, the
12th scheduler the parent task's; the model has no hyperthreading), the latch
hold (half, once, twice and four times the derived hold), policy and the spin
cycle (rounds of 0.5 us before a back-off: 5, 15 and the fitted 50 us); 20
seeds per point.  The quantum is not a dimension: with one
worker per scheduler nothing waits for a quantum to end, so it changes no run
here (and SQL Server's 4 ms quantum is not configurable).
"""

from models.book.analysis.fairness import HOLD_US, LAPTOP_SCHEDULERS, SETUP, SPIN_ROUNDS
from models.book.sweep import Sweep

_FIXED = {k: v for k, v in SETUP.items() if k not in ("maxdop", "spin_rounds", "hold_us")}
_FIXED.update(rows=262_144, schedulers=LAPTOP_SCHEDULERS, seed=1)

SWEEP = Sweep(
    name="fairness",
    scenario="parallel-insert",
    grid={
        "maxdop": [2, 4, 6, 8, 10, 11],
        "hold_us": [round(HOLD_US * k, 1) for k in (0.5, 1, 2, 4)],
        "policy": ["fair", "unfair"],
        "spin_rounds": [10, 30, SPIN_ROUNDS],
    },
    fixed=_FIXED,
    replications=20,
    doc=__doc__,
)
