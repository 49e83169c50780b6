"""Write the corpus of realistic captures in tests/captures: what a DBA's server gives with the capture script's
defaults, with the truth of each beside it.

Each capture is a model run's snapshot (``models.fitting.capture.from_model``, a window after the warm-up)
with a server's background laid over it (``models.fitting.background.with_background``: other work, idle
waits, the DBA's names, file I/O, sampled page waiters, no extended events), or a server with no model run
at all (``server_only``).  It is written as ``NAME.csv`` (a ``# `` header, then the CSV, some with Windows
line ends) and ``NAME.truth.json`` (the title, the acceptable diagnoses, the scenario and parameters the run
used, the background's fields, the names the capture carries).  Every seed is fixed, so the corpus is the
same on every run; each file is written whole or not at all.

    .venv/bin/python scripts/make_captures.py [--only NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's own package, not only an installed one
    sys.path.insert(0, str(ROOT))

import models  # noqa: E402
from models.book.analysis import cci as cci_book  # noqa: E402
from models.book.analysis import nested, your_server  # noqa: E402
from models.book.analysis import version_store as version_book  # noqa: E402
from models.files import write_bytes_atomic  # noqa: E402
from models.counters import evidence as ev  # noqa: E402
from models.fitting.background import (  # noqa: E402
    AG_IDLE_WAITS, IDLE_WAITS, SQL_2016, SQL_2017_CU13, SQL_2022, Background, capture_text, json_ready,
    server_only, with_background,
)
from models.fitting.capture import from_model  # noqa: E402
from models.counters.snapshot import Snapshot, parse  # noqa: E402

OUT = ROOT / "tests" / "captures"
# Chapter 9 walks through this one capture: it is written to the book's data too, the same bytes.
BOOK_CAPTURE = ("hot_page_busy_instance", ROOT / "book" / "data" / "dba_capture.csv")
COMMAND = ".venv/bin/python scripts/make_captures.py"

# The hot-page calibration chapter 9's fit assumes (the scenario's defaults, book/data/example_snapshot.csv's header),
# 1,000 rows a session.
HOT_PAGE = dict(your_server.EXAMPLE_PARAMS)
# The parallel insert chapter's fast query (models.book.analysis.nested), with rows enough for a 2 s window.
PARALLEL = dict(nested.SETUP, cpu_per_row_us=round(nested.cpu_per_row_us("fast", nested.HOLD_US), 4))

# Other work's waits that any busy OLTP instance shows: (waits per second, ms of resource wait each).
OLTP_WAITS = {"WRITELOG": (250.0, 0.6), "PAGEIOLATCH_SH": (40.0, 2.5), "ASYNC_NETWORK_IO": (120.0, 1.2),
              "SOS_SCHEDULER_YIELD": (2_500.0, 0.0), "LCK_M_IX": (2.0, 6.0), "PAGELATCH_SH": (60.0, 0.15),
              "CXPACKET": (20.0, 4.0), "CXCONSUMER": (25.0, 3.5), "PREEMPTIVE_OS_WRITEFILE": (1.0, 0.8)}


# Parallel scans' latch waits: the busy counterpart of background.OTHER_LATCHES.
OTHER_LATCHES_BUSY = {"ACCESS_METHODS_DATASET_PARENT": (400.0, 2.0), "ACCESS_METHODS_SCAN_RANGE_GENERATOR": (80.0, 1.0),
                      "LOG_MANAGER": (0.5, 2.0), "FGCB_ADD_REMOVE": (0.2, 1.5)}


@dataclass(frozen=True)
class Model:
    """A model run the capture is of: the scenario, its parameters and the capture's window."""

    scenario: str
    params: dict[str, Any]
    start_s: float
    interval_s: float | None  # None: to the end of the run
    xevents: bool = False


@dataclass(frozen=True)
class Server:
    """A capture with no model run: the interval and the schedulers."""

    interval_s: float
    schedulers: int


@dataclass(frozen=True)
class Capture:
    """One corpus file: how it is made, and what a correct diagnosis of it is."""

    name: str
    title: str
    diagnosis: tuple[str, ...]   # the acceptable diagnosis names (evidence's constants or a scenario's label)
    scenario: str | None         # the scenario a fit should choose (None: no model)
    fit: bool                    # whether a fitted model with ranges is expected
    top_wait: str                # the top ranked wait (the fit's BENIGN left out) the capture was made to have
    background: Background
    seed: int                    # the background's seed
    source: Model | Server
    crlf: bool = False
    notes: str = ""
    names: dict[str, Any] = field(default_factory=dict)


def _hot(seed: int, **overrides: Any) -> dict[str, Any]:
    return dict(HOT_PAGE, seed=seed, **overrides)


