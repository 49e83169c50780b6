"""What to look at when the top wait is not a latch this book models, and what a capture lacks.

The diagnosis names every capture, latch or not; this module gives the
non-latch names their evidence and a next step read off the capture itself
(the log file's write stall for WRITELOG, the data files' read stall for
PAGEIOLATCH, tempdb's file count against the schedulers), and lists the
sections of the capture script's default output a partial capture lacks.
Each statement of how SQL Server counts names its source.
"""

from __future__ import annotations

import re

from models.fitting import evidence as ev
from models.fitting.snapshot import Snapshot

# The sections the capture script writes by default (book/sql/capture_snapshot.sql), and what each tells the fit.
DEFAULT_SECTIONS = {
    "wait": "sys.dm_os_wait_stats: which wait is on top (the diagnosis itself)",
    "latch": "sys.dm_os_latch_stats: which latch class waits",
    "scheduler": "sys.dm_os_schedulers: the CPU per call and the context switches",
    "counter": "sys.dm_os_performance_counters: the batches, transactions and version bytes per second",
    "index": "sys.dm_db_index_operational_stats: which index holds the page latch waits",
    "page": "sys.dm_os_waiting_tasks samples: which pages the waiters were on (tempdb, allocation pages, the hot page)",
    "file_write": "sys.dm_io_virtual_file_stats: the log's and data files' write latency",
}
DEFAULT_SETTINGS = {
    "schedulers": "how many schedulers there are (else 8 is assumed)",
    "sessions": "how many user sessions ran (else the scenario's value is assumed)",
    "runnable_tasks": "how many workers waited for a CPU (the CPU queueing in every signal wait)",
}

PARALLEL_WAITS = re.compile(r"CXPACKET|CXSYNC_PORT|CXSYNC_CONSUMER|CXROWSET_SYNC|EXCHANGE")


def missing_sections(snap: Snapshot) -> list[str]:
    """The default sections and settings this capture lacks, each with what it would have told."""
    out = [f"no {source} rows ({what})" for source, what in DEFAULT_SECTIONS.items() if not snap.has(source)]
    out += [f"no {name} setting ({what})" for name, what in DEFAULT_SETTINGS.items() if snap.setting(name) is None]
    return out


def stall_per_io(snap: Snapshot, source: str, kind: str) -> tuple[float, float] | None:
    """(ms per I/O, I/Os) over the capture's files of ``kind`` (LOG or ROWS) in ``source``; None without such rows."""
    rows = snap.table(source)
    rows = rows[rows["name"].str.upper().str.endswith(":" + kind)]
    count = float(rows["count"].fillna(0).sum())
    if count <= 0:
        return None
    return float(rows["time_ms"].fillna(0).sum()) / count, count


