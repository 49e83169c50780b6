"""Chapter 9's test of an assumed value: the example fitted at other values of ``cpu_under_us``.

The row's own work under the latch is assumed (chapter 5's 4.16 us); the hold the counters show is that work
and the queue's cost together.  :func:`models.book.analysis.your_server.cpu_under_test` fits the example at
each of :data:`models.book.analysis.your_server.CPU_UNDER_VALUES` and records whether the fitted model still
reproduces the counts it was not fitted to, and the flow-control and batching gains where it does.  It does so
twice: for the example as stored (written at 4.16 us) and for the same window written at chapter 5's other end,
40 us with the queue's cost refitted there (:data:`models.book.analysis.your_server.CPU_UNDER_WRITTEN`).
``book/data/cpu_under_test.csv`` holds one row per value written and value assumed.  Run it with ``python -m models sweep cpu_under_test``
(a few minutes on one core).
"""

from __future__ import annotations

from pathlib import Path

from models.book.analysis import your_server
from models.book.stored import data_dir
from models.book.sweep import Study
from models.book.sweep import write_table


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Fit the example at each value and write the table (``quick``: the two values 4.16 and 40 only)."""
    out_dir = data_dir() if out_dir is None else out_dir
    if quick:
        table = your_server.cpu_under_both_ways(values=your_server.CPU_UNDER_WRITTEN)
        return [write_table(table, out_dir / your_server.CPU_UNDER_TEST.name)]
    return [your_server.write_cpu_under_test(out_dir / your_server.CPU_UNDER_TEST.name)]


STUDY = Study(name="cpu_under_test", write=write, doc=__doc__)
