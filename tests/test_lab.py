"""A chapter opened and run in JupyterLab (as `make lab` serves it) reads like the site: MyST rendered by
jupyterlab-myst, no raw role markup, and the numbers the prose quotes evaluated in the running kernel.

Before Run All too: every chapter opened as stored (scripts/execute_notebooks.py) shows the numbers its prose
quotes (kept in each markdown cell's ``user_expressions``), its citations and glossary terms as text, its
charts drawn, no console error or version warning, and is not marked modified."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from lab_session import CURRENT, ROOT, WAIT_S, LabSession

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
            lab.run_all(page)
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


# ---------------------------------------------------------------- before Run All

CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
# The bibliography's keys that cannot be ordinary words (white2022nesting, mslearn_latch_stats; not "ciw").
BIB_KEYS = [key for key in re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(encoding="utf-8"),
                                      re.M) if re.search(r"[\d_]", key)]
# Console messages that say the lab's parts do not fit together (extension versions, Vega-Lite versions).
VERSION_WARNINGS = ("Unsatisfied version", "No satisfying version", "Vega-Lite", "Vega v", "WARN ")


def stored_values(path: Path) -> dict[int, list[str]]:
    """For each markdown cell (by its index among markdown cells) with inline expressions, the text
    jupyterlab-myst shows for each (its stored text/plain result, a string's quotes dropped), or None where
    an expression has no stored result."""
    out: dict[int, list[str]] = {}
    markdown = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    for k, cell in enumerate(markdown):
        exprs = EXPR.findall(cell.source)
        if not exprs:
            continue
        stored = {e["expression"]: e["result"] for e in cell.metadata.get("user_expressions", [])}
        texts = []
        for expr in exprs:
            result = stored.get(expr)
            ok = result is not None and result.get("status") == "ok"
            texts.append(re.sub(r"^([\"'])(.*)\1$", r"\2", result["data"]["text/plain"]) if ok else None)
        out[k] = texts
    return out


def chart_outputs(path: Path) -> int:
    """How many Vega or Vega-Lite outputs the notebook stores."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for c in nb["cells"] for o in c.get("outputs", [])
               if any(m.startswith("application/vnd.vega") for m in o.get("data", {})))


# Every markdown cell is rendered by jupyterlab-myst and shows each stored number expected of it
# ({markdown cell index: [texts]}), and ``charts`` charts are drawn.
_UNRUN_READY = """([cells, markdown, wanted, charts]) => {
    const rendered = [...document.querySelectorAll(cells)].map(e => e.querySelector('.myst'));
    const drawn = [...document.querySelectorAll(cells.replace('.jp-MarkdownCell', '.jp-RenderedVegaCommon5'))]
        .filter(e => e.querySelector('svg, canvas')).length;
    return rendered.length === markdown && rendered.every(Boolean) && drawn >= charts
        && Object.entries(wanted).every(([k, texts]) => texts.every(t => rendered[k].textContent.includes(t)));
}"""


