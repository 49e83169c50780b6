"""The memory-grant semaphore: its book-keeping primitives, and what a run shows of them.

The primitives of models.engine.grants are driven on plain int64 arrays (the
global cells and the worker rows, sized with G_NCOLS and W_NCOLS), so these
tests do not depend on how the state tables are named.  End to end, a
worker's grant outcome is read from which latch its program then takes
(BRANCH on BR_FAILED / BR_FORCED), through the Result's acquire log.
"""

from __future__ import annotations

import numpy as np
import pytest

from models.engine import grants
from models.engine import state as st
from models.engine.program import BR_ALWAYS, BR_FAILED, BR_FORCED, EX, Program
from models.result import build
from models.workload import LatchSpec, MemorySpec, Workload, simulate

# ---------------------------------------------------------------- primitives


def _semaphore(workers: int, target: int, limit: int, log_rows: int = 0):
    gi = np.zeros(st.G_NCOLS, np.int64)
    gi[st.G_SEM_QUEUE_HEADS:st.G_SEM_QUEUE_TAILS + st.GRANT_QUEUES] = -1  # every queue empty
    gi[st.G_SEM_TARGET], gi[st.G_SEM_LIMIT] = target, limit
    wi = np.zeros((workers, st.W_NCOLS), np.int64)
    wi[:, st.W_GRANT_QUEUE_NEXT] = -1
    glog = np.zeros((log_rows, st.GL_NCOLS), np.float64)
    return gi, wi, glog


def _queue(gi, wi, queue: int = 0) -> list[int]:
    out, w = [], gi[st.G_SEM_QUEUE_HEADS + queue]
    while w >= 0 and len(out) <= wi.shape[0]:
        out.append(int(w))
        w = wi[w, st.W_GRANT_QUEUE_NEXT]
    return out


def _check_queue(gi, wi, expected: list[int]) -> None:
    assert _queue(gi, wi) == expected
    assert gi[st.G_SEM_WAITING] == len(expected)
    assert gi[st.G_SEM_QUEUE_HEADS] == (expected[0] if expected else -1)
    assert gi[st.G_SEM_QUEUE_TAILS] == (expected[-1] if expected else -1)
    if expected:
        assert wi[expected[-1], st.W_GRANT_QUEUE_NEXT] == -1


def _ask(gi, wi, w, want, need=None, queue=0):
    """What the GRANT instruction does with the semaphore: grant at once if it fits, else queue."""
    wi[w, st.W_GRANT_WANTED_KB] = want
    wi[w, st.W_GRANT_NEEDED_KB] = want if need is None else need
    if grants.fits_now(gi, want):
        grants.give(gi, wi, w, want, st.GRANT_GRANTED)
        return True
    grants.enqueue(gi, wi, w, queue)
    return False


def _serve(gi, wi) -> list[int]:
    """What serve_grants does: grant heads while they fit; the workers granted, in order."""
    served = []
    while (head := grants.head_fits(gi, wi)) >= 0:
        grants.remove(gi, wi, head)
        grants.give(gi, wi, head, wi[head, st.W_GRANT_WANTED_KB], st.GRANT_GRANTED)
        served.append(int(head))
    return served


def test_fits_now_needs_room_under_the_target_and_an_empty_queue():
    gi, wi, _ = _semaphore(3, target=100, limit=200)
    assert grants.fits_now(gi, 100)          # exactly the target fits
    assert not grants.fits_now(gi, 101)      # above the target does not, though under the limit
    gi[st.G_SEM_GRANTED] = 60
    assert grants.fits_now(gi, 40) and not grants.fits_now(gi, 41)
    grants.enqueue(gi, wi, 0, 0)
    assert not grants.fits_now(gi, 1)        # someone queued: even a tiny request waits


def test_give_and_take_back_keep_the_books():
    gi, wi, _ = _semaphore(2, target=100, limit=200)
    grants.give(gi, wi, 0, 70, st.GRANT_GRANTED)
    grants.give(gi, wi, 1, 30, st.GRANT_FORCED)
    assert gi[st.G_SEM_GRANTED] == 100
    assert (wi[0, st.W_GRANTED_KB], wi[0, st.W_GRANT_OUTCOME]) == (70, st.GRANT_GRANTED)
    assert (wi[1, st.W_GRANTED_KB], wi[1, st.W_GRANT_OUTCOME]) == (30, st.GRANT_FORCED)
    grants.take_back(gi, wi, 0)
    assert gi[st.G_SEM_GRANTED] == 30 and wi[0, st.W_GRANTED_KB] == 0
    grants.take_back(gi, wi, 0)  # a second FREE gives back nothing more
    assert gi[st.G_SEM_GRANTED] == 30
    grants.take_back(gi, wi, 1)
    assert gi[st.G_SEM_GRANTED] == 0


