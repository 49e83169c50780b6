"""The Program builder: each method emits the instruction its module docstring documents, addresses and jumps
resolve, bad operands are refused, and arrays() is what the engine's instruction table expects."""

from __future__ import annotations

import numpy as np
import pytest

from models.engine import program as pm
from models.engine.program import (
    ACQUIRE, BRANCH, BR_ALWAYS, BR_FAILED, BR_FULL, CPU, DT, END, EX, EXPONENTIAL, FIND, FIND_LEAF, FIXED,
    FORK, FREE, GRANT, INSERT, JOIN, KP, LOOP, OSCALL, OS_PREEMPTIVE, OS_SPIN, RELEASE, ROW, R_GATE, R_LEAF,
    R_ROOT, SH, SLEEP, SPLIT, UNIT, UP, YIELD, Program, register,
)
from models.engine.state import LOOP_SLOTS, REGISTERS
from models.result import build
from models.workload import LatchSpec, Workload, simulate


def _row(prog: Program, at: int) -> tuple:
    """The instruction at ``at`` as (op, a, b, c, x)."""
    return prog.op[at], prog.a[at], prog.b[at], prog.c[at], prog.x[at]


# ---------------------------------------------------------------- what each method emits

EMITTED = [
    # (call, (op, a, b, c, x)) -- the operand layout of the module docstring's table
    (lambda p: p.cpu(12.5), (CPU, FIXED, 0, 0, 12.5)),
    (lambda p: p.cpu(3.0, EXPONENTIAL, contended_latch=4), (CPU, EXPONENTIAL, 4, 1, 3.0)),
    (lambda p: p.acquire(7), (ACQUIRE, 7, EX, 0, 0.0)),
    (lambda p: p.acquire(2, SH), (ACQUIRE, 2, SH, 0, 0.0)),
    (lambda p: p.acquire(register(R_LEAF), UP), (ACQUIRE, -1 - R_LEAF, UP, 0, 0.0)),
    (lambda p: p.release(7), (RELEASE, 7, EX, 0, 0.0)),
    (lambda p: p.release(3, KP), (RELEASE, 3, KP, 0, 0.0)),
    (lambda p: p.yield_point(), (YIELD, 0, 0, 0, 0.0)),
    (lambda p: p.yield_point(250.0), (YIELD, 0, 0, 0, 250.0)),
    (lambda p: p.loop(0, 9, slot=2), (LOOP, 0, 2, 9, 0.0)),
    (lambda p: p.unit(), (UNIT, 0, 0, 0, 0.0)),
    (lambda p: p.end(), (END, 0, 0, 0, 0.0)),
    (lambda p: p.sleep(40.0), (SLEEP, FIXED, 0, 0, 40.0)),
    (lambda p: p.sleep(40.0, EXPONENTIAL), (SLEEP, EXPONENTIAL, 0, 0, 40.0)),
    (lambda p: p.row(), (ROW, 0, 0, 0, 0.0)),
    (lambda p: p.row(call_rows=25), (ROW, 0, 1, 25, 0.0)),
    (lambda p: p.find(FIND_LEAF), (FIND, 0, FIND_LEAF, 0, 0.0)),
    (lambda p: p.branch(BR_FULL, 11), (BRANCH, 11, BR_FULL, 0, 0.0)),
    (lambda p: p.branch(BR_FAILED), (BRANCH, -1, BR_FAILED, 0, 0.0)),
    (lambda p: p.insert(), (INSERT, 0, 0, 0, 0.0)),
    (lambda p: p.split(), (SPLIT, 0, 0, 0, 0.0)),
    (lambda p: p.grant(800, 200, 5_000.0), (GRANT, 800, 200, 0, 5_000.0)),
    (lambda p: p.free(), (FREE, 0, 0, 0, 0.0)),
    (lambda p: p.fork(3, 4), (FORK, 3, 0, 4, 0.0)),
    (lambda p: p.join(), (JOIN, 0, 0, 0, 0.0)),
    (lambda p: p.oscall(30.0), (OSCALL, OS_SPIN, FIXED, 0, 30.0)),
    (lambda p: p.oscall(30.0, OS_PREEMPTIVE, EXPONENTIAL), (OSCALL, OS_PREEMPTIVE, EXPONENTIAL, 0, 30.0)),
]


@pytest.mark.parametrize("call, expected", EMITTED, ids=[f"{pm.OPCODE_NAMES[e[0]]}-{k}"
                                                         for k, (_, e) in enumerate(EMITTED)])
def test_each_method_emits_its_documented_instruction(call, expected):
    prog = Program()
    prog.unit()  # something before it, so the returned address is not trivially 0
    at = call(prog)
    assert at == 1 == len(prog.op) - 1
    assert _row(prog, at) == expected
    assert isinstance(prog.x[at], float)
    assert all(isinstance(v, int) for v in (prog.op[at], prog.a[at], prog.b[at], prog.c[at]))


