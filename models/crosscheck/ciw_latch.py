"""The convoy and closed-latch systems written as Ciw queueing networks, a second independent check.

Ciw thinks in nodes, servers and service times, so a latch is a node with one
server and a FIFO queue, and a request's "service" is the time the latch is
owned. The fair hand-off delay fits that picture exactly: a request that had
to queue owns the latch, idle, for ``handoff_ms`` before it starts holding, so
its service time is ``handoff_ms + hold``; a request that found the server
free has service time ``hold``. Ciw samples a service time when service begins
and passes the customer to the distribution, so ``_LatchService`` can tell the
two apart: the customer queued exactly when service begins later than it
arrived at the node. The wait reported (request to start of hold) is then the
Ciw queueing time plus ``handoff_ms`` for those that queued.

The open system is one node with Poisson arrivals. The closed system is a
two-node cycle: an infinite-server "think" node and the one-server latch node,
with all workers arriving at the think node at time 0 and never leaving.
Ciw's own ``ciw.seed`` seeds its random streams, so runs are deterministic.
"""

from __future__ import annotations

import ciw
import numpy as np

from ._summary import (ClosedResult, OpenResult, check_closed, check_common, summarise_closed,
                       summarise_open)

__all__ = ["ciw_convoy", "ciw_closed_latch"]


def _dist(mean: float, dist: str) -> ciw.dists.Distribution:
    """Ciw distribution with this mean: Deterministic for "fixed", Exponential otherwise."""
    if dist == "fixed" or mean <= 0:
        return ciw.dists.Deterministic(float(mean))
    return ciw.dists.Exponential(1.0 / mean)


class _LatchService(ciw.dists.Distribution):
    """Service time at the latch node: the hold, plus the hand-off delay for customers that queued."""

    def __init__(self, hold: ciw.dists.Distribution, handoff_ms: float) -> None:
        self.hold = hold
        self.handoff_ms = float(handoff_ms)

    def __repr__(self) -> str:
        return f"LatchService({self.hold!r}, handoff_ms={self.handoff_ms})"

    def sample(self, t=None, ind=None) -> float:
        queued = ind is not None and t > ind.arrival_date
        return self.hold.sample(t, ind) + (self.handoff_ms if queued else 0.0)


class _Population(ciw.dists.Distribution):
    """Inter-arrival times that bring ``n`` customers at time 0 and nobody afterwards (a closed system)."""

    def __init__(self, n: int) -> None:
        self.left = int(n)

    def sample(self, t=None, ind=None) -> float:
        if self.left > 0:
            self.left -= 1
            return 0.0
        return float("inf")


class _CountingNode(ciw.Node):
    """A Ciw node that counts its releases, so a closed run can stop after a number of acquires."""

    def release(self, next_individual, next_node, reroute=False):
        super().release(next_individual, next_node, reroute)
        self.releases = getattr(self, "releases", 0) + 1


def ciw_convoy(lam: float, hold_ms: float = 2.0, hold_dist: str = "fixed", handoff_ms: float = 0.0,
               n_requests: int = 20000, seed: int = 1, warmup: int | None = None) -> OpenResult:
    """Simulate Poisson requests (lam per ms) for one EX latch with a fair hand-off delay, in Ciw."""
    if not lam > 0:
        raise ValueError(f"lam={lam!r}: must be > 0 (requests per ms)")
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_requests, warmup, "n_requests")
    n = int(n_requests)
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(float(lam))],
        service_distributions=[_LatchService(_dist(hold_ms, hold_dist), handoff_ms)],
        number_of_servers=[1],
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_customers(n, method="Finish")
    recs = sorted(sim.get_all_records(only=["service"]), key=lambda r: r.id_number)[:n]
    arrive = np.array([r.arrival_date for r in recs])
    queued = np.array([r.waiting_time > 0 for r in recs])
    start = np.array([r.service_start_date for r in recs]) + np.where(queued, float(handoff_ms), 0.0)
    end = np.array([r.exit_date for r in recs])
    params = dict(arrival_rate_per_ms=lam, hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  n_requests=n, seed=seed)
    return summarise_open("ciw", params, arrive, start, end, warmup)


def ciw_closed_latch(workers: int, hold_ms: float = 0.1, hold_dist: str = "exponential",
                     handoff_ms: float = 0.0, think_ms: float = 1.0, think_dist: str = "exponential",
                     n_acquires: int = 20000, seed: int = 1, warmup: int | None = None) -> ClosedResult:
    """Simulate N workers alternating think and an EX hold on one fair latch, as a closed Ciw network."""
    check_closed(workers, think_ms, think_dist)
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_acquires, warmup, "n_acquires")
    n = int(n_acquires)
    network = ciw.create_network(
        arrival_distributions=[_Population(int(workers)), None],
        service_distributions=[_dist(think_ms, think_dist), _LatchService(_dist(hold_ms, hold_dist), handoff_ms)],
        number_of_servers=[float("inf"), 1],
        routing=[[0.0, 1.0], [1.0, 0.0]],
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network, node_class=[ciw.Node, _CountingNode])
    latch = sim.nodes[2]
    latch.releases = 0
    # Ciw's own loops stop on a clock or on customers leaving; a closed run stops on a release count.
    node = sim.find_next_active_node()
    sim.current_time = node.next_event_date
    while latch.releases < n:
        node = sim.event_and_return_nextnode(node)
        sim.current_time = node.next_event_date
    recs = [r for r in sim.get_all_records(only=["service"]) if r.node == 2]
    recs.sort(key=lambda r: r.exit_date)
    recs = recs[:n]
    request = np.array([r.arrival_date for r in recs])
    grant = np.array([r.service_start_date for r in recs])
    queued = np.array([r.waiting_time > 0 for r in recs])
    start = grant + np.where(queued, float(handoff_ms), 0.0)
    end = np.array([r.exit_date for r in recs])
    params = dict(workers=int(workers), hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  think_ms=think_ms, think_dist=think_dist, n_acquires=n, seed=seed)
    return summarise_closed("ciw", params, request, grant, start, end, warmup)
