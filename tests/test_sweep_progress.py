"""A sweep's progress: the time left comes from finished runs, measured after the workers' start-up."""

from __future__ import annotations

import re

import pytest

from models.book.sweep import RunRate, duration_text, run_all


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_no_estimate_until_a_run_finishes_after_start_up() -> None:
    clock = Clock()
    rate = RunRate(4160, startup_runs=2, clock=clock)
    assert rate.remaining_s() is None and rate.status().startswith("starting")
    clock.now = 24.0  # the workers start and load the engine: no run is done yet
    assert rate.remaining_s() is None
    rate.finished()
    assert rate.remaining_s() is None and rate.status().startswith("starting")  # one of two workers done
    rate.finished()
    assert rate.remaining_s() is None and rate.status() == "measuring the rate"  # nothing measured since


def test_the_rate_leaves_out_the_start_up() -> None:
    """4,160 runs at 100 a second after a 24 s start-up: about 41 s left, not tqdm's 28 hours."""
    clock = Clock()
    rate = RunRate(4160, startup_runs=2, clock=clock)
    clock.now = 24.0
    rate.finished(2)
    clock.now = 25.0
    rate.finished(100)
    assert rate.remaining_s() == pytest.approx((4160 - 102) / 100)
    assert rate.status() == "about 41 s left"
    naive = (4160 - 102) * clock.now / 102  # the rate over the whole elapsed time, start-up included
    assert naive > 5 * rate.remaining_s()


def test_the_estimate_follows_a_rate_that_changes() -> None:
    clock = Clock()
    rate = RunRate(1000, startup_runs=1, clock=clock)
    clock.now = 5.0
    rate.finished()
    clock.now = 15.0
    rate.finished(100)  # 10 runs/s
    assert rate.remaining_s() == pytest.approx(899 / 10)
    clock.now = 115.0  # stalled for 100 s: the rate falls, the time left grows
    assert rate.remaining_s() == pytest.approx(899 * 110 / 100)
    rate.finished(899)
    assert rate.remaining_s() == 0.0 and rate.status() == "done"


@pytest.mark.parametrize("seconds, text", [(0.2, "1 s"), (41, "41 s"), (150, "2 min"), (5400, "1.5 h"),
                                           (100_800, "28.0 h")])
def test_durations_read_as_waits(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_the_bar_counts_runs_and_shows_none_of_tqdms_estimates(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all(abs, [(-k,) for k in range(50)], jobs=1, label="demo") == list(range(50))
    shown = capsys.readouterr().err.replace("\r", "\n")
    assert "demo:" in shown and "50/50 runs" in shown and "done" in shown
    assert "?" not in shown and not re.search(r"<\d", shown)  # none of tqdm's own rate or ETA
