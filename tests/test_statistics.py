"""models.statistics, the one home of every interval: t quantiles, replicate means, batch means, differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.statistics import batch_means, batch_means_ci, difference_ci, mean_ci, t_quantile


def test_t_quantiles_are_the_tables_values_to_six_decimals():
    assert t_quantile(1) == 12.706205
    assert t_quantile(5) == 2.570582  # six replicates, as the fit's ranges use
    assert t_quantile(19) == 2.093024  # twenty batch means
    assert t_quantile(4, 0.99) == 4.604095
    assert t_quantile(5, 0.999) == pytest.approx(6.8688, abs=1e-4)
    assert t_quantile(12.5) == pytest.approx((t_quantile(12) + t_quantile(13)) / 2, abs=2e-3)  # Welch's real dof


@pytest.mark.parametrize("dof", [0, -1, 0.5, True, "5", None, float("nan")])
def test_a_bad_dof_is_refused_by_name(dof):
    with pytest.raises(ValueError, match=r"dof=.* is out of range"):
        t_quantile(dof)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1])
def test_a_bad_level_is_refused_by_name(level):
    with pytest.raises(ValueError, match=f"level={level!r} is out of range"):
        t_quantile(5, level)


def test_mean_ci_is_the_student_interval_by_hand():
    values = [2.0, 4.0, 4.0, 5.0, 5.0]  # mean 4, sample variance (4 + 0 + 0 + 1 + 1) / 4 = 1.5
    mean, half = mean_ci(values)
    assert mean == 4.0
    assert half == 2.776445 * math.sqrt(1.5 / 5)  # t with 4 dof at 95%, to 6 decimals
    assert mean_ci(values, 0.99)[1] == 4.604095 * math.sqrt(1.5 / 5)
    assert mean_ci([7.0]) == (7.0, 0.0)  # one value: no spread to measure


def test_mean_ci_sums_exactly_in_any_order():
    values = [1e16, 1.0, -1e16, 1.0] * 3
    assert mean_ci(values)[0] == 0.5  # a naive sum loses the ones
    assert mean_ci(values) == mean_ci(values[::-1])


def test_mean_ci_refuses_no_values():
    with pytest.raises(ValueError, match=r"values=\[\] is out of range"):
        mean_ci([])


def test_batch_means_of_a_known_series():
    series = np.repeat([1.0, 3.0, 5.0, 7.0], 5).tolist() + [100.0, 100.0]  # 22 values: the last 2 left over
    mean, error, means = batch_means(series, batches=4)
    assert means.tolist() == [1.0, 3.0, 5.0, 7.0]
    assert mean == 4.0
    assert error == pytest.approx(math.sqrt(20.0 / 3.0) / 2.0)  # sd of 1, 3, 5, 7 over sqrt(4)
    assert batch_means_ci(series, batches=4) == (4.0, t_quantile(3) * error)


def test_batch_means_covers_the_true_mean_at_its_level():
    rng = np.random.default_rng(7)
    covered = sum(abs(mean) <= half for mean, half in (batch_means_ci(rng.normal(0, 1, 2000)) for _ in range(200)))
    assert 180 <= covered <= 200  # 95% nominal: 190 expected, 180 is 2.3 standard deviations below


@pytest.mark.parametrize("batches", [1, 0, 11, 2.0, True])
def test_batch_means_refuses_a_bad_batch_count(batches):
    with pytest.raises(ValueError, match=f"batches={batches!r} is out of range: use 2 to 10"):
        batch_means(list(range(10)), batches)


def test_difference_ci_is_welchs_interval_by_hand():
    values, reference = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0]
    diff, half = difference_ci(values, reference)
    share_a, share_b = 1.0 / 3, (20.0 / 3) / 4  # each sample's variance over its count
    dof = (share_a + share_b) ** 2 / (share_a ** 2 / 2 + share_b ** 2 / 3)
    assert diff == 2.0 - 5.0
    assert half == t_quantile(dof) * math.sqrt(share_a + share_b)
    assert difference_ci([1.0, 1.0], [2.0, 2.0]) == (-1.0, 0.0)


def test_difference_ci_refuses_a_sample_of_one():
    with pytest.raises(ValueError, match="reference has 1 value"):
        difference_ci([1.0, 2.0], [3.0])
