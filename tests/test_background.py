"""The server background laid over snapshots (models.fitting.background) and the corpus of realistic captures.

What a DBA's capture holds beside the modelled work must still be a file the parser reads, the same every time,
under the DBA's names, consistent with itself (Little's law between the runnable tasks and the signal waits),
and the corpus in tests/captures must be what scripts/make_captures.py writes.  What the fit says of the
captures is tested elsewhere.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models.counters import evidence as ev
from models.fitting.background import (
    AG_IDLE_WAITS, IDLE_WAITS, MODEL_INDEX, SOURCE_ORDER, Background, capture_text, server_only, to_crlf,
    with_background,
)
from models.fitting.capture import from_model
from models.fitting.fit import BENIGN
from models.counters.snapshot import CPU_SLACK, DELTAS, Snapshot, parse, read

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests" / "captures"
CORPUS = sorted(CAPTURES.glob("*.csv"))  # the generated corpus (published/ holds other captures)
LABELS = {"PAGELATCH", "APPEND_ONLY_STORAGE_INSERT_POINT", "NESTING_TRANSACTION_FULL", "RESOURCE_SEMAPHORE",
          "MEMORY_ALLOCATION_EXT", "LATCH_EX", "tempdb allocation and metadata contention"}
NAMES = {ev.NOT_A_LATCH, ev.HEALTHY, ev.LOG_WRITES, ev.PARALLELISM, ev.PAGE_READS, ev.LOCK_WAITS, ev.OTHER_WAIT,
         ev.ALLOCATION_PAGES, ev.UNPLACED_ALLOCATION, ev.GRANT_QUEUE} | LABELS
SIDECAR_KEYS = {"title", "source", "command", "diagnosis", "scenario", "fit", "truth", "background", "names", "notes"}


@functools.lru_cache(maxsize=None)
def _script():
    """scripts/make_captures.py as a module (registered, as its dataclasses need)."""
    spec = importlib.util.spec_from_file_location("make_captures", ROOT / "scripts" / "make_captures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def top_ranked_wait(snap: Snapshot) -> str:
    """The wait with the most time once the fit's benign waits are left out."""
    waits = snap.table("wait")
    waits = waits[~waits["name"].isin(BENIGN) & (waits["time_ms"].fillna(0) > 0)]
    return str(waits.sort_values("time_ms", ascending=False).iloc[0]["name"])


def check_rows(snap: Snapshot) -> None:
    """Every check a capture's rows must pass, stated directly (beside parse's): deltas, signal within the wait,
    CPU within the interval, tree waits within the index's, names unique per source, acquires above waits."""
    rows = snap.rows
    assert not rows.duplicated(["source", "name"]).any()
    for column in DELTAS:
        assert (rows[column].fillna(0) >= 0).all(), column
    assert (rows["count"].dropna() == rows["count"].dropna().round()).all()  # counts are whole
    waits = snap.table("wait")
    assert (waits["signal_time_ms"].fillna(0) <= waits["time_ms"].fillna(0) + 0.001).all()
    assert (snap.table("scheduler")["time_ms"].fillna(0) <= snap.interval_s * 1000.0 * CPU_SLACK).all()
    index = snap.table("index").set_index("name")["count"]
    for name, tree in snap.table("index_tree").set_index("name")["count"].items():
        assert tree <= index.get(name, 0.0), name
    latches = snap.table("latch").set_index("name")["count"]
    for name, acquires in snap.table("xevent").set_index("name")["count"].items():
        assert acquires >= latches.get(name, 0.0), name
    assert set(rows["source"]) <= set(SOURCE_ORDER)


@pytest.fixture(scope="module")
def model_snaps() -> dict[str, Snapshot]:
    """Small model runs of the scenarios the corpus uses (a fraction of a second each)."""
    return {
        "hot": from_model("last-page-insert", {"inserts_per_session": 200, "seed": 7}, start_s=0.05, interval_s=0.3),
        "hot_xe": from_model("last-page-insert", {"inserts_per_session": 200, "sessions": 40, "seed": 8},
                             start_s=0.05, interval_s=0.3, xevents=True),
        "versions": from_model("version-store", {"window_ms": 400.0, "connections": 16, "seed": 9}, start_s=0.05,
                               interval_s=0.3),
        "parallel": from_model("parallel-insert", {"rows": 200_000, "maxdop": 8, "seed": 10}, start_s=0.01,
                               interval_s=0.1, xevents=True),
    }


