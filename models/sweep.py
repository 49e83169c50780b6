"""Parameter sweeps behind the static explorers: a grid of runs written to ``book/data``.

A sweep is a scenario, a grid (parameter -> values) and fixed overrides.
Every grid point is one run with the sweep's seed, so the stored table is a
pure function of the sweep's definition and a test can recompute any row.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

METRICS = ("elapsed_ms", "throughput_per_s", "acquires", "waiting_requests_count", "wait_time_ms",
           "max_wait_time_ms", "p50_wait_ms", "p99_wait_ms", "mean_wait_ms",
           "signal_wait_time_ms", "collisions", "spins", "backoffs")
DATA_DIR = Path(__file__).resolve().parent.parent / "book" / "data"


@dataclass(frozen=True)
class Sweep:
    """A named grid of runs of one scenario."""

    name: str
    scenario: str
    grid: dict[str, list[Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    doc: str = ""

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as a parameter dict (fixed values included)."""
        keys = list(self.grid)
        return [dict(self.fixed, **dict(zip(keys, combo)))
                for combo in itertools.product(*(self.grid[k] for k in keys))]


def metrics(result) -> dict[str, Any]:
    """The explorer's metric columns for one run."""
    latch = result.latch_stats.iloc[0]
    waits = result.wait_stats
    latch_rows = waits[waits["wait_type"].str.contains("LATCH")]
    spin = result.spin_stats.iloc[0]
    return {
        "elapsed_ms": result.elapsed_ms, "throughput_per_s": result.throughput_per_s,
        "acquires": int(latch["acquires"]),
        "waiting_requests_count": int(latch["waiting_requests_count"]),
        "wait_time_ms": float(latch["wait_time_ms"]),
        "max_wait_time_ms": float(latch["max_wait_time_ms"]),
        "p50_wait_ms": float(latch["p50_wait_ms"]), "p99_wait_ms": float(latch["p99_wait_ms"]),
        "mean_wait_ms": result.mean_wait_ms,
        "signal_wait_time_ms": float(latch_rows["signal_wait_time_ms"].sum()),
        "collisions": int(spin["collisions"]), "spins": int(spin["spins"]),
        "backoffs": int(spin["backoffs"]),
    }


def run_point(sweep: Sweep, point: dict[str, Any]) -> dict[str, Any]:
    """Run one grid point and return its row (grid values, then metrics)."""
    import models

    result = models.run(sweep.scenario, **point)
    row = {k: point[k] for k in sweep.grid}
    row.update(metrics(result))
    return row


def _modules() -> dict[str, Any]:
    """Every module under ``models/sweeps`` that defines a SWEEP, by sweep name."""
    from models import sweeps as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"models.sweeps.{info.name}")
        if isinstance(getattr(module, "SWEEP", None), Sweep):
            found[module.SWEEP.name] = module
    return found


def sweeps() -> dict[str, Sweep]:
    """Every sweep defined under ``models/sweeps``."""
    return {name: module.SWEEP for name, module in _modules().items()}


def run_sweep(sweep: Sweep, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Run every grid point in order and return the table."""
    points = sweep.points()
    rows = []
    for k, point in enumerate(points):
        rows.append(run_point(sweep, point))
        if progress is not None:
            progress(k + 1, len(points))
    return pd.DataFrame(rows)


def write_sweep(name: str, out_dir: Path = DATA_DIR) -> list[Path]:
    """Run the sweep called ``name``, write ``out_dir/NAME.csv`` and any extra tables its module makes.

    A sweep module may define ``write_extra(out_dir) -> list[Path]`` for data
    that is not a grid of single runs (for example replications over seeds).
    """
    modules = _modules()
    known = {n: m.SWEEP for n, m in modules.items()}
    if name not in known:
        from models.params import ParameterError

        raise ParameterError(f"sweep={name!r} is unknown: use one of {', '.join(sorted(known)) or '(none)'}")

    def show(done: int, total: int) -> None:
        print(f"\r{name}: {done}/{total} runs", end="" if done < total else "\n", file=sys.stderr)

    table = run_sweep(known[name], show)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.csv"
    table.to_csv(path, index=False, float_format="%.6g")
    paths = [path]
    extra = getattr(modules[name], "write_extra", None)
    if extra is not None:
        paths += extra(out_dir)
    return paths
