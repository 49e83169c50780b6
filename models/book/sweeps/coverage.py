"""The coverage study behind chapter 9's table: how often the fit's ranges hold the true value.

For every scenario with a diagnosis rule, :data:`TRIPS` round trips
(:mod:`models.fitting.coverage`): true values of the fitted parameters drawn
log-uniformly within a factor ``1 + spread`` of the scenario's round trip, chapter 9's
(:attr:`models.scenarios.base.Scenario.round_trip`), a snapshot of the model
at them with a seed of its own, a fit with the scenario named and every other
parameter assumed at its true value, and a count of the ranges that hold the
truth.  ``book/data/coverage.csv`` holds one row per scenario and fitted
parameter; ``coverage_trips.csv`` every trip.  The ranges' widening
(:data:`models.fitting.fit.INFLATION`) was read from trips 0-119 run without
it (:func:`models.fitting.coverage.needed_inflation`); the stored trips start
at :data:`FIRST_TRIP`, so the table checks the widening on trips it was not
derived from.

Where a draw around the round trip would leave the model's range, its record
says how the study moves it (the convoy runs at 360 requests per second, not
chapter 9's 420, with a spread of 15%, so that the latch stays below
saturation: above it the open model has no steady state to fit).

Run it with ``python -m models sweep coverage`` (one process; ``--quick``
runs a few trips of each scenario).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from tqdm import tqdm

from models.book.stored import data_dir
from models.book.sweep import Study, write_table
from models.fitting import coverage
from models.scenarios import CATALOGUE

TRIPS = 120          # round trips per scenario (at least 100: a 95% share of 120 has a binomial error of 2 points)
QUICK_TRIPS = 4      # the quick version's, for tests
FIRST_TRIP = 1000    # trips 1000 on: fresh draws and seeds, not the trips 0-119 the fit's INFLATION was derived from
SPREAD = 0.25        # true values drawn within a factor 1.25 of the setup's, either way (unless a record says)
# Every scenario with a round trip: the setup its record says the study draws around, and the capture's window.
SETUPS: dict[str, tuple[dict[str, Any], dict[str, float]]] = {
    name: coverage.study_setup(name) for name, spec in CATALOGUE.items() if spec.round_trip is not None}
SUMMARY_FILE = "coverage.csv"
TRIPS_FILE = "coverage_trips.csv"


def run_setups(setups: dict[str, tuple[dict[str, Any], dict[str, float]]], trips: int, scenarios: list[str] | None,
               progress: bool, label: str, study_options: Callable[[str], dict[str, Any]]
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, every trip) of ``trips`` round trips of each scenario of ``setups`` (all by default), from
    :data:`FIRST_TRIP`, with ``study_options(scenario)`` passed on to :func:`models.fitting.coverage.study`."""
    frames, seconds = [], {}
    for scenario in scenarios or list(setups):
        base, window = setups[scenario]
        with tqdm(total=trips, desc=f"{label} {scenario}", unit="trip", disable=not progress,
                  file=sys.stderr) as bar:
            rows, seconds[scenario] = coverage.study(scenario, base, window, trips=trips, first=FIRST_TRIP,
                                                     progress=lambda done, total: bar.update(),
                                                     **study_options(scenario))
        frames.append(rows)
    every = pd.concat(frames, ignore_index=True)
    return coverage.summary(every, seconds), every


def run(trips: int = TRIPS, scenarios: list[str] | None = None, progress: bool = True
        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, every trip) of ``trips`` round trips of each scenario (all of :data:`SETUPS` by default)."""
    return run_setups(SETUPS, trips, scenarios, progress, "coverage", lambda scenario: {"spread": spread(scenario)})


def spread(scenario: str) -> float:
    """How far the study draws true values about ``scenario``'s setup: its round trip's, else :data:`SPREAD`."""
    own = CATALOGUE[scenario].round_trip.study_spread
    return SPREAD if own is None else own


def write(out_dir: Path | None = None, *, quick: bool = False, progress: bool = True,
          scenarios: list[str] | None = None) -> list[Path]:
    """Run the study and write its two tables, each whole or not at all."""
    out_dir = data_dir() if out_dir is None else out_dir
    summary, every = run(QUICK_TRIPS if quick else TRIPS, scenarios, progress)
    return [write_table(summary, out_dir / SUMMARY_FILE), write_table(every, out_dir / TRIPS_FILE)]


STUDY = Study(name="coverage", write=write, doc=__doc__)

if __name__ == "__main__":
    print(write())