BUSY = Background(other_sessions=50, other_cpu_share=0.4, other_batches_per_s=3_000.0, other_transactions_per_s=500.0,
                  other_waits={"WRITELOG": (400.0, 2.0), "PAGEIOLATCH_SH": (100.0, 4.0), "CXPACKET": (50.0, 6.0),
                               "LCK_M_X": (5.0, 40.0), "SOS_SCHEDULER_YIELD": (5_000.0, 0.0),
                               "PAGELATCH_UP": (200.0, 1.0)},
                  runnable_delay_ms=0.3, long_waits={"LCK_M_S": 1_500.0, "ASYNC_NETWORK_IO": 700.0},
                  idle_waits=dict(IDLE_WAITS, **AG_IDLE_WAITS), other_pages={"2:1:1": 2.0, "2:1:118": 1.0},
                  other_indexes={"dbo.Customers.PK_Customers": (20.0, 0.4, 30.0, 200.0)},
                  updates_index="dbo.Accounts.PK_Accounts", other_buffer_acquires_per_s=50_000.0)


def random_background(rng: np.random.Generator) -> Background:
    """A background drawn at random over the ranges a server could show, xevents kept or dropped."""
    pick = lambda names, k: [str(n) for n in rng.choice(names, size=k, replace=False)]  # noqa: E731
    wait_types = ["WRITELOG", "PAGEIOLATCH_SH", "PAGEIOLATCH_EX", "CXPACKET", "CXCONSUMER", "LCK_M_X", "LCK_M_S",
                  "ASYNC_NETWORK_IO", "PAGELATCH_EX", "PAGELATCH_SH", "PAGELATCH_UP", "RESOURCE_SEMAPHORE",
                  "THREADPOOL"]
    waits = {name: (float(rng.uniform(0, 5_000)), float(rng.uniform(0, 50))) for name in pick(wait_types, 5)}
    waits["SOS_SCHEDULER_YIELD"] = (float(rng.uniform(0, 20_000)), 0.0)
    pages = {f"{int(rng.integers(1, 40))}:{int(rng.integers(1, 9))}:{int(rng.integers(1, 10**6))}":
             float(rng.uniform(0.1, 5)) for _ in range(int(rng.integers(0, 30)))}
    return Background(
        database=f"Db{int(rng.integers(1, 999))}", database_id=int(rng.integers(5, 32_767)),
        index_name=f"s{int(rng.integers(9))}.t{int(rng.integers(9))}.ix", other_sessions=int(rng.integers(0, 500)),
        other_cpu_share=float(rng.uniform(0, 0.99)), other_batches_per_s=float(rng.uniform(0, 20_000)),
        other_transactions_per_s=float(rng.uniform(0, 5_000)), other_waits=waits,
        runnable_delay_ms=float(rng.uniform(0, 2)), delay_model_waits=bool(rng.integers(2)),
        long_waits={"LCK_M_S": float(rng.uniform(1, 60_000)), "BACKUPIO": float(rng.uniform(1, 5_000))},
        other_pages=pages, other_indexes={"dbo.x.PK_x": (float(rng.uniform(0, 100)), float(rng.uniform(0, 3)),
                                                         float(rng.uniform(0, 1_000)), float(rng.uniform(0, 1_000)))},
        other_latches={name: (float(rng.uniform(0, 500)), float(rng.uniform(0, 5)))
                       for name in pick(["ACCESS_METHODS_DATASET_PARENT", "LOG_MANAGER", "FGCB_ADD_REMOVE",
                                         "APPEND_ONLY_STORAGE_INSERT_POINT", "NESTING_TRANSACTION_FULL"], 2)},
        maxdop=int(rng.integers(0, 65)), other_request_dop=int(rng.integers(1, 65)),
        tempdb_data_files=int(rng.integers(1, 33)), drop_xevents=bool(rng.integers(2)),
        whole_ms=bool(rng.integers(2)), page_samples=bool(rng.integers(2)),
        other_buffer_acquires_per_s=float(rng.uniform(0, 100_000)), grant_timeouts_per_s=float(rng.uniform(0, 1)),
        other_log_file=None if rng.integers(2) else "3:2:LOG")


