"""The hot-page scenario and chapter: the index walk, splits, flow control, batching and the calibration."""

from __future__ import annotations

import pytest

import models
from models import calibration
from models.book.analysis import hot_page as hp
from models.engine import btree
from models.params import ParameterError
from models.scenarios import last_page_insert as lpi

SMALL = dict(hp.SETUP_002, inserts_per_session=100)


def run(**kw):
    return models.run("last-page-insert", **dict(SMALL, **kw))


def test_every_row_is_inserted_once_and_the_index_stays_in_key_order():
    for key in hp.KEYS:
        r = run(key=key)
        e = r.extra
        assert e["rows"] == 100 * 100 and not r.truncated
        assert len(e["inserts"]) == e["rows"]
        # leaves: one per split plus one per tree, whatever kind of split
        trees = r.params["partitions"] if key == "partitioned" else 1
        assert e["leaf_pages"] == trees + e["mid_splits"] + e["end_splits"], key


def test_identity_fills_pages_and_guid_leaves_them_part_empty():
    ident, guid = run(key="identity"), run(key="guid")
    per_page = lpi.rows_per_page(60)
    assert ident.extra["end_splits"] > 0.2 * (10_000 / per_page)
    assert guid.extra["end_splits"] < guid.extra["mid_splits"] / 10
    # mid-page splits leave pages between half and full: about 69% full for random keys
    fill = 10_000 / guid.extra["leaf_pages"] / per_page
    assert 0.5 < fill < 0.9


def test_one_row_a_page_allocates_a_page_per_insert():
    r = run(**hp.wide(SMALL))
    assert r.extra["end_splits"] == 10_000 - 1
    assert lpi.rows_per_page(8_035) == 1


def test_spreading_keys_beat_identity_at_poches_setup():
    rates = {k: run(key=k).throughput_per_s for k in hp.KEYS}
    assert all(rates[k] > 1.5 * rates["identity"] for k in hp.KEYS if k != "identity"), rates
    waits = {k: hp.waits(run(key=k))["PAGELATCH"] for k in ("identity", "guid")}
    assert waits["guid"] < waits["identity"] / 10


def test_wide_rows_are_slower_and_batching_is_cheaper_per_row():
    assert run(**hp.wide(SMALL)).throughput_per_s < 0.85 * run().throughput_per_s
    b = hp.batching((1, 50, 500)).set_index("batch_rows")["us_per_row"]
    assert b[500] < b[50] < b[1]
    # Poché's 10 threads: the time between calls is not given; his 119 us lies inside the band it spans
    ten = [hp.summary(hp.run(hp.SETUP_WWI, think_us=think))["us_per_row"] for think in hp.WWI_THINK_BAND_US]
    assert ten[0] > hp.POCHE["threads10_us_per_row"] > ten[1]
    assert b[500] / hp.POCHE["batch500_us_per_row"] < 2


def test_flow_control_admits_one_session_per_scheduler():
    r = run(optimize_for_sequential_key="on", sessions=64, schedulers=4, inserts_per_session=100)
    w = hp.waits(r)
    assert w["BTREE_INSERT_FLOW_CONTROL"] > 0
    off = hp.waits(run(sessions=64, schedulers=4, inserts_per_session=100))
    assert off["BTREE_INSERT_FLOW_CONTROL"] == 0
    assert w["PAGELATCH_EX"] < off["PAGELATCH_EX"]
    # at most one session per scheduler reaches the page: with one session per scheduler the gate never waits
    one_each = hp.waits(run(optimize_for_sequential_key="on", sessions=4, schedulers=4))
    assert one_each["BTREE_INSERT_FLOW_CONTROL"] == 0


