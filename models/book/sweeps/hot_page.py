"""Explorer grid for the hot-page chapter: sessions x key strategy x row size x flow control.

Poché's machine (:data:`models.book.analysis.hot_page.SETUP_002`: 16 schedulers, the chapter's 40 us hold of the
leaf latch (the throttled narrow waits' choice) and the queue's cost fitted there, 3.31 ms between calls) with 200
inserts per session, 5 seeds per point.  Wide rows are
:func:`models.book.analysis.hot_page.wide`'s costs at 8,035 bytes; the grid's row_bytes picks between them.
"""

from models.book.analysis.hot_page import SETUP_002
from models.book.sweep import Sweep


SWEEP = Sweep(
    name="hot_page",
    scenario="last-page-insert",
    grid={
        "sessions": [1, 4, 8, 16, 32, 64, 100, 200, 400],
        "key": ["identity", "guid", "reverse-bits", "hash-bucket", "partitioned"],
        "row_bytes": [60, 8035],
        "optimize_for_sequential_key": ["off", "on"],
    },
    # cpu_before_us is the narrow rows' value; wide rows do their extra work before the latch too, which
    # the grid cannot vary with row_bytes, so the explorer keeps the narrow CPU and shows the page cost alone.
    fixed=dict(SETUP_002, inserts_per_session=200, seed=1),
    replications=5,
    doc=__doc__,
)
