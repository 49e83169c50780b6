"""Explorer grid for chapter 1: workers sharing schedulers and one latch (closed-latch).

Each point runs 20 seeds of 4,000 latch acquires of 1 ms exponential think and 0.1 ms
exponential hold, with the engine's default hand-off costs, so the reader can
see CPU queueing (signal wait, SOS_SCHEDULER_YIELD) appear as workers outnumber
schedulers and shrink as the quantum grows.
"""

from models.book.sweep import Sweep

SWEEP = Sweep(
    name="scheduling",
    scenario="closed-latch",
    grid={
        "workers": [1, 2, 4, 8, 16],
        "schedulers": [1, 2, 4, 8],
        "quantum_ms": [1.0, 4.0, 16.0],
        "policy": ["fair", "unfair"],
    },
    fixed={"think_ms": 1.0, "hold_ms": 0.1, "acquires": 4000, "seed": 1},
    replications=20,
    doc=__doc__,
)
