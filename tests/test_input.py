"""Everything a user types or uploads ends in a result or a one-line named error: no hang, no traceback.

Parameters and run options (Python and numpy numbers, text, bools, overflow), snapshot files at the door
(settings and counts range-checked, size and row caps, rows that contradict each other), fits and what-ifs
that fail by name, estimates held at a bound that say so, and the command line under Ctrl-C and a closed or
full stdout.  A seeded value-level fuzz of snapshot files holds all of it together.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import random
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import models
from models import cli
from models.book.analysis import your_server
from models.fitting import fit
from models.fitting import whatif
from models.fitting.capture import from_model
from models.counters.snapshot import (
    MAX_FILE_BYTES, MAX_ROWS, InconsistentSnapshot, OutOfRange, SnapshotTooLarge, parse, read,
)
from models.params import RUN_OPTIONS, Param, ParameterError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "book" / "data" / "example_snapshot.csv").read_text()


def _with_setting(text: str, name: str, value: str) -> str:
    """``text`` with the setting ``name`` given ``value`` (its row replaced, or added after the header)."""
    row = f"setting,{name},,,,,,,{value}"
    lines = text.splitlines()
    k = next((i for i, line in enumerate(lines) if line.startswith(f"setting,{name},")), None)
    if k is None:
        k = next(i for i, line in enumerate(lines) if line.startswith("source,")) + 1
        lines.insert(k, row)
    lines[k] = row
    return "\n".join(lines) + "\n"


def _with_row(text: str, startswith: str, row: str) -> str:
    """``text`` with the first row starting ``startswith`` replaced by ``row``."""
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(startswith))
    lines[k] = row
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- parameters and run options


INT = Param("workers", "int", 8, "", 1, 1024)
FLOAT = Param("hold_ms", "float", 2.0, "ms", 0.0001, 1000.0)


@pytest.mark.parametrize("value", [8, np.int64(8), np.int32(8), np.uint16(8), 8.0, np.float32(8), np.float64(8),
                                   "8", " 8 ", "8.0", "8e0", Fraction(8)])
def test_every_kind_of_number_in_range_is_taken_alike(value):
    assert INT.check(value) == 8 and type(INT.check(value)) is int
    assert FLOAT.check(value) == 8.0 and type(FLOAT.check(value)) is float


@pytest.mark.parametrize("value", [True, False, np.bool_(True), None, [8], {"x": 8}, "eight", "", b"8"])
def test_what_is_no_number_is_refused_by_name(value):
    for param in (INT, FLOAT):
        with pytest.raises(ParameterError, match=rf"^{param.name}=.* is not (an integer|a number): use "):
            param.check(value)


@pytest.mark.parametrize("value", [10**400, -10**400, "1" * 401, "9" * 5000, float("inf"), float("nan"), "nan",
                                   "-inf", 1e308, Fraction(10**400), 0, -1, 1025, "1e400"])
def test_a_number_out_of_range_or_too_large_for_a_float_is_the_range_error(value):
    with pytest.raises(ParameterError) as err:
        INT.check(value)
    message = str(err.value)
    assert message.startswith("workers=") and "use an integer from 1 to 1,024" in message
    assert len(message) < 200  # a 401-digit value is cut, its length said


def test_a_whole_float_is_an_integer_and_a_fraction_is_not():
    assert INT.check("1e3") == 1000 and INT.check(np.float64(1000.0)) == 1000
    with pytest.raises(ParameterError, match=r"^workers=1.5 is not an integer"):
        INT.check("1.5")
    with pytest.raises(ParameterError, match=r"^workers=np.float64\(1.5\) is not an integer"):
        INT.check(np.float64(1.5))


def test_choices_suggest_the_closest():
    policy = models.get_scenario("convoy").param("policy")
    with pytest.raises(ParameterError, match=r"policy='Fair' is not allowed: .*did you mean 'fair'\?"):
        policy.check("Fair")
    with pytest.raises(ParameterError, match=r"policy=3 is not allowed"):
        policy.check(3)


def test_run_options_take_numpy_numbers_and_text_like_parameters():
    with pytest.warns(UserWarning, match="truncated"):
        result = models.run("convoy", requests=200, max_events=np.int64(50), max_sim_ms=np.float32(100))
    assert result.truncated
    same = models.run("convoy", requests=200, max_sim_ms="1e5", trace_events=np.int32(10))
    assert same.elapsed_ms > 0 and len(same.trace) <= 10
    for name in ("trace_events", "record_acquires", "max_events", "max_sim_ms"):
        for bad in (True, np.bool_(False), -1, "x", 10**400, float("nan")):
            with pytest.raises(ParameterError, match=rf"^{name}="):
                models.run("convoy", requests=10, **{name: bad})


def test_the_scenario_and_progress_are_checked_by_name():
    for bad in (["convoy"], None, 3, "convoi"):
        with pytest.raises(ParameterError, match=r"^scenario=.* is unknown"):
            models.run(bad)
    with pytest.raises(ParameterError, match=r"^progress='x' is not allowed"):
        models.run("convoy", requests=10, progress="x")


def test_the_command_line_and_models_run_share_one_check(capsys):
    for name, value in (("hold_ms", "-3"), ("requests", "1" * 401), ("max_sim_ms", "0"), ("policy", "Fair")):
        with pytest.raises(ParameterError) as direct:
            models.run("convoy", **{name: value})
        assert cli.main(["run", "convoy", f"{name}={value}"]) == 2
        assert capsys.readouterr().err == f"error: {direct.value}\n"
    assert {o.name for o in RUN_OPTIONS} == {"trace_events", "record_acquires", "max_events", "max_sim_ms"}


def test_a_workload_that_draws_nothing_says_its_seed_changes_nothing():
    seed = models.get_scenario("cci-insert").param("seed")
    assert "draws nothing at random" in seed.help
    one, two = models.run("cci-insert", seed=1), models.run("cci-insert", seed=2)
    assert one.queries.equals(two.queries)
    assert "random generator" in models.get_scenario("convoy").param("seed").help


# ----------------------------------------------------------------------------- snapshot files at the door


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("sessions", "1000000000", "0 to 4,096"), ("schedulers", "1e30", "0 to 256"), ("maxdop", "65", "0 to 64"),
    ("request_dop", "-1", "0 to 64"), ("sessions", "2.5", "0 to 4,096"),
    ("max_server_memory_mb", "1e12", "0 to 2,147,483,647"),
])
def test_a_setting_out_of_range_is_refused_when_read(name, value, allowed):
    with pytest.raises(OutOfRange, match=rf"setting {name}='{value}' is out of range: use a whole number from "
                                         rf"{allowed}"):
        parse(_with_setting(EXAMPLE, name, value))


@pytest.mark.parametrize("value", ["1e-9", "0.0009", "86401", "1e308"])
def test_an_interval_out_of_range_is_refused_when_read(value):
    with pytest.raises(OutOfRange, match=r"setting interval_s=.* is out of range: use 0.001 to 86,400 seconds"):
        parse(_with_setting(EXAMPLE, "interval_s", value))


def test_a_count_beyond_any_server_is_refused_naming_its_cell():
    row = next(line for line in EXAMPLE.splitlines() if line.startswith("wait,PAGELATCH_EX,"))
    fields = row.split(",")
    for column, k in (("count", 2), ("time_ms", 3), ("max_time_ms", 4)):
        changed = list(fields)
        changed[k] = "1e30"
        with pytest.raises(OutOfRange, match=rf"wait PAGELATCH_EX has {column}=1e\+30"):
            parse(_with_row(EXAMPLE, "wait,PAGELATCH_EX,", ",".join(changed)))


def test_rows_that_contradict_each_other_are_named():
    cases = {
        "signal above wait": ("wait,PAGELATCH_EX,", "wait,PAGELATCH_EX,10,5,1,6,,,", "signal_time_ms=6 above"),
        "more CPU than the interval": ("scheduler,0,", "scheduler,0,10,6000,,,,,", "more CPU than the interval"),
    }
    for startswith, row, message in cases.values():
        with pytest.raises(InconsistentSnapshot, match=message):
            parse(_with_row(EXAMPLE, startswith, row))
    good = from_model("closed-latch", {}).to_csv()
    with pytest.raises(InconsistentSnapshot, match="lost events"):
        parse(_with_row(good, "xevent,CLOSED_LATCH,", "xevent,CLOSED_LATCH,3,,,,,,"))


def test_a_wait_begun_before_the_first_read_is_time_with_no_count():
    """sys.dm_os_wait_stats counts a wait when it starts and adds its time when it ends: a row with time and count 0
    is what a long wait across the first read leaves, and is read as it is."""
    snap = parse(_with_row(EXAMPLE, "wait,PAGELATCH_EX,", "wait,PAGELATCH_EX,0,5,1,0,,,"))
    assert snap.get("wait", "PAGELATCH_EX") == 0 and snap.get("wait", "PAGELATCH_EX", "time_ms") == 5


def test_files_past_the_caps_are_refused_before_they_are_parsed(tmp_path):
    big = tmp_path / "big.csv"
    with big.open("w") as out:
        out.write(EXAMPLE)
        line = "scheduler,99,1,1,,,,,\n"
        out.write(line * (MAX_FILE_BYTES // len(line) + 1))
    start = time.perf_counter()
    with pytest.raises(SnapshotTooLarge, match="bytes, above the 33,554,432-byte cap"):
        read(big)
    with pytest.raises(SnapshotTooLarge):
        your_server.load(big.read_bytes())
    rows = EXAMPLE + "".join(f"scheduler,{k},1,1,,,,,\n" for k in range(100, 100 + MAX_ROWS))
    with pytest.raises(SnapshotTooLarge, match="more than 200,000 rows"):
        parse(rows)
    assert time.perf_counter() - start < 20


# ----------------------------------------------------------------------------- fits and what-ifs fail by name


def test_waits_that_sessions_could_not_have_waited_are_named():
    good = from_model("closed-latch", {"workers": 16, "acquires": 40_000}).to_csv()
    row = next(line for line in good.splitlines() if line.startswith("latch,CLOSED_LATCH,"))
    fields = row.split(",")
    fields[3] = "1000000"
    with pytest.raises(fit.FitError, match=r"16 sessions can wait at most"):
        fit.fit(parse(_with_row(good, "latch,CLOSED_LATCH,", ",".join(fields))))


def test_a_setting_the_model_cannot_run_is_named_with_its_source():
    good = from_model("closed-latch", {"workers": 16, "acquires": 40_000}).to_csv()
    with pytest.raises(fit.FitError, match=r"the capture's sessions setting \(the instance's: no database_sessions setting, .*\) gives workers=2000, which the "
                                               r"closed-latch model cannot run"):
        fit.fit(parse(_with_setting(good, "sessions", "2000")))


def test_an_estimate_beyond_the_model_is_reported_clipped_in_text_and_json():
    point = fit.Point(fitted={"hold_ms": (2500.0, "ms", "from the rates"), "think_ms": (1.0, "ms", "rest")},
                      settings={"workers": (8, "the capture's sessions setting")}, assumed={}, rate_per_s=100.0)
    values, clipped = fit._estimates(models.get_scenario("closed-latch"), point)
    limit = models.get_scenario("closed-latch").param("hold_ms").high
    assert values["hold_ms"] == limit and clipped == {"hold_ms": "high"}
    snap = from_model("closed-latch", {"workers": 4, "hold_ms": 0.3, "think_ms": 0.5, "acquires": 4_000})
    spec = models.get_scenario("closed-latch")

    def too_long(s, setup):
        found = spec.estimate(s, setup)
        found.fitted["hold_ms"] = (2500.0,) + found.fitted["hold_ms"][1:]
        return found

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(models.CATALOGUE, "closed-latch", dataclasses.replace(spec, estimate=too_long))
        fitted = fit.fit(snap, replicates=2)
    assert fitted.params["hold_ms"].clipped == "high" and fitted.params["hold_ms"].estimate == limit
    assert json.loads(fitted.to_json())["params"]["hold_ms"]["clipped"] == "high"
    assert json.loads(fitted.to_json())["params"]["workers"]["clipped"] is None
    text = cli.fit_text(fitted)
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == ["hold_ms"])
    assert "fitted, CLIPPED" in line and "the relation gives 2,500 ms" in line


@pytest.mark.parametrize(("change", "message"), [
    ("lower-maxdop=-3", r"lower-maxdop: maxdop=-3 is out of range: use an integer from 1 to 64"),
    ("batch=0", r"batch: batch_rows=0 is out of range"), ("hash-key=1.5", r"hash-key: buckets=1.5 is not an integer"),
    ("lower-grant=nan", r"lower-grant: max_grant_percent=nan is out of range"),
    ("lower-maxdp", r"change 'lower-maxdp' is unknown: .*did you mean 'lower-maxdop'\?"),
    ("guid-key=3", r"change 'guid-key' takes no value"),
])
def test_a_bad_change_is_refused_before_it_is_found_not_to_apply(change, message):
    with pytest.raises(ParameterError, match=message):
        whatif.parse_change(change)
    done = subprocess.run([sys.executable, "-m", "models", "whatif", str(ROOT / "book/data/example_snapshot.csv"),
                           change], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


# ----------------------------------------------------------------------------- the command line's ends


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "run", interrupted)
    assert cli.main(["run", "convoy", "requests=10"]) == 130
    assert capsys.readouterr().err == "error: interrupted (Ctrl-C); nothing more was written\n"


def test_ctrl_c_in_a_real_process_is_one_line_and_exit_130():
    program = ("import time, models, models.cli as c\n"
               "def slow(*a, **k):\n    print('running', flush=True); time.sleep(30)\n"
               "models.run = slow\nraise SystemExit(c.main(['run', 'convoy']))\n")
    proc = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "running\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130 and err == "error: interrupted (Ctrl-C); nothing more was written\n"


def test_a_full_stdout_is_one_line_and_non_zero():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "models", "list", "--json"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=600)
    assert done.returncode == 1 and done.stderr == "error: standard output: No space left on device\n"


def test_a_pipe_closed_early_is_one_line_and_non_zero():
    proc = subprocess.Popen([sys.executable, "-m", "models", "run", "convoy", "requests=20000",
                             "record_acquires=20000", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 141
    assert "Traceback" not in err and err.splitlines()[-1].startswith("error: standard output was closed")


# ----------------------------------------------------------------------------- round trips and fuzz


ROUND_TRIP_RUNS = [("convoy", {"requests": 2_000}, {}), ("closed-latch", {"acquires": 4_000}, {}),
                   ("parallel-insert", {"rows": 20_000}, {}), ("last-page-insert", {"inserts_per_session": 20}, {}),
                   ("version-store", {"window_ms": 50.0}, {"start_s": 0.01}), ("cci-insert", {}, {}),
                   ("cci-decommit", {"rowgroups": 1, "sessions": 8, "schedulers": 8}, {})]


@pytest.mark.parametrize(("scenario", "params", "window"), ROUND_TRIP_RUNS, ids=[r[0] for r in ROUND_TRIP_RUNS])
def test_parse_of_to_csv_of_a_model_snapshot_is_the_same_snapshot(scenario, params, window):
    snap = from_model(scenario, params, **window)
    again = parse(snap.to_csv())
    assert again.settings == snap.settings and again.interval_s == snap.interval_s
    assert again.to_csv() == snap.to_csv()


FUZZ_VALUES = ["0", "-1", "1e-9", "1e30", "1e308", "nan", "inf", "1" * 30, "0.5", "3", "1e6", "7", "100000", "2",
               "1e-3", "4096", "86400"]
FUZZ_FILES = 40
FUZZ_SECONDS = 20


def _mutated(text: str, rng: random.Random) -> str:
    """``text`` with 1 to 3 numeric cells (counts, times, numeric settings) replaced by edge values."""
    rows = list(csv.reader(io.StringIO(text.split("\n", 1)[1] if text.startswith("#") else text)))
    rows = [r for r in rows if r and not r[0].startswith("#")]
    cells = [(i, j) for i, r in enumerate(rows[1:], 1) for j in range(2, 9)
             if (r[0] != "setting" and j < 8 and r[j] != "") or (r[0] == "setting" and j == 8 and r[1] != "version")]
    for _ in range(rng.randint(1, 3)):
        i, j = rng.choice(cells)
        rows[i][j] = rng.choice(FUZZ_VALUES)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def test_value_fuzz_of_snapshots_ends_in_a_result_or_a_named_error():
    """Every mutated file gives a fit (and what-if table) or a named error, each within FUZZ_SECONDS; no error is
    the estimators' catch-all, which would mean a failure no check names."""
    bases = [EXAMPLE] + [from_model(s, p, **w).to_csv() for s, p, w in ROUND_TRIP_RUNS[:3]]
    rng = random.Random(20261125)
    outcomes = {"result": 0, "named": 0}
    for k in range(FUZZ_FILES):
        text = _mutated(bases[k % len(bases)], rng)
        start = time.perf_counter()
        try:
            snap = parse(text)
            fitted = fit.fit(snap)
            if fitted.scenario:
                whatif.table(fitted, snap)
            outcomes["result"] += 1
        except ParameterError as err:
            assert "relations fail" not in str(err), text
            outcomes["named"] += 1
        assert time.perf_counter() - start < FUZZ_SECONDS, text
    assert outcomes["result"] > 0 and outcomes["named"] > 0, outcomes


