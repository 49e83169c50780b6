"""numba's internals the engine relies on (models/engine/numba_internals.py) are still there and still behave.

Each failure names the installed numba and the version the engine was written for: an upgrade that moves or
changes one of these is found here, not as a wrong number in a run.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import llvmlite
import numba
import numpy as np
import pytest
from numba import njit
from numba.core import caching

import models.engine
from models.engine import numba_internals
from models.engine.clock import on_tick
from models.engine.loop import run_events
from models.engine.numba_internals import (
    ENGINE_DIR, ENGINE_LOCATORS, NO_RUNTIME, WRITTEN_FOR, Table, branch_without_jump_tables, cache_path, is_cached,
    source_hash,
)
from models.engine.state import G_NCOLS, S_NCOLS, W_ACQUIRES, W_NCOLS, allocate, tables

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = (f"installed numba {numba.__version__} and llvmlite {llvmlite.__version__}; the engine was written for "
            f"numba {WRITTEN_FOR['numba']} and llvmlite {WRITTEN_FOR['llvmlite']} (models/engine/numba_internals.py)")

# (module, name, the parameters the engine passes, in order): each is numba's private API.
SIGNATURES = [
    ("numba.core.cgutils", "get_item_pointer2", ["context", "builder", "data", "shape", "strides", "layout", "inds",
                                                 "wraparound", "boundscheck"]),
    ("numba.core.cgutils", "unpack_tuple", ["builder", "tup", "count"]),
    ("numba.core.imputils", "impl_ret_borrowed", ["ctx", "builder", "retty", "ret"]),
    ("numba.core.imputils", "lower_builtin", ["func", "argtys"]),
    ("numba.np.arrayobj", "make_array", ["array_type"]),
    ("numba.np.arrayobj", "load_item", ["context", "builder", "arrayty", "ptr"]),
    ("numba.np.arrayobj", "store_item", ["context", "builder", "arrayty", "val", "ptr"]),
    ("numba.np.arrayobj", "populate_array", ["array", "data", "shape", "strides", "itemsize", "meminfo", "parent"]),
    ("numba.core.caching.InTreeCacheLocator", "from_function", ["py_func", "py_file"]),
    ("numba.core.caching.UserProvidedCacheLocator", "get_source_stamp", ["self"]),
]


def _resolve(dotted: str):
    """A module, or a class inside one, by its dotted name."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("where,name,params", SIGNATURES, ids=[f"{w}.{n}" for w, n, _ in SIGNATURES])
def test_each_internal_is_there_with_the_parameters_the_engine_passes(where, name, params):
    try:
        found = getattr(_resolve(where), name)
    except (ImportError, AttributeError) as missing:
        pytest.fail(f"{where}.{name} is gone ({missing}): {VERSIONS}")
    got = list(inspect.signature(found).parameters)
    assert got == params, f"{where}.{name} now takes {got}, not {params}: {VERSIONS}"


def test_the_engine_locators_come_first_and_key_the_engine_kernels_on_the_whole_package():
    locators = caching.CacheImpl._locator_classes
    assert isinstance(locators, list), f"CacheImpl._locator_classes is a {type(locators)}: {VERSIONS}"
    if not numba.core.config.CACHE_LOCATOR_CLASSES:
        assert tuple(locators[:3]) == ENGINE_LOCATORS, f"the engine's locators are not first: {VERSIONS}"
    locator = run_events._cache._impl.locator
    assert isinstance(locator, ENGINE_LOCATORS), f"run_events is cached by {type(locator)}: {VERSIONS}"
    assert locator.get_source_stamp() == source_hash(), f"the stamp is not the package's hash: {VERSIONS}"
    expected = os.environ.get("NUMBA_CACHE_DIR") or str(ENGINE_DIR / "__pycache__")
    assert cache_path(run_events).startswith(expected), f"cache at {cache_path(run_events)}: {VERSIONS}"
    assert isinstance(is_cached(run_events, (numba.types.int64,) * 3), bool)


PROBE = """
import json, os, sys
from pathlib import Path
from numba import types
from models.engine.clock import on_tick
from models.engine.loop import run_events
from models.engine.numba_internals import cache_path, is_cached
cold = is_cached(on_tick, (types.float64,))
on_tick(1.0)
print(json.dumps({"path": cache_path(on_tick), "run_events": cache_path(run_events), "cold": cold,
                  "warm": is_cached(on_tick, (types.float64,)),
                  "files": sorted(str(p.relative_to(os.environ["NUMBA_CACHE_DIR"]))
                                  for p in Path(os.environ["NUMBA_CACHE_DIR"]).rglob("*clock*"))}))
"""


