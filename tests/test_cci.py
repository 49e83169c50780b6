"""Memory grants, parallel workers and the serialised OS path: the engine's rules, closed forms, Obbish's setups."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

import models
from models import ParameterError
from models.analytic import mva_repairman
from models.book import charts
from models.book.analysis import cci
from models.engine.program import BR_FAILED, GRANT, OS_SPIN, Program
from models.engine.state import (
    DONE, GF_OS_BUSY, GF_OS_KERNEL, GL_GRANTED, GRANT_OUTCOMES, G_SEM_FORCED, G_SEM_GRANTED, G_SEM_LOG_USED,
    G_SEM_TIMEOUTS, G_SEM_WAITS, WF_CPU, WF_GRANT_WAIT, W_GRANT_OUTCOME, W_SCHEDULER, W_STATE,
)
from models.result import build
from models.scenarios import cci_decommit
from models.scenarios import cci_insert as ins
from models.workload import MemorySpec, Workload, simulate

ZERO = dict(context_switch_us=0.0, wakeup_us=0.0)


def _grants_workload(asks: list[tuple[float, int, int, float, float]], target_kb: int, limit_kb: int) -> Workload:
    """One worker per (arrival_us, requested_kb, required_kb, timeout_us, hold_us): grant, hold it as CPU, free."""
    prog = Program()
    starts = []
    for _, want, need, timeout, hold in asks:
        starts.append(prog.grant(want, need, timeout))
        failed = prog.branch(BR_FAILED)
        prog.cpu(hold)
        prog.free()
        prog.patch(failed, prog.end())
    n = len(asks)
    return Workload(program=prog, worker_start=starts, worker_scheduler=list(range(n)),
                    worker_arrival_us=[a[0] for a in asks], worker_daemon=[False] * n, worker_kind=["query"] * n,
                    latches=[], schedulers=n, memory=MemorySpec(target_kb, limit_kb), **ZERO)


def _raw_run(workload: Workload):
    raw = simulate(workload, seed=1)
    return raw.state, build(raw, "test", {}, 1)


def test_a_newcomer_queues_behind_a_waiter_even_when_memory_is_free():
    """FIFO: C's 10 KB fit in the free 40 KB at once, but B waits ahead of it, so C waits for B's grant."""
    wl = _grants_workload([(0.0, 60, 60, 1e9, 1000.0),    # A: granted, holds 1 ms
                           (100.0, 50, 50, 1e9, 1000.0),  # B: 60 + 50 > 100, waits
                           (200.0, 10, 10, 1e9, 1000.0)], target_kb=100, limit_kb=200)
    s, res = _raw_run(wl)
    assert list(s.worker_times[:, WF_GRANT_WAIT]) == pytest.approx([0.0, 900.0, 800.0])  # both granted when A frees, at 1 ms
    sem = res.wait_stats.set_index("wait_type").loc["RESOURCE_SEMAPHORE"]
    assert sem["waiting_tasks_count"] == 2 and sem["wait_time_ms"] == pytest.approx(1.7)
    assert [GRANT_OUTCOMES[o] for o in s.workers[:, W_GRANT_OUTCOME]] == ["granted"] * 3
    log = s.glog[: s.run_cells[G_SEM_LOG_USED]]
    assert log[:, GL_GRANTED].max() <= 100  # nobody went over the target without a time-out


def test_at_the_timeout_a_waiter_is_forced_its_required_grant_or_fails():
    """Target 100, limit 150: B (asks 80, needs 40) is forced 40 at its time-out; C (needs 60, asks at 1 ms) still
    does not fit under the target when B is done, and at its own time-out A's 100 plus its 60 exceed the limit."""
    wl = _grants_workload([(0.0, 100, 100, 2_000.0, 10_000.0),
                           (0.0, 80, 40, 2_000.0, 100.0),
                           (1_000.0, 60, 60, 2_000.0, 100.0)], target_kb=100, limit_kb=150)
    s, res = _raw_run(wl)
    assert [GRANT_OUTCOMES[o] for o in s.workers[:, W_GRANT_OUTCOME]] == ["granted", "forced_minimum", "error_8645"]
    assert list(s.worker_times[:, WF_GRANT_WAIT]) == pytest.approx([0.0, 2_000.0, 2_000.0])
    assert s.run_cells[G_SEM_FORCED] == 1 and s.run_cells[G_SEM_TIMEOUTS] == 1
    log = s.glog[: s.run_cells[G_SEM_LOG_USED]]
    assert log[:, GL_GRANTED].max() == 140  # over the target by the forced 40, under the limit
    assert s.run_cells[G_SEM_GRANTED] == 0  # everything given back


