"""The command line: list, run (tables and JSON), bad input without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "models", *args], capture_output=True, text=True)


def test_list_json_names_every_scenario():
    out = cli("list", "--json")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert {"convoy", "closed-latch", "parallel-insert"} <= set(data)
    hold = next(p for p in data["convoy"]["params"] if p["name"] == "hold_ms")
    assert hold["unit"] == "ms" and hold["default"] == 2.0


def test_run_json_matches_md1():
    out = cli("run", "convoy", "arrival_rate_per_s=400", "hold_ms=2", "requests=60000",
              "wakeup_us=0", "context_switch_us=0", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["scenario", "params", "seed", "elapsed_ms", "throughput_per_s", "truncated",
                          "latch_stats", "wait_stats", "spin_stats", "schedulers", "workers"]
    latch = data["latch_stats"][0]
    mean_wait = latch["wait_time_ms"] / latch["acquires"]
    assert abs(mean_wait - 4.0) < 0.3  # M/D/1: rho S / (2 (1 - rho)) = 0.8 * 2 / 0.4 ms


def test_run_prints_dmv_tables():
    out = cli("run", "closed-latch", "acquires=1000")
    assert out.returncode == 0
    for title in ("sys.dm_os_latch_stats", "sys.dm_os_wait_stats", "sys.dm_os_spinlock_stats"):
        assert title in out.stdout


def test_bad_input_is_one_line_and_nonzero():
    out = cli("run", "convoy", "hold_ms=-3")
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0
    assert "hold_ms=-3" in out.stderr and "Traceback" not in out.stderr
    out = cli("run", "nosuch")
    assert out.returncode != 0 and "Traceback" not in out.stderr


def test_run_prints_the_queries_of_a_memory_grant_workload():
    out = cli("run", "cci-insert", "queries=6", "behaviour=cu14", "rows_per_query=400000", "grant_timeout_s=1")
    assert out.returncode == 0, out.stderr
    assert "queries (one row per query)" in out.stdout and "error_8645" in out.stdout
    assert "RESOURCE_SEMAPHORE" in out.stdout and "sys.dm_os_latch_stats" not in out.stdout  # no latches: no rows
    data = json.loads(cli("run", "cci-insert", "queries=2", "--json").stdout)
    assert [q["outcome"] for q in data["queries"]] == ["granted", "granted"]
