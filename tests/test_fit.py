"""Snapshots, fits and what-ifs: round trips from known parameters, predictions against fresh runs, bad files.

Each round trip writes a snapshot from a model run with known parameters
(``models.fitting.capture.from_model``), fits it, and holds every fitted parameter
to a tolerance stated in ROUND_TRIPS with the reason it is that wide.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import models
from models.counters import evidence
from models.fitting import fit
from models.fitting import whatif
from models.fitting.capture import from_model
from models.counters.snapshot import (
    MalformedSnapshot, MissingColumn, NegativeDelta, UnknownSource, ZeroInterval, parse,
)
from models.scenarios import cci_insert as cci

# scenario, known parameters, snapshot window, {fitted parameter: relative tolerance}, why that wide.
ROUND_TRIPS = [
    ("convoy", {"arrival_rate_per_s": 420.0, "wakeup_us": 7.7, "context_switch_us": 2.0}, {},
     {"arrival_rate_per_s": 0.02, "hold_ms": 0.03},
     "exact relations (PASTA, busy-time accounting): only the counting noise of 20,000 requests"),
    ("convoy", {"arrival_rate_per_s": 300.0, "hold_dist": "exponential"}, {},
     {"arrival_rate_per_s": 0.02, "hold_ms": 0.03}, "the same, with an exponential hold"),
    ("closed-latch", {}, {}, {"hold_ms": 0.05, "think_ms": 0.05},
     "exact MVA holds for exponential think and hold; the hand-off makes it an approximation"),
    ("closed-latch", {"workers": 4, "hold_ms": 0.3, "think_ms": 0.5, "hold_dist": "fixed"}, {},
     {"hold_ms": 0.05, "think_ms": 0.05}, "a fixed hold is not MVA's exponential one, yet within 5%"),
    ("closed-latch", {"workers": 16, "acquires": 40_000}, {}, {"hold_ms": 0.05, "think_ms": 0.05},
     "two workers per scheduler: the saturated latch's busy-time bound gives the hold"),
    ("parallel-insert", {"maxdop": 16, "hold_us": 6.0}, {"start_s": 0.02, "interval_s": 0.1},
     {"hold_us": 0.05, "cpu_per_row_us": 0.05},
     "the repairman with fixed holds and the hand-off's owned-idle time, both approximations (read from the "
     "whole run, start-up included, the hold comes out 7% high: a capture mid-run is what the fit expects)"),
    ("last-page-insert", {}, {"start_s": 0.1, "interval_s": 0.6},
     {"contender_cost_us": 0.10, "cpu_before_us": 0.05, "think_us": 0.05},
     "the queue's cost is the one at which the model itself, run at the other estimates, inserts the captured "
     "rows per second; a run from an empty index and a window of the truth's run differ by a few percent"),
    ("version-store", {"connections": 6, "row_bytes": 9_000}, {"start_s": 0.05, "interval_s": 0.4},
     {"hold_us": 0.10, "cpu_per_update_us": 0.05}, "the saturated latch's busy-time bound"),
    ("version-store", {}, {"start_s": 0.05, "interval_s": 0.4}, {"hold_us": 0.10, "cpu_per_update_us": 0.05},
     "the same, one chunk per version"),
    ("cci-insert", {}, {}, {"grant_timeout_s": 1e-9, "compress_us_per_row": 0.02},
     "the time-out is read exactly; CPU per row from the schedulers' CPU"),
    ("cci-decommit", {"lpim": "off", "sessions": 24, "schedulers": 24, "rowgroups": 2},
     {"start_s": 2.0, "interval_s": 10.0}, {"page_us_no_lpim": 0.05, "cpu_per_rowgroup_ms": 0.05},
     "exact MVA for exponential pieces and calls (read from the whole run, where sessions finish one by one, the "
     "CPU per rowgroup comes out 3% high: a capture mid-run is what the fit expects)"),
]


def _fit(scenario, params, window):
    return fit.fit(from_model(scenario, params, **window))


@pytest.fixture(scope="module")
def fits():
    return {k: _fit(s, p, w) for k, (s, p, w, _, _) in enumerate(ROUND_TRIPS)}


@pytest.mark.parametrize("case", range(len(ROUND_TRIPS)), ids=[f"{c[0]}-{k}" for k, c in enumerate(ROUND_TRIPS)])
def test_fit_recovers_known_parameters(fits, case):
    scenario, params, _, tolerances, why = ROUND_TRIPS[case]
    f = fits[case]
    truth = dict(models.get_scenario(scenario).defaults(), **params)
    assert f.scenario == scenario, f.diagnosis
    for name, tol in tolerances.items():
        e = f.params[name]
        assert e.basis == "fitted"
        assert e.estimate == pytest.approx(truth[name], rel=tol, abs=1e-6), f"{name}: {why}"
        assert e.low <= e.estimate <= e.high
    for name, e in f.params.items():  # what the capture gives is read back exactly
        if e.basis == "read" and name in params:
            assert e.estimate == truth[name]


def test_cci_grant_range_holds_the_effective_grant(fits):
    case = next(k for k, c in enumerate(ROUND_TRIPS) if c[0] == "cci-insert")
    e = fits[case].params["grant_mb_per_dop"]
    truth = models.get_scenario("cci-insert").defaults()
    grant = cci.grant_mb(truth) / truth["maxdop"]  # the ask above the 25% cap is not seen: the grant is
    assert e.low <= grant <= e.high
    assert e.high / e.low < 1.1


def test_co_tenant_is_found_and_the_hold_left_undetermined():
    snap = from_model("parallel-insert", {"maxdop": 8, "hold_us": 6.0, "busy_scheduler": 3})
    with pytest.raises(fit.FitError, match=r"an assumed value is wrong \(.*hold_us"):
        fit.fit(snap)  # the scenario's 2 us hold is not this server's: its model misses the waits
    f = fit.fit(snap, assume={"hold_us": 6.0})
    assert f.params["busy_scheduler"].estimate == 3
    assert {u["param"] for u in f.undetermined} >= {"hold_us", "wakeup_us"}


@pytest.mark.parametrize("case", [0, 2])
def test_the_hand_off_is_the_signal_wait_per_wait(fits, case):
    """Wake-up plus switch (the fitted one plus the assumed one) is the hand-off that wrote the snapshot."""
    scenario, params, _, _, _ = ROUND_TRIPS[case]
    f, truth = fits[case], dict(models.get_scenario(scenario).defaults(), **params)
    fitted = f.params["wakeup_us"].estimate + f.params["context_switch_us"].estimate
    assert f.params["context_switch_us"].basis == "assumed"
    assert fitted == pytest.approx(truth["wakeup_us"] + truth["context_switch_us"], rel=0.01)


def test_trace_flag_3933_is_read_from_the_spins_with_the_spin_rounds():
    # Unfair, the latch all but stops waiting (White: 56 waits where there were 271,458), so the diagnosis
    # finds no wait worth the name; the fit of the insert's model is asked for by name.
    snap = from_model("parallel-insert", {"maxdop": 16, "hold_us": 6.0, "policy": "unfair"}, start_s=0.01)
    assert fit.diagnose(snap).name == evidence.HEALTHY
    f = fit.fit(snap, scenario="parallel-insert")
    assert f.params["policy"].estimate == "unfair"
    assert f.params["spins_per_round"].estimate == 250  # the spins of one round, from spins over rounds
    assert _fit("version-store", {}, {"start_s": 0.05, "interval_s": 0.4}).params.get("policy") is None


def test_without_extended_events_the_acquire_rate_is_named_as_missing():
    snap = from_model("closed-latch", {}, xevents=False)
    with pytest.raises(fit.FitError, match="latch_acquired"):
        fit.fit(snap)


def test_no_latch_waits_is_not_a_latch_problem():
    snap = from_model("cci-decommit", {"sessions": 8, "schedulers": 8, "rowgroups": 1})  # lpim on: no waits
    f = fit.fit(snap)
    assert f.scenario is None and f.diagnosis.name == evidence.HEALTHY
    assert whatif.predict(f, "unfair-latch").applies is False


def test_fit_is_a_pure_function_of_the_snapshot():
    snap = from_model("closed-latch", {})
    assert fit.fit(snap).to_json() == fit.fit(parse(snap.to_csv())).to_json()


def test_the_snapshot_window_is_the_difference_of_two_reads():
    whole = from_model("closed-latch", {}, interval_s=1.5)
    later = from_model("closed-latch", {}, start_s=0.5, interval_s=1.0)
    first = from_model("closed-latch", {}, interval_s=0.5)
    for name in ("CLOSED_LATCH",):
        assert later.get("latch", name) == whole.get("latch", name) - first.get("latch", name)
        assert later.get("xevent", name) == whole.get("xevent", name) - first.get("xevent", name)


# ----------------------------------------------------------------------------- what-ifs against fresh runs

# scenario, known parameters, window, change, tolerance on the predicted throughput against a fresh run.
WHATIFS = [
    ("parallel-insert", {"maxdop": 16, "hold_us": 6.0}, {}, "lower-maxdop", 0.05),
    ("parallel-insert", {"maxdop": 16, "hold_us": 6.0}, {}, "unfair-latch", 0.05),
    ("version-store", {}, {"start_s": 0.05, "interval_s": 0.4}, "versioning-off", 0.05),
    # The hold behind a co-tenant is assumed (the scenario's 2 us): the prediction holds when that is the truth.
    # Read mid-run: from the start, the quantum waits behind the co-tenant make the fitted model miss the
    # capture's latch waits by 70%, and the fit refuses it (test_ranges.py).
    ("parallel-insert", {"maxdop": 8, "busy_scheduler": 3}, {"start_s": 0.02, "interval_s": 0.1}, "move-co-tenant",
     0.10),
    ("last-page-insert", {}, {"start_s": 0.1, "interval_s": 0.6}, "guid-key", 0.10),
    ("last-page-insert", {}, {"start_s": 0.1, "interval_s": 0.6}, "sequential-key", 0.10),
    ("cci-insert", {}, {}, "more-memory", 0.02),
    ("cci-decommit", {"lpim": "off", "sessions": 24, "schedulers": 24, "rowgroups": 2}, {}, "lock-pages", 0.05),
    # Calls of 10 rows put Poché's setup near the queue's tipping point, where a few percent in the estimates
    # move the rate by a fifth: the fresh run must fall inside the predicted range instead.
    ("last-page-insert", {}, {"start_s": 0.1, "interval_s": 0.6}, "batch", None),
    ("cci-insert", {}, {}, "lower-grant", 0.02),
]


@pytest.mark.parametrize("scenario, params, window, change, tol", WHATIFS,
                         ids=[f"{w[0]}-{w[3]}" for w in WHATIFS])
def test_whatif_matches_a_fresh_run_at_the_changed_parameters(scenario, params, window, change, tol):
    f = _fit(scenario, params, window)
    p = whatif.predict(f, change)
    assert p.applies
    truth = dict(models.get_scenario(scenario).defaults(), **params)
    spec = models.get_scenario(scenario)
    extra = spec.change(change).sets(truth, None)
    sized = fit.sized(spec, dict(truth, **extra), f.rate_per_s, whatif.run_seconds(f))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fresh, _ = whatif.metrics(spec, models.run(scenario, **sized))
    if tol is None:
        assert p.throughput.low <= fresh <= p.throughput.high
    else:
        assert p.throughput.estimate == pytest.approx(fresh, rel=tol)
    assert p.throughput.low <= p.throughput.estimate <= p.throughput.high


def test_a_change_that_does_not_apply_says_why():
    f = _fit("closed-latch", {}, {})
    p = whatif.predict(f, "guid-key")
    assert not p.applies and "last-page-insert" in p.note
    with pytest.raises(models.ParameterError, match="unknown"):
        whatif.predict(f, "faster-disks")


# ----------------------------------------------------------------------------- bad files, by name

GOOD = from_model("closed-latch", {}).to_csv()
HEADER = GOOD.splitlines()[0]


def _replace_line(text: str, startswith: str, new: str) -> str:
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(startswith))
    lines[k] = new
    return "\n".join(lines) + "\n"


BAD = {
    "empty": ("", MalformedSnapshot, "malformed snapshot"),
    "no header": ("\n".join(GOOD.splitlines()[1:]), MalformedSnapshot, "malformed snapshot"),
    "fields": (_replace_line(GOOD, "latch,", "latch,CLOSED_LATCH,1,2"), MalformedSnapshot, "malformed snapshot"),
    "not a number": (_replace_line(GOOD, "latch,", "latch,CLOSED_LATCH,many,2,3,,,,"), MalformedSnapshot,
                     "malformed snapshot"),
    "missing column": (GOOD.replace(HEADER, HEADER.replace(",signal_time_ms", "")).replace(",,,,,,,", ",,,,,,"),
                       MissingColumn, "missing column"),
    "unknown source": (_replace_line(GOOD, "latch,", "latches,CLOSED_LATCH,1,2,3,,,,"), UnknownSource,
                       "unknown source"),
    "negative delta": (_replace_line(GOOD, "wait,LATCH_EX", "wait,LATCH_EX,-5,-100,3,-1,,,"), NegativeDelta,
                       "negative delta"),
    "zero interval": (_replace_line(GOOD, "setting,interval_s", "setting,interval_s,,,,,,,0"), ZeroInterval,
                      "zero interval"),
    "no interval": (_replace_line(GOOD, "setting,interval_s", "# no interval"), MalformedSnapshot,
                    "malformed snapshot"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_snapshot_gets_its_named_error(case):
    text, error, _ = BAD[case]
    with pytest.raises(error):
        parse(text)


@pytest.mark.parametrize("case", list(BAD))
def test_the_command_line_names_the_error_and_exits_non_zero(case, tmp_path):
    text, _, kind = BAD[case]
    path = tmp_path / "snapshot.csv"
    path.write_text(text)
    for command in (["fit", str(path)], ["whatif", str(path)]):
        done = subprocess.run([sys.executable, "-m", "models", *command], capture_output=True, text=True)
        assert done.returncode == 2
        assert done.stderr.startswith(f"error: {kind}: ")
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_missing_file_and_bad_change_on_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "models", "fit", str(tmp_path / "none.csv")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no such file" in done.stderr and "Traceback" not in done.stderr
    path = tmp_path / "s.csv"
    path.write_text(GOOD)
    done = subprocess.run([sys.executable, "-m", "models", "whatif", str(path), "faster-disks"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "unknown" in done.stderr and "Traceback" not in done.stderr


def test_snapshot_fit_and_whatif_round_trip_on_the_command_line(tmp_path):
    path = tmp_path / "s.csv"
    done = subprocess.run([sys.executable, "-m", "models", "snapshot", "version-store", "connections=6",
                           "--start-s", "0.05", "--interval-s", "0.4"], capture_output=True, text=True, check=True)
    path.write_text(done.stdout)
    fitted = subprocess.run([sys.executable, "-m", "models", "fit", str(path), "--json"],
                         capture_output=True, text=True, check=True)
    assert '"scenario": "version-store"' in fitted.stdout
    what = subprocess.run([sys.executable, "-m", "models", "whatif", str(path), "versioning-off"],
                          capture_output=True, text=True, check=True)
    assert "updates/s" in what.stdout


# ----------------------------------------------------------------------------- the chapter's example and panel


def test_the_example_is_what_its_command_writes():
    from models.book.analysis import your_server as ys

    assert ys.EXAMPLE.read_text(encoding="utf-8") == ys.example_snapshot()


def test_the_upload_panel_fits_the_example_and_names_a_bad_file():
    from models.book.analysis import your_server as ys
    from models.book.widgets import SnapshotPanel

    panel = SnapshotPanel(ys.EXAMPLE)
    panel.use_example.click()
    assert "PAGELATCH" in panel.status.value and "fitted in" in panel.status.value
    panel._on_upload({"new": [{"name": "mine.csv", "content": memoryview(BAD["negative delta"][0].encode())}]})
    assert "negative delta" in panel.status.value and "mine.csv" in panel.status.value
    panel._on_upload({"new": [{"name": "u16.csv", "content": memoryview(GOOD.encode("utf-16"))}]})
    assert "LATCH_EX" in panel.status.value  # SSMS's Unicode (UTF-16) files are read too
