"""Values a notebook stores (glue records, tables, chart data), rounded to what the reader sees.

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


def glue(name: str, value: Any, digits: int = DIGITS) -> Any:
    """Glue ``value`` (rounded) under ``name`` for the prose, without displaying it; returns what was stored.

    Round a fit's output with :func:`fitted` first (or pass ``digits=FITTED``).
    """
    from myst_nb import glue as _glue  # notebook-only dependency: keep the engine importable without it

    if isinstance(value, np.generic):
        value = value.item()
    stored = significant(value, digits)
    _glue(name, stored, display=False)
    return stored
