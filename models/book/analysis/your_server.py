"""The "Your server" chapter: its example snapshot, a round trip per scenario, and their fits as tables.

The bundled example (:data:`EXAMPLE`) is not a capture from a real server:
it is the snapshot :func:`models.fitting.capture.from_model` writes of the hot-page
chapter's model of Poché's test at the calibration the fit assumes (the scenario's
defaults: 100 sessions on 16 schedulers), read for 5 s from 0.5 s into the run, so the
reader can see a fit whose true answer is known.  ``tests/test_fit.py``
checks the file is what :func:`example_snapshot` writes.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
from scipy.stats import binomtest

import models
from models.book.analysis import hot_page
from models.book.stored import FITTED, book_path, significant
from models.book.sweep import write_table
from models.counters.snapshot import SETTINGS, SOURCES, Snapshot, decode, parse
from models.files import write_text_atomic
from models.fitting import coverage
from models.fitting import fit
from models.fitting import whatif
from models.fitting.capture import from_model

MISSPECIFIED_TRIPS = "coverage_misspecified_trips.csv"  # every trip of the misspecified study, beside it
# The chapter's stored files, by the names the notebook and tests use (``your_server.EXAMPLE``): each found in the
# book's folder when asked for (the module's ``__getattr__``), so importing this module (the sweep command does)
# reads no folder.  The coverage studies are written by ``python -m models sweep NAME`` (models/book/sweeps/).
STORED_FILES = {
    "EXAMPLE": ("book", "data", "example_snapshot.csv"),
    "COVERAGE": ("book", "data", "coverage.csv"),
    "COVERAGE_MISSPECIFIED": ("book", "data", "coverage_misspecified.csv"),
    "CPU_UNDER_TEST": ("book", "data", "cpu_under_test.csv"),
    "COVERAGE_REALISTIC": ("book", "data", "coverage_realistic.csv"),
    "REALISTIC_TRIPS": ("book", "data", "coverage_realistic_trips.csv"),  # every trip of that study
    "REALISTIC_BANDS": ("book", "data", "coverage_realistic_bands.csv"),  # its variant with the banded values drawn
    # A DBA's capture of a busy instance: the hot page under the DBA's names, other work, no extended events
    # (scripts/make_captures.py writes it beside its copy in the test corpus, tests/captures/hot_page_busy_instance.csv).
    "DBA_CAPTURE": ("book", "data", "dba_capture.csv"),
    "CORPUS": ("tests", "captures"),  # the captures the fit is judged on, each with its truth
}


def stored_file(name: str) -> Path:
    """Where the chapter's stored file ``name`` (a key of :data:`STORED_FILES`) is, in the book's folder."""
    return book_path(*STORED_FILES[name])


def __getattr__(name: str) -> Path:
    """``EXAMPLE``, ``COVERAGE``... (:data:`STORED_FILES`), looked up when named."""
    if name in STORED_FILES:
        return stored_file(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _fitted(x: Any) -> Any:
    """A fit's number as the page shows it: FITTED significant digits, the same on any CPU."""
    return significant(x, FITTED)


def ranged(estimate: float, low: float, high: float) -> tuple[float, float, float]:
    """An estimate and its range rounded to two significant digits of the range's half-width.

    Six replicates leave the spread itself uncertain by about a third, so digits below the second of the
    half-width say nothing: 2.677 (2.48 to 2.874) is shown 2.68 (2.48 to 2.87), 731.2 (712.5 to 750) as
    731 (712 to 750).  A range of zero width keeps FITTED significant digits.
    """
    half = (high - low) / 2.0
    if not (half > 0 and math.isfinite(half)):
        return _fitted(estimate), _fitted(low), _fitted(high)
    step = 10.0 ** (math.floor(math.log10(half)) - 1)
    return tuple(_fitted(round(x / step) * step) for x in (estimate, low, high))  # type: ignore[return-value]


EXAMPLE_SCENARIO = "last-page-insert"
# The example is the hot page's round trip (its record's): the fit's calibration, 1,000 rows a session.
EXAMPLE_PARAMS: dict[str, Any] = dict(models.get_scenario(EXAMPLE_SCENARIO).round_trip.values)
EXAMPLE_WINDOW: dict[str, float] = dict(models.get_scenario(EXAMPLE_SCENARIO).round_trip.window)

# One known setup per scenario, each read over a window of its run, for the chapter's table of round trips: each
# scenario's own (Scenario.round_trip), as (values, window).
ROUND_TRIPS: dict[str, tuple[dict[str, Any], dict[str, float]]] = {
    name: (dict(spec.round_trip.values), dict(spec.round_trip.window))
    for name, spec in models.scenarios().items() if spec.round_trip is not None}


