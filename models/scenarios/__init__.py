"""The scenario catalogue: each module holds one workload's program and parameters."""

from __future__ import annotations

from models.scenarios import (
    cci_decommit, cci_insert, closed_latch, convoy, last_page_insert, parallel_insert, tempdb, version_store,
)
from models.scenarios.base import Scenario

CATALOGUE: dict[str, Scenario] = {
    s.name: s for s in (convoy.SCENARIO, closed_latch.SCENARIO, parallel_insert.SCENARIO,
                        last_page_insert.SCENARIO, version_store.SCENARIO, cci_insert.SCENARIO,
                        cci_decommit.SCENARIO, tempdb.SCENARIO)
}
