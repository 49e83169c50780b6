"""The version-store scenario against closed forms, and the chapter's claims at Randal's calibrated setup."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import pandas as pd
import pytest

import models
from models import ParameterError
from models.book.analysis import version_store as vs
from models.calibration import HANDOFF_US, WAKEUP_US
from models.scenarios import version_store as sc

EXACT = dict(cpu_dist="fixed", wakeup_us=0.0, context_switch_us=0.0)


def block_time_us(c: float, hold: float, row_bytes: int, new_page_us: float) -> tuple[int, float]:
    """Updates in one repeating block and the time one connection alone takes for it (fixed CPU)."""
    rate = sc.page_rate(row_bytes)
    n = rate.denominator
    return n, n * (c + hold * sc.chunks(row_bytes)) + rate.numerator * new_page_us


def test_without_versioning_each_connection_runs_at_one_update_per_cpu_time():
    """No latch: n connections on n schedulers give n / c; more connections than schedulers give S / c."""
    res = models.run("version-store", versioning="off", connections=6, schedulers=8, cpu_per_update_us=125.0,
                     window_ms=1000.0, **EXACT)
    assert res.throughput_per_s == pytest.approx(6 / 125e-6, rel=2e-3)
    assert res.latch_stats.loc[0, "acquires"] == 0
    crowded = models.run("version-store", versioning="off", connections=12, schedulers=8,
                         cpu_per_update_us=125.0, window_ms=1000.0, **EXACT)
    assert crowded.throughput_per_s == pytest.approx(8 / 125e-6, rel=2e-3)
    yields = crowded.wait_stats.set_index("wait_type").loc["SOS_SCHEDULER_YIELD", "waiting_tasks_count"]
    assert yields > 0  # schedulers with two connections switch between them every quantum


def test_one_connection_pays_cpu_hold_and_its_share_of_page_allocations():
    """Alone, a connection never waits: a block of n updates takes n (c + hold) + (pages) x new_page_us."""
    for row_bytes in (20, 100, 434, 3000, 8000):
        n, t = block_time_us(125.0, 5.0, row_bytes, 20.0)
        res = models.run("version-store", connections=1, schedulers=1, cpu_per_update_us=125.0, hold_us=5.0,
                         new_page_us=20.0, row_bytes=row_bytes, window_ms=2000.0, **EXACT)
        assert res.throughput_per_s == pytest.approx(n / (t * 1e-6), rel=2e-3), row_bytes
        assert res.latch_stats.loc[0, "waiting_requests_count"] == 0


def test_page_allocations_follow_the_version_size():
    for row_bytes in (434, 1000, 4000, 8000, 8096, 20_000):
        rate = sc.page_rate(row_bytes)
        assert rate.denominator <= sc.BLOCK
        assert abs(float(rate) - row_bytes / 8096) <= 1 / (rate.denominator * sc.BLOCK)
        for phase in (0.0, 0.3, 0.99):
            pattern = sc._allocations(rate, phase, rate.denominator)
            assert sum(pattern) == rate.numerator  # every block allocates exactly its share of pages
    for row_bytes in (1, 20, 100, 250):  # fewer than one page in BLOCK updates: one page in k updates
        rate = sc.page_rate(row_bytes)
        assert rate.numerator == 1 and abs(rate.denominator - 8096 / row_bytes) <= 0.5
    assert sc.page_rate(8096) == Fraction(1)


def test_each_8000_byte_chunk_is_an_append():
    for row_bytes, appends in ((8000, 1), (8001, 2), (16_000, 2), (16_001, 3)):
        res = models.run("version-store", row_bytes=row_bytes, window_ms=50.0)
        assert res.extra["appends_per_update"] == appends
        done = res.extra["units"]
        assert done * appends <= res.latch_stats.loc[0, "acquires"] <= (done + 10) * appends


def test_a_new_allocation_unit_holds_the_latch_longer():
    """One connection, a new unit every ``blocks`` blocks: the cycle adds one update with the unit's hold."""
    c, hold, page, unit = 125.0, 5.0, 20.0, 2000.0
    n, t = block_time_us(c, hold, 434, page)
    params = dict(connections=1, schedulers=1, cpu_per_update_us=c, hold_us=hold, new_page_us=page,
                  new_unit_us=unit, new_unit_every=10 * n, row_bytes=434, window_ms=3000.0, **EXACT)
    blocks = sc.unit_blocks(models.params.resolve(models.scenarios()["version-store"], params))
    assert blocks == 10
    cycle_updates = blocks * n + 1
    cycle_us = blocks * t + c + hold + unit
    res = models.run("version-store", **params)
    assert res.throughput_per_s == pytest.approx(cycle_updates / (cycle_us * 1e-6), rel=5e-3)
    assert res.extra["updates_per_new_unit"] == cycle_updates