def test_one_time_out_per_program_table():
    prog = Program()
    prog.grant(100, 100, 5_000.0)
    with pytest.raises(ValueError, match="timeout_us=1000.0 differs"):
        prog.grant(100, 100, 1_000.0)
    with pytest.raises(ValueError, match="required_kb=200 must be"):
        prog.grant(100, 200, 5_000.0)


def test_a_timer_left_from_a_grant_in_time_does_not_time_out_the_next_request():
    """W waits 0.99 ms for its first grant (its 5 ms timer stays pending), frees it, asks again at 1.1 ms and
    waits behind H: the old timer (due at 5.01 ms) must not end the new wait, which times out at its own 6.1 ms."""
    prog = Program()
    h = prog.grant(100, 100, 5_000.0)
    prog.cpu(1_000.0)
    prog.free()
    prog.grant(100, 100, 5_000.0)  # queued behind W, granted when W frees at 1.1 ms
    prog.cpu(10_000.0)
    prog.free()
    prog.end()
    w = prog.grant(100, 100, 5_000.0)
    prog.cpu(100.0)
    prog.free()
    prog.grant(100, 100, 5_000.0)
    prog.end()
    wl = Workload(program=prog, worker_start=[h, w], worker_scheduler=[0, 1], worker_arrival_us=[0.0, 10.0],
                  worker_daemon=[False, False], worker_kind=["q", "q"], latches=[], schedulers=2,
                  memory=MemorySpec(100, 1_000), **ZERO)
    s, res = _raw_run(wl)
    assert GRANT_OUTCOMES[s.workers[1, W_GRANT_OUTCOME]] == "forced_minimum"
    assert s.worker_times[1, WF_GRANT_WAIT] == pytest.approx(5_000.0)  # the second wait, to its own deadline
    assert s.run_cells[G_SEM_WAITS] == 3 and s.run_cells[G_SEM_FORCED] == 1


def test_fork_and_join_share_one_grant_and_the_coordinator_waits_for_its_workers():
    prog = Program()
    work = prog.start()
    prog.cpu(10_000.0)
    prog.end()
    coord = prog.grant(100, 100, 1e9)
    prog.fork(work, 2)
    prog.join()
    prog.free()
    prog.end()
    wl = Workload(program=prog, worker_start=[coord, coord, coord], worker_scheduler=[-1, -1, -1],
                  worker_arrival_us=[0.0, math.inf, math.inf], worker_daemon=[False] * 3,
                  worker_kind=["coordinator", "worker", "worker"], latches=[], schedulers=3,
                  memory=MemorySpec(100, 100), **ZERO)
    s, res = _raw_run(wl)
    assert res.elapsed_ms == pytest.approx(10.0)
    cx = res.wait_stats.set_index("wait_type").loc["CXCONSUMER"]
    assert cx["waiting_tasks_count"] == 1 and cx["wait_time_ms"] == pytest.approx(10.0)
    assert s.run_cells[G_SEM_GRANTED] == 0 and s.run_cells[G_SEM_LOG_USED] == 2  # one grant, asked once, given back once
    assert s.workers[1, W_SCHEDULER] != s.workers[2, W_SCHEDULER]  # the two workers on distinct schedulers
    assert (s.workers[:, W_STATE] == DONE).all()


def test_oscall_is_first_come_first_served_and_a_saturated_path_sets_the_run_time():
    """N sessions, each K times: c us of CPU then d us in the OS path (spinning).  With N d > c + d the path
    never idles after the first c, so the last session ends at exactly c + N K d."""
    n, k, c, d = 6, 40, 100.0, 50.0
    prog = Program()
    start = prog.cpu(c)
    prog.oscall(d, OS_SPIN)
    prog.loop(start, k)
    prog.end()
    wl = Workload(program=prog, worker_start=[start] * n, worker_scheduler=list(range(n)),
                  worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["s"] * n, latches=[],
                  schedulers=n, **ZERO)
    s, res = _raw_run(wl)
    assert res.elapsed_ms * 1000.0 == pytest.approx(c + n * k * d)
    assert s.run_times[GF_OS_BUSY] == pytest.approx(n * k * d)
    # spinning is CPU, not a wait: every session's CPU is its own work plus its time in the path
    assert s.worker_times[:, WF_CPU].sum() == pytest.approx(n * k * c + s.run_times[GF_OS_KERNEL])
    assert "MEMORY_ALLOCATION_EXT" not in set(res.wait_stats["wait_type"])


@pytest.mark.parametrize("sessions", [2, 8, 24, 48])
def test_decommit_with_lpim_is_the_machine_repairman_model(sessions):
    """Exponential pieces and calls, a scheduler per session: a closed network of a delay (the CPU piece) and one
    FIFO server (the OS path), whose mean cycle time exact MVA gives."""
    setup = dict(cci.SETUP_96, sessions=sessions, schedulers=sessions, rowgroups=4, os_calls_per_rowgroup=500,
                 **ZERO)
    res = cci.run_decommit(setup)
    think = setup["cpu_per_rowgroup_ms"] * 1000.0 / setup["os_calls_per_rowgroup"]
    service = setup["pages_per_call"] * setup["page_us_lpim"]
    mva = mva_repairman(sessions, think, service)
    calls = res.extra["os_calls"]
    assert calls == sessions * 4 * 500
    cycle = res.extra["sessions"]["elapsed_ms"].mean() * 1000.0 / (4 * 500)
    assert cycle == pytest.approx(think + mva.response_time[-1], rel=0.03)