def test_every_public_emitting_method_is_covered_above():
    """A new instruction method gets a row in EMITTED (this fails until it does)."""
    emitted_ops = {e[0] for _, e in EMITTED}
    assert emitted_ops == set(range(len(pm.OPCODE_NAMES)))  # every opcode is emitted
    public = {name for name in dir(Program) if not name.startswith("_") and callable(getattr(Program, name))}
    assert public == {"start", "cpu", "acquire", "release", "yield_point", "loop", "unit", "end", "sleep", "row",
                      "find", "branch", "patch", "insert", "split", "grant", "free", "fork", "join", "oscall",
                      "arrays"}


def test_opcodes_and_names_agree():
    assert len(pm.OPCODE_NAMES) == len(set(pm.OPCODE_NAMES)) == OSCALL + 1
    for k, name in enumerate(pm.OPCODE_NAMES):
        assert getattr(pm, name) == k
    assert pm.MODE_NAMES == ("KP", "SH", "UP", "EX", "DT")
    assert (KP, SH, UP, EX, DT) == (0, 1, 2, 3, 4)


def test_int_and_float_operands_are_normalised():
    prog = Program()
    at = prog.loop(0, 3.0)
    assert prog.c[at] == 3 and isinstance(prog.c[at], int)
    at = prog.cpu(5)
    assert prog.x[at] == 5.0 and isinstance(prog.x[at], float)
    at = prog.grant(np.int64(64), np.int64(32), 100)
    assert (prog.a[at], prog.b[at]) == (64, 32) and type(prog.a[at]) is int


# ---------------------------------------------------------------- addresses, labels and jumps


def test_start_is_the_next_address_and_programs_share_one_table():
    prog = Program()
    assert prog.start() == 0
    prog.cpu(1.0)
    prog.end()
    second = prog.start()
    assert second == 2
    assert prog.acquire(0) == second
    assert prog.start() == 3


def test_patch_points_a_branch_at_a_later_address():
    prog = Program()
    at = prog.branch(BR_ALWAYS)
    prog.unit()
    target = prog.end()
    prog.patch(at, target)
    assert _row(prog, at) == (BRANCH, target, BR_ALWAYS, 0, 0.0)


def test_patch_refuses_an_address_that_is_not_a_branch():
    prog = Program()
    at = prog.loop(0, 2)
    with pytest.raises(ValueError, match=r"address 0 holds LOOP, not BRANCH"):
        prog.patch(at, 5)
    assert prog.a[at] == 0  # unchanged


def test_register_names_a_register_and_refuses_anything_else():
    assert [register(r) for r in range(REGISTERS)] == [-1, -2, -3, -4, -5]
    assert register(R_ROOT) == -1 and register(R_GATE) == -1 - R_GATE
    for bad in (-1, REGISTERS, 99):
        with pytest.raises(ValueError, match=rf"register={bad} is not a register: use 0 to {REGISTERS - 1}"):
            register(bad)


def _run(prog: Program, starts: list[int], latches: int = 1):
    n = len(starts)
    wl = Workload(program=prog, worker_start=starts, worker_scheduler=list(range(n)),
                  worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["t"] * n,
                  latches=[LatchSpec(f"L{k}") for k in range(latches)], schedulers=n,
                  context_switch_us=0.0, wakeup_us=0.0)
    res = build(simulate(wl, seed=1, record_acquires=1_000), "program", {}, 1)
    assert not res.truncated, res.truncated_reason
    return res


def test_a_loop_runs_its_body_times_in_all_and_nested_loops_multiply():
    """Latch 0 once per inner pass (3 x 4), latch 1 once per outer pass (3), latch 2 once after both."""
    prog = Program()
    start = prog.start()
    outer = prog.acquire(1)
    prog.release(1)
    inner = prog.acquire(0)
    prog.cpu(1.0)
    prog.release(0)
    prog.loop(inner, 4, slot=1)
    prog.loop(outer, 3, slot=0)
    prog.acquire(2)
    prog.release(2)
    prog.end()
    res = _run(prog, [start], latches=3)
    assert list(res.latch_stats["acquires"]) == [12, 3, 1]
    assert list(res.acquire_log["latch"]) == ([1] + [0] * 4) * 3 + [2]
    assert res.elapsed_ms == pytest.approx(0.012)


def test_three_nested_loops_use_every_slot():
    prog = Program()
    start = prog.start()
    body = prog.acquire(0)
    prog.release(0)
    prog.loop(body, 2, slot=0)
    prog.loop(body, 3, slot=1)
    prog.loop(body, 5, slot=2)
    prog.end()
    res = _run(prog, [start])
    assert res.latch_stats["acquires"].iloc[0] == 2 * 3 * 5