def test_the_latch_caps_throughput_at_one_append_per_hold_plus_hand_off():
    """Saturated: with no hand-off the latch passes 1 / hold appends a second; with the book's, 1 / (hold + hand-off)."""
    hold = 5.0
    free = models.run("version-store", connections=12, schedulers=12, cpu_per_update_us=20.0, hold_us=hold,
                      new_page_us=0.0, row_bytes=100, window_ms=300.0, **EXACT)
    assert free.throughput_per_s <= 1e6 / hold * 1.001
    assert free.throughput_per_s >= 1e6 / hold * 0.97
    busy = models.run("version-store", connections=12, schedulers=12, cpu_per_update_us=20.0, hold_us=hold,
                      new_page_us=0.0, row_bytes=100, window_ms=300.0, seed=3)
    latch = busy.latch_stats.iloc[0]
    assert latch["waiting_requests_count"] / latch["acquires"] > 0.99
    assert busy.throughput_per_s == pytest.approx(1e6 / (hold + HANDOFF_US), rel=0.02)


def test_adr_takes_no_insert_point_latch_and_costs_cpu():
    res = models.run("version-store", adr="on", connections=4, schedulers=8, cpu_per_update_us=100.0,
                     adr_cpu_us=50.0, window_ms=500.0, **EXACT)
    assert res.latch_stats.loc[0, "acquires"] == 0
    assert res.throughput_per_s == pytest.approx(4 / 150e-6, rel=2e-3)


def test_reads_add_their_share_of_cpu_between_updates():
    res = models.run("version-store", versioning="off", connections=1, schedulers=1, cpu_per_update_us=100.0,
                     read_fraction=0.75, cpu_per_read_us=40.0, window_ms=1000.0, **EXACT)
    assert res.extra["cpu_outside_us"] == pytest.approx(100.0 + 3 * 40.0)
    assert res.throughput_per_s == pytest.approx(1e6 / 220.0, rel=2e-3)


def test_a_window_run_is_complete_and_a_shorter_bound_truncates_it():
    res = models.run("version-store", window_ms=40.0)
    assert not res.truncated and res.elapsed_ms == pytest.approx(40.0, rel=0.01)
    with pytest.warns(UserWarning, match="max_sim_ms=10"):
        cut = models.run("version-store", window_ms=40.0, max_sim_ms=10)
    assert cut.truncated
    seen = []
    models.run("version-store", window_ms=40.0, progress=seen.append)
    assert seen[-1] == 1.0


def test_a_window_too_long_for_the_event_budget_is_refused():
    with pytest.raises(ParameterError, match=r"window_ms=100000 .* use at most 5,000,000"):
        models.run("version-store", window_ms=100_000.0, cpu_per_update_us=1.0)
    with pytest.raises(ParameterError, match="new_unit_every=5"):
        models.run("version-store", new_unit_every=5)


def test_same_parameters_same_numbers():
    a, b = vs.run(window_ms=50.0), vs.run(window_ms=50.0)
    assert a.to_json() == b.to_json()
    assert vs.run(window_ms=50.0, seed=2).throughput_per_s != a.throughput_per_s


# ---------------------------------------------------------------- the calibrated setup and the chapter's claims


def test_cpu_per_update_is_derived_from_80000_updates_on_ten_connections():
    assert vs.CPU_PER_UPDATE_US == pytest.approx(125.0)
    assert vs.mean_throughput(versioning="off") == pytest.approx(vs.RANDAL["off_per_s"], rel=0.005)


def test_the_stored_hold_is_the_fit_to_60000():
    assert vs.fit_hold() == pytest.approx(vs.SETUP["hold_us"], abs=0.02)
    assert vs.mean_throughput() == pytest.approx(vs.RANDAL["on_per_s"], rel=0.01)


