"""Explorer grid for the memory chapter: concurrent inserts x MAXDOP x max server memory x build.

Obbish's CU14 setup (:data:`models.book.analysis.cci.SETUP`: 4 rowgroups per insert, 19.07 us per row
compressed, 1,000 MB asked per parallel worker, 4 schedulers for his four-core desktop, the delta-store
rate a placeholder equal to the compression rate), every insert started at once.  MAXDOP stops at 4: a
query's parallel workers cannot outnumber the schedulers.  The explorer shows what became of the inserts
(granted, forced, 8645).  At MAXDOP 1 and 2 every insert runs longer than the 25 s time-out, so those counts
depend on neither the scheduler count nor the placeholder; at MAXDOP 4 an insert alone takes 20 s, and with
8 schedulers a grant would come back before the time-out, so there the counts are the four schedulers'.  The
model draws no random numbers here (fixed CPU bursts, no arrival jitter),
so one run per point is the answer and its confidence interval is zero: ``tests/test_sweeps.py`` checks that
two seeds agree.
"""

from models.book.analysis.cci import SETUP
from models.book.sweep import Sweep

SWEEP = Sweep(
    name="cci",
    scenario="cci-insert",
    grid={
        "queries": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16],
        "maxdop": [1, 2, 4],
        "max_server_memory_mb": [4_000, 8_000, 16_000, 32_000],
        "behaviour": ["rtm", "cu14"],
    },
    fixed=dict(SETUP, seed=1),
    replications=1,
    measure="query",
    doc=__doc__,
)
