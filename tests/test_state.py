"""The state buffer's tables in compiled code: the layout Python sees, and indexing without wraparound."""

import numpy as np
from numba import njit

from models.engine import latch as lt
from models.engine import state as st


@njit(cache=False)
def _touch(mem):
    """Write through the compiled views, read a row with numba's own indexing, test a grant."""
    t = st.tables(mem)
    t.wi[2, st.W_ACQ] = 7
    t.lw[1, 3, st.LW_TIME] = 2.5
    t.heap_k[4] = 11
    row = t.wi[2]  # a partial index: numba's own getitem, through the table type's fallback
    t.gi[st.G_EVENTS] = row[st.W_ACQ] + 1
    lt.hold(t.li, 0, 3)
    ex_then_sh = lt.grantable(t.li, 0, 1)
    kp = lt.grantable(t.li, 0, 0)
    lt.unhold(t.li, 0, 3)
    return ex_then_sh, kp, lt.grantable(t.li, 0, 1), t.li[0, st.L_HELD]


def test_compiled_views_write_where_python_reads():
    s = st.allocate(workers=4, schedulers=2, latches=2, program=3, trace_events=0, logged_acquires=0, samples=5)
    ex_then_sh, kp, sh_after, held = _touch(s.address)
    assert s.wi[2, st.W_ACQ] == 7 and s.lw[1, 3, st.LW_TIME] == 2.5 and s.heap_k[4] == 11
    assert s.gi[st.G_EVENTS] == 8
    # EX held: SH conflicts, KP does not; released, SH is grantable and the mask is empty again.
    assert (ex_then_sh, kp, sh_after, held) == (False, True, True, 0)


def test_conflict_mask_is_the_compatibility_matrix():
    for requested in range(5):
        for held in range(5):
            conflicts = (lt.CONFLICTS >> (5 * requested + held)) & 1
            assert conflicts == (1 - lt.COMPATIBLE[requested, held]), (requested, held)
    assert np.array_equal(lt.COMPATIBLE, lt.COMPATIBLE.T)