def _command(scenario: str, params: dict[str, Any], window: dict[str, float]) -> str:
    """The command line that writes this snapshot."""
    args = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
    opts = "".join(f" --{k.replace('_', '-')} {v:g}" for k, v in window.items())
    return f"python -m models snapshot {scenario} {args}{opts}".replace("  ", " ")


EXAMPLE_COMMAND = _command(EXAMPLE_SCENARIO, EXAMPLE_PARAMS, EXAMPLE_WINDOW)


def example_snapshot() -> str:
    """The example file's text: a comment saying how it was made, then the snapshot."""
    snap = from_model(EXAMPLE_SCENARIO, EXAMPLE_PARAMS, **EXAMPLE_WINDOW)
    return (f"# A snapshot of the model, not of a server: the hot-page chapter's setup of Poche's test\n"
            f"# (100 sessions, 16 schedulers), written by\n# {EXAMPLE_COMMAND}\n" + snap.to_csv())


def write_example(path: Path | None = None) -> Path:
    """Write the example snapshot (``python -m models.book.analysis.your_server`` does), whole or not at all."""
    path = stored_file("EXAMPLE") if path is None else path
    return write_text_atomic(path, example_snapshot())


def load(source: str | bytes | Path) -> Snapshot:
    """A snapshot from a path, or from the text (or bytes) of an uploaded file."""
    if isinstance(source, Path):
        return parse(source.read_text(encoding="utf-8-sig"), where=source.name)
    if isinstance(source, bytes):
        source = decode(source, "the uploaded file")
    return parse(source, where="the uploaded file")


def format_table() -> pd.DataFrame:
    """The snapshot format: each source, the DMV it reads and which column holds what (from models.counters.snapshot)."""
    rows = [{"source": source, "what the row holds": text} for source, text in SOURCES.items()]
    rows += [{"source": f"setting {name}", "what the row holds": text} for name, text in SETTINGS.items()]
    return pd.DataFrame(rows)


def diagnosis_table() -> pd.DataFrame:
    """Each diagnosis, what it looks like in the counters, and the scenario the fit then uses."""
    return pd.DataFrame([{"diagnosis": name, "in the counters": looks, "model": scenario}
                         for name, (looks, scenario) in fit.diagnoses().items()])


def snapshot_rows(snap: Snapshot) -> pd.DataFrame:
    """The snapshot's rows as a table, settings first, empty cells blank."""
    settings = pd.DataFrame([{"source": "setting", "name": k, "value": v} for k, v in snap.settings.items()])
    rows = snap.rows.astype(object).where(snap.rows.notna(), "")
    return pd.concat([settings, rows], ignore_index=True).fillna("")


def _three(x: float) -> str:
    """A band's end as the page shows it: three significant digits (a band is an assumption's span, not a measure)."""
    x = significant(float(x), 3)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def params_frame(f: fit.Fit) -> pd.DataFrame:
    """The fitted model's parameters: estimate, range, unit, where each comes from, and (where a band moves it) its
    span over the bands of what no capture tells."""
    rows = []
    banded = any(e.band_low is not None for e in f.params.values())
    for name, e in f.params.items():
        number = not isinstance(e.estimate, str)
        ranged_ = number and e.low != e.high
        estimate, low, high = ranged(e.estimate, e.low, e.high) if ranged_ else (_fitted(e.estimate), "", "")
        row = {"parameter": name, "estimate": estimate, "low": low, "high": high, "unit": e.unit,
               "from": f"{e.basis}, CLIPPED at the model's bound" if e.clipped else e.basis}
        if banded:
            row["over the bands"] = "" if e.band_low is None else f"{_three(e.band_low)} to {_three(e.band_high)}"
        rows.append(row)
    return pd.DataFrame(rows)


def how_frame(f: fit.Fit) -> pd.DataFrame:
    """How each fitted value was found: the relation and the counts behind it."""
    return pd.DataFrame([{"parameter": name, "how": e.how} for name, e in f.params.items() if e.basis == "fitted"])


def undetermined_frame(f: fit.Fit) -> pd.DataFrame:
    """What the snapshot cannot determine, the value used instead, and the measurement that would determine it."""
    return pd.DataFrame([{"parameter": u["param"], "value used": u["assumed"],
                          "why, and what would determine it": f"{u['why']}; would need {u['measure']}"}
                         for u in f.undetermined])


