"""The package's layers import downwards only, checked from the source with ``ast`` (nothing is imported).

From the bottom: the engine (``models/engine/``) knows nothing else; the
counters (``models/counters/``: what a capture says), then the scenarios, which
read them, then the fitting, which asks the scenarios, and the rest of
``models/`` build on it; the book
layer (``models/book/``) sits on top of them, and inside it ``stored`` and
``sweep`` are at the bottom, the grids (``sweeps/``) and the chapters'
computations (``analysis/``) above them, then ``charts`` (which draw data they
are given), ``render`` and ``widgets``.  Every import counts, including the
ones inside a function.  The counters, the scenarios and the fitting never
import the package's top, which imports them: they ask the registry,
``models.scenarios``, which the top re-exports.

The library reads no file of the repository, so that an installed package
works anywhere; the book layer finds the book's folder through
:func:`models.book.stored.book_root` alone.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "models"


class Import(NamedTuple):
    """One import statement's target module, and where the statement is."""

    importer: str  # dotted name of the importing module
    path: str      # its file, relative to the repository
    line: int
    target: str    # dotted name of the imported module


def _module_name(path: Path) -> str:
    """``models/book/charts.py`` -> ``models.book.charts``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    """True when ``dotted`` names a module or package inside the repository."""
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> Iterator[str]:
    """The modules one import statement loads: ``from models.book import charts`` loads ``models.book.charts``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # a relative import: resolve it against the importing module's package
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        yield candidate if _is_module(candidate) else base