def test_the_unfair_hold_is_the_unfair_fit_to_60000():
    """The unfair latch gets its own hold: the fair one's gives it far more than 60,000 at ten connections."""
    assert vs.fit_hold(policy="unfair") == pytest.approx(vs.UNFAIR_HOLD_US, abs=0.02)
    assert vs.mean_throughput(policy="unfair", hold_us=vs.UNFAIR_HOLD_US) == pytest.approx(vs.RANDAL["on_per_s"], rel=0.01)
    assert vs.mean_throughput(policy="unfair") > 1.1 * vs.RANDAL["on_per_s"]


def test_the_explorer_runs_each_policy_with_its_own_hold():
    from models.book.sweeps.version_store import SWEEP

    assert {(p["policy"], p["hold_us"]) for p in SWEEP.points()} == set(vs.HOLD_BY_POLICY.items())


def test_fewer_schedulers_than_connections_cannot_reach_60000():
    """Why the setup takes at least 10 schedulers: on 8, the fair latch stays far below 60,000 however short the hold."""
    assert vs.mean_throughput(schedulers=8, hold_us=0.5, seeds=(1, 2)) < 0.6 * vs.RANDAL["on_per_s"]
    twelve, sixteen = vs.run(), vs.run(schedulers=16)
    assert twelve.throughput_per_s == sixteen.throughput_per_s  # each connection alone on a scheduler either way


def test_the_loss_grows_with_connections_and_with_the_update_rate():
    by_conn = vs.compare("connections", [2, 4, 8, 10, 12], seeds=(1, 2))
    assert by_conn["loss_pct"].is_monotonic_increasing
    assert by_conn["loss_pct"].iloc[0] < 10 < 20 < by_conn.set_index("connections").loc[10, "loss_pct"]
    by_rate = vs.compare("cpu_per_update_us", [400, 200, 125, 75], seeds=(1, 2))
    assert by_rate["loss_pct"].is_monotonic_increasing  # less CPU per update: a higher update rate


def test_the_loss_grows_with_the_version_size_in_steps_at_8000_bytes():
    table = vs.compare("row_bytes", [434, 4000, 8000, 8001], seeds=(1, 2)).set_index("row_bytes")
    assert table["loss_pct"].is_monotonic_increasing
    assert table.loc[8001, "loss_pct"] > table.loc[8000, "loss_pct"] + 5  # a second append per update


def test_a_mixed_workload_loses_less_and_reaches_the_guidance():
    mixed = vs.compare("read_fraction", [0.0, 0.25, 0.5], seeds=(1, 2)).set_index("read_fraction")
    assert mixed.loc[0.0, "loss_pct"] == pytest.approx(25, abs=1.5)
    assert 10 <= mixed.loc[0.25, "loss_pct"] <= 15
    assert mixed.loc[0.5, "loss_pct"] < mixed.loc[0.25, "loss_pct"]


def test_latch_ex_is_every_wait_the_model_makes_at_randals_setup():
    res = vs.run()
    s = vs.summary(res)
    # the latch is busy holding or handing over for most of the window, and the fair ceiling is close
    assert 75 < s["latch_busy_pct"] < 95
    assert res.throughput_per_s < vs.ceiling_per_s() < 1.1 * vs.mean_throughput(connections=12, seeds=(1,))
    shares = vs.wait_shares(res)
    assert shares["LATCH_EX"] == pytest.approx(1.0)
    assert math.isclose(shares["SOS_SCHEDULER_YIELD"], 0.0, abs_tol=1e-12)


def test_adr_is_slower_than_the_version_store_at_the_assumed_cost():
    table = vs.adr_table(seeds=(1,)).set_index("setting")["updates_per_s"]
    assert table["RCSI with ADR"] < table["RCSI (tempdb version store)"] < table["no versioning"]


def test_comparison_table_marks_what_was_fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        off, on = vs.run(versioning="off"), vs.run()
    mixed = vs.compare("read_fraction", [0.0, 0.25], seeds=(1,))
    table = vs.comparison_table(off, on, mixed).set_index("quantity")
    assert table.loc["updates/s, versioning off", "fitted or predicted"] == "fitted"
    assert table.loc["LATCH_EX share of all waits", "fitted or predicted"] == "built in"
    assert table.loc["loss for a mixed workload", "fitted or predicted"] == "consistent (not a test)"
    assert table.loc["loss for a mixed workload", "model"].startswith("25%")


def test_programs_have_three_loop_slots():
    from models.engine.program import Program

    prog = Program()
    body = prog.cpu(1.0)
    prog.loop(body, 2, slot=2)
    with pytest.raises(ValueError, match="slot=3 is not a loop slot: use 0 to 2"):
        prog.loop(body, 2, slot=3)