def test_a_patched_branch_skips_forward_and_an_unpatched_program_runs_straight_through():
    prog = Program()
    jumps = prog.start()
    skip = prog.branch(BR_ALWAYS)
    prog.acquire(1)          # skipped
    prog.release(1)
    prog.patch(skip, prog.acquire(0))
    prog.release(0)
    prog.end()
    straight = prog.start()
    prog.acquire(1)
    prog.release(1)
    prog.end()
    res = _run(prog, [jumps, straight], latches=2)
    log = res.acquire_log
    assert list(log[log["worker"] == 0]["latch"]) == [0]
    assert list(log[log["worker"] == 1]["latch"]) == [1]


# ---------------------------------------------------------------- bad operands


@pytest.mark.parametrize("slot", [-1, LOOP_SLOTS, 7])
def test_a_loop_slot_outside_the_slots_is_refused(slot):
    prog = Program()
    with pytest.raises(ValueError, match=rf"slot={slot} is not a loop slot: use 0 to {LOOP_SLOTS - 1}"):
        prog.loop(0, 2, slot=slot)
    assert prog.op == []  # nothing emitted


@pytest.mark.parametrize("want, need", [(100, 0), (100, -5), (100, 101)])
def test_a_grant_needs_a_minimum_above_zero_and_at_most_the_request(want, need):
    prog = Program()
    with pytest.raises(ValueError, match=rf"required_kb={need} must be above 0 and at most requested_kb={want}"):
        prog.grant(want, need, 1_000.0)
    assert prog.op == []


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan")])
def test_a_grant_needs_a_positive_time_out(timeout):
    with pytest.raises(ValueError, match=r"timeout_us=.* must be above 0"):
        Program().grant(10, 10, timeout)


def test_every_grant_in_a_table_has_one_time_out():
    prog = Program()
    prog.grant(10, 10, 2_000.0)
    prog.grant(20, 5, 2_000)  # the same time-out, given as an int: accepted
    with pytest.raises(ValueError, match=r"timeout_us=3000.0 differs from this table's other grants \(2000.0 us\)"):
        prog.grant(10, 10, 3_000.0)
    assert prog.op == [GRANT, GRANT]


@pytest.mark.parametrize("method", ["acquire", "release"])
@pytest.mark.parametrize("mode", [-1, 5, 9])
def test_a_mode_outside_kp_to_dt_is_refused(method, mode):
    with pytest.raises(ValueError, match=r"mode"):
        getattr(Program(), method)(0, mode)


@pytest.mark.parametrize("method", ["acquire", "release"])
def test_a_latch_operand_below_the_registers_is_refused(method):
    with pytest.raises(ValueError, match=r"register"):
        getattr(Program(), method)(-1 - REGISTERS)


def test_nesting_loops_beyond_the_slots_is_refused():
    prog = Program()
    body = prog.unit()
    for slot in range(LOOP_SLOTS):
        prog.loop(body, 2, slot=slot)
    with pytest.raises(ValueError, match=r"slot"):
        prog.loop(body, 2, slot=0)  # a fourth level: slot 0 is already counting an enclosed loop


@pytest.mark.parametrize("times", [0, -3])
def test_a_loop_of_fewer_than_one_pass_is_refused(times):
    with pytest.raises(ValueError, match=r"times"):
        Program().loop(0, times)


# ---------------------------------------------------------------- arrays()


def test_arrays_have_the_engine_shapes_and_dtypes():
    prog = Program()
    prog.cpu(2.5, EXPONENTIAL, 1)
    prog.acquire(register(R_ROOT), SH)
    prog.grant(64, 32, 10.0)
    prog.fork(0, 3)
    prog.end()
    ints, xs = prog.arrays()
    assert ints.shape == (5, 4) and ints.dtype == np.int64 and ints.flags.c_contiguous
    assert xs.shape == (5,) and xs.dtype == np.float64
    assert ints.tolist() == [[CPU, EXPONENTIAL, 1, 1], [ACQUIRE, -1, SH, 0], [GRANT, 64, 32, 0], [FORK, 0, 0, 3],
                             [END, 0, 0, 0]]
    assert xs.tolist() == [2.5, 0.0, 10.0, 0.0, 0.0]


def test_arrays_of_an_empty_program_keep_four_columns():
    ints, xs = Program().arrays()
    assert ints.shape == (0, 4) and ints.dtype == np.int64
    assert xs.shape == (0,) and xs.dtype == np.float64


def test_arrays_are_copies_that_do_not_change_with_the_builder():
    prog = Program()
    at = prog.branch(BR_ALWAYS)
    prog.end()
    ints, xs = prog.arrays()
    prog.patch(at, 1)
    prog.cpu(9.0)
    assert ints[0, 1] == -1 and ints.shape == (2, 4) and xs.shape == (2,)
    ints[0, 0] = CPU
    assert prog.op[0] == BRANCH

