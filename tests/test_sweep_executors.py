"""Sweeps: replicated means and intervals, and the same stored bytes from every executor."""

from __future__ import annotations

import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import pytest
from scipy import stats

from models.params import ParameterError
from models.statistics import mean_ci  # the t quantiles' own tests are in test_statistics.py

from models.book.sweep import (CI_SUFFIX, DASK_CONNECT_S, METRICS, Sweep, run_all, run_one, run_sweep,
                          write_table)

SMALL = Sweep(
    name="small", scenario="closed-latch",
    grid={"workers": [2, 6], "policy": ["fair", "unfair"]},
    fixed={"schedulers": 2, "acquires": 600, "seed": 11}, replications=3,
)


def test_mean_ci_is_the_student_interval():
    values = [3.0, 5.5, 4.25, 6.0, 2.75]
    mean, half = mean_ci(values)
    assert mean == pytest.approx(statistics.fmean(values))
    assert half == pytest.approx(stats.t.ppf(0.975, 4) * statistics.stdev(values) / math.sqrt(5), rel=1e-6)
    assert mean_ci([7.0]) == (7.0, 0.0)


def test_rows_are_means_over_the_seeds():
    table = run_sweep(SMALL, jobs=1, progress=False)
    assert list(table.columns) == SMALL.columns()
    point = SMALL.points()[1]
    runs = [run_one("closed-latch", dict(point, seed=s)) for s in (11, 12, 13)]
    for m in ("throughput_per_s", "mean_wait_ms"):
        mean, half = mean_ci([r[m] for r in runs])
        assert table.loc[1, m] == mean and table.loc[1, m + CI_SUFFIX] == half
    assert (table[[m + CI_SUFFIX for m in METRICS]] >= 0).all().all()
    assert (table["throughput_per_s" + CI_SUFFIX] > 0).all()  # the seeds really differ


def test_stored_table_is_byte_identical_on_every_executor(tmp_path):
    from distributed import LocalCluster

    serial = write_table(run_sweep(SMALL, jobs=1, progress=False), tmp_path / "serial.csv")
    pool = write_table(run_sweep(SMALL, jobs=2, progress=False), tmp_path / "pool.csv")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dask = write_table(run_sweep(SMALL, dask=cluster.scheduler_address, progress=False), tmp_path / "dask.csv")
    assert serial.read_bytes() == pool.read_bytes() == dask.read_bytes()