def test_obbish_five_inserts_three_granted_two_forced_after_25_s():
    q = cci.run().queries
    assert list(q["outcome"]) == ["granted"] * 3 + ["forced_minimum"] * 2
    assert list(q["grant_wait_ms"]) == pytest.approx([0, 0, 0, 25_000, 25_000])
    assert (q["granted_mb"] == ins.grant_mb(cci.SETUP)).all()  # RTM: the same grant as the others
    assert (q["compressed_rowgroups"] == 4).all() and (q["delta_store_rowgroups"] == 0).all()


def test_a_sixth_insert_fails_with_8645_after_25_s_on_both_builds():
    for behaviour in ("rtm", "cu14"):
        q = cci.run(queries=6, behaviour=behaviour).queries
        assert list(q["outcome"]).count("error_8645") == 1
        failed = q[q["outcome"] == "error_8645"].iloc[0]
        # it ends once its coordinator gets a scheduler back to raise the error: within a few ms when all are busy
        assert failed["grant_wait_ms"] == pytest.approx(25_000) and failed["elapsed_ms"] == pytest.approx(25_000,
                                                                                                        abs=10)
        assert failed["compressed_rowgroups"] == failed["delta_store_rowgroups"] == 0


def test_cu14_timed_out_inserts_write_every_row_to_delta_stores():
    res = cci.run(behaviour="cu14")
    q = res.queries
    late = q[q["outcome"] == "forced_minimum"]
    assert len(late) == 2
    assert (late["compressed_rowgroups"] == 0).all() and (late["delta_store_rowgroups"] == 4).all()
    on_time = q[q["outcome"] == "granted"]
    assert (on_time["compressed_rowgroups"] == 4).all()
    grants = res.extra["grants"]
    assert grants["granted_mb"].max() == pytest.approx(5 * ins.grant_mb(cci.SETUP))  # over the target ...
    assert grants["granted_mb"].max() > res.extra["target_mb"]
    assert grants["granted_mb"].max() <= cci.SETUP["max_server_memory_mb"]  # ... never over max server memory
    sem = res.wait_stats.set_index("wait_type").loc["RESOURCE_SEMAPHORE"]
    assert sem["waiting_tasks_count"] == 2 and sem["wait_time_ms"] == pytest.approx(50_000)


def test_timeout_rule_target_fails_the_inserts_obbish_saw_forced():
    """Forced only under the target: three grants of 1,500 MB hold 4,500 of the 5,700 MB target, so a fourth's
    1,500 MB does not fit and the two late inserts fail at 25 s, where Obbish saw them run."""
    res = cci.run(timeout_rule="target")
    q = res.queries
    assert list(q["outcome"]) == ["granted"] * 3 + ["error_8645"] * 2
    assert list(q["grant_wait_ms"]) == pytest.approx([0, 0, 0, 25_000, 25_000])
    assert res.extra["timeout_error_count"] == 2 and res.extra["forced_grant_count"] == 0
    assert res.extra["grants"]["granted_mb"].max() <= res.extra["target_mb"]


def test_timeout_rule_always_forces_the_sixth_insert_obbish_saw_fail():
    res = cci.run(queries=6, timeout_rule="always")
    q = res.queries
    assert list(q["outcome"]) == ["granted"] * 3 + ["forced_minimum"] * 3
    assert res.extra["timeout_error_count"] == 0 and res.extra["forced_grant_count"] == 3
    assert res.extra["grants"]["granted_mb"].max() == pytest.approx(6 * ins.grant_mb(cci.SETUP))  # over max server memory


def test_only_the_guessed_rule_gives_obbish_s_pattern():
    table = cci.timeout_rule_table().set_index("timeout_rule")
    assert table.loc["max_server_memory", "5 inserts: granted, forced, 8645"] == "3, 2, 0"
    assert table.loc["max_server_memory", "6 inserts: granted, forced, 8645"] == "3, 2, 1"
    agrees = (table["5: as Obbish saw"] == "yes") & (table["6: as Obbish saw"] == "yes")
    assert list(table.index[agrees]) == ["max_server_memory"]


def test_every_insert_waits_in_one_grant_queue_its_plan_s_cost():
    prog, _ = ins.program(ins.SCENARIO.defaults())
    ints, _ = prog.arrays()
    grants = ints[ints[:, 0] == GRANT]
    assert len(grants) == 1 and grants[0, 3] == ins.GRANT_QUEUE


