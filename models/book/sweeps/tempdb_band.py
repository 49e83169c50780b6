"""The tempdb chapter's band: Lahoud's notebook refitted at each system-table hold, and her lab predicted.

The notebook's 35.419 s fixes what a creation's and a drop's disk-based system-table work costs, not how it
divides between the page latch's hold and CPU outside it.  For each latch policy and each hold of
:data:`models.book.analysis.tempdb.HOLD_GRID_US`, the CPU per call is fitted to the notebook's 26.784 s, the
CPU outside the latch to its 35.419 s, the lab's CPU per call to its 52 s, and the lab's rate before
memory-optimized metadata is predicted (``tempdb_band.csv``).  Three seeds a run.  Run it with
``python -m models sweep tempdb_band``.
"""

from __future__ import annotations

from pathlib import Path

from models.book.analysis import tempdb
from models.book.stored import data_dir
from models.book.sweep import Study, write_table

BAND_FILE = "tempdb_band.csv"


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Fit the band and write it whole or not at all (``quick``: one hold, one policy, for tests)."""
    out_dir = data_dir() if out_dir is None else out_dir
    table = tempdb.band_table(holds=(20.0,), policies=(tempdb.POLICY,)) if quick else tempdb.band_table()
    return [write_table(table, out_dir / BAND_FILE)]


STUDY = Study(name="tempdb_band", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