def test_the_hand_off_band_bounds_the_wake_up_and_leaves_the_light_load_open():
    """Randal's 60,000 is reached with a short wake-up and a long hold or a longer wake-up and a short hold, and
    the loss at 4 connections differs between them; a 20 us wake-up cannot reach it at all."""
    axes = {"connections": (4,)}
    short, longer, too_long = (vs.band_scenario("exponential", w, axes=axes, seeds=(1,)) for w in (1.0, 12.0, 20.0))
    assert short[0]["fits"] and longer[0]["fits"] and not too_long[0]["fits"]
    assert short[0]["hold_us"] > 2 * longer[0]["hold_us"]
    assert short[0]["loss_pct"] > 1.5 * longer[0]["loss_pct"]


def test_the_band_starts_where_the_book_wakeup_band_does():
    from models.calibration import WAKEUP_BAND_US, WAKEUP_US

    assert min(vs.WAKEUP_GRID_US) == WAKEUP_BAND_US[0] and max(vs.WAKEUP_GRID_US) == WAKEUP_BAND_US[1]
    assert WAKEUP_US in vs.WAKEUP_GRID_US


@pytest.fixture(scope="module")
def stored_band():
    import pandas as pd

    from models.book.sweep import DATA_DIR

    return pd.read_csv(DATA_DIR / "version_store_band.csv"), pd.read_csv(DATA_DIR / "version_store_bound.csv")


def test_the_stored_band_is_not_stale(stored_band):
    """Refit the fixed-CPU end at the book's wake-up and rerun 8 connections and one bound point: the stored rows."""
    band, bound = stored_band
    fresh = vs.band_scenario("fixed", 7.7, axes={"connections": (8,)})[0]
    stored = band[(band.cpu_dist == "fixed") & (band.wakeup_us == 7.7) & (band.target_per_s == 60_000)
                  & (band.axis == "connections") & (band.value == 8)].iloc[0]
    for key in ("hold_us", "on_per_s", "loss_pct"):
        assert fresh[key] == pytest.approx(stored[key], rel=1e-5), key
    rate = vs.mean_throughput(hold_us=vs.HOLD_FLOOR_US, wakeup_us=16.0, cpu_dist="exponential")
    assert rate == pytest.approx(bound[(bound.cpu_dist == "exponential") & (bound.wakeup_us == 16)].on_per_s.iloc[0],
                                 rel=1e-5)


def test_the_band_holds_the_collapse_and_leaves_the_light_load_open(stored_band):
    band, bound = stored_band
    s = vs.band_summary(band)
    fits = s[s["fits"]]
    assert set(fits["cpu_dist"]) == set(vs.CPU_DISTS)
    assert (fits["loss_16_pct"] > 45).all()  # the collapse past the schedulers at every setting that fits
    assert fits["loss_8_pct"].max() > 2 * fits["loss_8_pct"].min()  # the light load is not pinned down
    # The finer bound lies between the wake-ups that fit and those that do not, for either distribution.
    for dist in vs.CPU_DISTS:
        top = fits[fits["cpu_dist"] == dist]["wakeup_us"].max()
        assert top < vs.wakeup_bound(bound, dist) < 20.0
    # The rounding of "about 60,000" moves the hold the other way from the target.
    r = band[(band.target_per_s != 60_000) & (band.cpu_dist == "exponential")].groupby("target_per_s")["hold_us"].first()
    assert r.loc[58_500] > vs.SETUP["hold_us"] > r.loc[61_500]


# ---------------------------------------------------------------- issue 42: both policies, and what the collapse needs


def test_time_off_the_scheduler_adds_to_a_lone_connections_cycle_and_is_off_by_default():
    """think_us sleeps off the scheduler after each update: one connection's cycle is c + hold + pages + think;
    at its default of 0 the run is the one without it."""
    n, t = block_time_us(125.0, 5.0, 434, 20.0)
    res = models.run("version-store", connections=1, schedulers=1, cpu_per_update_us=125.0, hold_us=5.0,
                     new_page_us=20.0, row_bytes=434, think_us=250.0, window_ms=4000.0, cpu_dist="fixed",
                     wakeup_us=0.0, context_switch_us=0.0)
    assert res.throughput_per_s == pytest.approx(n / ((t + 250.0 * n) * 1e-6), rel=0.02)
    assert vs.run(window_ms=50.0).to_json() == vs.run(window_ms=50.0, think_us=0.0).to_json()