def test_the_version_table_claims_no_measurement_on_2019_or_2022():
    table = cci.version_table()
    assert list(table.columns) == list(ins.VERSION_COLUMNS)
    for version in ("2019", "2022"):
        assert not table[version].str.contains("measured \\(|Obbish", regex=True).any()
        known = {"documented", "assumed as for 2005", "the model's guess", ins.NOT_KNOWN}
        documented = {v for v in table[version] if v.startswith("documented: ")}  # features, not measurements
        assert set(table[version]) - known - documented <= {
            "not with columnstore indexes (Microsoft); trace flag 876 instead"}


def test_the_version_table_is_the_one_place_for_the_time_out_the_fallback_the_freeze_and_trace_flag_834():
    rules = " | ".join(cci.version_table()["rule"])
    for what in ("25 s", "forced) insert writes", "KB 4462481", "memory back to the OS", "trace flag 834"):
        assert what in rules, what
    tf834 = cci.version_table().set_index("rule").loc["trace flag 834 (large pages)"]
    assert all("not with columnstore" in tf834[v] for v in ("2016", "2017 RTM", "2017 CU14", "2019", "2022"))


def test_more_memory_or_less_dop_lets_every_insert_run_at_once():
    assert (cci.run(max_server_memory_mb=16_000).queries["outcome"] == "granted").all()
    assert (cci.run(maxdop=1).queries["outcome"] == "granted").all()  # 1,000 MB each: five fit under 5,700


def test_rowgroups_follow_the_bulk_load_rules():
    assert ins.rowgroups(2_097_152, True) == (2, 0)
    assert ins.rowgroups(1_048_576 + 102_400, True) == (2, 0)   # a trimmed last rowgroup is still compressed
    assert ins.rowgroups(1_048_576 + 102_399, True) == (1, 1)   # under 102,400 rows stays in a delta store
    assert ins.rowgroups(2_097_153, False) == (0, 3)


def test_the_grant_is_capped_at_a_quarter_of_query_memory():
    assert ins.grant_mb(dict(cci.SETUP, maxdop=1)) == 1_000
    assert ins.grant_mb(dict(cci.SETUP, maxdop=8)) == 0.25 * 0.75 * 8_000


def test_bad_parameters_name_themselves_and_the_range():
    with pytest.raises(ParameterError, match=r"maxdop=0 is out of range: use an integer from 1 to 64"):
        models.run("cci-insert", maxdop=0)
    with pytest.raises(ParameterError, match=r"behaviour='cu11' is not allowed"):
        models.run("cci-insert", behaviour="cu11")
    with pytest.raises(ParameterError, match=r"CPU bursts"):
        models.run("cci-insert", queries=64, rows_per_query=100_000_000, compress_us_per_row=100.0)
    with pytest.raises(ParameterError, match=r"timeout_rule='limit' is not allowed"):
        models.run("cci-insert", timeout_rule="limit")
    with pytest.raises(ParameterError, match=r"lpim='yes' is not allowed"):
        models.run("cci-decommit", lpim="yes")
    with pytest.raises(ParameterError, match=r"OS calls"):
        models.run("cci-decommit", sessions=512, rowgroups=1_000)


def test_decommit_calibration_reproduces_the_figures_it_was_fitted_to():
    alone = cci.decommit_summary(cci.run_decommit(sessions=1))
    on, off = (cci.decommit_summary(cci.run_decommit(lpim=lp)) for lp in ("on", "off"))
    assert alone["mean_elapsed_s"] == pytest.approx(25.0, rel=0.02)
    assert on["mean_elapsed_s"] == pytest.approx(cci.WAITSTATS["lpim_96_s"], rel=0.02)
    assert off["mean_elapsed_s"] == pytest.approx(cci.WAITSTATS["no_lpim_96_s"], rel=0.02)
    assert on["gb_freed"] == pytest.approx(cci.WAITSTATS["gb_freed_96"], rel=0.01)


def test_decommit_slows_with_sessions_while_the_waits_stay_small_with_lpim():
    curve = cci.decommit_curve([1, 32, 96], lpim=("on",)).set_index("sessions")
    assert curve.loc[96, "mean_elapsed_s"] > 3.5 * curve.loc[1, "mean_elapsed_s"]
    assert (curve["wait_share"] < 0.01).all()          # what the DMVs show stays near nothing ...
    assert curve.loc[96, "kernel_share"] > 0.5          # ... while most of the CPU goes to the kernel
    off = cci.decommit_summary(cci.run_decommit(lpim="off"))
    assert 0.85 < off["wait_share"] < 0.97              # Obbish: 91% of the time in memory waits


