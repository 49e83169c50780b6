"""The engine's compiled cache as numba keeps it: which kernels there are, how many this process loaded or
compiled, where the cache lives and whether the main kernel is in it yet (for `python -m models warm` and the
CLI's "compiling" hint). Reads numba's private cache API through :mod:`models.engine.numba_internals`; any
surprise counts as a warm cache."""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

from numba import types

import models.engine
from models.engine.loop import run_events
from models.engine.numba_internals import CPUDispatcher, cache_path, is_cached


def engine_cache_is_cold() -> bool:
    """Whether a run will first compile the event loop: numba has no machine code cached for it yet.

    Looks up the main kernel (:func:`models.engine.loop.run_events`) in numba's
    cache index for this machine and this source, as numba does before it
    compiles.  Anything unexpected (the cache API is numba's private one)
    counts as warm, so the hint never stops a run.
    """
    try:
        if run_events.overloads:  # compiled or loaded in this process already
            return False
        return not is_cached(run_events, (types.int64,) * 3)
    except Exception:
        return False


def engine_kernels() -> dict[str, Any]:
    """Every compiled kernel (numba dispatcher) defined in models/engine/, by ``module.name``."""
    found = {}
    for info in pkgutil.iter_modules(models.engine.__path__):
        module = importlib.import_module(f"models.engine.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == module.__name__:
                found[f"{info.name}.{name}"] = value
    return found


def cache_counts() -> tuple[int, int]:
    """(kernels loaded from numba's cache, kernels compiled) in this process so far, over the whole engine."""
    kernels = engine_kernels().values()
    return (sum(sum(k.stats.cache_hits.values()) for k in kernels),
            sum(sum(k.stats.cache_misses.values()) for k in kernels))


def engine_cache_dir() -> str:
    """Where numba keeps the engine's compiled kernels (models/engine/__pycache__, or NUMBA_CACHE_DIR)."""
    try:
        return cache_path(run_events)
    except AttributeError:  # numba's private API changed: fall back to the rule
        return os.environ.get("NUMBA_CACHE_DIR") or "models/engine/__pycache__"
