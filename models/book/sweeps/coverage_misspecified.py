"""Chapter 9's misspecification trips: snapshots written with one CPU distribution, fitted assuming the other.

The coverage study (:mod:`models.book.sweeps.coverage`) fits each snapshot told every value it assumes, so it
measures the fit's sampling error only.  Here the version store's round trips
(the scenario's :attr:`~models.scenarios.base.Scenario.round_trip`) are written with the CPU outside the latch fixed and
fitted assuming it exponential, and the reverse (``cpu_dist``: a snapshot gives means, so the fit assumes the
spread).  Trips, draws and seeds are the coverage study's (:func:`models.fitting.coverage.study`, from
:data:`models.book.sweeps.coverage.FIRST_TRIP`); ``book/data/coverage_misspecified.csv`` holds one row per
direction and fitted parameter, with the median signed error of the estimates beside the coverage, and
``coverage_misspecified_trips.csv`` every trip.

Run it with ``python -m models sweep coverage_misspecified`` (about four minutes on one core: each fit of the
version store is two, one under each CPU distribution).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from models.book.stored import data_dir
from models.book.sweep import Study, write_table
from models.book.sweeps.coverage import FIRST_TRIP, SPREAD
from models.fitting import coverage

SCENARIO = "version-store"
# (the distribution the snapshots are written with, the one the fit assumes)
DIRECTIONS = (("fixed", "exponential"), ("exponential", "fixed"))
TRIPS = 120
QUICK_TRIPS = 2
FILE = "coverage_misspecified.csv"
TRIPS_FILE = "coverage_misspecified_trips.csv"
TRIP_COLUMNS = ["written", "assumed", *coverage.TRIP_COLUMNS]
COLUMNS = ["scenario", "written", "assumed", *coverage.SUMMARY_COLUMNS[1:], "median_error_rel"]


def direction_trips(written: str, assumed: str, trips: int) -> tuple[pd.DataFrame, float]:
    """The trips of one direction (snapshots written with ``written``, fitted assuming ``assumed``), and the
    seconds one took."""
    base, window = coverage.study_setup(SCENARIO)
    return coverage.study(SCENARIO, dict(base, cpu_dist=written), window, trips=trips, spread=SPREAD,
                          first=FIRST_TRIP, assume_instead={"cpu_dist": assumed})


def run(trips: int = TRIPS, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, every trip): one summary row per direction and fitted parameter
    (:func:`models.fitting.coverage.summary`'s columns, with the direction and the median of
    (estimate - true) / true)."""
    out, every = [], []
    for written, assumed in DIRECTIONS:
        if progress:
            print(f"coverage_misspecified: written {written}, fitted as {assumed}", file=sys.stderr)
        rows, seconds = direction_trips(written, assumed, trips)
        every.append(rows.assign(written=written, assumed=assumed)[TRIP_COLUMNS])
        summary = coverage.summary(rows, {SCENARIO: seconds})
        fitted = rows[rows["refused"].fillna("") == ""]
        error = ((fitted["estimate"] - fitted["true"]) / fitted["true"]).groupby(fitted["parameter"]).median()
        summary.insert(1, "written", written)
        summary.insert(2, "assumed", assumed)
        summary["median_error_rel"] = [round(float(error.get(p, math.nan)), 6) for p in summary["parameter"]]
        out.append(summary)
    return pd.concat(out, ignore_index=True)[COLUMNS], pd.concat(every, ignore_index=True)


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True) -> list[Path]:
    """Run the trips and write their summary and every trip, each whole or not at all."""
    out_dir = data_dir() if out_dir is None else out_dir
    summary, every = run(QUICK_TRIPS if quick else TRIPS, progress)
    return [write_table(summary, out_dir / FILE), write_table(every, out_dir / TRIPS_FILE)]


STUDY = Study(name="coverage_misspecified", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
