"""The hot-page chapter's seeds and bands: every multi-seed figure it quotes, run once and stored.

Flow control's gain by sessions (8 to 400, and the peak's neighbourhood, 48 to
100), the throttled narrow run's waits, the batching table, each with seeds
1-5, for the chapter's setting (the leaf's hold at 40 us, the throttled narrow
waits' choice), the ends of the wake-up band there, the low end of the hold
band (the batched row's own work, the queue cost and new page refitted) and no
queue cost (the hold refitted to the wall clock instead); the scheduler table,
Radivojevic's setup and the 10-thread CPU per insert at the two holds and
without the queue cost; Biondi's three keys and exercise 1's hash buckets.  Run it with
``python -m models sweep hot_page_band``; the chapter reads
``hot_page_band.csv``.
"""

from __future__ import annotations

from pathlib import Path

from models.book.analysis import hot_page
from models.book.stored import data_dir
from models.book.sweep import Study, write_table

BAND_FILE = "hot_page_band.csv"


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Run the study and write its table whole.  ``quick`` runs seed 1 at 64 and 100 sessions only (for tests)."""
    out_dir = data_dir() if out_dir is None else out_dir
    if quick:
        table = hot_page.band_study(seeds=(1,), sessions=(64, 100), schedulers=(16,))
    else:
        table = hot_page.band_study()
    return [write_table(table, out_dir / BAND_FILE)]


STUDY = Study(name="hot_page_band", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
