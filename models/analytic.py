r"""Closed forms the simulations are held to.

Open single-server queues (Poisson arrivals at rate :math:`\lambda`, mean
service :math:`S`, utilisation :math:`\rho = \lambda S < 1`), by the
Pollaczek-Khinchine formula

.. math:: W_q = \frac{\lambda E[S^2]}{2 (1 - \rho)},

which gives :math:`W_q = \rho S / (2(1-\rho))` for fixed service (M/D/1) and
:math:`W_q = \rho S / (1-\rho)` for exponential service (M/M/1).  With
:math:`c` servers and exponential service (M/M/c) the probability of waiting
is Erlang's C and :math:`W_q = C(c, a) S / (c - a)` with :math:`a = \lambda S`.

The closed machine-repairman model (N customers, think time Z, one FIFO
server with mean service S) is solved exactly by Mean Value Analysis:
:math:`R(n) = S (1 + Q(n-1))`, :math:`X(n) = n / (Z + R(n))`,
:math:`Q(n) = X(n) R(n)`.

The Universal Scalability Law models relative capacity as
:math:`C(N) = N / (1 + \sigma (N-1) + \kappa N (N-1))`, with its peak at
:math:`N^* = \sqrt{(1-\sigma)/\kappa}`.

Times are in whatever unit the caller uses consistently (the book uses ms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats


@dataclass(frozen=True)
class QueueMetrics:
    """Steady-state means of an open queue."""

    utilisation: float
    mean_wait: float
    mean_response: float
    mean_queue_length: float
    mean_in_system: float
    prob_wait: float = float("nan")


def _positive(name: str, value: float) -> float:
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}={value!r} is out of range: use a number above 0")
    return float(value)


def mg1(arrival_rate: float, mean_service: float, scv: float) -> QueueMetrics:
    """M/G/1 by Pollaczek-Khinchine; ``scv`` is the squared coefficient of variation of service."""
    lam = _positive("arrival_rate", arrival_rate)
    s = _positive("mean_service", mean_service)
    if not np.isfinite(scv) or scv < 0:
        raise ValueError(f"scv={scv!r} is out of range: use a number of at least 0")
    rho = lam * s
    if rho >= 1:
        raise ValueError(f"utilisation={rho!r} (arrival_rate x mean_service) is out of range: "
                         "use a value below 1, or the queue grows without bound")
    wq = lam * s * s * (1 + scv) / (2 * (1 - rho))
    return QueueMetrics(rho, wq, wq + s, lam * wq, lam * (wq + s), rho)


def md1(arrival_rate: float, service_time: float) -> QueueMetrics:
    """M/D/1: Poisson arrivals, fixed service."""
    return mg1(arrival_rate, service_time, 0.0)


def mm1(arrival_rate: float, service_time: float) -> QueueMetrics:
    """M/M/1: Poisson arrivals, exponential service."""
    return mg1(arrival_rate, service_time, 1.0)


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits in M/M/c, via the stable Erlang B recursion."""
    if int(servers) != servers or servers < 1:
        raise ValueError(f"servers={servers!r} is out of range: use an integer of at least 1")
    a = _positive("offered_load", offered_load)
    if a >= servers:
        raise ValueError(f"offered_load={a!r} is out of range: use a value below servers={servers}")
    b = 1.0
    for k in range(1, int(servers) + 1):
        b = a * b / (k + a * b)
    rho = a / servers
    return b / (1 - rho + rho * b)


def mmc(arrival_rate: float, service_time: float, servers: int) -> QueueMetrics:
    """M/M/c: Poisson arrivals, exponential service, c servers (Erlang C)."""
    lam = _positive("arrival_rate", arrival_rate)
    s = _positive("service_time", service_time)
    a = lam * s
    c = erlang_c(servers, a)
    wq = c * s / (servers - a)
    return QueueMetrics(a / servers, wq, wq + s, lam * wq, lam * (wq + s), c)


@dataclass(frozen=True)
class RepairmanMetrics:
    """Exact MVA results for N = 1..n: arrays indexed by N - 1."""

    customers: np.ndarray
    throughput: np.ndarray
    response_time: np.ndarray
    utilisation: np.ndarray
    queue_length: np.ndarray


