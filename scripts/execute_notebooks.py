"""Re-execute the notebooks in place, as `make execute` does: the stored outputs nbval compares.

Each notebook is executed by nbconvert into memory and written back whole (a temporary file renamed
into place), so an interrupted run leaves every notebook as it was or fully re-executed.

Widget state is neither kept nor stored: a live panel needs a kernel anyway, and its chart view's state
would carry the whole vega bundle (0.9 MB) into every notebook.

    python scripts/execute_notebooks.py [--jobs N] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from models.files import write_bytes_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parent.parent


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """The notebook as ``nbformat.write`` stores it (its JSON, ending in a newline)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def execute(path: Path) -> int:
    """Drop the notebook's widget state, execute it with nbconvert and write it back whole; returns the exit status."""
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.pop("widgets", None) is not None:
        write_text_atomic(path, notebook_text(nb))
    jupyter = Path(sys.executable).with_name("jupyter")
    cmd = [str(jupyter), "nbconvert", "--to", "notebook", "--execute", "--stdout",
           "--ExecutePreprocessor.timeout=900", "--ExecutePreprocessor.store_widget_state=False", str(path)]
    status = subprocess.run(cmd, cwd=ROOT, capture_output=True)  # stdout: the executed notebook's bytes
    if status.returncode == 0:
        write_bytes_atomic(path, status.stdout)
    print(f"{path.relative_to(ROOT)}: {'ok' if status.returncode == 0 else 'FAILED'}", flush=True)
    if status.returncode:
        print(status.stderr.decode("utf-8", "replace")[-3000:], file=sys.stderr)
    return status.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    with ThreadPoolExecutor(args.jobs) as pool:
        return max(pool.map(execute, paths), default=0)


if __name__ == "__main__":
    sys.exit(main())