# The tempdb scenario's every physics parameter, so that a change of its defaults leaves the captures as written:
# sessions that loop with no think time over one temporary table each, the unfair page latch (the chapter's), the
# book's hand-off.
TEMPDB = dict(version="2016", metadata="latched", files=1, sessions=64, schedulers=16, cached_share=0.0,
              pages_per_object=1, cpu_per_object_us=500.0, think_us=0.0, pfs_us=10.0, gam_us=10.0, metadata_us=20.0,
              hold_dist="fixed", metadata_cpu_us=0.0, metadata_pages=1, window_ms=3_000.0, quantum_ms=4.0,
              policy="unfair", context_switch_us=2.0, wakeup_us=7.7)


def _tempdb(seed: int, **overrides: Any) -> dict[str, Any]:
    return dict(TEMPDB, seed=seed, **overrides)


def corpus() -> list[Capture]:
    """Every capture of the corpus, in the order they are written."""
    out: list[Capture] = []

    # ---- the hot page (last-page-insert) under the DBA's names
    out.append(Capture(
        "hot_page_sales", "Hot last page of dbo.Sales.PK_Sales (the chapter's 100 sessions on 16 schedulers), a "
        "quiet instance", ("PAGELATCH",), "last-page-insert", True, "PAGELATCH_EX",
        Background(database="SalesDB", database_id=7, index_name="dbo.Sales.PK_Sales", other_sessions=12,
                   other_cpu_share=0.04, other_batches_per_s=150.0, other_transactions_per_s=0.0,
                   other_waits={"WRITELOG": (40.0, 0.5), "ASYNC_NETWORK_IO": (30.0, 0.8),
                                "SOS_SCHEDULER_YIELD": (300.0, 0.0), "PAGEIOLATCH_SH": (5.0, 2.0)},
                   runnable_delay_ms=0.02, other_pages={"9:1:88213": 1.0}),
        seed=2001, source=Model("last-page-insert", _hot(101), start_s=0.5, interval_s=3.0), crlf=True,
        notes="the chapter's parameter set; no extended events (the script's default), so the acquires per row are "
              "not in the capture"))
    out.append(Capture(
        "hot_page_orderline_xevents", "Hot last page of Orders.OrderLine.PK_OrderLine captured with the "
        "latch_acquired session on BUFFER", ("PAGELATCH",), "last-page-insert", True, "PAGELATCH_EX",
        Background(database="OrdersDB", database_id=11, index_name="Orders.OrderLine.PK_OrderLine",
                   version=SQL_2022, other_sessions=20, other_cpu_share=0.08, other_batches_per_s=600.0,
                   other_transactions_per_s=0.0, other_buffer_acquires_per_s=30_000.0,
                   other_waits={"WRITELOG": (90.0, 0.4), "ASYNC_NETWORK_IO": (60.0, 1.0),
                                "SOS_SCHEDULER_YIELD": (900.0, 0.0), "PAGEIOLATCH_SH": (12.0, 1.5)},
                   runnable_delay_ms=0.03, drop_xevents=False, hot_pages=(1_220_811, 4_410)),
        seed=2002, source=Model("last-page-insert", _hot(102), start_s=0.5, interval_s=3.0, xevents=True),
        notes="@xevents = 1 with @xevent_class = 'BUFFER': the session counts every BUFFER acquire on the instance, "
              "other work's 30,000 a second included"))
    out.append(Capture(
        "hot_page_cpu_queue", "Hot last page with CPU queueing: 200 inserting sessions on 32 schedulers, the "
        "instance's CPU 70% busy with other work", ("PAGELATCH",), "last-page-insert", True, "PAGELATCH_EX",
        Background(database="TicketsDB", database_id=8, index_name="dbo.TicketEvents.PK_TicketEvents",
                   other_sessions=60, other_cpu_share=0.70, other_switches_per_cpu_ms=1.5,
                   other_batches_per_s=4_000.0, other_transactions_per_s=0.0, other_request_dop=4, maxdop=4,
                   other_waits={"SOS_SCHEDULER_YIELD": (12_000.0, 0.0), "WRITELOG": (300.0, 0.7),
                                "ASYNC_NETWORK_IO": (200.0, 1.5), "CXPACKET": (150.0, 5.0),
                                "CXCONSUMER": (180.0, 4.0), "PAGEIOLATCH_SH": (20.0, 2.0)},
                   runnable_delay_ms=0.8, delay_model_waits=True, long_waits={"LCK_M_S": 2_400.0}),
        seed=2003, source=Model("last-page-insert", _hot(103, sessions=200, schedulers=32, inserts_per_session=600),
                                start_s=0.5, interval_s=3.0),
        notes="every woken waiter, the inserts' own included, queues 0.8 ms for a CPU (delay_model_waits): the "
              "signal waits hold the CPU queue, and runnable_tasks says so"))
    out.append(Capture(
        "hot_page_busy_instance", "Hot last page on a busy instance: other work in the same database and on "
        "other databases, an availability group replica, SQL Server 2022", ("PAGELATCH",), "last-page-insert",
        True, "PAGELATCH_EX",
        Background(database="RetailDB", database_id=6, index_name="Sales.InvoiceLines.PK_InvoiceLines",
                   version=SQL_2022, other_sessions=150, other_database_sessions=10, other_cpu_share=0.25, other_batches_per_s=6_000.0,
                   other_transactions_per_s=800.0, maxdop=8, other_request_dop=8,
                   other_waits=dict(OLTP_WAITS, WRITELOG=(900.0, 0.6), PAGEIOLATCH_SH=(150.0, 3.0)),
                   runnable_delay_ms=0.1, idle_waits=dict(IDLE_WAITS, **AG_IDLE_WAITS),
                   long_waits={"LCK_M_U": 1_200.0, "PREEMPTIVE_OS_AUTHENTICATIONOPS": 350.0},
                   other_indexes={"Sales.Customers.PK_Customers": (8.0, 0.3, 2.0, 400.0),
                                  "Sales.Invoices.PK_Invoices": (20.0, 0.4, 160.0, 50.0)},
                   other_pages={"2:1:118": 1.0, "12:1:5120": 2.0, "6:1:7702": 1.0}, hot_pages=(733_064, 2_211)),
        seed=2004, source=Model("last-page-insert", _hot(104), start_s=0.5, interval_s=3.0), crlf=True,
        notes="Transactions/sec holds 800 other transactions a second of RetailDB beside the inserts; Batch "
              "Requests/sec 6,000 more; HADR_FABRIC_CALLBACK and the other availability-group idle waits accrue "
              "wall-clock time"))

    # ---- the version store's insert point (version-store), Randal's setup with more connections than schedulers
    vs_waits = {"SOS_SCHEDULER_YIELD": (15_000.0, 0.0), "WRITELOG": (150.0, 0.5), "ASYNC_NETWORK_IO": (80.0, 1.0),
                "PAGEIOLATCH_SH": (10.0, 2.0)}
    out.append(Capture(
        "version_store_40_on_24", "Version-store insert point: 40 updating connections on 24 schedulers, other "
        "work yielding 15,000 times a second", ("APPEND_ONLY_STORAGE_INSERT_POINT",), "version-store", True,
        "LATCH_EX",
        Background(database="BankDB", database_id=5, index_name="dbo.Accounts.PK_Accounts",
                   updates_index="dbo.Accounts.PK_Accounts", other_sessions=30, other_database_sessions=4, other_cpu_share=0.3,
                   other_batches_per_s=3_000.0, other_transactions_per_s=2_000.0, other_waits=vs_waits,
                   runnable_delay_ms=0.15, commits_per_log_write=30.0, tempdb_data_files=8),
        seed=2005, source=Model("version-store", dict(version_book.SETUP, connections=40, schedulers=24,
                                                      window_ms=3_000.0, seed=105), start_s=0.3, interval_s=2.0),
        notes="Randal's setup (models.book.analysis.version_store.SETUP) with 40 connections on 24 schedulers; "
              "2,000 other transactions a second in BankDB generate no versions, so the version bytes per "
              "transaction are diluted"))
    out.append(Capture(
        "version_store_reads", "Version-store insert point with readers: 32 connections on 16 schedulers, 30% "
        "of statements reads, SQL Server 2022", ("APPEND_ONLY_STORAGE_INSERT_POINT",), "version-store", True,
        "LATCH_EX",
        Background(database="InventoryDB", database_id=9, index_name="dbo.Stock.PK_Stock",
                   updates_index="dbo.Stock.PK_Stock", version=SQL_2022, other_sessions=25, other_database_sessions=3, other_cpu_share=0.4,
                   other_batches_per_s=2_500.0, other_transactions_per_s=1_500.0, other_waits=vs_waits,
                   runnable_delay_ms=0.25, commits_per_log_write=30.0),
        seed=2006, source=Model("version-store", dict(version_book.SETUP, connections=32, schedulers=16,
                                                      read_fraction=0.3, window_ms=3_000.0, seed=106),
                                start_s=0.3, interval_s=2.0), crlf=True,
        notes="read_fraction 0.3: reads take no insert-point latch"))
    out.append(Capture(
        "version_store_wide_rows", "Version-store insert point with 2,000-byte versions: 48 connections on 32 "
        "schedulers, an availability group replica", ("APPEND_ONLY_STORAGE_INSERT_POINT",), "version-store", True,
        "LATCH_EX",
        Background(database="ClaimsDB", database_id=14, index_name="dbo.Claims.PK_Claims",
                   updates_index="dbo.Claims.PK_Claims", other_sessions=40, other_database_sessions=2, other_cpu_share=0.2,
                   other_batches_per_s=2_000.0, other_transactions_per_s=500.0,
                   other_waits=dict(vs_waits, SOS_SCHEDULER_YIELD=(14_000.0, 0.0)), runnable_delay_ms=0.1,
                   idle_waits=dict(IDLE_WAITS, **AG_IDLE_WAITS), commits_per_log_write=30.0,
                   long_waits={"LCK_M_S": 1_500.0, "BACKUPIO": 800.0}),
        seed=2007, source=Model("version-store", dict(version_book.SETUP, connections=48, schedulers=32,
                                                      row_bytes=2_000, window_ms=3_000.0, seed=107),
                                start_s=0.3, interval_s=2.0)))

    # ---- columnstore grants (cci-insert) and the parallel insert (parallel-insert)
    out.append(Capture(
        "cci_grant_queue", "Columnstore inserts queued for memory grants (Obbish's five MAXDOP 2 inserts, 8 GB), "
        "SQL Server 2017 CU13", ("RESOURCE_SEMAPHORE",), "cci-insert", True, "RESOURCE_SEMAPHORE",
        Background(database="WarehouseDB", database_id=10, index_name="dbo.FactSales.CCI_FactSales",
                   version=SQL_2017_CU13, other_sessions=3, other_cpu_share=0.03, other_batches_per_s=40.0,
                   other_waits={"WRITELOG": (20.0, 0.8), "ASYNC_NETWORK_IO": (10.0, 2.0),
                                "SOS_SCHEDULER_YIELD": (200.0, 0.0), "PAGEIOLATCH_SH": (5.0, 3.0)},
                   runnable_delay_ms=0.05),
        seed=2008, source=Model("cci-insert", dict(cci_book.SETUP, delta_us_per_row=4.16, schedulers=8,  # as generated
                                                   start_gap_s=1.0, seed=108), start_s=0.5, interval_s=None),
        notes="the inserts start a second apart (start_gap_s 1.0) so the two that wait begin after the first read; "
              "the capture runs to the end of the run; the other sessions add to the sessions setting"))
    out.append(Capture(
        "parallel_insert_nesting", "A MAXDOP 16 insert whose workers queue for NESTING_TRANSACTION_FULL, 24 "
        "schedulers", ("NESTING_TRANSACTION_FULL",), "parallel-insert", True, "LATCH_EX",
        Background(database="StagingDB", database_id=12, index_name="dbo.LoadTarget.PK_LoadTarget",
                   other_sessions=8, other_cpu_share=0.05, other_batches_per_s=200.0, other_transactions_per_s=0.0,
                   other_waits={"WRITELOG": (60.0, 0.5), "ASYNC_NETWORK_IO": (20.0, 1.0),
                                "SOS_SCHEDULER_YIELD": (500.0, 0.0)},
                   runnable_delay_ms=0.02, maxdop=8),
        seed=2009, source=Model("parallel-insert", dict(PARALLEL, maxdop=16, rows=4_000_000, seed=109),
                                start_s=0.1, interval_s=2.0),
        notes="the chapter's fast query at MAXDOP 16 (a query hint over the server's MAXDOP 8)"))
    out.append(Capture(
        "parallel_insert_full_logging", "A fully logged MAXDOP 12 insert (page images) on NESTING_TRANSACTION_FULL, "
        "SQL Server 2016 SP3", ("NESTING_TRANSACTION_FULL",), "parallel-insert", True, "LATCH_EX",
        Background(database="ArchiveDB", database_id=15, index_name="dbo.History.PK_History", version=SQL_2016,
                   other_sessions=15, other_cpu_share=0.1, other_batches_per_s=400.0, other_transactions_per_s=0.0,
                   other_waits={"WRITELOG": (100.0, 0.8), "ASYNC_NETWORK_IO": (40.0, 1.0),
                                "SOS_SCHEDULER_YIELD": (1_500.0, 0.0), "PAGEIOLATCH_SH": (15.0, 3.0)},
                   runnable_delay_ms=0.04, long_waits={"ASYNC_IO_COMPLETION": 900.0}),
        seed=2010, source=Model("parallel-insert", dict(PARALLEL, maxdop=12, rows=1_000_000, logging="full",
                                                        seed=110), start_s=0.1, interval_s=2.0), crlf=True))

    # ---- servers with no model run (the script's default 60 s)
    out.append(Capture(
        "tempdb_allocation", "tempdb allocation contention: PAGELATCH_UP on the PFS pages of 4 tempdb files, 96 "
        "sessions creating temporary tables on 32 schedulers, SQL Server 2016", ("tempdb allocation and metadata "
        "contention",), "tempdb", True, "PAGELATCH_UP",
        Background(database="ReportingDB", database_id=9, index_name="dbo.ReportRuns.PK_ReportRuns",
                   tempdb_data_files=4, other_sessions=20, other_cpu_share=0.08, other_batches_per_s=2_000.0,
                   other_transactions_per_s=300.0, maxdop=8, other_request_dop=4,
                   other_waits={"PAGELATCH_SH": (200.0, 0.2), "SOS_SCHEDULER_YIELD": (2_000.0, 0.0),
                                "WRITELOG": (300.0, 0.6), "ASYNC_NETWORK_IO": (400.0, 1.0),
                                "PAGEIOLATCH_SH": (30.0, 2.0)},
                   runnable_delay_ms=0.02, tempdb_writes_per_s=400.0, other_pages={"9:1:201344": 1.0},
                   other_indexes={"dbo.Reports.PK_Reports": (2.0, 0.2, 10.0, 0.0)}),
        seed=2011, source=Model("tempdb", _tempdb(111, version="2016", files=4, schedulers=32, sessions=96,
                                                  cpu_per_object_us=150.0, pfs_us=15.0, gam_us=6.0,
                                                  metadata_us=2.0), start_s=0.3, interval_s=2.0), crlf=True,
        notes="4 tempdb data files on 32 schedulers (Microsoft's guidance: 8); one page per object, so each creation "
              "and drop updates its file's PFS page and GAM page once; the system-table write is short"))
    out.append(Capture(
        "tempdb_metadata", "tempdb metadata contention: PAGELATCH_EX on tempdb's system-table page 2:1:118, 64 "
        "sessions on 16 schedulers, SQL Server 2019 without memory-optimized metadata", ("tempdb allocation and "
        "metadata contention",), "tempdb", True, "PAGELATCH_EX",
        Background(database="WebSessionDB", database_id=16, index_name="dbo.Sessions.PK_Sessions",
                   tempdb_data_files=8, other_sessions=0, other_cpu_share=0.1, other_batches_per_s=3_000.0,
                   other_transactions_per_s=2_000.0, maxdop=8,
                   other_waits={"PAGELATCH_SH": (300.0, 0.3), "SOS_SCHEDULER_YIELD": (1_500.0, 0.0),
                                "WRITELOG": (2_000.0, 0.4), "ASYNC_NETWORK_IO": (500.0, 0.8)},
                   runnable_delay_ms=0.03, tempdb_writes_per_s=200.0, other_pages={"16:1:5120": 1.0},
                   other_indexes={"dbo.Sessions.PK_Sessions": (3.0, 0.3, 200.0, 1_800.0)}),
        seed=2012, source=Model("tempdb", _tempdb(112, version="2019", files=8, schedulers=16, sessions=64,
                                                  cpu_per_object_us=500.0, pfs_us=10.0, gam_us=5.0,
                                                  metadata_us=25.0), start_s=0.3, interval_s=2.0),
        notes="8 tempdb data files already; PFS pages updated under a shared latch (2019); the one system-table page "
              "every creation and drop writes is the bottleneck"))
    out.append(Capture(
        "tempdb_2022_four_pages", "tempdb metadata contention on SQL Server 2022 with objects of four pages and "
        "holds spread exponentially: a capture the fit's assumptions do not match", (
            "tempdb allocation and metadata contention",), "tempdb", True, "PAGELATCH_EX",
        Background(database="LedgerDB", database_id=18, index_name="dbo.Ledger.PK_Ledger", version=SQL_2022,
                   tempdb_data_files=8, other_sessions=0, other_cpu_share=0.05, other_batches_per_s=800.0,
                   other_transactions_per_s=400.0,
                   other_waits={"SOS_SCHEDULER_YIELD": (1_000.0, 0.0), "WRITELOG": (400.0, 0.5),
                                "ASYNC_NETWORK_IO": (100.0, 1.0)},
                   runnable_delay_ms=0.02, other_pages={"18:1:7702": 1.0}),
        seed=2022, source=Model("tempdb", _tempdb(122, version="2022", files=8, schedulers=16, sessions=64,
                                                  cpu_per_object_us=500.0, pfs_us=10.0, gam_us=10.0,
                                                  metadata_us=25.0, pages_per_object=4,
                                                  hold_dist="exponential"), start_s=0.3, interval_s=2.0),
        notes="the fit assumes one page per object and fixed holds; SQL Server 2022 updates PFS, GAM and SGAM pages under a shared latch, so only the "
              "system-table page waits"))
    out.append(Capture(
        "writelog_bound", "WRITELOG-bound: 95% of the ranked wait time is commits waiting 11 ms for the log",
        (ev.LOG_WRITES,), None, False, "WRITELOG",
        Background(database="PaymentsDB", database_id=6, index_name="dbo.Payments.PK_Payments",
                   other_sessions=180, other_cpu_share=0.12, other_batches_per_s=2_600.0,
                   other_transactions_per_s=2_500.0, commits_per_log_write=1.25,
                   other_waits={"WRITELOG": (2_500.0, 11.0), "ASYNC_NETWORK_IO": (400.0, 1.5),
                                "PAGEIOLATCH_SH": (100.0, 4.0), "LCK_M_IX": (10.0, 25.0),
                                "PAGELATCH_EX": (300.0, 0.4), "SOS_SCHEDULER_YIELD": (1_000.0, 0.0)},
                   runnable_delay_ms=0.05,
                   other_indexes={"dbo.Payments.PK_Payments": (150.0, 0.4, 2_400.0, 0.0),
                                  "dbo.Ledger.PK_Ledger": (50.0, 0.3, 2_500.0, 100.0)}),
        seed=2013, source=Server(60.0, 16), crlf=True,
        notes="the log file 6:2:LOG's writes stall 11 ms each (file_write), as WRITELOG's waits do"))
    out.append(Capture(
        "parallelism", "Parallelism on top: CXPACKET, CXSYNC_PORT and CXCONSUMER of MAXDOP 8 queries, 32 schedulers",
        (ev.PARALLELISM,), None, False, "CXPACKET",
        Background(database="AnalyticsDB", database_id=8, index_name="dbo.Events.PK_Events",
                   other_sessions=90, other_cpu_share=0.55, other_batches_per_s=300.0,
                   other_transactions_per_s=20.0, maxdop=8, other_request_dop=8,
                   other_waits={"CXPACKET": (3_000.0, 12.0), "CXCONSUMER": (3_500.0, 10.0),
                                "CXSYNC_PORT": (300.0, 25.0), "PAGEIOLATCH_SH": (300.0, 3.0),
                                "SOS_SCHEDULER_YIELD": (20_000.0, 0.0), "WRITELOG": (20.0, 0.8),
                                "ASYNC_NETWORK_IO": (50.0, 20.0)},
                   other_latches=dict(OTHER_LATCHES_BUSY), runnable_delay_ms=0.6),
        seed=2014, source=Server(60.0, 32)))
    out.append(Capture(
        "page_reads", "Page reads on top: PAGEIOLATCH_SH at 8 ms a read, the buffer pool too small for the scans",
        (ev.PAGE_READS,), None, False, "PAGEIOLATCH_SH",
        Background(database="ErpDB", database_id=5, index_name="dbo.GeneralLedger.PK_GeneralLedger",
                   max_server_memory_mb=28_672, other_sessions=120, other_cpu_share=0.25,
                   other_batches_per_s=1_500.0, other_transactions_per_s=300.0, maxdop=4, other_request_dop=4,
                   other_waits={"PAGEIOLATCH_SH": (4_000.0, 8.0), "PAGEIOLATCH_EX": (200.0, 10.0),
                                "WRITELOG": (300.0, 1.0), "ASYNC_NETWORK_IO": (100.0, 1.0),
                                "CXPACKET": (200.0, 6.0), "SOS_SCHEDULER_YIELD": (3_000.0, 0.0)},
                   runnable_delay_ms=0.1, data_writes_per_s=300.0),
        seed=2015, source=Server(60.0, 24)))
    out.append(Capture(
        "lock_waits", "Lock waits on top: LCK_M_X behind long update transactions", (ev.LOCK_WAITS,), None, False,
        "LCK_M_X",
        Background(database="BookingDB", database_id=13, index_name="dbo.Bookings.PK_Bookings",
                   other_sessions=250, other_cpu_share=0.15, other_batches_per_s=2_000.0,
                   other_transactions_per_s=900.0,
                   other_waits={"LCK_M_X": (150.0, 180.0), "LCK_M_U": (40.0, 120.0), "LCK_M_S": (30.0, 90.0),
                                "WRITELOG": (800.0, 1.2), "ASYNC_NETWORK_IO": (300.0, 1.0),
                                "SOS_SCHEDULER_YIELD": (2_000.0, 0.0), "PAGEIOLATCH_SH": (40.0, 3.0)},
                   runnable_delay_ms=0.08, long_waits={"LCK_M_SCH_S": 25_000.0, "LCK_M_IS": 9_000.0},
                   other_indexes={"dbo.Bookings.PK_Bookings": (30.0, 0.3, 100.0, 800.0)}),
        seed=2016, source=Server(60.0, 16), crlf=True,
        notes="two long lock waits (LCK_M_SCH_S behind an index rebuild, LCK_M_IS) began before the first read: "
              "rows with time and count 0"))
    out.append(Capture(
        "grant_queue", "A memory-grant queue (RESOURCE_SEMAPHORE) of sorts and hashes, no columnstore work",
        (ev.GRANT_QUEUE,), None, False, "RESOURCE_SEMAPHORE",
        Background(database="ReportsDB", database_id=10, index_name="dbo.Orders.PK_Orders",
                   max_server_memory_mb=57_344, other_sessions=70, other_cpu_share=0.3,
                   other_batches_per_s=800.0, other_transactions_per_s=100.0, maxdop=8, other_request_dop=8,
                   other_waits={"RESOURCE_SEMAPHORE": (2.0, 4_000.0), "CXPACKET": (100.0, 5.0),
                                "CXCONSUMER": (150.0, 4.0), "WRITELOG": (200.0, 1.0), "PAGEIOLATCH_SH": (100.0, 3.0),
                                "SOS_SCHEDULER_YIELD": (4_000.0, 0.0), "ASYNC_NETWORK_IO": (60.0, 2.0)},
                   runnable_delay_ms=0.1, grant_timeouts_per_s=0.05),
        seed=2017, source=Server(60.0, 16)))
    out.append(Capture(
        "healthy", "A healthy instance: nothing waits much (the top wait under 1% of the schedulers' time)",
        (ev.HEALTHY,), None, False, "WRITELOG",
        Background(database="CrmDB", database_id=7, index_name="dbo.Contacts.PK_Contacts", other_sessions=35,
                   other_cpu_share=0.08, other_batches_per_s=400.0, other_transactions_per_s=120.0,
                   other_waits={"WRITELOG": (120.0, 0.4), "PAGEIOLATCH_SH": (5.0, 1.5),
                                "ASYNC_NETWORK_IO": (30.0, 0.5), "SOS_SCHEDULER_YIELD": (200.0, 0.0),
                                "LCK_M_S": (0.2, 8.0)},
                   runnable_delay_ms=0.01, long_waits={"PREEMPTIVE_OS_AUTHENTICATIONOPS": 300.0}),
        seed=2018, source=Server(60.0, 16), crlf=True))
    out.append(Capture(
        "async_network_io", "A client that reads its results slowly: ASYNC_NETWORK_IO on top", (ev.OTHER_WAIT,),
        None, False, "ASYNC_NETWORK_IO",
        Background(database="ExportDB", database_id=17, index_name="dbo.Exports.PK_Exports", other_sessions=60,
                   other_cpu_share=0.1, other_batches_per_s=500.0, other_transactions_per_s=50.0,
                   other_waits={"ASYNC_NETWORK_IO": (2_000.0, 15.0), "WRITELOG": (50.0, 0.8),
                                "PAGEIOLATCH_SH": (60.0, 2.5), "SOS_SCHEDULER_YIELD": (1_000.0, 0.0)},
                   runnable_delay_ms=0.03),
        seed=2019, source=Server(60.0, 8)))

    # ---- mixed: two problems, one on top
    out.append(Capture(
        "mixed_hot_page_writelog", "Hot last page with another database's slow log: WRITELOG nearly as large as "
        "PAGELATCH_EX", ("PAGELATCH",), "last-page-insert", True, "PAGELATCH_EX",
        Background(database="SalesDB", database_id=7, index_name="dbo.Sales.PK_Sales", other_sessions=300,
                   other_cpu_share=0.15, other_batches_per_s=4_600.0, other_transactions_per_s=0.0,
                   other_waits={"WRITELOG": (4_500.0, 10.0), "ASYNC_NETWORK_IO": (200.0, 1.0),
                                "SOS_SCHEDULER_YIELD": (1_500.0, 0.0), "PAGEIOLATCH_SH": (30.0, 3.0)},
                   runnable_delay_ms=0.05, other_log_file="9:2:LOG", log_write_ms=0.2),
        seed=2020, source=Model("last-page-insert", _hot(120), start_s=0.5, interval_s=3.0), crlf=True,
        notes="WRITELOG is another database's (AuditDB, id 9: its log 9:2:LOG stalls 10 ms a write); SalesDB's own "
              "log writes take 0.2 ms"))
    out.append(Capture(
        "mixed_version_store_page_reads", "Version-store insert point with page reads nearly as large "
        "(PAGEIOLATCH_SH at 10 ms)", ("APPEND_ONLY_STORAGE_INSERT_POINT",), "version-store", True, "LATCH_EX",
        Background(database="BankDB", database_id=5, index_name="dbo.Accounts.PK_Accounts",
                   updates_index="dbo.Accounts.PK_Accounts", other_sessions=50, other_cpu_share=0.2,
                   other_batches_per_s=1_500.0, other_transactions_per_s=300.0,
                   other_waits=dict(vs_waits, PAGEIOLATCH_SH=(3_000.0, 10.0)), runnable_delay_ms=0.15,
                   commits_per_log_write=30.0),
        seed=2021, source=Model("version-store", dict(version_book.SETUP, connections=40, schedulers=24,
                                                      window_ms=3_000.0, seed=121), start_s=0.3, interval_s=2.0),
        notes="reports scanning a table that does not fit in memory beside the updates"))
    return out



