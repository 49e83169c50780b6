"""Values a notebook stores (numbers the prose quotes, tables, chart data), rounded to what the reader sees.

nbval compares a notebook's stored outputs with a fresh run on the CI
machine, so a stored number must not depend on the CPU.  The engine's own
arithmetic is exact and portable, but fits and optimisers (scipy, LAPACK),
BLAS dot products and numpy's vectorised exp/log change their last digits
from one CPU family to the next: a USL sigma of 0.1434761116 on one machine
was 0.1434761126 on another.  Everything stored therefore goes through this
module: :data:`DIGITS` significant digits by default (more than any page
shows, far fewer than a double carries, so last-bit noise never reaches
them), :data:`CHART` digits for chart data (what a chart can draw), and
:data:`FITTED` digits for values that come out of an iterative fit, whose
answer is only as exact as the solver's tolerance (:mod:`models.figures` holds
:func:`significant`, :data:`DIGITS` and :data:`FITTED`, which the fitting code shares).

It also names the stored tables' shared column convention (:data:`CI_SUFFIX`),
which the sweeps write and the charts read, so neither has to import the other,
and says where the book's folder is (:func:`book_root`): the one place the book
layer finds its stored data, vendored assets and test captures, so it works the
same from a checkout, an installed package, a notebook or the command line.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import types
from pathlib import Path
from typing import Any

import numpy as np

from models.figures import DIGITS, FITTED, significant  # the rounding the fitting code shares

__all__ = ["DIGITS", "CHART", "FITTED", "CI_SUFFIX", "significant", "fitted", "Glued", "quoted", "glue",
           "BOOK_ROOT_VARIABLE", "BookNotFound", "find_book_root", "book_root", "book_path", "data_dir"]

CHART = 6    # significant digits for the data inlined in a chart's spec (what a chart can draw)
CI_SUFFIX = "_ci95"  # a stored table's column of a metric's 95% confidence half-width: <metric>_ci95
BOOK_ROOT_VARIABLE = "LATCH_BOOK_ROOT"  # the environment variable that names the book's folder
BOOK_MARKERS = ("_config.yml", "_toc.yml")  # the files that make a folder the book's (Jupyter Book's configuration)


def fitted(result: Any) -> Any:
    """A fit's output with every float rounded to FITTED digits: a float, or a dataclass of floats (USLFit).

    Round a fit before anything is computed from it (a fitted curve, a
    table), so what follows is the same on every CPU too.
    """
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.replace(result, **{f.name: significant(getattr(result, f.name), FITTED)
                                              for f in dataclasses.fields(result)})
    return significant(result, FITTED)


class Glued(types.SimpleNamespace):
    """The numbers a chapter's prose quotes, by name.

    A markdown cell reads one with an inline expression, ``{eval}`f"{quoted.q4_tp:,.0f}"```: myst-nb
    evaluates it when it builds the site, jupyterlab-myst when a reader runs the notebook, so both
    show the same sentence with the same number.
    """


# The numbers the prose quotes, one namespace per kernel: every notebook imports it beside glue().
quoted = Glued()


def glue(name: str, value: Any, digits: int = DIGITS) -> Any:
    """Store ``value`` (rounded) as ``quoted.<name>`` for the prose to quote; returns what was stored.

    Round a fit's output with :func:`fitted` first (or pass ``digits=FITTED``).
    """
    if not name.isidentifier():
        raise ValueError(f"glue name {name!r} is not a Python identifier: the prose reads it as quoted.{name}")
    if isinstance(value, np.generic):
        value = value.item()
    stored = significant(value, digits)
    setattr(quoted, name, stored)
    return stored


class BookNotFound(FileNotFoundError):
    """The book's folder is neither named by :data:`BOOK_ROOT_VARIABLE` nor found above the working directory.

    Its ``filename`` is the folder looked from, so the command line names it: ``error: <folder>: <why>``.
    """

    def __init__(self, why: str, folder: Path) -> None:
        super().__init__(errno.ENOENT, why, str(folder))


def _is_book(folder: Path) -> bool:
    return all((folder / marker).is_file() for marker in BOOK_MARKERS)


def find_book_root(start: Path | None = None) -> Path | None:
    """The book's folder: :data:`BOOK_ROOT_VARIABLE` when set, else the nearest folder at or above ``start``
    (the working directory) that holds :data:`BOOK_MARKERS`; None when there is none.

    A variable naming a folder that is not the book's is an error (:class:`BookNotFound`), not a reason to
    look elsewhere: it was set on purpose.
    """
    named = os.environ.get(BOOK_ROOT_VARIABLE)
    if named:
        folder = Path(named).expanduser().resolve()
        if not _is_book(folder):
            raise BookNotFound(f"{BOOK_ROOT_VARIABLE}={named!r} is not the book's folder: it must hold "
                               f"{' and '.join(BOOK_MARKERS)}", folder)
        return folder
    here = (start or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if _is_book(folder)), None)


def book_root(start: Path | None = None) -> Path:
    """The book's folder (:func:`find_book_root`), or a :class:`BookNotFound` that says how to name it."""
    found = find_book_root(start)
    if found is None:
        raise BookNotFound(f"the book's folder (the one holding {' and '.join(BOOK_MARKERS)}) is not at or above "
                           f"this folder: run from inside the book, or set {BOOK_ROOT_VARIABLE} to its folder",
                           (start or Path.cwd()).resolve())
    return found


def book_path(*parts: str) -> Path:
    """A path inside the book's folder: ``book_path("book", "data")`` is its stored sweeps."""
    return book_root().joinpath(*parts)


def data_dir() -> Path:
    """The book's stored sweeps and studies, ``book/data`` in the book's folder."""
    return book_path("book", "data")
