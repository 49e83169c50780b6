"""Explorer grid for the appendix: the convoy latch against M/D/1 and M/M/1, and what a hand-off adds.

Ten Poisson runs (seeds 1-10) of 50,000 requests per point (hold 2 ms, no
context-switch cost); with ``wakeup_us`` = 0 the mean wait is the Pollaczek-Khinchine value.
"""

from models.sweep import Sweep

SWEEP = Sweep(
    name="validation",
    scenario="convoy",
    grid={
        "arrival_rate_per_s": [50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0, 400.0, 425.0, 450.0],
        "hold_dist": ["fixed", "exponential"],
        "wakeup_us": [0.0, 100.0, 200.0],
    },
    fixed={"hold_ms": 2.0, "requests": 50_000, "context_switch_us": 0.0, "seed": 1},
    replications=10,
    doc=__doc__,
)