def test_enqueue_is_first_in_first_out_and_marks_waiting():
    gi, wi, _ = _semaphore(4, target=100, limit=100)
    for w in (2, 0, 3):
        grants.enqueue(gi, wi, w, 0)
    _check_queue(gi, wi, [2, 0, 3])
    assert [wi[w, st.W_GRANT_OUTCOME] for w in (2, 0, 3)] == [st.GRANT_WAITING] * 3
    assert wi[1, st.W_GRANT_OUTCOME] == st.GRANT_NONE


def test_head_fits_never_skips_a_large_head_for_a_small_request_behind_it():
    gi, wi, _ = _semaphore(3, target=100, limit=1_000)
    assert grants.head_fits(gi, wi) == -1   # nobody queued
    assert _ask(gi, wi, 0, 60)              # granted at once
    assert not _ask(gi, wi, 1, 50)          # 110 > 100: waits
    assert not _ask(gi, wi, 2, 10)          # 70 would fit, but 1 is queued: waits behind it
    assert grants.head_fits(gi, wi) == -1   # the head does not fit, and the small one is not taken
    assert _serve(gi, wi) == []
    grants.take_back(gi, wi, 0)
    assert grants.head_fits(gi, wi) == 1
    assert _serve(gi, wi) == [1, 2]         # in order, both now fit (60 in all)
    assert gi[st.G_SEM_GRANTED] == 60
    _check_queue(gi, wi, [])


def test_head_fits_uses_the_target_not_the_limit():
    gi, wi, _ = _semaphore(2, target=100, limit=500)
    assert _ask(gi, wi, 0, 90)
    assert not _ask(gi, wi, 1, 20)          # 110 is under the limit, over the target
    assert grants.head_fits(gi, wi) == -1
    gi[st.G_SEM_GRANTED] = 80               # room for exactly 20
    assert grants.head_fits(gi, wi) == 1


@pytest.mark.parametrize("victim, rest", [(0, [1, 2, 3]), (2, [0, 1, 3]), (3, [0, 1, 2])])
def test_remove_from_head_middle_or_tail(victim, rest):
    gi, wi, _ = _semaphore(5, target=0, limit=0)
    for w in range(4):
        grants.enqueue(gi, wi, w, 0)
    grants.remove(gi, wi, victim)
    _check_queue(gi, wi, rest)
    assert wi[victim, st.W_GRANT_QUEUE_NEXT] == -1
    grants.enqueue(gi, wi, 4, 0)               # the tail is still right: a newcomer lands after the last one
    _check_queue(gi, wi, rest + [4])


def test_remove_of_a_worker_not_queued_changes_nothing():
    gi, wi, _ = _semaphore(4, target=0, limit=0)
    grants.enqueue(gi, wi, 0, 0)
    grants.enqueue(gi, wi, 1, 0)
    before_gi, before_wi = gi.copy(), wi.copy()
    grants.remove(gi, wi, 3)
    assert np.array_equal(gi, before_gi) and np.array_equal(wi, before_wi)


def test_remove_the_only_waiter_empties_the_queue():
    gi, wi, _ = _semaphore(2, target=0, limit=0)
    grants.enqueue(gi, wi, 1, 0)
    grants.remove(gi, wi, 1)
    _check_queue(gi, wi, [])
    grants.enqueue(gi, wi, 0, 0)
    _check_queue(gi, wi, [0])


def test_the_cheapest_queue_with_waiters_is_served_first():
    """B, C and D arrive in that order into queues 2, 1 and 0: when A frees, D (cheapest) goes first, then C, then B.
    First-come, first-served across queues would give B, C, D."""
    gi, wi, _ = _semaphore(4, target=100, limit=100)
    assert _ask(gi, wi, 0, 100)
    for w, queue in ((1, 2), (2, 1), (3, 0)):
        assert not _ask(gi, wi, w, 30, queue=queue)
    assert gi[st.G_SEM_WAITING] == 3
    assert grants.next_candidate(gi) == 3
    grants.take_back(gi, wi, 0)
    assert _serve(gi, wi) == [3, 2, 1]
    assert gi[st.G_SEM_WAITING] == 0 and grants.next_candidate(gi) == -1


def test_first_in_first_out_within_a_queue():
    """Four waiters in queue 1 and one in the costlier queue 3 that came first: queue 1 is served in its
    arrival order, then queue 3."""
    gi, wi, _ = _semaphore(6, target=100, limit=100)
    assert _ask(gi, wi, 0, 100)
    assert not _ask(gi, wi, 5, 10, queue=3)
    for w in (2, 4, 1, 3):
        assert not _ask(gi, wi, w, 10, queue=1)
    assert _queue(gi, wi, 1) == [2, 4, 1, 3] and _queue(gi, wi, 3) == [5]
    grants.take_back(gi, wi, 0)
    assert _serve(gi, wi) == [2, 4, 1, 3, 5]


