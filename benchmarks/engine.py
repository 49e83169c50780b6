"""How fast is the engine? Latch acquires per second of wall time, against SimPy and Ciw, in one run.

The model is the closed latch (machine repairman): N workers each think for an
exponential time with mean 10x the hold, then take one EX latch for an
exponential hold. The engine, the SimPy version and the Ciw version
(``models.crosscheck``) simulate the same system; each gets its best of three
wall times (Ciw with fewer acquires, as it is slow). Compile cost is measured
in fresh processes: "cold" with an empty numba cache (import + first run),
"cached" with the cache the cold process left behind.

    python benchmarks/engine.py            # print the table
    python benchmarks/engine.py --save     # also write benchmarks/results.md

Timings vary with the machine, its load and the library versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

HOLD_MS = 0.1
THINK_MS = 10 * HOLD_MS
TARGETS = {"engine_acquires_per_s": 2.5e6, "ratio_to_simpy": 30.0, "cached_startup_s": 1.0}
COUNTS = {"engine": 2_000_000, "simpy": 100_000, "ciw": 20_000}
SMALL_RUN = ("models.run('closed-latch', workers=8, schedulers=8, think_ms=1.0, think_dist='exponential', "
             "hold_ms=0.1, hold_dist='exponential', acquires=1000, context_switch_us=0, wakeup_us=0)")
STARTUP = ("import time; t0 = time.perf_counter(); import models; t1 = time.perf_counter(); "
           + SMALL_RUN + "; t2 = time.perf_counter(); "
           "import json; print(json.dumps({'import_s': t1 - t0, 'first_run_s': t2 - t1, 'total_s': t2 - t0}))")


def machine() -> dict[str, str]:
    """CPU count and model name of this machine, for the record."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "platform": platform.platform()}


def best_of(fn, repeat: int = 3) -> float:
    """Smallest wall time (s) of ``repeat`` calls of fn."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def engine_run(workers: int, acquires: int) -> None:
    """One closed-latch run in the engine, zero overheads, one scheduler per worker."""
    import models

    res = models.run("closed-latch", workers=workers, schedulers=workers, think_ms=THINK_MS,
                     think_dist="exponential", hold_ms=HOLD_MS, hold_dist="exponential", acquires=acquires,
                     context_switch_us=0, wakeup_us=0)
    assert not res.truncated, res.truncated_reason


def startup_times() -> dict[str, dict[str, float]]:
    """Cold (empty numba cache) and cached start-up: import models + one small run, in fresh processes."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        for label in ("cold", "cached"):
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", STARTUP], env=env, cwd=str(ROOT),
                                  capture_output=True, text=True, check=True)
            wall = time.perf_counter() - t
            figures = json.loads(proc.stdout.strip().splitlines()[-1])
            figures["process_s"] = wall
            out[label] = figures
    return out


def measure(with_ciw: bool = True) -> dict:
    """Every figure of the benchmark, as a dict."""
    from models.crosscheck import ciw_closed_latch, simpy_closed_latch

    startup = startup_times()  # before anything compiles in this process
    engine_run(8, 1000)  # compile (or load from cache) outside the timings
    rows = []
    for workers in (8, 64):
        row: dict = {"workers": workers}
        n = COUNTS["engine"]
        row["engine_s"] = best_of(lambda: engine_run(workers, n))
        row["engine_per_s"] = n / row["engine_s"]
        n = COUNTS["simpy"]
        row["simpy_s"] = best_of(lambda: simpy_closed_latch(workers, HOLD_MS, "exponential", 0.0, THINK_MS,
                                                            "exponential", n, seed=1))
        row["simpy_per_s"] = n / row["simpy_s"]
        if with_ciw:
            n = COUNTS["ciw"]
            row["ciw_s"] = best_of(lambda: ciw_closed_latch(workers, HOLD_MS, "exponential", 0.0, THINK_MS,
                                                            "exponential", n, seed=1))
            row["ciw_per_s"] = n / row["ciw_s"]
        row["ratio_simpy"] = row["engine_per_s"] / row["simpy_per_s"]
        if with_ciw:
            row["ratio_ciw"] = row["engine_per_s"] / row["ciw_per_s"]
        rows.append(row)
    return {"machine": machine(), "counts": COUNTS, "hold_ms": HOLD_MS, "think_ms": THINK_MS,
            "rows": rows, "startup": startup, "targets": TARGETS}


def report(fig: dict) -> str:
    """The figures as a Markdown report (also readable as plain text)."""
    m = fig["machine"]
    c = fig["counts"]
    lines = [
        "# Engine benchmark: closed latch, exponential think (10x hold) and hold",
        "",
        f"Machine: {m['nproc']} CPUs, {m['cpu']}; Python {m['python']}; {m['platform']}.",
        "Timings vary with the machine, its load and library versions; compare ratios, not absolutes.",
        f"Command: `python benchmarks/engine.py --save`. Acquires per run: engine {c['engine']:,}, "
        f"SimPy {c['simpy']:,}, Ciw {c['ciw']:,}; best of 3 wall times (time.perf_counter).",
        "",
        "| workers | engine acquires/s | SimPy acquires/s | Ciw acquires/s | engine / SimPy | engine / Ciw |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in fig["rows"]:
        ciw = f"{r['ciw_per_s']:,.0f}" if "ciw_per_s" in r else "-"
        rc = f"{r['ratio_ciw']:,.0f}x" if "ratio_ciw" in r else "-"
        lines.append(f"| {r['workers']} | {r['engine_per_s']:,.0f} | {r['simpy_per_s']:,.0f} | {ciw} | "
                     f"{r['ratio_simpy']:,.1f}x | {rc} |")
    s = fig["startup"]
    lines += [
        "",
        "| start-up (fresh process, `import models` + 1,000-acquire run) | import s | first run s | total s | process s |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, text in (("cold", "cold: empty NUMBA_CACHE_DIR (compile)"), ("cached", "cached: same cache dir")):
        f = s[label]
        lines.append(f"| {text} | {f['import_s']:.2f} | {f['first_run_s']:.2f} | {f['total_s']:.2f} | "
                     f"{f['process_s']:.2f} |")
    t = fig["targets"]
    best = min(r["engine_per_s"] for r in fig["rows"])
    worst_ratio = min(r["ratio_simpy"] for r in fig["rows"])
    cached = s["cached"]["total_s"]
    lines += [
        "",
        "Targets (issue 2, on a 2-core machine of this class):",
        f"- engine >= {t['engine_acquires_per_s'] / 1e6:.1f} M acquires/s: measured {best / 1e6:.2f} M "
        f"(lowest of the rows) -> {'met' if best >= t['engine_acquires_per_s'] else 'NOT met'}",
        f"- engine >= {t['ratio_to_simpy']:.0f}x SimPy: measured {worst_ratio:.1f}x -> "
        f"{'met' if worst_ratio >= t['ratio_to_simpy'] else 'NOT met'}",
        f"- cached start-up < {t['cached_startup_s']:.0f} s (import + small run): measured {cached:.2f} s -> "
        f"{'met' if cached < t['cached_startup_s'] else 'NOT met'}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the report, and with --save write benchmarks/results.md and .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true", help="write benchmarks/results.md and results.json")
    parser.add_argument("--no-ciw", action="store_true", help="skip the (slow) Ciw runs")
    args = parser.parse_args(argv)
    fig = measure(with_ciw=not args.no_ciw)
    text = report(fig)
    print(text, end="")
    if args.save:
        (HERE / "results.md").write_text(text)
        (HERE / "results.json").write_text(json.dumps(fig, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
