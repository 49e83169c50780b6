"""Session set-up for every pytest run here (tests/ and nbval on notebooks/): kernels run "on another CPU".

Every Jupyter kernel started from a test process (nbval's, one per notebook)
loads an IPython start-up file that installs :mod:`tests.cpu_jitter`, unless
``LATCH_CPU_JITTER=0``.  The notebooks' stored outputs were computed without
it, so nbval then fails on any stored number that carries a fit's or BLAS's
last digits: the bug class of a CPU-dependent stored output, caught on any
machine.  The site build runs no kernel: it shows the stored outputs.

It also loads tests/nbval_prose.py, which extends nbval's comparison to the prose's stored inline values.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

JITTER_MODULE = Path(__file__).resolve().parent / "tests" / "cpu_jitter.py"
PROSE_PLUGIN = Path(__file__).resolve().parent / "tests" / "nbval_prose.py"

STARTUP = f'''\
import os
if os.environ.get("LATCH_CPU_JITTER", "1") != "0":
    import importlib.util as _util
    _spec = _util.spec_from_file_location("cpu_jitter", {str(JITTER_MODULE)!r})
    _jitter = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_jitter)
    _jitter.install()
    del _util, _spec, _jitter
'''


def pytest_configure(config) -> None:
    """Register the prose check beside nbval; point IPYTHONDIR of this process's future kernels at a profile
    whose start-up file installs the jitter."""
    if not config.pluginmanager.has_plugin("nbval_prose"):
        spec = importlib.util.spec_from_file_location("nbval_prose", PROSE_PLUGIN)
        plugin = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plugin)
        config.pluginmanager.register(plugin, "nbval_prose")
    if os.environ.get("LATCH_CPU_JITTER_DIR"):
        return
    ipython_dir = Path(tempfile.mkdtemp(prefix="latch-ipython-"))
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-cpu-jitter.py").write_text(STARTUP)
    os.environ["IPYTHONDIR"] = str(ipython_dir)
    os.environ["LATCH_CPU_JITTER_DIR"] = str(ipython_dir)
    config.add_cleanup(lambda: shutil.rmtree(ipython_dir, ignore_errors=True))