# ----------------------------------------------------------------------------- the corpus


def test_the_corpus_has_the_captures_asked_for():
    names = {p.stem for p in CORPUS}
    assert len(CORPUS) >= 20
    truths = {p.stem: json.loads(p.with_suffix(".truth.json").read_text(encoding="utf-8")) for p in CORPUS}
    by_scenario = pd.Series([t["scenario"] for t in truths.values()]).value_counts(dropna=False)
    assert by_scenario.get("last-page-insert", 0) >= 4 and by_scenario.get("version-store", 0) >= 3
    assert by_scenario.get("cci-insert", 0) >= 1 and by_scenario.get("parallel-insert", 0) >= 1
    wanted = {ev.LOG_WRITES, ev.PARALLELISM, ev.PAGE_READS, ev.LOCK_WAITS, ev.GRANT_QUEUE, ev.HEALTHY}
    assert by_scenario.get("tempdb", 0) >= 2  # tempdb captures are the model's since issue 45
    server_only_names = {name for t in truths.values() if t["truth"] is None for name in t["diagnosis"]}
    assert wanted <= server_only_names
    assert sum(name.startswith("mixed_") for name in names) >= 2
    assert sum(b"\r\n" in p.read_bytes() for p in CORPUS) >= 3  # several with Windows line ends


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_corpus_capture_parses_and_says_what_it_is(path):
    snap = read(path)
    check_rows(snap)
    truth = json.loads(path.with_suffix(".truth.json").read_text(encoding="utf-8"))
    assert SIDECAR_KEYS <= set(truth) and truth["source"] == "generated"
    assert truth["diagnosis"] and set(truth["diagnosis"]) <= NAMES
    assert (truth["truth"] is None) == (truth["scenario"] is None)  # a model run's truth, or a server alone
    assert truth["fit"] == (truth["scenario"] is not None)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# ") and "scripts/make_captures.py" in text
    assert MODEL_INDEX not in text and "latch_models" not in text and "latch-models" not in text
    assert snap.setting("database") == truth["names"]["database"]
    if truth["names"].get("index"):
        assert snap.has("index_insert", truth["names"]["index"]) or snap.has("index_update", truth["names"]["index"])
    assert not snap.has("xevent") or not truth["background"]["drop_xevents"]
    assert top_ranked_wait(snap) == truth["top_wait"]
    assert {"runnable_tasks", "tempdb_data_files", "page_samples", "version"} <= set(snap.settings)


def test_the_corpus_is_what_the_script_writes():
    """Regenerated in memory, every capture and sidecar is byte for byte the file in tests/captures."""
    script = _script()
    captures = script.corpus()
    assert sorted(c.name for c in captures) == [p.stem for p in CORPUS]
    for capture in captures:
        text = capture_text(script.snapshot_of(capture), script.header(capture), crlf=capture.crlf)
        assert (CAPTURES / f"{capture.name}.csv").read_bytes() == text.encode("utf-8"), capture.name
        truth = json.dumps(script.sidecar(capture), indent=2) + "\n"
        assert (CAPTURES / f"{capture.name}.truth.json").read_text(encoding="utf-8") == truth, capture.name
    seeds = [c.source.params["seed"] for c in captures if hasattr(c.source, "params")]
    assert len(seeds) == len(set(seeds)) and len({c.seed for c in captures}) == len(captures)  # fixed and distinct


