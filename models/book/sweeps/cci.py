"""Explorer grid for the memory chapter: concurrent inserts x MAXDOP x max server memory x build.

Obbish's CU14 setup (:data:`models.book.analysis.cci.SETUP`: 4 rowgroups per insert, 19.07 us per row
compressed, 1,000 MB asked per parallel worker, 8 schedulers), every insert started at once.  The
model draws no random numbers here (fixed CPU bursts, no arrival jitter), so one run per point is the
answer and its confidence interval is zero: ``tests/test_sweeps.py`` checks that two seeds agree.
"""

from models.book.analysis.cci import SETUP
from models.book.sweep import Sweep

SWEEP = Sweep(
    name="cci",
    scenario="cci-insert",
    grid={
        "queries": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16],
        "maxdop": [1, 2, 4, 8],
        "max_server_memory_mb": [4_000, 8_000, 16_000, 32_000],
        "behaviour": ["rtm", "cu14"],
    },
    fixed=dict(SETUP, seed=1),
    replications=1,
    measure="query",
    doc=__doc__,
)
