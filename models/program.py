"""Worker programs: the small instruction set every scenario is written in.

A worker executes a program, one instruction at a time, from its own start
address in one shared instruction table (five flat arrays: ``op``, ``a``,
``b``, ``c``, ``x``).  A scenario is a set of programs plus parameters; the
event loop in :mod:`models.engine` never changes from one scenario to the next.

=============  ===========================================================
opcode         meaning (operands)
=============  ===========================================================
``CPU``        run on the scheduler for ``x`` us; ``a`` = FIXED or EXPONENTIAL;
               ``b`` = a latch index whose ``contender_cost_us`` is added once
               per worker contending for that latch at the start of the
               burst (-1: none); ``c`` unused.  Non-preemptive.
``ACQUIRE``    acquire latch ``a`` in mode ``b`` (KP, SH, UP, EX, DT).
``RELEASE``    release latch ``a`` held in mode ``b``.
``YIELD``      a yield point: if the quantum is used up and another worker
               is runnable on this scheduler, go to the tail of the runnable
               queue (SOS_SCHEDULER_YIELD).
``LOOP``       loop slot ``b`` (0, 1 or 2): run the body starting at ``a``
               ``c`` times in all, then fall through.
``UNIT``       one unit of the workload's work is done (an update, a row):
               counted for the throughput of a run measured over a window.
``END``        the worker is done.
=============  ===========================================================

How the later chapters are expressed without a new event loop:

* **Hot page** (last-page insert): one latch per page (class BUFFER, wait
  type PAGELATCH_xx).  The insert program is ``CPU(row) ; ACQUIRE(page, EX) ;
  CPU(insert) ; RELEASE(page, EX)``.  The key strategy decides which page
  latch the ACQUIRE names: identity keys give every worker the same current
  last page (the scenario lays the page sequence out in the program, a new
  page every ``rows_per_page`` rows, with a page split as a longer CPU burst
  under the latch plus an EX ACQUIRE of the parent page); GUID, bit-reversed
  and hash-bucket keys spread the ACQUIREs over many page latches, written
  into each worker's own program from the seeded generator.
* **Version store** (APPEND_ONLY_STORAGE_INSERT_POINT, built): one EX latch
  guards the append point.  Each connection loops for ever over ``CPU(update)
  ; YIELD ; ACQUIRE(insert point, EX) ; CPU(hold) ; RELEASE ; UNIT``, one
  acquire per 8,000-byte chunk, with a longer hold where an append starts a
  new page; the run counts UNITs over a window of simulated time
  (:mod:`models.scenarios.version_store`).
* **CCI memory grants**: the resource semaphore is one more kind of latch
  whose grant test is "units held + units asked <= capacity" instead of the
  mode matrix (the ACQUIRE's ``c`` operand carries the units: requested
  memory), and its FIFO wait queue is the grant queue.  The 25 s time-out is
  a timer event on the waiting worker: if it fires before the grant, the
  worker leaves the queue and its program continues at a fallback address
  (the ACQUIRE's ``x`` operand), where it asks again for the required memory
  only and writes to a delta store.  Both fit the existing loop (one more
  event kind, one more grant test); the memory chapter adds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.state import LOOP_SLOTS

# Opcodes.
CPU, ACQUIRE, RELEASE, YIELD, LOOP, END, UNIT = 0, 1, 2, 3, 4, 5, 6
OPCODE_NAMES = ("CPU", "ACQUIRE", "RELEASE", "YIELD", "LOOP", "END", "UNIT")

# CPU burst distributions.
FIXED, EXPONENTIAL = 0, 1
DISTRIBUTIONS = {"fixed": FIXED, "exponential": EXPONENTIAL}

# Latch modes, in the order of the compatibility matrix in models.latch.
KP, SH, UP, EX, DT = 0, 1, 2, 3, 4
MODE_NAMES = ("KP", "SH", "UP", "EX", "DT")


@dataclass
class Program:
    """A growing instruction table; each ``start()`` opens a new program in it."""

    op: list[int] = field(default_factory=list)
    a: list[int] = field(default_factory=list)
    b: list[int] = field(default_factory=list)
    c: list[int] = field(default_factory=list)
    x: list[float] = field(default_factory=list)

    def _emit(self, op: int, a: int = 0, b: int = 0, c: int = 0, x: float = 0.0) -> int:
        self.op.append(op)
        self.a.append(a)
        self.b.append(b)
        self.c.append(c)
        self.x.append(float(x))
        return len(self.op) - 1

    def start(self) -> int:
        """Return the address where the next program begins."""
        return len(self.op)

    def cpu(self, us: float, dist: int = FIXED, contended_latch: int = -1) -> int:
        """A CPU burst of ``us`` microseconds (mean, if exponential)."""
        return self._emit(CPU, dist, contended_latch, 0, us)

    def acquire(self, latch: int, mode: int = EX) -> int:
        """Acquire ``latch`` in ``mode``."""
        return self._emit(ACQUIRE, latch, mode)

    def release(self, latch: int, mode: int = EX) -> int:
        """Release ``latch`` held in ``mode``."""
        return self._emit(RELEASE, latch, mode)

    def yield_point(self) -> int:
        """A point where the worker yields if its quantum is used up."""
        return self._emit(YIELD)

    def loop(self, body_start: int, times: int, slot: int = 0) -> int:
        """Run the instructions from ``body_start`` to here ``times`` times (nested loops use distinct slots)."""
        if not 0 <= slot < LOOP_SLOTS:
            raise ValueError(f"slot={slot} is not a loop slot: use 0 to {LOOP_SLOTS - 1}")
        return self._emit(LOOP, body_start, slot, int(times))

    def unit(self) -> int:
        """Count one unit of work done (the run's throughput counts these when the workload says so)."""
        return self._emit(UNIT)

    def end(self) -> int:
        """End the worker's program."""
        return self._emit(END)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The table as an int64 (n, 4) array of op, a, b, c and a float64 x array."""
        ints = np.array([self.op, self.a, self.b, self.c], dtype=np.int64).T.copy()
        return ints.reshape(-1, 4), np.array(self.x, dtype=np.float64)
