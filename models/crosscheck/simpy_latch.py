"""The convoy and closed-latch systems written with SimPy, as an independent check on the engine.

A latch under the fair policy is a SimPy ``Resource`` of capacity one: its
request queue is FIFO and a release grants the head request at once. The
engine adds one thing SimPy does not have: a request that had to wait is
owned by its worker from the moment of the grant, but that worker only starts
running ``handoff_ms`` later (the wake-up cost). Here the process keeps its
granted request (the latch stays owned) and sleeps ``handoff_ms`` before the
hold starts; a request granted on arrival starts holding at once.

SimPy has no random generator of its own, so each run draws from one
``random.Random(seed)``: the same arguments always give the same result.
"""

from __future__ import annotations

import random

import numpy as np
import simpy

from ._summary import (ClosedResult, OpenResult, check_closed, check_common, summarise_closed,
                       summarise_open)

__all__ = ["simpy_convoy", "simpy_closed_latch"]


def _sampler(rng: random.Random, mean: float, dist: str):
    """Return a no-argument function drawing one duration (fixed or exponential with this mean)."""
    if dist == "fixed":
        return lambda: mean
    if mean <= 0:
        return lambda: 0.0
    rate = 1.0 / mean
    expo = rng.expovariate
    return lambda: expo(rate)


def simpy_convoy(lam: float, hold_ms: float = 2.0, hold_dist: str = "fixed", handoff_ms: float = 0.0,
                 n_requests: int = 20000, seed: int = 1, warmup: int | None = None) -> OpenResult:
    """Simulate Poisson requests (lam per ms) for one EX latch with a fair hand-off delay, in SimPy."""
    if not lam > 0:
        raise ValueError(f"lam={lam!r}: must be > 0 (requests per ms)")
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_requests, warmup, "n_requests")
    rng = random.Random(seed)
    hold = _sampler(rng, hold_ms, hold_dist)
    n = int(n_requests)
    arrive, start, end = np.empty(n), np.empty(n), np.empty(n)
    env = simpy.Environment()
    latch = simpy.Resource(env, capacity=1)

    def request(i: int):
        arrive[i] = env.now
        req = latch.request()
        waited = not req.triggered  # granted inside request() only if the latch was free
        yield req
        if waited and handoff_ms > 0:
            yield env.timeout(handoff_ms)
        start[i] = env.now
        yield env.timeout(hold())
        latch.release(req)
        end[i] = env.now

    def source():
        for i in range(n):
            yield env.timeout(rng.expovariate(lam))
            env.process(request(i))

    env.process(source())
    env.run()
    params = dict(arrival_rate_per_ms=lam, hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  n_requests=n, seed=seed)
    return summarise_open("simpy", params, arrive, start, end, warmup)


def simpy_closed_latch(workers: int, hold_ms: float = 0.1, hold_dist: str = "exponential",
                       handoff_ms: float = 0.0, think_ms: float = 1.0, think_dist: str = "exponential",
                       n_acquires: int = 20000, seed: int = 1, warmup: int | None = None) -> ClosedResult:
    """Simulate N workers alternating think and an EX hold on one fair latch (machine repairman), in SimPy."""
    check_closed(workers, think_ms, think_dist)
    warmup = check_common(hold_ms, hold_dist, handoff_ms, n_acquires, warmup, "n_acquires")
    rng = random.Random(seed)
    hold = _sampler(rng, hold_ms, hold_dist)
    think = _sampler(rng, think_ms, think_dist)
    n = int(n_acquires)
    request, grant, start, end = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    env = simpy.Environment()
    latch = simpy.Resource(env, capacity=1)
    done = env.event()
    count = [0]

    def worker():
        while True:
            yield env.timeout(think())
            t_req = env.now
            req = latch.request()
            waited = not req.triggered
            yield req
            t_grant = env.now
            if waited and handoff_ms > 0:
                yield env.timeout(handoff_ms)
            t_start = env.now
            yield env.timeout(hold())
            latch.release(req)
            k = count[0]
            if k < n:
                request[k], grant[k], start[k], end[k] = t_req, t_grant, t_start, env.now
                count[0] = k + 1
                if k + 1 == n:
                    done.succeed()

    for _ in range(int(workers)):
        env.process(worker())
    env.run(until=done)
    params = dict(workers=int(workers), hold_ms=hold_ms, hold_dist=hold_dist, handoff_ms=handoff_ms,
                  think_ms=think_ms, think_dist=think_dist, n_acquires=n, seed=seed)
    return summarise_closed("simpy", params, request, grant, start, end, warmup)