def test_a_cheaper_candidate_that_does_not_fit_holds_back_the_costlier_queues():
    """A holds 60 of 100; B (queue 0) asks 50 and waits; C (queue 1) asks 10, which would fit, but B is the next
    candidate, so C waits too, and a newcomer waits although memory is free."""
    gi, wi, _ = _semaphore(4, target=100, limit=100)
    assert _ask(gi, wi, 0, 60)
    assert not _ask(gi, wi, 1, 50, queue=0)
    assert not _ask(gi, wi, 2, 10, queue=1)
    assert grants.next_candidate(gi) == 1 and grants.head_fits(gi, wi) == -1
    assert not _ask(gi, wi, 3, 1, queue=0)   # someone waits: even 1 KB queues (behind B, in B's queue)
    assert _queue(gi, wi, 0) == [1, 3]
    grants.remove(gi, wi, 1)                  # B times out: the next candidate is the cheapest queue's new head
    assert grants.next_candidate(gi) == 3
    assert _serve(gi, wi) == [3, 2]


def test_remove_from_one_queue_leaves_the_others_alone():
    gi, wi, _ = _semaphore(5, target=0, limit=0)
    for w, queue in ((0, 1), (1, 4), (2, 1), (3, 4)):
        grants.enqueue(gi, wi, w, queue)
    grants.remove(gi, wi, 3)                  # the tail of queue 4
    assert _queue(gi, wi, 4) == [1] and gi[st.G_SEM_QUEUE_TAILS + 4] == 1
    assert _queue(gi, wi, 1) == [0, 2] and gi[st.G_SEM_WAITING] == 3
    grants.enqueue(gi, wi, 4, 4)
    assert _queue(gi, wi, 4) == [1, 4]


def test_a_grant_queue_outside_the_engine_s_room_is_refused():
    with pytest.raises(ValueError, match=f"queue={st.GRANT_QUEUES} is not a grant queue"):
        Program().grant(100, 100, 1_000.0, queue=st.GRANT_QUEUES)
    with pytest.raises(ValueError, match="queue=-1"):
        Program().grant(100, 100, 1_000.0, queue=-1)


def test_log_records_the_state_and_stops_when_full():
    gi, wi, glog = _semaphore(3, target=100, limit=100, log_rows=2)
    grants.give(gi, wi, 0, 40, st.GRANT_GRANTED)
    grants.log(gi, glog, 5.0)
    grants.enqueue(gi, wi, 1, 0)
    grants.enqueue(gi, wi, 2, 0)
    grants.log(gi, glog, 7.5)
    full = glog.copy()
    grants.log(gi, glog, 9.0)               # no room: nothing written, nothing past the end
    assert gi[st.G_SEM_LOG_USED] == 2
    assert np.array_equal(glog, full)
    assert glog[:, st.GL_TIME].tolist() == [5.0, 7.5]
    assert glog[:, st.GL_GRANTED].tolist() == [40.0, 40.0]
    assert glog[:, st.GL_WAITERS].tolist() == [0.0, 2.0]


def test_log_with_no_rows_is_a_no_op():
    gi, wi, glog = _semaphore(1, target=1, limit=1, log_rows=0)
    grants.log(gi, glog, 1.0)
    assert gi[st.G_SEM_LOG_USED] == 0


# ---------------------------------------------------------------- end to end

GRANTED_LATCH, FORCED_LATCH, FAILED_LATCH = 0, 1, 2


def _queries(asks, target_kb, limit_kb, timeout_us):
    """One query per (arrival_us, requested_kb, required_kb, hold_us[, queue]), each on a scheduler of its own: GRANT
    (in queue 0 unless given), then take latch 0 (granted), 1 (forced) or 2 (failed) for an instant, hold the grant
    as CPU, FREE."""
    prog = Program()
    starts = []
    for _, want, need, hold, *queue in asks:
        starts.append(prog.grant(want, need, timeout_us, queue[0] if queue else 0))
        failed = prog.branch(BR_FAILED)
        forced = prog.branch(BR_FORCED)
        prog.acquire(GRANTED_LATCH, EX)
        prog.release(GRANTED_LATCH, EX)
        went_on = prog.branch(BR_ALWAYS)
        prog.patch(forced, prog.acquire(FORCED_LATCH, EX))
        prog.release(FORCED_LATCH, EX)
        prog.patch(went_on, prog.cpu(hold))
        prog.free()
        prog.end()
        prog.patch(failed, prog.acquire(FAILED_LATCH, EX))
        prog.release(FAILED_LATCH, EX)
        prog.end()
    n = len(asks)
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=list(range(n)),
                  worker_arrival_us=[a[0] for a in asks], worker_daemon=[False] * n, worker_kind=["query"] * n,
                  latches=[LatchSpec(name) for name in ("granted", "forced", "failed")], schedulers=n,
                  memory=MemorySpec(target_kb, limit_kb), context_switch_us=0.0, wakeup_us=0.0)
    res = build(simulate(wl, seed=1, record_acquires=4 * n), "grants", {}, 1)
    assert not res.truncated, res.truncated_reason
    log = res.acquire_log.sort_values("worker")
    assert list(log["worker"]) == list(range(n))  # each query took exactly one outcome latch
    outcome = [("granted", "forced", "failed")[k] for k in log["latch"]]
    return res, outcome, log["request_ms"].to_numpy()


