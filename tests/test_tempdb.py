"""The tempdb scenario against the closed forms it reduces to, and its structural facts.

Where the scenario is a product-form network (exponential holds, free hand-offs, a scheduler per session, and
only one kind of page that anybody waits for), exact MVA gives its throughput; the other pages and the CPU are
then a delay.  Each comparison runs ten seeds, each window long enough for about 150,000 objects, and asserts
the formula inside Student's 99.8% interval over them (about 0.25% of the rate); that interval is itself
asserted narrower than 0.6%, so a tolerance that grew with a noisier run would fail too.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import models
from models import ParameterError, analytic
from models.book.analysis import tempdb as tempdb_chapter
from models.book.analysis import validation
from models.counters.evidence import GAM_INTERVAL, PFS_INTERVAL, allocation_page
from models.scenarios import tempdb

FREE = {"wakeup_us": 0.0, "context_switch_us": 0.0, "policy": "fair"}  # FIFO hand-off at no cost
# Costs named here, not taken from the scenario's defaults (which the calibration may move).
COSTS = {"cpu_per_object_us": 200.0, "pfs_us": 10.0, "gam_us": 10.0, "metadata_us": 30.0, "think_us": 0.0,
         "metadata_cpu_us": 0.0, "cached_share": 0.0}
PRODUCT_FORM = {**COSTS, "version": "2019", "metadata": "memory-optimized", "pages_per_object": 1,
                "hold_dist": "exponential", **FREE}
SEEDS = 10
OBJECTS = 150_000  # each window is long enough to hold about this many objects at the formula's rate
BAND = 0.006  # the 99.8% interval over SEEDS windows must be narrower than this share of the formula


def objects_per_us(seed0: int, exact: float, **params) -> tuple[float, float, list]:
    """Mean objects per µs over SEEDS windows of about OBJECTS objects each (at ``exact`` per µs), the 99.8%
    Student half-width over the seeds, and the runs."""
    window_ms = min(100_000.0, OBJECTS / exact / 1000.0)
    runs = [models.run("tempdb", window_ms=window_ms, seed=seed0 + j, **params) for j in range(SEEDS)]
    x = np.array([r.throughput_per_s for r in runs]) / 1e6
    half = float(stats.t.ppf(0.999, SEEDS - 1) * x.std(ddof=1) / np.sqrt(SEEDS))
    return float(x.mean()), half, runs


def assert_matches(mean: float, half: float, exact: float) -> None:
    assert half <= BAND * exact, f"interval ±{half / exact:.2%} is too wide to test anything"
    assert abs(mean - exact) <= half, f"simulated {mean * 1e3:.4f} per ms, exact {exact * 1e3:.4f} (±{half * 1e3:.4f})"


# ------------------------------------------------------------------ one file: a single GAM queue by exact MVA


@pytest.mark.parametrize("sessions", [1, 2, 4, 8, 16])
def test_one_file_2019_memory_optimized_is_the_two_visit_repairman(sessions):
    """One FIFO exponential station (the GAM page) visited twice per object, and a delay.

    2019 updates PFS under SH, and memory-optimized metadata takes no page latch, so the GAM page is the
    only one anybody waits for; with no more sessions than schedulers the CPU never queues.  Exact MVA with
    demand D = 2 x gam_us and think Z = cpu + 2 x pfs + 2 x metadata gives the objects per µs.
    """
    z = COSTS["cpu_per_object_us"] + 2 * COSTS["pfs_us"] + 2 * COSTS["metadata_us"]
    exact = float(analytic.mva_repairman(sessions, z, 2 * COSTS["gam_us"]).throughput[-1])
    mean, half, runs = objects_per_us(100 * sessions, exact, sessions=sessions, files=1, schedulers=16,
                                      **PRODUCT_FORM)
    assert_matches(mean, half, exact)
    for r in runs:  # nobody waits for anything but the GAM page, and a lone session for nothing
        waits = {kind: v[0] for kind, v in r.extra["kind_waits"].items()}
        assert waits["PFS"] == waits["SGAM"] == waits["metadata"] == 0
        assert (waits["GAM"] == 0) == (sessions == 1)


# ------------------------------------------------------------------ files: one network, not separate files


@pytest.mark.parametrize("files,sessions", [(2, 2), (4, 4), (8, 8), (2, 16), (4, 16)])
def test_files_are_one_closed_network_of_gam_stations(files, sessions):
    """With f files the model is one closed network with f GAM stations, each of demand 2 x gam_us / f.

    Session w starts at object w of the block and takes the files in turn (object i in file i mod f), so
    with sessions = f they start on different files; but they do not stay in step: each one's CPU is random,
    and a session that finished its object sooner moves to the next file, which another may be using.  So
    the model is not f separate repairman models of sessions / f sessions each.  Each file's GAM page is a
    FIFO exponential station with the same mean for every visit, and the routing (file after file) is a
    fixed cycle, so the network is still product form (Lazowska et al., 1984, chapter 6) and exact MVA
    over the f stations (:func:`models.analytic.mva_network`) gives its throughput.  The separate-files
    figure is an upper bound that the run falls below, by more than its interval when sessions > files.
    """
    values = {**PRODUCT_FORM, "sessions": sessions, "files": files, "schedulers": 16}
    think, demands = validation.tempdb_network(values)
    assert demands == [2 * COSTS["gam_us"] / files] * files
    exact = float(analytic.mva_network(sessions, think, demands).throughput[-1])
    mean, half, _ = objects_per_us(1_000 + 100 * files + sessions, exact, **values)
    assert_matches(mean, half, exact)
    separate = files * float(analytic.mva_repairman(sessions // files, think, 2 * COSTS["gam_us"]).throughput[-1])
    assert exact < separate
    if sessions > files:
        assert mean + half < separate


def test_mva_network_with_one_station_is_the_repairman():
    one = analytic.mva_network(30, 280.0, [20.0])
    two = analytic.mva_repairman(30, 280.0, 20.0)
    np.testing.assert_allclose(one.throughput, two.throughput, rtol=1e-14)
    np.testing.assert_allclose(one.response_time, two.response_time, rtol=1e-14)
    four = analytic.mva_network(1, 280.0, [5.0] * 4)  # one customer never queues: X = 1 / (Z + sum D)
    assert four.throughput[0] == pytest.approx(1 / 300.0)
    # K balanced stations and no delay: X(N) = N / (D (N + K - 1)) (Lazowska et al., 1984, section 6.3).
    n = np.arange(1, 51)
    np.testing.assert_allclose(analytic.mva_network(50, 0.0, [5.0] * 4).throughput, n / (5.0 * (n + 3)), rtol=1e-12)
    with pytest.raises(ValueError, match="demands"):
        analytic.mva_network(3, 1.0, [1.0, 0.0])


# ------------------------------------------------------------------ 2022: nothing queues


def _cycle_us(values: dict) -> float:
    """CPU of one object when nothing waits: the batch, every allocation-page hold, the metadata writes."""
    visits = tempdb.visits_per_object(values)
    creations = 2 * (1 - values["cached_share"])
    return (values["cpu_per_object_us"] + visits["PFS"] * values["pfs_us"]
            + (visits["GAM"] + visits["SGAM"]) * values["gam_us"] + creations * values["metadata_us"])


@pytest.mark.parametrize("sessions,schedulers,pages", [(1, 4, 1), (4, 4, 1), (3, 4, 10), (8, 4, 1), (13, 4, 10)])
def test_2022_memory_optimized_nothing_queues(sessions, schedulers, pages):
    """2022 updates PFS, GAM and SGAM under SH and memory-optimized metadata takes no latch: nobody waits.

    Each session then uses the CPU without a break, so with no more sessions than schedulers throughput is
    sessions / cycle, and with more, every scheduler is always busy: schedulers / cycle (CPU-bound).
    """
    values = {**COSTS, "version": "2022", "metadata": "memory-optimized", "pages_per_object": pages,
              "hold_dist": "exponential", "sessions": sessions, "schedulers": schedulers, "files": 2, **FREE}
    exact = min(sessions, schedulers) / _cycle_us(values)
    mean, half, runs = objects_per_us(2_000 + 10 * sessions + pages, exact, **values)
    assert_matches(mean, half, exact)
    for r in runs:
        assert all(v[0] == 0 for v in r.extra["kind_waits"].values())
        assert r.extra["kind_waits"]["metadata"][2] == 0


# ------------------------------------------------------------------ structural facts


def test_allocation_page_intervals():
    """PFS pages every 8,088 pages (one byte per page in a PFS page), GAM and SGAM every 511,232 (63,904
    extents of 8 pages, one bit each); the first of each are pages 1, 2 and 3."""
    assert PFS_INTERVAL == 8_088 and GAM_INTERVAL == 511_232 == 63_904 * 8
    for page, kind in [(1, "PFS"), (2, "GAM"), (3, "SGAM"), (8_088, "PFS"), (16_176, "PFS"), (24_264, "PFS"),
                       (511_232, "GAM"), (511_233, "SGAM"), (1_022_464, "GAM"), (1_022_465, "SGAM"),
                       (0, None), (4, None), (118, None), (8_087, None), (8_089, None), (511_231, None)]:
        assert allocation_page(page) == kind, page


def test_page_names_map_latches_to_tempdb_pages():
    """Latches 3f, 3f+1 and 3f+2 are data file f's PFS, GAM and SGAM (tempdb's files 1, 3, 4, ...: 2 is the
    log); the system-table pages come after them, on file 1 from page 118."""
    values = {"files": 3, "metadata_pages": 2}
    names = [tempdb.page_name(values, latch) for latch in range(3 * 3 + 2)]
    assert names == ["2:1:1", "2:1:2", "2:1:3", "2:3:1", "2:3:2", "2:3:3", "2:4:1", "2:4:2", "2:4:3",
                     "2:1:118", "2:1:119"]
    for latch, name in enumerate(names):
        kind = tempdb.latch_kind(values, latch)
        page = int(name.split(":")[2])
        assert allocation_page(page) == (None if kind == "metadata" else kind), name
    assert tempdb.page_name({"files": 1, "metadata_pages": 1}, 3) == "2:1:118"


def test_a_runs_page_waits_add_up_to_its_kind_waits():
    r = models.run("tempdb", sessions=24, files=2, version="2014", cached_share=0.5, pages_per_object=3,
                   schedulers=8, window_ms=200.0, seed=3)
    by_kind = dict.fromkeys(tempdb.KINDS, 0.0)
    for name, (waits, _) in r.extra["page_waits"].items():
        db, file, page = map(int, re.fullmatch(r"(\d+):(\d+):(\d+)", name).groups())
        assert db == 2 and file in (1, 3)
        by_kind[allocation_page(page) or "metadata"] += waits
    assert by_kind == {k: v[0] for k, v in r.extra["kind_waits"].items()}
    assert by_kind["SGAM"] > 0 and by_kind["metadata"] > 0


CASES = [(v, m, c, p) for v, c, p in itertools.product(tempdb.VERSIONS, (0.0, 0.5, 0.35), (1, 3, 20))
         for m in (("latched", "memory-optimized") if tempdb.VERSIONS[v].memory_optimized_ok else ("latched",))]


@pytest.mark.parametrize("version,metadata,cached,pages", CASES)
def test_visits_per_object_are_the_acquires_a_run_counts(version, metadata, cached, pages):
    """kind_waits' acquires over the objects completed equal visits_per_object, to within what the objects in
    progress and a block not yet gone round can add: per session, one object's visits and a block's worth of
    the difference between a cached and an uncached object."""
    values = {"version": version, "metadata": metadata, "cached_share": cached, "pages_per_object": pages}
    sessions = 8
    r = models.run("tempdb", sessions=sessions, files=2, schedulers=4, window_ms=2_000.0, seed=5, **values)
    objects = r.extra["units"]
    visits = r.extra["visits_per_object"]
    assert visits == tempdb.visits_per_object({**values})
    uncached = tempdb.visits_per_object({**values, "cached_share": 0.0})
    each_cached = tempdb.visits_per_object({**values, "cached_share": 1.0})
    assert objects > 1_000
    for kind in tempdb.KINDS:
        acquires = r.extra["kind_waits"][kind][2]
        slack = sessions * (r.extra["block_objects"] * abs(uncached[kind] - each_cached[kind])
                            + max(uncached[kind], each_cached[kind]))
        assert abs(acquires - objects * visits[kind]) <= slack, (kind, acquires, objects * visits[kind], slack)
    if metadata == "memory-optimized":
        assert r.extra["kind_waits"]["metadata"][2] == 0


@pytest.mark.parametrize("version", ["2014", "2016"])
def test_memory_optimized_metadata_before_2019_is_refused_by_name(version):
    with pytest.raises(ParameterError, match=r"metadata='memory-optimized' needs version '2019' or '2022'"):
        models.run("tempdb", version=version, metadata="memory-optimized", window_ms=10.0)


def test_appendix_table_holds_the_formula():
    """The appendix's table (validation.tempdb_table) on two short rows: its columns and its comparison."""
    t = validation.tempdb_table(cases=((8, 1), (8, 2)), window_ms=1_000.0, seeds=3, seed=9_001)
    assert list(t["seeds"]) == ["9001–9003", "9004–9006"]
    assert (t["error_pct"].abs() < 1.0).all()
    assert t["per_file_objects_per_ms"].iloc[0] == pytest.approx(t["mva_objects_per_ms"].iloc[0])
    with pytest.raises(ValueError, match="memory-optimized"):
        validation.tempdb_network({**validation.TEMPDB_PRODUCT_FORM, "metadata": "latched", "files": 1})


