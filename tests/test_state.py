"""The state buffer's tables in compiled code: the layout Python sees, and indexing without wraparound."""

import numpy as np
from numba import njit

from models.engine.latch import COMPATIBLE, CONFLICTS, grantable, hold, unhold
from models.engine.state import G_EVENTS, LW_TIME, L_HELD, W_ACQUIRES, allocate, tables


@njit(cache=False)
def _touch(mem):
    """Write through the compiled views, read a row with numba's own indexing, test a grant."""
    t = tables(mem)
    t.workers[2, W_ACQUIRES] = 7
    t.latch_waits[1, 3, LW_TIME] = 2.5
    t.heap_k[4] = 11
    row = t.workers[2]  # a partial index: numba's own getitem, through the table type's fallback
    t.run_cells[G_EVENTS] = row[W_ACQUIRES] + 1
    hold(t.latches, 0, 3)
    ex_then_sh = grantable(t.latches, 0, 1)
    kp = grantable(t.latches, 0, 0)
    unhold(t.latches, 0, 3)
    return ex_then_sh, kp, grantable(t.latches, 0, 1), t.latches[0, L_HELD]


def test_compiled_views_write_where_python_reads():
    s = allocate(n_workers=4, n_schedulers=2, n_latches=2, program=3, trace_events=0, logged_acquires=0, samples=5)
    ex_then_sh, kp, sh_after, held = _touch(s.address)
    assert s.workers[2, W_ACQUIRES] == 7 and s.latch_waits[1, 3, LW_TIME] == 2.5 and s.heap_k[4] == 11
    assert s.run_cells[G_EVENTS] == 8
    # EX held: SH conflicts, KP does not; released, SH is grantable and the mask is empty again.
    assert (ex_then_sh, kp, sh_after, held) == (False, True, True, 0)


def test_conflict_mask_is_the_compatibility_matrix():
    for requested in range(5):
        for held in range(5):
            conflicts = (CONFLICTS >> (5 * requested + held)) & 1
            assert conflicts == (1 - COMPATIBLE[requested, held]), (requested, held)
    assert np.array_equal(COMPATIBLE, COMPATIBLE.T)
