"""The tempdb chapter: temporary tables created and dropped, calibrated on Lahoud's two measurements.

The measurements (both Pam Lahoud's, Microsoft):

- **The notebook** (Microsoft sql-server-samples, memory-optimized tempdb
  metadata, outputs dated 10/08/2019): SQL Server 2019 in a container with 4
  cores; ``ostress -n16 -r120`` runs a procedure that creates ``#Birthdays``
  with a primary key, fills it and joins it to five tables: 1,920 calls in
  35.419 s with tempdb's metadata on disk-based system tables (waiters on
  2:1:118, ``sysschobjs``) and 26.784 s with it memory-optimized.
- **The lab** (Winter-Ready 2019, "SQL Server 2019 Memory-Optimized TempDB
  Lab", 2018): at least 32 cores, ``ostress -n100 -r300`` (30,000 calls of a
  procedure whose temporary table has a primary key and a unique
  constraint): "about 1 minute" and "Batch Requests/sec around 500" before,
  "around 52 seconds" and "around 600" after.  These are the lab's stated
  expectations, not a logged run.

Where each parameter comes from, derived once:

- schedulers and sessions: each source's own (4 and 16; 32, the lab's
  minimum, and 100).
- CPU per call: each source's memory-optimized run, in which nothing
  queues on the system tables and (SQL Server 2019) nothing on PFS: the
  calls are CPU-bound on the schedulers, so the CPU per call is what makes
  the model give 1,920 / 26.784 s (the notebook) or 30,000 / 52 s (the lab)
  (:func:`fit_cpu`).  Fitted, each to its own number.
- the system-table write: the notebook's 35.419 s fixes what a creation's
  and a drop's disk-based system-table work costs in all, not how it divides
  between the time it holds the page latch (``metadata_us``) and CPU outside
  it (``metadata_cpu_us``).  :func:`band_table` refits ``metadata_cpu_us``
  at each hold of ``HOLD_GRID_US``: the band.  Fitted to the notebook's
  35.419 s.
- the allocation pages' holds (``pfs_us``, ``gam_us``): no source measures
  them; an assumption, shown as a band of 2 to 40 us (:data:`ALLOCATION_BAND_US`).
- data files: the notebook does not say; with PFS updates under a shared
  latch (2019) and one page per call, the files change nothing the model
  counts at its rate, so 4 (one per core, setup's default) is taken.
- hand-off: the book's (:mod:`models.calibration`).

Predicted, from the band and the lab's own CPU per call: the lab's rate
before memory-optimized metadata (about 500 calls/s).  The lab's number set no
parameter.  Assumed: the lab's creation costs the system tables what the
notebook's does (its table has one constraint more).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import pandas as pd

import models
from models.scenarios import tempdb as scenario

NOTEBOOK = {"sessions": 16, "schedulers": 4, "calls": 16 * 120, "off_s": 35.419, "on_s": 26.784}
LAB = {"sessions": 100, "schedulers": 32, "calls": 100 * 300, "off_s": 60.0, "on_s": 52.0,
       "off_per_s": 500.0, "on_per_s": 600.0}
FIT_SEEDS = (1, 2, 3)
ALLOCATION_BAND_US = (2.0, 40.0)   # assumed: no source measures a PFS or GAM update's hold
ALLOCATION_US = 10.0               # the value inside it the chapter's runs take
HOLD_GRID_US = (5.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 4000.0, 6000.0)
POLICIES = ("fair", "unfair")

NOTEBOOK_SETUP: dict[str, Any] = dict(
    sessions=NOTEBOOK["sessions"], schedulers=NOTEBOOK["schedulers"], files=4, version="2019",
    pages_per_object=1, pfs_us=ALLOCATION_US, gam_us=ALLOCATION_US, window_ms=20_000.0,
)
LAB_SETUP: dict[str, Any] = dict(
    sessions=LAB["sessions"], schedulers=LAB["schedulers"], files=8, version="2019",
    pages_per_object=1, pfs_us=ALLOCATION_US, gam_us=ALLOCATION_US, window_ms=5_000.0,
)


def run(setup: dict[str, Any], **overrides: Any) -> "models.Result":
    """One run of the tempdb model at ``setup`` with overrides."""
    return models.run("tempdb", **dict(setup, **overrides))


def rate(setup: dict[str, Any], seeds: Iterable[int] = FIT_SEEDS, **overrides: Any) -> float:
    """Calls (temporary objects) per second, averaged over ``seeds``."""
    seeds = list(seeds)
    return sum(run(setup, seed=s, **overrides).throughput_per_s for s in seeds) / len(seeds)


def _bisect(target: float, low: float, high: float, rate_at: Any, steps: int = 30) -> float:
    """The value in [low, high] (log scale) at which ``rate_at`` gives ``target`` (the rate falls as it grows)."""
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if rate_at(mid) > target:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


def fit_cpu(setup: dict[str, Any], target_per_s: float, **overrides: Any) -> float:
    """CPU per call (us) at which the memory-optimized run gives ``target_per_s``."""
    return _bisect(target_per_s, 100.0, 1_000_000.0,
                   lambda cpu: rate(setup, metadata="memory-optimized", cpu_per_object_us=cpu, **overrides))


def fit_metadata_cpu(setup: dict[str, Any], target_per_s: float, **overrides: Any) -> float | None:
    """CPU outside the system-table latch per write (us) at which the latched run gives ``target_per_s``.

    None when even no CPU at all leaves the run below the target: the hold alone costs more than the measurement.
    """
    if rate(setup, metadata_cpu_us=0.0, **overrides) < target_per_s:
        return None
    return _bisect(target_per_s, 1.0, 100_000.0, lambda cpu: rate(setup, metadata_cpu_us=cpu, **overrides))


def per_s(calls: int, seconds: float) -> float:
    """A run's calls per second from its call count and elapsed time."""
    return calls / seconds