def test_think_time_is_outside_query_duration():
    r = run(sessions=1, inserts_per_session=200, think_us=10_000.0)
    # one session never waits: duration is the CPU it ran, its commits' flushes and a context switch back in
    # after each flush and think; elapsed adds the think time
    switches_ms = 401 * r.params["context_switch_us"] / 1000  # the first dispatch, one after each flush and think
    flushes_ms = 200 * r.params["log_flush_us"] / 1000
    assert r.extra["query_duration_ms"] == pytest.approx(r.extra["cpu_ms"] + switches_ms + flushes_ms, rel=1e-9,
                                                         abs=1e-6)
    assert r.elapsed_ms > r.extra["query_duration_ms"] + 200 * 5.0


def test_single_session_matches_the_sum_of_its_costs():
    # one session, fixed CPU, no think: each insert costs before + under, each new page its split costs
    v = dict(SMALL, sessions=1, inserts_per_session=1000, think_us=0.0, context_switch_us=0.0, wakeup_us=0.0)
    r = models.run("last-page-insert", **v)
    splits = r.extra["end_splits"] + r.extra["mid_splits"]
    expected = (1000 * (v["cpu_before_us"] + v["cpu_under_us"] + v["log_flush_us"])
                + splits * (v["alloc_us"] + v["new_page_us"]))
    assert r.elapsed_ms * 1000 == pytest.approx(expected, abs=1000 * 3 * 0.001)  # each cost rounds to the 1 ns tick
    assert splits == 1000 // lpi.rows_per_page(60)


def test_reverse_bits_and_keys():
    assert btree.reverse_bits(1) == 2**30 and btree.reverse_bits(3) == 3 * 2**29
    assert lpi.fanout("identity") > lpi.fanout("guid")


def test_bad_combinations_are_named():
    with pytest.raises(ParameterError, match="batch_rows=3"):
        models.run("last-page-insert", inserts_per_session=100, batch_rows=3)
    with pytest.raises(ParameterError, match="inserts_per_session"):
        models.run("last-page-insert", sessions=4096, inserts_per_session=1000)


def test_page_bound_holds_for_small_pages_and_every_key():
    for key in hp.KEYS:
        for row_bytes in (8_035, 4_000, 2_000):
            r = run(key=key, row_bytes=row_bytes, sessions=20, inserts_per_session=50)
            assert r.extra["rows"] == 1000


def test_derived_figures():
    assert hp.INSERT_US == pytest.approx(125.75)
    assert hp.WIDE_EXTRA_US == pytest.approx(141.25)
    assert hp.THINK_US == pytest.approx(3310.0)
    assert hp.BATCH_ROW_US + hp.BATCH_CALL_US == pytest.approx(23.0)
    assert round(hp.BIONDI_ROWS_PER_S) == 1730
    # the row's own work is the batched 4.16 us less the page allocations the model charges itself (at the low end's
    # fitted new page; the WideWorldImporters setup at the chapter's)
    low_page = hp.LOW_FIT["new_page_us"]
    assert hp.CPU_UNDER_US == pytest.approx(hp.BATCH_ROW_US - (low_page + hp.ALLOC_US) / lpi.rows_per_page(200),
                                            abs=0.005)
    assert hp.SETUP_WWI["cpu_under_us"] == pytest.approx(
        hp.BATCH_ROW_US - (hp.NEW_PAGE_US + hp.ALLOC_US) / lpi.rows_per_page(200), abs=0.005)


CALIBRATION_TOLERANCE = 0.03  # the model at each calibration setup returns the measured figure within 3%