def test_server_only_captures_put_the_wait_asked_for_on_top():
    script = _script()
    servers = [c for c in script.corpus() if isinstance(c.source, script.Server)]
    assert len(servers) >= 7  # the two tempdb ones are the tempdb model's since issue 45
    for capture in servers:
        snap = script.snapshot_of(capture)
        assert top_ranked_wait(snap) == capture.top_wait, capture.name
        assert snap.setting("sessions") == capture.background.other_sessions
    writelog = read(CAPTURES / "writelog_bound.csv")
    waits = writelog.table("wait")
    ranked = waits[~waits["name"].isin(BENIGN)]["time_ms"].sum()
    assert writelog.get("wait", "WRITELOG", "time_ms") / ranked == pytest.approx(0.95, abs=0.02)
    log = writelog.table("file_write")
    log = log[log["name"].str.endswith(":LOG") & log["name"].str.startswith("6:")].iloc[0]
    assert log["time_ms"] / log["count"] == pytest.approx(11.0, rel=0.05)  # the log's stall is WRITELOG's


@pytest.mark.parametrize("top", ["WRITELOG", "CXPACKET", "PAGEIOLATCH_SH", "LCK_M_X", "RESOURCE_SEMAPHORE",
                                 "PAGELATCH_UP", "ASYNC_NETWORK_IO"])
def test_server_only_top_wait_is_the_one_with_the_most_time(top):
    others = {"WRITELOG": (200.0, 1.0), "PAGEIOLATCH_SH": (50.0, 3.0), "SOS_SCHEDULER_YIELD": (30_000.0, 0.0),
              "CXCONSUMER": (5_000.0, 20.0)}
    bg = Background(other_waits=dict(others, **{top: (1_000.0, 30.0)}), other_cpu_share=0.3, runnable_delay_ms=0.2,
                    other_sessions=40, long_waits={"LCK_M_S": 900.0})
    for seed in range(3):
        snap = server_only(bg, 60.0, 16, seed)
        assert top_ranked_wait(parse(snap.to_csv())) == top


# ----------------------------------------------------------------------------- with_background


def test_with_background_is_a_pure_function_of_its_inputs(model_snaps):
    snap = model_snaps["hot"]
    first = with_background(snap, BUSY, seed=5).to_csv()
    assert with_background(snap, BUSY, seed=5).to_csv() == first
    assert with_background(parse(snap.to_csv()), BUSY, seed=5).to_csv() == first
    assert with_background(snap, BUSY, seed=6).to_csv() != first
    assert server_only(BUSY, 60.0, 8, 3).to_csv() == server_only(BUSY, 60.0, 8, 3).to_csv()
    assert snap.to_csv() == model_snaps["hot"].to_csv()  # the input is left as it was


@pytest.mark.parametrize("seed", range(12))
def test_no_background_makes_a_row_the_parser_refuses(model_snaps, seed):
    rng = np.random.default_rng(1_000 + seed)
    bg = random_background(rng)
    for snap in list(model_snaps.values()) + [None]:
        out = server_only(bg, float(rng.choice([1.0, 3.5, 60.0])), int(rng.integers(1, 65)), seed) if snap is None \
            else with_background(snap, bg, seed)
        again = parse(out.to_csv())
        check_rows(again)
        assert parse(to_crlf(out.to_csv())).to_csv() == again.to_csv()
        assert again.settings == out.settings


def test_the_rename_leaves_no_model_name_anywhere(model_snaps):
    for key, snap in model_snaps.items():
        text = with_background(snap, BUSY, seed=1).to_csv()
        assert MODEL_INDEX not in text and "dbo.orders" not in text, key
        assert "latch_models" not in text and "latch-models" not in text, key
        out = parse(text)
        assert out.setting("database") == BUSY.database and out.setting("database_id") == BUSY.database_id
        assert out.setting("version") == BUSY.version
    hot = parse(with_background(model_snaps["hot"], BUSY, seed=1).to_csv())
    model = model_snaps["hot"]
    for source in ("index", "index_insert", "index_allocation"):
        assert hot.get(source, BUSY.index_name) >= model.get(source, MODEL_INDEX) > 0, source


def test_drop_xevents_leaves_no_xevent_row_and_keeping_them_keeps_acquires_above_waits(model_snaps):
    for snap in (model_snaps["hot_xe"], model_snaps["parallel"]):
        assert snap.has("xevent")
        assert not parse(with_background(snap, BUSY, seed=2).to_csv()).has("xevent")
        kept = parse(with_background(snap, dataclasses.replace(BUSY, drop_xevents=False), seed=2).to_csv())
        assert kept.has("xevent")
        check_rows(kept)
    kept = parse(with_background(model_snaps["hot_xe"], dataclasses.replace(BUSY, drop_xevents=False),
                                 seed=2).to_csv())
    assert kept.get("xevent", "BUFFER") > model_snaps["hot_xe"].get("xevent", "BUFFER")  # other work's acquires