def test_the_upload_panel_names_each_door_error_without_a_traceback():
    from models.book.widgets import SnapshotPanel

    panel = SnapshotPanel(your_server.EXAMPLE)
    uploads = {
        "sessions.csv": (_with_setting(EXAMPLE, "sessions", "1000000000").encode(), "out of range"),
        "interval.csv": (_with_setting(EXAMPLE, "interval_s", "1e-9").encode(), "out of range"),
        "big.csv": (b"x" * (MAX_FILE_BYTES + 1), "snapshot too large"),
        "binary.csv": (bytes(range(256)) * 4, "malformed snapshot"),
    }
    for name, (content, kind) in uploads.items():
        panel._on_upload({"new": [{"name": name, "content": memoryview(content)}]})
        assert f"{name}: {kind}: " in panel.status.value, panel.status.value


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--interval-s", "1e-7", "interval_s=1e-07 is out of range: use a number of seconds from 0.001"),
    ("--interval-s", "nan", "interval_s=nan is out of range"), ("--start-s", "1e300", "start_s=1e+300 is out of range"),
    ("--start-s", "-1", "start_s=-1.0 is out of range"),
])
def test_a_model_snapshot_window_a_capture_could_not_have_is_refused(flag, value, message, capsys):
    assert cli.main(["snapshot", "convoy", "requests=100", flag, value]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"error: {message}") and captured.err.count("\n") == 1