@pytest.mark.parametrize("setup", ["book", "low hold", "no queue"])
def test_the_calibration_inputs_come_back_out_of_the_model(setup):
    """No allocation double count: at the setups the costs were derived from, the model returns the measured figures
    (Poché's serial 23 us and batched 4.2 us a row, and the throttled narrow run's 12.575 s outside page-latch waits),
    at every setting the chapter runs."""
    base = {"book": hp.SETUP_002, "low hold": hp.low_hold(), "no queue": hp.no_queue()}[setup]
    ww = hp.wwi(base)
    serial = hp.summary(hp.run(ww, sessions=1, inserts_per_session=500))["us_per_row"]
    batched = hp.summary(hp.run(ww, sessions=1, inserts_per_session=500, batch_rows=500))["us_per_row"]
    assert serial == pytest.approx(hp.POCHE["serial_us_per_row"], rel=CALIBRATION_TOLERANCE)
    assert batched == pytest.approx(hp.POCHE["batch500_us_per_row"], rel=CALIBRATION_TOLERANCE)
    thr = hp.summary(hp.run(hp.throttled(base)))
    outside = hp.POCHE["throttled_narrow_s"] - hp.POCHE["throttled_narrow_waits_s"]
    assert thr["duration_s"] - thr["pagelatch_s"] == pytest.approx(outside, rel=CALIBRATION_TOLERANCE)


def test_the_chapters_setting_is_the_hold_the_throttled_narrow_waits_chose():
    """SETUP_002 holds the leaf 40 us with that end's fitted queue cost and new page; the low end is the batched row's
    own work with its own; the WideWorldImporters setup keeps the measured row work whatever the narrow hold."""
    assert hp.SETUP_002["cpu_under_us"] == hp.HOLD_US == hp.SPLIT_BAND_US[1] == 40.0
    assert hp.with_hold(hp.HOLD_US) == hp.SETUP_002
    assert (hp.SETUP_002["contender_cost_us"], hp.SETUP_002["new_page_us"]) == (
        hp.SPLIT_FITS[hp.HOLD_US]["contender_cost_us"], hp.SPLIT_FITS[hp.HOLD_US]["new_page_us"])
    low = hp.low_hold()
    assert low["cpu_under_us"] == hp.CPU_UNDER_US == hp.SPLIT_BAND_US[0] == hp.row_work_us(hp.LOW_FIT["new_page_us"])
    assert hp.SETUP_WWI["cpu_under_us"] == hp.row_work_us(hp.NEW_PAGE_US) < 5
    assert hp.BOOK == "hold 40 us" and hp.LOW == f"hold {hp.CPU_UNDER_US:g} us"
    # the comparison rows the scorecard reads: the first word of each label
    rows = {quantity: basis.split()[0] for _seed, quantity, _measured, basis in hp.comparison_rows()}
    assert rows["throttled narrow: waits (s)"] == "fitted"
    assert rows["throttled wide: summed duration (s)"] == rows["throttled wide: waits (s)"] == "fitted"
    assert rows["10 threads: CPU per insert / serial"] == "predicted"


def test_fit_reproduces_the_stored_setup():
    got = hp.fit(seeds=(1, 2, 3))  # about a minute: the fit is the derivation the chapter quotes (the 40 us hold)
    assert got["contender_cost_us"] == pytest.approx(hp.CONTENDER_COST_US, abs=0.15)
    assert got["new_page_us"] == pytest.approx(hp.NEW_PAGE_US, abs=3.0)
    assert hp.fit_think_004() == pytest.approx(hp.THINK_004_US, rel=0.03)


def test_the_low_hold_and_the_no_queue_fits_reproduce_the_stored_ones():
    low = hp.fit_split(hp.CPU_UNDER_US)
    stored = hp.SPLIT_FITS[hp.CPU_UNDER_US]
    assert low["contender_cost_us"] == pytest.approx(stored["contender_cost_us"], abs=0.15)
    assert low["new_page_us"] == pytest.approx(stored["new_page_us"], abs=3.0)
    free = hp.fit(queue_cost=False)
    assert free["cpu_under_us"] == pytest.approx(hp.NO_QUEUE_FIT["cpu_under_us"], abs=2.0)
    assert free["new_page_us"] == pytest.approx(hp.NO_QUEUE_FIT["new_page_us"], abs=3.0)


def test_calibrated_setups_hit_their_targets():
    assert hp.run().elapsed_ms / 1000 == pytest.approx(hp.POCHE["wall_s"], rel=0.05)
    assert hp.run(hp.wide()).extra["query_duration_ms"] / 1000 == pytest.approx(hp.POCHE["wide_s"], rel=0.08)
    assert hp.run(hp.SETUP_004).throughput_per_s == pytest.approx(hp.BIONDI_ROWS_PER_S, rel=0.08)


