"""A chapter opened and run in JupyterLab (as `make lab` serves it) reads like the site: MyST rendered by
jupyterlab-myst, no raw role markup, and the numbers the prose quotes evaluated in the running kernel."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from lab_session import CURRENT, ROOT, LabSession

CHAPTER = ROOT / "notebooks" / "01_latches_and_scheduling.ipynb"
EXPR = re.compile(r"\{eval\}`([^`]+)`")
RAW = ("{eval}", "{glue", "{term}", "{cite}", "{doc}", "{ref}", "```", ":::")


def expected_numbers(path: Path) -> dict[int, list[str]]:
    """For each markdown cell (by its index among markdown cells), the text of each inline expression, as the
    kernel evaluates it after the code above the cell has run (what myst-nb and jupyterlab-myst both do)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    out: dict[int, list[str]] = {}
    with client.setup_kernel():
        k = 0
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, i)
                continue
            exprs = EXPR.findall(cell.source)
            if exprs:
                probe = nbformat.v4.new_code_cell("print(repr([str(eval(e)) for e in %r]))" % exprs)
                client.execute_cell(probe, i)
                out[k] = eval(probe.outputs[0]["text"])  # noqa: S307 - a list of strings we printed
            k += 1
    return out


@pytest.fixture(scope="module")
def lab_view() -> dict:
    """After Run All in JupyterLab: the text of every markdown cell (inside collapsed dropdowns too) and the
    titles of the dropdowns that are closed and of those that are open."""
    def look() -> dict:
        with LabSession() as lab:
            page = lab.open(lab.add_notebook(CHAPTER.name, CHAPTER))
            lab.run_all(page, timeout_s=300)
            page.wait_for_timeout(1000)
            cells = f"{CURRENT} .jp-MarkdownCell"  # its rendering is the .myst element (the source sits beside it)
            return {"texts": page.eval_on_selector_all(
                        cells, "els => els.map(e => (e.querySelector('.myst') || {textContent: ''}).textContent)"),
                    "closed": page.eval_on_selector_all(f"{cells} .myst details:not([open]) > summary",
                                                        "els => els.map(e => e.textContent)"),
                    "open": page.eval_on_selector_all(f"{cells} .myst details[open] > summary",
                                                      "els => els.map(e => e.textContent)")}

    # Playwright's sync API refuses a thread with a running asyncio loop (nbval's kernel clients may leave one
    # in this worker): drive the browser from a thread of its own.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(look).result()


@pytest.fixture(scope="module")
def rendered(lab_view: dict) -> list[str]:
    return lab_view["texts"]


def test_no_raw_markup(rendered: list[str]) -> None:
    raw = [(k, mark) for k, text in enumerate(rendered) for mark in RAW if mark in text]
    assert rendered and not raw, f"markdown cells showing raw MyST: {raw}"


def test_the_prose_shows_its_numbers(rendered: list[str]) -> None:
    wanted = expected_numbers(CHAPTER)
    assert sum(map(len, wanted.values())) >= 30  # the chapter quotes dozens of numbers
    missing = [(k, text) for k, texts in wanted.items() for text in texts if text not in rendered[k]]
    assert not missing, f"numbers missing from the rendered prose (cell, number): {missing[:10]}"


def solution_titles(path: Path) -> tuple[list[str], list[int]]:
    """The titles of the chapter's solution dropdowns, as its markdown writes them (```{dropdown} Solution 1), and
    the numbers of its exercises (``1. **Knob: ...``)."""
    nb = nbformat.read(path, as_version=4)
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    titles = [m.group(1).strip() for text in markdown
              for m in re.finditer(r"^[`:]{3,}\{dropdown\}[ \t]*(Solution\b.*)$", text, re.M)]
    exercises = [int(m.group(1)) for text in markdown for m in re.finditer(r"^(\d+)\. \*\*Knob", text, re.M)]
    return titles, exercises


def test_solutions_are_collapsed(lab_view: dict) -> None:
    """Every exercise's solution in the notebook renders as a closed dropdown of its own title, and none opens
    with the answer in view."""
    wanted, exercises = solution_titles(CHAPTER)
    assert exercises and wanted == [f"Solution {n}" for n in exercises], (
        f"every exercise {exercises} should have its solution dropdown, in order: {wanted}")
    closed = [" ".join(t.split()) for t in lab_view["closed"]]
    missing = [t for t in wanted if not any(re.search(rf"(^|\W){re.escape(t)}($|\W)", c) for c in closed)]
    assert not missing, f"solutions not rendered as closed dropdowns: {missing} (closed: {closed})"
    opened = [t for t in lab_view["open"] if "Solution" in t]
    assert not opened, f"solution dropdowns open on load: {opened}"
