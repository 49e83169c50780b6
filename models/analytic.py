r"""Closed forms the simulations are held to.

Open single-server queues (Poisson arrivals at rate :math:`\lambda`, mean
service :math:`S`, utilisation :math:`\rho = \lambda S < 1`), by the
Pollaczek-Khinchine formula

.. math:: W_q = \frac{\lambda E[S^2]}{2 (1 - \rho)},

which gives :math:`W_q = \rho S / (2(1-\rho))` for fixed service (M/D/1) and
:math:`W_q = \rho S / (1-\rho)` for exponential service (M/M/1).  With
:math:`c` servers and exponential service (M/M/c) the probability of waiting
is Erlang's C and :math:`W_q = C(c, a) S / (c - a)` with :math:`a = \lambda S`.

A fair latch with a hand-off cost :math:`h` is an M/G/1 queue with
exceptional first service (Welch, 1964): a request that finds the latch free
holds it for :math:`S_0 = S`, one that waited gets it :math:`h` later and then
holds it, so its service is :math:`S_1 = h + S`.  With
:math:`\rho = \lambda E[S_1] < 1` and :math:`\rho_0 = \lambda E[S_0]`,

.. math:: W_q = \frac{\lambda E[S_1^2]}{2 (1 - \rho)}
               + \frac{\lambda (E[S_0^2] - E[S_1^2])}{2 (1 - \rho + \rho_0)},

and a request waits with probability :math:`1 - (1 - \rho)/(1 - \rho + \rho_0)`.

The closed machine-repairman model (N customers, think time Z, one FIFO
server with mean service S) is solved exactly by Mean Value Analysis:
:math:`R(n) = S (1 + Q(n-1))`, :math:`X(n) = n / (Z + R(n))`,
:math:`Q(n) = X(n) R(n)`.

The Universal Scalability Law models relative capacity as
:math:`C(N) = N / (1 + \sigma (N-1) + \kappa N (N-1))`, with its peak at
:math:`N_{peak} = \sqrt{(1-\sigma)/\kappa}` (Gunther writes it :math:`N^*`; the book keeps
:math:`N^*` for the concurrency at which the latch saturates).

A scheduler that also runs other work is an M/G/1 queue with vacations
(Takagi, 1991): while the other work has the CPU the latch holder's requests
wait, as if the server were away.  With multiple vacations of length
:math:`V` and exhaustive service (the server leaves only when the queue is
empty) the mean wait is the Pollaczek-Khinchine term plus the mean residual
vacation,

.. math:: W_q = \frac{\lambda E[S^2]}{2(1-\rho)} + \frac{E[V^2]}{2E[V]};

with gated service (a visit serves only those who were waiting when it
began) a third term, :math:`\rho E[V]/(1-\rho)`, is added
(:func:`vacation_queue` derives it).

Any work-conserving order of service that does not look at the service
times (an unfair latch whose spinners take it the instant it frees, in
whatever order) has the same mean wait as FIFO; FIFO has the least variance
(Kingman, 1962).  :func:`mg1_wait_variance` gives FIFO's, from the
second moment :math:`E[W^2] = 2E[W]^2 + \lambda E[S^3]/(3(1-\rho))` (Takács;
Kleinrock, 1975).

Times are in whatever unit the caller uses consistently (the book uses ms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse
from scipy.sparse import csgraph


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


@dataclass(frozen=True)
class HandoffQueueMetrics:
    """Steady-state means of the fair latch with a hand-off (M/G/1 with exceptional first service)."""

    utilisation: float  # lambda x (hand-off + mean hold): the latch's share of time owned
    prob_wait: float  # an arrival finds the latch owned
    mean_wait_for_release: float  # W_q: until the previous owner releases
    mean_latch_wait: float  # what the engine reports: W_q plus the hand-off, for those who waited


def fair_handoff_queue(arrival_rate: float, mean_hold: float, hold_second_moment: float,
                       handoff: float) -> HandoffQueueMetrics:
    """Welch's M/G/1 with exceptional first service as the fair latch with a hand-off ``handoff``.

    A waiter's latch wait runs from its request until it can use the latch, so
    it includes the hand-off; the mean over all requests is
    ``W_q + prob_wait x handoff``.
    """
    lam = _positive("arrival_rate", arrival_rate)
    s = _positive("mean_hold", mean_hold)
    if not np.isfinite(hold_second_moment) or hold_second_moment < s * s:
        raise ValueError(f"hold_second_moment={hold_second_moment!r} is out of range: "
                         f"use at least mean_hold squared ({s * s!r})")
    if not np.isfinite(handoff) or handoff < 0:
        raise ValueError(f"handoff={handoff!r} is out of range: use a number of at least 0")
    first_2 = hold_second_moment
    later_1, later_2 = handoff + s, hold_second_moment + 2 * handoff * s + handoff * handoff
    rho, rho0 = lam * later_1, lam * s
    if rho >= 1:
        raise ValueError(f"utilisation={rho!r} (arrival_rate x (handoff + mean_hold)) is out of range: "
                         "use a value below 1, or the queue grows without bound")
    wq = lam * later_2 / (2 * (1 - rho)) + lam * (first_2 - later_2) / (2 * (1 - rho + rho0))
    p_wait = 1 - (1 - rho) / (1 - rho + rho0)
    return HandoffQueueMetrics(rho, p_wait, wq, wq + p_wait * handoff)


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


def mva_network(n_customers: int, think_time: float, demands) -> RepairmanMetrics:
    """Exact MVA of a closed network: a delay of ``think_time`` and FIFO stations with service demands ``demands``.

    A station's demand is its visits per cycle times its mean service, so a station visited twice per cycle
    counts twice.  Exact for exponential FIFO stations whose mean service is the same for every visit (and any
    delay): the product-form case (Lazowska et al., 1984, chapter 6).  The result is :class:`RepairmanMetrics`
    for the whole network: response time summed over the stations, utilisation and queue length of each
    station in the columns of 2-D arrays (rows N = 1..n).  One station is :func:`mva_repairman`.
    """
    if int(n_customers) != n_customers or n_customers < 1:
        raise ValueError(f"n_customers={n_customers!r} is out of range: use an integer of at least 1")
    if not np.isfinite(think_time) or think_time < 0:
        raise ValueError(f"think_time={think_time!r} is out of range: use a number of at least 0")
    d = np.array([_positive("demands", float(v)) for v in np.atleast_1d(demands)])
    n = int(n_customers)
    x, r = np.zeros(n), np.zeros(n)
    u, q = np.zeros((n, d.size)), np.zeros((n, d.size))
    queue = np.zeros(d.size)
    for k in range(1, n + 1):
        rk = d * (1 + queue)
        r[k - 1] = rk.sum()
        x[k - 1] = k / (think_time + r[k - 1])
        queue = q[k - 1] = x[k - 1] * rk
        u[k - 1] = x[k - 1] * d
    return RepairmanMetrics(np.arange(1, n + 1), x, r, u, q)


def repairman_saturation(think_time: float, service_time: float) -> float:
    """Customers at which the repairman's server saturates, N* = (Z + S) / S: the balanced-job bound's knee."""
    if not np.isfinite(think_time) or think_time < 0:
        raise ValueError(f"think_time={think_time!r} is out of range: use a number of at least 0")
    s = _positive("service_time", service_time)
    return (think_time + s) / s


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


@dataclass(frozen=True)
class SharedSchedulerLatch:
    """Exact steady state of workers sharing schedulers and one fair EX latch (a small Markov chain)."""

    states: int  # states reachable from the start
    throughput: float  # acquires per unit time
    mean_latch_wait: float  # from the request until the worker runs holding the latch, over all acquires
    owned_idle_share: float  # share of time the latch is owned by a worker waiting for its scheduler


# A worker's phase in the chain below.
_THINK_RUN, _HOLD_RUN, _OWNER_READY, _SUSPENDED, _THINK_READY = range(5)


def shared_scheduler_latch(workers: int, schedulers: int, think: float, hold: float) -> SharedSchedulerLatch:
    """The engine's fair latch on shared schedulers as a continuous-time Markov chain, solved numerically.

    Worker ``w`` runs on scheduler ``w % schedulers``, loops over an
    exponential think burst and an exponential hold of one EX latch, and keeps
    its scheduler until it suspends (SQLOS does not pre-empt).  A fair release
    hands the latch to the head waiter, which goes to the head of its
    scheduler's runnable queue and owns the latch while it waits there for
    that scheduler; wake-up and context switches are free, and there are no
    yield points.  The state is every worker's phase, the latch's FIFO queue
    and each scheduler's running worker and runnable queue; the chain is
    built from the start (all workers runnable) and solved for its
    stationary distribution on its closed class of states.  Some layouts
    (five or six workers on two schedulers) have more than one closed class:
    without pre-emption or a yield point, which workers ever run again depends
    on how the run started; they are refused.
    """
    if not 1 <= schedulers <= workers <= 6:
        raise ValueError(f"workers={workers!r}, schedulers={schedulers!r} are out of range: use "
                         "1 <= schedulers <= workers <= 6 (about 2,000 states at 6; the dense solve grows as their square)")
    rate_think, rate_hold = 1.0 / _positive("think", think), 1.0 / _positive("hold", hold)
    home = [w % schedulers for w in range(workers)]

    def dispatch(phase, runq, running, s):
        if running[s] < 0 and runq[s]:
            w = runq[s].pop(0)
            running[s] = w
            phase[w] = _HOLD_RUN if phase[w] == _OWNER_READY else _THINK_RUN

    def freeze(phase, queue, runq, running):
        return tuple(phase), tuple(queue), tuple(tuple(q) for q in runq), tuple(running)

    def successors(state):
        phase0, queue0, runq0, running0 = state
        for s, w in enumerate(running0):
            if w < 0:
                continue
            phase, queue = list(phase0), list(queue0)
            runq, running = [list(q) for q in runq0], list(running0)
            if phase[w] == _THINK_RUN:  # the think burst ends: ACQUIRE
                if any(p in (_HOLD_RUN, _OWNER_READY) for p in phase) or queue:
                    phase[w] = _SUSPENDED
                    queue.append(w)
                    running[s] = -1
                    dispatch(phase, runq, running, s)
                else:
                    phase[w] = _HOLD_RUN
                yield rate_think, freeze(phase, queue, runq, running)
            else:  # the hold ends: RELEASE hands the latch to the head waiter, then think again
                if queue:
                    head = queue.pop(0)
                    phase[head] = _OWNER_READY
                    runq[home[head]].insert(0, head)
                    dispatch(phase, runq, running, home[head])
                phase[w] = _THINK_RUN
                yield rate_hold, freeze(phase, queue, runq, running)

    phase, runq, running = [_THINK_READY] * workers, [[] for _ in range(schedulers)], [-1] * schedulers
    for w in range(workers):  # every worker arrives at time 0 and queues on its scheduler
        runq[home[w]].append(w)
        dispatch(phase, runq, running, home[w])
    start = freeze(phase, [], runq, running)
    index, order, edges = {start: 0}, [start], []
    for i, state in enumerate(order):
        for rate, nxt in successors(state):
            if nxt not in index:
                index[nxt] = len(order)
                order.append(nxt)
            edges.append((i, index[nxt], rate))
    n = len(order)
    q = np.zeros((n, n))
    for i, j, rate in edges:
        q[i, j] += rate
        q[i, i] -= rate
    # The start-up states (workers that have not run yet) are transient: solve on the one closed class,
    # where the balance equations have rank one less than its size (any of them may then be replaced).
    count, label = csgraph.connected_components(sparse.csr_matrix(q > 0), directed=True, connection="strong")
    left = {label[i] for i, j, _ in edges if label[i] != label[j]}  # classes some transition leaves
    leaves = [c for c in range(count) if c not in left]
    if len(leaves) != 1:
        raise ValueError(f"workers={workers!r}, schedulers={schedulers!r}: the chain has {len(leaves)} closed classes, "
                         "so its long run depends on the start; choose another layout")
    closed = np.flatnonzero(label == leaves[0])
    a = q[np.ix_(closed, closed)].T.copy()
    a[-1, :] = 1.0  # replace one balance equation by the normalisation
    rhs = np.zeros(closed.size)
    rhs[-1] = 1.0
    pi = np.zeros(n)
    pi[closed] = np.linalg.solve(a, rhs)
    holding = np.array([any(p == _HOLD_RUN for p in st[0]) for st in order], dtype=float)
    ready = np.array([any(p == _OWNER_READY for p in st[0]) for st in order], dtype=float)
    waiting = np.array([sum(p in (_SUSPENDED, _OWNER_READY) for p in st[0]) for st in order], dtype=float)
    throughput = float(pi @ holding) * rate_hold
    return SharedSchedulerLatch(n, throughput, float(pi @ waiting) / throughput, float(pi @ ready))


@dataclass(frozen=True)
class VacationQueueMetrics:
    """Mean wait of an M/G/1 queue whose server takes vacations, by its parts."""

    utilisation: float  # lambda x E[S], the server's share of time serving
    pollaczek_khinchine: float  # lambda E[S^2] / (2 (1 - rho)): the queue without vacations
    residual_vacation: float  # E[V^2] / (2 E[V]): the rest of the vacation an arrival finds
    gated_extra: float  # rho E[V] / (1 - rho) for gated service, 0 for exhaustive
    mean_wait: float  # the sum of the three


def vacation_queue(arrival_rate: float, mean_service: float, service_second_moment: float,
                   mean_vacation: float, vacation_second_moment: float,
                   service: str = "exhaustive") -> VacationQueueMetrics:
    r"""M/G/1 with multiple vacations (Takagi, 1991, vol. 1): the mean wait in queue, exhaustive or gated.

    The server serves, and when it leaves (the queue empty under exhaustive service; the customers present
    at the start of its visit served, under gated service) it takes a vacation of independent length
    :math:`V`, and another while nobody is waiting when one ends.

    Exhaustive: :math:`W_q = \lambda E[S^2]/(2(1-\rho)) + E[V^2]/(2E[V])` (the decomposition of Fuhrmann and
    Cooper: the Pollaczek-Khinchine wait plus the residual vacation).

    Gated, by the cycle argument: a cycle is a vacation then the service of everyone who arrived in the
    previous cycle, :math:`C_k = V_k + B_k`, so :math:`E[C] = E[V]/(1-\rho)` and, since the
    arrivals in a cycle are Poisson given its length, :math:`\mathrm{Var}(C) = (\mathrm{Var}(V) + \lambda E[C]
    E[S^2])/(1-\rho^2)`.  An arrival waits for the rest of its (length-biased) cycle and for the work of those
    who came before it in the same cycle, :math:`(1+\rho)E[C^2]/(2E[C])`, which simplifies to the exhaustive
    wait plus :math:`\rho E[V]/(1-\rho)`.

    SQLOS's quantum makes a CPU-bound co-tenant such a vacation: it runs a whole quantum, and at its yield
    point goes to the tail of the runnable queue, behind the requests already waiting but ahead of any that
    arrive while they run; that is gated service (:func:`models.book.analysis.validation.cotenant_table`).
    """
    lam = _positive("arrival_rate", arrival_rate)
    s = _positive("mean_service", mean_service)
    v = _positive("mean_vacation", mean_vacation)
    if not np.isfinite(service_second_moment) or service_second_moment < s * s:
        raise ValueError(f"service_second_moment={service_second_moment!r} is out of range: "
                         f"use at least mean_service squared ({s * s!r})")
    if not np.isfinite(vacation_second_moment) or vacation_second_moment < v * v:
        raise ValueError(f"vacation_second_moment={vacation_second_moment!r} is out of range: "
                         f"use at least mean_vacation squared ({v * v!r})")
    if service not in ("exhaustive", "gated"):
        raise ValueError(f"service={service!r} is out of range: use 'exhaustive' or 'gated'")
    rho = lam * s
    if rho >= 1:
        raise ValueError(f"utilisation={rho!r} (arrival_rate x mean_service) is out of range: "
                         "use a value below 1, or the queue grows without bound")
    pk = lam * service_second_moment / (2 * (1 - rho))
    residual = vacation_second_moment / (2 * v)
    extra = rho * v / (1 - rho) if service == "gated" else 0.0
    return VacationQueueMetrics(rho, pk, residual, extra, pk + residual + extra)


def mg1_wait_variance(arrival_rate: float, mean_service: float, service_second_moment: float,
                      service_third_moment: float) -> float:
    """Variance of the FIFO M/G/1 wait in queue: E[W^2] - E[W]^2 with E[W^2] = 2 E[W]^2 + lambda E[S^3] / (3 (1 - rho)).

    Takács's moment formula (Kleinrock, 1975, vol. 1, ch. 5).  FIFO's is the least variance of any order of
    service that does not look at the service times (Kingman, 1962), so it bounds an unfair latch's from below.
    """
    lam = _positive("arrival_rate", arrival_rate)
    s = _positive("mean_service", mean_service)
    if not np.isfinite(service_second_moment) or service_second_moment < s * s:
        raise ValueError(f"service_second_moment={service_second_moment!r} is out of range: "
                         f"use at least mean_service squared ({s * s!r})")
    if not np.isfinite(service_third_moment) or service_third_moment < service_second_moment ** 1.5:
        raise ValueError(f"service_third_moment={service_third_moment!r} is out of range: "
                         f"use at least service_second_moment ** 1.5")
    rho = lam * s
    if rho >= 1:
        raise ValueError(f"utilisation={rho!r} (arrival_rate x mean_service) is out of range: "
                         "use a value below 1, or the queue grows without bound")
    mean = lam * service_second_moment / (2 * (1 - rho))
    second = 2 * mean * mean + lam * service_third_moment / (3 * (1 - rho))
    return second - mean * mean


def cpu_capped_throughput(workers: int, schedulers: int, think: float, hold: float) -> float:
    """Acquires per unit time when the latch costs nothing: each worker's loop is think + hold of CPU.

    Workers bound round-robin to schedulers (``w % schedulers``) keep every scheduler that has one busy, so
    the loops complete at min(workers, schedulers) / (think + hold): the reference against which a latch's
    own cost on shared schedulers is measured.
    """
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers!r} is out of range: use an integer of at least 1")
    if int(schedulers) != schedulers or schedulers < 1:
        raise ValueError(f"schedulers={schedulers!r} is out of range: use an integer of at least 1")
    cycle = _positive("think", think) + _positive("hold", hold)
    return min(int(workers), int(schedulers)) / cycle