@pytest.mark.parametrize("wakeup", hp.WAKEUP_BAND_US)
def test_each_band_refit_hits_the_same_targets(wakeup):
    """The band's ends are fits too: each reproduces the 9.7 s and the wide rows' 1,082 s (what stays unidentified)."""
    setup = hp.at_wakeup(wakeup)
    assert hp.run(setup).elapsed_ms / 1000 == pytest.approx(hp.POCHE["wall_s"], rel=0.06)
    assert hp.run(hp.wide(setup)).extra["query_duration_ms"] / 1000 == pytest.approx(hp.POCHE["wide_s"], rel=0.1)


def test_scenario_defaults_are_the_chapters_setup_and_the_fits_calibration():
    """The scenario's defaults are seed 002's setup; its four calibrated costs are the ones chapter 9's fit assumes,
    the calibration before the page share came out of the row's work: the batched 4.16 us a row under the latch and
    the call's 125.75 us less it and the flush before it (the queue's cost and the new page as fitted there)."""
    defaults = lpi.SCENARIO.defaults()
    for name in ("think_us", "log_flush_us", "alloc_us", "move_row_us", "row_bytes", "schedulers", "sessions"):
        assert defaults[name] == pytest.approx(hp.SETUP_002[name]), name
    assert defaults["cpu_under_us"] == round(hp.BATCH_ROW_US, 2)
    assert defaults["cpu_before_us"] == round(hp.INSERT_US - defaults["cpu_under_us"] - hp.LOG_FLUSH_US, 2)
    assert (defaults["contender_cost_us"], defaults["new_page_us"]) == (2.7, 79.3)
    # chapter 5's own calibration takes the page share out of the row's work, and holds the narrow leaf 40 us
    assert hp.CPU_UNDER_US < defaults["cpu_under_us"] and hp.SETUP_WWI["cpu_under_us"] < defaults["cpu_under_us"]
    assert hp.SETUP_002["cpu_under_us"] == hp.HOLD_US != defaults["cpu_under_us"]
    assert hp.CPU_UNDER_US == pytest.approx(hp.row_work_us(hp.LOW_FIT["new_page_us"]))
    assert hp.LOG_FLUSH_US == pytest.approx(9.4)
    assert (hp.POCHE["serial_us_per_row"], hp.POCHE["batch500_us_per_row"]) == (
        calibration.POCHE_SERIAL_US_PER_ROW, calibration.POCHE_BATCH500_US_PER_ROW)


def test_the_queue_makes_a_cliff_and_flow_control_both_hurts_and_helps():
    """With the queue's cost (the hypothesis), past the point where the queue feeds the hold, rows/s fall as sessions
    are added (Lahoud's cliff); flow control changes little below it and wins above it.  Without it, no cliff."""
    rate = {(n, flow): hp.run(sessions=n, inserts_per_session=200, optimize_for_sequential_key=flow).throughput_per_s
            for n in (32, 64, 400) for flow in ("off", "on")}
    assert rate[(400, "off")] < 0.6 * rate[(64, "off")]
    assert abs(rate[(32, "on")] / rate[(32, "off")] - 1) < 0.05
    assert rate[(400, "on")] > 2 * rate[(400, "off")]
    # without the queue's cost there is no cliff: rows/s only level off
    flat = {n: hp.run(sessions=n, inserts_per_session=200, contender_cost_us=0.0).throughput_per_s for n in (64, 400)}
    assert flat[400] > 0.9 * flat[64]


def test_more_schedulers_slow_the_insert_under_flow_control():
    """Flow control lets one session per scheduler at the page: more schedulers, a longer queue, a longer hold."""
    table = hp.schedulers_table((8, 64)).set_index("schedulers")
    assert table.loc[64, "on_rows_per_s"] < 0.8 * table.loc[8, "on_rows_per_s"]