def _semaphore_waits(res):
    return res.wait_stats.set_index("wait_type").loc["RESOURCE_SEMAPHORE"]


def test_a_small_request_behind_a_large_one_waits_for_it():
    """A holds 60 of 100 KB until 1 ms; B asks 50 at 0.1 ms and waits; C asks 10 at 0.2 ms: it would fit, but
    it queues behind B, and both are granted when A frees."""
    res, outcome, granted_at = _queries([(0.0, 60, 60, 1_000.0), (100.0, 50, 50, 500.0), (200.0, 10, 10, 500.0)],
                                        target_kb=100, limit_kb=1_000, timeout_us=1e7)
    assert outcome == ["granted"] * 3
    assert list(granted_at) == pytest.approx([0.0, 1.0, 1.0])
    sem = _semaphore_waits(res)
    assert sem["waiting_tasks_count"] == 2
    assert sem["wait_time_ms"] == pytest.approx(0.9 + 0.8)
    assert sem["max_wait_time_ms"] == pytest.approx(0.9)


def test_at_the_time_out_a_query_is_forced_its_minimum_if_it_fits_under_the_limit_else_it_fails():
    """Target 100, limit 150, time-out 1 ms.  A holds 100 until 10 ms.  B (asks 80, needs 50, at 0.1 ms) is
    forced 50 at 1.1 ms: 150 is exactly the limit.  C (asks 80, needs 1, at 0.2 ms) fails at 1.2 ms: 151 > 150.
    E (asks 50, at 9.5 ms) is granted when A frees at 10 ms, since B holds its 50 (not the 80 it asked for)."""
    res, outcome, granted_at = _queries([(0.0, 100, 100, 10_000.0), (100.0, 80, 50, 20_000.0),
                                         (200.0, 80, 1, 100.0), (9_500.0, 50, 50, 100.0)],
                                        target_kb=100, limit_kb=150, timeout_us=1_000.0)
    assert outcome == ["granted", "forced", "failed", "granted"]
    assert list(granted_at) == pytest.approx([0.0, 1.1, 1.2, 10.0])
    sem = _semaphore_waits(res)
    assert sem["waiting_tasks_count"] == 3               # B, C and E waited; A did not
    assert sem["wait_time_ms"] == pytest.approx(1.0 + 1.0 + 0.5)
    assert sem["max_wait_time_ms"] == pytest.approx(1.0)
    assert res.elapsed_ms == pytest.approx(1.1 + 20.0)  # B's forced grant let it run


def test_a_failed_query_does_not_hold_memory_and_the_queue_moves_on():
    """Target 100, limit 100: B (needs 60) fails at its time-out while A holds 100, and C, queued behind B, is
    served at A's free (1.5 ms) without waiting for anything of B's."""
    res, outcome, granted_at = _queries([(0.0, 100, 100, 1_500.0), (0.0, 60, 60, 100.0), (500.0, 100, 100, 100.0)],
                                        target_kb=100, limit_kb=100, timeout_us=1_200.0)
    assert outcome == ["granted", "failed", "granted"]
    assert list(granted_at) == pytest.approx([0.0, 1.2, 1.5])


def test_end_to_end_a_cheaper_query_that_came_later_is_granted_first():
    """A holds all 100 KB until 1 ms.  B (queue 1) asks 60 at 0.1 ms, C (queue 0) asks 60 at 0.2 ms: at 1 ms C is
    granted although B came first, and B waits until C frees at 1.5 ms."""
    res, outcome, granted_at = _queries([(0.0, 100, 100, 1_000.0, 0), (100.0, 60, 60, 500.0, 1),
                                         (200.0, 60, 60, 500.0, 0)], target_kb=100, limit_kb=100, timeout_us=1e7)
    assert outcome == ["granted"] * 3
    assert list(granted_at) == pytest.approx([0.0, 1.5, 1.0])
    sem = _semaphore_waits(res)
    assert sem["wait_time_ms"] == pytest.approx(1.4 + 0.8)
