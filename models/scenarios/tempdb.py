"""Sessions that create, fill and drop temporary objects: tempdb's allocation pages and system tables.

Each session loops for ever over one batch that uses one temporary table, and
the run counts batches (temporary objects) over a window of ``window_ms``:

* CPU of the batch itself (compile, fill, query): ``cpu_per_object_us``,
  and with disk-based system tables ``metadata_cpu_us`` more for each of
  the creation and the drop (their logging and buffer work), in slices of at
  most a quantum, each exponential and followed by a yield point;
* **create**, unless the object is a cached one (``cached_share`` of them,
  laid out evenly in each session's sequence): the system tables' rows are
  written: EX on the system-table page every creation shares (a
  ``metadata_us`` hold); when tempdb's metadata is memory-optimized (SQL
  Server 2019 on) the write's ``metadata_us`` is CPU with no latch;
* **allocation**: the object's ``pages_per_object`` pages come from one data
  file, the files taken in turn (proportional fill over files of equal size
  is round-robin).  Each page is marked in that file's PFS page
  (``pfs_us``); each new uniform extent (eight pages) is marked in its GAM
  page (``gam_us``); before SQL Server 2016 the first eight pages of an
  object come one at a time from mixed extents, each found through the
  file's SGAM page (``gam_us``).  A cached object keeps its first page, so
  it allocates one page fewer;
* **drop**: the same system-table write (unless cached) and the same
  PFS/GAM/SGAM visits to free the pages;
* ``think_us`` off the scheduler (exponential, default 0: a load tool's loop).

Which latch mode each allocation page is updated under is the version's
(:data:`VERSIONS`, each with its source): UP until SQL Server 2019 made PFS
updates concurrent (SH) and 2022 did the same for GAM and SGAM.  Trace flags
1117 and 1118 are 2016's default behaviour for tempdb (uniform extents,
files grown together), so "2014" is an older server without them.

Assumptions, each a parameter: one hot system-table page shared by every
creation and drop (``metadata_pages`` spreads them over more); the files'
allocation pages are the only ones latched (an object's own data pages are
its session's alone).  The defaults are the chapter's illustrative
workload (:data:`models.book.analysis.tempdb.SETUP`, which says where each
value comes from), with the unfair page latch that Lahoud's lab asks for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from models.calibration import WAKEUP_BAND_US
from models.counters import advice, evidence
from models.counters.evidence import MISSING, FitError
from models.counters.snapshot import (
    ACTIVE_TEMP_TABLES, BATCHES, TEMP_TABLES_CREATED, TEMP_TABLES_FOR_DESTRUCTION, TRANSACTIONS, VERSION_CLEANUP_KB,
    VERSION_KB, VERSION_STORE_KB,
)
from models.engine import state
from models.engine.program import DISTRIBUTIONS, EX, SH, UP, Program
from models.params import Param, ParameterError, common_params, latch_knobs
from models.result import build as result_of
from models.scenarios.base import (
    Band, Capture, Change, DiagnosisRule, RoundTrip, Scenario, Throughput, wakeup_band,
)
from models.workload import LatchSpec, Workload, simulate

PAGES_PER_EXTENT = 8
MIXED_PAGES = 8             # before 2016 (no trace flag 1118), an object's first eight pages come from mixed extents
CACHE_BLOCK = 20            # the cached share is laid out as a fraction with at most this denominator
MAX_BLOCK_OBJECTS = 4_096   # objects one written-out block of the program may hold (files x cache pattern)
FOREVER = 2**62
MAX_OBJECTS = 2_000_000     # bound on the temporary objects a window may hold (the run's event budget)
MAX_INSTRUCTIONS = 1_000_000  # bound on the written-out program (every object of the block, page by page)
KINDS = ("PFS", "GAM", "SGAM", "metadata")


@dataclass(frozen=True)
class Behaviour:
    """How one SQL Server version updates tempdb's allocation pages and system tables, and the source."""

    mixed_extents: bool       # an object's first eight pages from mixed extents (through SGAM)
    pfs_mode: int             # the latch mode a PFS update takes
    gam_mode: int             # the latch mode a GAM or SGAM update takes
    memory_optimized_ok: bool  # memory-optimized tempdb metadata exists on this version
    source: str


VERSIONS: dict[str, Behaviour] = {
    "2014": Behaviour(True, UP, UP, False,
                      "before 2016 tempdb allocated an object's first eight pages from mixed extents unless trace "
                      "flag 1118 was on (Microsoft KB 2154845; Lahoud 2016)"),
    "2016": Behaviour(False, UP, UP, False,
                      "SQL Server 2016 made trace flags 1117 and 1118 tempdb's default: uniform extents only, all "
                      "files grown together (Lahoud 2016; Microsoft Learn, tempdb database)"),
    "2019": Behaviour(False, SH, UP, True,
                      "SQL Server 2019 updates PFS pages under a shared latch (concurrent PFS updates) and can keep "
                      "tempdb's system tables in memory-optimized tables (Microsoft Learn, What's new in SQL "
                      "Server 2019; tempdb database)"),
    "2022": Behaviour(False, SH, SH, True,
                      "SQL Server 2022 also updates GAM and SGAM pages under a shared latch (system page latch "
                      "concurrency) (Microsoft Learn, What's new in SQL Server 2022; tempdb database)"),
}

PARAMS = (
    Param("sessions", "int", 64, "", 1, 4_096,
          help="sessions creating, filling and dropping temporary tables in a loop"),
    Param("files", "int", 1, "", 1, 128, help="tempdb data files of equal size (allocations go to each in turn)"),
    Param("version", "choice", "2016", choices=tuple(VERSIONS),
          help="SQL Server version: how the allocation pages are latched (2014 = no trace flag 1118)"),
    Param("metadata", "choice", "latched", choices=("latched", "memory-optimized"),
          help="tempdb's system tables on pages under page latches, or memory-optimized (2019 on)"),
    Param("cached_share", "float", 0.0, "", 0.0, 1.0,
          help="share of the temporary objects that reuse a cached one: no system-table write, one page fewer"),
    Param("pages_per_object", "int", 8, "pages", 1, 1_024, help="data pages each temporary object fills"),
    Param("cpu_per_object_us", "float", 1_000.0, "us", 1.0, 1_000_000.0,
          help="CPU of one batch outside the allocation pages and system tables (compile, fill, query)"),
    Param("think_us", "float", 0.0, "us", 0.0, 10_000_000.0,
          help="mean time off the scheduler after each batch (the client's round trip), exponential"),
    Param("pfs_us", "float", 10.0, "us", 0.01, 10_000.0, help="time one page's update holds its file's PFS page"),
    Param("gam_us", "float", 10.0, "us", 0.01, 10_000.0,
          help="time one extent's (or mixed page's) update holds its file's GAM (or SGAM) page"),
    Param("metadata_us", "float", 20.0, "us", 0.01, 10_000.0,
          help="time one creation or drop holds the system-table page (or runs, memory-optimized)"),
    Param("hold_dist", "choice", "fixed", choices=("fixed", "exponential"),
          help="page-latch holds exactly their means, or exponential (the validation appendix's product-form case)"),
    Param("metadata_cpu_us", "float", 0.0, "us", 0.0, 100_000.0,
          help="CPU of a creation's or drop's system-table work outside the page latch (disk-based tables' "
               "logging and buffer work), which memory-optimized metadata does not spend"),
    Param("metadata_pages", "int", 1, "", 1, 64,
          help="system-table pages the creations and drops spread over (each object's rows on one)"),
    Param("window_ms", "float", 500.0, "ms", 1.0, 100_000.0, help="simulated time over which batches are counted"),
) + common_params(schedulers=16, policy="unfair")


