"""The precomputed explorer data in book/data: present, compact, complete, and not stale."""

from __future__ import annotations

import pandas as pd
import pytest

from models.book.sweep import CI_SUFFIX, DATA_DIR, run_one, run_point, sweeps

SWEEPS = sweeps()
MAX_BYTES = 2 * 1024 * 1024


def test_there_are_sweeps():
    assert SWEEPS, "no sweep modules under models/book/sweeps"


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_stored_sweep_is_complete_and_compact(name):
    sweep = SWEEPS[name]
    path = DATA_DIR / f"{name}.csv"
    assert path.exists(), f"run: python -m models sweep {name}"
    assert path.stat().st_size <= MAX_BYTES
    table = pd.read_csv(path)
    assert len(table) == len(sweep.points())
    assert list(table.columns) == sweep.columns()


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_a_random_sweep_has_seeds_enough_for_its_intervals(name):
    """Fewer than 5 replications only where the seed changes no number (then one run is the answer); a sweep
    replicated 5 or more times is one whose seed matters, and its stored rows carry the intervals to show it."""
    sweep = SWEEPS[name]
    point = sweep.points()[len(sweep.points()) // 2]
    first, other = (run_one(sweep.scenario, dict(sweep.params(point), seed=s), sweep.measure) for s in (1, 99))
    changed = sorted(m for m in first if first[m] != other[m])
    widths = pd.read_csv(DATA_DIR / f"{name}.csv")[[m + CI_SUFFIX for m in sweep.metric_names()]].to_numpy()
    if sweep.replications < 5:
        assert not changed, (f"{name}: {sweep.replications} replication(s), but the seed changes {changed}: "
                             "a random sweep needs 5 or more for its confidence intervals")
        assert (widths == 0).all(), f"{name}: the seed changes nothing, yet the stored rows have nonzero intervals"
    else:
        assert changed, (f"{name}: {sweep.replications} replications, but seeds 1 and 99 give the same numbers: "
                         "the replications repeat one run (is the seed passed through?)")
        assert (widths > 0).any(), f"{name}: the seed matters, yet every stored confidence interval is zero"


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_stored_sweep_is_not_stale(name):
    """Recompute the first, middle and last grid points and compare with the stored rows."""
    sweep = SWEEPS[name]
    table = pd.read_csv(DATA_DIR / f"{name}.csv")
    points = sweep.points()
    for k in sorted({0, len(points) // 2, len(points) - 1}):
        fresh = run_point(sweep, points[k])
        stored = table.iloc[k]
        for col, value in fresh.items():
            if isinstance(value, str):
                assert stored[col] == value, (name, k, col)
            else:
                assert stored[col] == pytest.approx(value, rel=1e-5, abs=1e-9), (
                    f"{name} row {k} column {col}: stored {stored[col]} vs fresh {value}; "
                    f"rerun: python -m models sweep {name}")


def test_seeds_per_point_gives_each_point_its_own_seeds():
    """A sweep with seeds_per_point runs disjoint seeds at every point (independent errors); the default
    shares them (smooth curves); run_point uses the same seeds as the whole sweep."""
    from dataclasses import replace

    from models.book.sweep import tasks

    shared = SWEEPS["validation"]
    assert shared.seeds_per_point
    seen = [tuple(shared.seeds(k)) for k in range(len(shared.points()))]
    assert len(set(s for seeds in seen for s in seeds)) == len(seen) * shared.replications
    common = replace(shared, seeds_per_point=False)
    assert {tuple(common.seeds(k)) for k in range(len(common.points()))} == {tuple(common.seeds())}
    last = shared.points()[-1]
    assert [p["seed"] for _, p, _ in tasks(shared)[-shared.replications:]] == shared.seeds(shared.index(last))
    with pytest.raises(ValueError, match="not on the grid"):
        shared.index(dict(last, arrival_rate_per_s=-1.0))