def test_ctrl_c_during_a_sweep_is_one_line_130_and_leaves_the_stored_table():
    """The whole process group gets Ctrl-C (as a terminal sends it): workers stop, the table stays as it was."""
    import hashlib
    import os

    stored = ROOT / "book" / "data" / "hot_page.csv"
    before = hashlib.sha256(stored.read_bytes()).hexdigest()
    proc = subprocess.Popen([sys.executable, "-m", "models", "sweep", "hot_page", "--jobs", "2"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130 and out == ""
    assert "Traceback" not in err and err.splitlines()[-1] == "error: interrupted (Ctrl-C); nothing more was written"
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == before


def test_a_relation_that_goes_below_a_floor_is_reported_clipped_not_floored():
    """A signal wait per wait below the assumed switch gives a negative wake-up: held at 0, and said so."""
    snap = from_model("parallel-insert", {"maxdop": 16, "hold_us": 6.0}, start_s=0.02, interval_s=0.1)
    waits = snap.get("wait", "LATCH_EX")
    text = _with_row(snap.to_csv(), "wait,LATCH_EX,", f"wait,LATCH_EX,{waits:.0f},"
                     f"{snap.get('wait', 'LATCH_EX', 'time_ms')},{snap.get('wait', 'LATCH_EX', 'max_time_ms')},"
                     f"{0.3 * waits / 1000.0:.3f},,,")
    fitted = fit.fit(parse(text), replicates=2)
    wakeup = fitted.params["wakeup_us"]
    assert (wakeup.estimate, wakeup.clipped) == (0.0, "low")
    assert "the relation gives -1.7 us" in wakeup.how


# ----------------------------------------------------------------------------- what an adversarial pass found


def test_devices_and_pipes_are_read_only_up_to_the_cap(capsys):
    assert cli.main(["fit", "/dev/zero"]) == 2
    assert capsys.readouterr().err.startswith("error: snapshot too large: /dev/zero: 33,554,433 bytes")
    for bad in ("", None, "a\0b", "a" * 5000, b"path"):
        with pytest.raises(ParameterError, match=r"malformed snapshot|not a file name|cannot be read|no such file"):
            try:
                read(bad)
            except ParameterError as err:
                raise ParameterError(f"{err.kind}: {err}") from None
    for bad in (None, b"source,name", 5):
        with pytest.raises(ParameterError, match=r"given where a snapshot's text belongs"):
            parse(bad)


def test_the_python_front_of_fit_and_whatif_checks_its_arguments():
    snap = parse(EXAMPLE)
    for kwargs, message in (({"replicates": 1}, "replicates=1 is out of range"),
                            ({"replicates": 10**9}, "replicates=1000000000 is out of range"),
                            ({"replicates": "3"}, "replicates='3' is out of range"),
                            ({"progress": 3}, "progress=3 is not allowed")):
        with pytest.raises(fit.FitError, match=message):
            fit.fit(snap, **kwargs)
    with pytest.raises(fit.FitError, match="snap=NoneType is not a Snapshot"):
        fit.fit(None)
    with pytest.raises(ParameterError, match="fit=NoneType is not a Fit"):
        whatif.table(None)
    with pytest.raises(ParameterError, match=r"scenario='' is unknown"):
        fit.fit(snap, scenario="")


def test_long_names_and_fields_are_cut_in_messages():
    long_setting = _with_row(EXAMPLE, "setting,version,", "setting," + "N" * 900 + ",,,,,,,1")
    with pytest.raises(ParameterError) as err:
        parse(long_setting)
    assert len(str(err.value)) < 400  # the name cut to 30 characters; the rest lists the 15 settings a capture takes
    with pytest.raises(ParameterError, match="a field of 100,000 characters"):
        parse(_with_row(EXAMPLE, "setting,version,", "setting," + "N" * 100_000 + ",,,,,,,1"))
    with pytest.raises(ParameterError, match=r"setting interval_s's value='nan' is not a finite number"):
        parse(_with_setting(EXAMPLE, "interval_s", "nan"))


def test_a_partitioned_key_takes_at_most_the_trees_its_keys_can_hold():
    partitions = models.get_scenario("last-page-insert").param("partitions")
    assert partitions.high == 128
    result = models.run("last-page-insert", key="partitioned", partitions=128, sessions=4, inserts_per_session=50)
    assert result.throughput_per_s > 0
    with pytest.raises(ParameterError, match=r"partitions=129 is out of range"):
        models.run("last-page-insert", key="partitioned", partitions=129)


def test_a_run_that_would_fill_too_many_pages_is_refused_at_once():
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=r"could fill 2,008,408 pages: use at most 500,000"):
        models.run("last-page-insert", sessions=2, inserts_per_session=1_000_000, row_bytes=8060)
    assert time.perf_counter() - start < 5


def test_a_model_snapshot_window_after_the_run_is_refused():
    with pytest.raises(ParameterError, match=r"start_s=999000 is at or after the end of the run"):
        from_model("convoy", {"requests": 100}, start_s=999_000, interval_s=999)


def test_a_saturated_closed_latch_fits_with_its_think_time_clipped_not_refused():
    """Waits counted as they end may have begun before the interval: a saturated latch's workers can show more
    waiting than the interval held, which is the busy-time bound's case, not a contradiction."""
    fitted = fit.fit(from_model("closed-latch", {"workers": 1024, "acquires": 400_000}), replicates=2)
    assert fitted.params["hold_ms"].estimate > 0 and fitted.params["think_ms"].clipped in ("", "low")


def test_grant_queue_counts_that_bound_nothing_are_refused():
    good = from_model("cci-insert", {}).to_csv()
    sessions = int(parse(good).setting("sessions"))
    row = next(line for line in good.splitlines() if line.startswith("wait,RESOURCE_SEMAPHORE,"))
    fields = row.split(",")
    for waits, message in ((sessions, "every query waited"), (0, "no query waited"),
                           (sessions + 1, "a query waits for its grant at most once")):
        changed = list(fields)
        changed[2] = str(waits)
        changed[3] = "0" if waits == 0 else changed[3]
        with pytest.raises(fit.FitError, match=message):
            fit.fit(parse(_with_row(good, "wait,RESOURCE_SEMAPHORE,", ",".join(changed))),
                    scenario="cci-insert")


def test_a_change_that_takes_the_model_out_of_range_is_not_modelled_in_the_table():
    from dataclasses import replace

    fitted = fit.fit(from_model("cci-insert", {}))
    fitted.params["max_server_memory_mb"] = replace(fitted.params["max_server_memory_mb"], estimate=4_194_304)
    table = whatif.table(fitted)
    row = table[table["change"] == "more-memory"].iloc[0]
    assert np.isnan(row["throughput"]) and row["note"].startswith("not modelled: more-memory: max_server_memory_mb")


def test_help_to_a_full_stdout_and_a_closed_stdout_are_one_line_and_non_zero():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "models", "run", "--help"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=600)
    assert done.returncode == 1 and done.stderr == "error: standard output: No space left on device\n"
    closed = subprocess.run(f"{sys.executable} -m models list >&-", shell=True, stderr=subprocess.PIPE, text=True,
                            timeout=600)
    assert closed.returncode == 1 and closed.stderr == "error: standard output is closed: nothing can be printed\n"
