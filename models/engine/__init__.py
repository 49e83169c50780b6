"""The engine: SQLOS schedulers running worker programs against latches, compiled with numba.

Only compiled kernels over one state buffer live here, and nothing here
imports from outside this package.  The layers, each importing only those
above it in this list:

* ``numba_internals``: every use of numba's private API (the cache locators, tables indexed as they are,
  views of the buffer), written against one numba version and checked by ``tests/test_numba_internals.py``;
* ``jit``: how kernels are compiled, and the numba cache keyed on this whole package;
* ``state``: the buffer and its tables; ``clock``: the tick; ``rng``: the seeded generator;
* ``program``: the instruction set a scenario writes its workers' programs in;
* ``events``: the pending events (heap, ring, front slot);
* ``scheduler``: runnable queues, worker states, dispatch, wake-ups;
* ``latch``: modes, wait queues and every latch policy (grant, wait, spin, back-off, hand-off);
* ``grants``: the memory-grant semaphore; ``btree``: the index and its instructions;
* ``queries``: grants, forked workers and OS calls as instructions;
* ``loop``: ``execute`` (a worker's program) and ``run_events`` (the event loop).

:mod:`models.workload` is the Python front: it lays a workload into the
buffer and calls :func:`models.engine.loop.run_events`.
"""

from models.engine import jit  # noqa: F401  (installs the cache locators before any kernel is defined)

__all__ = ["jit"]
