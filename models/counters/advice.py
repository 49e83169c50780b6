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

from typing import TYPE_CHECKING

from models.counters import evidence as ev
from models.counters.snapshot import Snapshot

if TYPE_CHECKING:
    import pandas as pd

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
    if snap.setting("version") and ev.sql_version(snap.setting("version")) is None:
        out.append(f"a version the fit does not know ({str(snap.setting('version'))[:60]}): it reads SQL Server 2016 "
                   "to 2025 (13.x to 17.x), so what depends on the version is left undetermined")
    return out


SECOND_SHARE = 0.25   # another ranked wait with this share of the ranked wait time is a problem of its own
CPU_PRESSURE = 1.0    # runnable tasks per scheduler at or above this: work queues for CPUs


def also_on_top(snap: Snapshot, waits: "pd.DataFrame", top: str) -> list[str]:
    """Other problems the capture shows beside the top wait: another ranked wait with SECOND_SHARE of the ranked
    time or more (named with where to look), and CPU pressure (runnable tasks per scheduler)."""
    out = []
    total = float(waits["time_ms"].sum())
    for row in waits.itertuples(index=False):
        if row.name == top or total <= 0 or row.time_ms < SECOND_SHARE * total:
            continue
        per_wait = row.time_ms / row.count if row.count else 0.0
        name, _, told = non_latch(snap, str(row.name), per_wait)
        where = _log_owner(snap) if row.name == "WRITELOG" else ""
        out.append(f"also on top: {row.name} holds {row.time_ms / total:.0%} of the ranked wait time "
                   f"({per_wait:,.2f} ms a wait), a problem of its own ({name}){where}; {told[0]}")
    schedulers = snap.setting("schedulers") or len(snap.table("scheduler"))
    runnable = snap.setting("runnable_tasks")
    if runnable is not None and schedulers and runnable / schedulers >= CPU_PRESSURE:
        out.append(f"also: CPU pressure: {runnable:,.1f} tasks waited for a CPU on average over {schedulers} "
                   f"schedulers ({runnable / schedulers:,.1f} each): every wait ends in a queue for the CPU; look at "
                   "the queries with the most CPU (sys.dm_exec_query_stats total_worker_time) before the latch")
    return out


def _log_owner(snap: Snapshot) -> str:
    """Which database's log is slow, from the file_write rows: the LOG file with the longest stall per write."""
    rows = snap.table("file_write")
    rows = rows[rows["name"].str.upper().str.endswith(":LOG") & (rows["count"].fillna(0) > 0)]
    if rows.empty:
        return ""
    per_write = rows["time_ms"].fillna(0) / rows["count"]
    worst = rows.loc[per_write.idxmax()]
    db_id = str(worst["name"]).split(":")[0]
    mine = snap.setting("database_id")
    whose = "the captured database's" if mine is not None and db_id == str(mine) else f"database {db_id}'s"
    return f"; {whose} log file is the slowest, {per_write.max():,.1f} ms a write (sys.dm_io_virtual_file_stats)"


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
    pages = [p for p in ev.waited_pages(snap) if p.database_id == ev.TEMPDB_ID]
    waiters = sum(p.waiters for p in pages)
    share = {kind: sum(p.waiters for p in pages if p.kind == kind) / waiters if waiters else 0.0
             for kind in ("PFS", "GAM", "SGAM")}
    if version is not None and version.year >= 2019 and share["PFS"] >= 0.2:
        out.append(f"{share['PFS']:.0%} of tempdb's waiters were on PFS pages, which SQL Server 2019 and later "
                   "update concurrently: unexpected on this version, so check that the tempdb files are of equal "
                   "size and that nothing turned the feature off")
    if version is not None and version.year >= 2022 and share["GAM"] + share["SGAM"] >= 0.2:
        out.append(f"{share['GAM'] + share['SGAM']:.0%} of tempdb's waiters were on GAM or SGAM pages, which SQL "
                   "Server 2022 updates concurrently: unexpected on this version")
    if version is None or version.year >= 2019:
        out.append("waits on tempdb's system-table pages (metadata) are what memory-optimized tempdb metadata "
                   "removes on SQL Server 2019 and later (ALTER SERVER CONFIGURATION SET MEMORY_OPTIMIZED "
                   "TEMPDB_METADATA = ON, then a restart) (Microsoft Learn, tempdb database)")
    else:
        out.append(f"SQL Server {version.year} has trace flag 1118's whole-extent allocation as tempdb's default "
                   "(since 2016), but neither concurrent PFS updates nor memory-optimized tempdb metadata (both "
                   "2019)")
    out.append("fewer temporary-object creations help on every version: cached temporary tables (no DDL after "
               "creation, no named constraints) skip most of the metadata and allocation work")
    return out
