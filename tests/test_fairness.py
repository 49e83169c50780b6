"""The fairness chapter's claims at White's calibrated setup."""

from __future__ import annotations

from models.analysis import fairness as fx


def test_unfair_latch_is_faster_with_far_fewer_waits_and_lower_max_wait():
    fair, unfair = fx.run_policy("fair"), fx.run_policy("unfair")
    table = fx.comparison(fair, unfair).set_index("figure")
    assert 1.1 < table.loc["elapsed_s", "model fair/unfair"] < 1.4  # White: 5.5 / 4.5 = 1.22
    assert table.loc["latch_waits", "model fair/unfair"] > 20
    assert 0.8 < table.loc["latch_waits", "model fair"] / 271_458 < 1.2
    assert table.loc["max_wait_ms", "model fair/unfair"] > 2
    spin = unfair.spin_stats.iloc[0]
    assert spin["collisions"] > 0 and spin["spins"] > 0 and spin["backoffs"] > 0
    assert fair.spin_stats.iloc[0]["collisions"] == 0


def test_barging_tilts_acquires_toward_running_workers_at_high_maxdop():
    table = fx.starvation_table(maxdops=(16,)).set_index("policy")
    assert table.loc["unfair", "worst_share"] < table.loc["fair", "worst_share"] < 1.0
