"""A discrete-event model of SQLOS schedulers, workers and latches, compiled with numba.

``run(scenario, **params)`` validates the parameters against the scenario's
catalogue, builds its worker programs, runs the one event loop in
:mod:`models.engine` and returns a :class:`Result` whose tables have the
shape of SQL Server's latch, wait and spinlock DMVs.  A run is a pure
function of (scenario, parameters, seed).
"""

from __future__ import annotations

from models.params import Param, ParameterError
from models.result import Result
from models.scenarios import CATALOGUE, get_scenario, run
from models.scenarios.base import Scenario

__all__ = ["run", "scenarios", "get_scenario", "Result", "Param", "Scenario", "ParameterError"]


def scenarios() -> dict[str, Scenario]:
    """Every scenario by name, with its parameter catalogue."""
    return dict(CATALOGUE)
