"""Explorer grid for the appendix: the convoy latch against M/D/1 and M/M/1, and what a hand-off adds.

Ten Poisson runs of 50,000 requests per point (hold 2 ms, no context-switch
cost); with ``wakeup_us`` = 0 the mean wait is the Pollaczek-Khinchine value.
Each point runs ten seeds of its own (``seeds_per_point``: point k uses seeds
10k + 1 to 10k + 10), so the points' errors against the formulas are
independent, where shared seeds would move every point's error together.
"""

from models.book.sweep import Sweep

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
    seeds_per_point=True,
    doc=__doc__,
)