def imports() -> list[Import]:
    """Every import of every module under models/, with its line."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, name, path.name == "__init__.py"):
                    found.append(Import(name, str(path.relative_to(ROOT)), node.lineno, target))
    return found


def _within(name: str, package: str) -> bool:
    """True when ``name`` is ``package`` or inside it."""
    return name == package or name.startswith(package + ".")


def _any_within(name: str, packages: tuple[str, ...]) -> bool:
    return any(_within(name, package) for package in packages)


class Rule(NamedTuple):
    """A layering rule: which importers it governs and which of their imports break it."""

    text: str
    governs: Callable[[str], bool]
    breaks: Callable[[str], bool]


BOOK = "models.book"
RULES = (
    Rule("nothing in models/engine/ imports outside models/engine/",
         lambda importer: _within(importer, "models.engine"),
         lambda target: _within(target, "models") and not _within(target, "models.engine")),
    Rule("nothing outside models/book/ imports models.book",
         lambda importer: not _within(importer, BOOK),
         lambda target: _within(target, BOOK)),
    Rule("charts and render never import analysis, sweeps or sweep (they draw data they are given)",
         lambda importer: _any_within(importer, ("models.book.charts", "models.book.render")),
         lambda target: _any_within(target, ("models.book.analysis", "models.book.sweeps", "models.book.sweep"))),
    Rule("analysis never imports charts, render or widgets (it computes, it does not draw)",
         lambda importer: _within(importer, "models.book.analysis"),
         lambda target: _any_within(target, ("models.book.charts", "models.book.render", "models.book.widgets"))),
    Rule("stored is the book layer's bottom: it imports nothing from models.book",
         lambda importer: importer == "models.book.stored",
         lambda target: _within(target, BOOK)),
    Rule("scenarios never import models.fitting (the fitting asks the scenarios, never the reverse)",
         lambda importer: _within(importer, "models.scenarios"),
         lambda target: _within(target, "models.fitting")),
    Rule("counters (what a capture says) import neither the scenarios nor the fitting that both read them",
         lambda importer: _within(importer, "models.counters"),
         lambda target: _any_within(target, ("models.scenarios", "models.fitting"))),
    Rule("the counters, scenarios and fitting never import the package's top, which imports them (they ask the "
         "registry, models.scenarios)",
         lambda importer: _any_within(importer, ("models.counters", "models.scenarios", "models.fitting")),
         lambda target: target == "models"),
)

# (importer, target) pairs that break a rule on purpose, each with its reason.  An entry that no longer
# matches an import fails the test, so the list cannot go stale.
ALLOWED = {
    ("models.cli", "models.book.sweep"):
        "the command line is the package's front door, above every layer: `python -m models sweep` writes a "
        "book sweep (imported inside the command, so other commands never load the book layer)",
}


def breaches() -> tuple[list[str], set[tuple[str, str]]]:
    """Every rule broken (as 'rule: file:line imports module'), and the ALLOWED pairs that were used."""
    broken, used = [], set()
    for item in imports():
        for rule in RULES:
            if rule.governs(item.importer) and rule.breaks(item.target):
                if (item.importer, item.target) in ALLOWED:
                    used.add((item.importer, item.target))
                else:
                    broken.append(f"{rule.text}: {item.path}:{item.line} imports {item.target}")
    return broken, used


def test_the_scan_sees_the_package():
    found = imports()
    assert {item.importer for item in found} >= {"models.engine.loop", "models.book.charts",
                                                   "models.book.analysis.validation", "models.cli"}
    pairs = {(item.importer, item.target) for item in found}
    assert ("models.book.charts", "models.book.stored") in pairs  # `from models.book.stored import CI_SUFFIX`
    assert ("models.book.charts", "models.book.render") in pairs  # `from models.book import render`


def test_layers_import_downwards_only():
    broken, _ = breaches()
    assert not broken, "layering rules broken:\n  " + "\n  ".join(broken)


def test_every_allowed_exception_is_still_needed():
    _, used = breaches()
    stale = sorted(set(ALLOWED) - used)
    assert not stale, ("these ALLOWED entries match no import any more; delete them from tests/test_layers.py: "
                       + ", ".join(f"{importer} -> {target}" for importer, target in stale))


def test_the_rules_catch_a_breach():
    """The rules themselves, on made-up imports: each governs what it should and flags what it should."""
    engine, outside, charts, analysis, stored, scenarios, counters, top = RULES
    assert engine.governs("models.engine.loop") and engine.breaks("models.workload")
    assert not engine.breaks("models.engine.state") and not engine.breaks("numpy")
    assert outside.governs("models.scenarios.convoy") and outside.breaks("models.book.stored")
    assert not outside.governs("models.book.sweep")
    assert charts.governs("models.book.render") and charts.breaks("models.book.sweep")
    assert charts.breaks("models.book.analysis.convoy") and not charts.breaks("models.book.stored")
    assert analysis.governs("models.book.analysis.validation") and analysis.breaks("models.book.charts")
    assert not analysis.breaks("models.book.sweep")
    assert stored.governs("models.book.stored") and stored.breaks("models.book.sweep")
    assert scenarios.governs("models.scenarios.tempdb") and scenarios.breaks("models.fitting.fit")
    assert not scenarios.breaks("models.counters.evidence") and not scenarios.governs("models.fitting.fit")
    assert counters.governs("models.counters.evidence") and counters.breaks("models.scenarios.base")
    assert counters.breaks("models.fitting.fit") and not counters.breaks("models.params")
    assert top.governs("models.fitting.fit") and top.breaks("models") and not top.breaks("models.scenarios")
    assert not top.governs("models.cli") and not top.governs("models.book.widgets")


# Path parts of the repository that only the book layer may name, and only through models.book.stored.
REPOSITORY_PARTS = ("book", "tests", "notebooks", "_vendor", "_build", "scripts")


def repository_reads() -> list[str]:
    """Every place a module climbs out of its package (``.parents``, ``.parent.parent``; only stored climbs, from
    the working directory to the book's folder), and every path built from a repository folder's name outside
    models/book, as 'file:line what'."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=where)):
            if name != "models.book.stored" and isinstance(node, ast.Attribute) and (  # stored climbs from the cwd
                    node.attr == "parents"
                    or node.attr == "parent" and isinstance(node.value, ast.Attribute) and node.value.attr == "parent"):
                found.append(f"{where}:{node.lineno} climbs out of its package (.{node.attr})")
            if _within(name, BOOK):
                continue
            parts = []
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                parts = [node.left, node.right]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                    "Path", "joinpath", "open"):
                parts = list(node.args)
            for part in parts:
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and \
                        part.value.strip("/").split("/")[0] in REPOSITORY_PARTS:
                    found.append(f"{where}:{node.lineno} builds a path in the repository ({part.value!r})")
    return found


def test_nothing_reads_the_repository_but_the_book_layer_through_stored():
    """The library (models/ outside models/book) reads no file of the repository, so an installed package works
    anywhere; the book layer finds the book's folder in one place (models.book.stored.book_root), never from
    where its own file happens to be."""
    found = repository_reads()
    assert not found, "paths into the repository:\n  " + "\n  ".join(found)


def test_the_repository_scan_sees_a_climb_and_a_path(tmp_path, monkeypatch):
    """The scan itself, on a made-up module: a climb anywhere and a repository path outside the book are found."""
    package = tmp_path / "models"
    (package / "book").mkdir(parents=True)
    (package / "reader.py").write_text("from pathlib import Path\nDATA = Path('x').parents[1] / 'book' / 'data'\n")
    (package / "book" / "ok.py").write_text("from pathlib import Path\nDATA = Path('book') / 'data'\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    found = repository_reads()
    assert any("reader.py:2 climbs" in f for f in found) and any("reader.py:2 builds" in f for f in found)
    assert not any("ok.py" in f for f in found)