def non_latch(snap: Snapshot, top: str, per_wait_ms: float) -> tuple[str, list[str], list[str]]:
    """The name, evidence and advice for a top wait that is not a latch or grant wait of this book's models."""
    if top == "WRITELOG":
        evidence = [f"each commit waited {per_wait_ms:,.2f} ms on average for its log block to be written"]
        log = stall_per_io(snap, "file_write", "LOG")
        if log is not None:
            evidence.append(f"the log files' writes took {log[0]:,.2f} ms each ({log[1]:,.0f} writes, "
                            "sys.dm_io_virtual_file_stats io_stall_write_ms / num_of_writes)")
        advice = ["measure the log's write latency per file in sys.dm_io_virtual_file_stats (io_stall_write_ms over "
                  "num_of_writes); above a few milliseconds the storage under the log is the limit (Microsoft "
                  "Learn, Troubleshoot slow SQL Server performance caused by I/O issues)",
                  "fewer, larger commits (several rows per transaction) write fewer log blocks; delayed durability "
                  "(ALTER DATABASE ... SET DELAYED_DURABILITY = ALLOWED, COMMIT ... WITH (DELAYED_DURABILITY = ON)) "
                  "removes the wait at the price of the last commits on a crash",
                  "chapter 5's hot page model takes the log flush per commit from this wait (log_flush_us)"]
        return ev.LOG_WRITES, evidence, advice
    if PARALLEL_WAITS.match(top):
        return ev.PARALLELISM, [f"{top} is a parallel query's producers and consumers waiting on each other"], [
            "look at the plans behind it (sys.dm_exec_query_stats with the largest total_worker_time and dop above "
            "1); skew between threads, not a shared resource, is the usual cause",
            "the server's MAXDOP and cost threshold for parallelism set how many queries go parallel and how "
            "wide (Microsoft Learn, Configure the max degree of parallelism)"]
    if top.startswith("PAGEIOLATCH"):
        evidence = [f"{top} is a wait for a data page to be read from disk into the buffer pool: I/O, not a latch "
                    "held by another worker"]
        reads = stall_per_io(snap, "file_read", "ROWS")
        if reads is not None:
            evidence.append(f"the data files' reads took {reads[0]:,.2f} ms each ({reads[1]:,.0f} reads)")
        return ev.PAGE_READS, evidence, [
            "measure read latency per file in sys.dm_io_virtual_file_stats (io_stall_read_ms over num_of_reads)",
            "if latency is low but reads are many, the working set does not fit in memory: look at Page life "
            "expectancy and the queries with the most logical reads"]
    if top.startswith("LCK_M_"):
        return ev.LOCK_WAITS, [f"{top} is a wait for a lock another transaction holds"], [
            "find the blockers with sys.dm_exec_requests (blocking_session_id) or the blocked process report; "
            "shorter transactions, an index that narrows the rows locked, or row versioning (RCSI) for readers"]
    return ev.OTHER_WAIT, [f"{top} is not a latch, page latch or memory-grant wait"], [
        f"look {top} up in Microsoft Learn's sys.dm_os_wait_stats list of wait types, and in Randal's wait "
        "library (SQLskills)"]


def grant_advice() -> list[str]:
    """Where to look when queries queue for memory grants with no columnstore work in the capture."""
    return ["list the waiting and granted queries in sys.dm_exec_query_memory_grants (requested_memory_kb, "
            "granted_memory_kb, wait_time_ms): a few large grants from poor estimates are the usual cause",
            "update the statistics behind those estimates, or cap grants per query (Resource Governor's "
            "REQUEST_MAX_MEMORY_GRANT_PERCENT, or the MAX_GRANT_PERCENT query hint)"]


def tempdb_advice(snap: Snapshot) -> list[str]:
    """The standard tempdb advice, read against this capture's file count, schedulers and version."""
    out = []
    files, schedulers = snap.setting("tempdb_data_files"), snap.setting("schedulers")
    if files is not None and schedulers:
        goal = min(int(schedulers), 8)
        if files < goal:
            out.append(f"tempdb has {files} data file(s) on {schedulers} schedulers: Microsoft's guidance is one "
                       f"file per logical processor up to 8 ({goal} here), all of equal size, then 4 more at a time "
                       "while the contention lasts (Microsoft Learn, tempdb database)")
        else:
            out.append(f"tempdb has {files} data files on {schedulers} schedulers, already as many as the guidance's "
                       "first step: add 4 more at a time only while the contention lasts, and check that the files "
                       "are of equal size (proportional fill favours the emptier ones)")
    else:
        out.append("the capture does not say how many data files tempdb has (setting tempdb_data_files): Microsoft's "
                   "guidance is one per logical processor up to 8, of equal size, then 4 more at a time")
    version = ev.sql_version(snap.setting("version"))
    if version is not None and version.year >= 2019:
        out.append(f"{version.year} updates PFS pages concurrently under a shared latch, so heavy waits on PFS "
                   "pages are unexpected there")
    if version is None or version.year >= 2019:
        out.append(("on SQL Server 2019 and later" if version is None else f"on {version.year}")
                   + ", waits on tempdb's system-table pages are what memory-optimized tempdb metadata removes "
                   "(ALTER SERVER CONFIGURATION SET MEMORY_OPTIMIZED TEMPDB_METADATA = ON, then a restart); 2019 "
                   "also updates PFS pages concurrently, and 2022 GAM and SGAM pages too (Microsoft Learn, tempdb "
                   "database)")
    else:
        out.append(f"{version.year} has trace flag 1118's whole-extent allocation as tempdb's default (since 2016), "
                   "but neither concurrent PFS updates nor memory-optimized tempdb metadata (both 2019)")
    out.append("fewer temporary-object creations help on every version: cached temporary tables (no DDL after "
               "creation, no named constraints) skip most of the metadata and allocation work")
    return out
