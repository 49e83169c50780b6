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
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from models.engine import state
from models.engine.program import DISTRIBUTIONS, EX, FIXED, SH, UP, Program
from models.params import Param, ParameterError, common_params, latch_knobs
from models.scenarios.base import Capture, DiagnosisRule, Scenario, Throughput
from models.workload import LatchSpec, Workload

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
    Param("sessions", "int", 64, "", 1, 4_096, help="sessions creating, filling and dropping temporary tables in a loop"),
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


def cache_pattern(share: float) -> list[bool]:
    """Which objects of a repeating block are cached ones: ``share`` as a fraction with a small denominator."""
    rate = Fraction(share).limit_denominator(CACHE_BLOCK)
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


def _pages(prog: Program, values: dict[str, Any], file: int, first: int, count: int) -> None:
    """Allocate (or free) pages ``first`` to ``first + count - 1`` of an object in data file ``file``."""
    behaviour = VERSIONS[values["version"]]
    for page in range(first, first + count):
        if behaviour.mixed_extents and page < MIXED_PAGES:
            _visit(prog, values, sgam_latch(file), behaviour.gam_mode, values["gam_us"])
        elif page % PAGES_PER_EXTENT == 0:
            _visit(prog, values, gam_latch(file), behaviour.gam_mode, values["gam_us"])
        _visit(prog, values, pfs_latch(file), behaviour.pfs_mode, values["pfs_us"])


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
    start = prog.cpu(cpu_us / slices, DISTRIBUTIONS["exponential"])
    prog.yield_point()
    for _ in range(slices - 1):
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
    share = float(Fraction(values["cached_share"]).limit_denominator(CACHE_BLOCK))
    counts = dict.fromkeys(KINDS, 0.0)
    for cached, weight in ((False, 1.0 - share), (True, share)):
        first = 1 if cached else 0
        for page in range(first, values["pages_per_object"]):
            if behaviour.mixed_extents and page < MIXED_PAGES:
                counts["SGAM"] += 2 * weight
            elif page % PAGES_PER_EXTENT == 0:
                counts["GAM"] += 2 * weight
            counts["PFS"] += 2 * weight
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
        for latch in range(waits.shape[0]):
            count = float(waits[latch, :, state.LW_COUNT].sum())
            if count > 0:
                by_page[page_name(values, latch)] = (count, float(waits[latch, :, state.LW_TIME].sum()) / 1000.0)
        by_kind = {kind: [0.0, 0.0, 0] for kind in KINDS}
        for latch in range(waits.shape[0]):
            entry = by_kind[latch_kind(values, latch)]
            entry[0] += float(waits[latch, :, state.LW_COUNT].sum())
            entry[1] += float(waits[latch, :, state.LW_TIME].sum()) / 1000.0
            entry[2] += int(final.latches[latch, state.L_ACQ])
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
    visits = sum(visits_per_object(values).values())
    return Workload(
        program=prog, worker_start=starts, worker_scheduler=[w % values["schedulers"] for w in range(n)],
        worker_arrival_us=[0.0] * n, worker_daemon=[False] * n, worker_kind=["session"] * n,
        latches=latches, schedulers=values["schedulers"], quantum_us=values["quantum_ms"] * 1000.0,
        context_switch_us=values["context_switch_us"], wakeup_us=values["wakeup_us"],
        expected_acquires=max(1, math.ceil(objects * visits)),  # sizes the event budget
        window_us=values["window_ms"] * 1000.0, count_units=True, collect=_collect(values),
        extra={"visits_per_object": visits_per_object(values), "block_objects": len(addresses),
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


# ----------------------------------------------------------------------------- the fit (issue 45: being written)


def estimate(snap: Any, setup: dict[str, Any]) -> Any:
    """A tempdb capture's estimates (being written)."""
    from models.fitting.evidence import FitError
    raise FitError("the tempdb fit is not written yet")


def claims(clue: Any) -> list[str] | None:
    """Page latch waits mostly on tempdb's pages (being written: the diagnosis still refuses them first)."""
    return None


def capture_rows(values: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """A capture's extra rows (being written)."""
    return []


def size_run(values: dict[str, Any], visits: int, seconds: float) -> dict[str, Any]:
    """A measurement window as long as the run should be."""
    return {"window_ms": min(seconds * 1000.0, 100_000.0)}


SCENARIO = Scenario(
    name="tempdb", doc=__doc__.strip().splitlines()[0], params=PARAMS, build=build, check=check,
    throughput=Throughput(counts="temporary objects"),
    reported_waits=("PAGELATCH",),
    capture=Capture(session_param="sessions", rows=capture_rows),
    diagnosis=DiagnosisRule(label="tempdb allocation and metadata contention",
                            looks_like="PAGELATCH_UP or _EX, most waiters on tempdb's pages", rank=1, claims=claims),
    estimate=estimate, size_run=size_run, size_params=("window_ms",),
    changes=(),
)
