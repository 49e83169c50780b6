"""The closed forms themselves, against hand-computed values and each other."""

from __future__ import annotations

import numpy as np
import pytest

from models import analytic


def test_single_server_formulas():
    assert analytic.mm1(0.5, 1.0).mean_wait == pytest.approx(1.0)
    assert analytic.md1(0.5, 1.0).mean_wait == pytest.approx(0.5)
    m = analytic.md1(0.4, 2.0)  # the convoy chapter's 400 req/s on a 2 ms latch
    assert m.utilisation == pytest.approx(0.8) and m.mean_wait == pytest.approx(4.0)
    assert m.mean_queue_length == pytest.approx(0.4 * 4.0)


def test_erlang_c():
    # One server: Erlang C is the utilisation and M/M/c is M/M/1.
    assert analytic.erlang_c(1, 0.7) == pytest.approx(0.7)
    assert analytic.mmc(0.7, 1.0, 1).mean_wait == pytest.approx(analytic.mm1(0.7, 1.0).mean_wait)
    # Two servers, a = 1: P(wait) = a^2 / (2 (2 - a)) / (1 + a + a^2 / (2 (2 - a))) = 1/3.
    assert analytic.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert analytic.mmc(1.0, 1.0, 2).mean_wait == pytest.approx((1 / 3) / (2 - 1))


def test_mva_matches_birth_death_solution():
    mva = analytic.mva_repairman(20, 1.0, 0.1)
    exact = analytic.repairman_exact(20, 1.0, 0.1)
    np.testing.assert_allclose(mva.throughput, exact.throughput, rtol=1e-10)
    np.testing.assert_allclose(mva.response_time, exact.response_time, rtol=1e-10)
    assert mva.throughput[0] == pytest.approx(1 / 1.1)
    assert mva.throughput[-1] < 1 / 0.1 and mva.throughput[-1] > 0.98 / 0.1  # saturates at 1/S


def test_usl_fit_recovers_coefficients():
    n = np.arange(1, 33)
    y = 1000 * analytic.usl(n, 0.05, 0.002)
    fit = analytic.usl_fit(n, y)
    assert fit.sigma == pytest.approx(0.05, rel=1e-3) and fit.kappa == pytest.approx(0.002, rel=1e-3)
    assert fit.peak_n == pytest.approx(np.sqrt(0.95 / 0.002), rel=1e-3)
    noisy = y * (1 + np.random.default_rng(3).normal(0, 0.01, n.size))
    fit = analytic.usl_fit(n, noisy)
    assert fit.sigma == pytest.approx(0.05, abs=0.02) and fit.r_squared > 0.95


@pytest.mark.parametrize("call,name", [
    (lambda: analytic.mm1(2.0, 1.0), "utilisation"),
    (lambda: analytic.md1(-1.0, 1.0), "arrival_rate"),
    (lambda: analytic.mmc(1.0, 1.0, 0), "servers"),
    (lambda: analytic.mva_repairman(0, 1.0, 0.1), "n_customers"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_repairman_saturation_is_where_the_two_throughput_bounds_meet():
    """N* = (Z + S) / S: below it throughput is at most N / (Z + S), above it at most 1 / S; MVA's curve
    bends there (at N* it is within the bounds, and well past it close to 1 / S)."""
    z, s = 26.0, 3.0
    knee = analytic.repairman_saturation(z, s)
    assert knee / (z + s) == pytest.approx(1 / s)
    mva = analytic.mva_repairman(40, z, s)
    assert mva.throughput[int(knee) - 1] < 1 / s and mva.throughput[-1] == pytest.approx(1 / s, rel=1e-3)
    with pytest.raises(ValueError, match="service_time"):
        analytic.repairman_saturation(z, 0.0)
    with pytest.raises(ValueError, match="think_time"):
        analytic.repairman_saturation(-1.0, s)


def test_vacation_queue_exhaustive_and_gated():
    """Fixed vacations V: exhaustive adds the residual V/2 to Pollaczek-Khinchine; gated adds rho V / (1 - rho) more."""
    ex = analytic.vacation_queue(0.5, 1.0, 2.0, 4.0, 16.0, "exhaustive")
    gated = analytic.vacation_queue(0.5, 1.0, 2.0, 4.0, 16.0, "gated")
    assert ex.pollaczek_khinchine == pytest.approx(analytic.mm1(0.5, 1.0).mean_wait)
    assert ex.mean_wait == pytest.approx(1.0 + 2.0) and gated.mean_wait == pytest.approx(1.0 + 2.0 + 4.0)
    # Exponential vacations: E[V^2] / (2 E[V]) = E[V].
    assert analytic.vacation_queue(0.3, 1.0, 1.0, 2.0, 8.0).residual_vacation == pytest.approx(2.0)
    # Vanishing vacations leave the plain M/G/1 queue.
    tiny = analytic.vacation_queue(0.5, 1.0, 2.0, 1e-9, 1e-18, "gated")
    assert tiny.mean_wait == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("kwargs, name", [
    (dict(arrival_rate=1.0, mean_service=1.0, service_second_moment=1.0, mean_vacation=1.0,
          vacation_second_moment=1.0), "utilisation"),
    (dict(arrival_rate=0.5, mean_service=1.0, service_second_moment=0.5, mean_vacation=1.0,
          vacation_second_moment=1.0), "service_second_moment"),
    (dict(arrival_rate=0.5, mean_service=1.0, service_second_moment=1.0, mean_vacation=2.0,
          vacation_second_moment=1.0), "vacation_second_moment"),
    (dict(arrival_rate=0.5, mean_service=1.0, service_second_moment=1.0, mean_vacation=1.0,
          vacation_second_moment=1.0, service="limited"), "service"),
])
def test_vacation_queue_refuses_bad_input_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        analytic.vacation_queue(**kwargs)


def test_fifo_wait_variance_matches_mm1_and_md1():
    rho, s = 0.8, 1.0
    assert analytic.mg1_wait_variance(rho, s, 2 * s ** 2, 6 * s ** 3) == pytest.approx(rho * (2 - rho) / (1 - rho) ** 2)
    # M/D/1: E[W^2] = 2 E[W]^2 + lambda S^3 / (3 (1 - rho)).
    w = rho / (2 * (1 - rho))
    assert analytic.mg1_wait_variance(rho, s, 1.0, 1.0) == pytest.approx(w ** 2 + rho / (3 * (1 - rho)))
    with pytest.raises(ValueError, match="service_third_moment"):
        analytic.mg1_wait_variance(0.5, 1.0, 2.0, 1.0)


def test_cpu_capped_throughput():
    assert analytic.cpu_capped_throughput(4, 2, 1.0, 0.25) == pytest.approx(1.6)
    assert analytic.cpu_capped_throughput(2, 4, 1.0, 0.25) == pytest.approx(1.6)
    assert analytic.cpu_capped_throughput(4, 4, 1.0, 0.25) == pytest.approx(3.2)
    with pytest.raises(ValueError, match="schedulers"):
        analytic.cpu_capped_throughput(4, 0, 1.0, 0.25)
