"""The "Your server" chapter: its example snapshot, a round trip per scenario, and their fits as tables.

The bundled example (:data:`EXAMPLE`) is not a capture from a real server:
it is the snapshot :func:`models.fitting.capture.from_model` writes of the hot-page
chapter's model of Poché's test (:data:`models.book.analysis.hot_page.SETUP_002`:
100 sessions on 16 schedulers), read for 5 s from 0.5 s into the run, so the
reader can see a fit whose true answer is known.  ``tests/test_fit.py``
checks the file is what :func:`example_snapshot` writes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

import models
from models.book.analysis import hot_page
from models.book.stored import FITTED, significant
from models.book.sweep import DATA_DIR
from models.files import write_text_atomic
from models.fitting import coverage
from models.fitting import fit as fitting
from models.fitting import whatif
from models.fitting.capture import from_model
from models.fitting.snapshot import SETTINGS, SOURCES, Snapshot, decode, parse

EXAMPLE = DATA_DIR / "example_snapshot.csv"
COVERAGE = DATA_DIR / "coverage.csv"  # ``python -m models sweep coverage`` writes it (models/book/sweeps/coverage.py)


def _fitted(x: Any) -> Any:
    """A fit's number as the page shows it: FITTED significant digits, the same on any CPU."""
    return significant(x, FITTED)


EXAMPLE_SCENARIO = "last-page-insert"
EXAMPLE_PARAMS: dict[str, Any] = dict(hot_page.SETUP_002)
EXAMPLE_WINDOW = {"start_s": 0.5, "interval_s": 5.0}

# One known setup per scenario, each read over a window of its run, for the chapter's table of round trips.
ROUND_TRIPS: dict[str, tuple[dict[str, Any], dict[str, float]]] = {
    "convoy": ({"arrival_rate_per_s": 420.0, "wakeup_us": 7.7, "context_switch_us": 2.0}, {}),
    "closed-latch": ({"workers": 16, "acquires": 40_000}, {}),
    "parallel-insert": ({"maxdop": 16, "hold_us": 6.0}, {"start_s": 0.02, "interval_s": 0.1}),
    "last-page-insert": (EXAMPLE_PARAMS, EXAMPLE_WINDOW),
    "version-store": ({"connections": 6, "row_bytes": 9_000}, {"start_s": 0.05, "interval_s": 0.4}),
    "cci-insert": ({}, {}),
    "cci-decommit": ({"lpim": "off", "sessions": 24, "schedulers": 24, "rowgroups": 2},
                     {"start_s": 2.0, "interval_s": 10.0}),
}


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


def write_example(path: Path = EXAMPLE) -> Path:
    """Write the example snapshot (``python -m models.book.analysis.your_server`` does), whole or not at all."""
    return write_text_atomic(path, example_snapshot())


def load(source: str | bytes | Path) -> Snapshot:
    """A snapshot from a path, or from the text (or bytes) of an uploaded file."""
    if isinstance(source, Path):
        return parse(source.read_text(encoding="utf-8-sig"), where=source.name)
    if isinstance(source, bytes):
        source = decode(source, "the uploaded file")
    return parse(source, where="the uploaded file")


def format_table() -> pd.DataFrame:
    """The snapshot format: each source, the DMV it reads and which column holds what (from models.fitting.snapshot)."""
    rows = [{"source": source, "what the row holds": text} for source, text in SOURCES.items()]
    rows += [{"source": f"setting {name}", "what the row holds": text} for name, text in SETTINGS.items()]
    return pd.DataFrame(rows)


def diagnosis_table() -> pd.DataFrame:
    """Each diagnosis, what it looks like in the counters, and the scenario the fit then uses."""
    return pd.DataFrame([{"diagnosis": name, "in the counters": looks, "model": scenario}
                         for name, (looks, scenario) in fitting.diagnoses().items()])


def snapshot_rows(snap: Snapshot) -> pd.DataFrame:
    """The snapshot's rows as a table, settings first, empty cells blank."""
    settings = pd.DataFrame([{"source": "setting", "name": k, "value": v} for k, v in snap.settings.items()])
    rows = snap.rows.astype(object).where(snap.rows.notna(), "")
    return pd.concat([settings, rows], ignore_index=True).fillna("")


def params_frame(f: fitting.Fit) -> pd.DataFrame:
    """The fitted model's parameters: estimate, range, unit, and where each comes from."""
    rows = []
    for name, e in f.params.items():
        number = not isinstance(e.estimate, str)
        rows.append({"parameter": name, "estimate": _fitted(e.estimate),
                     "low": _fitted(e.low) if number and e.low != e.high else "",
                     "high": _fitted(e.high) if number and e.low != e.high else "",
                     "unit": e.unit, "from": f"{e.basis}, CLIPPED at the model's bound" if e.clipped else e.basis})
    return pd.DataFrame(rows)


def how_frame(f: fitting.Fit) -> pd.DataFrame:
    """How each fitted value was found: the relation and the counts behind it."""
    return pd.DataFrame([{"parameter": name, "how": e.how} for name, e in f.params.items() if e.basis == "fitted"])