def whatif_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The fitted model now and the changes that apply, their ranges rounded to what the page shows."""
    t = table[table["throughput"].notna()].copy()
    for col in ("throughput", "throughput_low", "throughput_high", "vs_now", "wait_ms_per_s", "wait_low", "wait_high",
                "band_low", "band_high"):
        if col in t:
            t[col] = t[col].map(_fitted)
    return t.reset_index(drop=True)


def _shown_range(estimate: float, low: float, high: float) -> str:
    """'estimate (low to high)', each to two significant digits of the half-width (:func:`ranged`)."""
    estimate, low, high = ranged(estimate, low, high)
    return f"{whatif.figure(estimate)} ({whatif.figure(low)} to {whatif.figure(high)})"


def whatif_shown(table: pd.DataFrame, under: dict[str, Any] | None = None) -> pd.DataFrame:
    """The what-if rows as the page shows them: the change, its gain over now, throughput and wait with ranges.

    ``under`` (:func:`cpu_under_summary`) adds the span of each gain over the values of the assumed work under the
    latch at which the fit stands; the changes it did not run say so."""
    banded = "band_low" in table and table["band_low"].notna().any()
    band = ({"× now, over the bands": [f"{lo:.2f} to {hi:.2f}" if lo == lo else "" for lo, hi
                                           in zip(table["band_low"], table["band_high"])]} if banded else {})
    if under is not None:
        label = f"× now, work under the latch {under['standing_low']:g} to {under['standing_high']:g} µs"
        band[label] = [f"{under[c][0]:.2f} to {under[c][1]:.2f}" if c in UNDER_GAINS else
                       ("" if c == "now" else "not run") for c in table["change"]]
    if "verdict" in table and table["verdict"].fillna("").astype(bool).any():
        band["across the bands"] = table["verdict"].fillna("").str.split(" \\(", n=1).str[0]
    return pd.DataFrame({
        "change": table["change"],
        "× now": table["vs_now"].map(lambda x: f"{x:.2f}"),
        **band,
        "throughput": [f"{_shown_range(t, lo, hi)} {u}" for t, lo, hi, u
                       in zip(table["throughput"], table["throughput_low"], table["throughput_high"], table["unit"])],
        "wait (ms/s)": [_shown_range(t, lo, hi) for t, lo, hi
                        in zip(table["wait_ms_per_s"], table["wait_low"], table["wait_high"])],
    })


def not_applicable(f: fit.Fit) -> pd.DataFrame:
    """The book's changes that do not act on ``f``'s scenario, each with why (as :func:`whatif.predict` says it)."""
    own = {c.name for c in models.get_scenario(f.scenario).changes} if f.scenario else set()
    rows = []
    for name in whatif.changes():
        if name not in own:
            p = whatif.predict(f, name)
            rows.append({"change": name, "what": p.what, "why not": p.note})
    return pd.DataFrame(rows, columns=["change", "what", "why not"])


def setup_assumed(scenario: str, known: dict[str, Any], window: dict[str, float]) -> dict[str, Any]:
    """The known setup's values of every parameter the fit does not estimate: what a round trip's fit assumes.

    So the fit, its replicates and its bias correction run under the setup that wrote the snapshot, not under
    the scenario's defaults where the two differ.
    """
    names = coverage.fitted_names(scenario, known, window)
    return {name: value for name, value in known.items() if name not in names}


def round_trips(replicates: int = fit.REPLICATES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """For every scenario: each fitted parameter beside its true value, and the what-if table of the fit.

    Each fit assumes the known setup's values of what it does not estimate (:func:`setup_assumed`).

    Returns (parameters, what-ifs); the what-ifs carry the scenario and the
    fitted model's throughput now, for the chapter's explorer.
    """
    params, changes = [], []
    for scenario, (known, window) in ROUND_TRIPS.items():
        f = fit.fit(from_model(scenario, known, **window), replicates=replicates,
                    assume=setup_assumed(scenario, known, window))
        truth = dict(models.get_scenario(scenario).defaults(), **known)
        for name, e in f.params.items():
            if e.basis != "fitted":
                continue
            true, shift, label = truth[name], 0.0, name
            if name == "wakeup_us":  # the hand-off is fitted whole; its split with the switch is assumed
                shift = f.params["context_switch_us"].estimate
                true, label = truth[name] + truth["context_switch_us"], "wakeup_us + context_switch_us"
            acting = models.get_scenario(scenario).round_trip.acting
            if name in acting:  # the value it acts with, not the one set (see RoundTrip.acting)
                true = acting[name](truth)
            estimate, low, high = ranged(e.estimate + shift, e.low + shift, e.high + shift)
            params.append({"scenario": scenario, "parameter": label, "true": true,
                           "fitted": estimate, "low": low, "high": high,
                           "error_pct": round(100.0 * (e.estimate + shift - true) / true, 1) if true else math.nan})
        t = whatif_frame(whatif.table(f))
        t = t[t["change"] != "now"]  # the explorer draws each change against now's 1
        t.insert(0, "scenario", scenario)
        changes.append(t)
    return pd.DataFrame(params), pd.concat(changes, ignore_index=True)



def with_other_work(snap: Snapshot, cpu_share: float = 0.0, sessions: int = 0) -> Snapshot:
    """``snap`` as if other work had run beside its workload: each scheduler's CPU time ``cpu_share`` higher and
    ``sessions`` more user sessions, the two counts the capture reads for the whole instance."""
    rows = snap.rows.copy()
    rows["time_ms"] = rows["time_ms"].astype(float)
    busy = rows["source"] == "scheduler"
    rows.loc[busy, "time_ms"] = rows.loc[busy, "time_ms"] * (1.0 + cpu_share)
    settings = dict(snap.settings)
    if sessions:
        settings["sessions"] = int(settings["sessions"]) + sessions
    return Snapshot(interval_s=snap.interval_s, settings=settings, rows=rows)


def other_work(snap: Snapshot, cpu_share: float = 0.05, sessions: int = 5,
               replicates: int = fit.REPLICATES) -> pd.DataFrame:
    """Where other work on the instance lands in a fit of ``snap``: fits with other work's CPU (``cpu_share`` more on
    every scheduler) and with its sessions (``sessions`` more); per case the fitted parameters and the counts the
    fitted model misses (an empty string when it misses none)."""
    cases = {"other work's CPU": with_other_work(snap, cpu_share=cpu_share),
             "other work's sessions": with_other_work(snap, sessions=sessions)}
    out = []
    for case, s in cases.items():
        f = fit.fit(s, replicates=replicates)
        out.append({"case": case, **{n: _fitted(e.estimate) for n, e in f.params.items() if e.basis == "fitted"},
                    "misfit": "; ".join(f.misfit)})
    return pd.DataFrame(out)


# The example's cpu_under_us (the row's own work under the latch, assumed at chapter 5's value) tried at other values:
# does the fitted model still reproduce the counts it was not fitted to?
CPU_UNDER_VALUES = (2.0, EXAMPLE_PARAMS["cpu_under_us"], 8.0, 16.0, 40.0, 80.0)
# The values the example's snapshot is written at for that test: the example's own (4.16 us) and chapter 5's other
# end, 40 us with the queue's cost and the new page refitted there, so that the test runs both ways: is a server
# whose hold is 40 us refused when fitted at 4.16?
CPU_UNDER_WRITTEN = (EXAMPLE_PARAMS["cpu_under_us"], 40.0)
# The queue's cost and the new page's hold issue 41's chapter 5 fitted at a 40 us hold on the fit's calibration (the
# call's CPU kept); chapter 5 has since refitted both on its own calibration (hot_page.SPLIT_FITS).
HOLD_40_FIT = {"contender_cost_us": 1.1, "new_page_us": 50.1}
UNDER_GAINS = ("sequential-key", "batch")  # the what-ifs whose gain the assumed split decides (chapter 5)
_OFF = re.compile(r"([A-Za-z][^:;]*?): \S+ per second in the capture, \S+ in the fitted model's snapshots \((\d+)% off")


CPU_UNDER_COLUMNS = ["cpu_under_us", "verdict", "counts_off", "contender_cost_us", *UNDER_GAINS]


def counts_off(message: str) -> str:
    """The counts a misfit message names, each with its share off: 'PAGELATCH_SH signal_time_ms 43% off; ...'."""
    return "; ".join(f"{key.removeprefix('wait ')} {share}% off" for key, share in _OFF.findall(message))


def cpu_under_test(snap: Snapshot, values: tuple[float, ...] = CPU_UNDER_VALUES,
                   replicates: int = fit.REPLICATES) -> pd.DataFrame:
    """The example fitted at each assumed ``cpu_under_us``: refused or not, the counts its model misses, the fitted
    queue cost and, where the fit stands, the flow-control and batching gains (:data:`UNDER_GAINS`)."""
    rows = []
    for value in values:
        row: dict[str, Any] = {"cpu_under_us": value}
        try:
            f = fit.fit(snap, assume={"cpu_under_us": value}, replicates=replicates)
        except fit.FitError as err:
            rows.append(dict(row, verdict="refused", counts_off=counts_off(str(err))))
            continue
        table = whatif.table(f, snap).set_index("change")
        row.update(verdict="widened" if f.misfit else "fitted", counts_off=counts_off("; ".join(f.misfit)),
                   contender_cost_us=_fitted(f.params["contender_cost_us"].estimate))
        row.update({change: _fitted(table.loc[change, "vs_now"]) for change in UNDER_GAINS})
        rows.append(row)
    return pd.DataFrame(rows, columns=CPU_UNDER_COLUMNS)


def example_written_at(under_us: float) -> Snapshot:
    """The example's snapshot written with ``under_us`` of work under the latch: the stored example at chapter 5's
    value, otherwise (40 us) the same window with the call's CPU kept and :data:`HOLD_40_FIT`."""
    if under_us == EXAMPLE_PARAMS["cpu_under_us"]:
        return load(stored_file("EXAMPLE"))
    if under_us != 40.0:
        raise ValueError(f"under_us={under_us}: the example is written only at {CPU_UNDER_WRITTEN} us")
    before = round(EXAMPLE_PARAMS["cpu_before_us"] + EXAMPLE_PARAMS["cpu_under_us"] - under_us, 2)
    setup = dict(EXAMPLE_PARAMS, cpu_under_us=under_us, cpu_before_us=before, **HOLD_40_FIT)
    return from_model(EXAMPLE_SCENARIO, setup, **EXAMPLE_WINDOW)