def test_the_policy_row_says_what_each_source_says_and_runs_both():
    row = vs.parameter_table().set_index("parameter").loc["policy"]
    assert "documented default" not in row["from"]
    assert "first in, first out" in row["from"] and "White" in row["from"] and "both" in row["from"]
    assert f"{vs.UNFAIR_HOLD_US:.2f}" in row["value"] and f"{vs.SETUP['hold_us']:.2f}" in row["value"]


def test_compare_policies_gives_each_policy_its_own_hold():
    table = vs.compare_policies("connections", [10, 16], seeds=(1,)).set_index(["policy", "connections"])
    for policy in vs.POLICIES:  # both fitted to 60,000 at ten connections
        assert table.loc[(policy, 10), "on_per_s"] == pytest.approx(vs.RANDAL["on_per_s"], rel=0.02)
    assert table.loc[("fair", 16), "loss_pct"] > 2 * table.loc[("unfair", 16), "loss_pct"]
    lines = vs.policy_lines(table.reset_index(), "connections")
    assert set(lines["policy"]) == {"fair", "unfair", "no latch"}
    assert len(lines[lines["policy"] == "no latch"]) == 2  # the unversioned line once, not once per policy


@pytest.fixture(scope="module")
def collapse():
    return vs.collapse_table().set_index("condition")


def test_the_collapse_needs_a_fair_latch_and_connections_that_stay_on_the_cpu(collapse):
    """At 16 connections on 12 schedulers the fair latch loses most of the throughput; the unfair latch only its
    ceiling; a shorter hold, reads or costlier updates leave the fair latch's collapse; a scheduler each removes the
    stall (signal wait back to the hand-off); time off the scheduler removes it for both."""
    names = [name for name, _ in vs.RELAXATIONS]
    base = collapse.loc[names[0]]
    assert base["fair_loss_pct"] > 65 and 25 < base["unfair_loss_pct"] < 35
    for name in names[1:4]:  # the hold / 10, half reads, four times the CPU: the fair collapse stays
        assert collapse.loc[name, "fair_loss_pct"] > 60, name
        assert collapse.loc[name, "unfair_loss_pct"] < 15, name
    per_connection = collapse.loc[names[4]]
    assert per_connection["fair_signal_per_wait_us"] == pytest.approx(HANDOFF_US, abs=0.05)
    assert per_connection["fair_loss_pct"] < base["fair_loss_pct"] - 10
    assert collapse.loc[names[5], "fair_loss_pct"] < 25 and collapse.loc[names[6], "fair_loss_pct"] < 10
    assert collapse.loc[names[6], "unfair_loss_pct"] < 10
    # The fair latch passes one append per hold, page share and signal wait once every append waits.
    assert base["fair_waited_pct"] > 99.5
    page = float(sc.page_rate(vs.SETUP["row_bytes"])) * vs.SETUP["new_page_us"]
    cycle = 1e6 / (vs.SETUP["hold_us"] + page + base["fair_signal_per_wait_us"])
    assert base["fair_on_per_s"] == pytest.approx(cycle, rel=0.01)
    assert base["fair_signal_per_wait_us"] > 2 * HANDOFF_US


def test_more_connections_per_scheduler_bring_the_fair_collapse_back_with_time_off_the_cpu():
    table = vs.think_table(think_us=(500.0,), seeds=(1, 2)).set_index(["connections", "policy"])["loss_pct"]
    assert table[(16, "fair")] < 10 and table[(16, "unfair")] < 10
    assert table[(32, "fair")] > 30 > 10 > table[(32, "unfair")]


def test_a_policy_chart_draws_the_policy_as_the_dash():
    from models.book import charts

    df = vs.policy_lines(vs.compare_policies("connections", [4, 10], seeds=(1,)), "connections")
    spec = charts.throughput_vs(df, x="connections", y="updates_per_s", color="versioning", dash="policy",
                                width=300).to_dict()
    enc = spec["layer"][0]["encoding"]
    assert enc["strokeDash"]["field"] == "policy"
    assert enc["strokeDash"]["scale"]["domain"] == ["no latch", "fair", "unfair"]
    assert spec["width"] == 300