def band_table(holds: Iterable[float] = HOLD_GRID_US, policies: Iterable[str] = POLICIES) -> pd.DataFrame:
    """Each latch policy and system-table hold, the notebook refitted at it, and the lab predicted from it.

    Per row: the notebook's CPU per call (fitted to 26.784 s), the CPU outside the latch per write (fitted to
    35.419 s, empty where the hold alone is too slow), the lab's CPU per call (fitted to its 52 s) and the lab's
    rate before memory-optimized metadata (predicted) beside its stated 500 a second.
    """
    rows = []
    for policy in policies:
        for hold in holds:
            row: dict[str, Any] = {"policy": policy, "metadata_us": hold}
            cpu = fit_cpu(NOTEBOOK_SETUP, per_s(NOTEBOOK["calls"], NOTEBOOK["on_s"]), metadata_us=hold, policy=policy)
            extra = fit_metadata_cpu(NOTEBOOK_SETUP, per_s(NOTEBOOK["calls"], NOTEBOOK["off_s"]),
                                     metadata_us=hold, cpu_per_object_us=cpu, policy=policy)
            row.update(notebook_cpu_us=cpu, metadata_cpu_us=extra, fits=extra is not None)
            if extra is not None:
                lab_cpu = fit_cpu(LAB_SETUP, per_s(LAB["calls"], LAB["on_s"]), metadata_us=hold, policy=policy)
                row.update(lab_cpu_us=lab_cpu,
                           lab_off_per_s=rate(LAB_SETUP, metadata_us=hold, metadata_cpu_us=extra,
                                              cpu_per_object_us=lab_cpu, policy=policy))
            rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the chapter's workload

# The chapter's runs take the unfair page latch: with the fair one the lab's 100 sessions on 32 schedulers
# convoy on the system-table page at every hold, and the model's rate before memory-optimized metadata stays
# under half the lab's stated 500 a second (band_table), which the lab does not show.
POLICY = "unfair"

# The explorer's and the panel's workload: illustrative, not any source's (none gives an allocation-bound
# workload's CPU and pages): short calls of 1 ms of CPU that fill eight pages (one extent) each, on 16
# schedulers, with the system-table write at 20 us under the latch and no CPU outside it.  The notebook's call
# spent about 9 ms of CPU per write on its disk-based system tables (band_table), which would hide the
# allocation pages altogether; the explorer's lists show the two holds no source measures over their bands.
SETUP: dict[str, Any] = dict(
    schedulers=16, sessions=64, files=1, version="2016", cpu_per_object_us=1_000.0, pages_per_object=8,
    pfs_us=ALLOCATION_US, gam_us=ALLOCATION_US, metadata_us=20.0, metadata_cpu_us=0.0, policy=POLICY,
    window_ms=200.0,
)
# What the explorer's server list offers: each version with the system tables on pages, and 2019 and 2022 also
# with memory-optimized metadata.
SERVERS: dict[str, dict[str, str]] = {
    "2014 (no TF 1118)": {"version": "2014", "metadata": "latched"},
    "2016": {"version": "2016", "metadata": "latched"},
    "2019": {"version": "2019", "metadata": "latched"},
    "2019, memory-optimized metadata": {"version": "2019", "metadata": "memory-optimized"},
    "2022": {"version": "2022", "metadata": "latched"},
    "2022, memory-optimized metadata": {"version": "2022", "metadata": "memory-optimized"},
}
EXPLORER_FILES = (1, 2, 4, 8, 12, 16)
EXPLORER_SESSIONS = (16, 32, 64, 128)
EXPLORER_ALLOCATION_US = (2.0, 10.0, 40.0)   # the allocation band's ends and the value the chapter takes
EXPLORER_METADATA_US = (20.0, 200.0)          # a short system-table write, and one ten times as long


def rule_of_thumb(schedulers: int, most: int | None = None) -> list[int]:
    """The file counts Microsoft's guidance steps through: one per logical processor up to eight, then four more
    at a time while contention lasts (KB 2154845), up to ``most`` (default: one per scheduler)."""
    most = schedulers if most is None else most
    first = min(schedulers, 8)
    return list(range(first, max(most, first) + 1, 4))


def server(label: str) -> dict[str, str]:
    """The version and metadata parameters of an explorer server label (SERVERS)."""
    return dict(SERVERS[label])


def kind_split(result: "models.Result") -> pd.DataFrame:
    """A run's page-latch waits split by the kind of page: waits, wait ms, acquires and wait per acquire."""
    rows = [{"page": kind, "waits": waits, "wait_ms": ms, "acquires": acquires,
             "wait_per_acquire_us": ms * 1000.0 / acquires if acquires else 0.0}
            for kind, (waits, ms, acquires) in result.extra["kind_waits"].items() if acquires]
    return pd.DataFrame(rows)