@pytest.mark.parametrize("whole_ms", [False, True])
def test_runnable_tasks_and_signal_waits_agree_by_littles_law(model_snaps, whole_ms):
    """runnable_tasks = context switches per second x the runnable delay; every wait the background adds has
    that delay per wait as its signal wait (rows rounded to whole ms: within half a ms)."""
    delay = BUSY.runnable_delay_ms
    for snap in (model_snaps["hot"], model_snaps["versions"], None):
        bg = dataclasses.replace(BUSY, whole_ms=whole_ms)
        base = server_only(Background(idle_waits={}, other_latches={}, other_spinlocks={}), 60.0, 8, 0) \
            if snap is None else snap
        out = server_only(bg, 60.0, 8, 4) if snap is None else with_background(snap, bg, seed=4)
        switches_per_s = out.table("scheduler")["count"].sum() / out.interval_s
        assert out.setting("runnable_tasks") == pytest.approx(switches_per_s * delay / 1000.0, abs=0.0006)
        before = {r.name: r for r in base.table("wait").itertuples(index=False)}
        tolerance = 0.5 + 0.001 if whole_ms else 0.001
        for row in out.table("wait").itertuples(index=False):
            old = before.get(row.name)
            count = row.count - (old.count if old is not None else 0.0)
            signal = row.signal_time_ms - (old.signal_time_ms if old is not None and not math.isnan(old.signal_time_ms)
                                           else 0.0)
            if row.count == 0:  # a long wait begun before the first read: its time without a count or signal
                assert row.time_ms > 0 and signal == 0
                continue
            assert signal == pytest.approx(count * delay, abs=tolerance), row.name
        sos = out.table("wait").set_index("name").loc["SOS_SCHEDULER_YIELD"]
        assert sos["signal_time_ms"] == sos["time_ms"]  # all of it is the runnable delay


def test_delay_model_waits_adds_the_queue_to_the_runs_own_waits_and_their_latch_and_index_rows(model_snaps):
    snap = model_snaps["hot"]
    plain = dataclasses.replace(BUSY, other_waits={}, other_indexes={}, other_latches={}, idle_waits={}, long_waits={},
                                whole_ms=False)
    off = with_background(snap, plain, seed=3)
    on = with_background(snap, dataclasses.replace(plain, delay_model_waits=True), seed=3)
    ex = snap.get("wait", "PAGELATCH_EX")
    added = ex * BUSY.runnable_delay_ms
    assert on.get("wait", "PAGELATCH_EX", "signal_time_ms") - off.get("wait", "PAGELATCH_EX", "signal_time_ms") == \
        pytest.approx(added, abs=0.002)
    assert on.get("index", BUSY.index_name, "time_ms") - off.get("index", BUSY.index_name, "time_ms") == \
        pytest.approx(snap.get("index", MODEL_INDEX) * BUSY.runnable_delay_ms, abs=0.002)
    waits = snap.get("wait", "PAGELATCH_EX") + snap.get("wait", "PAGELATCH_SH")
    assert on.get("latch", "BUFFER", "time_ms") - off.get("latch", "BUFFER", "time_ms") == \
        pytest.approx(waits * BUSY.runnable_delay_ms, abs=0.002)