def test_the_wake_up_bound_rests_on_its_assumptions():
    """'A long wake-up is ruled out' holds only under the chapter's four choices: the page cost moves the most the
    fair latch passes at a 15 us wake-up either side of 60,000, and the unfair latch is not bound at all."""
    floor = dict(hold_us=vs.HOLD_FLOOR_US, seeds=(1, 2))
    target = vs.RANDAL["on_per_s"]
    assert vs.mean_throughput(wakeup_us=15.0, new_page_us=5.0, **floor) > target
    assert vs.mean_throughput(wakeup_us=15.0, new_page_us=80.0, **floor) < target
    assert vs.mean_throughput(wakeup_us=15.0, row_bytes=2000, **floor) < target < \
        vs.mean_throughput(wakeup_us=15.0, row_bytes=100, **floor)
    assert vs.mean_throughput(wakeup_us=30.0, policy="unfair", **floor) > target


def _band_by_hand() -> pd.DataFrame:
    """A stored band in miniature: the book end (exponential CPU, the book's wake-up) at 60,000 with the chapter's hold,
    its rounding at 58,500 and 61,500, and the fixed CPU's fit at 60,000; the loss at 8 connections on each."""
    hold = vs.SETUP["hold_us"]
    rows = [("exponential", WAKEUP_US, 60_000, hold, 16.0), ("exponential", WAKEUP_US, 58_500, hold + 0.5, 14.8),
            ("exponential", WAKEUP_US, 61_500, hold - 0.5, 17.5), ("fixed", WAKEUP_US, 60_000, 5.91, 8.9)]
    return pd.DataFrame([{"cpu_dist": dist, "wakeup_us": wakeup, "target_per_s": target, "hold_us": fitted,
                          "axis": "connections", "value": 8.0, "loss_pct": loss, "fits": True}
                         for dist, wakeup, target, fitted, loss in rows])


def test_rounding_figures_and_fitted_hold_by_hand():
    band = _band_by_hand()
    hold = vs.SETUP["hold_us"]
    assert vs.rounding_figures(band) == {"target_low": 58_500, "target_high": 61_500, "hold_round_low": hold - 0.5,
                                         "hold_round_high": hold + 0.5, "round_loss8_low": 14.8,
                                         "round_loss8_high": 17.5}
    assert vs.fitted_hold(band, "fixed") == 5.91 and vs.fitted_hold(band, "exponential") == hold
    with pytest.raises(ValueError, match="re-run the band sweep"):
        vs.rounding_figures(band.assign(hold_us=band["hold_us"] + 1))
    with pytest.raises(ValueError, match="wakeup_us=30.0 is not in the band"):
        vs.fitted_hold(band, "fixed", 30.0)


def test_band_figures_by_hand():
    """Settings that reach 60,000 at wake-ups 1, 4 and 12 us (exponential) and 1 and 4 (fixed; 12 does not fit); the
    bound falls through 61,500, 60,000 and 58,500 between 10 and 20 us, linearly: at 13.5, 15 and 16.5 us."""
    summary = pd.DataFrame({"wakeup_us": [1.0, 1.0, 4.0, 4.0, 12.0, 12.0],
                            "cpu_dist": ["exponential", "fixed"] * 3,
                            "fits": [True, True, True, True, True, False],
                            "loss_4_pct": [11.0, 10.0, 9.0, 8.0, 4.0, float("nan")],
                            "loss_8_pct": [18.0, 12.0, 17.0, 10.0, 13.0, float("nan")],
                            "loss_16_pct": [71.0, 57.0, 72.0, 57.0, 71.5, float("nan")]})
    bound = pd.DataFrame({"cpu_dist": ["exponential", "exponential", "fixed", "fixed"], "wakeup_us": [10.0, 20.0] * 2,
                          "on_per_s": [65_000.0, 55_000.0] * 2})
    figures = vs.band_figures(summary, bound)
    assert figures["band_wake_low"] == 1.0
    assert (figures["band_wake_high_exponential"], figures["band_wake_high_fixed"]) == (12.0, 4.0)
    assert (figures["band_loss8_low_exponential"], figures["band_loss8_high_exponential"]) == (13.0, 18.0)
    assert (figures["band_loss16_low_fixed"], figures["band_loss16_high_fixed"]) == (57.0, 57.0)
    assert (figures["band_loss4_low"], figures["band_loss4_high"]) == (4.0, 11.0)
    assert [figures[f"bound_{end}_fixed"] for end in ("low", "mid", "high")] == pytest.approx([13.5, 15.0, 16.5])
