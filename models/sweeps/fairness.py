"""Explorer grid for the fairness chapter: White's insert at 1/256 scale, fair against unfair.

The calibrated setup of :mod:`models.analysis.fairness` with 262,144 rows, over
MAXDOP, quantum, policy and spin-round length; 20 seeds per point.
"""

from models.analysis.fairness import SETUP
from models.sweep import Sweep

_FIXED = {k: v for k, v in SETUP.items() if k not in ("maxdop", "spin_us")}
_FIXED.update(rows=262_144, schedulers=17, seed=1)

SWEEP = Sweep(
    name="fairness",
    scenario="parallel-insert",
    grid={
        "maxdop": [2, 4, 6, 8, 11, 16],
        "quantum_ms": [1.0, 4.0],
        "policy": ["fair", "unfair"],
        "spin_us": [1.0, 3.0, 10.0],
    },
    fixed=_FIXED,
    replications=20,
    doc=__doc__,
)