# ----------------------------------------------------------------------------- making one capture


def _truth(model: Model) -> dict[str, Any]:
    """Every parameter the run used: the scenario's defaults with the capture's parameters over them."""
    return json_ready(dict(models.get_scenario(model.scenario).defaults(), **model.params))


def _check_window(model: Model) -> None:
    """The run lasts past the capture's second read, so the window holds work all through."""
    if model.interval_s is None:
        return
    end_ms = (model.start_s + model.interval_s) * 1000.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = models.run(model.scenario, max_sim_ms=end_ms * 1.05, **model.params)
    if result.elapsed_ms < end_ms * 1.05 * 0.999:
        raise RuntimeError(f"{model.scenario} with {model.params} ends at {result.elapsed_ms / 1000:.2f} s, before "
                           f"the capture's second read at {end_ms / 1000:.2f} s: give it more work")


def snapshot_of(capture: Capture) -> Snapshot:
    """The capture's snapshot: the model run's window with the background over it, or the server alone."""
    if isinstance(capture.source, Server):
        return server_only(capture.background, capture.source.interval_s, capture.source.schedulers, capture.seed)
    model = capture.source
    _check_window(model)
    base = from_model(model.scenario, model.params, start_s=model.start_s, interval_s=model.interval_s,
                      xevents=model.xevents)
    return with_background(base, capture.background, capture.seed)


