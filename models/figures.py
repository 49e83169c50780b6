"""Numbers rounded to what a reader sees, so a stored or printed value does not depend on the CPU.

The engine's arithmetic is exact and portable, but fits and optimisers
(scipy, LAPACK), BLAS dot products and numpy's vectorised exp/log change
their last digits from one CPU family to the next.  :func:`significant`
keeps :data:`DIGITS` significant digits by default and :data:`FITTED` for
values that come out of an iterative fit, whose answer is only as exact as
the solver's tolerance.  The fit and the book both round through here.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

DIGITS = 10  # significant digits kept for any stored float
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