# ----------------------------------------------------------------------------- the latches


def pfs_latch(file: int) -> int:
    """The latch number of data file ``file``'s PFS page (files counted from 0)."""
    return 3 * file


def gam_latch(file: int) -> int:
    """The latch number of data file ``file``'s GAM page."""
    return 3 * file + 1


def sgam_latch(file: int) -> int:
    """The latch number of data file ``file``'s SGAM page."""
    return 3 * file + 2


def metadata_latch(values: dict[str, Any], page: int) -> int:
    """The latch number of system-table page ``page``: after every file's three allocation pages."""
    return 3 * values["files"] + page


def page_name(values: dict[str, Any], latch: int) -> str:
    """The page a latch stands for, as sys.dm_os_waiting_tasks names it (db:file:page).

    tempdb's data files are file 1 and files 3 onwards (2 is its log); PFS is page 1, GAM 2, SGAM 3.
    The system-table pages are file 1's, from page 118 (a page DBAs meet in this role) on.
    """
    files = values["files"]
    if latch >= 3 * files:
        return f"2:1:{118 + latch - 3 * files}"
    file, kind = divmod(latch, 3)
    return f"2:{1 if file == 0 else file + 2}:{kind + 1}"


def latch_kind(values: dict[str, Any], latch: int) -> str:
    """PFS, GAM, SGAM or metadata: what the latch's page is."""
    return "metadata" if latch >= 3 * values["files"] else KINDS[latch % 3]


# ----------------------------------------------------------------------------- the program


def cached_rate(share: float) -> Fraction:
    """The cached share as the model lays it out: a fraction with a denominator of at most CACHE_BLOCK."""
    return Fraction(share).limit_denominator(CACHE_BLOCK)


def cache_pattern(share: float) -> list[bool]:
    """Which objects of a repeating block are cached ones: ``share`` as a fraction with a small denominator."""
    rate = cached_rate(share)
    size = rate.denominator
    return [math.floor((i + 1) * rate) - math.floor(i * rate) == 1 for i in range(size)]


def block_objects(values: dict[str, Any]) -> int:
    """Objects in the written-out block every session loops over: one per file per cache-pattern slot."""
    return values["files"] * len(cache_pattern(values["cached_share"]))


def _visit(prog: Program, values: dict[str, Any], latch: int, mode: int, hold_us: float) -> None:
    """Latch one page in ``mode``, update it for ``hold_us`` (the run's hold distribution), release it."""
    prog.acquire(latch, mode)
    prog.cpu(hold_us, DISTRIBUTIONS[values["hold_dist"]])
    prog.release(latch, mode)


def _metadata(prog: Program, values: dict[str, Any], page: int) -> None:
    """One creation's or drop's system-table write.

    Disk-based system tables: EX on the shared page for ``metadata_us`` (their ``metadata_cpu_us`` outside the
    latch is in the batch's CPU, :func:`batch_cpu_us`).  Memory-optimized: the same write's ``metadata_us`` as
    CPU, with no page latch and no further CPU.
    """
    if values["metadata"] == "memory-optimized":
        prog.cpu(values["metadata_us"], DISTRIBUTIONS[values["hold_dist"]])
        return
    _visit(prog, values, metadata_latch(values, page), EX, values["metadata_us"])


def allocation_visits(behaviour: Behaviour, page: int) -> tuple[str, ...]:
    """The allocation pages an object's page ``page`` (counted from 0) is allocated (or freed) through, in order:
    its mixed extent's SGAM page (the first eight before 2016) or, where it starts a uniform extent, the GAM
    page; then the PFS page."""
    if behaviour.mixed_extents and page < MIXED_PAGES:
        return ("SGAM", "PFS")
    if page % PAGES_PER_EXTENT == 0:
        return ("GAM", "PFS")
    return ("PFS",)


def _pages(prog: Program, values: dict[str, Any], file: int, first: int, count: int) -> None:
    """Allocate (or free) pages ``first`` to ``first + count - 1`` of an object in data file ``file``."""
    behaviour = VERSIONS[values["version"]]
    latch = {"PFS": pfs_latch(file), "GAM": gam_latch(file), "SGAM": sgam_latch(file)}
    for page in range(first, first + count):
        for kind in allocation_visits(behaviour, page):
            mode, hold = ((behaviour.pfs_mode, values["pfs_us"]) if kind == "PFS"
                          else (behaviour.gam_mode, values["gam_us"]))
            _visit(prog, values, latch[kind], mode, hold)


def batch_cpu_us(values: dict[str, Any], cached: bool) -> float:
    """CPU of one batch outside every latch: its own work, and with disk-based system tables (an object not
    cached) the creation's and the drop's ``metadata_cpu_us`` each."""
    latched = values["metadata"] == "latched" and not cached
    return values["cpu_per_object_us"] + (2.0 * values["metadata_cpu_us"] if latched else 0.0)


def cpu_slices(values: dict[str, Any], cpu_us: float) -> int:
    """Bursts a batch's ``cpu_us`` is cut into, each at most a quantum long with a yield point after it.

    SQL Server's own work reaches a yield point at least once a quantum (4 ms); the engine runs a CPU burst
    to its end, so a batch longer than a quantum is written as that many bursts.
    """
    return max(1, math.ceil(cpu_us / (values["quantum_ms"] * 1000.0)))


def _object(prog: Program, values: dict[str, Any], file: int, cached: bool, page: int) -> int:
    """One batch with one temporary object in data file ``file``; returns its address."""
    cpu_us = batch_cpu_us(values, cached)
    slices = cpu_slices(values, cpu_us)
    start = prog.start()
    for _ in range(slices):
        prog.cpu(cpu_us / slices, DISTRIBUTIONS["exponential"])
        prog.yield_point()
    first = 1 if cached else 0  # a cached object keeps its first page
    if not cached:
        _metadata(prog, values, page)
    _pages(prog, values, file, first, values["pages_per_object"] - first)
    if not cached:
        _metadata(prog, values, page)
    _pages(prog, values, file, first, values["pages_per_object"] - first)
    if values["think_us"] > 0:
        prog.sleep(values["think_us"], DISTRIBUTIONS["exponential"])
    prog.unit()
    return start


