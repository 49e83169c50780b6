"""Sweeps: replicated means and intervals, and the same stored bytes from every executor."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from models.sweep import CI_SUFFIX, METRICS, Sweep, mean_ci, run_all, run_one, run_sweep, t95, write_table

SMALL = Sweep(
    name="small", scenario="closed-latch",
    grid={"workers": [2, 6], "policy": ["fair", "unfair"]},
    fixed={"schedulers": 2, "acquires": 600, "seed": 11}, replications=3,
)


@pytest.mark.parametrize("dof", [1, 2, 4, 9, 19, 100])
def test_t_quantiles_match_scipy(dof):
    expected = stats.t.ppf(0.975, dof)
    assert t95(dof) == pytest.approx(expected, abs=5e-7)
    with pytest.raises(ValueError, match=r"dof=0 is out of range"):
        t95(0)


def test_mean_ci_is_the_student_interval():
    values = [3.0, 5.5, 4.25, 6.0, 2.75]
    mean, half = mean_ci(values)
    assert mean == pytest.approx(statistics.fmean(values))
    assert half == pytest.approx(stats.t.ppf(0.975, 4) * statistics.stdev(values) / math.sqrt(5), rel=1e-6)
    assert mean_ci([7.0]) == (7.0, 0.0)


def test_rows_are_means_over_the_seeds():
    table = run_sweep(SMALL, jobs=1, progress=False)
    assert list(table.columns) == SMALL.columns()
    point = SMALL.points()[1]
    runs = [run_one("closed-latch", dict(point, seed=s)) for s in (11, 12, 13)]
    for m in ("throughput_per_s", "mean_wait_ms"):
        mean, half = mean_ci([r[m] for r in runs])
        assert table.loc[1, m] == mean and table.loc[1, m + CI_SUFFIX] == half
    assert (table[[m + CI_SUFFIX for m in METRICS]] >= 0).all().all()
    assert (table["throughput_per_s" + CI_SUFFIX] > 0).all()  # the seeds really differ


def test_stored_table_is_byte_identical_on_every_executor(tmp_path):
    from distributed import LocalCluster

    serial = write_table(run_sweep(SMALL, jobs=1, progress=False), tmp_path / "serial.csv")
    pool = write_table(run_sweep(SMALL, jobs=2, progress=False), tmp_path / "pool.csv")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dask = write_table(run_sweep(SMALL, dask=cluster.scheduler_address, progress=False), tmp_path / "dask.csv")
    assert serial.read_bytes() == pool.read_bytes() == dask.read_bytes()


def test_bad_jobs_is_refused_with_the_parameter_named():
    with pytest.raises(ValueError, match=r"jobs=0 is out of range"):
        run_all(run_one, [("closed-latch", {})], jobs=0)