def test_compress_us_per_row_gives_40_s_alone():
    q = cci.run(queries=1).queries
    assert q["elapsed_ms"].iloc[0] == pytest.approx(40_000, rel=0.01)


def test_outcome_names_are_the_charts_names():
    names = set(cci.outcomes([1, 6]).result)
    assert names <= set(cci.RESULTS) and set(cci.RESULTS) == set(charts.OUTCOME_COLORS)


def test_the_comparison_table_marks_every_row():
    table = cci.comparison_table()
    assert table["how"].str.match(r"(fitted|consistent|guessed to fit|built in|follows from the fits|input)").all()
    assert len(table) >= 12


def test_queries_table_is_in_the_json():
    res = cci.run(queries=2)
    assert [row["outcome"] for row in res.to_dict()["queries"]] == ["granted", "granted"]


def test_the_explorer_moves_the_forced_inserts_between_lines_with_the_build():
    import pandas as pd

    from models.book.sweep import DATA_DIR

    frame = cci.explorer_frame(pd.read_csv(DATA_DIR / "cci.csv"))
    at = frame[(frame["queries"] == 5) & (frame["maxdop"] == 2) & (frame["max_server_memory_mb"] == 8_000)]
    counts = at.set_index(["behaviour", "result"])["inserts"]
    assert counts[("rtm", "forced, compressed")] == 2 and counts[("rtm", "forced, delta stores only")] == 0
    assert counts[("cu14", "forced, compressed")] == 0 and counts[("cu14", "forced, delta stores only")] == 2
    assert counts[("cu14", "granted at once")] == 3 and counts[("cu14", "error 8645")] == 0


def test_throughput_counts_every_query_that_got_memory_and_ended():
    """Forced-minimum queries insert their rows too; a failed one inserts none (the CLI and the what-ifs count this)."""
    spec = models.get_scenario("cci-insert")
    result = models.run("cci-insert")
    outcomes = result.queries["outcome"]
    assert (outcomes == "forced_minimum").any() and (outcomes == "granted").any()  # the case this test is about
    done = outcomes.isin(["granted", "forced_minimum"]).sum()
    seconds = result.elapsed_ms / 1000.0
    assert spec.throughput.per_s(result) == done * result.params["rows_per_query"] / seconds


def test_a_truncated_decommit_run_counts_only_the_os_calls_it_made():
    spec = models.get_scenario("cci-decommit")
    full = models.run("cci-decommit")
    with pytest.warns(UserWarning, match="truncated"):
        cut = models.run("cci-decommit", max_sim_ms=full.elapsed_ms / 4)
    seconds = cut.elapsed_ms / 1000.0
    made = cut.extra["os_calls"] / cut.params["os_calls_per_rowgroup"]
    assert made < cut.params["sessions"] * cut.params["rowgroups"]
    assert spec.throughput.per_s(cut) == pytest.approx(made * 1_048_576 / seconds)


# ---- Obbish's scaling test as a prediction

SEED_001 = sorted((Path(__file__).resolve().parents[2] / "shared" / "seeds").glob("001_*.txt"))  # ../shared beside the clone


@pytest.mark.skipif(not SEED_001, reason="the source articles are not on this machine")
def test_the_scaling_transcription_is_what_the_seed_says():
    """Every number the chapter transcribes is in Obbish's text; the table itself is an image with no numbers."""
    text = SEED_001[0].read_text(encoding="utf-8")
    post = text[text.index("What To Do When Wait Stats"):text.index("Can Rowstore Compression Beat")]
    assert "That takes about 25 seconds" in post and cci.SCALING_TEXT["alone_s"] == 25.0
    assert "an average run time of 24 seconds" in post and cci.SCALING_TEXT["ideal_96_s"] == 24.0
    assert "the observed overhead is almost 4X at that scale" in post
    assert "The average insert time was about 368 seconds with 96 concurrent sessions" in post
    assert cci.SCALING_TEXT["no_lpim_96_s"] == 368.0
    assert "the majority of the work is done in the ntoskrnl and hal modules" in post
    assert "341965 page freed operations" in post and "71.3 million pages" in post
    table_at = post.index("a34_scale_table")
    assert not re.search(r"\d", post[table_at:post.index("It may be slightly", table_at)].replace("a34", ""))


def test_the_scaling_prediction_takes_no_parameter_from_the_scaling_table(monkeypatch):
    """The band's edges come from PerfView's kernel majority and the no-LPIM run; the 96-session LPIM figure
    (the only scaling-table number the fitted model used) can change without moving them."""
    band = cci.page_cost_band()
    assert band["high"] == cci.PAGE_US_NO_LPIM
    assert cci.kernel_share_mva(band["low"]) == pytest.approx(0.5, abs=0.002)
    assert band["low"] < cci.PAGE_US_LPIM < band["high"]
    for edge in cci.EDGES:
        setup = cci.setup_at_page_cost(band[edge])
        assert setup["page_us_lpim"] == band[edge] and setup["page_us_lpim"] != cci.PAGE_US_LPIM
        alone = setup["rowgroups"] * setup["cpu_per_rowgroup_ms"] * 1000 + cci.PAGES_PER_SESSION * band[edge]
        assert alone == pytest.approx(25e6)
    monkeypatch.setitem(cci.WAITSTATS, "lpim_96_s", 1_000.0)
    assert cci.page_cost_band.__wrapped__() == band
    with pytest.raises(ValueError, match="page_us"):
        cci.setup_at_page_cost(40.0)