def mva_repairman(n_customers: int, think_time: float, service_time: float) -> RepairmanMetrics:
    """Exact Mean Value Analysis of the machine-repairman model for 1..n customers."""
    if int(n_customers) != n_customers or n_customers < 1:
        raise ValueError(f"n_customers={n_customers!r} is out of range: use an integer of at least 1")
    if not np.isfinite(think_time) or think_time < 0:
        raise ValueError(f"think_time={think_time!r} is out of range: use a number of at least 0")
    s = _positive("service_time", service_time)
    n = int(n_customers)
    x, r, q = np.zeros(n), np.zeros(n), np.zeros(n)
    queue = 0.0
    for k in range(1, n + 1):
        r[k - 1] = s * (1 + queue)
        x[k - 1] = k / (think_time + r[k - 1])
        queue = q[k - 1] = x[k - 1] * r[k - 1]
    return RepairmanMetrics(np.arange(1, n + 1), x, r, x * s, q)


def repairman_exact(n_customers: int, think_time: float, service_time: float) -> RepairmanMetrics:
    """The same model for exponential think and service, from its birth-death distribution."""
    n = int(n_customers)
    s = _positive("service_time", service_time)
    z = _positive("think_time", think_time)
    rows = []
    for m in range(1, n + 1):
        # p(k) proportional to m! / (m-k)! (S/Z)^k, k customers at the server.
        logw = np.array([sum(np.log(np.arange(m - k + 1, m + 1))) + k * np.log(s / z)
                         for k in range(m + 1)])
        p = np.exp(logw - logw.max())
        p /= p.sum()
        util = 1 - p[0]
        x = util / s
        q = float(np.dot(np.arange(m + 1), p))
        rows.append((x, q / x, util, q))
    x, r, u, q = map(np.array, zip(*rows))
    return RepairmanMetrics(np.arange(1, n + 1), x, r, u, q)


def usl(n, sigma: float, kappa: float):
    """Relative capacity C(N) under the Universal Scalability Law."""
    n = np.asarray(n, dtype=float)
    return n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


@dataclass(frozen=True)
class USLFit:
    """A USL fit: throughput = lambda_ x C(N)."""

    lambda_: float
    sigma: float
    kappa: float
    peak_n: float
    r_squared: float


def usl_fit(n, throughput) -> USLFit:
    """Least-squares fit of lambda_, sigma >= 0 and kappa >= 0 to throughput against N."""
    n = np.asarray(n, dtype=float)
    y = np.asarray(throughput, dtype=float)
    if n.shape != y.shape or n.size < 3:
        raise ValueError(f"n and throughput must be equal-length arrays of at least 3 points, got {n.size} and {y.size}")
    guess = y[np.argmin(n)] / usl(n.min(), 0.0, 0.0)

    def resid(p):
        return p[0] * usl(n, p[1], p[2]) - y

    fit = optimize.least_squares(resid, x0=[guess, 0.01, 0.0001],
                                 bounds=([0, 0, 0], [np.inf, 1, np.inf]))
    lam, sigma, kappa = fit.x
    ss_res = float(np.sum(resid(fit.x) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    peak = float(np.sqrt((1 - sigma) / kappa)) if kappa > 0 else float("inf")
    return USLFit(float(lam), float(sigma), float(kappa), peak, 1 - ss_res / ss_tot if ss_tot else 1.0)


def fair_handoff_capacity(hold: float, handoff: float) -> float:
    """Acquires per unit time one latch serves once a queue exists under fair hand-off."""
    return 1.0 / (_positive("hold", hold) + handoff)


def batch_means_ci(samples, n_batches: int = 20, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and confidence half-width from non-overlapping batch means (batches long enough to be nearly independent)."""
    x = np.asarray(samples, dtype=float)
    if n_batches < 2 or x.size < n_batches:
        raise ValueError(f"n_batches={n_batches!r} is out of range: use 2 to {x.size} for {x.size} samples")
    usable = x.size - x.size % n_batches
    means = x[:usable].reshape(n_batches, -1).mean(axis=1)
    half = stats.t.ppf(0.5 + confidence / 2, n_batches - 1) * means.std(ddof=1) / np.sqrt(n_batches)
    return float(means.mean()), float(half)
