"""How long `python -m models fit` and `whatif` take on a DBA's capture, as new processes (issue 41's targets).

Times each command over several runs on captures of the corpus in tests/captures/ (the realistic ones the
fit is judged on) and on the book's example, and prints minimum, median and maximum wall clock and CPU
seconds.  Targets on the 2-core machine: fit under 10 s, whatif under 30 s.

    python benchmarks/fit.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS_S = {"fit": 10.0, "whatif": 30.0}
CAPTURES = ["book/data/example_snapshot.csv", "book/data/dba_capture.csv", "tests/captures/hot_page_cpu_queue.csv",
            "tests/captures/version_store_40_on_24.csv", "tests/captures/parallel_insert_nesting.csv",
            "tests/captures/writelog_bound.csv"]


def timed(args: list[str]) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of ``python -m models ARGS`` as a new process; it must answer (exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "models", *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ), check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"python -m models {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (default 3)")
    runs = parser.parse_args().runs
    print(f"{'command':7} {'capture':45} {'wall min/median/max (s)':>26} {'cpu median (s)':>15} target")
    for path in [p for p in CAPTURES if (ROOT / p).exists()]:
        for command in ("fit", "whatif"):
            times = [timed([command, path]) for _ in range(runs)]
            walls = sorted(w for w, _ in times)
            cpu = statistics.median(c for _, c in times)
            verdict = "met" if walls[len(walls) // 2] < TARGETS_S[command] else "MISSED"
            print(f"{command:7} {Path(path).name:45} {walls[0]:7.2f} {statistics.median(walls):7.2f} "
                  f"{walls[-1]:7.2f}     {cpu:10.2f}     < {TARGETS_S[command]:g} s {verdict}")


if __name__ == "__main__":
    main()