def test_batching_gains_at_pochés_setup_over_the_wake_up_band():
    """At the chapter's 40 us hold a call of 10 rows holds the leaf ten times as long, so batching gains less than at
    the low hold, but it gains at every end of the wake-up band."""
    band = hp.batching_band((1, 10)).set_index("batch_rows")
    assert band.loc[10, "low"] > 1.3 * band.loc[1, "high"]


def test_identity_inserts_split_in_the_middle_more_the_longer_the_hold():
    """An ascending key splits at the end (Poché) at the low hold; at the chapter's 40 us hold most splits are in the
    middle of a page, because a key taken before the walk reaches a full page late more often (the chapter says so)."""
    low, book = hp.run(hp.low_hold()), hp.run()
    assert low.extra["mid_splits"] <= 0.05 * low.extra["end_splits"]
    assert book.extra["mid_splits"] > book.extra["end_splits"]


def test_allocation_waits_are_pagelatch_up():
    r = run(**hp.wide(SMALL))
    assert "LATCH_EX" not in set(r.wait_stats["wait_type"]) or hp.waits(r)["LATCH_EX"] == 0
    assert "PAGELATCH_UP" in set(r.wait_stats["wait_type"])


def test_log_flush_is_in_the_duration_and_off_the_latch():
    one = dict(SMALL, sessions=1, inserts_per_session=100, think_us=0.0, context_switch_us=0.0, wakeup_us=0.0)
    base = models.run("last-page-insert", **dict(one, log_flush_us=0.0))
    flushed = models.run("last-page-insert", **dict(one, log_flush_us=50.0))
    assert flushed.extra["query_duration_ms"] - base.extra["query_duration_ms"] == pytest.approx(100 * 0.05)
    assert flushed.extra["cpu_ms"] == pytest.approx(base.extra["cpu_ms"])


def test_latch_percentiles_come_from_the_class_that_waited():
    """The page latches' percentiles come from their own acquires; the allocation page is one of them now
    (PAGELATCH_UP), so BUFFER is the only latch class a run without flow control shows."""
    r = run(**hp.wide(SMALL))
    stats = r.latch_stats.set_index("latch_class")
    assert set(stats.index) == {"BUFFER"}
    row = stats.loc["BUFFER"]
    assert 0 < row["p99_wait_ms"] <= row["max_wait_time_ms"] + 1e-9


def test_the_queue_cost_fit_refuses_a_rate_the_model_cannot_fall_to():
    """A capture far slower than the model at the highest queue cost is another bottleneck: a named FitError."""
    from models.counters.evidence import FitError
    values = dict(lpi.SCENARIO.defaults(), inserts_per_session=100)
    with pytest.raises(FitError, match="fewer than the model inserts"):
        lpi.queue_cost(values, 10.0)
    assert lpi.queue_cost(values, 1e9)[0] == 0.0  # faster than the model without any queue cost: no cost


# ---------------------------------------------------------------- the hold band and the stored seeds (issue 34)

@pytest.fixture(scope="module")
def study():
    import pandas as pd

    from models.book.sweep import DATA_DIR

    return pd.read_csv(DATA_DIR / "hot_page_band.csv")


def test_the_hold_band_keeps_the_call_and_hits_the_same_targets():
    """Each end of the hold band splits the same call between before the latch and under it and refits both fitted
    values."""
    for end in hp.SPLIT_BAND_US:
        setup = hp.with_hold(end)
        assert setup["cpu_under_us"] + setup["cpu_before_us"] == pytest.approx(hp.call_cpu_us(setup["new_page_us"]),
                                                                               abs=0.01)
        assert hp.run(setup).elapsed_ms / 1000 == pytest.approx(hp.POCHE["wall_s"], rel=0.06)
        assert hp.run(hp.wide(setup)).extra["query_duration_ms"] / 1000 == pytest.approx(hp.POCHE["wide_s"], rel=0.1)
    with pytest.raises(ValueError, match="no fit stored"):
        hp.with_hold(20.0)


