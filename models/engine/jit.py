"""How the engine's kernels are compiled, and the numba cache keyed on this whole package.

Importing this module installs the cache locators of :mod:`models.engine.numba_internals` before any kernel is
defined, so an edit anywhere in ``models/engine/`` recompiles every kernel on its next import.
"""

from __future__ import annotations

from models.engine.numba_internals import NO_RUNTIME, branch_without_jump_tables, install_locators

__all__ = ["JIT", "JIT_CALL", "JIT_HOT", "JIT_INLINE", "branch_without_jump_tables"]

JIT = dict(cache=True, error_model="numpy", **NO_RUNTIME)  # cached, no runtime; LLVM decides what to inline
JIT_CALL = dict(JIT, forceinline=False)  # a call of its own: rare paths and the loop itself
JIT_HOT = dict(JIT, forceinline=True)  # inlined by LLVM wherever it is called
JIT_INLINE = dict(JIT, inline="always")  # inlined by numba: kernels with one call site

install_locators()
