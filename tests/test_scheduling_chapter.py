"""Chapter 1's derived figures (models.book.analysis.scheduling): the quantum study the prose quotes."""

from __future__ import annotations

import math

import pytest

import models
from models.book.analysis import scheduling
from models.statistics import t_quantile

TIMELINE = dict(workers=6, schedulers=2, think_ms=1.5, hold_ms=0.3, acquires=600, seed=4)  # the chapter's timeline


def test_a_shorter_quantum_lowers_throughput_beyond_its_interval():
    """The prose: over 20 seeds the 1 ms quantum lowers throughput, and the interval does not reach zero; a longer
    quantum than 4 ms is not slower by the same margin (the ordering runs one way)."""
    loss, half = scheduling.quantum_loss_pct(TIMELINE, short_ms=1.0, long_ms=4.0, seeds=scheduling.QUANTUM_SEEDS)
    assert len(scheduling.QUANTUM_SEEDS) == 20
    assert 0 < half < loss < 10
    longer, _ = scheduling.quantum_loss_pct(TIMELINE, short_ms=16.0, long_ms=4.0, seeds=scheduling.QUANTUM_SEEDS)
    assert longer < loss


def test_the_loss_is_the_mean_of_the_per_seed_pairs():
    """By hand, three seeds: the mean of 100 (1 - short / long) and its t interval with 2 degrees of freedom."""
    seeds = (1, 2, 3)
    losses = []
    for seed in seeds:
        long = models.run("closed-latch", quantum_ms=4.0, **dict(TIMELINE, seed=seed)).throughput_per_s
        short = models.run("closed-latch", quantum_ms=1.0, **dict(TIMELINE, seed=seed)).throughput_per_s
        losses.append(100 * (1 - short / long))
    mean = sum(losses) / 3
    spread = math.sqrt(sum((loss - mean) ** 2 for loss in losses) / 2)
    loss, half = scheduling.quantum_loss_pct(TIMELINE, seeds=seeds)
    assert loss == pytest.approx(mean, rel=1e-12)
    assert half == pytest.approx(t_quantile(2) * spread / math.sqrt(3), rel=1e-9)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="seeds"):
        scheduling.quantum_loss_pct(TIMELINE, seeds=())
    with pytest.raises(ValueError, match="short_ms=0"):
        scheduling.quantum_loss_pct(TIMELINE, short_ms=0.0)
