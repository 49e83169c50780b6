"""Play another CPU: nudge what BLAS- and LAPACK-backed routines return, as a different kernel would.

OpenBLAS picks its kernels by CPU family, so a least-squares fit returns
slightly different digits on another machine (a USL sigma moved by 7e-9
relative between Haswell and SkylakeX kernels).  :func:`install` wraps the
numerical routines the book uses (or might) so that every float they return
is scaled by ``1 + JITTER``, a larger change than any kernel makes.

``conftest.py`` (at the repository root) installs it in every kernel nbval starts, so the
notebooks run "on another CPU" and their stored outputs, computed without it,
must still match: a fitted number stored unrounded fails nbval at once, on
any machine.  Set ``LATCH_CPU_JITTER=0`` to turn it off (for a one-off check
under a real ``OPENBLAS_CORETYPE``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from typing import Any, Callable, Iterator

import numpy as np

JITTER = 2.0**-24  # about 6e-8 relative
MARK = "__cpu_jitter__"

# module -> routines whose results come from BLAS/LAPACK or an iterative solver.
ROUTINES = {
    "numpy": ("polyfit",),
    "numpy.linalg": ("lstsq", "solve", "inv", "pinv", "det", "eig", "eigh", "eigvals", "eigvalsh",
                     "svd", "qr", "cholesky"),
    "scipy.linalg": ("lstsq", "solve", "inv", "pinv", "det", "eig", "eigh", "svd", "qr", "cholesky"),
    "scipy.optimize": ("least_squares", "curve_fit", "leastsq", "minimize", "minimize_scalar",
                       "root", "nnls", "lsq_linear", "linprog"),
    "scipy.stats": ("linregress", "theilslopes", "siegelslopes"),
}


def nudge(value: Any) -> Any:
    """``value`` with every float in it scaled by 1 + JITTER (arrays, tuples, lists, dicts, result objects)."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, np.ndarray):
        return value * (1.0 + JITTER) if np.issubdtype(value.dtype, np.inexact) else value
    if isinstance(value, (float, np.floating)):
        return type(value)(value * (1.0 + JITTER))
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # namedtuples and scipy's result bunches
        return type(value)(**{k: nudge(v) for k, v in value._asdict().items()})
    if isinstance(value, (tuple, list)):
        return type(value)(nudge(v) for v in value)
    if isinstance(value, dict):  # scipy's OptimizeResult is a dict
        out = type(value)(value)
        for key in ("x", "fun", "cost", "jac", "slope", "intercept"):
            if key in out:
                out[key] = nudge(out[key])
        return out
    return value


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def jittered(*args: Any, **kwargs: Any) -> Any:
        return nudge(fn(*args, **kwargs))

    setattr(jittered, MARK, True)
    return jittered


def install() -> list[str]:
    """Wrap every routine in ROUTINES that exists (once); return the names wrapped."""
    done = []
    for module_name, names in ROUTINES.items():
        module = importlib.import_module(module_name)
        for name in names:
            fn = getattr(module, name, None)
            if fn is None or getattr(fn, MARK, False):
                continue
            setattr(module, name, _wrap(fn))
            done.append(f"{module_name}.{name}")
    return done


def uninstall() -> None:
    """Put every wrapped routine back."""
    for module_name, names in ROUTINES.items():
        module = importlib.import_module(module_name)
        for name in names:
            fn = getattr(module, name, None)
            if fn is not None and getattr(fn, MARK, False):
                setattr(module, name, fn.__wrapped__)


@contextlib.contextmanager
def active() -> Iterator[None]:
    """Run the block jittered, then restore the routines."""
    install()
    try:
        yield
    finally:
        uninstall()


def installed() -> bool:
    """True when this process runs jittered."""
    return bool(getattr(np.polyfit, MARK, False))
