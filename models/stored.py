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
answer is only as exact as the solver's tolerance.
"""

from __future__ import annotations

import dataclasses
import math
import types
from numbers import Integral, Real
from typing import Any

import numpy as np

DIGITS = 10  # significant digits kept for any stored float
CHART = 6    # for the data inlined in a chart's spec
FITTED = 4   # for fitted or optimised values (solver tolerance, not machine precision, limits them)
_EXACT_INTEGERS = 2.0**53


def significant(value: Any, digits: int = DIGITS) -> Any:
    """``value`` rounded to ``digits`` significant digits.

    Integers (also whole floats, such as counts), NaN, infinities and
    non-numbers pass through unchanged.
    """
    if isinstance(value, (bool, np.bool_, Integral)) or not isinstance(value, Real):
        return value
    x = float(value)
    if not math.isfinite(x) or (x.is_integer() and abs(x) < _EXACT_INTEGERS):
        return x
    return float(f"{x:.{digits - 1}e}")


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

    A markdown cell reads one with an inline expression, ``{eval}`f"{g.q4_tp:,.0f}"```: myst-nb
    evaluates it when it builds the site, jupyterlab-myst when a reader runs the notebook, so both
    show the same sentence with the same number.
    """


g = Glued()  # one per kernel: every notebook imports it beside glue()


def glue(name: str, value: Any, digits: int = DIGITS) -> Any:
    """Store ``value`` (rounded) as ``g.<name>`` for the prose to quote; returns what was stored.

    Round a fit's output with :func:`fitted` first (or pass ``digits=FITTED``).
    """
    if not name.isidentifier():
        raise ValueError(f"glue name {name!r} is not a Python identifier: the prose reads it as g.{name}")
    if isinstance(value, np.generic):
        value = value.item()
    stored = significant(value, digits)
    setattr(g, name, stored)
    return stored
