"""A pytest plugin beside nbval: the prose's stored inline values must be this run's, as the cells' outputs must.

nbval (strict) re-runs each notebook and compares its code cells' stored outputs; it never reads a markdown
cell. The site shows the prose's numbers from each markdown cell's stored ``user_expressions``
(book/_ext/stored_outputs.py), so right after nbval runs a code cell, this plugin evaluates the inline
expressions of the markdown cells that follow it in the same kernel (where `make execute` evaluated them)
and fails that cell's test if a stored value differs, is missing, or belongs to prose that has changed.
Loaded by conftest.py for every pytest run of this project.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "execute_notebooks.py"
_spec = importlib.util.spec_from_file_location("execute_notebooks", _SCRIPT)
execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute_notebooks)  # the one home of the expression syntax and the stored form


def _is_nbval_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell") and hasattr(item.parent, "nb")


def _markdown_after(cells: list[Any], index: int) -> list[tuple[int, Any]]:
    """The markdown cells from ``index`` up to the next code cell, with their positions."""
    out = []
    for position in range(index, len(cells)):
        if cells[position].cell_type == "code":
            break
        if cells[position].cell_type == "markdown":
            out.append((position, cells[position]))
    return out


def stale_values(item: pytest.Item, markdown: list[tuple[int, Any]]) -> list[str]:
    """What differs between the stored inline values of these markdown cells and their evaluation now, in the
    kernel nbval runs the notebook in (one line each)."""
    kc = item.parent.kernel.kc
    limit_s = item.config.option.nbval_cell_timeout  # the outer limit nbval gives a cell (a hung kernel)
    problems = []
    for position, cell in markdown:
        expressions = execute_notebooks.inline_expressions(cell.source)
        stored = cell.metadata.get(execute_notebooks.METADATA_KEY, [])
        if [entry["expression"] for entry in stored] != expressions:
            problems.append(f"cell {position}: stored values are for {[e['expression'] for e in stored][:4]}, "
                            f"the prose reads {expressions[:4]}")
            continue
        if not expressions:
            continue
        msg_id = kc.execute("", silent=True, store_history=False,
                            user_expressions={str(i): e for i, e in enumerate(expressions)})
        while True:
            reply = kc.get_shell_msg(timeout=limit_s)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        try:
            fresh = execute_notebooks.stored_expressions(expressions, reply)
        except RuntimeError as error:
            problems.append(f"cell {position}: {error}")
            continue
        for was, now in zip(stored, fresh):
            if was["result"].get("data") != now["result"]["data"]:
                problems.append(f"cell {position}: {was['expression']} stored "
                                f"{was['result'].get('data', {}).get('text/plain')}, "
                                f"this run {now['result']['data'].get('text/plain')}")
    return problems


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After nbval runs a code cell (and passes it), check the prose that follows it."""
    result = yield
    if _is_nbval_cell(item):
        cells = item.parent.nb.cells
        index = next(k for k, cell in enumerate(cells) if cell is item.cell)
        markdown = _markdown_after(cells, index + 1)
        if not any(cell.cell_type == "code" for cell in cells[:index]):  # the first code cell: the prose above too
            markdown = _markdown_after(cells, 0) + markdown
        problems = stale_values(item, markdown)
        if problems:
            raise AssertionError(f"{item.parent.path.name}: the prose's stored values are not this run's "
                                 "(run `make execute`):\n  " + "\n  ".join(problems[:10]))
    return result
