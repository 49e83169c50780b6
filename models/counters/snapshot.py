"""A DMV snapshot: what a server's latch, wait and spinlock counters did over an interval, as one CSV.

The capture script (``book/sql/capture_snapshot.sql``) reads
sys.dm_os_latch_stats, sys.dm_os_wait_stats, sys.dm_os_spinlock_stats and a
few other counters twice, some seconds apart, and prints their difference in
the format below; :func:`models.fitting.capture.from_model` writes the same file from a model run,
over a window of it, so the fit can be tested against known parameters.

One row per DMV row, columns :data:`COLUMNS`; which columns a row fills
depends on its ``source`` (:data:`SOURCES`).  Lines starting with ``#`` are
comments.  :func:`parse` checks a file and raises a named
:class:`SnapshotError` for each kind of bad input.

The rows mean what the DMVs document (Microsoft Learn, each view's page):

* Counts and times are differences of two reads over the interval, in whole
  milliseconds as the DMVs keep them.  sys.dm_os_wait_stats counts a wait in
  waiting_tasks_count when it starts and adds its time when it ends, so a wait
  begun before the first read and ended before the second adds time with no
  count: a row with time and count 0 is read as it is.
* ``max_time_ms`` is the DMV's own maximum since start-up or its last clear,
  as the second read found it: an upper bound on any one wait of the interval,
  not the interval's longest.
* The wait, latch, spinlock and scheduler rows, Batch Requests/sec and the
  ``sessions`` and ``runnable_tasks`` settings are the whole instance's;
  Transactions/sec, the index rows, ``database_sessions`` and
  ``database_cpu_ms`` are the captured database's.  The fit charges only the
  latter to the workload it models, and holds the instance's counts against
  its model one way (other work may add to them).
* The "/sec" performance counters are running totals in
  sys.dm_os_performance_counters (counter type 272696576): the capture holds
  their increase over the interval, not a rate.  The point-in-time ones
  (:data:`POINT_COUNTERS`: Active Temp Tables, Temp Tables For Destruction,
  Version Store Size (KB)) and the ``file_size`` rows are the value at the
  second read, not a difference.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from models.params import MAX_DOP, MAX_SCHEDULERS, MAX_SESSIONS, ParameterError, shown

COLUMNS = ("source", "name", "count", "time_ms", "max_time_ms", "signal_time_ms", "spins", "backoffs", "value")
NUMBERS = ("count", "time_ms", "max_time_ms", "signal_time_ms", "spins", "backoffs")
DELTAS = ("count", "time_ms", "signal_time_ms", "spins", "backoffs")  # differences, so never negative

# What each source's row holds (the DMV it comes from, and which column is which of its columns).
SOURCES: dict[str, str] = {
    "setting": "a setting of the capture: name and value (interval_s, schedulers, maxdop, ...)",
    "latch": "sys.dm_os_latch_stats: count waiting_requests_count, time_ms wait_time_ms, max_time_ms max_wait_time_ms "
             "(since start-up: not the interval's)",
    "wait": "sys.dm_os_wait_stats: count waiting_tasks_count, time_ms wait_time_ms, max_time_ms max_wait_time_ms "
            "(since start-up: not the interval's), signal_time_ms signal_wait_time_ms",
    "spinlock": "sys.dm_os_spinlock_stats: count collisions, spins, backoffs, time_ms sleep_time",
    "xevent": "latch_acquired extended events counted by latch class: count acquires (optional)",
    "scheduler": "sys.dm_os_schedulers, one row per visible online scheduler: name scheduler_id, "
                 "count context_switches_count, time_ms total_cpu_usage_ms",
    "counter": "sys.dm_os_performance_counters: name counter_name, count the increase of a cumulative one (Batch "
               "Requests/sec, Transactions/sec, Version Generation rate (KB/s), Version Cleanup rate (KB/s), Temp "
               "Tables Creation Rate, the Columnstore ones) or, for a point-in-time one (Active Temp Tables, Temp "
               "Tables For Destruction, Version Store Size (KB)), its value at the second read; each read from one "
               "instance: Transactions/sec the captured database's, the Columnstore ones the captured database's or "
               "else _Total's, the others the instance's",
    "semaphore": "sys.dm_exec_query_resource_semaphores, summed over pools and semaphores: name forced_grant_count "
                 "or timeout_error_count, count the increase",
    "index": "sys.dm_db_index_operational_stats of the captured database: name schema.table.index, "
             "count page_latch_wait_count, time_ms page_latch_wait_in_ms (every page of the index)",
    "index_tree": "sys.dm_db_index_operational_stats: name schema.table.index, count tree_page_latch_wait_count, "
                  "time_ms tree_page_latch_wait_in_ms (the part of the index row's waits on non-leaf pages)",
    "index_insert": "sys.dm_db_index_operational_stats: name schema.table.index, count leaf_insert_count "
                    "(rows inserted at the leaf level)",
    "index_allocation": "sys.dm_db_index_operational_stats: name schema.table.index, count leaf_allocation_count "
                        "(leaf pages allocated: page splits, new pages at the end of the index included)",
    "index_update": "sys.dm_db_index_operational_stats: name schema.table.index, count leaf_update_count "
                    "(rows updated in place at the leaf level)",
    "file_write": "sys.dm_io_virtual_file_stats, one row per database file: name db_id:file_id:ROWS or "
                  "db_id:file_id:LOG, count num_of_writes, time_ms io_stall_write_ms",
    "file_read": "sys.dm_io_virtual_file_stats: name db_id:file_id:ROWS or db_id:file_id:LOG, count num_of_reads, "
                 "time_ms io_stall_read_ms",
    "file_size": "tempdb.sys.database_files, one row per tempdb data file (type 0, ROWS) at the second read: name "
                 "2:file_id:ROWS, count its size in MB (a point-in-time value, not a difference)",
    "page": "sys.dm_os_waiting_tasks at the two reads and, in captures that give page_samples, once a second "
            "between them: name db_id:file_id:page_id, count the tasks seen waiting on that page's latch over all "
            "the samples (samples, not a difference)",
}
# The settings a capture gives (interval_s is required).
SETTINGS: dict[str, str] = {
    "interval_s": "seconds between the two snapshots",
    "schedulers": "visible online schedulers (one per logical CPU SQL Server uses)",
    "maxdop": "max degree of parallelism (server setting; 0: as many as schedulers)",
    "sessions": "user sessions that ran a request during the interval (or have one at its end)",
    "database_sessions": "number of those sessions whose current database is the captured one "
                         "(sys.dm_exec_sessions database_id): the workload apart from the instance's other work",
    "database_cpu_ms": "CPU those sessions used over the interval (ms): the increase of sys.dm_exec_sessions "
                       "cpu_time summed over the captured database's sessions (a session new since the first read "
                       "counts from 0)",
    "request_dop": "the largest degree of parallelism (dop) of the user requests seen at the two reads",
    "max_server_memory_mb": "max server memory (MB)",
    "version": "@@VERSION's first line (text)",
    "database": "the database whose indexes and Transactions/sec the capture read (text)",
    "database_id": "that database's id (DB_ID(): 1 master, 2 tempdb, 3 model, 4 msdb, 5 and up user databases)",
    "sql_memory_model": "sys.dm_os_sys_info sql_memory_model_desc (text): CONVENTIONAL, LOCK_PAGES or LARGE_PAGES",
    "runnable_tasks": "runnable tasks (sys.dm_os_schedulers runnable_tasks_count summed over the visible online "
                      "schedulers), averaged over the same samples as the page rows: workers waiting for a CPU",
    "tempdb_data_files": "number of tempdb's data files (sys.master_files of database 2, type ROWS)",
    "tempdb_metadata_memory_optimized": "SERVERPROPERTY('IsTempdbMetadataMemoryOptimized'): 1 when tempdb's system "
                                        "tables are memory-optimized, 0 when not (SQL Server 2019 and later; absent "
                                        "before)",
    "page_samples": "how many samples of sys.dm_os_waiting_tasks the page rows add up (one a second, both reads "
                    "included; an older capture without it sampled the two reads only)",
}
TEXT_SETTINGS = ("version", "database", "sql_memory_model")
FLOAT_SETTINGS = ("interval_s", "runnable_tasks")  # the settings that need not be whole numbers
MAX_TEMPDB_FILES = 32_767  # a database's files are numbered by a smallint
MAX_DATABASE_ID = 32_767  # DB_ID() is a smallint
MAX_PAGE_SAMPLES = 86_400  # one a second over the capture script's longest interval (86,399 s), both reads included
# The database ids of the system databases (DB_ID() on any instance).
SYSTEM_DATABASES = {1: "master", 2: "tempdb", 3: "model", 4: "msdb"}
TEMPDB_ID = 2
BATCHES = "Batch Requests/sec"
TRANSACTIONS = "Transactions/sec"
VERSION_KB = "Version Generation rate (KB/s)"
VERSION_CLEANUP_KB = "Version Cleanup rate (KB/s)"   # SQLServer:Transactions, cumulative as the generation rate
VERSION_STORE_KB = "Version Store Size (KB)"         # SQLServer:Transactions, point in time
TEMP_TABLES_CREATED = "Temp Tables Creation Rate"    # SQLServer:General Statistics, cumulative (creations only)
TEMP_TABLES_FOR_DESTRUCTION = "Temp Tables For Destruction"  # SQLServer:General Statistics, point in time
ACTIVE_TEMP_TABLES = "Active Temp Tables"            # SQLServer:General Statistics, point in time
# The counters whose row is the value at the second read, not a difference (Microsoft Learn, "SQL Server, General
# Statistics object" and "SQL Server, Transactions object").
POINT_COUNTERS = (TEMP_TABLES_FOR_DESTRUCTION, ACTIVE_TEMP_TABLES, VERSION_STORE_KB)
MAX_FILE_MB = 16 * 1024 * 1024  # a data file's largest size, 16 TB (Microsoft Learn, maximum capacity specifications)
MAX_POINT_VALUE = 1e12          # a point-in-time counter's largest value (KB of version store: a petabyte)
# SQLServer:Columnstore counters (Microsoft Learn, "SQL Server, Columnstore object"): running totals since start-up.
ROWGROUPS_COMPRESSED = "Total Rowgroups Compressed"
DELTA_ROWGROUPS_CREATED = "Delta Rowgroups Created"
FORCED_GRANTS = "forced_grant_count"    # semaphore rows (sys.dm_exec_query_resource_semaphores)
GRANT_TIMEOUTS = "timeout_error_count"
LATCH_SPINS = "LATCH_SPIN_STATS"

# Caps on a file: a capture of a large server has some thousands of rows (waits, latches, spinlocks, schedulers,
# indexes) and a few hundred kilobytes.
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_ROWS = 200_000
MAX_FIELD_CHARS = 1_000
INTERVAL_S = (0.001, 86_400.0)  # a millisecond to a day between the two reads
# The most a count or a time may grow per second of the interval: generous for any server, and small enough
# that every rate the fit derives stays a plain float.
MAX_PER_S = {"count": 1e9, "time_ms": 1e8, "signal_time_ms": 1e8, "spins": 1e12, "backoffs": 1e9}
MAX_TIME_MS = 1e12  # max_time_ms is since the counters' last clear: at most some decades
CPU_SLACK = 1.05    # a scheduler's CPU may pass the interval by rounding and sampling, not by more
MAX_SERVER_MEMORY_MB = 2_147_483_647  # SQL Server's own upper bound, and its default (no limit set)


class SnapshotError(ParameterError):
    """A snapshot the fit cannot read; each kind below names what is wrong and where."""

    kind = "snapshot error"


class MalformedSnapshot(SnapshotError):
    """Not a snapshot CSV: empty, a row with the wrong number of fields, a number that is not one."""

    kind = "malformed snapshot"


class MissingColumn(SnapshotError):
    """The header lacks one of :data:`COLUMNS`."""

    kind = "missing column"


class UnknownSource(SnapshotError):
    """A row whose source (or setting) is none the format knows."""

    kind = "unknown source"


class NegativeDelta(SnapshotError):
    """A count or time went down between the snapshots: a restart or a DBCC SQLPERF clear came between them."""

    kind = "negative delta"


class ZeroInterval(SnapshotError):
    """The snapshots are no time apart (or the interval is negative), so no rate can be had."""

    kind = "zero interval"


class SnapshotTooLarge(SnapshotError):
    """A file past the size or row cap: no capture script writes one, and reading it could exhaust memory."""

    kind = "snapshot too large"


class OutOfRange(SnapshotError):
    """A setting or a count outside what a server can give, or what the models here can run."""

    kind = "out of range"


class InconsistentSnapshot(SnapshotError):
    """Rows that cannot all be true at once (more waits than acquires, more CPU than the interval had)."""

    kind = "inconsistent snapshot"


@dataclass(frozen=True)
class Snapshot:
    """A parsed snapshot: its interval, its settings and one table per source."""

    interval_s: float
    settings: dict[str, Any]
    rows: pd.DataFrame  # every row but the settings, with the NUMBERS columns as floats (NaN: empty)

    def table(self, source: str) -> pd.DataFrame:
        """The rows of ``source`` (an empty frame when the capture has none)."""
        return self.rows[self.rows["source"] == source].reset_index(drop=True)

    def get(self, source: str, name: str, column: str = "count") -> float:
        """One value (0.0 when the row is absent or the cell empty)."""
        rows = self.rows[(self.rows["source"] == source) & (self.rows["name"] == name)]
        if rows.empty:
            return 0.0
        value = rows[column].iloc[0]
        return 0.0 if pd.isna(value) else float(value)

    def has(self, source: str, name: str | None = None) -> bool:
        """Whether the capture has rows of ``source`` (named ``name``, if given)."""
        rows = self.rows[self.rows["source"] == source]
        return bool(len(rows) if name is None else (rows["name"] == name).any())

    def setting(self, name: str, default: Any = None) -> Any:
        """A setting's value, or ``default`` when the capture has none."""
        return self.settings.get(name, default)

    def to_csv(self) -> str:
        """The snapshot as the CSV the capture script prints (settings first)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for name, value in self.settings.items():
            text = value if isinstance(value, str) else f"{value:.9g}"
            writer.writerow(["setting", name, "", "", "", "", "", "", text])
        for row in self.rows.itertuples(index=False):
            writer.writerow([row.source, row.name, *(_text(getattr(row, c)) for c in NUMBERS), ""])
        return out.getvalue()


def _text(value: Any) -> str:
    """A cell as the CSV writes it: empty for NaN, integers without a point, floats to 0.001 ms."""
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


# ----------------------------------------------------------------------------- reading


def read(path: str | Path) -> Snapshot:
    """Parse the snapshot in the file at ``path`` (see :func:`parse`)."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise MalformedSnapshot(f"path={shown(path)} is not a file name: give the snapshot file's path")
    path = Path(path)
    name = str(path) if len(str(path)) <= 200 else shown(str(path))
    try:
        with path.open("rb") as file:  # at most one byte past the cap, from a file, a pipe or a device alike
            size = os.fstat(file.fileno()).st_size  # a regular file's size, said in full when it is too large
            if size > MAX_FILE_BYTES:
                raise SnapshotTooLarge(_too_large(str(path), size))
            raw = file.read(MAX_FILE_BYTES + 1)
    except SnapshotError:
        raise
    except FileNotFoundError:
        raise MalformedSnapshot(f"{name}: no such file") from None
    except IsADirectoryError:
        raise MalformedSnapshot(f"{name}: a directory, not a snapshot file") from None
    except PermissionError:
        raise MalformedSnapshot(f"{name}: not readable (permission denied)") from None
    except (OSError, ValueError) as err:  # a name too long, a NUL in it, ...
        raise MalformedSnapshot(f"{name}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    return parse(decode(raw, str(path)), where=str(path))


def _too_large(where: str, size: int) -> str:
    return (f"{where}: {size:,} bytes, above the {MAX_FILE_BYTES:,}-byte cap; a capture is some hundreds of "
            "kilobytes: is this the capture script's csv column?")


def decode(raw: bytes, where: str) -> str:
    """A snapshot file's text: UTF-16 with a byte-order mark (what SSMS and sqlcmd write for Unicode), else UTF-8."""
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise MalformedSnapshot(f"{where}: {type(raw).__name__} given where a file's bytes belong")
    if len(raw) > MAX_FILE_BYTES:
        raise SnapshotTooLarge(_too_large(where, len(raw)))
    try:
        return raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MalformedSnapshot(f"{where}: not a text file (a snapshot is a UTF-8 or UTF-16 CSV)") from None


def parse(text: str, where: str = "snapshot") -> Snapshot:
    """Check ``text`` line by line and return its Snapshot, or raise the SnapshotError that says what is wrong.

    Every setting and count is checked against the range a server can give and the models can run, and the
    rows against each other, so nothing the fit computes from them can run away.
    """
    if not isinstance(text, str):
        raise MalformedSnapshot(f"{where}: {type(text).__name__} given where a snapshot's text belongs (a str; "
                                "read() takes a file, decode() a file's bytes)")
    if len(text) > MAX_FILE_BYTES:
        raise SnapshotTooLarge(_too_large(where, len(text)))
    lines = []
    for k, line in enumerate(text.splitlines()):
        if line.strip() and not line.lstrip().startswith("#"):
            lines.append((k + 1, line))
            if len(lines) > MAX_ROWS + 1:
                raise SnapshotTooLarge(f"{where}: more than {MAX_ROWS:,} rows by line {k + 1:,}; a capture has some "
                                       "thousands: is this the capture script's csv column?")
    if not lines:
        raise MalformedSnapshot(f"{where}: empty; a snapshot starts with the header {','.join(COLUMNS)}")
    try:
        records = [(k, row) for (k, line) in lines for row in csv.reader([line])]
    except csv.Error as err:
        raise MalformedSnapshot(f"{where}: not CSV ({err})") from None
    if len(records) > 1 and [f.strip().lower() for f in records[0][1]] == ["csv"]:
        records = records[1:]  # SSMS's "include column headers": the result set's one column name, csv
    (_, header), body = records[0], records[1:]
    header = [h.strip().lower() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if len(missing) == len(COLUMNS):
        raise MalformedSnapshot(f"{where} line {records[0][0]}: no header; the first line must be "
                                f"{','.join(COLUMNS)}")
    if missing:
        raise MissingColumn(f"{where}: the header has no column{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)} (a snapshot has {','.join(COLUMNS)})")
    settings: dict[str, Any] = {}
    rows: list[tuple[int, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for k, fields in body:
        if len(fields) != len(header):
            raise MalformedSnapshot(f"{where} line {k}: {len(fields)} fields where the header has {len(header)}")
        longest = max(len(f) for f in fields)
        if longest > MAX_FIELD_CHARS:
            raise MalformedSnapshot(f"{where} line {k}: a field of {longest:,} characters; a DMV's names and numbers "
                                    f"have at most {MAX_FIELD_CHARS:,} (schema.table.index is three 128-character names)")
        cells = {h: f.strip() for h, f in zip(header, fields)}
        source, name = cells["source"].lower(), cells["name"]
        if source not in SOURCES:
            close = difflib.get_close_matches(source, list(SOURCES), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownSource(f"{where} line {k}: source {shown(cells['source'])} is unknown: use one of "
                                f"{', '.join(SOURCES)}{hint}")
        if not name:
            raise MalformedSnapshot(f"{where} line {k}: a {source} row needs a name")
        if (source, name) in seen:
            raise MalformedSnapshot(f"{where} line {k}: a second {source} row named {shown(name)}")
        seen.add((source, name))
        if source == "setting":
            settings[name] = _setting(where, k, name, cells["value"])
            continue
        row: dict[str, Any] = {"source": source, "name": name}
        for column in NUMBERS:
            row[column] = _number(where, k, column, cells[column])
            if column == "count" and row[column] < 0 and point_in_time(source, name):
                raise OutOfRange(f"{where} line {k}: {source} {name} has count={cells[column]}, below zero: a "
                                 "value at the second read (a size, a point-in-time counter) is 0 or more")
            if column in DELTAS and row[column] < 0:
                raise NegativeDelta(
                    f"{where} line {k}: {source} {name} has {column}={cells[column]}, below zero: the counters "
                    "went back between the snapshots (a restart, or DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR) "
                    "or the latch or spinlock equivalent); take both snapshots again with no clear between them")
        rows.append((k, row))
    if "interval_s" not in settings:
        raise MalformedSnapshot(f"{where}: no interval_s setting (a row: setting,interval_s,,,,,,,SECONDS)")
    interval = settings["interval_s"]
    if interval <= 0:
        raise ZeroInterval(f"{where}: interval_s={interval:g}: the two snapshots must be some seconds apart "
                           "(the capture script waits @interval_s between them; use more than 0)")
    if not INTERVAL_S[0] <= interval <= INTERVAL_S[1]:
        raise OutOfRange(f"{where}: setting interval_s={interval:g} is out of range: use {INTERVAL_S[0]:g} to "
                         f"{INTERVAL_S[1]:,.0f} seconds between the two reads")
    for k, row in rows:
        _check_counts(where, k, row, interval)
    frame = pd.DataFrame([row for _, row in rows], columns=["source", "name", *NUMBERS])
    _check_consistent(where, frame, interval, settings)
    return Snapshot(interval_s=float(interval), settings=settings, rows=frame)


def point_in_time(source: str, name: str) -> bool:
    """Whether a row holds a value at the second read (a file's size, a point-in-time counter), not a difference."""
    return source == "file_size" or (source == "counter" and name in POINT_COUNTERS)


def _check_counts(where: str, line: int, row: dict[str, Any], interval_s: float) -> None:
    """Each count and time of a row within what a server can do in the interval, or OutOfRange naming the cell."""
    if point_in_time(row["source"], row["name"]):
        high = MAX_FILE_MB if row["source"] == "file_size" else MAX_POINT_VALUE
        what = "a tempdb data file's size in MB (up to 16 TB)" if row["source"] == "file_size" else \
            "a point-in-time counter's value at the second read"
        if not row["count"] <= high:  # NaN (no value) passes: a counter the DMV lacks
            raise OutOfRange(f"{where} line {line}: {row['source']} {row['name']} has count={row['count']:g}: use 0 to "
                             f"{high:,.0f} ({what})")
        return
    for column, per_s in MAX_PER_S.items():
        value = row[column]
        if value > per_s * interval_s:
            raise OutOfRange(f"{where} line {line}: {row['source']} {row['name']} has {column}={value:g} in "
                             f"{interval_s:g} s, more than {per_s:g} per second: use the difference of the two reads "
                             "(a capture's counts are deltas over the interval)")
    if row["max_time_ms"] > MAX_TIME_MS or row["max_time_ms"] < 0:
        raise OutOfRange(f"{where} line {line}: {row['source']} {row['name']} has max_time_ms={row['max_time_ms']:g}:"
                         f" use 0 to {MAX_TIME_MS:g} ms (the longest single wait since the counters were cleared)")


def _check_consistent(where: str, frame: pd.DataFrame, interval_s: float, settings: dict[str, Any]) -> None:
    """Rows that contradict each other, as InconsistentSnapshot naming them: the fit's shares would pass 100%."""
    # A wait or latch row may have time and no count: sys.dm_os_wait_stats counts a wait when it starts and adds its
    # time when it ends (Microsoft Learn, sys.dm_os_wait_stats, waiting_tasks_count and wait_time_ms), so a long
    # wait begun before the first read and ended before the second adds time with no count.
    # Each such wait lasted at most the DMV's longest wait (max_time_ms), and no more of them ended than there are
    # sessions: time beyond that is no wait begun before the first read, and the row is wrong.
    timed = frame[frame["source"].isin(["wait", "latch"])]
    untimed = timed[(timed["count"].fillna(0) == 0) & (timed["time_ms"].fillna(0) > 0)]
    sessions = settings.get("sessions") or MAX_SESSIONS
    known = untimed[untimed["max_time_ms"].notna()]  # a partial capture may not give the longest wait
    impossible = known[known["time_ms"] > known["max_time_ms"] * sessions + 1.0]
    if len(impossible):
        row = impossible.iloc[0]
        raise InconsistentSnapshot(
            f"{where}: {row['source']} {row['name']} has time_ms={row['time_ms']:g} with count=0: time with no count "
            f"is waits begun before the first read, but each lasted at most max_time_ms={row['max_time_ms']:g} and "
            f"at most {sessions:,} sessions waited, so the count is missing or wrong")
    waits = frame[frame["source"] == "wait"]
    over = waits[waits["signal_time_ms"].fillna(0) > waits["time_ms"].fillna(0) + 0.001]
    if len(over):
        row = over.iloc[0]
        raise InconsistentSnapshot(f"{where}: wait {row['name']} has signal_time_ms={row['signal_time_ms']:g} above "
                                   f"its time_ms={row['time_ms']:g}; the signal wait is part of the wait")
    cpu = frame[frame["source"] == "scheduler"]
    busy = cpu[cpu["time_ms"].fillna(0) > CPU_SLACK * interval_s * 1000.0 + 1.0]
    if len(busy):
        row = busy.iloc[0]
        raise InconsistentSnapshot(f"{where}: scheduler {row['name']} has time_ms={row['time_ms']:g} of CPU in an "
                                   f"interval of {interval_s * 1000.0:g} ms; one scheduler cannot use more CPU than "
                                   "the interval had (is interval_s the time between the two reads?)")
    index = frame[frame["source"] == "index"].set_index("name")["count"]
    tree = frame[frame["source"] == "index_tree"].set_index("name")["count"]
    above = [name for name in tree.index.intersection(index.index) if tree[name] > index[name]]
    if above:
        name = above[0]
        raise InconsistentSnapshot(f"{where}: index_tree {name} has count={tree[name]:g} waits but index {name} only "
                                   f"{index[name]:g}; tree_page_latch_wait_count is part of page_latch_wait_count")
    acquires = frame[frame["source"] == "xevent"].set_index("name")["count"]
    latches = frame[frame["source"] == "latch"].set_index("name")["count"]
    both = latches.index.intersection(acquires.index)
    more = [name for name in both if latches[name] > acquires[name]]
    if more:
        name = more[0]
        raise InconsistentSnapshot(f"{where}: latch {name} has count={latches[name]:g} waits but xevent {name} only "
                                   f"{acquires[name]:g} acquires; every wait is an acquire, so the event session "
                                   "lost events (capture again with the session's events kept)")


def _number(where: str, line: int, column: str, cell: str) -> float:
    """A numeric cell (empty: NaN), or MalformedSnapshot."""
    if cell == "":
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise MalformedSnapshot(f"{where} line {line}: {column}={shown(cell)} is not a number") from None
    if not math.isfinite(value):
        raise MalformedSnapshot(f"{where} line {line}: {column}={shown(cell)} is not a finite number")
    return value


def _setting(where: str, line: int, name: str, cell: str) -> Any:
    """A setting's value: text for the version, else a number."""
    if name not in SETTINGS:
        close = difflib.get_close_matches(name, list(SETTINGS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownSource(f"{where} line {line}: setting {shown(name)} is unknown: use one of "
                            f"{', '.join(SETTINGS)}{hint}")
    if name in TEXT_SETTINGS:
        return cell
    value = _number(where, line, f"setting {name}'s value", cell)
    if math.isnan(value):
        raise MalformedSnapshot(f"{where} line {line}: setting {name} has no value")
    if name == "interval_s":
        return value
    low, high = setting_range(name)
    if name in FLOAT_SETTINGS:
        if not low <= value <= high:
            raise OutOfRange(f"{where} line {line}: setting {name}={shown(cell)} is out of range: use a number from "
                             f"{low:,} to {high:,}; {name}: {SETTINGS[name]}")
        return value
    if not value.is_integer() or not low <= value <= high:
        raise OutOfRange(f"{where} line {line}: setting {name}={shown(cell)} is out of range: use a whole number from "
                         f"{low:,} to {high:,}; {name}: {SETTINGS[name]}")
    return int(value)


def setting_range(name: str) -> tuple[int, int]:
    """The whole numbers a numeric setting may take: up to the most any scenario here runs (so no estimator or MVA
    sees more), and max server memory up to SQL Server's own bound, which is also its default."""
    if name == "max_server_memory_mb":
        return 0, MAX_SERVER_MEMORY_MB
    if name == "database_id":
        return 0, MAX_DATABASE_ID
    if name == "page_samples":
        return 0, MAX_PAGE_SAMPLES
    if name == "tempdb_data_files":
        return 1, MAX_TEMPDB_FILES
    if name == "tempdb_metadata_memory_optimized":
        return 0, 1
    if name == "database_cpu_ms":  # every scheduler busy for the longest interval
        return 0, MAX_SCHEDULERS * int(INTERVAL_S[1]) * 1000
    if name == "runnable_tasks":  # at most every session waits for a CPU
        return 0, MAX_SESSIONS
    return 0, {"schedulers": MAX_SCHEDULERS, "maxdop": MAX_DOP, "request_dop": MAX_DOP, "sessions": MAX_SESSIONS,
                          "database_sessions": MAX_SESSIONS}[name]
