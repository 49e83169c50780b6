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
``YIELD``      a yield point: if the quantum is used up (or has less than
               ``x`` us left) and another worker is runnable on this
               scheduler, go to the tail of the runnable queue
               (SOS_SCHEDULER_YIELD).
``LOOP``       loop slot ``b`` (0, 1 or 2): run the body starting at ``a``
               ``c`` times in all, then fall through.
``UNIT``       one unit of the workload's work is done (an update, a row):
               counted for the throughput of a run measured over a window.
``END``        the worker is done.
``SLEEP``      leave the scheduler for ``x`` us (``a`` = FIXED or
               EXPONENTIAL): time outside SQL Server, such as a client's
               round trip between calls; no wait type counts it.
``ROW``        make the next row's clustered key (:mod:`models.btree`); with
               ``b`` = 1 it also starts a call of ``c`` rows.
``FIND``       look the row's key up in the index: ``b`` = 0 names its root
               (and its flow-control gate), 1 its leaf's parent, 2 its leaf.
``BRANCH``     go to ``a`` if condition ``b`` holds (BR_ALWAYS, BR_FULL,
               BR_NOT_FULL, BR_PARENT_FULL, BR_OUTSIDE, BR_MORE_ROWS).
``INSERT``     add the row to its leaf page.
``SPLIT``      split the row's full leaf (and a full parent first): a new
               page at the end for an ascending key, else half the rows move.
=============  ===========================================================

An ACQUIRE or RELEASE whose latch operand is negative names a register, the
latch the worker's FIND or SPLIT put there (:func:`register`): the root,
parent, leaf, flow-control gate or new page of the row being inserted.  A
register holding no latch (-1) makes the instruction do nothing.  A CPU burst
with distribution SCALED lasts ``x`` times the rows the last SPLIT moved.

How the later chapters are expressed without a new event loop:

* **Hot page** (last-page insert, built): one latch per index page (class
  BUFFER, wait type PAGELATCH_xx).  ROW makes each row's key at run time,
  FIND walks the index into registers, and the ACQUIREs name the registers:
  SH on the root and the parent, EX on the leaf, each parent released once
  its child is latched; BRANCH sends a full leaf down the split path (EX on
  the parent, the allocation latch, SPLIT, a longer hold)
  (:mod:`models.scenarios.last_page_insert`, :mod:`models.btree`).
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

from models.state import LOOP_SLOTS, REGISTERS

# Opcodes.
CPU, ACQUIRE, RELEASE, YIELD, LOOP, END, UNIT, SLEEP, ROW, FIND, BRANCH, INSERT, SPLIT = range(13)
OPCODE_NAMES = ("CPU", "ACQUIRE", "RELEASE", "YIELD", "LOOP", "END", "UNIT", "SLEEP", "ROW", "FIND",
                "BRANCH", "INSERT", "SPLIT")

# CPU burst distributions (SCALED: x times the rows the worker's last SPLIT moved).
FIXED, EXPONENTIAL, SCALED = 0, 1, 2
DISTRIBUTIONS = {"fixed": FIXED, "exponential": EXPONENTIAL}

# Latch registers (models.state.W_REG0 ..): what FIND and SPLIT put in each.
R_ROOT, R_PARENT, R_LEAF, R_GATE, R_NEW = range(REGISTERS)
# FIND stages and BRANCH conditions.
FIND_ROOT, FIND_PARENT, FIND_LEAF = 0, 1, 2
BR_ALWAYS, BR_FULL, BR_NOT_FULL, BR_PARENT_FULL, BR_OUTSIDE, BR_MORE_ROWS = range(6)


def register(r: int) -> int:
    """The latch operand that names register ``r`` instead of a latch."""
    if not 0 <= r < REGISTERS:
        raise ValueError(f"register={r} is not a register: use 0 to {REGISTERS - 1}")
    return -1 - r

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

    def yield_point(self, margin_us: float = 0.0) -> int:
        """A point where the worker yields if its quantum is used up (or has under ``margin_us`` left)."""
        return self._emit(YIELD, 0, 0, 0, margin_us)

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

    def sleep(self, us: float, dist: int = FIXED) -> int:
        """Leave the scheduler for ``us`` microseconds (mean, if exponential)."""
        return self._emit(SLEEP, dist, 0, 0, us)

    def row(self, call_rows: int = 0) -> int:
        """Make the next row's key; ``call_rows`` > 0 also starts a call inserting that many rows."""
        return self._emit(ROW, 0, 1 if call_rows > 0 else 0, int(call_rows))

    def find(self, stage: int) -> int:
        """Look the row's key up to ``stage`` (FIND_ROOT, FIND_PARENT or FIND_LEAF)."""
        return self._emit(FIND, 0, stage)

    def branch(self, condition: int, target: int = -1) -> int:
        """Go to ``target`` when ``condition`` holds (the target may be set later with :meth:`patch`)."""
        return self._emit(BRANCH, target, condition)

    def patch(self, at: int, target: int) -> None:
        """Point the BRANCH at address ``at`` to ``target``."""
        if self.op[at] != BRANCH:
            raise ValueError(f"address {at} holds {OPCODE_NAMES[self.op[at]]}, not BRANCH")
        self.a[at] = target

    def insert(self) -> int:
        """Add the row to its leaf page."""
        return self._emit(INSERT)

    def split(self) -> int:
        """Split the row's full leaf page."""
        return self._emit(SPLIT)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The table as an int64 (n, 4) array of op, a, b, c and a float64 x array."""
        ints = np.array([self.op, self.a, self.b, self.c], dtype=np.int64).T.copy()
        return ints.reshape(-1, 4), np.array(self.x, dtype=np.float64)
