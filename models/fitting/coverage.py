"""Do the fit's ranges hold the truth as often as they say?  Round trips from known parameters, counted.

One round trip draws a "true" value of every parameter the fit estimates
around a base setup (:func:`draw_truth`), writes the snapshot a capture of
the model at those values would hold (:func:`models.fitting.capture.from_model`,
with a seed of its own), fits it with the scenario named and every other
parameter assumed at its true value (the setup being fitted), and records for
each fitted parameter whether its [low, high] holds the true value
(:func:`round_trip`), and whether its span over the bands of what no capture tells holds it
(``band_covered``).  :func:`summary` counts them: a 95% range that holds the
truth in far fewer than 95 of 100 trips is not a 95% range.  It counts too the
trips whose ranges the fit widened because its model missed a count
(``widened``): on a capture of the model itself, that is a false alarm.

A trip the fit refuses (a FitError) is counted apart, as refused, not as
covered or missed: a refusal is the honest answer the fit gives when its
model does not reproduce the capture.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd

from models.counters.evidence import FitError
from models.fitting import fit
from models.fitting.capture import from_model
from models.params import ParameterError
from models.scenarios import get_scenario

STUDY_SEED = 20_261_125  # the draws of true values: trip k uses numpy's generator seeded [STUDY_SEED, k]
UNKNOWN_SEED = 20_261_128  # ... and of the values the fit is not told (draw_unknown): [UNKNOWN_SEED, k]
TRIP_COLUMNS = ["scenario", "trip", "seed", "parameter", "true", "estimate", "low", "high", "covered",
                "half_width_rel", "clipped", "widened", "refused", "band_low", "band_high", "band_covered"]
SUMMARY_COLUMNS = ["scenario", "parameter", "trips", "refused", "widened", "fitted", "covered", "coverage",
                   "median_half_width_rel", "level", "replicates", "seconds_per_trip", "band_coverage"]


def study_setup(scenario: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The setup the study draws true values around and the window its captures read: the scenario's round trip
    (:class:`models.scenarios.base.RoundTrip`), with the study's changes to it."""
    trip = get_scenario(scenario).round_trip
    if trip is None:
        raise ParameterError(f"scenario={scenario!r} has no round trip to draw around: give its Scenario a round_trip")
    return trip.study_setup(), dict(trip.window)


def fitted_names(scenario: str, base: dict[str, Any], window: dict[str, float]) -> list[str]:
    """The parameters the fit estimates from a snapshot of the model at ``base`` (over ``window``)."""
    spec = get_scenario(scenario)
    snap = _snapshot(scenario, base, window)
    setup = fit.assumed_setup(spec, None)
    return list(spec.estimate(snap, dict(setup, **{k: v for k, v in base.items() if k in setup})).fitted)


def draw_truth(scenario: str, base: dict[str, Any], names: list[str], spread: float,
               rng: np.random.Generator) -> dict[str, Any]:
    """``base`` with each of ``names`` drawn log-uniformly within a factor ``1 + spread`` of its base value.

    The base value is the setup's or the scenario's default; a draw is held within the catalogue's range
    and rounded when the parameter is a whole number.
    """
    spec = get_scenario(scenario)
    truth = dict(base)
    for name in names:
        p = spec.param(name)
        centre = base.get(name, p.default)
        value = float(centre) * math.exp(rng.uniform(-math.log1p(spread), math.log1p(spread)))
        value = min(max(value, p.low), p.high)
        truth[name] = round(value) if p.kind == "int" else round(value, 6)
    return truth


