"""A DMV snapshot: what a server's latch, wait and spinlock counters did over an interval, as one CSV.

The capture script (``book/sql/capture_snapshot.sql``) reads
sys.dm_os_latch_stats, sys.dm_os_wait_stats, sys.dm_os_spinlock_stats and a
few other counters twice, some seconds apart, and prints their difference in
the format below; :func:`from_model` writes the same file from a model run,
over a window of it, so the fit can be tested against known parameters.

One row per DMV row, columns :data:`COLUMNS`; which columns a row fills
depends on its ``source`` (:data:`SOURCES`).  Counts and times are
differences over the interval; ``max_time_ms`` is the DMV's own maximum,
since its last clear, as the second snapshot read it.  Lines starting with
``#`` are comments.  :func:`parse` checks a file and raises a named
:class:`SnapshotError` for each kind of bad input.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import models
from models.params import ParameterError, resolve

COLUMNS = ("source", "name", "count", "time_ms", "max_time_ms", "signal_time_ms", "spins", "backoffs", "value")
NUMBERS = ("count", "time_ms", "max_time_ms", "signal_time_ms", "spins", "backoffs")
DELTAS = ("count", "time_ms", "signal_time_ms", "spins", "backoffs")  # differences, so never negative

# What each source's row holds (the DMV it comes from, and which column is which of its columns).
SOURCES: dict[str, str] = {
    "setting": "a setting of the capture: name and value (interval_s, schedulers, maxdop, ...)",
    "latch": "sys.dm_os_latch_stats: count waiting_requests_count, time_ms wait_time_ms, max_time_ms max_wait_time_ms",
    "wait": "sys.dm_os_wait_stats: count waiting_tasks_count, time_ms wait_time_ms, max_time_ms max_wait_time_ms, "
            "signal_time_ms signal_wait_time_ms",
    "spinlock": "sys.dm_os_spinlock_stats: count collisions, spins, backoffs, time_ms sleep_time",
    "xevent": "latch_acquired extended events counted by latch class: count acquires (optional)",
    "scheduler": "sys.dm_os_schedulers, one row per visible online scheduler: name scheduler_id, "
                 "count context_switches_count, time_ms total_cpu_usage_ms",
    "counter": "sys.dm_os_performance_counters, cumulative ones: name counter_name, count the increase",
    "index": "sys.dm_db_index_operational_stats: name schema.table.index, count page_latch_wait_count, "
             "time_ms page_latch_wait_in_ms",
    "page": "sys.dm_os_waiting_tasks at the two reads: name db_id:file_id:page_id, count the tasks seen waiting "
            "on that page's latch (a sample, not a difference)",
}
# The settings a capture gives (interval_s is required).
SETTINGS: dict[str, str] = {
    "interval_s": "seconds between the two snapshots",
    "schedulers": "visible online schedulers (one per logical CPU SQL Server uses)",
    "maxdop": "max degree of parallelism (server setting; 0: as many as schedulers)",
    "sessions": "user sessions that ran a request during the interval (or have one at its end)",
    "request_dop": "the largest degree of parallelism (dop) of the user requests seen at the two reads",
    "max_server_memory_mb": "max server memory (MB)",
    "version": "@@VERSION's first line (text)",
}
TEXT_SETTINGS = ("version",)
BATCHES = "Batch Requests/sec"
TRANSACTIONS = "Transactions/sec"
VERSION_KB = "Version Generation rate (KB/s)"
LATCH_SPINS = "LATCH_SPIN_STATS"


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
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MalformedSnapshot(f"{path}: no such file") from None
    except IsADirectoryError:
        raise MalformedSnapshot(f"{path}: a directory, not a snapshot file") from None
    return parse(decode(raw, str(path)), where=str(path))


def decode(raw: bytes, where: str) -> str:
    """A snapshot file's text: UTF-16 with a byte-order mark (what SSMS and sqlcmd write for Unicode), else UTF-8."""
    try:
        return raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MalformedSnapshot(f"{where}: not a text file (a snapshot is a UTF-8 or UTF-16 CSV)") from None


