"""A new reader's first run, on a fresh clone: with the engine's cache cold, and after `python -m models warm`.

A fresh clone has no compiled engine (numba keeps it in models/engine/__pycache__, which git does not
track), so its first run compiles for about half a minute. `make install` (and so `make book` and
`make test`) runs `python -m models warm`, which compiles it once; after that the first run only loads
it. This clones the repository's HEAD twice into a temporary folder and times, as wall clock of a new
process each:

- cold: `python -m models run convoy` in a clone that never ran the engine;
- warm step: `python -m models warm` in the other clone (what `make install` adds);
- first run after it: `python -m models run convoy` there, then the best of two more.

    python benchmarks/first_run.py

The clones import this interpreter's packages (PYTHONPATH=clone), so no install is needed. Target
(issue 33): the first run after the warm step under 3 s.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 3.0


def timed(args: list[str], clone: Path) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of ``python ARGS`` run in ``clone`` as a new process (it must succeed).

    The CPU seconds (user + system) hardly move with other load on the machine; the wall clock does.
    """
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the clone's own in-tree cache
    env["PYTHONPATH"] = str(clone)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"python {' '.join(args)} failed in {clone}:\n{done.stderr}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    """Clone, time, print a table and whether the target is met (exit 1 if not)."""
    with tempfile.TemporaryDirectory(prefix="first-run-") as scratch:
        clones = []
        for name in ("cold", "warmed"):
            clone = Path(scratch) / name
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            clones.append(clone)
        cold, warmed = clones
        run = ["-m", "models", "run", "convoy"]
        cold_s = timed(run, cold)
        warm_s = timed(["-m", "models", "warm"], warmed)
        first_s = timed(run, warmed)
        again_s = min((timed(run, warmed) for _ in range(2)), key=lambda t: t[0])
    load = os.getloadavg()[0]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"First run of `python -m models run convoy` on a fresh clone of {head.strip()} "
          f"({os.cpu_count()} CPUs, load average {load:.1f} at the end; new process each)\n")
    print("| step | wall s | CPU s |\n|---|---:|---:|")
    for step, (wall, cpu) in (("cold: first run, nothing compiled yet", cold_s),
                              ("`python -m models warm` (run by `make install`)", warm_s),
                              ("first run after the warm step", first_s), ("later runs (best of 2)", again_s)):
        print(f"| {step} | {wall:.1f} | {cpu:.1f} |")
    met = first_s[0] < TARGET_S
    print(f"\nTarget: first run after the warm step under {TARGET_S:g} s: measured {first_s[0]:.1f} s wall "
          f"({first_s[1]:.1f} s CPU) -> {'met' if met else 'NOT met'}"
          + ("" if met or load < (os.cpu_count() or 1) else
             f" (the machine was loaded: {load:.1f} runnable for {os.cpu_count()} CPUs)"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