def test_the_scaling_prediction_is_computed_and_holds_the_chapter_s_claims():
    pred = cci.scaling_prediction().set_index(["edge", "sessions"])["mean_elapsed_s"]
    low, high = pred.loc["low"], pred.loc["high"]
    assert low.loc[1] == pytest.approx(25.0, rel=0.02) and high.loc[1] == pytest.approx(25.0, rel=0.02)
    for edge in (low, high):                         # never falls as sessions are added (noise under 2%)
        assert (edge.diff().dropna() > -0.02 * edge.iloc[:-1].values).all()
    assert (high >= low * 0.98).all()
    # past the knee the rise is straight: equal steps of sessions add equal time at the high edge
    assert (high.loc[96] - high.loc[64]) / 32 == pytest.approx((high.loc[48] - high.loc[16]) / 32, rel=0.05)
    knees = cci.scaling_prediction().groupby("edge")["knee"].first()
    assert 5 < knees["high"] < 10 and 40 < knees["low"] < 60
    assert low.loc[24] < 1.05 * low.loc[1] and high.loc[24] > 3 * high.loc[1]
    where = cci.obbish_96_in_band()
    assert where["inside"] == 1.0                    # Obbish's 84 to 96 s lies in the band ...
    assert 0.0 < where["place_low"] < where["place_high"] < 0.25   # ... in its lower part
    assert 5 < where["high_s"] / where["low_s"] < 10                # ... which is wide
    table = cci.scaling_table()
    assert table["basis"].str.match(r"(fitted|consistent|model-only|input)").all()
    assert "inside" in table.set_index("figure").loc["96 sessions with LPIM, mean run time", "basis"]


def test_the_scaling_check_is_called_a_consistency_check_because_it_could_not_miss_high():
    """The band's top edge is the no-LPIM run's cost per page, so it reaches the no-LPIM run time itself: an LPIM
    run no slower than the conventional one lies under it whatever it measured.  No row may say "predicted"."""
    where = cci.obbish_96_in_band()
    assert where["high_s"] == pytest.approx(cci.WAITSTATS["no_lpim_96_s"], rel=0.01)
    table = cci.scaling_table().set_index("figure")
    says = table["basis"][table["basis"].str.contains("predict")]
    assert says.str.contains("not a prediction").all()  # the word appears only to deny it
    assert table.loc["96 sessions with LPIM, mean run time", "basis"].startswith("consistent")
    assert table.loc["between 1 and 96 sessions, mean run time", "basis"].startswith("model-only")


def test_past_the_knee_a_session_s_run_time_tends_to_n_times_its_path_work_not_less_its_cpu():
    """Machine repairman: a session's run time tends to N * D (D its path work in all); N * D - Z (Z its CPU
    between calls in all) is only its time at the path.  At the high edge 96 sessions are far past the knee."""
    high = cci.page_cost_band()["high"]
    n = cci.WAITSTATS["sessions"]
    d_s = cci.PAGES_PER_SESSION * high / 1e6
    z_s = cci.WAITSTATS["alone_s"] - d_s
    run_s = cci.scaling_prediction().set_index(["edge", "sessions"]).loc[("high", n), "mean_elapsed_s"]
    assert run_s == pytest.approx(n * d_s, rel=0.01)
    assert abs(run_s - (n * d_s - z_s)) > 0.05 * run_s


def test_the_finish_times_are_given_at_both_ends_of_the_scheduler_band():
    band = cci.at_scheduler_band()
    assert set(band) == {cci.SCHEDULERS, cci.HYPERTHREADED_SCHEDULERS} == {4, 8}
    assert cci.SETUP["schedulers"] == cci.SCHEDULERS == 4  # one per core of the four-core desktop
    outcomes = {n: list(q["outcome"]) for n, q in band.items()}
    assert outcomes[4] == outcomes[8]                              # the grant pattern does not depend on it ...
    assert band[4]["elapsed_ms"].max() > band[8]["elapsed_ms"].max() * 1.2   # ... the last finish does


