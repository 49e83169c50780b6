"""Re-execute the notebooks in place, as `make execute` does: the stored outputs nbval compares, and the
numbers the prose quotes, stored so JupyterLab shows them before a reader runs anything.

Each notebook runs in a child process (nbclient, one kernel) and is written back whole (a temporary file
renamed into place), so an interrupted run leaves every notebook as it was or fully re-executed.

The prose quotes numbers as inline expressions ({eval}`f"{quoted.x:,.0f}"`). As the run reaches a markdown
cell, its expressions are evaluated in the kernel and stored in the cell's metadata under
``user_expressions``, in the form jupyterlab-myst writes when a reader runs the cell (and reads when it
renders one): ``[{"expression": ..., "result": {"status": "ok", "data": {"text/plain": ...}, "metadata": {}}}]``.

The notebook is also stored as JupyterLab would save it, so opening it marks nothing modified: nbformat 4.5
with cell ids, the kernelspec's display name as the kernel reports it, and no per-cell execution timestamps
(they would also change on every run). Widget state is neither kept nor stored: a live panel needs a kernel
anyway, and its chart view's state would carry the whole vega bundle (0.9 MB) into every notebook.

    python scripts/execute_notebooks.py [--jobs N] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's own package, not only an installed one
    sys.path.insert(0, str(ROOT))

from models.files import write_bytes_atomic  # noqa: E402

KERNEL = "python3"
TIMEOUT_S = 900
METADATA_KEY = "user_expressions"  # jupyterlab-myst's cell metadata key
# An inline expression as MyST writes it (the role's content is the expression, backticks excluded).
INLINE_EXPRESSION = re.compile(r"\{eval\}`([^`]+)`")


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """The notebook as ``nbformat.write`` stores it (its JSON, ending in a newline)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def inline_expressions(source: str) -> list[str]:
    """A markdown cell's inline expressions, in reading order (repeats kept, as jupyterlab-myst lists them)."""
    return INLINE_EXPRESSION.findall(source)


def stored_expressions(expressions: list[str], reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``user_expressions`` metadata for one cell from the kernel's execute reply (keyed "0", "1", ...
    in expression order, as jupyterlab-myst asks); raises if an expression failed."""
    results = reply["content"].get("user_expressions", {})
    stored = []
    for i, expression in enumerate(expressions):
        result = results.get(str(i), {})
        if result.get("status") != "ok":
            raise RuntimeError(f"inline expression {expression!r} failed: "
                               f"{result.get('ename', '?')}: {result.get('evalue', 'no result')}")
        stored.append({"expression": expression,
                       "result": {"status": "ok", "data": dict(sorted(result.get("data", {}).items())),
                                  "metadata": {}}})
    return stored


def normalized(nb: nbformat.NotebookNode, display_name: str) -> nbformat.NotebookNode:
    """The notebook as JupyterLab would save it after opening it: nbformat 4.5, every cell with an id, the
    kernel's display name, no execution timestamps and no widget state."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata.pop("widgets", None)
    nb.metadata.setdefault("kernelspec", {}).update(name=KERNEL, display_name=display_name, language="python")
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "markdown":
            cell.metadata.pop(METADATA_KEY, None)
    taken = {cell.get("id") for cell in nb.cells}
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):  # a deterministic id (nbformat's own repair draws a random one)
            digest = hashlib.sha256(f"{index}\n{cell.source}".encode("utf-8")).hexdigest()
            cell.id = next(digest[k:k + 8] for k in range(0, 56) if digest[k:k + 8] not in taken)
            taken.add(cell.id)
    return nb


def run(path: Path) -> str:
    """Execute one notebook (in this process) and return its text: code cells' outputs and markdown cells'
    evaluated inline expressions, normalized."""
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    class Client(NotebookClient):
        """nbclient that also evaluates a markdown cell's inline expressions where the run reaches it."""

        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            if cell.cell_type != "markdown":
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            expressions = inline_expressions(cell.source)
            cell.metadata.pop(METADATA_KEY, None)
            if expressions:
                assert self.kc is not None
                msg_id = self.kc.execute("", silent=True, store_history=False,
                                         user_expressions={str(i): e for i, e in enumerate(expressions)})
                reply = await self.async_wait_for_reply(msg_id, cell)
                cell.metadata[METADATA_KEY] = stored_expressions(expressions, reply)
            return cell

    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    client = Client(nb, timeout=TIMEOUT_S, kernel_name=KERNEL, record_timing=False, store_widget_state=False,
                    resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    display_name = KernelSpecManager().get_kernel_spec(KERNEL).display_name
    return notebook_text(normalized(nb, display_name))


def execute(path: Path) -> int:
    """Execute one notebook in a child process and write it back whole; returns the exit status."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--stdout", str(path)]
    status = subprocess.run(cmd, cwd=ROOT, capture_output=True)  # stdout: the executed notebook's bytes
    returncode, problem = status.returncode, status.stderr.decode("utf-8", "replace")[-3000:]
    if returncode == 0:
        try:  # only a whole, valid notebook replaces the file (stray output on the child's stdout would not)
            nbformat.validate(nbformat.reads(status.stdout.decode("utf-8"), as_version=4))
        except Exception as error:  # noqa: BLE001 - any parse or schema failure means: keep the old file
            returncode, problem = 1, f"the executed notebook did not parse as a notebook: {error}"[:3000]
    if returncode == 0:
        write_bytes_atomic(path, status.stdout)
    print(f"{path.relative_to(ROOT)}: {'ok' if returncode == 0 else 'FAILED'}", flush=True)
    if returncode:
        print(problem, file=sys.stderr)
    return returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--stdout", action="store_true", help="execute one notebook and print it (no write)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.stdout:
        if len(paths) != 1:
            parser.error("--stdout takes exactly one notebook")
        sys.stdout.buffer.write(run(paths[0]).encode("utf-8"))
        return 0
    with ThreadPoolExecutor(args.jobs) as pool:
        return max(pool.map(execute, paths), default=0)


if __name__ == "__main__":
    sys.exit(main())
