"""How the engine's kernels are compiled, and a numba cache that an edit to any engine file invalidates.

numba keys a cached kernel on its own source file only, but the engine's
kernels inline each other across files: a kernel cached before an edit to
:mod:`models.engine.state` would keep the old table layout.  The locators
here key every kernel in this package on a hash of all its files, so an edit
anywhere in ``models/engine/`` recompiles the whole engine on its next import.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba import types
from numba.core import caching, config
from numba.extending import intrinsic

ENGINE_DIR = Path(__file__).resolve().parent

_BASE = dict(cache=True, _nrt=False, error_model="numpy")
JIT_CALL = dict(_BASE, forceinline=False)  # a call of its own: rare paths and the loop itself
JIT_HOT = dict(_BASE, forceinline=True)  # inlined by LLVM wherever it is called
JIT_INLINE = dict(_BASE, inline="always")  # inlined by numba: kernels with one call site


def source_hash(folder: Path = ENGINE_DIR) -> bytes:
    """SHA-256 over the names and contents of every ``.py`` file in ``folder``, in name order."""
    stamps = tuple((path.name, path.stat().st_mtime_ns, path.stat().st_size)
                   for path in sorted(folder.glob("*.py")))
    return _hash_files(str(folder), stamps)


@functools.lru_cache(maxsize=8)
def _hash_files(folder: str, stamps: tuple) -> bytes:
    """The hash for one state of the folder (``stamps``: names, times and sizes, so an edit re-hashes)."""
    digest = hashlib.sha256()
    for name, _, _ in stamps:
        digest.update(name.encode() + b"\0" + (Path(folder) / name).read_bytes() + b"\0")
    return digest.digest()


class _EngineStamp:
    """A source stamp for the engine's kernels: the whole package's hash, not the kernel's own file's."""

    def get_source_stamp(self) -> bytes:
        return source_hash()

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != ENGINE_DIR:
            return None
        return super().from_function(py_func, py_file)


class EngineUserCacheLocator(_EngineStamp, caching.UserProvidedCacheLocator):
    """NUMBA_CACHE_DIR, when it is set, keyed on the whole engine."""


class EngineInTreeCacheLocator(_EngineStamp, caching.InTreeCacheLocator):
    """``models/engine/__pycache__``, keyed on the whole engine."""


class EngineUserWideCacheLocator(_EngineStamp, caching.UserWideCacheLocator):
    """The user-wide cache, when the package folder is read-only, keyed on the whole engine."""


ENGINE_LOCATORS = (EngineUserCacheLocator, EngineInTreeCacheLocator, EngineUserWideCacheLocator)
_locators = caching.CacheImpl._locator_classes  # (numba also reads a list from NUMBA_CACHE_LOCATOR_CLASSES)
if not config.CACHE_LOCATOR_CLASSES and _locators[0] is not ENGINE_LOCATORS[0]:
    _locators[0:0] = ENGINE_LOCATORS


@intrinsic
def branch_without_jump_tables(typingctx):
    """Compile the calling kernel's multi-way branches as compare chains, not jump tables.

    The event kind and the opcode each pick one of five or six paths; LLVM
    makes such a branch an indirect jump through a table, which the processor
    predicts worse than a short chain of compares (measured: about 2% of the loop's time).
    """
    def codegen(context, builder, sig, args):
        set.add(builder.function.attributes, '"no-jump-tables"="true"')  # a string attribute llvmlite has no name for
        return context.get_dummy_value()
    return types.none(), codegen
