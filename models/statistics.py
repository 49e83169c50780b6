"""Every confidence interval the package reports, in one place: Student's t, replicate means, batch means and
the difference of two means.

A quantile is rounded to six decimals, so that no interval carries a numerical library's last digits (they
change with the CPU), and sums are exact (``math.fsum``), so that the same values give the same interval in
any order on any machine.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Sequence

import numpy as np

LEVEL = 0.95  # the two-sided confidence every interval in the book is given at


@functools.lru_cache(maxsize=None)
def t_quantile(dof: float, level: float = LEVEL) -> float:
    """The two-sided Student-t quantile of ``level`` with ``dof`` degrees of freedom, rounded to 6 decimals.

    ``dof`` is a whole number of values less one, or (Welch's difference of two means) a real number.
    """
    from scipy import stats  # scipy loads only when an interval is first asked for

    if isinstance(dof, bool) or not isinstance(dof, numbers.Real) or not dof >= 1:
        raise ValueError(f"dof={dof!r} is out of range: use 1 or more (two or more values)")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r} is out of range: use a share between 0 and 1")
    return round(float(stats.t.ppf(0.5 + level / 2.0, dof)), 6)


def mean_ci(values: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Mean and confidence half-width of independent ``values`` (replicates); half-width 0 for one value."""
    count = len(values)
    if count < 1:
        raise ValueError("values=[] is out of range: give one or more values")
    mean = math.fsum(values) / count
    if count < 2:
        return mean, 0.0
    variance = math.fsum((value - mean) ** 2 for value in values) / (count - 1)
    return mean, t_quantile(count - 1, level) * math.sqrt(variance / count)


def batch_means(samples: Sequence[float], batches: int = 20) -> tuple[float, float, np.ndarray]:
    """Mean, standard error and the batch means of one correlated series, cut into ``batches`` equal batches.

    Batches long enough to be nearly independent make their means' spread an honest standard error where the
    samples' own spread (correlated in time) is not.  The last ``len % batches`` samples are left out.
    """
    series = np.asarray(samples, dtype=np.float64)
    if isinstance(batches, bool) or not isinstance(batches, int) or not 2 <= batches <= series.size:
        raise ValueError(f"batches={batches!r} is out of range: use 2 to {series.size} for {series.size} samples")
    size = series.size // batches
    means = series[: size * batches].reshape(batches, size).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(batches)), means


def batch_means_ci(samples: Sequence[float], batches: int = 20, level: float = LEVEL) -> tuple[float, float]:
    """Mean and confidence half-width of one correlated series by non-overlapping batch means."""
    mean, error, _ = batch_means(samples, batches)
    return mean, t_quantile(batches - 1, level) * error


def difference_ci(values: Sequence[float], reference: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Difference of the means of two independent samples and its confidence half-width (Welch's t).

    Neither sample's variance is assumed equal to the other's; the degrees of freedom are Welch and
    Satterthwaite's.  Both samples need two or more values.
    """
    for name, sample in (("values", values), ("reference", reference)):
        if len(sample) < 2:
            raise ValueError(f"{name} has {len(sample)} value(s): give two or more")
    (mean, _), (ref_mean, _) = mean_ci(values, level), mean_ci(reference, level)
    shares = [math.fsum((x - m) ** 2 for x in sample) / (len(sample) - 1) / len(sample)
              for sample, m in ((values, mean), (reference, ref_mean))]
    spread = shares[0] + shares[1]
    if spread == 0.0:
        return mean - ref_mean, 0.0
    dof = spread ** 2 / (shares[0] ** 2 / (len(values) - 1) + shares[1] ** 2 / (len(reference) - 1))
    return mean - ref_mean, t_quantile(max(float(dof), 1.0), level) * math.sqrt(spread)
