"""The engine's generator: a run depends only on its seed, and the look-ahead draw changes no value."""

from __future__ import annotations

import numpy as np
import pytest

from models.engine import rng
from models.engine.clock import on_tick


def test_streams_depend_only_on_the_seed_and_neighbouring_seeds_differ():
    a, b, c = rng.seed_state(7), rng.seed_state(7), rng.seed_state(8)
    first = [rng.next_u64(a) for _ in range(5)]
    assert first == [rng.next_u64(b) for _ in range(5)]
    second = [rng.next_u64(c) for _ in range(5)]
    assert not set(first) & set(second)  # seed + 1 is not the same stream shifted by one draw


@pytest.mark.parametrize("seed", [1, 2, 12345])
def test_look_ahead_draw_gives_exactly_the_plain_exponential_draws(seed):
    """``draw`` computes each logarithm one draw early; the durations must be the very same floats
    as ``on_tick(exponential(...))`` on a twin generator, fixed draws (which use no randomness) mixed in."""
    state, ahead = rng.seed_state(seed), np.zeros(3)
    rng.start_ahead(state, ahead, 2)
    twin = rng.seed_state(seed)
    means = np.random.default_rng(seed).choice([0.5, 3.0, 100.0, 4000.0], size=2000)
    fixed = np.random.default_rng(seed + 1).random(2000) < 0.3
    for mean, is_fixed in zip(means, fixed):
        got = rng.draw(state, ahead, 2, 0 if is_fixed else 1, mean)
        want = mean if is_fixed else on_tick(rng.exponential(twin, mean))
        assert got == want
    assert ahead[0] == ahead[1] == 0.0  # only the slot it was given


def test_uniform_draws_lie_in_the_unit_interval_with_the_right_mean():
    state = rng.seed_state(3)
    u = np.array([rng.uniform(state) for _ in range(20_000)])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 4 * (1 / np.sqrt(12 * u.size))