def look_unrun(lab: LabSession, name: str, path: Path, charts: int) -> dict:
    """Open a notebook without running it: its markdown cells' text, console problems, drawn charts, dirty.
    Waits until every markdown cell is rendered with the stored numbers of ``path`` (the chapter it is a copy
    of) and its ``charts`` stored charts are drawn, with an outer limit after which the test reports what is
    missing."""
    page = lab.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text[:300]}")
            if m.type == "error" or (m.type == "warning" and any(w in m.text for w in VERSION_WARNINGS)) else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    markdown = sum(1 for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    wanted = {str(k): [t for t in texts if t is not None] for k, texts in stored_values(path).items()}
    try:
        page.wait_for_function(_UNRUN_READY, arg=[f"{CURRENT} .jp-MarkdownCell", markdown, wanted, charts],
                               timeout=WAIT_S * 1000, polling=250)
    except PlaywrightTimeout:  # the test asserts the numbers and charts, with what was shown
        pass
    # A late metadata change (what would mark the notebook modified) has nothing to wait on: this pause
    # gives it a second; on a slow machine it may come later and go unseen (the test passes, never fails).
    page.wait_for_timeout(1000)
    view = {
        "texts": page.eval_on_selector_all(
            f"{CURRENT} .jp-MarkdownCell", "els => els.map(e => (e.querySelector('.myst') || {textContent: ''}).textContent)"),
        "charts": page.eval_on_selector_all(f"{CURRENT} .jp-RenderedVegaCommon5",
                                            "els => els.filter(e => e.querySelector('svg, canvas')).length"),
        "dirty": page.eval_on_selector_all(".lm-TabBar-tab.jp-mod-dirty", "els => els.map(e => e.textContent)"),
        "problems": problems,
    }
    page.close()
    return view


@pytest.fixture(scope="module")
def unrun_views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every chapter opened as stored, without running anything; and chapter 1 again with its stored
    expressions removed (what the test must catch)."""
    bare = nbformat.read(CHAPTER, as_version=4)
    for cell in bare.cells:
        cell.metadata.pop("user_expressions", None)
    bare_path = tmp_path_factory.mktemp("bare") / "bare.ipynb"
    nbformat.write(bare, bare_path)

    def look() -> dict[str, dict]:
        with LabSession() as lab:
            views = {p.name: look_unrun(lab, lab.add_notebook(p.name, p), p, chart_outputs(p)) for p in CHAPTERS}
            views["bare"] = look_unrun(lab, lab.add_notebook("bare.ipynb", bare_path), bare_path,
                                       chart_outputs(CHAPTER))
            return views

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(look).result()


def missing_numbers(path: Path, texts: list[str]) -> list[tuple[int, str]]:
    """(markdown cell, expression) for each inline expression with no stored value, or whose value the
    rendered cell does not show, or in a cell that still shows an expression's code."""
    markdown = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    missing = []
    for k, values in stored_values(path).items():
        text = texts[k] if k < len(texts) else ""
        for expr, value in zip(EXPR.findall(markdown[k]), values):
            if value is None or value not in text or "quoted." in text:
                missing.append((k, expr))
    return missing


@pytest.mark.parametrize("chapter", [p.name for p in CHAPTERS])
def test_unrun_chapter_shows_its_numbers(unrun_views: dict, chapter: str) -> None:
    path = ROOT / "notebooks" / chapter
    assert sum(map(len, stored_values(path).values())) >= 20, "the chapter's prose quotes numbers"
    missing = missing_numbers(path, unrun_views[chapter]["texts"])
    assert not missing, (f"{chapter} opened before Run All shows code or nothing for (cell, expression): {missing[:8]}"
                         " (re-run `make execute` to store the values)")


def test_the_check_catches_missing_expressions(unrun_views: dict) -> None:
    """The chapter with its stored values removed shows code where its numbers belong, and the check says so."""
    assert "quoted." in "".join(unrun_views["bare"]["texts"])
    assert missing_numbers(CHAPTER, unrun_views["bare"]["texts"])


@pytest.mark.parametrize("chapter", [p.name for p in CHAPTERS])
def test_unrun_chapter_reads_as_text(unrun_views: dict, chapter: str) -> None:
    view = unrun_views[chapter]
    raw = sorted({mark for text in view["texts"] for mark in RAW if mark in text})
    keys = sorted({key for text in view["texts"] for key in BIB_KEYS if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text)})
    assert not raw and not keys, f"{chapter} shows raw markup {raw} or citation keys {keys}"
    assert not view["problems"], f"{chapter}: console problems on open: {view['problems'][:5]}"


@pytest.mark.parametrize("chapter", [p.name for p in CHAPTERS])
def test_unrun_chapter_draws_its_charts_and_stays_unmodified(unrun_views: dict, chapter: str) -> None:
    view = unrun_views[chapter]
    assert view["charts"] == chart_outputs(ROOT / "notebooks" / chapter), f"{chapter}: charts drawn {view['charts']}"
    assert not view["dirty"], f"{chapter} is marked modified as soon as it opens: {view['dirty']}"


def test_execute_stores_inline_values_as_jupyterlab_myst_reads_them(tmp_path: Path) -> None:
    """scripts/execute_notebooks.py stores each markdown cell's evaluated expressions (in order, repeats kept)
    in the form jupyterlab-myst writes, saves the notebook as JupyterLab would, and does so byte for byte again."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    execute_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(execute_notebooks)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = [nbformat.v4.new_code_cell("x = 1234.5\nname = 'ok'"),
                nbformat.v4.new_markdown_cell('About {eval}`f"{x:,.0f}"` rows, {eval}`name`, {eval}`f"{x:,.0f}"` again.'),
                nbformat.v4.new_markdown_cell("No numbers here.")]
    nb.nbformat_minor = 4
    for cell in nb.cells:
        cell.pop("id", None)
    path = tmp_path / "tiny.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    text = execute_notebooks.run(path)
    path.write_text(text, encoding="utf-8")
    assert execute_notebooks.run(path) == text  # re-executed, byte for byte the same (no timestamps, ids kept)
    out = json.loads(text)
    assert out["nbformat_minor"] == 5 and all(c.get("id") for c in out["cells"])
    assert "execution" not in out["cells"][0]["metadata"]
    assert out["metadata"]["kernelspec"]["display_name"] != "Python 3"  # the kernel's own name for itself
    stored = out["cells"][1]["metadata"]["user_expressions"]
    assert stored == [
        {"expression": 'f"{x:,.0f}"', "result": {"data": {"text/plain": "'1,234'"}, "metadata": {}, "status": "ok"}},
        {"expression": "name", "result": {"data": {"text/plain": "'ok'"}, "metadata": {}, "status": "ok"}},
        {"expression": 'f"{x:,.0f}"', "result": {"data": {"text/plain": "'1,234'"}, "metadata": {}, "status": "ok"}},
    ]
    assert "user_expressions" not in out["cells"][2]["metadata"]