def test_without_the_queue_cost_the_hold_alone_hits_the_same_targets():
    free = hp.no_queue()
    assert free["contender_cost_us"] == 0.0
    assert free["cpu_under_us"] + free["cpu_before_us"] == pytest.approx(hp.call_cpu_us(free["new_page_us"]), abs=0.01)
    assert hp.run(free).elapsed_ms / 1000 == pytest.approx(hp.POCHE["wall_s"], rel=0.06)
    assert hp.run(hp.wide(free)).extra["query_duration_ms"] / 1000 == pytest.approx(hp.POCHE["wide_s"], rel=0.1)


def test_the_client_pace_fit_reproduces_the_stored_one():
    assert hp.fit_think_wwi() == pytest.approx(hp.WWI_THINK_US, abs=3.0)


def test_the_stored_study_is_not_stale(study):
    """Rerun seed 1 at a few stored points: the same numbers come back."""
    checks = [
        (("sessions", hp.BOOK, dict(sessions=100, flow="on")),
         hp.run(sessions=100, inserts_per_session=200, seed=1, optimize_for_sequential_key="on")),
        (("sessions", hp.LOW, dict(sessions=400, flow="off")),
         hp.run(hp.low_hold(), sessions=400, inserts_per_session=200, seed=1)),
        (("throttled", hp.LOW, {}), hp.run(hp.throttled(hp.low_hold()), seed=1)),
        (("throttled", f"{hp.BOOK}, wake-up 30 us", {}), hp.run(hp.throttled(hp.at_wakeup(30.0)), seed=1)),
        (("biondi", hp.BOOK, dict(key="guid")), hp.run(hp.SETUP_004, key="guid", seed=1)),
        (("buckets", hp.BOOK, dict(buckets=16)), hp.run(key="hash-bucket", buckets=16, seed=1)),
        (("sessions", hp.NOQ, dict(sessions=100, flow="off")),
         hp.run(hp.no_queue(), sessions=100, inserts_per_session=200, seed=1)),
        (("radivojevic", hp.BOOK, dict(batch_rows=50, flow="on")),
         hp.run(hp.radivojevic(hp.SETUP_002, 50), seed=1, optimize_for_sequential_key="on")),
    ]
    for (part, setting, labels), fresh in checks:
        row = study[(study["part"] == part) & (study["setting"] == setting) & (study["seed"] == 1)]
        for name, value in labels.items():
            row = row[row[name] == value]
        assert len(row) == 1, (part, setting, labels)
        stored = row.iloc[0]
        assert fresh.throughput_per_s == pytest.approx(stored["rows_per_s"], rel=1e-5), (part, setting, labels)
        assert hp.summary(fresh)["pagelatch_s"] == pytest.approx(stored["pagelatch_s"], rel=1e-4, abs=1e-6)


def test_what_the_chapter_says_of_the_stored_seeds(study):
    """Five seeds a point; no detectable change at 32 sessions; the throttled narrow waits come back at the chapter's
    40 us hold (fitted there) and miss at the low hold; the chapter's hold shrinks the gains but keeps their
    direction."""
    assert (study.groupby(["part", "setting"]).size() > 0).all()
    assert set(study["seed"]) == set(hp.STUDY_SEEDS)
    assert set(study["setting"]) == {hp.BOOK, hp.LOW, hp.NOQ, f"{hp.BOOK}, wake-up 1 us", f"{hp.BOOK}, wake-up 30 us"}
    gains = hp.study_gains(study).set_index(["setting", "sessions"])
    book = gains.loc[(hp.BOOK, 32)]
    assert abs(book["gain_pct"]) < book["ci_pct"]
    thr = study[study["part"] == "throttled"].groupby("setting")["pagelatch_s"].mean()
    assert thr[hp.LOW] < 0.2 * hp.POCHE["throttled_narrow_waits_s"]
    assert 0.8 < thr[hp.BOOK] / hp.POCHE["throttled_narrow_waits_s"] < 1.5
    for n in (100, 400):
        assert 0 < gains.loc[(hp.BOOK, n), "gain_pct"] < gains.loc[(hp.LOW, n), "gain_pct"]
    # even the whole wide call under the latch, at random arrivals, stays short of the 14.6 s measured
    whole = study.loc[study["part"] == "throttled wide, whole call held", "pagelatch_s"]
    assert whole.max() < hp.POCHE["throttled_wide_waits_s"]