def _block(prog: Program, values: dict[str, Any]) -> list[int]:
    """The block every session loops over (object i in file i mod files); returns each object's address."""
    pattern = cache_pattern(values["cached_share"])
    files = values["files"]
    return [_object(prog, values, i % files, pattern[(i // files) % len(pattern)], i % values["metadata_pages"])
            for i in range(block_objects(values))]


def program_size(values: dict[str, Any]) -> int:
    """About how many instructions :func:`build` writes: three per latch visit, two per CPU slice, a few more."""
    visits = visits_per_object(values)
    per_object = 3 * sum(visits.values()) + 2 * cpu_slices(values, batch_cpu_us(values, False)) + 4
    return math.ceil(block_objects(values) * per_object)


def expected_objects(values: dict[str, Any]) -> int:
    """An upper bound on the objects the window can hold: every busy scheduler doing nothing but batches."""
    busy = min(values["sessions"], values["schedulers"])
    return math.ceil(values["window_ms"] * 1000.0 * busy / values["cpu_per_object_us"]) + values["sessions"]


def visits_per_object(values: dict[str, Any]) -> dict[str, float]:
    """Mean page-latch visits of one batch to each kind of page (PFS, GAM, SGAM, metadata), both ways."""
    behaviour = VERSIONS[values["version"]]
    share = float(cached_rate(values["cached_share"]))
    counts = dict.fromkeys(KINDS, 0.0)
    for cached, weight in ((False, 1.0 - share), (True, share)):
        first = 1 if cached else 0
        for page in range(first, values["pages_per_object"]):
            for kind in allocation_visits(behaviour, page):
                counts[kind] += 2 * weight
        if not cached:
            counts["metadata"] += 2 * weight
    if values["metadata"] == "memory-optimized":
        counts["metadata"] = 0.0
    return counts


def _collect(values: dict[str, Any]):
    """Per-page wait totals, for the capture's sampled waiters and the chapter's split by page kind."""

    def collect(final: state.State) -> dict[str, Any]:
        waits = final.latch_waits  # (latch, mode, column)
        by_page = {}
        by_kind = {kind: [0.0, 0.0, 0] for kind in KINDS}
        for latch in range(waits.shape[0]):
            count = float(waits[latch, :, state.LW_COUNT].sum())
            ms = float(waits[latch, :, state.LW_TIME].sum()) / 1000.0
            if count > 0:
                by_page[page_name(values, latch)] = (count, ms)
            entry = by_kind[latch_kind(values, latch)]
            entry[0] += count
            entry[1] += ms
            entry[2] += int(final.latches[latch, state.L_ACQUIRES])
        return {"page_waits": by_page,  # page -> (waits, wait ms)
                "kind_waits": {k: tuple(v) for k, v in by_kind.items()}}  # kind -> (waits, wait ms, acquires)

    return collect


def build(values: dict[str, Any]) -> Workload:
    """One looping program shared by every session; session w starts at object w of the block (its own file)."""
    prog = Program()
    body = prog.start()
    addresses = _block(prog, values)
    prog.loop(body, FOREVER, slot=1)
    n = values["sessions"]
    starts = [addresses[w % len(addresses)] for w in range(n)]
    latches = [LatchSpec("BUFFER", "PAGELATCH", shown_modes=("UP", "EX"), **latch_knobs(values))
               for _ in range(3 * values["files"] + values["metadata_pages"])]
    objects = expected_objects(values)
    visits = visits_per_object(values)
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=[w % values["schedulers"] for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=latches, schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=max(1, math.ceil(objects * sum(visits.values()))),  # sizes the event budget
        window_us=values["window_ms"] * 1000.0, count_units=True, collect=_collect(values),
        extra={"visits_per_object": visits, "block_objects": len(addresses),
               "behaviour": VERSIONS[values["version"]].source},
    )


def check(values: dict[str, Any]) -> None:
    """Memory-optimized metadata needs 2019 or later; the program and the window must stay bounded."""
    if values["metadata"] == "memory-optimized" and not VERSIONS[values["version"]].memory_optimized_ok:
        raise ParameterError(f"metadata='memory-optimized' needs version '2019' or '2022' (version="
                             f"{values['version']!r}): memory-optimized tempdb metadata came with SQL Server 2019")
    if block_objects(values) > MAX_BLOCK_OBJECTS:
        raise ParameterError(f"files={values['files']} with cached_share={values['cached_share']:g} lays out "
                             f"{block_objects(values):,} objects per block: use a cached share that is a simpler "
                             f"fraction (at most {MAX_BLOCK_OBJECTS // values['files']} objects per file)")
    instructions = program_size(values)
    if instructions > MAX_INSTRUCTIONS:
        raise ParameterError(
            f"pages_per_object={values['pages_per_object']} over files={values['files']} with "
            f"cached_share={values['cached_share']:g} and {cpu_slices(values, batch_cpu_us(values, False))} CPU "
            f"slice(s) a call writes out a program of about {instructions:,} instructions: use at most "
            f"{MAX_INSTRUCTIONS:,} (fewer pages per object or files, a simpler cached share, or a longer quantum)")
    objects = expected_objects(values)
    if objects > MAX_OBJECTS:
        raise ParameterError(
            f"window_ms={values['window_ms']:g} could hold up to {objects:,} temporary objects at "
            f"cpu_per_object_us={values['cpu_per_object_us']:g} on {min(values['sessions'], values['schedulers'])} "
            f"busy schedulers: use at most {MAX_OBJECTS:,} (a shorter window or more CPU per object)")


# ----------------------------------------------------------------------------- the fit


# @@VERSION's first line a capture of the model states for each version (real builds: Microsoft's build lists).
VERSION_STRINGS = {
    "2014": "Microsoft SQL Server 2014 (SP3) (KB4022619) - 12.0.6024.0 (X64)",
    "2016": "Microsoft SQL Server 2016 (SP3) (KB5003279) - 13.0.6300.2 (X64)",
    "2019": "Microsoft SQL Server 2019 (RTM-CU22) (KB5027702) - 15.0.4322.2 (X64)",
    "2022": "Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4115.5 (X64)",
}
FILE_MB = 8_192              # the size a capture of the model gives each data file (all equal: round robin)
UNEXPECTED_SHARE = 0.2       # waiters on a kind of page the version latches shared: above this share, a contradiction
MIN_KIND_SHARE = 0.02        # a kind of page with fewer of tempdb's sampled waiters tells too little of its hold
# No source measures a PFS or GAM update's hold: from a bit flipped and logged (2 us) to the 40 us the hot-page
# chapter takes for a leaf page's whole insert under its page latch (models.book.analysis.hot_page.HOLD_US).
ALLOCATION_BAND_US = (2.0, 40.0)
# Nor a system-table write's hold: Lahoud's notebook allows up to several ms (models.book.analysis.tempdb's band),
# but her lab's 500 creations/s, two writes each, on one page leave at most 1 ms per write (the latch busy all the
# time); 2 us at the low end, as the allocation pages'.
METADATA_BAND_US = (2.0, 1_000.0)
SESSIONS_BAND = (0.5, 1.0)   # the share of the instance's user sessions that create temporary objects
CALIBRATION_SEED = 1         # the first seed of the runs calibrate() makes (calibration_seed)
CALIBRATION_OBJECTS = 15_000  # temporary objects each of those runs counts
CALIBRATION_STEPS = 10       # Newton steps at most (each costs one run per unknown, and one)
THINK_FLOOR_US = 1.0         # the least time off the scheduler the fit tries (log space has no 0)
LOOP_TOLERANCE = math.log(1.05)  # sessions loop with no time off where that gives every moment within 5%
CALIBRATION_TOLERANCE = 0.01  # stop when every moment is within this share of the capture's
MAX_STEP = math.log(4.0)     # no unknown moves by more than a factor of 4 in one step
FD_STEP = math.log(1.1)      # the finite difference of the Jacobian, in log space
BACKTRACKS = 4               # halvings of a Newton step that does not bring the moments closer
# The kinds of page whose waits the fit reads, and the hold each one's waits tell.
HOLD_OF = {"metadata": "metadata_us", "PFS": "pfs_us", "GAM": "gam_us"}


def version_of(text: str | None) -> tuple[str | None, str]:
    """The model's version for @@VERSION's first line (None: no version in it), and how it was read.

    SQL Server's major version: before 13 (2016) is "2014", whose tempdb allocates mixed extents unless trace
    flag 1118 is on; 13 and 14 (2016, 2017) "2016"; 15 "2019"; 16 and later "2022".
    """
    build = re.search(r"\b(\d{1,2})\.\d+\.\d+", text or "")
    if build is None:
        return None, f"no SQL Server build in the version setting ({text!r})"
    major = int(build.group(1))
    if major < 13:
        return "2014", (f"the version setting's build {build.group(0)} is before SQL Server 2016: tempdb allocates "
                        "an object's first eight pages from mixed extents (trace flag 1118 is assumed off; a capture "
                        "cannot tell)")
    version = "2016" if major <= 14 else "2019" if major == 15 else "2022"
    return version, f"the version setting's build {build.group(0)} behaves as {version} ({VERSIONS[version].source})"


def _metadata_setting(snap: Any, version: str) -> tuple[str, str]:
    """latched or memory-optimized, from the tempdb_metadata_memory_optimized setting, and how it was read."""
    flag = snap.setting("tempdb_metadata_memory_optimized")
    if flag is None:
        if VERSIONS[version].memory_optimized_ok:
            return "latched", (f"{MISSING}no tempdb_metadata_memory_optimized setting on a {version} server, so "
                               "latched assumed (SERVERPROPERTY('IsTempdbMetadataMemoryOptimized') would say)")
        return "latched", "SQL Server before 2019 has no memory-optimized tempdb metadata"
    if flag and not VERSIONS[version].memory_optimized_ok:
        raise FitError(f"the capture says tempdb's metadata is memory-optimized (tempdb_metadata_memory_optimized=1) "
                       f"but its version behaves as {version}, before SQL Server 2019 brought it: the version or "
                       "the setting is wrong")
    return ("memory-optimized" if flag else "latched"), "the capture's tempdb_metadata_memory_optimized setting"


def page_moments(snap: Any) -> tuple[dict[str, float], dict[str, float], float]:
    """tempdb's page latch wait time by kind of page (ms per second), the kind's share of the sampled waiters,
    and the instance's page latch wait ms per second.

    The page rows are waiters sampled once a second: by Little's law a page's share of them is its share of the
    page latch wait time, which sys.dm_os_wait_stats gives for the whole instance (every PAGELATCH mode).  GAM and
    SGAM pages are one kind (``gam_us`` holds both).
    """
    pages = evidence.waited_pages(snap)
    total = sum(p.waiters for p in pages)
    waits = snap.table("wait")
    page_ms = float(waits[waits["name"].str.fullmatch(r"PAGELATCH_(KP|SH|UP|EX|DT)")]["time_ms"].fillna(0).sum())
    per_s = page_ms / snap.interval_s
    shares = dict.fromkeys(HOLD_OF, 0.0)
    for p in pages:
        if p.database_id == evidence.TEMPDB_ID:
            kind = evidence.tempdb_kind(p)
            shares["GAM" if kind == "SGAM" else kind] += p.waiters / total
    return {kind: per_s * share for kind, share in shares.items()}, shares, per_s


def calibration_seed(created: float) -> int:
    """The seed of a fit's calibration runs, set by the capture's creations: a fit stays a pure function of its
    input, and the refits of the fitted model's own snapshots (whose counts differ) draw their runs afresh, so
    the ranges hold the calibration runs' noise as well as the capture's."""
    return CALIBRATION_SEED + int(round(created)) % 10_007


def model_moments(values: dict[str, Any], objects_per_s: float) -> tuple[float, float, dict[str, float]]:
    """(temporary objects per second, scheduler busy ms per second, page latch wait ms per second by kind) of one
    run of the model at ``values``."""
    values = dict(values, window_ms=_window_ms(values, CALIBRATION_OBJECTS / max(objects_per_s, 1.0) * 1000.0))
    result = result_of(simulate(build(values), values["seed"]), "tempdb", values, values["seed"])
    seconds = result.elapsed_ms / 1000.0
    kinds = result.extra["kind_waits"]
    waited = {"metadata": kinds["metadata"][1], "PFS": kinds["PFS"][1], "GAM": kinds["GAM"][1] + kinds["SGAM"][1]}
    busy = float(result.schedulers["busy_ms"].sum()) / seconds
    return result.throughput_per_s, busy, {kind: ms / seconds for kind, ms in waited.items()}


RUN_DIGITS = 4  # significant digits of the values a calibration run is made at (run_values)


def run_values(x: np.ndarray) -> list[float]:
    """The parameter values a calibration run is made at: exp(x), rounded to RUN_DIGITS significant digits.

    The model's runs are chaotic in their parameters (a change in the eighth digit reorders near-tied events, and
    the run's noise is drawn afresh), so the last digits of a linear solve, which differ from one CPU's BLAS to
    another's, would move the fit by the runs' noise; rounded, they cannot move a run.
    """
    return [float(f"{math.exp(float(v)):.{RUN_DIGITS}g}") for v in x]


def calibrate(values: dict[str, Any], objects_per_s: float, waits: dict[str, float],
              holds: tuple[str, ...], busy_ms_per_s: float | None = None,
              fit_think: bool = False) -> tuple[dict[str, float], str, float]:
    """The CPU per object, the ``holds`` and (with ``fit_think``) the time off the scheduler between batches at
    which the model gives the capture's objects per second, page latch wait per second of each kind whose hold is
    fitted and (given) the schedulers' busy ms per second (the method of simulated moments).

    Newton's method in log space on the model's own runs (one seed, set by the capture: calibration_seed; the
    fit is a pure function of its input), least squares where the moments outnumber the unknowns, each unknown
    moved by at most a factor of 4 a step, the Jacobian from forward differences; the best point tried is kept,
    and how close it came is said (and returned: the worst moment's miss, in log).  The time off the scheduler
    is kept above THINK_FLOOR_US (log space has no 0).
    """
    think = busy_ms_per_s is not None
    names = ("cpu_per_object_us", *(("think_us",) if fit_think else ()), *holds)
    kinds = [kind for kind, hold in HOLD_OF.items() if hold in holds]
    target = np.log([objects_per_s, *((busy_ms_per_s,) if think else ()), *(waits[k] for k in kinds)])
    low = np.log([THINK_FLOOR_US if n == "think_us" else PARAMS_BY_NAME[n].low for n in names])
    high = np.log([PARAMS_BY_NAME[n].high for n in names])
    tried: list[tuple[float, np.ndarray, float, float, dict[str, float]]] = []

    def moments(x: np.ndarray) -> np.ndarray:
        rate, busy, waited = model_moments(dict(values, **dict(zip(names, run_values(x)))), objects_per_s)
        got = [max(rate, 1e-9), *((max(busy, 1e-6),) if think else ()),
               *(max(waited[k], 1e-3 * waits[k]) for k in kinds)]
        miss = np.log(got) - target
        tried.append((float(np.max(np.abs(miss))), x.copy(), rate, busy, waited))
        return miss

    def size(f: np.ndarray) -> float:
        return float(np.sum(f * f))

    x = np.clip(np.log([max(values[n], THINK_FLOOR_US) if n == "think_us" else values[n] for n in names]), low, high)
    f = moments(x)
    for _ in range(CALIBRATION_STEPS):
        if np.max(np.abs(f)) < CALIBRATION_TOLERANCE:
            break
        jac = np.empty((len(target), len(names)))
        for j in range(len(names)):
            step = FD_STEP if x[j] + FD_STEP <= high[j] else -FD_STEP
            bumped = x.copy()
            bumped[j] += step
            jac[:, j] = (moments(bumped) - f) / step
        delta = np.clip(np.linalg.lstsq(jac, -f, rcond=None)[0], -MAX_STEP, MAX_STEP)
        for _ in range(BACKTRACKS):  # a step that does not bring the moments closer is halved
            trial = np.clip(x + delta, low, high)
            g = moments(trial)
            if size(g) < size(f):
                x, f = trial, g
                break
            delta = delta / 2.0
        else:
            break
    miss, best, rate, busy, waited = min(tried, key=lambda t: t[0])
    if rate <= 0:
        raise FitError("the tempdb model makes no temporary objects at any CPU per object tried, so it cannot be "
                       "calibrated to the capture's rate")
    said = ", ".join(([f"{busy:,.0f} scheduler ms/s of CPU against {busy_ms_per_s:,.0f}"] if think else [])
                     + [f"{waited[k]:,.1f} ms/s of {k} waits against {waits[k]:,.1f}" for k in kinds])
    return dict(zip(names, run_values(best))), (
        f"found on the model's own runs (method of simulated moments, seed {values['seed']}): {rate:,.0f} objects/s "
        f"against the capture's {objects_per_s:,.0f}" + (f", {said}" if said else "")
        + f"; the worst moment {math.expm1(miss):.1%} off"), miss


def _window_ms(values: dict[str, Any], want_ms: float) -> float:
    """A window of ``want_ms`` (at least 5 ms), cut so that the model's bound on the objects it holds stays under
    MAX_OBJECTS (:func:`check`)."""
    busy = min(values["sessions"], values["schedulers"])
    most = (MAX_OBJECTS - values["sessions"] - 1) * values["cpu_per_object_us"] / busy / 1000.0
    return float(min(max(want_ms, 5.0), most, 100_000.0))


def estimate(snap: Any, setup: dict[str, Any]) -> Any:
    """Sessions creating and dropping temporary objects: the holds and the CPU from the model's own runs.

    Read: the instance's user sessions (every database's sessions use tempdb; the sessions band covers how many
    create temporary objects), tempdb's data files, the schedulers, the version (@@VERSION) and whether the
    metadata is memory-optimized.  Counted: temporary objects per second from Temp Tables Creation Rate (it counts
    creations only, so the fit's objects are the creations and none is cached).  Fitted: the CPU per object and
    the hold of each kind of page whose waits the version latches exclusively (metadata, PFS, GAM and SGAM),
    where the model gives the capture's objects per second and each kind's page latch wait time (the page rows'
    shares of the instance's PAGELATCH wait time).  A kind with no waiters, or latched shared on this version,
    tells nothing of its hold: it is assumed at the model's value and banded.
    """
    settings: dict[str, tuple[Any, str]] = {}
    assumed: dict[str, tuple[str, str]] = {}
    caveats: list[str] = []
    if snap.setting("sessions"):
        sessions = int(snap.setting("sessions"))
        settings["sessions"] = (sessions, "the capture's sessions setting, the instance's user sessions: every "
                                          "database's sessions use tempdb, and the sessions band covers how many of "
                                          "them create temporary objects")
    else:
        sessions = int(setup["sessions"])
        settings["sessions"] = (sessions, f"{MISSING}no sessions setting, so sessions {sessions}")
    files = snap.setting("tempdb_data_files")
    if files is None:
        raise FitError("the capture has no tempdb_data_files setting: the fit needs tempdb's data files (SELECT "
                       "COUNT(*) FROM sys.master_files WHERE database_id = 2 AND type = 0; the capture script "
                       "prints it)")
    settings["files"] = (int(files), "the capture's tempdb_data_files setting (sys.master_files, database 2, ROWS)")
    sizes = snap.table("file_size")
    sizes = sizes[sizes["name"].str.startswith(f"{evidence.TEMPDB_ID}:")]["count"].dropna()
    if len(sizes):
        if len(sizes) != int(files):
            caveats.append(f"the capture lists {len(sizes)} tempdb data file size(s) but tempdb_data_files is "
                           f"{int(files)}: the fit takes the setting")
        if sizes.max() > 1.1 * sizes.min():
            caveats.append(f"tempdb's data files are not of equal size ({sizes.min():,.0f} to {sizes.max():,.0f} "
                           "MB): proportional fill sends more allocations to the files with more free space, which "
                           "the model's round robin leaves out, so the busiest file's pages wait more than it shows; "
                           "make them equal (Microsoft Learn, tempdb database)")
    schedulers, sched_how = evidence.schedulers(snap)
    settings["schedulers"] = (schedulers, sched_how)
    version, version_how = version_of(snap.setting("version"))
    if version is None:
        version = setup["version"]
        settings["version"] = (version, f"{MISSING}{version_how}, so {version!r}")
    else:
        settings["version"] = (version, version_how)
    if version == "2014":
        caveats.append("SQL Server before 2016: trace flag 1118 (uniform extents for every object) is assumed off, "
                       "as it is by default; a capture cannot tell (DBCC TRACESTATUS(1118) would), and with it on "
                       "the SGAM waits would be GAM waits")
    metadata, metadata_how = _metadata_setting(snap, version)
    settings["metadata"] = (metadata, metadata_how)
    behaviour = VERSIONS[version]

    created = snap.get("counter", TEMP_TABLES_CREATED)
    if not created > 0:
        raise FitError(f"the capture has no {TEMP_TABLES_CREATED} counter above 0 (SQLServer:General Statistics): "
                       "the fit needs the temporary objects created per second (capture with the script, which "
                       "reads it)")
    objects_per_s = created / snap.interval_s
    assumed["cached_share"] = (f"{TEMP_TABLES_CREATED} counts creations only, so the fit's objects are the "
                               "creations and none is a cached one: a cached reuse latches nothing the model counts "
                               "when an object has one page (it keeps that page and writes no system-table row)",
                               "Batch Requests/sec of the temporary-object workload alone against its creations")
    waits, shares, page_per_s = page_moments(snap)
    if sum(shares.values()) <= 0:
        raise FitError("the capture has no page rows on tempdb's pages: the fit needs the page latch waiters "
                       "sampled during the capture (the script's page rows, sys.dm_os_waiting_tasks once a second)")
    tempdb_share = sum(shares.values())
    unexpected = []
    if behaviour.pfs_mode == SH and shares["PFS"] >= UNEXPECTED_SHARE * tempdb_share:
        unexpected.append(f"{shares['PFS'] / tempdb_share:.0%} of tempdb's waiters were on PFS pages, which SQL "
                          "Server 2019 and later update under a shared latch")
    if behaviour.gam_mode == SH and shares["GAM"] >= UNEXPECTED_SHARE * tempdb_share:
        unexpected.append(f"{shares['GAM'] / tempdb_share:.0%} of tempdb's waiters were on GAM or SGAM pages, which "
                          "SQL Server 2022 updates under a shared latch")
    if metadata == "memory-optimized" and shares["metadata"] >= UNEXPECTED_SHARE * tempdb_share:
        unexpected.append(f"{shares['metadata'] / tempdb_share:.0%} of tempdb's waiters were on its system-table "
                          "pages, which memory-optimized metadata does not latch")
    if unexpected:
        raise FitError("; ".join(unexpected) + f": the model of a {version} server"
                       + (" with memory-optimized metadata" if metadata == "memory-optimized" else "")
                       + " has no such waits, so the capture contradicts it. Check the version setting and "
                         "SERVERPROPERTY('IsTempdbMetadataMemoryOptimized'), that tempdb's data files are of equal "
                         "size, and which objects wait there (sys.dm_os_waiting_tasks' resource_description with "
                         "sys.dm_db_page_info)")
    exclusive = {"metadata": metadata == "latched", "PFS": behaviour.pfs_mode != SH,
                 "GAM": behaviour.gam_mode != SH}
    holds = tuple(HOLD_OF[k] for k in HOLD_OF if exclusive[k] and shares[k] >= MIN_KIND_SHARE * tempdb_share)
    few: dict[str, float] = {}
    for kind, hold in HOLD_OF.items():
        if hold in holds:
            continue
        band = next(b for b in BANDS if b.param == hold)
        what = "a system-table write" if kind == "metadata" else f"a {kind} update"
        if exclusive[kind]:
            # Few waiters on pages the version latches exclusively: the hold is short enough to make few waits,
            # which bounds it from above and tells no more.  The band's low end agrees with them (the model's
            # default may make more waits than the capture shows, a model the capture contradicts); a value the
            # caller assumes (assume=, or a band's end) is taken as given, where it differs from the default.
            given = setup[hold] != PARAMS_BY_NAME[hold].default
            few[hold] = setup[hold] if given else band.low
            settings[hold] = (few[hold], f"{MISSING}{what}'s hold: {shares[kind] / tempdb_share:.1%} of tempdb's "
                                         f"sampled waiters were on those pages (under {MIN_KIND_SHARE:.0%}), which "
                                         "bounds the hold from above and tells no more, so "
                                         + ("the value assumed" if given else "the band's low end") +
                                         f" is taken ({band.measure} would tell)")
            continue
        why = ("the system tables are memory-optimized, so no latch is waited for" if kind == "metadata" else
               f"SQL Server {version} updates those pages under a shared latch, so no update waits for another")
        assumed[hold] = (f"the hold of {what}: {why}, which tells nothing of it", band.measure)
    left = sum(waits[k] for k in HOLD_OF if HOLD_OF[k] not in holds)
    if left > 0:
        caveats.append(f"{left:,.1f} ms/s of tempdb page latch waits on pages this version latches shared (or "
                       "memory-optimized metadata does not latch) are left out of the fit")

    evidence_lines = [f"{created:,.0f} temporary objects created ({TEMP_TABLES_CREATED}) in {snap.interval_s:g} s: "
                      f"{objects_per_s:,.0f} a second",
                      f"the instance's page latch waits were {page_per_s:,.1f} ms per second; by the page rows' shares "
                      "(Little's law: waiters sampled once a second) tempdb's were "
                      + ", ".join(f"{k} {waits[k]:,.1f}" for k in HOLD_OF) + " ms per second"]
    for name, label in ((ACTIVE_TEMP_TABLES, "active temporary tables at the second read"),
                        (TEMP_TABLES_FOR_DESTRUCTION, "temporary tables waiting to be destroyed (deferred drop, "
                                                      "whose pages the cleanup thread frees later: the model frees "
                                                      "them at the drop)")):
        if snap.has("counter", name):
            evidence_lines.append(f"{snap.get('counter', name):,.0f} {label} ({name})")
    versions = snap.get("counter", VERSION_KB)
    if versions > 0 or snap.get("counter", VERSION_STORE_KB) > 0:
        evidence_lines.append(
            f"the version store also lives in tempdb: {versions / snap.interval_s:,.0f} KB/s generated, "
            f"{snap.get('counter', VERSION_CLEANUP_KB) / snap.interval_s:,.0f} KB/s cleaned up, "
            f"{snap.get('counter', VERSION_STORE_KB):,.0f} KB held at the second read; its pages come from the same "
            "allocation pages, and the model charges their allocations to the temporary objects")
    caveats = evidence_lines + caveats + [
        "the page rows are samples: their shares carry a sampling error the ranges (refits of the model's exact "
        "page counts) leave out; a longer capture narrows it"]

    fitted: dict[str, tuple[float, str, str]] = {}
    bounds: dict = {}
    obs = evidence.latch_obs(snap, "BUFFER", "PAGELATCH")
    shared = evidence.shared_schedulers(sessions, schedulers)
    evidence.handoff(fitted, assumed, obs, setup["context_switch_us"], shared,
                     queued_us=evidence.runnable_delay_us(snap)[0], bounds=bounds)
    wakeup = fitted["wakeup_us"][0] if "wakeup_us" in fitted else setup["wakeup_us"]
    model = dict(setup, **few, sessions=sessions, files=int(files), schedulers=schedulers, version=version,
                 metadata=metadata, cached_share=0.0, wakeup_us=max(wakeup, PARAMS_BY_NAME["wakeup_us"].low),
                 seed=calibration_seed(created))
    cpu_ms, cpu_how = evidence.workload_cpu_ms(snap)
    busy_ms_per_s = cpu_ms / snap.interval_s
    if busy_ms_per_s > 0:
        # Little's law starts the search: each session's cycle (sessions over objects per second) is its CPU per
        # object, its page latch waits, its time queued for a CPU (the runnable tasks over the objects per second)
        # and the rest, time off the scheduler.
        cpu0 = busy_ms_per_s * 1000.0 / objects_per_s
        waited0 = sum(waits.values()) * 1000.0 / objects_per_s
        queued0 = float(snap.setting("runnable_tasks") or 0.0) * 1e6 / objects_per_s
        model["cpu_per_object_us"] = min(max(0.9 * cpu0, 1.0), 1e6)
        model["think_us"] = max(sessions / objects_per_s * 1e6 - cpu0 - waited0 - queued0, 10.0 * THINK_FLOOR_US)
    else:
        model["cpu_per_object_us"] = min(max(0.8 * min(sessions, schedulers) / objects_per_s * 1e6, 1.0), 1e6)
    busy = busy_ms_per_s if busy_ms_per_s > 0 else None
    found, note, miss = calibrate(dict(model, think_us=0.0), objects_per_s, waits, holds, busy)
    if busy is not None:
        # Sessions that loop with no time off the scheduler come first, the CPU per object held to the busy time
        # as well (least squares).  Where the model then misses a moment, or makes objects faster than the
        # capture, the sessions may have spent time off the schedulers: it is fitted too, and kept if it comes
        # closer.  Where not, none is taken: a capture whose schedulers are saturated cannot tell a little time
        # off from none.
        rate_at_none, _, _ = model_moments(dict(model, **found, think_us=0.0), objects_per_s)
        if miss > LOOP_TOLERANCE or rate_at_none > objects_per_s * math.exp(LOOP_TOLERANCE):
            tried = calibrate(model, objects_per_s, waits, holds, busy, fit_think=True)
            if tried[2] < miss:
                found, note, miss = tried
    fitted["cpu_per_object_us"] = (found["cpu_per_object_us"], "us",
                                   f"the CPU per batch at which the model with these holds makes {objects_per_s:,.0f} "
                                   f"objects/s ({note})")
    if busy_ms_per_s > 0:
        found.setdefault("think_us", 0.0)
        fitted["think_us"] = (found["think_us"], "us",
                              f"the time off the scheduler between a session's batches at which the model's schedulers "
                              f"are busy {busy_ms_per_s:,.0f} ms a second, as the capture's are ({cpu_how})"
                              + ("; with none the model gives every moment within "
                                 f"{math.expm1(LOOP_TOLERANCE):.0%} (or closer than with any), so none is taken: "
                                 "the sessions loop"
                                 if found["think_us"] <= 1.01 * THINK_FLOOR_US else ""))
    what = {"metadata_us": "a system-table write (each creation and drop) holds the system-table page",
            "pfs_us": "a page's update holds its file's PFS page", "gam_us": "an extent's (or mixed page's) update "
                                                                             "holds its file's GAM (or SGAM) page"}
    for hold in holds:
        kind = next(k for k, h in HOLD_OF.items() if h == hold)
        fitted[hold] = (found[hold], "us", f"{what[hold]}: the hold at which the model gives the capture's "
                                           f"{waits[kind]:,.1f} ms/s of {kind} page latch waits ({note})")
    assumed["pages_per_object"] = (f"data pages each temporary object fills ({setup['pages_per_object']} assumed)",
                                   next(b.measure for b in BANDS if b.param == "pages_per_object"))
    assumed["metadata_cpu_us"] = ("CPU of a system-table write outside the latch, which a capture does not split "
                                  "from the batch's CPU", "the same workload's CPU with memory-optimized metadata")
    if "think_us" not in fitted:
        assumed["think_us"] = ("time off the scheduler between batches (a client's round trip): with no scheduler "
                               "rows to tell it from the CPU, the sessions are assumed to loop, as a load tool does",
                               "the capture script's scheduler rows (sys.dm_os_schedulers' busy time)")
    assumed["hold_dist"] = ("the holds' spread (fixed assumed)", "a latch hold-time trace")
    return evidence.Point(fitted, settings, assumed, objects_per_s, bounds=bounds,
                          caveats=caveats)


def claims(clue: Any) -> list[str] | None:
    """PAGELATCH waits whose sampled waiters are at least half on tempdb's pages: allocation pages (PFS, GAM,
    SGAM) and its system tables' pages (metadata) alike."""
    if clue.family == "PAGELATCH" and evidence.tempdb_share(clue.snap) >= 0.5:
        return evidence.tempdb_pages_seen(clue.snap)
    return None


def standard_advice(snap: Any) -> list[str]:
    """Microsoft's tempdb advice read against the capture's file count, schedulers and version (named first: the
    rule's rank is 0, as the tempdb refusal it replaces came before every rule)."""
    return advice.tempdb_advice(snap)


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """What a server counts over the run: each batch is a request and a transaction and creates one temporary
    object unless it reuses a cached one (Temp Tables Creation Rate counts creations only); the page rows are
    the mean waiters a sample once a second would see on each page (Little's law: wait ms / 1000 a second);
    no temporary table waits for deferred destruction and no version is kept (the model has neither); tempdb's
    files (of equal size), metadata setting and version as the capture script prints them.  Active Temp Tables
    is left out: it is the instance's, and the model does not say how many objects other work holds."""
    units = float(result.extra.get("units", 0))
    share = float(cached_rate(values["cached_share"]))
    rows = [{"source": "counter", "name": BATCHES, "count": units},
            {"source": "counter", "name": TRANSACTIONS, "count": units},
            {"source": "counter", "name": VERSION_KB, "count": 0.0},
            {"source": "counter", "name": TEMP_TABLES_CREATED, "count": units * (1.0 - share)},
            {"source": "counter", "name": TEMP_TABLES_FOR_DESTRUCTION, "count": 0.0},
            {"source": "counter", "name": VERSION_STORE_KB, "count": 0.0},
            {"source": "counter", "name": VERSION_CLEANUP_KB, "count": 0.0}]
    rows += [{"source": "page", "name": page, "count": round(ms / 1000.0, 3)}
             for page, (_, ms) in sorted(result.extra.get("page_waits", {}).items())]
    rows += [{"source": "file_size", "name": f"2:{1 if f == 0 else f + 2}:ROWS", "count": float(FILE_MB)}
             for f in range(values["files"])]
    rows += [{"source": "setting", "name": "tempdb_data_files", "value": values["files"]},
             {"source": "setting", "name": "version", "value": VERSION_STRINGS[values["version"]]}]
    if VERSIONS[values["version"]].memory_optimized_ok:  # SERVERPROPERTY gives NULL before 2019: no row
        rows.append({"source": "setting", "name": "tempdb_metadata_memory_optimized",
                     "value": int(values["metadata"] == "memory-optimized")})
    return rows


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """A measurement window as long as the run should be (within the objects a run may hold)."""
    return {"window_ms": _window_ms(values, seconds * 1000.0)}


def next_files(fitted: dict[str, Any]) -> int:
    """The guidance's next step: one file per scheduler up to 8, then 4 more at a time (Microsoft Learn)."""
    goal = min(int(fitted["schedulers"]), 8)
    return min(goal if fitted["files"] < goal else fitted["files"] + 4, PARAMS_BY_NAME["files"].high)


def _memory_optimized_unless(fitted: dict[str, Any]) -> str:
    if fitted["metadata"] == "memory-optimized":
        return "tempdb's metadata is memory-optimized already"
    if not VERSIONS[fitted["version"]].memory_optimized_ok:
        return (f"memory-optimized tempdb metadata needs SQL Server 2019 or later (this server behaves as "
                f"{fitted['version']}): see version-2022")
    return ""


CHANGES = (
    Change(name="files", what="more tempdb data files (the guidance's next step)", value="the data files",
           param="files", sets=lambda fitted, given: {"files": int(given) if given is not None else next_files(fitted)},
           leaves_out="files of equal size, grown together: proportional fill sends more allocations to a file with "
                      "more free space, which the model's round robin leaves out; and the files' I/O"),
    Change(name="memory-optimized-metadata", what="memory-optimized tempdb metadata (SQL Server 2019 and later)",
           value="", sets=lambda fitted, given: {"metadata": "memory-optimized"}, unless=_memory_optimized_unless,
           leaves_out="turning it on needs a restart; with it on, one transaction cannot use memory-optimized tables "
                      "in a user database and tempdb's system tables both, and temporary tables take no columnstore "
                      "index (Microsoft Learn, tempdb database); the memory the system tables then take"),
    Change(name="version-2022", what="SQL Server 2022: GAM and SGAM updated under a shared latch", value="",
           sets=lambda fitted, given: {"version": "2022"},
           unless=lambda fitted: "the server is on SQL Server 2022 already" if fitted["version"] == "2022" else "",
           leaves_out="an upgrade changes more than the allocation pages (the optimizer, other features), none of "
                      "which the model has; the fitted holds and CPU are kept"),
    Change(name="cache-temp-objects", what="temporary objects cached (90% of batches reuse one)",
           value="the share of batches that reuse a cached object", param="cached_share",
           sets=lambda fitted, given: {"cached_share": float(given) if given is not None else 0.9},
           leaves_out="caching needs the object created in a stored procedure, trigger or function, with no named "
                      "constraints, no DDL after it is created (CREATE INDEX, ALTER TABLE) and a size below about "
                      "8 MB; rewriting the code to meet them"),
)

BANDS = (
    Band(param="sessions", low=SESSIONS_BAND[0], high=SESSIONS_BAND[1], relative=True,
         what="how many of the instance's user sessions create temporary objects (every database's sessions use "
              f"tempdb; up to {1 - SESSIONS_BAND[0]:.0%} of them may do no temporary-object work, which no counter "
              "tells apart)",
         measure="sys.dm_db_session_space_usage sampled during the capture (sessions whose "
                 "user_objects_alloc_page_count grows)"),
    Band(param="pages_per_object", low=1, high=8, what="the data pages each temporary object fills",
         measure="sys.dm_db_session_space_usage's user_objects_alloc_page_count over the creations, or the "
                 "temporary table's pages (sys.dm_db_partition_stats in tempdb)"),
    Band(param="pfs_us", low=ALLOCATION_BAND_US[0], high=ALLOCATION_BAND_US[1],
         what="a PFS page update's hold (no source measures it)", measure="a latch hold-time trace"),
    Band(param="gam_us", low=ALLOCATION_BAND_US[0], high=ALLOCATION_BAND_US[1],
         what="a GAM or SGAM page update's hold (no source measures it)", measure="a latch hold-time trace"),
    Band(param="metadata_us", low=METADATA_BAND_US[0], high=METADATA_BAND_US[1],
         what="a system-table write's hold under the page latch (no source measures it)",
         measure="a capture while the system tables are latched and waited on (waiters on 2:1:118)"),
)

PARAMS_BY_NAME = {p.name: p for p in PARAMS}

SCENARIO = Scenario(
    name="tempdb", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="temporary objects"),
    reported_waits=("PAGELATCH",),
    capture=Capture(session_param="sessions", rows=capture_rows),
    diagnosis=DiagnosisRule(label="tempdb allocation and metadata contention",
                            looks_like="PAGELATCH_UP or _EX, at least half the sampled waiters on tempdb's pages "
                                       "(PFS, GAM, SGAM or its system tables')", rank=0, claims=claims,
                            advice=standard_advice),
    estimate=estimate, size_run=size_run, size_params=("window_ms",),
    changes=CHANGES,
    bands=BANDS[:1] + (wakeup_band(*WAKEUP_BAND_US),) + BANDS[1:],
    # One page per object: the band's low end, which the capture's counts hold one way only (more pages make more
    # latch acquires, waits and switches than one, never fewer), where the chapter's eight would be contradicted by
    # a server whose objects fill one page.
    fit_defaults=(("pages_per_object", 1),),
    # A SQL Server 2019 server with 8 tempdb data files and its system tables on pages, 64 sessions on 16 schedulers
    # creating a one-page temporary table a batch (every physics parameter given, so that a change of the defaults
    # leaves it as it is), read twice after the model's warm-up.  Illustrative, not a source's.
    round_trip=RoundTrip(
        values=dict(version="2019", metadata="latched", files=8, sessions=64, schedulers=16, cached_share=0.0,
                    pages_per_object=1, cpu_per_object_us=500.0, think_us=0.0, pfs_us=10.0, gam_us=5.0,
                    metadata_us=25.0, hold_dist="fixed", metadata_cpu_us=0.0, metadata_pages=1, window_ms=3_000.0,
                    quantum_ms=4.0, policy="unfair", context_switch_us=2.0, wakeup_us=7.7, seed=45),
        window={"start_s": 0.3, "interval_s": 2.0}),
)
