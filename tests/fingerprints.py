"""Fingerprints of full engine Results, so a change to the engine can prove it moved no number.

A fingerprint is a SHA-256 per part of a Result (summary figures, each DMV
table, the trace, the acquire log, the per-acquire waits), taken over the
exact bits of every value.  ``RUNS`` covers every scenario, both latch
policies, non-zero wake-up and switch costs, fixed distributions (tied
times), yields, a co-tenant, 64 workers and runs over a measurement window.  ``tests/test_fingerprints.py``
compares today's engine against ``tests/data/engine_fingerprints.json``.

    python tests/fingerprints.py          # compare, print the parts that differ
    python tests/fingerprints.py --save   # store today's fingerprints (only after a deliberate change)
    python tests/fingerprints.py --save LABEL ...   # store only these runs' (a new run), keep the others
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "tests" / "data" / "engine_fingerprints.json"

_LOGS = {"trace_events": 50_000, "record_acquires": 50_000}
# The hand-off the closed-latch and parallel-insert runs had when their fingerprints were stored
# (20 + 5 us, before models.calibration): fixed here so a new default calibration is not read as an
# engine change.  A run that names its own costs keeps them.
_STORED_HANDOFF = {"wakeup_us": 20.0, "context_switch_us": 5.0}
RUNS: dict[str, tuple[str, dict[str, Any]]] = {
    "convoy-fair-poisson": ("convoy", dict(arrival_rate_per_s=480, wakeup_us=95, context_switch_us=5,
                                           requests=4_000, seed=3)),
    "convoy-unfair-even-burst": ("convoy", dict(arrival_rate_per_s=450, arrivals="even", policy="unfair",
                                                initial_queue=50, wakeup_us=20, context_switch_us=5,
                                                requests=3_000, seed=2)),
    "convoy-exponential-hold": ("convoy", dict(arrival_rate_per_s=300, hold_dist="exponential",
                                               schedulers=2, requests=3_000, seed=5)),
    "closed-fair-8": ("closed-latch", dict(workers=8, schedulers=8, acquires=20_000, seed=1)),
    "closed-unfair-8": ("closed-latch", dict(workers=8, schedulers=4, policy="unfair", acquires=20_000,
                                             seed=2)),
    "closed-fixed-ties": ("closed-latch", dict(workers=6, schedulers=3, think_dist="fixed", hold_dist="fixed",
                                               think_ms=0.5, hold_ms=0.1, acquires=6_000, quantum_ms=0.3,
                                               seed=4)),
    "closed-zero-costs-64": ("closed-latch", dict(workers=64, schedulers=64, context_switch_us=0, wakeup_us=0,
                                                  think_ms=1.0, hold_ms=0.1, acquires=30_000, seed=6)),
    "closed-unfair-64-shared": ("closed-latch", dict(workers=64, schedulers=16, policy="unfair",
                                                     acquires=30_000, seed=7)),
    "insert-fair-8": ("parallel-insert", dict(maxdop=8, rows=2_000_000, seed=1)),
    "insert-unfair-16-contender": ("parallel-insert", dict(maxdop=16, rows=2_000_000, policy="unfair",
                                                           contender_cost_us=0.5, seed=2)),
    "insert-cotenant-fixed": ("parallel-insert", dict(maxdop=4, rows=1_000_000, busy_scheduler=2,
                                                      cpu_dist="fixed", quantum_ms=1.0, seed=3)),
    "insert-cotenant-unfair-full": ("parallel-insert", dict(maxdop=8, rows=200_000, logging="full",
                                                            busy_scheduler=0, policy="unfair", seed=4)),
    "insert-serial": ("parallel-insert", dict(maxdop=1, rows=50_000, seed=1)),
    "insert-64": ("parallel-insert", dict(maxdop=64, schedulers=64, rows=4_000_000, seed=8)),
    "version-store-16-on-12": ("version-store", dict(connections=16, schedulers=12, cpu_per_update_us=125,
                                                     hold_us=5.37, row_bytes=434, new_unit_every=640,
                                                     wakeup_us=7.7, context_switch_us=2.0, window_ms=100, seed=1)),
    "version-store-unfair-chunks-reads": ("version-store", dict(connections=6, schedulers=4, policy="unfair",
                                                                row_bytes=12_000, read_fraction=0.3,
                                                                cpu_dist="fixed", window_ms=100, seed=2)),
    "hot-page-identity-split-convoy": ("last-page-insert", dict(sessions=40, schedulers=8, inserts_per_session=100,
                                                                row_bytes=400, seed=1)),
    "hot-page-hash-flow-batch": ("last-page-insert", dict(sessions=30, schedulers=4, inserts_per_session=60, key="hash-bucket",
                                                          buckets=8, batch_rows=3, optimize_for_sequential_key="on",
                                                          cpu_dist="exponential", seed=2)),
    "cci-insert-cu14-eight-staggered": ("cci-insert", dict(queries=8, maxdop=3, behaviour="cu14", start_gap_s=0.2,
                                                         rows_per_query=600_000, grant_timeout_s=1.0,
                                                         max_server_memory_mb=6_000, schedulers=4, seed=1)),
    "cci-decommit-no-lpim-12": ("cci-decommit", dict(sessions=12, schedulers=8, lpim="off", rowgroups=2,
                                                     os_calls_per_rowgroup=50, wakeup_us=10.0, seed=1)),
    # tempdb: every scenario parameter named, so a change of the scenario's defaults is not read as an engine change.
    "tempdb-2016-two-files-fair": ("tempdb", dict(sessions=24, schedulers=8, files=2, version="2016",
                                                  metadata="latched", cached_share=0.0, pages_per_object=2,
                                                  cpu_per_object_us=300.0, think_us=50.0, pfs_us=25.0, gam_us=15.0,
                                                  metadata_us=10.0, metadata_cpu_us=5.0, metadata_pages=1,
                                                  hold_dist="fixed", policy="fair", wakeup_us=20.0,
                                                  context_switch_us=5.0, window_ms=40.0, seed=1)),
    "tempdb-2014-mixed-unfair-cached": ("tempdb", dict(sessions=32, schedulers=8, files=1, version="2014",
                                                       metadata="latched", cached_share=0.5, pages_per_object=10,
                                                       cpu_per_object_us=500.0, think_us=0.0, pfs_us=8.0,
                                                       gam_us=12.0, metadata_us=25.0, metadata_cpu_us=0.0,
                                                       metadata_pages=2, hold_dist="exponential", policy="unfair",
                                                       wakeup_us=20.0, context_switch_us=5.0, window_ms=40.0,
                                                       seed=2)),
    "tempdb-2022-memory-optimized": ("tempdb", dict(sessions=40, schedulers=16, files=4, version="2022",
                                                    metadata="memory-optimized", cached_share=0.25,
                                                    pages_per_object=8, cpu_per_object_us=400.0, think_us=100.0,
                                                    pfs_us=10.0, gam_us=10.0, metadata_us=20.0, metadata_cpu_us=0.0,
                                                    metadata_pages=1, hold_dist="fixed", policy="unfair",
                                                    wakeup_us=7.7, context_switch_us=2.0, window_ms=40.0, seed=3)),
}


def _digest(obj: Any) -> str:
    """SHA-256 of a value's exact bits: frames column by column, arrays as raw bytes, scalars by repr."""
    h = hashlib.sha256()
    if obj is None:
        h.update(b"none")
    elif isinstance(obj, pd.DataFrame):
        for name in obj.columns:
            col = obj[name]
            h.update(str(name).encode())
            if isinstance(col.dtype, pd.CategoricalDtype):
                col = col.astype(str)
            values = col.to_numpy()
            if values.dtype == object:
                h.update(json.dumps([str(v) for v in values]).encode())
            else:
                h.update(str(values.dtype).encode())
                h.update(np.ascontiguousarray(values).tobytes())
    elif isinstance(obj, np.ndarray):
        h.update(str(obj.dtype).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    else:
        h.update(repr(obj).encode())
    return h.hexdigest()[:16]


def fingerprint(result) -> dict[str, str]:
    """One digest per part of a Result."""
    summary = {"elapsed_ms": float(result.elapsed_ms).hex(), "throughput_per_s": float(result.throughput_per_s).hex(),
               "truncated": result.truncated,
               "extra": {k: (float(v).hex() if isinstance(v, float) else v) for k, v in sorted(result.extra.items())
                         if not isinstance(v, pd.DataFrame)}}
    parts = {"summary": _digest(json.dumps(summary, sort_keys=True))}
    for k, v in sorted(result.extra.items()):  # a table among the extras (the hot page's insert log) by its bits
        if isinstance(v, pd.DataFrame):
            parts[f"extra_{k}"] = _digest(v)
    for name in ("latch_stats", "wait_stats", "spin_stats", "schedulers", "workers", "trace", "acquire_log"):
        parts[name] = _digest(getattr(result, name))
    parts["acquire_wait_ms"] = _digest(result.acquire_wait_ms)
    return parts


def compute() -> dict[str, dict[str, str]]:
    """Fingerprints of every run in RUNS, with today's engine."""
    return {label: fingerprint_of(label) for label in RUNS}


def fingerprint_of(label: str) -> dict[str, str]:
    """Run ``RUNS[label]`` (with the hand-off it was stored with) and fingerprint its Result."""
    import models

    scenario, params = RUNS[label]
    return fingerprint(models.run(scenario, **_with_stored_handoff(scenario, params), **_LOGS))


def _with_stored_handoff(scenario: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the stored hand-off filled in (the convoy scenario's own default is kept)."""
    return params if scenario == "convoy" else {**_STORED_HANDOFF, **params}


def differences(stored: dict, now: dict) -> list[str]:
    """'run: part' for every part whose digest changed (or run that is new or missing)."""
    out = []
    for label in sorted(set(stored) | set(now)):
        if label not in stored or label not in now:
            out.append(f"{label}: {'new' if label not in stored else 'missing'}")
            continue
        out += [f"{label}: {part}" for part in stored[label] if stored[label][part] != now[label].get(part)]
    return out


def main(argv: list[str]) -> int:
    labels = [a for a in argv if not a.startswith("--")]
    unknown = [label for label in labels if label not in RUNS]
    if unknown:
        print(f"unknown run(s): {', '.join(unknown)}; RUNS has {', '.join(RUNS)}")
        return 2
    if "--save" in argv:
        from models.files import write_text_atomic

        stored = json.loads(STORE.read_text()) if labels and STORE.exists() else {}
        now = {**stored, **{label: fingerprint_of(label) for label in labels}} if labels else compute()
        STORE.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(STORE, json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {STORE.relative_to(ROOT)} ({len(labels) or len(now)} runs)")
        return 0
    now = compute()
    diff = differences(json.loads(STORE.read_text()), now)
    print("\n".join(diff) if diff else f"all {len(now)} runs bit-identical")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