def test_the_lpim_fit_band_brackets_the_main_fit():
    band = cci.lpim_fit_band().set_index("reading")
    lo, main, hi = band.index
    assert band.loc[lo, "page_us_lpim"] < band.loc[main, "page_us_lpim"] < band.loc[hi, "page_us_lpim"]
    assert band.loc[lo, "mean_96_s"] == pytest.approx(cci.LPIM_96_RANGE_S[0], rel=0.02)
    assert band.loc[hi, "mean_96_s"] == pytest.approx(cci.LPIM_96_RANGE_S[1], rel=0.02)
    assert band.loc[hi, "knee_on"] <= band.loc[main, "knee_on"] <= band.loc[lo, "knee_on"]
    assert (band["kernel_share_96"] > 0.5).all()
    with pytest.raises(ValueError, match="lpim_96_s"):
        cci.setup_fitted_to(0.0)


def test_exercise_3_spacing_thresholds_are_a_third_and_a_half_of_an_insert_s_time_alone():
    # 40 s / 3 with 8 schedulers (three grants fit), 40 s / 2 with 4 (two inserts fill the schedulers)
    assert cci.spacing_without_waits(8, gaps_s=(13.25, 13.5, 14.0)) == 13.5
    assert cci.spacing_without_waits(4, gaps_s=(19.75, 20.0, 21.0)) == 20.0
    assert math.isnan(cci.spacing_without_waits(4, gaps_s=(15.0, 19.75)))


# ---- the scheduler count and the delta-store rate (issue 42)

@pytest.mark.skipif(not SEED_001, reason="the source articles are not on this machine")
def test_the_schedulers_are_obbish_s_four_cores_and_no_query_outnumbers_them():
    text = SEED_001[0].read_text(encoding="utf-8")
    assert "my four core desktop" in text and "hyperthread" not in text.lower()  # four cores; hyperthreading unsaid
    assert cci.SETUP["schedulers"] == 4 and cci.SETUP["maxdop"] <= cci.SETUP["schedulers"]
    from models.book.sweeps.cci import SWEEP
    assert max(SWEEP.grid["maxdop"]) <= SWEEP.fixed["schedulers"] == cci.SCHEDULERS


def test_the_delta_store_rate_is_a_placeholder_not_the_rowstore_rate():
    """No source gives a columnstore delta-store insert's CPU per row: the model takes the compression rate, which
    ranks neither, and not Poché's rowstore batch rate, which ranked the forced inserts first."""
    assert cci.SETUP["delta_us_per_row"] == cci.DELTA_US_PER_ROW == cci.COMPRESS_US_PER_ROW
    assert cci.ROWSTORE_BATCH_US_PER_ROW == 4.16 and cci.SETUP["delta_us_per_row"] != cci.ROWSTORE_BATCH_US_PER_ROW
    row = cci.parameter_table().set_index("parameter").loc["delta_us_per_row"]
    assert row["from"].startswith("not quantified")
    for n in cci.SCHEDULER_BAND:
        # at the placeholder a forced CU14 insert takes what it would have taken compressing: CU14 ends as RTM does
        rtm, cu14 = cci.run(schedulers=n).queries, cci.run(schedulers=n, behaviour="cu14").queries
        assert cu14["elapsed_ms"].max() == pytest.approx(rtm["elapsed_ms"].max(), rel=1e-3)
        # the rowstore rate would have the forced inserts end before insert 1, against Obbish's "poor performance"
        fast = cci.run(schedulers=n, behaviour="cu14", delta_us_per_row=cci.ROWSTORE_BATCH_US_PER_ROW).queries
        forced = fast[fast["outcome"] == "forced_minimum"]
        assert (forced["elapsed_ms"] < fast.loc[fast["query"] == 1, "elapsed_ms"].iloc[0]).all()


def test_who_is_granted_forced_or_fails_and_the_rowgroups_do_not_depend_on_the_delta_store_rate():
    by_rate = cci.outcomes_at_delta_rates()
    assert set(by_rate["delta_us_per_row"]) == set(cci.DELTA_RATES_US) and set(by_rate["schedulers"]) == {4, 8}
    cols = ["outcome", "compressed_rowgroups", "delta_store_rowgroups"]
    assert (by_rate.groupby(["schedulers", "query"])[cols].nunique() == 1).all().all()


def test_exercise_2_cannot_rank_the_time_outs_without_the_delta_store_rate():
    """Four schedulers: both time-outs end the batch together at every rate.  Eight: the 25 s time-out ends first
    exactly when a delta-store row is cheaper than a compressed one (break-even at the compression rate)."""
    t = cci.timeout_tradeoff().pivot_table(index=["schedulers", "delta_us_per_row"], columns="timeout_s",
                                           values="last_s")
    at4 = t.loc[4]
    assert ((at4[25.0] - at4[60.0]).abs() < 1.0).all()
    assert math.isnan(cci.delta_break_even_us(4))
    assert cci.delta_break_even_us(8) == pytest.approx(cci.COMPRESS_US_PER_ROW, abs=0.1)
    at8 = t.loc[8]
    assert at8[60.0].nunique() == 1
    assert (at8.loc[[r for r in cci.DELTA_RATES_US if r < 18], 25.0] < at8[60.0].iloc[0]).all()
    assert (at8.loc[[r for r in cci.DELTA_RATES_US if r > 20], 25.0] > at8[60.0].iloc[0]).all()


