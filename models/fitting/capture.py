"""Writing a snapshot from a model run: what a capture of the scenario between two reads would hold.

The model's DMV tables become the capture script's rows; each scenario adds
the performance counters (and index rows) its run moves
(:class:`~models.scenarios.base.Capture`).  The first read is the same run
cut off earlier: a run is a pure function of its inputs, so that run is the
longer one's first part.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pandas as pd

from models.counters.snapshot import DELTAS, INTERVAL_S, LATCH_SPINS, NUMBERS, Snapshot, point_in_time
from models.params import MAX_SIM_MS, ParameterError, shown
from models.result import Result
from models.scenarios import get_scenario, run
from models.scenarios.base import Scenario

# The database a model's capture is read in: a user database (ids 1 to 4 are the system databases).
MODEL_DATABASE = {"database": "latch_models", "database_id": 5}


def _dmv_rows(spec: Scenario, values: dict[str, Any], result: Result, xevents: bool) -> list[dict[str, Any]]:
    """A run's DMV tables as snapshot rows (cumulative from time 0)."""
    rows = []
    for row in result.latch_stats.itertuples(index=False):
        rows.append({"source": "latch", "name": row.latch_class, "count": row.waiting_requests_count,
                     "time_ms": row.wait_time_ms, "max_time_ms": row.max_wait_time_ms})
        if xevents:
            rows.append({"source": "xevent", "name": row.latch_class, "count": row.acquires})
    for row in result.wait_stats.itertuples(index=False):
        rows.append({"source": "wait", "name": row.wait_type, "count": row.waiting_tasks_count, "time_ms": row.wait_time_ms,
                     "max_time_ms": row.max_wait_time_ms, "signal_time_ms": row.signal_wait_time_ms})
    if len(result.spin_stats):  # SQL Server counts every latch's spinning in one row
        spin = result.spin_stats[["collisions", "spins", "backoffs"]].sum()
        rows.append({"source": "spinlock", "name": LATCH_SPINS, "count": spin["collisions"], "spins": spin["spins"],
                     "backoffs": spin["backoffs"]})
    for row in result.schedulers.itertuples(index=False):
        rows.append({"source": "scheduler", "name": str(row.scheduler), "count": row.context_switches,
                     "time_ms": row.busy_ms})
    rows.extend(spec.capture.rows(values, result))  # the performance counters (and index rows) the scenario moves
    return [row for row in rows if row["source"] != "setting"]


def _setting_rows(spec: Scenario, values: dict[str, Any], result: Result) -> dict[str, Any]:
    """The settings a scenario's capture states itself (its version, its memory model): rows of source setting."""
    return {row["name"]: row["value"] for row in spec.capture.rows(values, result) if row["source"] == "setting"}


def _run_until(scenario: str, params: dict[str, Any], end_ms: float | None,
               progress: Callable[[float], None] | None = None) -> Result:
    """The scenario run up to ``end_ms`` of simulated time (None: to its end); a cut-off run is what is wanted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the time bound is the snapshot's second read
        if end_ms is None:
            return run(scenario, progress=progress, **params)
        return run(scenario, max_sim_ms=end_ms, progress=progress, **params)


def from_model(scenario: str, params: dict[str, Any] | None = None, *, interval_s: float | None = None,
               start_s: float = 0.0, xevents: bool = True, progress: Callable[[float], None] | None = None) -> Snapshot:
    """The snapshot a capture would take of the model's run between ``start_s`` and ``start_s + interval_s``.

    The counters at the first read come from the same run cut off at
    ``start_s`` (a run is a pure function of its inputs, so that run is the
    longer one's first part).  Without ``interval_s`` the window runs to the
    end of the workload.  ``xevents=False`` leaves out the acquire counts, as
    a capture without the extended-events session would.  ``progress`` is
    passed to the longer run (models.run calls it once the input has passed its checks).
    """
    params = dict(params or {})
    spec = get_scenario(scenario)
    latest_s = MAX_SIM_MS / 1000.0  # the second read is a run cut off there
    if isinstance(start_s, bool) or not (isinstance(start_s, (int, float)) and 0 <= start_s < latest_s):
        raise ParameterError(f"start_s={shown(start_s)} is out of range: use a number of seconds from 0 to below "
                             f"{latest_s:,.0f}")
    low, high = INTERVAL_S
    if interval_s is not None and (isinstance(interval_s, bool) or not isinstance(interval_s, (int, float))
                                   or not low <= interval_s <= min(high, latest_s - start_s)):
        raise ParameterError(f"interval_s={shown(interval_s)} is out of range: use a number of seconds from {low:g} "
                             f"to {min(high, latest_s - start_s):,.0f} (a capture's interval, ending by "
                             f"{latest_s:,.0f} s of simulated time)")
    second_read = _run_until(scenario, params, None if interval_s is None else (start_s + interval_s) * 1000.0, progress)
    values = second_read.params  # as models.run checked them: the one check
    if interval_s is not None and second_read.elapsed_ms / 1000.0 <= start_s:
        raise ParameterError(f"start_s={start_s:g} is at or after the end of the run ({second_read.elapsed_ms / 1000.0:g} s): "
                             "start earlier")
    if interval_s is None:
        interval_s = second_read.elapsed_ms / 1000.0 - start_s
        if not low <= interval_s <= high:
            raise ParameterError(f"start_s={start_s:g} leaves {max(interval_s, 0.0):g} s of a run that ends at "
                                 f"{second_read.elapsed_ms / 1000.0:g} s, outside a capture's {low:g} to {high:,.0f} s: "
                                 "give interval_s, or start earlier")
    second = pd.DataFrame(_dmv_rows(spec, values, second_read, xevents), columns=["source", "name", *NUMBERS])
    if start_s > 0:
        first = pd.DataFrame(_dmv_rows(spec, values, _run_until(scenario, params, start_s * 1000.0), xevents),
                             columns=["source", "name", *NUMBERS]).set_index(["source", "name"])
        second = second.set_index(["source", "name"])
        # A value at the second read (a file's size, a point-in-time counter) is kept as read, not differenced.
        kept = [point_in_time(source, name) for source, name in second.index]
        for column in DELTAS:
            diff = second[column] - first[column].reindex(second.index).fillna(0.0)
            second[column] = diff.where(~pd.Series(kept, index=second.index), second[column])
        second = second.reset_index()
    rows = second[(second[list(DELTAS)].fillna(0.0) != 0).any(axis=1)
                  | (second["source"].isin(["scheduler", "xevent", "counter", "semaphore"]))].reset_index(drop=True)
    settings: dict[str, Any] = {"interval_s": round(float(interval_s), 6), "schedulers": values.get("schedulers", 0),
                                "maxdop": values.get("maxdop", 0), "request_dop": values.get("maxdop", 1)}
    sessions = spec.capture.session_count(values)
    if sessions is not None:
        settings["sessions"] = sessions
    if "max_server_memory_mb" in values:
        settings["max_server_memory_mb"] = values["max_server_memory_mb"]
    settings["version"] = f"latch-models {scenario} seed {values['seed']}"
    settings.update(MODEL_DATABASE)
    settings.update(_setting_rows(spec, values, second_read))
    rows = rows.round({c: 3 for c in ("time_ms", "max_time_ms", "signal_time_ms")})
    return Snapshot(interval_s=float(settings["interval_s"]), settings=settings, rows=rows)