def test_bad_jobs_or_more_than_the_cpus_are_refused_before_any_process_starts(monkeypatch):
    import models.book.sweep as sweep_module
    from models.params import ParameterError

    def no_pool(*args, **kwargs):
        raise AssertionError("a refused sweep started a process pool")

    monkeypatch.setattr(sweep_module, "ProcessPoolExecutor", no_pool)
    cpus = os.cpu_count()
    use = rf"use a whole number of processes from 1 to {cpus} \(this machine's CPUs\)$"
    for jobs in (cpus + 1, 1000, 0, -2, 2.0, True):
        with pytest.raises(ParameterError, match=rf"^jobs={jobs!r} is out of range: {use}"):
            run_all(run_one, [("closed-latch", {})] * 3, jobs=jobs)


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m models ARGS``, its output as text."""
    return subprocess.run([sys.executable, "-m", "models", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_refuses_more_jobs_than_cpus_in_one_line():
    out = cli("sweep", "cci", "--jobs", "1000")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"error: jobs=1000 is out of range: use a whole number of processes from 1 "
                                       f"to {os.cpu_count()} (this machine's CPUs)"]


# The outer limit on a child process the tests wait for: it only ends one that hangs (a busy machine takes
# tens of seconds to start an interpreter and import the models).
HUNG_S = 600


def test_cli_refuses_a_dask_address_that_does_not_answer_in_one_line():
    """Nothing listening, a peer that accepts the connection and says nothing, or not an address: exit 2 with
    one line naming the address. How soon is the connect deadline's to keep (the next test), not a clock here."""
    unreachable = f"is unreachable: no Dask scheduler answered within {DASK_CONNECT_S} s"
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nothing ever answers
        expected = {"tcp://127.0.0.1:1": unreachable, f"tcp://127.0.0.1:{silent.getsockname()[1]}": unreachable,
                    "not-an-address": "is not an address: use tcp://HOST:PORT"}
        procs = {address: subprocess.Popen([sys.executable, "-m", "models", "sweep", "cci", "--dask", address],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for address in expected}
        try:
            for address, proc in procs.items():
                out, err = proc.communicate(timeout=HUNG_S)
                assert proc.returncode == 2 and out == ""
                assert err.splitlines() == [f"error: dask={address!r} {expected[address]}"], err
        finally:
            for proc in procs.values():
                proc.kill()
                proc.wait()


def test_a_silent_dask_peer_is_refused_at_the_connect_deadline(monkeypatch):
    """A peer that accepts the connection and never answers is refused once DASK_CONNECT_S has passed: with
    the deadline set to a fifth of a second the refusal names it and comes long before the outer limit, where
    a connection with no deadline would wait for ever."""
    from concurrent.futures import ThreadPoolExecutor

    from models.book import sweep

    monkeypatch.setattr(sweep, "DASK_CONNECT_S", 0.2)
    with socket.create_server(("127.0.0.1", 0)) as silent, ThreadPoolExecutor(1) as pool:
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        refused = pool.submit(run_all, abs, [(1,)], dask=address, progress=False)
        with pytest.raises(ParameterError, match=r"is unreachable: no Dask scheduler answered within 0.2 s"):
            refused.result(timeout=HUNG_S)


RUN_S = 60.0  # each run of the interrupted sweep: 4 minutes in all on two workers, far past any stop
INTERRUPTED_SWEEP = f"""
import signal, sys, time
from models.book.sweep import run_all

# Ctrl-C as in a terminal, also when the suite runs in a background job (which starts it ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)

print("go", flush=True)
try:
    run_all(time.sleep, [({RUN_S},)] * 8, jobs=2, progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _session(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``."""
    import psutil

    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getsid(proc.pid) == sid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return found


def _workers(parent: int, count: int, deadline: float) -> list:
    """The ``count`` pool worker processes of ``parent``, as soon as each has started Python (polled every 5 ms
    so the first Ctrl-C lands mid-import; ``deadline`` only ends a pool that never starts)."""
    import psutil

    while time.monotonic() < deadline:
        found = []
        for child in psutil.Process(parent).children():
            try:
                if "spawn_main" in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.NoSuchProcess:
                pass
        if len(found) == count:
            return found
        time.sleep(0.005)
    pytest.fail(f"the pool did not start {count} workers in time")


def _interrupt(workers: list) -> None:
    """Send SIGINT to each worker, failing if one is gone."""
    import psutil

    for worker in workers:
        try:
            worker.send_signal(signal.SIGINT)
        except psutil.NoSuchProcess:
            pytest.fail(f"pool worker {worker.pid} died of Ctrl-C")


POSIX_AND_TWO_CPUS = pytest.mark.skipif(sys.platform == "win32" or (os.cpu_count() or 1) < 2,
                                        reason="POSIX signals, two CPUs")


@POSIX_AND_TWO_CPUS
def test_pool_workers_ignore_ctrl_c_from_their_first_instant():
    """SIGINT sent to the workers alone, the moment each starts (mid-import) and again while they run:
    none dies or prints a traceback, and the sweep goes on; only the parent acts on Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED_SWEEP], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "go"
        workers = _workers(proc.pid, 2, time.monotonic() + HUNG_S)
        _interrupt(workers)
        # Spacing, not a limit: later Ctrl-Cs land while the workers import or run (on a slow machine they
        # may land mid-import again, which the test covers too); none may stop the sweep.
        time.sleep(2.0)
        _interrupt(workers)
        time.sleep(0.5)
        _interrupt(workers)  # (fails if one has died since)
        assert proc.poll() is None, "the sweep stopped when only its workers were sent Ctrl-C"
        os.killpg(proc.pid, signal.SIGINT)  # now Ctrl-C, as a terminal sends it
        out, err = proc.communicate(timeout=HUNG_S)
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, out.strip(), err) == (130, "interrupted", "")


@POSIX_AND_TWO_CPUS
@pytest.mark.parametrize("delay_s", [0.3, 3.0])
def test_ctrl_c_stops_a_pool_sweep_at_once(delay_s):
    """Ctrl-C (SIGINT to the terminal's process group) while the workers start (0.3 s) or run (3 s): the
    parent gets one KeyboardInterrupt, no worker prints a traceback, and every process is gone before a single
    run could have finished (RUN_S; the runs left would take four times that)."""
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED_SWEEP], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "go"
        time.sleep(delay_s)  # when the Ctrl-C lands (a moment, not a limit)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=HUNG_S)
        assert time.monotonic() - sent < RUN_S, "the sweep waited for its runs to finish"
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, out.strip(), err) == (130, "interrupted", "")
    deadline = time.monotonic() + RUN_S  # gone before a run could end (a worker waiting for its run fails)
    while _session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session(proc.pid) == [], "a worker outlived the interrupted sweep"


def test_an_interrupted_dask_sweep_cancels_its_runs(monkeypatch):
    """Ctrl-C while waiting on a Dask cluster cancels every run sent (the scheduler forgets them) and closes
    the client, then goes on as KeyboardInterrupt."""
    import distributed
    from distributed import LocalCluster

    def interrupted(futures):
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "as_completed", interrupted)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with pytest.raises(KeyboardInterrupt):
            run_all(time.sleep, [(60.0,)] * 4, dask=cluster.scheduler_address, progress=False)
        deadline = time.monotonic() + HUNG_S  # a condition, polled; the runs themselves would take 60 s each
        while (cluster.scheduler.tasks or cluster.scheduler.clients.keys() - {"fire-and-forget"}) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not cluster.scheduler.tasks, "the interrupted runs are still on the cluster"
        assert cluster.scheduler.clients.keys() <= {"fire-and-forget"}, "the sweep's client is still connected"


def test_a_dask_address_that_is_not_a_scheduler_or_has_no_workers_is_refused():
    """A peer that answers with something else (an SSH banner), or a scheduler with no worker to run on."""
    from distributed import LocalCluster

    with socket.create_server(("127.0.0.1", 0)) as banner:
        done = threading.Event()

        def greet() -> None:
            conn, _ = banner.accept()
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n" + bytes(8))
            done.wait(HUNG_S)  # the connection stays open until the sweep has read the banner and refused it
            conn.close()

        threading.Thread(target=greet, daemon=True).start()
        try:
            with pytest.raises(ParameterError, match=r"answered, but not as a Dask scheduler"):
                run_all(abs, [(1,)], dask=f"tcp://127.0.0.1:{banner.getsockname()[1]}", progress=False)
        finally:
            done.set()
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        with pytest.raises(ParameterError, match=r"has no workers: start `dask worker"):
            run_all(abs, [(1,)], dask=cluster.scheduler_address, progress=False)