def parse(text: str, where: str = "snapshot") -> Snapshot:
    """Check ``text`` line by line and return its Snapshot, or raise the SnapshotError that says what is wrong."""
    lines = [(k + 1, line) for k, line in enumerate(text.splitlines())
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise MalformedSnapshot(f"{where}: empty; a snapshot starts with the header {','.join(COLUMNS)}")
    try:
        records = [(k, row) for (k, line) in lines for row in csv.reader([line])]
    except csv.Error as err:
        raise MalformedSnapshot(f"{where}: not CSV ({err})") from None
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
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for k, fields in body:
        if len(fields) != len(header):
            raise MalformedSnapshot(f"{where} line {k}: {len(fields)} fields where the header has {len(header)}")
        cells = {h: f.strip() for h, f in zip(header, fields)}
        source, name = cells["source"].lower(), cells["name"]
        if source not in SOURCES:
            close = difflib.get_close_matches(source, list(SOURCES), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownSource(f"{where} line {k}: source {cells['source']!r} is unknown: use one of "
                                f"{', '.join(SOURCES)}{hint}")
        if not name:
            raise MalformedSnapshot(f"{where} line {k}: a {source} row needs a name")
        if (source, name) in seen:
            raise MalformedSnapshot(f"{where} line {k}: a second {source} row named {name!r}")
        seen.add((source, name))
        if source == "setting":
            settings[name] = _setting(where, k, name, cells["value"])
            continue
        row: dict[str, Any] = {"source": source, "name": name}
        for column in NUMBERS:
            row[column] = _number(where, k, column, cells[column])
            if column in DELTAS and row[column] < 0:
                raise NegativeDelta(
                    f"{where} line {k}: {source} {name} has {column}={cells[column]}, below zero: the counters "
                    "went back between the snapshots (a restart, or DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR) "
                    "or the latch or spinlock equivalent); take both snapshots again with no clear between them")
        rows.append(row)
    if "interval_s" not in settings:
        raise MalformedSnapshot(f"{where}: no interval_s setting (a row: setting,interval_s,,,,,,,SECONDS)")
    interval = settings["interval_s"]
    if interval <= 0:
        raise ZeroInterval(f"{where}: interval_s={interval:g}: the two snapshots must be some seconds apart "
                           "(the capture script waits @interval_s between them; use more than 0)")
    frame = pd.DataFrame(rows, columns=["source", "name", *NUMBERS])
    return Snapshot(interval_s=float(interval), settings=settings, rows=frame)


def _number(where: str, line: int, column: str, cell: str) -> float:
    """A numeric cell (empty: NaN), or MalformedSnapshot."""
    if cell == "":
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise MalformedSnapshot(f"{where} line {line}: {column}={cell!r} is not a number") from None
    if not math.isfinite(value):
        raise MalformedSnapshot(f"{where} line {line}: {column}={cell!r} is not a finite number")
    return value


def _setting(where: str, line: int, name: str, cell: str) -> Any:
    """A setting's value: text for the version, else a number."""
    if name not in SETTINGS:
        close = difflib.get_close_matches(name, list(SETTINGS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownSource(f"{where} line {line}: setting {name!r} is unknown: use one of "
                            f"{', '.join(SETTINGS)}{hint}")
    if name in TEXT_SETTINGS:
        return cell
    value = _number(where, line, "value", cell)
    if math.isnan(value):
        raise MalformedSnapshot(f"{where} line {line}: setting {name} has no value")
    if name == "interval_s":
        return value
    if value < 0 or not value.is_integer():
        raise MalformedSnapshot(f"{where} line {line}: setting {name}={cell!r} must be a whole number of at least 0")
    return int(value)


# ----------------------------------------------------------------------------- writing one from a model run


def _sessions(scenario: str, v: dict[str, Any]) -> int | None:
    """The user sessions a capture of the scenario would count (None: an open stream of requests, no fixed set)."""
    return {
        "closed-latch": lambda: v["workers"],
        "parallel-insert": lambda: 1 + (v["busy_scheduler"] >= 0),  # the insert, and the co-tenant's query
        "last-page-insert": lambda: v["sessions"],
        "version-store": lambda: v["connections"],
        "cci-insert": lambda: v["queries"],
        "cci-decommit": lambda: v["sessions"],
    }.get(scenario, lambda: None)()


def _counters(scenario: str, v: dict[str, Any], r: models.Result) -> dict[str, float]:
    """The cumulative performance counters a run moves, as a server would count them.

    Each request of the convoy is a batch of its own; an insert call of the
    hot page is a batch and a transaction; each update of the version store
    is a transaction (the connections loop inside one batch, as Randal's
    scripts did), and it generates its row version's bytes.
    """
    units = float(r.extra.get("units", 0))
    if scenario == "convoy":
        return {BATCHES: float(r.latch_stats["acquires"].sum())}
    if scenario == "last-page-insert":
        calls = units / v["batch_rows"]
        return {BATCHES: calls, TRANSACTIONS: calls}
    if scenario == "version-store":
        versions_kb = units * v["row_bytes"] / 1024.0 if v["versioning"] == "on" else 0.0
        return {TRANSACTIONS: units, VERSION_KB: versions_kb}
    return {}


def _dmv_rows(scenario: str, v: dict[str, Any], r: models.Result, xevents: bool) -> list[dict[str, Any]]:
    """A run's DMV tables as snapshot rows (cumulative from time 0)."""
    rows = []
    for x in r.latch_stats.itertuples(index=False):
        rows.append({"source": "latch", "name": x.latch_class, "count": x.waiting_requests_count,
                     "time_ms": x.wait_time_ms, "max_time_ms": x.max_wait_time_ms})
        if xevents:
            rows.append({"source": "xevent", "name": x.latch_class, "count": x.acquires})
    for x in r.wait_stats.itertuples(index=False):
        rows.append({"source": "wait", "name": x.wait_type, "count": x.waiting_tasks_count, "time_ms": x.wait_time_ms,
                     "max_time_ms": x.max_wait_time_ms, "signal_time_ms": x.signal_wait_time_ms})
    if len(r.spin_stats):  # SQL Server counts every latch's spinning in one row
        spin = r.spin_stats[["collisions", "spins", "backoffs"]].sum()
        rows.append({"source": "spinlock", "name": LATCH_SPINS, "count": spin["collisions"], "spins": spin["spins"],
                     "backoffs": spin["backoffs"]})
    for x in r.schedulers.itertuples(index=False):
        rows.append({"source": "scheduler", "name": str(x.scheduler), "count": x.context_switches,
                     "time_ms": x.busy_ms})
    for name, count in _counters(scenario, v, r).items():
        rows.append({"source": "counter", "name": name, "count": count})
    if scenario == "last-page-insert":  # every page latch wait is on the one clustered index
        buffer = r.wait_stats[r.wait_stats["wait_type"].str.startswith("PAGELATCH_")]
        rows.append({"source": "index", "name": "dbo.orders.PK_orders", "count": buffer["waiting_tasks_count"].sum(),
                     "time_ms": buffer["wait_time_ms"].sum()})
    return rows


def _run_until(scenario: str, params: dict[str, Any], end_ms: float | None) -> models.Result:
    """The scenario run up to ``end_ms`` of simulated time (None: to its end); a cut-off run is what is wanted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the time bound is the snapshot's second read
        if end_ms is None:
            return models.run(scenario, **params)
        return models.run(scenario, max_sim_ms=end_ms, **params)


def from_model(scenario: str, params: dict[str, Any] | None = None, *, interval_s: float | None = None,
               start_s: float = 0.0, xevents: bool = True) -> Snapshot:
    """The snapshot a capture would take of the model's run between ``start_s`` and ``start_s + interval_s``.

    The counters at the first read come from the same run cut off at
    ``start_s`` (a run is a pure function of its inputs, so that run is the
    longer one's first part).  Without ``interval_s`` the window runs to the
    end of the workload.  ``xevents=False`` leaves out the acquire counts, as
    a capture without the extended-events session would.
    """
    params = dict(params or {})
    spec = models.get_scenario(scenario)
    v = resolve(spec, params)
    if not (isinstance(start_s, (int, float)) and math.isfinite(start_s) and start_s >= 0):
        raise ParameterError(f"start_s={start_s!r} is out of range: use a number of seconds from 0")
    if interval_s is not None and not (isinstance(interval_s, (int, float)) and 0 < interval_s <= 1e6):
        raise ParameterError(f"interval_s={interval_s!r} is out of range: use a number of seconds above 0 "
                             "and up to 1,000,000")
    end = _run_until(scenario, params, None if interval_s is None else (start_s + interval_s) * 1000.0)
    if interval_s is None:
        interval_s = end.elapsed_ms / 1000.0 - start_s
        if interval_s <= 0:
            raise ParameterError(f"start_s={start_s:g} is at or after the end of the run "
                                 f"({end.elapsed_ms / 1000.0:g} s): start earlier or give interval_s")
    second = pd.DataFrame(_dmv_rows(scenario, v, end, xevents), columns=["source", "name", *NUMBERS])
    if start_s > 0:
        first = pd.DataFrame(_dmv_rows(scenario, v, _run_until(scenario, params, start_s * 1000.0), xevents),
                             columns=["source", "name", *NUMBERS]).set_index(["source", "name"])
        second = second.set_index(["source", "name"])
        for column in DELTAS:
            second[column] = second[column] - first[column].reindex(second.index).fillna(0.0)
        second = second.reset_index()
    rows = second[(second[list(DELTAS)].fillna(0.0) != 0).any(axis=1)
                  | (second["source"].isin(["scheduler", "xevent", "counter"]))].reset_index(drop=True)
    settings: dict[str, Any] = {"interval_s": round(float(interval_s), 6), "schedulers": v.get("schedulers", 0),
                                "maxdop": v.get("maxdop", 0), "request_dop": v.get("maxdop", 1)}
    sessions = _sessions(scenario, v)
    if sessions is not None:
        settings["sessions"] = sessions
    if "max_server_memory_mb" in v:
        settings["max_server_memory_mb"] = v["max_server_memory_mb"]
    settings["version"] = f"latch-models {scenario} seed {v['seed']}"
    rows = rows.round({c: 3 for c in ("time_ms", "max_time_ms", "signal_time_ms")})
    return Snapshot(interval_s=float(settings["interval_s"]), settings=settings, rows=rows)