def test_batch_summary_by_hand():
    """Five inserts: two granted at once, one granted after 20 s, one forced after 25 s, one failed after 25 s; the
    counts, the waits and the ends (s) read off the rows."""
    queries = pd.DataFrame({"outcome": ["granted", "granted", "granted", "forced_minimum", "error_8645"],
                            "grant_wait_ms": [0.0, 0.0, 20_000.0, 25_000.0, 25_000.0],
                            "elapsed_ms": [40_000.0, 41_000.0, 80_000.0, 95_500.0, 25_000.0],
                            "delta_store_rowgroups": [0, 0, 0, 4, 0]})
    assert cci.batch_summary(queries) == {"granted": 3, "forced": 1, "failed": 1, "waited": 3,
                                          "granted_after_wait": 1, "granted_after_wait_max_s": 20.0,
                                          "max_wait_s": 25.0, "first_end_s": 25.0, "last_end_s": 95.5,
                                          "delta_rowgroups": 4}


def test_tradeoff_figures_by_hand():
    """Four schedulers: the two time-outs end 0.4 s and 0.1 s apart; eight: the 60 s time-out always at 100 s, the
    25 s one at 70 s at the cheapest rate and 130 s at the dearest."""
    rows = []
    for schedulers, rate, short_s, long_s in ((cci.SCHEDULERS, 1.0, 120.0, 120.4), (cci.SCHEDULERS, 50.0, 150.1, 150.0),
                                              (cci.HYPERTHREADED_SCHEDULERS, 1.0, 70.0, 100.0),
                                              (cci.HYPERTHREADED_SCHEDULERS, 50.0, 130.0, 100.0)):
        rows += [{"schedulers": schedulers, "delta_us_per_row": rate, "timeout_s": 25.0, "last_s": short_s},
                 {"schedulers": schedulers, "delta_us_per_row": rate, "timeout_s": 60.0, "last_s": long_s}]
    figures = cci.tradeoff_figures(pd.DataFrame(rows))
    assert figures == pytest.approx({"gap4_s": 0.4, "last8_long_s": 100.0, "last8_long_values": 1, "cheap8_s": 70.0,
                                     "dear8_s": 130.0}, abs=1e-9)


def test_knee_is_think_plus_call_over_call_and_band_place_is_linear():
    """N* = (Z + S) / S with Z the CPU between OS calls and S one call's time, at the setup's own LPIM setting."""
    think_us = cci.SETUP_96["cpu_per_rowgroup_ms"] * 1000 / cci.SETUP_96["os_calls_per_rowgroup"]
    for lpim in ("on", "off"):
        setup = cci.SETUP_96 | {"lpim": lpim}
        call_us = cci_decommit.call_us(setup)
        assert cci.knee(setup) == pytest.approx((think_us + call_us) / call_us, rel=1e-12)
    assert cci.knee(cci.SETUP_96) > cci.knee(cci.SETUP_96 | {"lpim": "off"})
    assert (cci.band_place(90.0, 80.0, 120.0), cci.band_place(80.0, 80.0, 120.0)) == (0.25, 0.0)
    with pytest.raises(ValueError, match="high_s=80"):
        cci.band_place(90.0, 80.0, 80.0)


def test_lpim_fit_range_takes_each_columns_low_and_high():
    band = pd.DataFrame({column: [3.0, 1.0, 2.0] for column in cci.FIT_RANGE_COLUMNS})
    figures = cci.lpim_fit_range(band)
    assert (figures["fit_knee_on_lo"], figures["fit_knee_on_hi"]) == (1.0, 3.0)
    assert (figures["fit_kernel_share_96_lo"], figures["fit_kernel_share_96_hi"]) == (100.0, 300.0)
    assert len(figures) == 2 * len(cci.FIT_RANGE_COLUMNS)


def test_finish_floors_by_hand():
    """Five inserts at MAXDOP 2 of 40 s alone are 400 s of CPU; the last grant at 10 + 25 s ends 40 s later, at 75 s."""
    queries = pd.DataFrame({"start_ms": [0.0, 0.0, 0.0, 10_000.0, 5_000.0],
                            "grant_wait_ms": [0.0, 0.0, 0.0, 25_000.0, 25_000.0]})
    assert cci.finish_floors(queries) == {"cpu_s": 5 * cci.OBBISH["maxdop"] * cci.OBBISH["alone_s"], "late_s": 75.0}
    assert cci.finish_floors(queries)["cpu_s"] == 400.0