def _command(capture: Capture) -> str:
    return f"{COMMAND} --only {capture.name}"


def _made_from(capture: Capture) -> str:
    """How the capture was made, in one line."""
    if isinstance(capture.source, Server):
        return (f"server_only(interval_s={capture.source.interval_s:g}, schedulers={capture.source.schedulers}, "
                f"seed={capture.seed}): no model run")
    m = capture.source
    params = " ".join(f"{k}={v}" for k, v in m.params.items())
    window = f"start_s={m.start_s:g}" + (f" interval_s={m.interval_s:g}" if m.interval_s is not None else " to the end")
    return (f"from_model({m.scenario}, {params}; {window}, xevents={m.xevents}) with_background(seed={capture.seed})")


def header(capture: Capture) -> list[str]:
    """The capture file's comment lines: what it is and how it was written."""
    return [f"Generated capture (not read from a server): {capture.title}.",
            f"Made by {_made_from(capture)}.",
            f"Written by: {_command(capture)}",
            f"Expected diagnosis: {' or '.join(capture.diagnosis)}; the truth is in {capture.name}.truth.json."]


def sidecar(capture: Capture) -> dict[str, Any]:
    """The truth file's content."""
    model = capture.source if isinstance(capture.source, Model) else None
    names: dict[str, Any] = {"database": capture.background.database, "database_id": capture.background.database_id}
    if model is not None and model.scenario == "last-page-insert":
        names["index"] = capture.background.index_name
    elif capture.background.updates_index is not None:
        names["index"] = capture.background.updates_index
    else:
        names["index"] = None
    return {
        "title": capture.title,
        "source": "generated",
        "command": f"{_command(capture)}  # {_made_from(capture)}",
        "diagnosis": list(capture.diagnosis),
        "scenario": capture.scenario,
        "fit": capture.fit,
        "truth": _truth(model) if model is not None else None,
        "window": ({"start_s": model.start_s, "interval_s": model.interval_s, "xevents": model.xevents}
                   if model is not None else None),
        "top_wait": capture.top_wait,
        "background": capture.background.to_dict(),
        "background_seed": capture.seed,
        "names": dict(names, **capture.names),
        "crlf": capture.crlf,
        "notes": capture.notes,
    }


