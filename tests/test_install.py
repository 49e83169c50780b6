"""The library installs on its own: ``pip install .`` in a fresh venv gives a working ``python -m models``.

One test, in four steps, each a subprocess with a generous outer limit (no
short clock: a busy machine only makes it slower):

1. a fresh venv in a temporary folder, and ``pip install -c requirements.txt``
   of a copy of the package's sources (``pyproject.toml`` and ``models/``): a
   real, non-editable install, built from a copy so that the build writes
   nothing into the checkout; pip's cache makes it quick, but it needs PyPI
   (a failure says so);
2. from a working directory outside the repository, the imported ``models`` is
   the installed one, and the book layer's extra packages are not installed;
3. ``python -m models run convoy``, small (the first run also compiles the
   engine into the installed package's cache, about half a minute);
4. ``python -m models fit`` of a capture from ``tests/captures`` and
   ``python -m models whatif`` of one change to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "tests" / "captures" / "hot_page_sales.csv"  # the hot page: fitted in seconds, one change to try
INSTALL_LIMIT_S = 1_800  # outer limits only: a busy machine is slower, never wrong
COMMAND_LIMIT_S = 1_200


def _environment(venv: Path) -> dict[str, str]:
    """The environment of a reader's shell with the venv active: nothing points back at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NUMBA_CACHE_DIR", "LATCH_BOOK_ROOT")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], limit_s: float, what: str) -> str:
    """Run ``args``; its stdout, or a failure that shows what it said."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=limit_s)
    assert done.returncode == 0, (f"{what} exited {done.returncode}:\n--- stdout\n{done.stdout[-3000:]}"
                                  f"\n--- stderr\n{done.stderr[-3000:]}")
    return done.stdout


def _copy_sources(into: Path) -> Path:
    """The package's sources as the wheel is built from them (no caches, no build folders)."""
    source = into / "source"
    source.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", source / "pyproject.toml")
    shutil.copytree(ROOT / "models", source / "models",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    return source


def test_pip_install_gives_a_working_command_line_outside_the_checkout(tmp_path):
    began = time.monotonic()
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=INSTALL_LIMIT_S)
    python = str(venv / "bin" / "python")
    env = _environment(venv)
    install = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                              "-c", str(ROOT / "requirements.txt"), str(_copy_sources(tmp_path))],
                             cwd=elsewhere, env=env, capture_output=True, text=True, timeout=INSTALL_LIMIT_S)
    assert install.returncode == 0, (
        "pip could not install the package into a fresh venv (this test needs PyPI, or pip's cache, for the "
        f"dependencies):\n{install.stderr[-3000:]}")
    installed = time.monotonic()

    where = _run([python, "-c", "import importlib.util, models; print(models.__file__); "
                  "print(importlib.util.find_spec('altair') is None)"], elsewhere, env, COMMAND_LIMIT_S, "import")
    module_file, no_altair = where.split()
    assert Path(module_file).resolve().is_relative_to(venv.resolve()), f"imported {module_file}, not the install"
    assert not Path(module_file).resolve().is_relative_to(ROOT), module_file
    assert no_altair == "True", "the library's install pulled in the book layer's altair"

    out = _run([python, "-m", "models", "run", "convoy", "requests=2000", "arrival_rate_per_s=400"],
               elsewhere, env, COMMAND_LIMIT_S, "python -m models run convoy")
    assert out.startswith("convoy: ") and "requests/s" in out.splitlines()[0] and "sys.dm_os_latch_stats" in out

    fitted = _run([python, "-m", "models", "fit", str(CAPTURE)], elsewhere, env, COMMAND_LIMIT_S,
                  "python -m models fit")
    assert fitted.startswith("diagnosis: PAGELATCH -> scenario last-page-insert"), fitted[:300]
    assert "fitted" in fitted and "cpu_before_us" in fitted

    changed = _run([python, "-m", "models", "whatif", str(CAPTURE), "batch=10"], elsewhere, env, COMMAND_LIMIT_S,
                   "python -m models whatif")
    assert "sets batch_rows=10" in changed and "rows/s" in changed
    print(f"install {installed - began:.0f} s, commands {time.monotonic() - installed:.0f} s")
