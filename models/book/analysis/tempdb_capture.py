"""A tempdb capture's full round trip, for the tempdb chapter's "on your server" section (issue 45).

:func:`round_trip` makes a capture of the tempdb model at given values (the snapshot the capture script would
print of a server running it), fits it as a DBA's capture is fitted (diagnosis, estimates with ranges and bands)
and runs every what-if (files, memory-optimized metadata, SQL Server 2022, cached temporary objects), and returns
the tables a chapter shows.  Every run is seeded, so the same values give the same tables.

    from models.book.analysis import tempdb_capture
    trip = tempdb_capture.round_trip()          # ROUND_TRIP: a metadata-bound 2019 server
    trip.params, trip.whatifs                   # what the fit found, and what each change would buy
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pandas as pd

from models.fitting import fit
from models.fitting import whatif
from models.fitting.capture import from_model
from models.counters.snapshot import Snapshot
from models.scenarios import tempdb

# The values of the chapter's round trip and the capture's two reads: the tempdb scenario's own (its round_trip).
ROUND_TRIP: dict[str, Any] = dict(tempdb.SCENARIO.round_trip.values)
WINDOW = dict(tempdb.SCENARIO.round_trip.window)


@dataclass
class RoundTrip:
    """One round trip: the capture, its fit, and the tables a chapter shows."""

    values: dict[str, Any]     # the model's values the capture was made at (the truth)
    snapshot: Snapshot         # the capture, as the script would print it
    fit: fit.Fit           # the fit of the capture (diagnosis, estimates, ranges, bands)
    params: pd.DataFrame       # parameter, basis, estimate, low, high, band_low, band_high, true
    whatifs: pd.DataFrame      # whatif.table: now, then each change with its range, bands and verdict


def params_table(f: fit.Fit, values: dict[str, Any]) -> pd.DataFrame:
    """The fit's parameters beside the values the capture was made at (fitted first, then read, then assumed)."""
    order = {"fitted": 0, "read": 1, "assumed": 2}
    rows = [{"parameter": name, "basis": e.basis, "estimate": e.estimate, "low": e.low, "high": e.high,
             "band_low": e.band_low, "band_high": e.band_high, "unit": e.unit, "true": values.get(name)}
            for name, e in f.params.items()]
    columns = ["parameter", "basis", "estimate", "low", "high", "band_low", "band_high", "unit", "true"]
    return (pd.DataFrame(rows, columns=columns).sort_values("basis", key=lambda b: b.map(order), kind="stable")
            .reset_index(drop=True))


def round_trip(values: dict[str, Any] | None = None, *, start_s: float = WINDOW["start_s"],
               interval_s: float = WINDOW["interval_s"], replicates: int = fit.REPLICATES) -> RoundTrip:
    """Capture the tempdb model at ``values`` (ROUND_TRIP's by default, overridden by any given), fit the capture
    and run every what-if.  A capture the fit refuses comes back with its refusal (``fit.refusal``) and no
    what-if rows."""
    values = dict(ROUND_TRIP, **(values or {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        snap = from_model("tempdb", values, start_s=start_s, interval_s=interval_s)
        f = fit.answer(snap, replicates=replicates)
        table = whatif.table(f, snap) if f.params else pd.DataFrame([])
    return RoundTrip(values, snap, f, params_table(f, values), table)


def significant(x: float, digits: int = 3) -> float:
    """``x`` to ``digits`` significant digits: what a range of a few percent can say."""
    return float(f"{x:.{digits}g}")


def shown_params(trip: RoundTrip) -> pd.DataFrame:
    """The round trip's fitted values (three significant digits, with their range and span over the bands) and
    the settings read from the capture, each beside the value the capture was made at."""
    p = trip.params.set_index("parameter")
    fitted = [{"parameter": name, "basis": "fitted", "estimate": significant(p.loc[name, "estimate"]),
               "range": f"{significant(p.loc[name, 'low']):g} to {significant(p.loc[name, 'high']):g}",
               "over the bands": f"{significant(p.loc[name, 'band_low']):g} to "
                                 f"{significant(p.loc[name, 'band_high']):g}",
               "true": trip.values[name]}
              for name in p.index[p["basis"] == "fitted"]]
    read = [{"parameter": name, "basis": "read", "estimate": p.loc[name, "estimate"], "range": "",
             "over the bands": "", "true": trip.values[name]} for name in p.index[p["basis"] == "read"]]
    return pd.DataFrame(fitted + read)


def shown_whatifs(trip: RoundTrip) -> pd.DataFrame:
    """Each what-if's gain (times now), its span over the bands and its verdict, as the chapter shows them."""
    w = trip.whatifs.set_index("change").drop(index="now")
    return pd.DataFrame({"change": w.index, "x now": w["vs_now"].round(2).values,
                         "over the bands": [f"x{lo:.2f} to x{hi:.2f}" for lo, hi in zip(w["band_low"], w["band_high"])],
                         "verdict over the band": w["verdict"].str.split(" [(]").str[0].values})