def cpu_under_both_ways(written: tuple[float, ...] = CPU_UNDER_WRITTEN, values: tuple[float, ...] = CPU_UNDER_VALUES,
                        replicates: int = fit.REPLICATES) -> pd.DataFrame:
    """:func:`cpu_under_test` of the example written at each of ``written``, one block of rows per value written
    (column ``written_us``)."""
    return pd.concat([cpu_under_test(example_written_at(w), values, replicates).assign(written_us=w)
                      for w in written], ignore_index=True)[["written_us", *CPU_UNDER_COLUMNS]]


def write_cpu_under_test(path: Path | None = None) -> Path:
    """Store :func:`cpu_under_both_ways` (``python -m models sweep cpu_under_test``), whole or not at all."""
    path = stored_file("CPU_UNDER_TEST") if path is None else path
    return write_table(cpu_under_both_ways(), path)


def _listed(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def cpu_under_frame(path: Path | None = None) -> pd.DataFrame:
    """The stored test of the assumed work under the latch as the page shows it: one row per value tried."""
    path = stored_file("CPU_UNDER_TEST") if path is None else path
    stored = pd.read_csv(path, keep_default_na=False)
    gain = {change: [f"{float(x):.2f}" if x != "" else "" for x in stored[change]] for change in UNDER_GAINS}
    return pd.DataFrame({"snapshot written at (µs)": stored["written_us"].map(lambda x: f"{x:g}"),
                         "cpu_under_us (assumed)": stored["cpu_under_us"].map(lambda x: f"{x:g}"),
                         "the fit": stored["verdict"],
                         "counts the fitted model misses": stored["counts_off"],
                         "× now, sequential-key": gain["sequential-key"], "× now, batch": gain["batch"]})


def cpu_under_summary(path: Path | None = None) -> dict[str, Any]:
    """The stored test's headline: the values refused (and what the first of them misses), the span that stands,
    the values at which the fit only widened its ranges, and each gain's lowest and highest where the fit stands,
    for the example as stored (written at chapter 5's value); ``reverse``: the same for the snapshot written at
    :data:`CPU_UNDER_WRITTEN`'s other end, with its gains where it was fitted at the value that wrote it."""
    path = stored_file("CPU_UNDER_TEST") if path is None else path
    every = pd.read_csv(path, keep_default_na=False)
    own = EXAMPLE_PARAMS["cpu_under_us"]
    stored = every[every["written_us"] == own]
    other = every[every["written_us"] != own]
    at_truth = other[other["cpu_under_us"] == other["written_us"]]
    reverse = {"written": float(other["written_us"].iloc[0]),
               "refused": _listed([f"{v:g}" for v in other.loc[other["verdict"] == "refused", "cpu_under_us"]]),
               "standing": _listed([f"{v:g}" for v in other.loc[other["verdict"] != "refused", "cpu_under_us"]]),
               "at_example": other.loc[other["cpu_under_us"] == own, "counts_off"].iloc[0].replace("; ", ", "),
               **{change: float(at_truth[change].iloc[0]) for change in UNDER_GAINS}} if len(other) else {}
    refused = stored[stored["verdict"] == "refused"]
    standing = stored[stored["verdict"] != "refused"]
    widened = stored[stored["verdict"] == "widened"]
    first = refused.iloc[0] if len(refused) else None
    return {"refused": _listed([f"{v:g}" for v in refused["cpu_under_us"]]) if len(refused) else "no value tried",
            "refused_counts": (f"at {first['cpu_under_us']:g} µs, " + first["counts_off"].replace("; ", ", ")
                               if first is not None else ""),
            "standing_low": float(standing["cpu_under_us"].min()), "standing_high": float(standing["cpu_under_us"].max()),
            "widened": ("at every value it reproduces every count" if widened.empty else
                        "at " + _listed([f"{r.cpu_under_us:g} µs" for r in widened.itertuples()]) + " with its ranges "
                        "widened, " + "; ".join(widened["counts_off"])),
            **{change: (float(pd.to_numeric(standing[change]).min()), float(pd.to_numeric(standing[change]).max()))
               for change in UNDER_GAINS},
            "reverse": reverse}


def round_trip_truth(scenario: str) -> dict[str, Any]:
    """Every parameter's value in the round trip of ``scenario`` (:data:`ROUND_TRIPS` over the scenario's defaults)."""
    return dict(models.get_scenario(scenario).defaults(), **ROUND_TRIPS[scenario][0])


def cpu_per_row_us(snap: Snapshot, f: fit.Fit) -> float:
    """The schedulers' CPU per unit of ``f``'s throughput (per row for the hot page), in microseconds."""
    busy = snap.rows.loc[snap.rows["source"] == "scheduler", "time_ms"].astype(float).sum()
    return float(busy * 1000.0 / (f.rate_per_s * snap.interval_s))


def misspecified_table(path: Path | None = None) -> pd.DataFrame:
    """The misspecification trips as the page shows them: per direction and parameter, how often the range held
    the truth, its interval, the median error and the median half-width."""
    path = stored_file("COVERAGE_MISSPECIFIED") if path is None else path
    stored = pd.read_csv(path)
    return pd.DataFrame({
        "written with": stored["written"], "fitted assuming": stored["assumed"], "parameter": stored["parameter"],
        "range held the truth": [f"{c:,d} of {n:,d} ({c / n:.0%})" for c, n in zip(stored["covered"], stored["fitted"])],
        "its 95% interval": [_interval(c, n) for c, n in zip(stored["covered"], stored["fitted"])],
        "median error": stored["median_error_rel"].map(lambda x: f"{100 * x:+.2g}%"),
        "median half-width": stored["median_half_width_rel"].map(lambda x: f"{100 * x:.2g}%"),
    })


def misspecified_summary(path: Path | None = None) -> dict[str, Any]:
    """The misspecification trips' headline: trips per direction, fits, refusals and widenings, the hold's
    coverage in each direction and its median error (per cent, the mean of the two directions' sizes)."""
    path = stored_file("COVERAGE_MISSPECIFIED") if path is None else path
    stored = pd.read_csv(path)
    per_direction = stored.drop_duplicates(["written", "assumed"])
    hold = stored[stored["parameter"] == "hold_us"]
    return {"trips": int(stored["trips"].min()), "fits": int(per_direction["trips"].sum()),
            "refused": int(per_direction["refused"].sum()), "widened": int(per_direction["widened"].sum()),
            "hold_coverage": tuple(float(x) for x in hold["coverage"]),
            "hold_bias_pct": float(100 * hold["median_error_rel"].abs().mean()),
            "hold_bias_range_pct": _hold_error_range(path.with_name(MISSPECIFIED_TRIPS))}


def _hold_error_range(path: Path) -> tuple[float, float]:
    """The smallest and largest size of the hold's error (per cent) over every misspecified trip the fit took."""
    trips = pd.read_csv(path)
    hold = trips[(trips["parameter"] == "hold_us") & trips["refused"].isna()]
    error = (100 * (hold["estimate"] - hold["true"]) / hold["true"]).abs()
    return float(error.min()), float(error.max())


def coverage_table(path: Path | None = None) -> pd.DataFrame:
    """The coverage study as the page shows it: per scenario and fitted parameter, how often the range held the truth.

    Read from the stored study (book/data/coverage.csv); the share is the ranges that held the true value among
    the trips the fit did not refuse (``widened``: trips whose ranges the misfit check widened), beside the
    nominal level and the ranges' median half-width.
    """
    path = stored_file("COVERAGE") if path is None else path
    stored = pd.read_csv(path)
    return pd.DataFrame({
        "scenario": stored["scenario"], "parameter": stored["parameter"],
        "round trips": stored["trips"], "refused": stored["refused"], "widened": stored["widened"],
        "range held the truth": [f"{c:,d} of {n:,d} ({share:.0%})" for c, n, share
                                 in zip(stored["covered"], stored["fitted"], stored["coverage"])],
        "its 95% interval": [_interval(c, n) for c, n in zip(stored["covered"], stored["fitted"])],
        "refusals counted as misses": [f"{c / n:.0%}" for c, n in zip(stored["covered"], stored["trips"])],
        "median half-width": stored["median_half_width_rel"].map(lambda x: f"{100 * x:.2g}%"),
    })


def clopper_pearson(covered: int, trips: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) binomial interval of a share ``covered`` of ``trips`` at ``level``."""
    ci = binomtest(int(covered), int(trips)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def _interval(covered: int, trips: int) -> str:
    """A share's Clopper-Pearson 95% interval as the page shows it, in whole per cent (its upper end 100% when all held)."""
    low, high = clopper_pearson(covered, trips)
    return f"{math.floor(100 * low)}% to {math.ceil(100 * high)}%"


def coverage_summary(path: Path | None = None) -> dict[str, Any]:
    """The study's headline numbers: trips per scenario (fewest), the lowest and pooled coverage, the refusals and
    widenings (false alarms of the misfit check: every capture is of the model itself)."""
    path = stored_file("COVERAGE") if path is None else path
    stored = pd.read_csv(path)
    worst = stored.loc[stored["coverage"].idxmin()]
    return {"trips": int(stored["trips"].min()), "level": float(stored["level"].iloc[0]),
            "replicates": int(stored["replicates"].iloc[0]),
            "pooled": float(stored["covered"].sum() / stored["fitted"].sum()),
            "lowest": float(worst["coverage"]), "lowest_where": f"{worst['scenario']}'s {worst['parameter']}",
            "lowest_interval": _interval(int(worst["covered"]), int(worst["fitted"])),
            "refused": int(stored.drop_duplicates("scenario")["refused"].sum()),
            "widened": int(stored.drop_duplicates("scenario")["widened"].sum()),
            "refused_by": {row.scenario: int(row.refused) for row in stored.drop_duplicates("scenario").itertuples()
                           if row.refused},
            # refused trips counted as misses: the share of all trips whose range held the truth, lowest parameter
            "lowest_counting_refusals": float((stored["covered"] / stored["trips"]).min()),
            # the hand-off ranges are a hundredth of a percent wide around a value the counts fix: pooled without them
            "pooled_without_handoff": float(stored.loc[stored["parameter"] != "wakeup_us", "covered"].sum()
                                            / stored.loc[stored["parameter"] != "wakeup_us", "fitted"].sum()),
            "scenarios": int(stored["scenario"].nunique())}


# ----------------------------------------------------------------------------- a DBA's capture (issue 41)


def top_waits(snap: Snapshot, count: int = 8) -> pd.DataFrame:
    """The capture's waits by time, the idle ones marked: what a DBA sees first in sys.dm_os_wait_stats."""
    waits = snap.table("wait").sort_values("time_ms", ascending=False).head(count)
    return pd.DataFrame({
        "wait": waits["name"],
        "ms per second": (waits["time_ms"] / snap.interval_s).map(lambda x: f"{x:,.0f}"),
        "waits per second": (waits["count"] / snap.interval_s).map(lambda x: f"{x:,.0f}"),
        "signal share": [f"{s / t:.0%}" if t else "" for s, t in zip(waits["signal_time_ms"].fillna(0), waits["time_ms"])],
        "ranked": ["no (idle or CPU queueing)" if w in fit.BENIGN else "yes" for w in waits["name"]]})


def diagnosis_frame(d: fit.Diagnosis) -> pd.DataFrame:
    """A diagnosis as rows: its evidence, what to look at next, and what the capture lacks."""
    rows = [("evidence", line) for line in d.evidence] + [("look at next", line) for line in d.advice]
    rows += [("not in the capture", line) for line in d.missing]
    return pd.DataFrame(rows, columns=["part", "what the tool says"])


def attribution_frame(f: fit.Fit) -> pd.DataFrame:
    """What the fit charged to the modelled workload and what it set aside as the instance's other work."""
    rows = [("charged to the workload", line) for line in f.caveats]
    rows += [("background", line) for line in f.background]
    return pd.DataFrame(rows, columns=["counted as", "what the fit did with the capture's counts"])


def bands_table() -> pd.DataFrame:
    """Every value no capture can tell that a scenario bands, its range and the measurement that would settle it
    (from each Scenario's bands: one home)."""
    rows = []
    for spec in models.scenarios().values():
        for band in spec.bands:
            span = (f"{band.low:g} to {band.high:g} times the capture's" if band.relative
                    else f"{band.low:g} to {band.high:g} {spec.param(band.param).unit}".strip())
            rows.append({"scenario": spec.name, "value": band.param, "band": span, "what it is": band.what,
                         "measure it with": band.measure})
    return pd.DataFrame(rows)


def corpus_frame(root: Path | None = None) -> pd.DataFrame:
    """Every capture of the corpus: where it comes from, the diagnosis its truth expects, and what the tool said."""
    root = stored_file("CORPUS") if root is None else root
    rows = []
    for path in sorted([*root.glob("*.csv"), *(root / "published").glob("*.csv")]):
        known = json.loads(path.with_suffix(".truth.json").read_text())
        f = fit.answer(parse(path.read_text(encoding="utf-8-sig"), where=path.name))
        said = ("fitted" if f.params else f"refused: {f.refusal[:80]}..." if f.refusal else "no model")
        rows.append({"capture": path.stem, "source": known["source"], "expected": known["diagnosis"][0],
                     "diagnosis": f.diagnosis.name, "right": f.diagnosis.name in known["diagnosis"], "model": said})
    return pd.DataFrame(rows)


def coverage_realistic_table(path: Path | None = None) -> pd.DataFrame:
    """The realistic coverage study as the page shows it, narrow enough for the column: per scenario and fitted
    parameter, how often the 95% range and the span over the bands held the truth, and the ranges' width."""
    path = stored_file("COVERAGE_REALISTIC") if path is None else path
    stored = pd.read_csv(path)
    stored = stored[stored["fitted"] > 0].reset_index(drop=True)
    return pd.DataFrame({
        "scenario": stored["scenario"], "parameter": stored["parameter"],
        "trips (refused, widened)": [f"{n} ({r}, {w})" for n, r, w in zip(stored["trips"], stored["refused"],
                                                                           stored["widened"])],
        "range held the truth": [f"{c} of {n} ({c / n:.0%})" for c, n in zip(stored["covered"], stored["fitted"])],
        "span over the bands held it": stored["band_coverage"].map(lambda x: f"{x:.0%}"),
        "median half-width": stored["median_half_width_rel"].map(lambda x: f"{100 * x:.2g}%"),
    })


def coverage_realistic_summary(path: Path | None = None, trips_path: Path | None = None,
                               bands_path: Path | None = None) -> dict[str, Any]:
    """The realistic study's headline numbers: trips, refusals (misdiagnoses included), pooled coverage of the
    ranges and of the spans over the bands, the hot page's ranges apart by whether the misfit check widened them,
    and the variant whose banded values were drawn (its refusals and band coverage)."""
    path = stored_file("COVERAGE_REALISTIC") if path is None else path
    trips_path = stored_file("REALISTIC_TRIPS") if trips_path is None else trips_path
    bands_path = stored_file("REALISTIC_BANDS") if bands_path is None else bands_path
    stored = pd.read_csv(path)
    fitted_rows = stored[stored["fitted"] > 0]
    worst = fitted_rows.loc[fitted_rows["coverage"].idxmin()]
    fitted = fitted_rows["fitted"]
    trips = pd.read_csv(trips_path, keep_default_na=False)
    trips = trips[(trips["refused"] == "") & (trips["parameter"] != "")]
    hot = trips[trips["scenario"] == "last-page-insert"]
    widened = hot["widened"].astype(str).str.lower() == "true"
    covered = hot["covered"].astype(str).str.lower() == "true"
    banded = pd.read_csv(bands_path)
    banded_fitted = banded[banded["fitted"] > 0]
    return {"trips": int(stored["trips"].min()), "scenarios": int(stored["scenario"].nunique()),
            "refused": int(stored.drop_duplicates("scenario")["refused"].sum()),
            "pooled": float(fitted_rows["covered"].sum() / fitted.sum()),
            "pooled_band": float((fitted_rows["band_coverage"] * fitted).sum() / fitted.sum()),
            "lowest": float(worst["coverage"]), "lowest_where": f"{worst['scenario']}'s {worst['parameter']}",
            "lowest_band": float(fitted_rows["band_coverage"].min()),
            "hot_unwidened": int((~widened).sum()), "hot_unwidened_covered": float(covered[~widened].mean()),
            "hot_widened_covered": float(covered[widened].mean()),
            "band_trips": int(banded["trips"].max()),
            "band_refused": {row.scenario: int(row.refused) for row in banded.drop_duplicates("scenario").itertuples()},
            "band_variant_coverage": float((banded_fitted["band_coverage"] * banded_fitted["fitted"]).sum()
                                           / banded_fitted["fitted"].sum()) if len(banded_fitted) else math.nan}


if __name__ == "__main__":
    print(write_example())