def _snapshot(scenario: str, params: dict[str, Any], window: dict[str, float]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return from_model(scenario, params, **window)


TrueValues = dict[str, Callable[[dict[str, Any]], float]]


Dress = Callable[[Any, int], Any]  # (a model's snapshot, trip seed) -> the capture a DBA's busy server would give


def round_trip(scenario: str, truth: dict[str, Any], window: dict[str, float], seed: int, names: list[str],
               replicates: int = fit.REPLICATES, true_values: TrueValues | None = None,
               assume_instead: dict[str, Any] | None = None, dress: Dress | None = None,
               unknown: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One round trip's rows: for each fitted parameter its true value, estimate, range and whether it holds.

    The snapshot is the model at ``truth`` with ``seed``; the fit names the scenario and assumes every
    parameter it does not estimate (``names``) at its true value.  ``true_values`` gives, for a parameter
    whose set value the snapshot cannot show whole (a memory grant asked above its cap shows as the cap),
    the value it acts with, as a function of every parameter's true value (None: the scenario's round trip's
    ``acting``).  A refused fit is one row with
    the reason in ``refused``.  ``assume_instead`` gives values the fit assumes in place of the true ones (a
    misspecified fit: the snapshot written with one CPU distribution, say, and fitted assuming another).
    ``dress`` lays a busy server's background over the snapshot (a realistic capture); the fit then diagnoses
    it itself, and a diagnosis of another scenario is a refusal that says so.  ``unknown`` names parameters whose
    true value wrote the snapshot but is not told to the fit (it assumes the scenario's default): the values a
    capture cannot tell, which the fit's bands must cover.
    """
    spec = get_scenario(scenario)
    if true_values is None and spec.round_trip is not None:
        true_values = spec.round_trip.acting
    snap = _snapshot(scenario, dict(truth, seed=seed), window)
    assume = {k: v for k, v in truth.items() if k not in names and k != "seed" and k not in unknown}
    assume.update(assume_instead or {})
    base = {"scenario": scenario, "seed": seed}
    if dress is not None:
        snap = dress(snap, seed)
        found = fit.diagnose(snap).scenario
        if found != scenario:
            return [dict(base, parameter="", refused=f"diagnosed as {found}, not {scenario}")]
    try:
        f = fit.fit(snap, scenario=scenario, replicates=replicates, assume=assume)
    except (FitError, ParameterError) as err:
        return [dict(base, parameter="", refused=str(err)[:300])]
    rows = []
    for name in names:
        e = f.params.get(name)
        if e is None or e.basis != "fitted":
            continue
        true = truth.get(name, spec.param(name).default)
        if true_values and name in true_values:
            true = true_values[name](dict(spec.defaults(), **truth))
        half = (e.high - e.low) / 2.0
        band = (e.low, e.high) if e.band_low is None else (e.band_low, e.band_high)
        rows.append(dict(base, parameter=name, true=true, estimate=float(e.estimate), low=float(e.low),
                         high=float(e.high), covered=bool(e.low <= true <= e.high),
                         half_width_rel=half / abs(true) if true else math.nan, clipped=e.clipped,
                         widened=bool(f.misfit), refused="", band_low=float(band[0]), band_high=float(band[1]),
                         band_covered=bool(band[0] <= true <= band[1])))
    return rows


def study(scenario: str, base: dict[str, Any], window: dict[str, float], *, trips: int, spread: float,
          replicates: int = fit.REPLICATES, true_values: TrueValues | None = None, first: int = 0,
          assume_instead: dict[str, Any] | None = None, dress: Dress | None = None,
          draw_unknown: Callable[[np.random.Generator], dict[str, Any]] | None = None,
          progress: Callable[[int, int], None] | None = None) -> tuple[pd.DataFrame, float]:
    """``trips`` round trips of ``scenario`` around ``base``: every trip's rows, and the seconds one trip took.

    Trip k (``first`` to ``first + trips - 1``) draws its truth from numpy's generator seeded [STUDY_SEED, k]
    and writes its snapshot with seed k + 1 (the fit's replicates use seeds from
    :data:`models.fitting.fit.REPLICATE_SEED`, so none shares one).  A study run with a ``first`` of its own
    checks a widening on trips it was not derived from; ``assume_instead`` makes every fit misspecified
    (:func:`round_trip`); ``draw_unknown`` draws values the snapshot is written with but the fit is not told.
    """
    names = fitted_names(scenario, base, window)
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for k in range(first, first + trips):
        truth = draw_truth(scenario, base, names, spread, np.random.default_rng([STUDY_SEED, k]))
        hidden = draw_unknown(np.random.default_rng([UNKNOWN_SEED, k])) if draw_unknown else {}
        truth.update(hidden)
        for row in round_trip(scenario, truth, window, k + 1, names, replicates, true_values, assume_instead, dress,
                              tuple(hidden)):
            rows.append(dict(row, trip=k))
        if progress is not None:
            progress(k + 1 - first, trips)
    seconds = (time.perf_counter() - began) / max(trips, 1)
    return pd.DataFrame(rows, columns=TRIP_COLUMNS), seconds


def summary(trips: pd.DataFrame, seconds_per_trip: dict[str, float],
            replicates: int = fit.REPLICATES) -> pd.DataFrame:
    """Per scenario and fitted parameter: trips, refusals, how many ranges held the truth, and their width."""
    out = []
    for scenario, rows in trips.groupby("scenario", sort=False):
        n = int(rows["trip"].nunique())
        refused = int(rows.loc[rows["refused"].fillna("") != "", "trip"].nunique())
        fitted = rows[rows["refused"].fillna("") == ""]
        widened = int(fitted.loc[fitted["widened"].fillna(False).astype(bool), "trip"].nunique())
        if fitted.empty:  # every trip refused: one row says so
            out.append({"scenario": scenario, "parameter": "", "trips": n, "refused": refused, "widened": 0,
                        "fitted": 0, "covered": 0, "coverage": math.nan, "median_half_width_rel": math.nan,
                        "level": fit.LEVEL, "replicates": replicates,
                        "seconds_per_trip": round(seconds_per_trip.get(scenario, math.nan), 2),
                        "band_coverage": math.nan})
        for name, group in fitted.groupby("parameter", sort=False):
            covered = int(group["covered"].astype(bool).sum())
            widths = [w for w in group["half_width_rel"] if isinstance(w, float) and math.isfinite(w)]
            out.append({"scenario": scenario, "parameter": name, "trips": n, "refused": refused, "widened": widened,
                        "fitted": len(group), "covered": covered,
                        "coverage": round(covered / len(group), 4) if len(group) else math.nan,
                        "median_half_width_rel": round(statistics.median(widths), 6) if widths else math.nan,
                        "level": fit.LEVEL, "replicates": replicates,
                        "seconds_per_trip": round(seconds_per_trip.get(scenario, math.nan), 2),
                        "band_coverage": round(float(group["band_covered"].astype(bool).mean()), 4)
                        if "band_covered" in group and len(group) else math.nan})
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)


def needed_inflation(trips: pd.DataFrame, level: float = fit.LEVEL) -> float:
    """The smallest factor on every range's half-width that has each parameter's ranges hold the truth in ``level``
    of its fitted trips (1 or less: the ranges are wide enough as they are).

    A trip needs |estimate - true| / half-width; each parameter needs the ``level`` quantile of its trips'
    needs, and the answer is the largest of those.
    """
    fitted = trips[(trips["refused"].fillna("").astype(str) == "") & trips["parameter"].fillna("").astype(bool)]
    half = (fitted["high"] - fitted["low"]) / 2.0
    need = ((fitted["estimate"] - fitted["true"]).abs() / half.where(half > 0)).fillna(np.inf)
    per_parameter = need.groupby([fitted["scenario"], fitted["parameter"]]).quantile(level)
    return float(per_parameter.max()) if len(per_parameter) else math.nan