def test_what_the_chapter_says_with_and_without_the_queue_cost(study):
    """The model section's table: the queue's cost makes the cliff and the large gains; without it the rate levels
    off, batching buys little, and the throttled narrow waits overshoot (one fixed hold cannot fit both runs)."""
    ident = study[(study["part"] == "sessions") & (study["flow"] == "off")].groupby(["setting", "sessions"])[
        "rows_per_s"].mean()
    for setting in (hp.BOOK, hp.LOW):
        assert ident[(setting, 400)] < 0.6 * ident[setting].max(), setting
    assert ident[(hp.NOQ, 400)] > 0.9 * ident[hp.NOQ].max()
    thr = study[study["part"] == "throttled"].groupby("setting")["pagelatch_s"].mean()
    assert thr[hp.NOQ] > 2 * hp.POCHE["throttled_narrow_waits_s"]
    bat = study[study["part"] == "batching"].groupby(["setting", "batch_rows"])["rows_per_s"].mean()
    assert bat[(hp.LOW, 10)] > 2 * bat[(hp.LOW, 1)] and bat[(hp.BOOK, 10)] > 1.5 * bat[(hp.BOOK, 1)]
    assert bat[(hp.NOQ, 10)] < 1.5 * bat[(hp.NOQ, 1)]


def test_radivojevic_is_not_reproduced_at_any_setting(study):
    """His 100 sessions ran 16% slower with flow control; the model gains at every setting, most with the queue's
    cost: a contradiction the chapter states, not a fit."""
    rad = hp.radivojevic_gains(study).set_index(["setting", "batch_rows"])
    assert (rad["gain_pct"] > 0).all()
    assert rad.loc[(hp.BOOK, 50), "gain_pct"] > 50 and rad.loc[(hp.LOW, 50), "gain_pct"] > 100
    # the comparison table (and so chapter 8's scorecard) carries it as a prediction that misses in sign: his
    # measured change is negative and the model's positive, so model / measured is negative, outside any band
    row = next(r for r in hp.comparison_rows() if r[1] == hp.RADIVOJEVIC_QUANTITY)
    assert row[0] == hp.RADIVOJEVIC_SOURCE and row[2] == -hp.RADIVOJEVIC["slower_pct"]
    assert row[3].split()[0] == "predicted" and "miss" in row[3] and "fitted" not in row[3]
    assert rad.loc[(hp.BOOK, hp.RADIVOJEVIC["inserts_per_call"]), "gain_pct"] / row[2] < 0


def test_the_falsification_test_separates_the_settings(study):
    """CPU per insert from 10 to 100 sessions: a clear rise with the queue's cost, flat without it; and at 10
    threads on WideWorldImporters every setting misses Poché's tripling."""
    growth = hp.cpu_growth(study).set_index("setting")["ratio"]
    assert growth[hp.BOOK] > 1.2 and growth[hp.LOW] > 1.2
    assert abs(growth[hp.NOQ] - 1) < 0.05
    for setting in (hp.BOOK, hp.LOW, hp.NOQ):
        assert hp.cpu_ratio_10(study, setting) < 0.7 * hp.POCHE_CPU_RATIO_10