def undetermined_frame(f: fitting.Fit) -> pd.DataFrame:
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


def whatif_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The what-if rows as the page shows them: the change, its gain over now, throughput and wait with ranges."""
    banded = "band_low" in table and table["band_low"].notna().any()
    band = ({"× now, wake-up 1 to 30 µs": [f"{lo:.2f} to {hi:.2f}" if lo == lo else "" for lo, hi
                                           in zip(table["band_low"], table["band_high"])]} if banded else {})
    return pd.DataFrame({
        "change": table["change"],
        "× now": table["vs_now"].map(lambda x: f"{x:.2f}"),
        **band,
        "throughput": [f"{whatif.figure(t)} ({whatif.figure(lo)} to {whatif.figure(hi)}) {u}" for t, lo, hi, u
                       in zip(table["throughput"], table["throughput_low"], table["throughput_high"], table["unit"])],
        "wait (ms/s)": [f"{whatif.figure(t)} ({whatif.figure(lo)} to {whatif.figure(hi)})" for t, lo, hi
                        in zip(table["wait_ms_per_s"], table["wait_low"], table["wait_high"])],
    })


def not_applicable(f: fitting.Fit) -> pd.DataFrame:
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


def round_trips(replicates: int = fitting.REPLICATES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """For every scenario: each fitted parameter beside its true value, and the what-if table of the fit.

    Each fit assumes the known setup's values of what it does not estimate (:func:`setup_assumed`).

    Returns (parameters, what-ifs); the what-ifs carry the scenario and the
    fitted model's throughput now, for the chapter's explorer.
    """
    params, changes = [], []
    for scenario, (known, window) in ROUND_TRIPS.items():
        f = fitting.fit(from_model(scenario, known, **window), replicates=replicates,
                        assume=setup_assumed(scenario, known, window))
        truth = dict(models.get_scenario(scenario).defaults(), **known)
        for name, e in f.params.items():
            if e.basis != "fitted":
                continue
            true, shift, label = truth[name], 0.0, name
            if name == "wakeup_us":  # the hand-off is fitted whole; its split with the switch is assumed
                shift = f.params["context_switch_us"].estimate
                true, label = truth[name] + truth["context_switch_us"], "wakeup_us + context_switch_us"
            params.append({"scenario": scenario, "parameter": label, "true": true,
                           "fitted": _fitted(e.estimate + shift), "low": _fitted(e.low + shift),
                           "high": _fitted(e.high + shift),
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
               replicates: int = fitting.REPLICATES) -> pd.DataFrame:
    """Where other work on the instance lands in a fit of ``snap``: fits with other work's CPU (``cpu_share`` more on
    every scheduler) and with its sessions (``sessions`` more); per case the fitted parameters and the counts the
    fitted model misses (an empty string when it misses none)."""
    cases = {"other work's CPU": with_other_work(snap, cpu_share=cpu_share),
             "other work's sessions": with_other_work(snap, sessions=sessions)}
    out = []
    for case, s in cases.items():
        f = fitting.fit(s, replicates=replicates)
        out.append({"case": case, **{n: _fitted(e.estimate) for n, e in f.params.items() if e.basis == "fitted"},
                    "misfit": "; ".join(f.misfit)})
    return pd.DataFrame(out)


def coverage_table(path: Path = COVERAGE) -> pd.DataFrame:
    """The coverage study as the page shows it: per scenario and fitted parameter, how often the range held the truth.

    Read from the stored study (book/data/coverage.csv); the share is the ranges that held the true value among
    the trips the fit did not refuse (``widened``: trips whose ranges the misfit check widened), beside the
    nominal level and the ranges' median half-width.
    """
    stored = pd.read_csv(path)
    return pd.DataFrame({
        "scenario": stored["scenario"], "parameter": stored["parameter"],
        "round trips": stored["trips"], "refused": stored["refused"], "widened": stored["widened"],
        "range held the truth": [f"{c:,d} of {n:,d} ({share:.0%})" for c, n, share
                                 in zip(stored["covered"], stored["fitted"], stored["coverage"])],
        "nominal": stored["level"].map(lambda x: f"{x:.0%}"),
        "median half-width": stored["median_half_width_rel"].map(lambda x: f"{100 * x:.2g}%"),
    })


def coverage_summary(path: Path = COVERAGE) -> dict[str, Any]:
    """The study's headline numbers: trips per scenario (fewest), the lowest and pooled coverage, the refusals and
    widenings (false alarms of the misfit check: every capture is of the model itself)."""
    stored = pd.read_csv(path)
    worst = stored.loc[stored["coverage"].idxmin()]
    return {"trips": int(stored["trips"].min()), "level": float(stored["level"].iloc[0]),
            "replicates": int(stored["replicates"].iloc[0]),
            "pooled": float(stored["covered"].sum() / stored["fitted"].sum()),
            "lowest": float(worst["coverage"]), "lowest_where": f"{worst['scenario']}'s {worst['parameter']}",
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


if __name__ == "__main__":
    print(write_example())