def test_the_background_adds_what_it_says(model_snaps):
    snap = model_snaps["hot"]
    out = with_background(snap, BUSY, seed=8)
    assert out.setting("sessions") == snap.setting("sessions") + BUSY.other_sessions
    assert out.setting("tempdb_data_files") == BUSY.tempdb_data_files
    assert out.setting("page_samples") == round(snap.interval_s) + 1
    assert out.get("counter", "Batch Requests/sec") > snap.get("counter", "Batch Requests/sec")
    assert out.get("counter", "Transactions/sec") > snap.get("counter", "Transactions/sec")
    cpu_before, cpu_after = snap.table("scheduler")["time_ms"].sum(), out.table("scheduler")["time_ms"].sum()
    capacity = snap.interval_s * 1000.0 * len(snap.table("scheduler"))
    assert cpu_after - cpu_before == pytest.approx(BUSY.other_cpu_share * capacity, rel=0.1)
    assert out.table("scheduler")["count"].sum() > snap.table("scheduler")["count"].sum()
    waits = out.table("wait")
    zero = waits[(waits["count"] == 0) & (waits["time_ms"] > 0)]
    assert set(zero["name"]) == set(BUSY.long_waits)  # a long wait: time, no count
    server = server_only(BUSY, 60.0, 8, 8)  # a minute: every idle wait and latch class moves
    assert set(BUSY.idle_waits) <= set(server.table("wait")["name"])
    assert set(BUSY.other_latches) <= set(server.table("latch")["name"])
    assert set(BUSY.other_spinlocks) <= set(server.table("spinlock")["name"])
    assert out.get("latch", "BUFFER") == snap.get("latch", "BUFFER") + sum(
        out.get("wait", n) - snap.get("wait", n) for n in waits["name"] if n.startswith(("PAGELATCH_", "PAGEIOLATCH_")))
    assert out.has("index_update", "dbo.Accounts.PK_Accounts")
    assert out.has("file_write", f"{BUSY.database_id}:2:LOG") and out.has("file_read", f"{BUSY.database_id}:1:ROWS")
    pages = out.table("page")
    assert 0 < len(pages) <= 20 and (pages["name"].str.startswith(f"{BUSY.database_id}:1:")).any()
    assert set(server.table("page")["name"]) == {"2:1:1", "2:1:118"}  # other work's waiters, on tempdb's pages
    assert list(pd.unique(out.rows["source"])) == [s for s in SOURCE_ORDER if s in set(out.rows["source"])]


def test_crlf_files_parse_as_their_lf_twins(model_snaps, tmp_path):
    out = with_background(model_snaps["hot"], BUSY, seed=9)
    lf, crlf = capture_text(out, ["a capture"]), capture_text(out, ["a capture"], crlf=True)
    assert "\r\n" in crlf and crlf.count("\r\n") == lf.count("\n") and "\r\n" not in lf
    assert to_crlf(crlf) == crlf  # no doubled carriage returns
    path = tmp_path / "crlf.csv"
    path.write_bytes(crlf.encode("utf-8"))
    assert read(path).to_csv() == parse(lf).to_csv() == out.to_csv()
    for capture in CORPUS:
        if b"\r\n" in capture.read_bytes():
            assert read(capture).to_csv() == parse(capture.read_bytes().decode("utf-8").replace("\r\n", "\n")).to_csv()


@pytest.mark.parametrize("bad", [
    {"database_id": 2}, {"other_cpu_share": 1.0}, {"other_cpu_share": -0.1}, {"other_waits": {"WRITELOG": (-1.0, 1.0)}},
    {"other_waits": {"SOS_SCHEDULER_YIELD": (10.0, 1.0)}}, {"database": "latch_models"}, {"index_name": "PK_orders"},
    {"long_waits": {"LCK_M_S": 0.0}}, {"other_pages": {"2:1": 1.0}}, {"other_log_file": "7:2:LOG"},
    {"runnable_delay_ms": -0.1}, {"idle_waits": {"SLEEP_TASK": (1, 0.0)}}, {"other_waits": {"LATCH_EX": (1.0, 1.0)}},
    {"other_request_dop": 0}, {"maxdop": 65}, {"other_sessions": -1},
])
def test_a_background_no_server_could_have_is_refused(bad):
    with pytest.raises(ValueError, match="background refused"):
        Background(**bad)


def test_a_delay_too_long_for_any_capture_is_refused_not_written():
    bg = Background(other_cpu_share=0.9, other_waits={"SOS_SCHEDULER_YIELD": (500_000.0, 0.0)},
                    runnable_delay_ms=1_000.0)
    with pytest.raises(ValueError, match="runnable tasks"):
        server_only(bg, 10.0, 64, 1)