def test_a_kernel_is_cached_where_the_locator_says(tmp_path):
    """In a fresh process with NUMBA_CACHE_DIR set, the engine's clock kernel is compiled and cached there."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=str(ROOT), capture_output=True, text=True,
                           timeout=600)
    assert probe.returncode == 0, f"{probe.stderr[-2000:]}\n{VERSIONS}"
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["path"].startswith(str(tmp_path)) and seen["run_events"] == seen["path"], f"{seen}: {VERSIONS}"
    assert (seen["cold"], seen["warm"]) == (False, True), f"the cache index did not record it: {seen}: {VERSIONS}"
    assert any(name.endswith(".nbi") for name in seen["files"]), f"no index in {seen['files']}: {VERSIONS}"
    assert on_tick(1.0) == 1.0


@njit(cache=False)
def _at_the_bounds(mem, row, column):
    """A table's last cell written and read, and the cells just outside it read as they are."""
    t = tables(mem)
    workers = t.workers
    last_row = workers.shape[0] - 1
    workers[last_row, W_NCOLS - 1] = 77
    before = workers[0, -1]  # no wraparound: the word before the table, the run cells' last
    after = workers[last_row + 1, 0]  # no bounds check: the word after the table, the schedulers' first
    workers[row, column] = 5
    return workers[last_row, W_NCOLS - 1], before, after


def test_a_table_cell_is_read_and_written_where_python_sees_it_even_at_its_bounds():
    state = allocate(n_workers=3, n_schedulers=2, n_latches=1, program=1, trace_events=0, logged_acquires=0,
                     samples=1)
    state.run_cells[G_NCOLS - 1] = 12345
    state.schedulers[0, 0] = 678
    last, before, after = _at_the_bounds(state.address, 1, W_ACQUIRES)
    assert last == 77 and state.workers[2, W_NCOLS - 1] == 77, VERSIONS
    assert state.workers[1, W_ACQUIRES] == 5, VERSIONS
    assert before == 12345, f"workers[0, -1] read {before}: numba wrapped the index around ({VERSIONS})"
    assert after == 678, f"workers[rows, 0] read {after}, not the next table's first word ({VERSIONS})"
    assert state.workers.shape == (3, W_NCOLS) and state.schedulers.shape == (2, S_NCOLS)


def test_the_views_are_tables_and_other_indexing_is_numbas_own():
    @njit(cache=False)
    def row_sum(mem):
        t = tables(mem)
        return t.workers[1].sum() + t.workers[0, 1:3].sum()  # a row, a slice: numba's own getitem

    state = allocate(n_workers=2, n_schedulers=1, n_latches=1, program=1, trace_events=0, logged_acquires=0,
                     samples=1)
    state.workers[1] = 1
    state.workers[0, :] = 10
    assert row_sum(state.address) == W_NCOLS + 20, VERSIONS
    assert issubclass(Table, numba.types.Array)


def test_the_no_jump_tables_attribute_reaches_llvm():
    @njit(cache=False)
    def pick(kind):
        branch_without_jump_tables()
        if kind == 0:
            return 10
        elif kind == 1:
            return 20
        elif kind == 2:
            return 30
        elif kind == 3:
            return 40
        return 50

    assert [pick(k) for k in range(5)] == [10, 20, 30, 40, 50]
    (llvm,) = pick.inspect_llvm().values()
    assert '"no-jump-tables"="true"' in llvm, f"the attribute is not in the kernel's LLVM IR: {VERSIONS}"


def test_kernels_compile_without_the_runtime():
    kernel = njit(cache=False, **NO_RUNTIME)(lambda x: x + 1)
    assert kernel(1) == 2
    assert kernel.targetoptions.get("_nrt") is False, f"numba dropped the _nrt option: {VERSIONS}"
    assert run_events.targetoptions.get("_nrt") is False, VERSIONS


def test_every_internal_is_used_only_in_its_module():
    """No other engine file imports numba's internals: an upgrade's changes are all in one place."""
    private = ("numba.core", "numba.np", "numba.extending", "llvmlite")
    for path in sorted(Path(models.engine.__file__).parent.glob("*.py")):
        if path.name == Path(numba_internals.__file__).name:
            continue
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                assert not any(stripped.split()[1].startswith(p) for p in private), f"{path.name}: {stripped}"
            assert "._cache" not in line and "_nrt" not in line, f"{path.name}: {stripped}"
    assert np.dtype(np.int64).itemsize == numba_internals.WORD_BYTES
