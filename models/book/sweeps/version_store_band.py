"""The version-store chapter's band: Randal's 60,000 refitted at each CPU distribution and wake-up.

Randal's 60,000 updates/s pins what the insert-point latch costs an append,
hold and hand-off together, not how it divides, and not how variable an
update's CPU is.  For the CPU per update exponential (the model's default) and
fixed (Randal's one statement repeated), and each wake-up of
``WAKEUP_GRID_US``, the hold is refitted to 60,000 and the loss is run along the
chapter's three axes (connections, CPU per update, share of reads), three seeds
a point; the hold is also refitted to 58,500 and 61,500 (the rounding of "about
60,000") at the book's wake-up (``version_store_band.csv``).  The finer check of
the wake-up bound, updates/s at the shortest hold for wake-ups 12-20 us, five
seeds, is ``version_store_bound.csv``.  Run it with
``python -m models sweep version_store_band``.
"""

from __future__ import annotations

from pathlib import Path

from models.book.analysis import version_store
from models.book.stored import data_dir
from models.book.sweep import Study, write_table

BAND_FILE = "version_store_band.csv"
BOUND_FILE = "version_store_bound.csv"


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Run the band and the bound and write both tables, each whole or not at all.

    ``quick`` runs the fixed-CPU end at the book's wake-up on one axis point, and two bound points (for tests)."""
    out_dir = data_dir() if out_dir is None else out_dir
    if quick:
        band = version_store.pd.DataFrame(version_store.band_scenario(
            "fixed", 7.7, axes={"connections": (8,)}))
        bound = version_store.bound_table(wakeups=(16.0,), seeds=(1,))
    else:
        band = version_store.band_table()
        bound = version_store.bound_table()
    return [write_table(band, out_dir / BAND_FILE), write_table(bound, out_dir / BOUND_FILE)]


STUDY = Study(name="version_store_band", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
