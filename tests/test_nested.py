"""The nested-transactions chapter's claims at its main setting (White's 9.7 us hand-off, hold fitted to Obbish's
30x bound) and over the band of hand-offs."""

from __future__ import annotations

import pytest

from models.book.analysis import nested as nx


def test_serial_times_reproduce_the_measurements():
    curve = nx.maxdop_curve(maxdops=(1,))
    for query in ("fast", "slow"):
        got = float(curve.query("query == @query")["elapsed_s"].iloc[0]) * 1000
        assert got == pytest.approx(nx.MAXDOP1_MS[query], rel=0.01)


def test_seven_thousand_byte_pages_give_obbishs_record_count():
    res = nx.run("fast", maxdop=2)
    assert nx.SETUP["rows_per_page"] == 7
    assert res.extra["log_records"] * nx.SCALE == nx.MODEL_LATCHES
    assert nx.MODEL_LATCHES == pytest.approx(nx.MEASURED_LATCHES, rel=0.001)
    assert res.extra["rows_per_record"] == pytest.approx(7 * 8 / 3, rel=0.001)
    # the per-record CPU is the serial time over the records, whatever the row density
    between = res.extra["cpu_between_records_us"] + nx.SETUP["hold_us"]
    assert between == pytest.approx(nx.cpu_per_record_us("fast"), rel=1e-9)


def test_saturation_is_think_plus_latch_time_over_latch_time():
    """Closed system: N* = (Z + D) / D with D = hold + hand-off and Z = CPU per record - hold."""
    cpr = nx.cpu_per_record_us("fast")
    assert cpr == pytest.approx(9_565_000 / 347_435)
    assert nx.saturation_maxdop("fast", 1.5, 1.5) == pytest.approx((cpr + 1.5) / 3.0)
    assert nx.saturation_maxdop("fast", nx.HOLD_US, 9.7) == pytest.approx((cpr + 9.7) / (nx.HOLD_US + 9.7))
    assert nx.saturation_maxdop("fast", nx.HOLD_US, 9.7) == pytest.approx(2.75, abs=0.05)
    assert nx.saturation_maxdop("slow", nx.HOLD_US, 9.7) == pytest.approx(4.35, abs=0.05)


def test_main_setting_is_whites_handoff_with_the_hold_fitted_to_the_30x_bound():
    """The chapter runs on the book's one hand-off (White's 9.7 us for this latch class) and fits only the hold,
    so the fast query alone at MAXDOP 8 takes 141,162 ms / 30 (Obbish's 'almost 30 times')."""
    from models import calibration

    assert nx.SETUP["wakeup_us"] + nx.SETUP["context_switch_us"] == pytest.approx(calibration.HANDOFF_US)
    assert nx.SETUP["contender_cost_us"] == 0.0
    assert nx.ALONE_BOUND_MS == pytest.approx(141_162 / 30)
    assert nx.fit_hold(**nx.CALIBRATED) == pytest.approx(nx.HOLD_US, abs=0.01)
    alone8 = nx.run("fast", maxdop=8).elapsed_ms * nx.SCALE
    assert alone8 == pytest.approx(nx.ALONE_BOUND_MS, rel=0.005)


def test_band_refits_the_hold_and_keeps_hold_plus_handoff():
    """At every hand-off of the band the refitted hold puts hold + hand-off near 13.5 us (the latch-bound time
    per record), and the co-tenant figures barely move."""
    table = nx.band_table(maxdops=(1, 2, 4, 6, 8, 16, 24), seeds=(1, 2, 3)).set_index("hand-off")
    per_record = [float(r["hold (µs, fitted)"]) + float(label.split(" ")[0]) for label, r in table.iterrows()]
    assert max(per_record) - min(per_record) < 0.5
    assert table["co-tenant 8: elapsed (s)"].max() / table["co-tenant 8: elapsed (s)"].min() < 1.06
    assert (table["co-tenant 8: waited (%)"] > 90).all()


