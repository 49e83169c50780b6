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
which the sweeps write and the charts read, so neither has to import the other.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import numpy as np

from models.figures import DIGITS, FITTED, significant  # the rounding the fitting code shares

__all__ = ["DIGITS", "CHART", "FITTED", "CI_SUFFIX", "significant", "fitted", "Glued", "quoted", "glue"]

CHART = 6    # significant digits for the data inlined in a chart's spec (what a chart can draw)
CI_SUFFIX = "_ci95"  # a stored table's column of a metric's 95% confidence half-width: <metric>_ci95


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
