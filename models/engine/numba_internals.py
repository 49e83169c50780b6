"""Every use of numba's internals in the engine, in one module: what each is for.

Written against numba 0.68.1 and llvmlite 0.50.0 (:data:`WRITTEN_FOR`).  None of these names is numba's public
API, so an upgrade may move or change them; ``tests/test_numba_internals.py`` checks each one and names the
installed version when one has changed.

1. The cache locators (``numba.core.caching``: ``CacheImpl._locator_classes``, the user-provided, in-tree and
   user-wide locator classes and their ``get_source_stamp`` and ``from_function``).  numba keys a cached kernel
   on its own source file, but the engine's kernels inline each other across files: a kernel cached before an
   edit to ``state.py`` would keep the old table layout.  The engine's locators key every kernel in
   ``models/engine/`` on a hash of all its files, so an edit anywhere there recompiles the whole engine.
2. The :class:`Table` array type (``ArrayModel``, ``imputils.lower_builtin``, ``arrayobj.make_array``,
   ``load_item`` and ``store_item``, ``cgutils.get_item_pointer2``).  A table's element is read and written at
   its indices as they are: no wraparound of a negative index and no bounds check (numba checks none unless
   ``NUMBA_BOUNDSCHECK`` is set; a table never does).  An index outside a table reaches the next table's words,
   so the kernels keep every index in range; the tests hold what happens at a bound.
3. :func:`view` and :func:`fixed` (``arrayobj.populate_array``, ``imputils.impl_ret_borrowed``, LLVM's
   ``invariant.load``): a table cut from the buffer's address in a few instructions (numba's ``reshape`` calls
   out to a C helper, which cost more than the event it served), and a header word loaded once per kernel.
4. :func:`branch_without_jump_tables`: an LLVM function attribute set through llvmlite's
   ``builder.function.attributes``, which has no name for it.
5. The cache's index (a dispatcher's ``_cache``, ``_index_key``, ``_cache_file._load_index``, ``_cache_path``
   and ``targetctx``; ``registry.CPUDispatcher``), read by :mod:`models.engine.cache`.
6. The ``_nrt=False`` compile option (:data:`NO_RUNTIME`): kernels that allocate nothing need no
   reference-counting runtime, and without it they call nothing outside themselves.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from pathlib import Path

from numba import types
from numba.core import caching, cgutils, config
from numba.core.datamodel.models import ArrayModel
from numba.core.imputils import impl_ret_borrowed, lower_builtin
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic, register_model
from numba.np.arrayobj import load_item, make_array, populate_array, store_item

WRITTEN_FOR = {"numba": "0.68.1", "llvmlite": "0.50.0"}  # the versions every use below was written and tested on
ENGINE_DIR = Path(__file__).resolve().parent
WORD_BYTES = 8  # every table holds int64, uint64 or float64
NO_RUNTIME = {"_nrt": False}  # numba's private option: compile without the reference-counting runtime

__all__ = ["CPUDispatcher", "ENGINE_DIR", "ENGINE_LOCATORS", "NO_RUNTIME", "Table", "WORD_BYTES", "WRITTEN_FOR",
           "branch_without_jump_tables", "cache_path", "fixed", "install_locators", "is_cached", "source_hash", "view"]


# ----------------------------------------------------------------------------- 1. the cache keyed on the engine


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


def install_locators() -> None:
    """Put the engine's locators ahead of numba's own (once; numba asks each in turn, first match wins).

    numba also reads a list from NUMBA_CACHE_LOCATOR_CLASSES; when that is set, it is left as it is.
    """
    locators = caching.CacheImpl._locator_classes
    if not config.CACHE_LOCATOR_CLASSES and locators[0] is not ENGINE_LOCATORS[0]:
        locators[0:0] = ENGINE_LOCATORS


def is_cached(kernel: CPUDispatcher, argtypes: tuple) -> bool:
    """Whether numba's cache index holds machine code for ``kernel`` at ``argtypes`` for this source."""
    cache = kernel._cache
    key = cache._index_key(argtypes, kernel.targetctx.codegen())
    return key in cache._cache_file._load_index()


def cache_path(kernel: CPUDispatcher) -> str:
    """The folder numba keeps ``kernel``'s cache in."""
    return kernel._cache._cache_path


# ----------------------------------------------------------------------------- 2. tables indexed as they are


