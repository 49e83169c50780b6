"""A server's background laid over a snapshot: what a capture of a real instance holds beside the work modelled.

A model run's snapshot (:func:`models.fitting.capture.from_model`) holds only
the modelled workload, under the model's names, with every counter exact.  A
DBA's capture (``book/sql/capture_snapshot.sql`` with its defaults) holds the
whole instance: other sessions' CPU, batches and waits, the idle waits of
system tasks, a long wait that began before the first read (time, no count),
other latch classes and spinlocks, the database files' I/O, the sampled page
latch waiters, the DBA's own database, index and version, and no extended
events.  :func:`with_background` lays such a :class:`Background` over a
snapshot and :func:`server_only` writes one with no model run at all, so the
fit can be tried on captures that look like a server's.  Everything here is a
pure function of its inputs and a seed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from models.counters.snapshot import (
    ACTIVE_TEMP_TABLES, BATCHES, CPU_SLACK, DELTA_ROWGROUPS_CREATED, FORCED_GRANTS, GRANT_TIMEOUTS, NUMBERS,
    ROWGROUPS_COMPRESSED, TEMP_TABLES_CREATED, TEMP_TABLES_FOR_DESTRUCTION, TEMPDB_ID, TRANSACTIONS,
    VERSION_CLEANUP_KB, VERSION_KB, VERSION_STORE_KB, Snapshot, setting_range,
)

MODEL_INDEX = "dbo.orders.PK_orders"  # the index a model run's capture names (last_page_insert.capture_rows)
MODEL_DATABASE = "latch_models"       # the database a model run's capture names (capture.MODEL_DATABASE)

# @@VERSION first lines of real builds (Microsoft's build lists), for the version setting.
SQL_2016 = "Microsoft SQL Server 2016 (SP3) (KB5003279) - 13.0.6300.2 (X64)"
SQL_2017_CU13 = "Microsoft SQL Server 2017 (RTM-CU13) (KB4466404) - 14.0.3048.4 (X64)"
SQL_2019 = "Microsoft SQL Server 2019 (RTM-CU22) (KB5027702) - 15.0.4322.2 (X64)"
SQL_2022 = "Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4115.5 (X64)"

# System tasks' idle waits: wait type -> (tasks that wait on it, ms each of their waits lasts).  Each task waits
# back to back, so the type accrues wall-clock time; all are in the fit's BENIGN list.
IDLE_WAITS: dict[str, tuple[int, float]] = {
    "LAZYWRITER_SLEEP": (1, 1_000.0),
    "SLEEP_TASK": (4, 60.0),
    "XE_TIMER_EVENT": (2, 5_000.0),
    "SQLTRACE_INCREMENTAL_FLUSH_SLEEP": (1, 4_000.0),
    "REQUEST_FOR_DEADLOCK_SEARCH": (1, 5_000.0),
    "LOGMGR_QUEUE": (1, 40.0),
    "DIRTY_PAGE_POLL": (1, 100.0),
    "CHECKPOINT_QUEUE": (1, 30_000.0),
    "XE_DISPATCHER_WAIT": (1, 15_000.0),
    "SP_SERVER_DIAGNOSTICS_SLEEP": (1, 5_000.0),
    "QDS_PERSIST_TASK_MAIN_LOOP_SLEEP": (1, 60_000.0),
    "BROKER_TO_FLUSH": (1, 1_000.0),
}
# An availability group's idle waits, for a replica's background.
AG_IDLE_WAITS: dict[str, tuple[int, float]] = {
    "HADR_FABRIC_CALLBACK": (2, 10_000.0),
    "PREEMPTIVE_HADR_LEASE_MECHANISM": (1, 5_000.0),
    "HADR_WORK_QUEUE": (2, 1_000.0),
    "HADR_TIMER_TASK": (1, 1_000.0),
}
# Latch classes other work waits on now and then: class -> (waits per second, ms per wait before the signal).
OTHER_LATCHES: dict[str, tuple[float, float]] = {
    "ACCESS_METHODS_DATASET_PARENT": (3.0, 0.4),
    "LOG_MANAGER": (0.5, 2.0),
    "ACCESS_METHODS_HOBT_VIRTUAL_ROOT": (1.0, 0.2),
    "FGCB_ADD_REMOVE": (0.2, 1.5),
}
# Spinlocks any busy instance moves: name -> (collisions per second, spins per collision, backoffs per collision).
OTHER_SPINLOCKS: dict[str, tuple[float, float, float]] = {
    "LOCK_HASH": (200.0, 150.0, 0.02),
    "XDESMGR": (50.0, 200.0, 0.05),
    "SOS_CACHESTORE": (30.0, 80.0, 0.01),
    "SOS_SCHEDULER": (40.0, 60.0, 0.01),
}

SIGNAL_ONLY = frozenset({"SOS_SCHEDULER_YIELD"})  # waits that are all runnable-queue time (no resource wait)
BUFFER_WAITS = ("PAGELATCH_", "PAGEIOLATCH_")   # wait types sys.dm_os_latch_stats counts under BUFFER
MAX_PAGE_ROWS = 20                              # the capture script keeps the 20 busiest pages
COUNTERS = (BATCHES, TRANSACTIONS, VERSION_KB, ROWGROUPS_COMPRESSED, DELTA_ROWGROUPS_CREATED)  # the script's order
# The tempdb counters the script prints after those (a model run's capture of tempdb states them; other backgrounds
# add none, as a capture from before the script read them has none).
TEMPDB_COUNTERS = (TEMP_TABLES_CREATED, TEMP_TABLES_FOR_DESTRUCTION, ACTIVE_TEMP_TABLES, VERSION_STORE_KB,
                   VERSION_CLEANUP_KB)
COUNTER_ORDER = COUNTERS + TEMPDB_COUNTERS
# The capture script's output order: settings, then one group per source (book/sql/capture_snapshot.sql).
SETTING_ORDER = ("interval_s", "schedulers", "maxdop", "sessions", "database_sessions", "database_cpu_ms",
                 "request_dop", "max_server_memory_mb", "version",
                 "database", "database_id", "sql_memory_model", "runnable_tasks", "tempdb_data_files",
                 "tempdb_metadata_memory_optimized", "page_samples")
SOURCE_ORDER = ("latch", "wait", "spinlock", "xevent", "scheduler", "counter", "index", "index_tree", "index_insert",
                "index_update", "index_allocation", "semaphore", "file_write", "file_read", "page", "file_size")
TIMED = ("latch", "wait", "scheduler", "index", "index_tree", "file_write", "file_read")  # bigint ms in the DMVs


@dataclass(frozen=True)
class Background:
    """What the rest of a SQL Server instance did over a capture, and the names the DBA's capture carries."""

    # --- the DBA's names and server settings
    database: str = "SalesDB"
    """The captured database's name (replaces the model's latch_models)."""
    database_id: int = 7
    """That database's DB_ID() (5 and up: a user database)."""
    index_name: str = "dbo.Sales.PK_Sales"
    """schema.table.index that replaces the model's index name in every index and index_* row."""
    version: str = SQL_2019
    """@@VERSION's first line (replaces the model's)."""
    sql_memory_model: str = "CONVENTIONAL"
    """sys.dm_os_sys_info sql_memory_model_desc, when the run does not state one."""
    max_server_memory_mb: int = 229_376
    """max server memory (MB), when the run does not state one (a run that does keeps its own)."""
    tempdb_data_files: int = 8
    """tempdb's data files (their file rows are 2:1:ROWS and 2:3:ROWS onwards; 2:2 is its log)."""
    maxdop: int | None = None
    """The server's max degree of parallelism setting (None: the run's)."""
    other_request_dop: int = 1
    """The largest dop of other work's requests (request_dop becomes the larger of it and the run's)."""
    # --- the other work on the instance
    other_sessions: int = 0
    """User sessions of other work, added to the sessions setting."""
    other_database_sessions: int = 0
    """How many of those are in the captured database, added to the database_sessions setting too."""
    other_database_cpu_share: float = 0.0
    """The share of other work's CPU that those sessions used, added to the database_cpu_ms setting too."""
    other_cpu_share: float = 0.0
    """Other work's CPU as a share of the schedulers' capacity, added to each scheduler row (capped at the interval)."""
    other_switches_per_cpu_ms: float = 2.0
    """Context switches other work adds per ms of its CPU (quantum ends, yields), beside one per wait it ends."""
    other_batches_per_s: float = 0.0
    """Other work's batches per second, added to Batch Requests/sec (the instance's counter)."""
    other_transactions_per_s: float = 0.0
    """Other work's transactions in the captured database, added to Transactions/sec (that database's counter)."""
    other_version_kb_per_s: float = 0.0
    """Row versions other work generates (KB/s), added to Version Generation rate (KB/s)."""
    other_waits: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Other work's waits: wait type -> (waits per second, ms each waits for its resource, before its signal)."""
    runnable_delay_ms: float = 0.0
    """Mean time a woken task waits in a runnable queue for its CPU: every added wait's signal wait per wait."""
    delay_model_waits: bool = False
    """Whether the run's own waiters queue for a CPU too (runnable_delay_ms added to their wait and signal time)."""
    other_buffer_acquires_per_s: float = 0.0
    """Other work's BUFFER latch acquires per second (added to an xevent BUFFER row, if the capture keeps one)."""
    other_indexes: Mapping[str, tuple[float, float, float, float]] = field(default_factory=dict)
    """Indexes of the captured database other work uses: name -> (page latch waits/s, ms per wait, leaf inserts/s,
    leaf updates/s); one named like the run's index adds to its rows."""
    updates_index: str | None = None
    """An index the run's transactions update in place (an index_update row, one update per transaction)."""
    grant_timeouts_per_s: float = 0.0
    """Memory-grant time-outs per second (semaphore timeout_error_count)."""
    forced_grants_per_s: float = 0.0
    """Forced memory grants per second (semaphore forced_grant_count)."""
    # --- the instance's own tasks and history
    idle_waits: Mapping[str, tuple[int, float]] = field(default_factory=lambda: dict(IDLE_WAITS))
    """System tasks' idle waits: wait type -> (tasks, ms per wait); each accrues wall-clock time."""
    long_waits: Mapping[str, float] = field(default_factory=dict)
    """Waits begun before the first read and ended in the interval: wait type -> ms (a row with time and count 0)."""
    other_latches: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(OTHER_LATCHES))
    """Other latch classes: class -> (waits per second, ms per wait); their waits are LATCH_EX waits too."""
    other_spinlocks: Mapping[str, tuple[float, float, float]] = field(default_factory=lambda: dict(OTHER_SPINLOCKS))
    """Other spinlocks: name -> (collisions per second, spins per collision, backoffs per collision)."""
    # --- the page latch waiters sampled, and the files' I/O
    page_samples: bool = True
    """Whether the capture sampled page latch waiters once a second (the script's default): page rows and setting."""
    hot_pages: tuple[int, int] = (392_417, 1_864)
    """The captured index's last page at the first read (a new one every leaf allocation) and its root page."""
    other_pages: Mapping[str, float] = field(default_factory=dict)
    """Where other work's page latch waiters wait: db:file:page -> weight (tempdb's and other databases' pages)."""
    commits_per_log_write: float = 1.5
    """Transactions of the captured database per write to its log file (group commit)."""
    log_write_ms: float | None = None
    """Stall per write to the captured database's log (None: WRITELOG's ms in other_waits, else 0.4 ms)."""
    other_log_file: str | None = None
    """db_id:file_id:LOG of another database whose commits other work's WRITELOG waits are (None: the captured
    database's own log, whose writes then follow its Transactions/sec)."""
    data_reads_per_s: float = 2.0
    """Data-file reads per second beside one per page read wait (read-ahead, checkpoints' reads)."""
    data_read_ms: float | None = None
    """Stall per data-file read (None: PAGEIOLATCH_SH's ms per wait in other_waits, else 2.0 ms)."""
    data_writes_per_s: float = 10.0
    """Data-file writes per second of the captured database (checkpoint, lazy writer)."""
    data_write_ms: float = 1.5
    """Stall per data-file write."""
    tempdb_writes_per_s: float = 5.0
    """tempdb data-file writes per second, spread over its files."""
    whole_ms: bool = True
    """Times as whole milliseconds, as the DMVs' bigint columns give them."""
    drop_xevents: bool = True
    """Remove every xevent row (the capture script's default is no extended-events session)."""

    def __post_init__(self) -> None:
        """Refuse a background no server could have, so every capture made from one parses."""
        problems = []
        if not 5 <= self.database_id <= setting_range("database_id")[1]:
            problems.append(f"database_id={self.database_id}: a user database's id is 5 to 32,767")
        if not self.database or MODEL_DATABASE in self.database:
            problems.append(f"database={self.database!r}: give the DBA's database name")
        if self.index_name.count(".") < 2 or MODEL_INDEX in self.index_name:
            problems.append(f"index_name={self.index_name!r}: give schema.table.index")
        if not 0.0 <= self.other_cpu_share < 1.0:
            problems.append(f"other_cpu_share={self.other_cpu_share}: use a share from 0 to below 1")
        if not 1 <= self.other_request_dop <= setting_range("request_dop")[1] or not (
                self.maxdop is None or 0 <= self.maxdop <= setting_range("maxdop")[1]):
            problems.append(f"maxdop={self.maxdop}, other_request_dop={self.other_request_dop}: a dop is 1 to "
                            f"{setting_range('request_dop')[1]} (maxdop 0: as many as schedulers)")
        for item in dataclasses.fields(self):  # every count, rate, share and time
            value = getattr(self, item.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not value >= 0:
                problems.append(f"{item.name}={value}: use 0 or more")
        for name, (per_s, ms) in {**self.other_waits, **self.other_latches}.items():
            if not (per_s >= 0 and ms >= 0):
                problems.append(f"{name}=({per_s}, {ms}): rates and times are 0 or more")
        for name in self.other_waits:
            if name.startswith("LATCH_"):
                problems.append(f"other_waits names {name}: a non-buffer latch wait has a class, so give it in "
                                "other_latches (its waits are LATCH_EX waits too)")
        for name in SIGNAL_ONLY & set(self.other_waits):
            if self.other_waits[name][1] != 0:
                problems.append(f"{name}: all of its wait is the runnable delay, so its resource ms must be 0")
        if any(not ms > 0 or tasks < 0 for tasks, ms in self.idle_waits.values()):
            problems.append("idle_waits: each needs 0 or more tasks and a wait above 0 ms")
        if any(not ms > 0 for ms in self.long_waits.values()):
            problems.append("long_waits: each long wait lasts more than 0 ms")
        if not self.commits_per_log_write > 0:
            problems.append("commits_per_log_write must be above 0")
        if not 1 <= self.tempdb_data_files <= 1_000:
            problems.append(f"tempdb_data_files={self.tempdb_data_files}: use 1 to 1,000")
        if self.other_log_file is not None and (not self.other_log_file.endswith(":LOG")
                                                or self.other_log_file.startswith(f"{self.database_id}:")):
            problems.append(f"other_log_file={self.other_log_file!r}: name another database's log, db_id:file_id:LOG")
        for page in self.other_pages:
            if len(page.split(":")) != 3 or not all(p.isdigit() for p in page.split(":")):
                problems.append(f"other_pages {page!r}: name a page db_id:file_id:page_id")
        if problems:
            raise ValueError("background refused: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON data (tuples as lists)."""
        return json_ready(dataclasses.asdict(self))


def json_ready(value: Any) -> Any:
    """``value`` with tuples made lists and mappings made dicts, for json.dumps."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


# ----------------------------------------------------------------------------- rows as a table keyed by source and name


class _Rows:
    """A snapshot's rows as a dict keyed (source, name), added to in place; NaN where a source has no column."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.rows: dict[tuple[str, str], dict[str, float]] = {}
        for row in frame.itertuples(index=False):
            self.rows[(str(row.source), str(row.name))] = {c: float(getattr(row, c)) for c in NUMBERS}

    def get(self, source: str, name: str, column: str = "count") -> float:
        """A cell, 0.0 when the row or the value is absent."""
        value = self.rows.get((source, name), {}).get(column, math.nan)
        return 0.0 if math.isnan(value) else value

    def add(self, source: str, name: str, **columns: float) -> None:
        """Add to a row's columns (creating it); ``max_time_ms`` keeps the larger value instead."""
        row = self.rows.setdefault((source, name), {c: math.nan for c in NUMBERS})
        for column, value in columns.items():
            old = row[column]
            if column == "max_time_ms":
                row[column] = value if math.isnan(old) else max(old, value)
            else:
                row[column] = value if math.isnan(old) else old + value

    def names(self, source: str) -> list[str]:
        return [name for (s, name) in self.rows if s == source]

    def drop(self, source: str) -> None:
        for key in [k for k in self.rows if k[0] == source]:
            del self.rows[key]

    def rename(self, source: str, old: str, new: str) -> None:
        if (source, old) in self.rows:
            self.rows[(source, new)] = self.rows.pop((source, old))

    def frame(self, whole_ms: bool) -> pd.DataFrame:
        """The rows in the capture script's order, rows that did not move left out (but schedulers, counters,
        semaphores, which the script always prints)."""
        out = []
        for (source, name), row in self.rows.items():
            cells = dict(row)
            for column in ("time_ms", "max_time_ms", "signal_time_ms"):
                if not math.isnan(cells[column]):
                    cells[column] = float(np.round(cells[column])) if whole_ms and source in TIMED else \
                        round(cells[column], 3)
            for column in ("count", "spins", "backoffs"):
                if not math.isnan(cells[column]):
                    cells[column] = float(round(cells[column]))
            moved = any(not math.isnan(cells[c]) and cells[c] != 0 for c in ("count", "time_ms", "spins", "backoffs"))
            if moved or source in ("scheduler", "counter", "semaphore"):
                out.append({"source": source, "name": name, **cells})
        frame = pd.DataFrame(out, columns=["source", "name", *NUMBERS])
        return _ordered(frame)


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as the script prints them: by source group; schedulers by id, counters and semaphores in a fixed
    order, page rows by count, every other source by time then count, largest first, then name."""
    def key(row: pd.Series) -> tuple:
        source = row["source"]
        group = SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER)
        time = 0.0 if pd.isna(row["time_ms"]) else row["time_ms"]
        count = 0.0 if pd.isna(row["count"]) else row["count"]
        if source == "scheduler":
            return (group, int(row["name"]) if str(row["name"]).isdigit() else 0, 0.0, 0.0, row["name"])
        if source == "counter":
            return (group, COUNTER_ORDER.index(row["name"]) if row["name"] in COUNTER_ORDER else len(COUNTER_ORDER),
                    0.0, 0.0, row["name"])
        if source in ("semaphore", "file_size"):
            return (group, 0, 0.0, 0.0, row["name"])
        return (group, 0, -time, -count, row["name"])

    if frame.empty:
        return frame
    order = sorted(range(len(frame)), key=lambda k: key(frame.iloc[k]))
    return frame.iloc[order].reset_index(drop=True)


# ----------------------------------------------------------------------------- the background, step by step


def _total_ms(rng: np.random.Generator, waits: float, mean_ms: float) -> float:
    """The summed time of ``waits`` waits of mean ``mean_ms`` each (exponential, so a gamma sum)."""
    return float(rng.gamma(waits, mean_ms)) if waits > 0 and mean_ms > 0 else 0.0


def _delay_model_waits(rows: _Rows, delay_ms: float, budget_ms: float | None = None) -> None:
    """The run's own waiters queue for a CPU too: each wait gains ``delay_ms`` of wait and signal time, and the
    latch and index rows that count the same waits gain as much.

    The sessions cannot wait longer than the interval: with ``budget_ms`` (sessions times the interval) the delay
    is cut so that the run's waits stay within 95% of it, as a server's would (its sessions would wait less
    elsewhere, which an overlay cannot show).
    """
    if budget_ms is not None:
        waited = sum(rows.get("wait", n, "time_ms") for n in rows.names("wait"))
        waits = sum(rows.get("wait", n) for n in rows.names("wait"))
        if waits > 0:
            delay_ms = min(delay_ms, max(0.95 * budget_ms - waited, 0.0) / waits)
    buffer_ms = latch_ms = 0.0
    for name in rows.names("wait"):
        count = rows.get("wait", name)
        if count <= 0:
            continue
        extra = count * delay_ms
        rows.add("wait", name, time_ms=extra, signal_time_ms=extra)
        if name.startswith(BUFFER_WAITS):
            buffer_ms += extra
        elif name.startswith("LATCH_"):
            latch_ms += extra
    if buffer_ms and ("latch", "BUFFER") in rows.rows:
        rows.add("latch", "BUFFER", time_ms=buffer_ms)
    classes = {n: rows.get("latch", n) for n in rows.names("latch") if n != "BUFFER" and rows.get("latch", n) > 0}
    total = sum(classes.values())
    for name, count in classes.items():
        rows.add("latch", name, time_ms=latch_ms * count / total)
    for source in ("index", "index_tree"):
        for name in rows.names(source):
            rows.add(source, name, time_ms=rows.get(source, name) * delay_ms)


def _rename(rows: _Rows, settings: dict[str, Any], bg: Background) -> None:
    """The DBA's names: the model's index, database and version become the background's."""
    for source in ("index", "index_tree", "index_insert", "index_update", "index_allocation"):
        names = rows.names(source)
        model = [n for n in names if n == MODEL_INDEX or n.startswith("dbo.orders.")]
        if len(model) > 1:
            raise ValueError(f"the snapshot names {len(model)} model indexes in its {source} rows: "
                             "rename one at a time")
        for name in model:
            rows.rename(source, name, bg.index_name)
    settings["database"], settings["database_id"] = bg.database, bg.database_id
    stated = str(settings.get("version", ""))
    if not stated.startswith("Microsoft SQL Server") or "latch-models" in stated:  # a run that states a server's
        settings["version"] = bg.version                                        # version (tempdb's) keeps it
    settings.setdefault("max_server_memory_mb", bg.max_server_memory_mb)
    settings.setdefault("sql_memory_model", bg.sql_memory_model)
    settings.setdefault("tempdb_data_files", bg.tempdb_data_files)  # a run of tempdb's files states its own
    if bg.maxdop is not None:
        settings["maxdop"] = bg.maxdop
    settings["request_dop"] = max(int(settings.get("request_dop") or 0), bg.other_request_dop)
    if "sessions" in settings:  # the script counts the captured database's sessions apart (sys.dm_exec_sessions)
        settings["database_sessions"] = int(settings["sessions"]) + bg.other_database_sessions
    if "sessions" in settings or bg.other_sessions:
        settings["sessions"] = int(settings.get("sessions") or 0) + bg.other_sessions
        if settings["sessions"] > setting_range("sessions")[1]:
            raise ValueError(f"{settings['sessions']:,} sessions with the background's: a capture states at most "
                             f"{setting_range('sessions')[1]:,}")


def _wait(rows: _Rows, rng: np.random.Generator, name: str, waits: float, resource_ms: float, delay_ms: float,
          max_hint_ms: float) -> float:
    """Add ``waits`` waits of ``resource_ms`` mean (plus the runnable delay, all signal wait); returns their ms."""
    if waits <= 0:
        return 0.0
    resource = _total_ms(rng, waits, resource_ms)
    signal = waits * delay_ms
    longest = max(max_hint_ms, (resource_ms + delay_ms) * float(rng.uniform(20.0, 200.0)))
    rows.add("wait", name, count=waits, time_ms=resource + signal, signal_time_ms=signal, max_time_ms=longest)
    return resource + signal


def _other_waits(rows: _Rows, rng: np.random.Generator, bg: Background, interval_s: float) -> tuple[float, float]:
    """Other work's waits, other latch classes and indexes, idle and long waits; returns (waits ended, page latch
    ms of other work) for the context switches and the page samples."""
    ended = 0.0
    page_latch_ms = 0.0
    for name, (per_s, resource_ms) in bg.other_waits.items():
        waits = float(rng.poisson(per_s * interval_s))
        ms = _wait(rows, rng, name, waits, resource_ms, bg.runnable_delay_ms, 0.0)
        ended += waits
        if name.startswith(BUFFER_WAITS):
            rows.add("latch", "BUFFER", count=waits, time_ms=ms, max_time_ms=rows.get("wait", name, "max_time_ms"))
        if name.startswith("PAGELATCH_"):
            page_latch_ms += ms
    for name, (per_s, resource_ms) in bg.other_latches.items():
        waits = float(rng.poisson(per_s * interval_s))
        if waits <= 0:
            continue
        ms = _wait(rows, rng, "LATCH_EX", waits, resource_ms, bg.runnable_delay_ms, 0.0)
        rows.add("latch", name, count=waits, time_ms=ms, max_time_ms=(resource_ms + bg.runnable_delay_ms) * 50.0)
        ended += waits
    for name, (per_s, resource_ms, inserts_per_s, updates_per_s) in bg.other_indexes.items():
        waits = float(rng.poisson(per_s * interval_s))
        ms = _wait(rows, rng, "PAGELATCH_EX", waits, resource_ms, bg.runnable_delay_ms, 0.0)
        if waits:
            rows.add("latch", "BUFFER", count=waits, time_ms=ms)
            rows.add("index", name, count=waits, time_ms=ms)
            tree = float(rng.binomial(int(waits), 0.1))
            if tree:
                rows.add("index_tree", name, count=tree, time_ms=ms * tree / waits)
        inserts = float(rng.poisson(inserts_per_s * interval_s))
        updates = float(rng.poisson(updates_per_s * interval_s))
        if inserts:
            rows.add("index_insert", name, count=inserts)
            rows.add("index_allocation", name, count=float(rng.poisson(inserts / 80.0)))
        if updates:
            rows.add("index_update", name, count=updates)
        ended += waits
    interval_ms = interval_s * 1000.0
    for name, (tasks, period_ms) in bg.idle_waits.items():
        waits = 0.0
        for _ in range(tasks):  # each task waits back to back from a random phase: a wait starts as one ends
            phase = float(rng.uniform(0.0, period_ms))
            waits += math.floor((interval_ms - phase) / period_ms) + 1 if phase < interval_ms else 0
        if waits:
            signal = waits * bg.runnable_delay_ms
            rows.add("wait", name, count=waits, time_ms=waits * period_ms + signal, signal_time_ms=signal,
                     max_time_ms=period_ms * float(rng.uniform(1.0, 3.0)))
            ended += waits
    for name, ms in bg.long_waits.items():  # counted when it began (before the first read), timed when it ended
        rows.add("wait", name, count=0.0, time_ms=ms, signal_time_ms=0.0, max_time_ms=ms * float(rng.uniform(1.0, 2.0)))
    for name, (per_s, spins, backoffs) in bg.other_spinlocks.items():
        collisions = float(rng.poisson(per_s * interval_s))
        if collisions:
            rows.add("spinlock", name, count=collisions, time_ms=0.0, spins=float(round(collisions * spins)),
                     backoffs=float(rng.poisson(collisions * backoffs)))
    return ended, page_latch_ms


def _schedulers(rows: _Rows, rng: np.random.Generator, bg: Background, interval_s: float, ended: float) -> None:
    """Other work's CPU on every scheduler row (never past the interval), and its context switches."""
    names = rows.names("scheduler")
    if not names:
        return
    interval_ms = interval_s * 1000.0
    added = []
    for name in names:
        room = max(interval_ms - rows.get("scheduler", name, "time_ms"), 0.0)
        added.append(min(bg.other_cpu_share * interval_ms * float(rng.uniform(0.85, 1.15)), room))
    cpu = float(sum(added))
    switches = int(round(cpu * bg.other_switches_per_cpu_ms + ended))
    weights = np.array(added) / cpu if cpu > 0 else np.full(len(names), 1.0 / len(names))
    spread = rng.multinomial(switches, weights) if switches > 0 else np.zeros(len(names), dtype=int)
    for name, ms, n in zip(names, added, spread):
        rows.add("scheduler", name, count=float(n), time_ms=ms)
        if rows.get("scheduler", name, "time_ms") > interval_ms * CPU_SLACK:  # a run's own row past the slack
            raise ValueError(f"scheduler {name} has more CPU than the interval: the snapshot given is inconsistent")


def _counters(rows: _Rows, rng: np.random.Generator, bg: Background, interval_s: float) -> None:
    """The five counters the script always prints, with other work's batches, transactions and versions; the
    semaphore rows; the run's updates on ``updates_index``."""
    model_transactions = rows.get("counter", TRANSACTIONS)
    extra = {BATCHES: float(rng.poisson(bg.other_batches_per_s * interval_s)),
             TRANSACTIONS: float(rng.poisson(bg.other_transactions_per_s * interval_s)),
             VERSION_KB: round(bg.other_version_kb_per_s * interval_s * float(rng.uniform(0.95, 1.05)))}
    for name in COUNTERS:
        rows.add("counter", name, count=extra.get(name, 0.0))
    rows.add("semaphore", FORCED_GRANTS, count=float(rng.poisson(bg.forced_grants_per_s * interval_s)))
    rows.add("semaphore", GRANT_TIMEOUTS, count=float(rng.poisson(bg.grant_timeouts_per_s * interval_s)))
    if bg.updates_index is not None and model_transactions > 0:
        rows.add("index_update", bg.updates_index, count=model_transactions)


def _files(rows: _Rows, rng: np.random.Generator, bg: Background, interval_s: float,
           settings: dict[str, Any]) -> None:
    """sys.dm_io_virtual_file_stats rows: the captured database's log writes (group commits, at WRITELOG's
    latency) and data-file reads (one per page read wait, and more) and writes; tempdb's files."""
    db = bg.database_id
    other_writelog = bg.other_waits.get("WRITELOG", (0.0, 0.0))[1]
    own_ms = other_writelog if bg.other_log_file is None else 0.0
    log_ms = bg.log_write_ms if bg.log_write_ms is not None else (own_ms or 0.4)
    log_writes = float(rng.poisson(rows.get("counter", TRANSACTIONS) / bg.commits_per_log_write))
    rows.add("file_write", f"{db}:2:LOG", count=log_writes, time_ms=_total_ms(rng, log_writes, log_ms))
    if bg.other_log_file is not None:  # the other database's commits: one write per group of its WRITELOG waits
        per_s = bg.other_waits.get("WRITELOG", (0.0, 0.0))[0]
        writes = float(rng.poisson(per_s * interval_s / bg.commits_per_log_write))
        rows.add("file_write", bg.other_log_file, count=writes, time_ms=_total_ms(rng, writes, other_writelog))
    data_writes = float(rng.poisson(bg.data_writes_per_s * interval_s))
    rows.add("file_write", f"{db}:1:ROWS", count=data_writes, time_ms=_total_ms(rng, data_writes, bg.data_write_ms))
    page_reads = sum(rows.get("wait", n) for n in rows.names("wait") if n.startswith("PAGEIOLATCH_"))
    read_ms = bg.data_read_ms if bg.data_read_ms is not None else \
        (bg.other_waits.get("PAGEIOLATCH_SH", (0.0, 0.0))[1] or 2.0)
    reads = float(rng.poisson(page_reads * 1.2 + bg.data_reads_per_s * interval_s))
    rows.add("file_read", f"{db}:1:ROWS", count=reads, time_ms=_total_ms(rng, reads, read_ms))
    files = int(settings.get("tempdb_data_files", bg.tempdb_data_files))
    tempdb_files = [1] + list(range(3, files + 2))
    for file_id in tempdb_files:
        writes = float(rng.poisson(bg.tempdb_writes_per_s * interval_s / len(tempdb_files)))
        rows.add("file_write", f"{TEMPDB_ID}:{file_id}:ROWS", count=writes, time_ms=_total_ms(rng, writes, 0.5))
    tempdb_log = float(rng.poisson(bg.tempdb_writes_per_s * interval_s / 4.0))
    rows.add("file_write", f"{TEMPDB_ID}:2:LOG", count=tempdb_log, time_ms=_total_ms(rng, tempdb_log, 0.3))


def _pages(rows: _Rows, rng: np.random.Generator, bg: Background, interval_s: float, other_page_latch_ms: float,
           samples: int) -> None:
    """Page rows: the waiters sys.dm_os_waiting_tasks would show once a second, mean waiters by Little's law
    (page latch wait ms over the interval's ms); the run's on the captured index's moving last page (EX) and
    its root page (SH), other work's on ``other_pages``; the 20 busiest pages kept."""
    interval_ms = interval_s * 1000.0
    counts: dict[str, float] = {}
    model_index = [n for n in rows.names("index") if n == bg.index_name]
    if model_index:
        ex_ms, sh_ms = rows.get("wait", "PAGELATCH_EX", "time_ms"), rows.get("wait", "PAGELATCH_SH", "time_ms")
        share = min(rows.get("index", bg.index_name) / max(rows.get("wait", "PAGELATCH_EX") + rows.get(
            "wait", "PAGELATCH_SH"), 1.0), 1.0)  # the run's share of the instance's page latch waits
        per_second = rows.get("index_allocation", bg.index_name) / interval_s  # leaf pages the index grows by
        last, root = bg.hot_pages
        for k in range(samples):
            page = f"{bg.database_id}:1:{last + int(round(k * per_second))}"
            counts[page] = counts.get(page, 0.0) + float(rng.poisson(share * ex_ms / interval_ms))
        root_name = f"{bg.database_id}:1:{root}"
        counts[root_name] = counts.get(root_name, 0.0) + float(rng.poisson(share * sh_ms / interval_ms * samples))
    total = float(sum(bg.other_pages.values()))
    for page, weight in bg.other_pages.items():
        if total > 0:
            counts[page] = counts.get(page, 0.0) + float(rng.poisson(
                other_page_latch_ms / interval_ms * weight / total * samples))
    busiest = sorted(((c, p) for p, c in counts.items() if c > 0), key=lambda cp: (-cp[0], cp[1]))[:MAX_PAGE_ROWS]
    for count, page in busiest:
        rows.add("page", page, count=count)


DATABASES = ("SalesDB", "OrdersDB", "BankDB", "InventoryDB", "TicketsDB", "ClaimsDB", "RetailDB", "LedgerDB")
TABLES = ("dbo.Sales.PK_Sales", "Orders.OrderLine.PK_OrderLine", "dbo.Accounts.PK_Accounts",
          "Sales.InvoiceLines.PK_InvoiceLines", "dbo.TicketEvents.PK_TicketEvents", "dbo.Stock.PK_Stock",
          "audit.Events.CIX_Events", "dbo.Ledger.PK_Ledger")
VERSIONS = (SQL_2016, SQL_2017_CU13, SQL_2019, SQL_2022)


def draw_background(rng: np.random.Generator, *, updates: bool = False, interval_s: float = 60.0) -> Background:
    """A busy instance drawn at random for the realistic coverage study: the DBA's names, other work's sessions,
    CPU, batches, transactions and waits, CPU queueing, no extended events.

    The other work's sessions in the captured database stay few (up to 5), as do its CPU there, since the
    capture's database_sessions and database_cpu_ms are what the fit reads; ``updates`` names an index the
    run's transactions update (the version store's).  A wait begun before the first read lasts up to 3% of
    ``interval_s``, as one of a few seconds does in the capture script's default minute.
    """
    table = str(rng.choice(TABLES))
    waits = {"WRITELOG": (float(rng.uniform(0, 500)), float(rng.uniform(0.3, 2.0))),
             "PAGEIOLATCH_SH": (float(rng.uniform(0, 100)), float(rng.uniform(1.0, 5.0))),
             "ASYNC_NETWORK_IO": (float(rng.uniform(0, 200)), float(rng.uniform(0.5, 2.0))),
             "SOS_SCHEDULER_YIELD": (float(rng.uniform(0, 15_000)), 0.0)}
    return Background(
        database=str(rng.choice(DATABASES)), database_id=int(rng.integers(5, 40)), index_name=table,
        version=str(rng.choice(VERSIONS)), other_sessions=int(rng.integers(0, 150)),
        other_database_sessions=int(rng.integers(0, 6)), other_database_cpu_share=float(rng.uniform(0.0, 0.05)),
        other_cpu_share=float(rng.uniform(0.0, 0.4)), other_batches_per_s=float(rng.uniform(0, 5_000)),
        other_transactions_per_s=float(rng.uniform(0, 1_000)), other_waits=waits,
        runnable_delay_ms=float(rng.uniform(0.0, 0.3)), delay_model_waits=bool(rng.random() < 0.3),
        updates_index=table if updates else None,
        long_waits={"LCK_M_U": float(rng.uniform(0, 30.0 * interval_s))} if rng.random() < 0.5 else {})


def with_background(snap: Snapshot, background: Background, seed: int) -> Snapshot:
    """``snap`` as a DBA's capture of a busy instance would show it: the background's work, waits, names and
    files laid over it (the same inputs give the same snapshot)."""
    if not isinstance(background, Background):
        raise TypeError(f"background is a {type(background).__name__}, not a Background")
    bg = background
    rng = np.random.default_rng(seed)
    interval_s = max(round(snap.interval_s, 3), 0.001)  # the script prints the measured interval to 0.001 s
    rows = _Rows(snap.rows)
    settings = dict(snap.settings, interval_s=interval_s)
    if bg.drop_xevents:
        rows.drop("xevent")
    if bg.delay_model_waits and bg.runnable_delay_ms > 0:
        sessions = snap.settings.get("sessions")
        _delay_model_waits(rows, bg.runnable_delay_ms, sessions * interval_s * 1000.0 if sessions else None)
    _rename(rows, settings, bg)
    model_cpu_ms = sum(rows.get("scheduler", n, "time_ms") for n in rows.names("scheduler"))
    ended, page_latch_ms = _other_waits(rows, rng, bg, interval_s)
    for name in rows.names("xevent"):  # every wait is an acquire: the session counts other work's acquires too
        if name == "BUFFER":
            rows.add("xevent", name, count=float(rng.poisson(bg.other_buffer_acquires_per_s * interval_s)))
        rows.rows[("xevent", name)]["count"] = max(rows.get("xevent", name), rows.get("latch", name))
    _schedulers(rows, rng, bg, interval_s, ended)
    if "sessions" in snap.settings:  # the captured database's sessions' CPU (sys.dm_exec_sessions cpu_time)
        other_cpu_ms = sum(rows.get("scheduler", n, "time_ms") for n in rows.names("scheduler")) - model_cpu_ms
        settings["database_cpu_ms"] = int(round(model_cpu_ms + bg.other_database_cpu_share * other_cpu_ms))
    _counters(rows, rng, bg, interval_s)
    _files(rows, rng, bg, interval_s, settings)
    samples = int(round(interval_s)) + 1
    if bg.page_samples:
        _pages(rows, rng, bg, interval_s, page_latch_ms, samples)
        settings["page_samples"] = samples
    switches_per_s = sum(rows.get("scheduler", n) for n in rows.names("scheduler")) / interval_s
    runnable = round(switches_per_s * bg.runnable_delay_ms / 1000.0, 3)  # Little's law; the script's 0.001
    if runnable > setting_range("runnable_tasks")[1]:
        raise ValueError(f"runnable_delay_ms={bg.runnable_delay_ms:g} at {switches_per_s:,.0f} context switches a "
                         f"second makes {runnable:,.0f} runnable tasks, more than a capture can state: use a "
                         "shorter delay")
    settings["runnable_tasks"] = runnable
    ordered = {name: settings[name] for name in SETTING_ORDER if name in settings}
    ordered.update({k: v for k, v in settings.items() if k not in ordered})
    return Snapshot(interval_s=interval_s, settings=ordered, rows=rows.frame(bg.whole_ms))


def server_only(background: Background, interval_s: float, schedulers: int, seed: int) -> Snapshot:
    """A capture of an instance with no modelled workload: the background's work alone, on ``schedulers``."""
    if not (isinstance(schedulers, int) and 1 <= schedulers <= setting_range("schedulers")[1]):
        raise ValueError(f"schedulers={schedulers!r}: use 1 to {setting_range('schedulers')[1]}")
    settings: dict[str, Any] = {"interval_s": float(interval_s), "schedulers": schedulers, "maxdop": 0,
                                "sessions": 0, "request_dop": 1}
    frame = pd.DataFrame([{"source": "scheduler", "name": str(k), "count": 0.0, "time_ms": 0.0}
                          for k in range(schedulers)], columns=["source", "name", *NUMBERS])
    return with_background(Snapshot(interval_s=float(interval_s), settings=settings, rows=frame), background, seed)


# ----------------------------------------------------------------------------- text as a DBA's file has it


def to_crlf(text: str) -> str:
    """``text`` with Windows line ends (CR LF), as a capture saved on Windows has them."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def capture_text(snap: Snapshot, comments: list[str] | tuple[str, ...] = (), crlf: bool = False) -> str:
    """The capture file's text: ``# `` comment lines, then the CSV :meth:`Snapshot.to_csv` writes."""
    header = "".join(f"# {line}\n" if line else "#\n" for line in comments)
    text = header + snap.to_csv()
    return to_crlf(text) if crlf else text

