"""The numba cache of the engine is keyed on every engine file, so an edit anywhere recompiles it all."""

from __future__ import annotations

import shutil
from pathlib import Path

import models.engine
from models.engine.cache import engine_kernels
from models.engine.numba_internals import ENGINE_LOCATORS, source_hash


def test_every_cached_engine_kernel_uses_an_engine_locator() -> None:
    kernels = engine_kernels()
    assert len(kernels) > 60  # the whole engine, not a handful
    cached = {name: k for name, k in kernels.items() if k._cache.__class__.__name__ != "NullCache"}
    assert "loop.run_events" in cached and "latch.release" in cached
    for name, kernel in cached.items():
        assert isinstance(kernel._cache._impl.locator, ENGINE_LOCATORS), name


def test_the_stamp_is_the_whole_package_and_moves_with_an_edit_to_any_file(tmp_path: Path) -> None:
    copy = tmp_path / "engine"
    shutil.copytree(Path(models.engine.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_hash(copy)
    assert before == source_hash(copy)
    for name in ("state.py", "latch.py", "events.py"):
        with open(copy / name, "a") as handle:
            handle.write("\n# an edit\n")
        after = source_hash(copy)
        assert after != before, name
        before = after


def test_kernels_outside_the_engine_keep_numbas_own_locator() -> None:
    from numba import njit

    @njit(cache=True)
    def outside(x):
        return x + 1

    assert outside(1) == 2
    assert not isinstance(outside._cache._impl.locator, ENGINE_LOCATORS)
