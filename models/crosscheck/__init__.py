"""Independent SimPy and Ciw versions of the engine's two latch systems, to check the engine against.

Two systems, both with one exclusive latch, a FIFO wait queue and the fair
hand-off: a request that found the latch held is granted ownership when the
previous holder releases, but only starts holding ``handoff_ms`` later (the
latch is owned and idle meanwhile); a request that found it free holds at once.

- open ("convoy"): Poisson arrivals at ``lam`` per ms, hold fixed or
  exponential with mean ``hold_ms``. With ``handoff_ms=0`` this is M/D/1 or
  M/M/1: mean wait ``rho*S/(2(1-rho))`` or ``rho*S/(1-rho)``, ``rho = lam*S``.
- closed ("closed-latch"): ``workers`` each think (mean ``think_ms``) then hold
  the latch (mean ``hold_ms``), forever. With ``handoff_ms=0`` and exponential
  think and hold this is the machine-repairman model, solved exactly by Mean
  Value Analysis: ``R(n) = S(1+Q(n-1))``, ``X(n) = n/(Z+R(n))``, ``Q(n) = X(n)R(n)``.

Times are in milliseconds. The engine (``models.run``) takes the hand-off as
``wakeup_us = handoff_ms * 1000`` with ``context_switch_us=0``, the fair policy
and enough schedulers that no worker waits for a CPU; ``engine_convoy`` and
``engine_closed_latch`` run it that way. Every function is
deterministic in its ``seed`` and returns an :class:`OpenResult` or
:class:`ClosedResult` whose statistics are computed by shared code.
"""

from ._summary import ClosedResult, OpenResult
from .ciw_latch import ciw_closed_latch, ciw_convoy
from .engine_latch import engine_closed_latch, engine_convoy
from .simpy_latch import simpy_closed_latch, simpy_convoy

__all__ = [
    "ClosedResult",
    "OpenResult",
    "ciw_closed_latch",
    "ciw_convoy",
    "engine_closed_latch",
    "engine_convoy",
    "simpy_closed_latch",
    "simpy_convoy",
]
