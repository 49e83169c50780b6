"""Worker programs: the small instruction set every scenario is written in.

A worker executes a program, one instruction at a time, from its own start
address in one shared instruction table (five flat arrays: ``op``, ``a``,
``b``, ``c``, ``x``).  A scenario is a set of programs plus parameters; the
event loop in :mod:`models.engine` never changes from one scenario to the next.

=============  ===========================================================
opcode         meaning (operands)
=============  ===========================================================
``CPU``        run on the scheduler for ``x`` us; ``a`` = FIXED or EXPONENTIAL;
               ``b`` = a latch (or register) whose ``contender_cost_us`` is
               added once per worker contending for that latch at the start
               of the burst, when ``c`` is 1 (0: no such latch).
               Non-preemptive.
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
``ROW``        make the next row's clustered key (:mod:`models.engine.btree`); with
               ``b`` = 1 it also starts a call of ``c`` rows.
``FIND``       look the row's key up in the index: ``b`` = 0 names its root
               (and its flow-control gate), 1 its leaf's parent, 2 its leaf.
``BRANCH``     go to ``a`` if condition ``b`` holds (BR_ALWAYS, BR_FULL,
               BR_NOT_FULL, BR_PARENT_FULL, BR_OUTSIDE, BR_MORE_ROWS; and
               BR_FORCED, BR_FAILED on the worker's memory grant).
``INSERT``     add the row to its leaf page.
``SPLIT``      split the row's full leaf (and a full parent first): a new
               page at the end for an ascending key, else half the rows move.
``GRANT``      ask the memory-grant semaphore for ``a`` KB (requested), with
               ``b`` KB required; wait in its queue ``c`` (by cost: 0 is
               served first, FIFO within a queue) for at most ``x`` us,
               then take ``b`` KB if it fits under the limit (a forced
               grant) or fail (error 8645) (:mod:`models.engine.grants`).
``FREE``       return the worker's grant.
``FORK``       start the ``c`` workers after this one (the query's parallel
               workers) at address ``a``; they run under this worker's grant.
``JOIN``       wait until every worker this one forked has ended.
``OSCALL``     ``x`` us of work (``b`` = FIXED or EXPONENTIAL) in a serialised
               path of the operating system: wait for it (first come, first
               served), then do it.  ``a`` = OS_SPIN: the worker keeps its
               scheduler and spins, so the time is CPU; OS_PREEMPTIVE: it
               leaves its scheduler, a wait.
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
  (:mod:`models.scenarios.last_page_insert`, :mod:`models.engine.btree`).
* **Version store** (APPEND_ONLY_STORAGE_INSERT_POINT, built): one EX latch
  guards the append point.  Each connection loops for ever over ``CPU(update)
  ; YIELD ; ACQUIRE(insert point, EX) ; CPU(hold) ; RELEASE ; UNIT``, one
  acquire per 8,000-byte chunk, with a longer hold where an append starts a
  new page; the run counts UNITs over a window of simulated time
  (:mod:`models.scenarios.version_store`).
* **CCI memory grants** (built): a query's coordinator asks for its grant
  (GRANT), waiting in one of the semaphore's queues by cost; the time-out is a timer
  event on the waiting worker.  Once granted (or forced) it FORKs its
  parallel workers, which share the grant, JOINs them and FREEs the grant;
  BRANCH on the grant's outcome picks compression or the delta-store path,
  or the error (:mod:`models.scenarios.cci_insert`).  Memory given back to
  the operating system during compression is an OSCALL per batch of pages
  (:mod:`models.scenarios.cci_decommit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.engine.state import GRANT_QUEUES, LOOP_SLOTS, REGISTERS

# Opcodes (the query instructions, GRANT and after, are run by models.engine.queries.query_step).
(CPU, ACQUIRE, RELEASE, YIELD, LOOP, END, UNIT, SLEEP, ROW, FIND, BRANCH, INSERT, SPLIT,
 GRANT, FREE, FORK, JOIN, OSCALL) = range(18)
OPCODE_NAMES = ("CPU", "ACQUIRE", "RELEASE", "YIELD", "LOOP", "END", "UNIT", "SLEEP", "ROW", "FIND",
                "BRANCH", "INSERT", "SPLIT", "GRANT", "FREE", "FORK", "JOIN", "OSCALL")
# OSCALL: spin in the kernel holding the scheduler (CPU), or leave it (a preemptive wait).
OS_SPIN, OS_PREEMPTIVE = 0, 1

# CPU burst distributions (SCALED: x times the rows the worker's last SPLIT moved).
FIXED, EXPONENTIAL, SCALED = 0, 1, 2
DISTRIBUTIONS = {"fixed": FIXED, "exponential": EXPONENTIAL}

# Latch registers (models.engine.state.W_REGISTER0 ..): what FIND and SPLIT put in each.
R_ROOT, R_PARENT, R_LEAF, R_GATE, R_NEW = range(REGISTERS)
# FIND stages and BRANCH conditions.
FIND_ROOT, FIND_PARENT, FIND_LEAF = 0, 1, 2
BR_ALWAYS, BR_FULL, BR_NOT_FULL, BR_PARENT_FULL, BR_OUTSIDE, BR_MORE_ROWS, BR_FORCED, BR_FAILED = range(8)


def register(r: int) -> int:
    """The latch operand that names register ``r`` instead of a latch."""
    if not 0 <= r < REGISTERS:
        raise ValueError(f"register={r} is not a register: use 0 to {REGISTERS - 1}")
    return -1 - r

# Latch modes, in the order of the compatibility matrix in models.engine.latch.
KP, SH, UP, EX, DT = 0, 1, 2, 3, 4
MODE_NAMES = ("KP", "SH", "UP", "EX", "DT")


def _latch_and_mode(latch: int, mode: int) -> tuple[int, int]:
    """``latch`` and ``mode`` checked: a latch number or a register operand, and a mode KP to DT."""
    if latch < -REGISTERS:
        raise ValueError(f"latch={latch} is neither a latch (0 or more) nor a register (-1 to -{REGISTERS})")
    if not KP <= mode <= DT:
        raise ValueError(f"mode={mode} is not a latch mode: use {KP} to {DT} ({', '.join(MODE_NAMES)})")
    return int(latch), int(mode)


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

    def cpu(self, us: float, dist: int = FIXED, contended_latch: int | None = None) -> int:
        """A CPU burst of ``us`` microseconds (mean, if exponential), longer by the contender cost of
        ``contended_latch`` (a latch number or a :func:`register`) per worker contending for it."""
        if contended_latch is None:
            return self._emit(CPU, dist, 0, 0, us)
        return self._emit(CPU, dist, contended_latch, 1, us)

    def acquire(self, latch: int, mode: int = EX) -> int:
        """Acquire ``latch`` (a latch number, or a :func:`register`) in ``mode``."""
        return self._emit(ACQUIRE, *_latch_and_mode(latch, mode))

    def release(self, latch: int, mode: int = EX) -> int:
        """Release ``latch`` (a latch number, or a :func:`register`) held in ``mode``."""
        return self._emit(RELEASE, *_latch_and_mode(latch, mode))

    def yield_point(self, margin_us: float = 0.0) -> int:
        """A point where the worker yields if its quantum is used up (or has under ``margin_us`` left)."""
        return self._emit(YIELD, 0, 0, 0, margin_us)

    def loop(self, body_start: int, times: int, slot: int = 0) -> int:
        """Run the instructions from ``body_start`` to here ``times`` times (nested loops use distinct slots)."""
        if not 0 <= slot < LOOP_SLOTS:
            raise ValueError(f"slot={slot} is not a loop slot: use 0 to {LOOP_SLOTS - 1}")
        if isinstance(times, bool) or int(times) != times or times < 1:
            raise ValueError(f"times={times!r} is not a number of passes: use a whole number from 1")
        here = len(self.op)
        if not 0 <= body_start <= here:
            raise ValueError(f"body_start={body_start} is not an address before this loop (0 to {here})")
        enclosed = [at for at in range(body_start, here) if self.op[at] == LOOP and self.b[at] == slot]
        if enclosed:  # the inner loop's exit would reset the counter this loop keeps in the same slot
            raise ValueError(f"slot={slot} already counts the loop at address {enclosed[0]} inside this one: nested "
                             f"loops need distinct slots (at most {LOOP_SLOTS} deep)")
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

    def grant(self, requested_kb: int, required_kb: int, timeout_us: float, queue: int = 0) -> int:
        """Ask for a memory grant of ``requested_kb``, waiting in grant queue ``queue`` (0, the cheapest, is served
        first); at ``timeout_us`` settle for ``required_kb`` or fail."""
        if not 0 <= queue < GRANT_QUEUES:
            raise ValueError(f"queue={queue} is not a grant queue: use 0 (served first) to {GRANT_QUEUES - 1}")
        if not 0 < required_kb <= requested_kb:
            raise ValueError(f"required_kb={required_kb} must be above 0 and at most requested_kb={requested_kb}")
        if not timeout_us > 0:
            raise ValueError(f"timeout_us={timeout_us} must be above 0")
        # One time-out for every request: a worker's timer left from an earlier request is then never due after
        # a later request's deadline, so that timer can re-arm for it (models.engine.loop.on_timer).
        others = {x for op, x in zip(self.op, self.x) if op == GRANT} - {float(timeout_us)}
        if others:
            raise ValueError(f"timeout_us={timeout_us} differs from this table's other grants ({min(others)} us): "
                             "use one time-out for every GRANT")
        return self._emit(GRANT, int(requested_kb), int(required_kb), int(queue), timeout_us)

    def free(self) -> int:
        """Give the worker's memory grant back."""
        return self._emit(FREE)

    def fork(self, start: int, workers: int) -> int:
        """Start the ``workers`` workers that follow this one at address ``start``."""
        return self._emit(FORK, start, 0, int(workers))

    def join(self) -> int:
        """Wait for every forked worker to end."""
        return self._emit(JOIN)

    def oscall(self, us: float, how: int = OS_SPIN, dist: int = FIXED) -> int:
        """``us`` (mean, if exponential) of work in the OS's serialised path, spinning (OS_SPIN) or preemptive."""
        return self._emit(OSCALL, how, dist, 0, us)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The table as an int64 (n, 4) array of op, a, b, c and a float64 x array."""
        ints = np.array([self.op, self.a, self.b, self.c], dtype=np.int64).T.copy()
        return ints.reshape(-1, 4), np.array(self.x, dtype=np.float64)
