"""Explorer grid for the tempdb chapter: files x sessions x server x the two holds no source measures.

The chapter's illustrative workload (:data:`models.book.analysis.tempdb.SETUP`: 16 schedulers, calls of 1 ms
of CPU that fill eight pages, the unfair page latch) over a 200 ms window, 5 seeds per point.  ``server`` is
a label of :data:`~models.book.analysis.tempdb.SERVERS` (a version, with or without memory-optimized
metadata); ``allocation_us`` is the hold of a PFS and of a GAM or SGAM update alike.  Run it with
``python -m models sweep tempdb``.
"""

from __future__ import annotations

from typing import Any

from models.book.analysis import tempdb
from models.book.sweep import Sweep


class ServerSweep(Sweep):
    """A sweep whose ``server`` label sets the version and the metadata, and ``allocation_us`` both allocation holds."""

    def params(self, point: dict[str, Any]) -> dict[str, Any]:
        """The tempdb scenario's parameters at a grid point: the labels replaced by what they stand for."""
        params = {k: v for k, v in point.items() if k not in ("server", "allocation_us")}
        params.update(tempdb.server(point["server"]), pfs_us=point["allocation_us"], gam_us=point["allocation_us"])
        return params


SWEEP = ServerSweep(
    name="tempdb",
    scenario="tempdb",
    grid={
        "files": list(tempdb.EXPLORER_FILES),
        "sessions": list(tempdb.EXPLORER_SESSIONS),
        "server": list(tempdb.SERVERS),
        "allocation_us": list(tempdb.EXPLORER_ALLOCATION_US),
        "metadata_us": list(tempdb.EXPLORER_METADATA_US),
    },
    fixed=dict(tempdb.SETUP, seed=1),
    replications=5,
    doc=__doc__,
)
