"""The one calibrated hand-off: derived from White's measurement, the default of every scenario, and the
figure the book prints."""

from __future__ import annotations

from pathlib import Path

import pytest

import models
from models import calibration

ROOT = Path(__file__).resolve().parent.parent


def test_handoff_is_whites_signal_wait_per_waited_acquire():
    per_wait_us = calibration.WHITE_FAIR_SIGNAL_WAIT_MS * 1000.0 / calibration.WHITE_FAIR_LATCH_WAITS
    assert abs(per_wait_us - 9.74) < 0.01
    assert calibration.HANDOFF_US == pytest.approx(per_wait_us, abs=0.05)
    assert calibration.WAKEUP_US + calibration.CONTEXT_SWITCH_US == pytest.approx(calibration.HANDOFF_US)
    assert 0 < calibration.CONTEXT_SWITCH_US < calibration.HANDOFF_US


@pytest.mark.parametrize("name", ["closed-latch", "parallel-insert", "version-store"])
def test_scenarios_default_to_the_calibrated_handoff(name):
    scenario = models.scenarios()[name]
    assert scenario.param("wakeup_us").default == calibration.WAKEUP_US
    assert scenario.param("context_switch_us").default == calibration.CONTEXT_SWITCH_US


def test_a_lone_waiter_pays_the_calibrated_handoff_as_signal_wait():
    """Two workers on their own schedulers: every waited acquire's signal wait is exactly the hand-off."""
    res = models.run("closed-latch", workers=2, schedulers=2, think_dist="fixed", hold_dist="fixed",
                     think_ms=0.0001, hold_ms=0.5, acquires=400, seed=1)
    latch = res.latch_stats.iloc[0]
    waits = res.wait_stats.set_index("wait_type").loc["LATCH_EX"]
    per_wait_us = waits["signal_wait_time_ms"] * 1000.0 / latch["waiting_requests_count"]
    assert latch["waiting_requests_count"] > 100
    assert per_wait_us == pytest.approx(calibration.HANDOFF_US, rel=1e-3)


def test_glossary_prints_the_calibrated_figure():
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    assert f"{calibration.HANDOFF_US} µs" in text