def _ward_by_hand() -> pd.DataFrame:
    """Three settings of a ward_table: Ward's order once (test 2 trailing by 0.3 %), test 3 first twice."""
    return pd.DataFrame({"cpu_per_object_us": [20, 20, 100], "metadata_us": [20, 200, 20], "allocation_us": [2, 2, 40],
                         "test_1_per_s": [21_767.4, 2_402.0, 10_111.0], "test_2_per_s": [58_191.2, 9_330.0, 10_080.7],
                         "test_3_per_s": [58_812.0, 9_335.0, 13_282.0], "order": ["3 > 2 > 1", "3 > 2 > 1", "3 > 1 > 2"],
                         "as_ward": [False, False, True], "test_2_vs_1_pct": [167.33, 288.43, -0.3]})


def test_ward_summary_by_hand():
    ward = _ward_by_hand()
    assert tempdb_chapter.ward_summary(ward) == {"settings": 3, "three_first": 3, "as_ward": 1, "behind_most_pct": 0.3,
                                         "ahead_most_pct": 288.43}
    ahead = ward[ward["test_2_vs_1_pct"] > 0]
    assert tempdb_chapter.ward_summary(ahead)["behind_most_pct"] == 0.0


def test_ward_display_rounds_rates_to_the_unit_and_drops_the_flag():
    shown = tempdb_chapter.ward_display(_ward_by_hand())
    assert "as_ward" not in shown.columns and list(shown["order"]) == ["3 > 2 > 1", "3 > 2 > 1", "3 > 1 > 2"]
    assert list(shown["test_1_per_s"]) == [21_767.0, 2_402.0, 10_111.0]
    assert list(shown["test_2_per_s"]) == [58_191.0, 9_330.0, 10_081.0]
    assert list(shown["test_2_vs_1_pct"]) == [167.3, 288.4, -0.3]
