"""The fairness chapter's hand-off band and starvation seeds: White's insert refitted at each hand-off.

Only hold + hand-off is pinned by White's fair run (5.5 s); his signal wait
bounds the hand-off from above (9.7 us); his two elapsed times bound it from
below (about 3.5 us at face value, 1.8 us within their rounding, with the idle
of the model refitted at each hand-off: fairness.lower_handoff_us); the low
end, 3.0 us, is the 2.0 us switch plus the book's least wake-up.  At
each hand-off of ``BAND_HANDOFFS_US`` (and at 9.7 us with the
assumed log-record count moved by 15% either way) the CPU per row and the spin
cycle are refitted, then every published figure and exercise 3's no-stall
speed-up are run with five seeds (``fairness_band.csv``).  The starvation
section's worst-off shares (MAXDOP up to 11 on 12 schedulers, 96 seeds per point) are in
``fairness_starvation.csv``.  The gap check (fixed, Erlang-4 and exponential CPU
between log records, refitted at 4 and 9.7 us, five seeds) is in
``fairness_gaps.csv``.  The rounding check (White's "around 5.5 / 4.5 s" at face
value and each 0.25 s either way, the gap between them narrowest and widest,
refitted at each, five seeds) is in ``fairness_rounding.csv``.  Run it with
``python -m models sweep fairness_band``.
"""

from __future__ import annotations

from pathlib import Path

from models.book.analysis import fairness
from models.book.stored import data_dir
from models.book.sweep import Study, write_table

BAND_FILE = "fairness_band.csv"
STARVATION_FILE = "fairness_starvation.csv"
GAPS_FILE = "fairness_gaps.csv"
ROUNDING_FILE = "fairness_rounding.csv"


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Run the band, the starvation seeds, the gap check and the rounding check and write the four tables, each
    whole or not at all.

    ``quick`` runs one seed at the 9.7 us end, four starvation seeds, fixed gaps at 9.7 us and the face-value end
    of the rounding check with one seed (for tests)."""
    out_dir = data_dir() if out_dir is None else out_dir
    if quick:
        band = fairness.pd.DataFrame(fairness.band_row(fairness.HANDOFF_US, seeds=(1,)))
        starve = fairness.starvation_runs(maxdops=(11,), seeds=(1, 2, 3, 4))
        gaps = fairness.pd.DataFrame([dict(r, cpu_dist="fixed") for r in
                                      fairness.band_row(fairness.HANDOFF_US, seeds=(1,), cpu_dist="fixed")])
        rounding = fairness.pd.DataFrame(fairness.rounding_row("face value", seeds=(1,)))
    else:
        band = fairness.band_table()
        starve = fairness.starvation_runs()
        gaps = fairness.gap_table()
        rounding = fairness.rounding_table()
    return [write_table(band, out_dir / BAND_FILE), write_table(starve, out_dir / STARVATION_FILE),
            write_table(gaps, out_dir / GAPS_FILE), write_table(rounding, out_dir / ROUNDING_FILE)]


STUDY = Study(name="fairness_band", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