def test_the_study_figures_by_hand(study):
    """A few of hot_page.study_figures recomputed from the stored rows by hand, and what the prose says of them: one
    peak over the wake-up band, a flow-control gain at 400 sessions outside its interval and none detectable at 32,
    the throttled waits at the chapter's hold near Poché's."""
    import math

    from models.statistics import t_quantile

    figures = hp.study_figures(study)
    assert all(name.isidentifier() and math.isfinite(value) for name, value in figures.items())
    rows = study.to_dict("records")
    throttled = [r["pagelatch_s"] for r in rows if r["part"] == "throttled" and r["setting"] == hp.BOOK]
    assert len(throttled) == len(hp.STUDY_SEEDS)
    assert figures["thr_book"] == pytest.approx(sum(throttled) / len(throttled), rel=1e-12)
    assert 0.8 < figures["thr_book_ratio"] < 1.5 and figures["thr_low_miss"] > 5
    rate_by_sessions: dict[int, list[float]] = {}
    for r in rows:
        if r["part"] == "sessions" and r["flow"] == "off" and r["setting"] == hp.BOOK:
            rate_by_sessions.setdefault(int(r["sessions"]), []).append(r["rows_per_s"])
    means = {n: sum(rates) / len(rates) for n, rates in rate_by_sessions.items()}
    assert figures["peak_n_book"] == max(means, key=means.get)
    assert figures["peak_n_wake_low"] == figures["peak_n_wake_high"] == figures["peak_n_book"]
    assert figures["study_rate_400"] == pytest.approx(means[400], rel=1e-12) and figures["fall_book_pct"] < -40
    # flow control's gain at 400 sessions: the per-seed gains' mean and t interval with 4 degrees of freedom
    off = {r["seed"]: r["rows_per_s"] for r in rows
           if r["part"] == "sessions" and r["setting"] == hp.BOOK and r["sessions"] == 400 and r["flow"] == "off"}
    gains = [100 * (r["rows_per_s"] / off[r["seed"]] - 1) for r in rows
             if r["part"] == "sessions" and r["setting"] == hp.BOOK and r["sessions"] == 400 and r["flow"] == "on"]
    mean = sum(gains) / len(gains)
    half = t_quantile(len(gains) - 1) * math.sqrt(sum((g - mean) ** 2 for g in gains) / (len(gains) - 1) / len(gains))
    assert figures["fc_400"] == pytest.approx(mean, rel=1e-9) and figures["fc_400_ci"] == pytest.approx(half, rel=1e-9)
    assert figures["fc_400"] - figures["fc_400_ci"] > 0 and abs(figures["fc_32"]) < figures["fc_32_ci"]
    biondi = [r["rows_per_s"] for r in rows if r["part"] == "biondi" and r["key"] == "guid"]
    assert figures["b5_guid"] == pytest.approx(sum(biondi) / len(biondi), rel=1e-12)
    assert min(biondi) < figures["b5_guid"] < max(biondi) and figures["b5_guid_ci"] > 0
    assert figures["batch100_10"] == pytest.approx(figures["batch_x_book"] * figures["batch100_1"], rel=1e-12)
    assert figures["batch100_10_wlow"] <= figures["batch100_10"] <= figures["batch100_10_whigh"]
    assert figures["near_rate_low"] < figures["near_rate_high"] and figures["page_ms_slow"] > figures["page_ms_fast"]


def test_the_schedulers_table_and_where_the_gate_stops_paying(study):
    """The gate pays at every scheduler count at the chapter's hold; with the low hold it stops paying from one count
    on (the figure the prose quotes), and pays below it."""
    rates = hp.scheduler_rates(study).set_index("schedulers")
    assert list(rates.index) == sorted(set(study.loc[study["part"] == "schedulers", "schedulers"].astype(int)))
    assert (rates["on_rows_per_s"] > rates["off_rows_per_s"]).all()
    loses_from = hp.study_figures(study)["sch_gate_loses_from"]
    assert loses_from in rates.index
    below = rates[rates.index < loses_from]
    assert (below["low_on"] >= below["low_off"]).all()
    assert rates.loc[loses_from, "low_on"] < rates.loc[loses_from, "low_off"]
