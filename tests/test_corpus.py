"""Issue 41: the fit on captures it was not written for, each with its truth in a sidecar (tests/captures/).

Generated captures lay a server's background over a model run (models/fitting/background.py, written by
scripts/make_captures.py); published ones hold what an author measured and nothing more.  Every capture is
diagnosed as its sidecar says, with exit code 0 from the command line whatever the answer; every modelled one is
fitted with ranges and bands, under the DBA's own names, and the truth lies within the span over the bands.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

import models
from models.cli import main
from models.counters import evidence
from models.fitting import fit
from models.fitting import whatif
from models.counters.snapshot import read

CAPTURES = Path(__file__).parent / "captures"
PATHS = sorted([*CAPTURES.glob("*.csv"), *(CAPTURES / "published").glob("*.csv")])
MODELLED = [p for p in PATHS if json.loads(p.with_suffix(".truth.json").read_text()).get("fit")]
# A parameter whose true value the capture cannot show, and why (the model's range is right about what it can see).
UNSEEN = {("cci_grant_queue", "compress_us_per_row"): "the CPU per row is read to 0.3%: ms rounding and the "
                                                      "delta rows' share, below what the deterministic model's range "
                                                      "carries",
          ("version_store_40_on_24", "hold_us"): "a miss, held below (test_a_miss_is_named_here_and_not_hidden)"}


def truth(path: Path) -> dict:
    return json.loads(path.with_suffix(".truth.json").read_text())


@lru_cache(maxsize=None)
def answered(path: Path) -> fit.Fit:
    return fit.answer(read(path))


def test_the_corpus_has_twenty_captures_and_published_ones():
    assert len([p for p in PATHS if p.parent == CAPTURES]) >= 20
    assert len([p for p in PATHS if p.parent.name == "published"]) >= 5
    assert all(p.with_suffix(".truth.json").exists() for p in PATHS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_capture_is_diagnosed_right_with_exit_code_0(path, capsys):
    """The command line prints the diagnosis first and exits 0 for every answer: fitted, refused or not a latch."""
    expected = truth(path)["diagnosis"]
    code = main(["fit", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    first = " ".join(out.split("\nevidence:")[0].split())  # the diagnosis line, unwrapped
    assert first.startswith("diagnosis: ") and any(first[len("diagnosis: "):].startswith(name) for name in expected), \
        (first, expected)
    assert "error:" not in err


@pytest.mark.parametrize("path", MODELLED, ids=[p.stem for p in MODELLED])
def test_modelled_captures_are_fitted_with_ranges_that_hold_the_truth_over_the_bands(path):
    """The fit stands, every fitted value has a range, and the truth lies in the span over the bands (the ranges
    alone measure sampling: an assumption the capture cannot check moves an estimate past them)."""
    f, known = answered(path), truth(path)
    assert f.scenario == known["scenario"] and not f.refusal, f.refusal
    fitted = {name: e for name, e in f.params.items() if e.basis == "fitted"}
    assert fitted and all(e.low <= e.estimate <= e.high for e in fitted.values())
    acting = models.get_scenario(f.scenario).round_trip.acting
    for name, e in fitted.items():
        if name not in known["truth"] or (path.stem, name) in UNSEEN:
            continue
        true = acting[name](known["truth"]) if name in acting else known["truth"][name]
        low, high = (e.low, e.high) if e.band_low is None else (e.band_low, e.band_high)
        assert low <= true <= high, (name, true, e)


def test_a_miss_is_named_here_and_not_hidden():
    """A fit whose span misses the truth, kept in sight so that a change that mends or worsens it shows: the version
    store with 40 connections on 24 schedulers, whose hold comes out low (the repairman leaves out the waiters
    queued behind their scheduler's other worker)."""
    vs = answered(CAPTURES / "version_store_40_on_24.csv").params["hold_us"]
    assert vs.band_high < truth(CAPTURES / "version_store_40_on_24.csv")["truth"]["hold_us"] < 1.2 * vs.band_high


def test_names_come_from_the_capture():
    """The DBA's index and database names are what the fit reports, never the model's own table."""
    for path in MODELLED:
        names = truth(path).get("names") or {}
        if not names.get("index") or truth(path)["scenario"] != "last-page-insert":
            continue
        text = json.dumps(answered(path).to_dict())
        assert names["index"] in text and "PK_orders" not in text and "latch_models" not in text, path.stem


def test_the_default_capture_is_enough_for_the_hot_page_and_the_version_store():
    """No extended events, other work and CPU queueing: fitted, with the background named as such."""
    for stem in ("hot_page_busy_instance", "hot_page_cpu_queue", "version_store_40_on_24"):
        path = CAPTURES / f"{stem}.csv"
        assert not read(path).has("xevent")
        f = answered(path)
        assert f.params and f.background and any("other work" in line for line in f.background), stem


def test_cpu_queueing_in_the_signal_wait_is_charged_to_the_cpu():
    """200 sessions on 32 schedulers with 0.8 ms of CPU queueing in every signal wait: the hand-off keeps what
    the latch can hold, the rest goes to the time between calls, and the caveat says how much."""
    f = answered(CAPTURES / "hot_page_cpu_queue.csv")
    assert any("CPU queueing" in c and "Little's law" in c for c in f.caveats)


@pytest.mark.parametrize("stem", ["hot_page_sales", "version_store_40_on_24"])
def test_whatifs_carry_the_bands_and_say_whether_a_change_helps_across_them(stem):
    path = CAPTURES / f"{stem}.csv"
    f = answered(path)
    table = whatif.table(f, read(path)).set_index("change")
    changed = table.drop(index="now")
    assert changed["band_low"].notna().all()
    assert changed["verdict"].str.match(r"(helps across the whole band|hurts across the whole band|depends on \w+)").all()
    # the workload's share of the database's sessions is banded
    assert "sessions" in table.loc["now", "note"] or "connections" in table.loc["now", "note"]


def test_writelog_and_tempdb_answers_point_somewhere():
    log = answered(CAPTURES / "writelog_bound.csv").diagnosis
    assert log.name == evidence.LOG_WRITES
    assert any("log files' writes took" in line for line in log.evidence)
    assert any("io_stall_write_ms" in line for line in log.advice) and any("DELAYED_DURABILITY" in a for a in log.advice)
    tempdb = answered(CAPTURES / "tempdb_allocation.csv").diagnosis
    assert any("4 data file(s) on 32 schedulers" in a for a in tempdb.advice)
    assert any("neither concurrent PFS updates nor memory-optimized tempdb metadata" in a for a in tempdb.advice)
    pfs = next(line for line in tempdb.evidence if "PFS pages" in line)
    assert "the single page with the most was" in pfs  # not "most on 2:1:1" for a page with a fifth of them


def test_a_partial_capture_is_diagnosed_and_lists_what_it_lacks():
    f = answered(CAPTURES / "published" / "white2022_fair_maxdop11.csv")
    assert f.diagnosis.name == "NESTING_TRANSACTION_FULL"
    assert any(m.startswith("no scheduler rows") for m in f.diagnosis.missing)
    assert any(m.startswith("no index rows") for m in f.diagnosis.missing)


def test_a_second_problem_and_cpu_pressure_are_named_beside_the_first():
    """Another database's slow log beside the hot page, and 1.5 runnable tasks a scheduler: each is said."""
    mixed = answered(CAPTURES / "mixed_hot_page_writelog.csv").diagnosis
    assert any(a.startswith("also on top: WRITELOG") and "database 9's log file is the slowest" in a
               for a in mixed.advice)
    queued = answered(CAPTURES / "hot_page_cpu_queue.csv").diagnosis
    assert any(a.startswith("also: CPU pressure") for a in queued.advice)


def test_a_change_says_what_it_costs_that_the_model_lacks():
    f = answered(CAPTURES / "hot_page_sales.csv")
    guid = whatif.predict(f, "guid-key")
    assert guid.note.startswith("not in the model: random keys split pages")


def test_a_count_0_row_longer_than_its_waits_could_be_is_refused_naming_it():
    from models.counters.snapshot import InconsistentSnapshot, parse

    text = (CAPTURES / "hot_page_sales.csv").read_text()
    row = next(line for line in text.splitlines() if line.startswith("wait,PAGELATCH_SH,"))
    cells = row.split(",")
    with pytest.raises(InconsistentSnapshot, match="PAGELATCH_SH has time_ms=.* with count=0"):
        parse(text.replace(row, ",".join([cells[0], cells[1], "0", *cells[3:]])))


def test_the_ssms_column_header_line_is_skipped():
    from models.counters.snapshot import parse

    text = (CAPTURES / "hot_page_sales.csv").read_text()
    assert parse("csv\r\n" + text).rows.equals(parse(text).rows)


def test_whatif_on_a_capture_with_no_model_answers_with_exit_code_0(capsys):
    code = main(["whatif", str(CAPTURES / "healthy.csv")])
    out, err = capsys.readouterr()
    assert code == 0 and "no what-ifs:" in out and not err


def test_an_assumed_policy_the_capture_contradicts_is_refused_naming_the_count():
    f = fit.answer(read(CAPTURES / "version_store_40_on_24.csv"), assume={"policy": "unfair"})
    assert "LATCH_SPIN_STATS" in f.refusal and "no collision" in f.refusal and f.diagnosis.scenario


# ----------------------------------------------------------------------------- the pieces, one by one


def _capture(settings: dict, rows: list[str]) -> str:
    head = "source,name,count,time_ms,max_time_ms,signal_time_ms,spins,backoffs,value\n"
    lines = [f"setting,{k},,,,,,,{v}" for k, v in settings.items()] + rows
    return head + "\n".join(lines) + "\n"


def test_the_cpu_queue_per_switch_follows_from_the_runnable_tasks_by_littles_law():
    from models.counters.snapshot import parse

    text = _capture({"interval_s": 2, "schedulers": 2, "runnable_tasks": 3.0},
                    ["scheduler,0,40000,1500,,,,,", "scheduler,1,20000,1500,,,,,",
                     "wait,SOS_SCHEDULER_YIELD,1000,50,1,50,,,"])
    delay, how = evidence.runnable_delay_us(parse(text))
    assert delay == pytest.approx(3.0 * 2 * 1e6 / 60_000) and "Little's law" in how  # 100 us a switch
    without = parse(text.replace("setting,runnable_tasks,,,,,,,3.0\n", ""))
    assert evidence.runnable_delay_us(without)[0] == pytest.approx(50.0)  # SOS_SCHEDULER_YIELD: all signal wait


def test_a_signal_wait_longer_than_any_hand_off_leaves_its_cpu_queueing_to_the_cpu():
    ceiling = evidence.HANDOFF_CEILING_US
    assert evidence.feasible_handoff(16, 1000.0, 0.5, 9.7, 500.0, ceiling) == (9.7, "")  # a hand-off as it is
    charged, how = evidence.feasible_handoff(16, 16_000.0, 0.5, 160.0, 150.0, ceiling)
    assert charged == pytest.approx(10.0) and "CPU queueing" in how
    charged, _ = evidence.feasible_handoff(16, 16_000.0, 0.5, 160.0, 400.0, ceiling)  # more queued than waited
    assert charged == ceiling


def test_a_partial_capture_lists_each_default_section_it_lacks():
    from models.counters import advice
    from models.counters.snapshot import parse

    snap = parse(_capture({"interval_s": 10}, ["wait,WRITELOG,5000,50000,80,100,,,",
                                               "latch,ACCESS_METHODS_DATASET_PARENT,3,1,1,,,,"]))
    missing = advice.missing_sections(snap)
    for section in ("scheduler", "counter", "index", "page", "file_write"):
        assert any(m.startswith(f"no {section} rows") for m in missing), section
    assert any(m.startswith("no runnable_tasks setting") for m in missing)
    d = fit.diagnose(snap)
    assert d.name == evidence.LOG_WRITES and d.missing == missing


@pytest.mark.parametrize("wait, name", [("CXPACKET", evidence.PARALLELISM), ("PAGEIOLATCH_SH", evidence.PAGE_READS),
                                        ("LCK_M_X", evidence.LOCK_WAITS), ("THREADPOOL", evidence.OTHER_WAIT)])
def test_other_top_waits_are_named_with_where_to_look(wait, name):
    from models.counters.snapshot import parse

    d = fit.diagnose(parse(_capture({"interval_s": 10, "schedulers": 4}, [f"wait,{wait},5000,50000,80,100,,,"])))
    assert d.name == name and d.advice and d.scenario is None


def test_tempdb_advice_reads_the_version():
    from models.counters import advice
    from models.fitting.background import SQL_2016, SQL_2022
    from models.counters.snapshot import parse

    def said(version: str) -> str:
        return " ".join(advice.tempdb_advice(parse(_capture(
            {"interval_s": 1, "schedulers": 16, "tempdb_data_files": 8, "version": version}, []))))
    assert "neither concurrent PFS updates nor memory-optimized tempdb metadata" in said(SQL_2016)
    assert "memory-optimized tempdb metadata" in said(SQL_2022) and "already as many as the guidance's first step" in said(SQL_2022)


def test_the_chapters_walk_through_capture_is_the_corpus_one():
    from models.book.analysis import your_server

    assert your_server.DBA_CAPTURE.read_bytes() == (CAPTURES / "hot_page_busy_instance.csv").read_bytes()


def test_a_drawn_background_is_the_same_for_the_same_seed_and_parses():
    import numpy as np

    from models.fitting.background import draw_background, with_background
    from models.fitting.capture import from_model
    from models.counters.snapshot import parse

    snap = from_model("version-store", {"connections": 12, "window_ms": 300.0}, start_s=0.05, interval_s=0.2)
    texts = [with_background(snap, draw_background(np.random.default_rng([41, 7]), updates=True), 7).to_csv()
             for _ in range(2)]
    assert texts[0] == texts[1]
    dressed = parse(texts[0])
    assert not dressed.has("xevent") and dressed.setting("database_sessions") >= 12


def test_the_realistic_coverage_study_writes_both_tables_whole(tmp_path):
    from models.book.sweeps import coverage_realistic

    paths = coverage_realistic.write(tmp_path, quick=True, progress=False, scenarios=["parallel-insert"])
    assert [p.name for p in paths] == ["coverage_realistic.csv", "coverage_realistic_trips.csv",
                                       "coverage_realistic_bands.csv"]
    import pandas as pd

    summary = pd.read_csv(paths[0])
    assert set(summary["parameter"]) >= {"hold_us", "cpu_per_row_us"} and summary["band_coverage"].notna().all()