class Table(types.Array):
    """A C-ordered array cut from the state buffer, whose element access takes indices as they are.

    numba wraps a negative index around (``a[-1]`` is the last element) with a
    compare and a select per index, about forty per acquire in the engine.  No
    kernel indexes from the end, so a table's elements are read and written
    without that step: a full integer index is one multiply-add and a load.
    """

    def __init__(self, dtype: types.Type, ndim: int):
        super().__init__(dtype, ndim, "C", name=f"table({dtype}, {ndim}d)")


register_model(Table)(ArrayModel)


def _element_pointer(context, builder, table_type, table, index_type, index):
    """The address of the element at a full integer index, or None for any other kind of index."""
    if isinstance(index_type, types.Integer):
        index_types, indices = (index_type,), (index,)
    elif isinstance(index_type, types.BaseTuple) and all(isinstance(i, types.Integer) for i in index_type):
        index_types, indices = tuple(index_type), cgutils.unpack_tuple(builder, index, len(index_type))
    else:
        return None
    if len(indices) != table_type.ndim:
        return None
    array = make_array(table_type)(context, builder, table)
    indices = [context.cast(builder, i, t, types.intp) for i, t in zip(indices, index_types)]
    return cgutils.get_item_pointer2(context, builder, array.data, cgutils.unpack_tuple(builder, array.shape),
                                     cgutils.unpack_tuple(builder, array.strides), "C", indices)


@lower_builtin(operator.getitem, Table, types.Integer)
@lower_builtin(operator.getitem, Table, types.BaseTuple)
def _table_getitem(context, builder, sig, args):
    """``table[i, j]``: the element, with no wraparound (other indexing is numba's own)."""
    pointer = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
    if pointer is None:
        return context.get_function(operator.getitem, sig.replace(args=(types.Array(
            sig.args[0].dtype, sig.args[0].ndim, "C"),) + sig.args[1:]))(builder, args)
    return load_item(context, builder, sig.args[0], pointer)


@lower_builtin(operator.setitem, Table, types.Integer, types.Any)
@lower_builtin(operator.setitem, Table, types.BaseTuple, types.Any)
def _table_setitem(context, builder, sig, args):
    """``table[i, j] = value``: a store, with no wraparound (other indexing is numba's own)."""
    table_type, index_type, value_type = sig.args
    pointer = _element_pointer(context, builder, table_type, args[0], index_type, args[1])
    if pointer is None:
        return context.get_function(operator.setitem, sig.replace(args=(types.Array(
            table_type.dtype, table_type.ndim, "C"), index_type, value_type)))(builder, args)
    store_item(context, builder, table_type, context.cast(builder, args[2], value_type, table_type.dtype), pointer)
    return context.get_dummy_value()


# ----------------------------------------------------------------------------- 3. views of the buffer


@intrinsic
def view(typingctx, mem, start, shape, dtype):
    """The C-ordered ``dtype`` array of ``shape`` at word ``start`` of the buffer at address ``mem``.

    A few instructions and no checks.  The array borrows the buffer: it lives
    only inside the kernel call, while the caller holds the buffer.
    """
    view_type = Table(dtype.dtype, len(shape))

    def codegen(context, builder, sig, args):
        out = make_array(view_type)(context, builder)
        intp = context.get_value_type(types.intp)
        itemsize = context.get_abi_sizeof(context.get_data_type(dtype.dtype))
        address = builder.add(args[0], builder.mul(args[1], intp(WORD_BYTES)))
        dims = cgutils.unpack_tuple(builder, args[2])
        strides, step = [], intp(itemsize)
        for dim in reversed(dims):
            strides.insert(0, step)
            step = builder.mul(step, dim)
        populate_array(out, data=builder.inttoptr(address, out.data.type), shape=dims, strides=strides,
                       itemsize=intp(itemsize), meminfo=None)
        return impl_ret_borrowed(context, builder, view_type, out._getvalue())
    return view_type(mem, start, shape, dtype), codegen


@intrinsic
def fixed(typingctx, mem, k):
    """Word ``k`` of the buffer's header (a size or an offset), loaded as invariant.

    The header is written once, before the run.  Telling LLVM so lets it load
    each offset once per kernel instead of after every store into the buffer
    (every table is a view of the same memory, so any store might otherwise
    have changed it).
    """
    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        address = builder.add(args[0], builder.mul(args[1], intp(WORD_BYTES)))
        load = builder.load(builder.inttoptr(address, intp.as_pointer()))
        load.set_metadata("invariant.load", builder.module.add_metadata([]))
        return load
    return types.int64(mem, k), codegen


# ----------------------------------------------------------------------------- 4. branches as compare chains


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
