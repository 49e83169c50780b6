"""The scenario catalogue (each module holds one workload's program and parameters), and running one by name.

This is the registry the rest of the library asks: the fitting, the what-ifs and
the capture writer look a scenario up here (:func:`get_scenario`) and run it
(:func:`run`); the package's top re-exports both as ``models.get_scenario`` and
``models.run``.
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any, Callable

from models.params import MAX_SIM_MS, ParameterError, check_run_options, resolve, shown
from models.result import Result, build
from models.scenarios import (
    cci_decommit, cci_insert, closed_latch, convoy, last_page_insert, parallel_insert, tempdb, version_store,
)
from models.scenarios.base import Scenario
from models.workload import simulate

CATALOGUE: dict[str, Scenario] = {
    s.name: s for s in (convoy.SCENARIO, closed_latch.SCENARIO, parallel_insert.SCENARIO,
                        last_page_insert.SCENARIO, version_store.SCENARIO, cci_insert.SCENARIO,
                        cci_decommit.SCENARIO, tempdb.SCENARIO)
}


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``, or a ParameterError suggesting the closest one."""
    if isinstance(name, str) and name in CATALOGUE:
        return CATALOGUE[name]
    close = difflib.get_close_matches(str(name), list(CATALOGUE), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ParameterError(f"scenario={name!r} is unknown: use one of {', '.join(CATALOGUE)}{hint}")


def run(scenario: str, *, trace_events: int = 0, record_acquires: int = 0, max_events: int = 0,
        max_sim_ms: float = MAX_SIM_MS, progress: Callable[[float], None] | None = None,
        **params: Any) -> Result:
    """Run ``scenario`` with ``params`` (others at their defaults) and return the Result.

    ``trace_events`` keeps the first that many worker-state intervals for a
    timeline; ``record_acquires`` keeps a log of that many acquires;
    ``max_events`` (0: scaled to the workload) and ``max_sim_ms`` bound the
    run, which then comes back flagged ``truncated``; ``progress`` is called
    with 0.0 once the input has passed every check, then with the fraction
    done between chunks of events.
    """
    spec = get_scenario(scenario)
    values = resolve(spec, params)
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress={shown(progress)} is not allowed: use a function of the fraction done, or None")
    options = check_run_options({"trace_events": trace_events, "record_acquires": record_acquires,
                                 "max_events": max_events, "max_sim_ms": max_sim_ms})
    workload = spec.build(values)
    if progress is not None:
        progress(0.0)  # the input passed every check: the run starts (and compiles, on a cold cache)
    raw = simulate(workload, values["seed"], progress=progress, **options)
    result = build(raw, spec.name, values, values["seed"])
    if result.truncated:
        warnings.warn(f"{spec.name}: {result.truncated_reason}; the result is truncated", stacklevel=2)
    return result