def test_curve_flattens_and_a_waiter_paid_handoff_gives_only_a_small_rise():
    """With no contender cost the fair hand-off alone (paid only by waiters) makes the fast curve dip at
    MAXDOP 4 and rise a few percent to R x (hold + hand-off); a contender cost makes it rise more."""
    curve = nx.maxdop_curve(maxdops=(1, 2, 4, 6, 8, 16, 24))
    assert nx.tipping_point(curve, "fast") == 4
    assert 2.0 < nx.rise_after_turn(curve, "fast") < 8.0
    assert nx.tipping_point(curve, "slow") in (6, 8)
    assert nx.rise_after_turn(curve, "slow") < 2.0
    costed = nx.maxdop_curve(maxdops=(4, 24), contender_cost_us=0.3).query("query == 'fast'")["elapsed_s"]
    assert costed.iloc[-1] > 1.3 * costed.iloc[0]


def test_slow_query_turn_is_a_predicted_miss():
    """The chapter's reported miss: Obbish's CHARINDEX query turned at MAXDOP 8 and rose after it; the model's
    flattens by 8 at the latest and does not rise."""
    curve = nx.maxdop_curve()
    assert nx.tipping_point(curve, "slow") <= 8
    assert nx.rise_after_turn(curve, "slow") < 2.0
    fast16 = curve.query("query == 'fast' and maxdop == 16")["elapsed_s"].iloc[0]
    slow16 = curve.query("query == 'slow' and maxdop == 16")["elapsed_s"].iloc[0]
    assert fast16 == pytest.approx(slow16, rel=0.02)   # "fairly close" at 16


def test_busy_cotenant_follows_the_floor_formula():
    table = nx.busy_table(maxdops=(8, 16), quanta=(2.0, 4.0))
    assert (table["slowdown"] > 8).all()
    ratio = table["elapsed_ms"] / table["floor_ms"]
    assert ((ratio >= 1.0) & (ratio < 1.1)).all()
    four = table.query("quantum_ms == 4.0").set_index("maxdop")["elapsed_ms"]
    assert four[16] < four[8]  # higher MAXDOP appears to help under a busy scheduler


def test_waited_share_agrees_with_obbish_over_seeds():
    busy = nx.busy_seeds(maxdops=(8, 16), seeds=(1, 2, 3, 4, 5)).set_index("maxdop")
    for n in (8, 16):
        assert busy.loc[n, "waited"] == pytest.approx(nx.OBBISH_BUSY[n]["waited"], abs=0.02)
        assert busy.loc[n, "waited_ci95"] < 0.02
    assert busy.loc[8, "elapsed_ms"] / nx.OBBISH_BUSY[8]["elapsed_ms"] == pytest.approx(1.14, abs=0.04)


def test_slow_query_finishes_sooner_beside_the_cotenant():
    table = nx.slow_vs_fast_busy().set_index("maxdop")
    assert (table["slow_s"] < table["fast_s"]).all()
    assert (table["slow_waited"] < table["fast_waited"]).all()  # fewer stalls for the same records
    assert table.loc[8, "slow_per_stall"] > 1.05 * table.loc[8, "fast_per_stall"]


def test_shared_worker_is_runnable_while_the_others_are_suspended():
    split = nx.co_tenant_split(maxdops=(8,)).set_index(["worker", "state"])["seconds"]
    shared, others = "worker on the busy scheduler", "other workers (mean)"
    assert split[(shared, "runnable")] > 0.9 * split.loc[shared].sum()
    assert split[(others, "suspended")] > 0.9 * split.loc[others].sum()


def test_fixed_gaps_make_the_shared_worker_wait_on_nearly_every_acquire():
    """The waited share is predicted only given exponential gaps: with the CPU between records fixed at its mean
    the insert alone takes the same time (no refit) and the shared worker waits on nearly every acquire."""
    gaps = nx.gap_table(maxdops=(8,), seeds=(1, 2)).set_index("CPU between records")
    assert gaps.loc["fixed", "alone (s)"] == pytest.approx(gaps.loc["exponential", "alone (s)"], rel=0.005)
    assert gaps.loc["fixed", "waited (%)"] > 99.0
    assert gaps.loc["fixed", "waited (%)"] - 100 * nx.OBBISH_BUSY[8]["waited"] > 2.0   # a miss
    assert gaps.loc["fixed", "elapsed (s)"] > gaps.loc["exponential", "elapsed (s)"]


def test_comparison_tables_low_end_is_the_bands_lower_bound():
    assert nx.LOW_END in nx.BAND and nx.LOW_END.startswith("3.0")
    assert sum(nx.BAND[nx.LOW_END].values()) == pytest.approx(3.0)