def write(capture: Capture) -> float:
    """Write NAME.csv and NAME.truth.json (each whole or not at all); returns the seconds it took."""
    began = time.monotonic()
    snap = snapshot_of(capture)
    text = capture_text(snap, header(capture), crlf=capture.crlf)
    parse(text, where=capture.name)  # refuse to write a capture the fit could not read
    truth = json.dumps(sidecar(capture), indent=2, sort_keys=False) + "\n"
    OUT.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(OUT / f"{capture.name}.csv", text.encode("utf-8"))
    if capture.name == BOOK_CAPTURE[0]:
        write_bytes_atomic(BOOK_CAPTURE[1], text.encode("utf-8"))
    write_bytes_atomic(OUT / f"{capture.name}.truth.json", truth.encode("utf-8"))
    return time.monotonic() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="write only these captures")
    parser.add_argument("--list", action="store_true", help="list the captures and what each should be diagnosed as")
    args = parser.parse_args(argv)
    captures = corpus()
    names = [c.name for c in captures]
    if len(set(names)) != len(names):
        raise SystemExit("two captures share a name")
    if args.list:
        for c in captures:
            print(f"{c.name:34} {' or '.join(c.diagnosis):40} {c.title}")
        return 0
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            print(f"error: no capture named {', '.join(unknown)}; --list lists them", file=sys.stderr)
            return 2
        captures = [c for c in captures if c.name in args.only]
    began = time.monotonic()
    for c in captures:
        seconds = write(c)
        print(f"{c.name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    print(f"{len(captures)} capture(s) written to {OUT.relative_to(ROOT)} in {time.monotonic() - began:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
