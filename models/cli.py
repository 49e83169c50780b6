"""Command line: list scenarios, run one, or precompute a sweep for the book.

    python -m models list [--json]
    python -m models run SCENARIO name=value ... [--json]
    python -m models sweep NAME [--jobs N | --dask ADDRESS]

Each ``name=value`` of a run sets one of the scenario's parameters or one of
the run options (:data:`RUN_OPTIONS`: models.run's bounds and records), at
most once.  Bad input is one ``error:`` line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import pandas as pd

import models
from models.params import Param, ParameterError, Scenario, bound_text, resolve
from models.result import Result

COMPILING = "compiling the engine (first run only)..."

# What each scenario's throughput_per_s counts (None: the workload counts nothing; it has per-query tables).
# Neither Scenario nor Result names it, so it lives here; tests/test_cli.py holds it to the catalogue.
THROUGHPUT_COUNTS: dict[str, str | None] = {
    "convoy": "latch acquires",  # one per request
    "closed-latch": "latch acquires",
    "parallel-insert": "log records",
    "last-page-insert": "rows",
    "version-store": "updates",
    "cci-insert": None,
    "cci-decommit": None,
}


@dataclass(frozen=True)
class RunOption(Param):
    """A keyword of models.run that bounds or records a run; set on the command line like a parameter."""

    above_low: bool = False  # the low bound itself is refused (max_sim_ms must be above 0)

    def allowed(self) -> str:
        """The allowed values, as an error message would say them."""
        if not self.above_low:
            return super().allowed()
        unit = f" {self.unit}" if self.unit else ""
        return f"a number above {bound_text(self.low)} and up to {bound_text(self.high)}{unit}"

    def check(self, value: Any) -> Any:
        """Return ``value`` converted to this option's type, or raise ParameterError."""
        number = super().check(value)
        if self.above_low and number <= self.low:
            raise ParameterError(f"{self.name}={value!r} is out of range: use {self.allowed()}")
        return number


def _run_options() -> tuple[RunOption, ...]:
    """models.run's bounds and records, with the defaults of its signature and the ranges it checks."""
    default = {name: p.default for name, p in inspect.signature(models.run).parameters.items()}

    def count(name: str, meaning: str) -> RunOption:
        low, high = models._LIMITS[name]  # the ranges models.run checks
        return RunOption(name, "int", default[name], "", low, high, help=meaning)

    return (
        count("trace_events", "worker-state intervals kept for a timeline (Result.trace; not printed here)"),
        count("record_acquires", "latch acquires kept in a log (Result.acquire_log; not printed here)"),
        count("max_events", "stop after this many events, flagged TRUNCATED (0: a bound scaled to the workload)"),
        RunOption("max_sim_ms", "float", default["max_sim_ms"], "ms", 0, models.MAX_SIM_MS, above_low=True,
                  help="stop after this much simulated time, flagged TRUNCATED"),
    )


RUN_OPTIONS = _run_options()
# models.run's other keywords, refused by name: the scenario is named before the assignments, and
# progress takes a Python function.
RESERVED = tuple(name for name, p in inspect.signature(models.run).parameters.items()
                 if p.kind is not p.VAR_KEYWORD and name not in {o.name for o in RUN_OPTIONS})
_RESERVED_WHY = {
    "scenario": "name the scenario first: python -m models run SCENARIO name=value ...",
    "progress": "models.run's progress takes a Python function, which the command line cannot pass",
}


# ----------------------------------------------------------------------------- parsing name=value


def _split(item: str) -> tuple[str, str]:
    """``name=value`` as (name, value text)."""
    name, sep, text = item.partition("=")
    if not sep or not name:
        raise ParameterError(f"{item!r} is not a parameter assignment: write name=value")
    return name, text


def _assignments(items: list[str]) -> dict[str, str]:
    """Each name given and its value text, refusing reserved names and names given twice."""
    given: dict[str, str] = {}
    for item in items:
        name, text = _split(item)
        if name in RESERVED:
            why = _RESERVED_WHY.get(name, "it is a keyword of models.run for Python callers")
            raise ParameterError(f"{name}={text!r} is refused: {name!r} is not a parameter or run option; {why}")
        if name in given:
            raise ParameterError(f"{name} is given twice ({name}={given[name]}, {name}={text}): give it once")
        given[name] = text
    return given


def _entry(spec: Scenario, name: str) -> Param:
    """The parameter of ``spec`` or the run option called ``name``, or a ParameterError suggesting one."""
    entries = {p.name: p for p in (*spec.params, *RUN_OPTIONS)}
    if name in entries:
        return entries[name]
    close = difflib.get_close_matches(name, list(entries), n=1)
    hint = (f"; did you mean {close[0]!r}?" if close else
            f"; valid names: {', '.join(p.name for p in spec.params)}, "
            f"and the run options {', '.join(o.name for o in RUN_OPTIONS)}")
    raise ParameterError(f"{spec.name} has no parameter {name!r}{hint}")


def _number(text: str) -> int | float | None:
    """``text`` as an int, else as a float, else None."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return None


def _convert(entry: Param, text: str) -> Any:
    """The value ``text`` gives ``entry``: the text of a choice, a number of its kind, or a ParameterError."""
    if entry.kind == "choice":
        return text
    number = _number(text)
    if entry.kind == "int":
        if isinstance(number, float) and number.is_integer():
            number = int(number)  # 1e3
        if not isinstance(number, int):
            raise ParameterError(f"{entry.name}={text!r} is not an integer: use {entry.allowed()}")
    elif number is None:
        raise ParameterError(f"{entry.name}={text!r} is not a number: use {entry.allowed()}")
    return number


def parse(spec: Scenario, items: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scenario parameters and run options ``items`` set, checked as models.run checks them."""
    params: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for name, text in _assignments(items).items():
        entry = _entry(spec, name)
        value = _convert(entry, text)
        if isinstance(entry, RunOption):
            options[name] = entry.check(value)
        else:
            params[name] = value
    resolve(spec, params)  # ranges and combinations, before anything compiles
    return params, options


# ----------------------------------------------------------------------------- list and help


def _default_text(p: Param) -> str:
    """``default VALUE UNIT``, as the list shows it."""
    unit = f" {p.unit}" if p.unit and p.kind != "choice" else ""
    return f"default {p.default!r}{unit}"


def _rows(entries: tuple[Param, ...]) -> list[tuple[str, ...]]:
    """One row (name, default, allowed values, meaning) per parameter or run option."""
    return [(p.name, _default_text(p), p.allowed(), p.help) for p in entries]


def _aligned(rows: list[tuple[str, ...]], widths: list[int] | None = None) -> list[str]:
    """``rows`` as indented lines, each column but the last padded to the widest entry (or ``widths``)."""
    if not rows:
        return []
    widths = widths or _widths(rows)
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]


def _widths(rows: list[tuple[str, ...]]) -> list[int]:
    """The width of each column but the last."""
    return [max(len(row[k]) for row in rows) for k in range(len(rows[0]) - 1)]


def _list_text() -> str:
    """Every scenario with its parameters, then the run options; one set of column widths throughout."""
    catalogue = models.scenarios()
    sections = [(f"{name}: {s.doc}", _rows(s.params)) for name, s in catalogue.items()]
    sections.append(("run options (any scenario, set like a parameter):", _rows(RUN_OPTIONS)))
    widths = _widths([row for _, rows in sections for row in rows])
    return "\n\n".join("\n".join([title, *_aligned(rows, widths)]) for title, rows in sections) + "\n"


def _list(as_json: bool) -> None:
    """Print the catalogue: aligned text, or the scenarios and their parameters as JSON."""
    if as_json:
        out = {name: {"doc": s.doc, "params": [
            {"name": p.name, "kind": p.kind, "default": p.default, "unit": p.unit, "low": p.low,
             "high": p.high, "choices": list(p.choices) if p.choices else None, "help": p.help}
            for p in s.params]} for name, s in models.scenarios().items()}
        print(json.dumps(out, indent=2))
        return
    print(_list_text())


def _run_epilog() -> str:
    """The run options and the scenarios, for ``run --help``."""
    scenarios = [(name, s.doc) for name, s in models.scenarios().items()]
    return "\n".join(["run options (any scenario, set like a parameter):", *_aligned(_rows(RUN_OPTIONS)), "",
                      "scenarios (python -m models list shows each one's parameters):", *_aligned(scenarios)])


# ----------------------------------------------------------------------------- run


def engine_cache_is_cold() -> bool:
    """Whether a run will first compile the event loop: numba has no machine code cached for it yet.

    Looks up the main kernel (:func:`models.engine.run_events`) in numba's
    cache index for this machine and this source, as numba does before it
    compiles.  Anything unexpected (the cache API is numba's private one)
    counts as warm, so the hint never stops a run.
    """
    from numba import types

    from models.engine import run_events

    try:
        if run_events.overloads:  # compiled or loaded in this process already
            return False
        cache = run_events._cache
        key = cache._index_key((types.int64,) * 3, run_events.targetctx.codegen())
        return key not in cache._cache_file._load_index()
    except Exception:
        return False


def _run_with_warnings(name: str, params: dict[str, Any], options: dict[str, Any]) -> Result:
    """models.run, with each warning it raises (a truncated run) printed as one ``warning:`` line on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # recorded every time, whatever the caller's filters
        result = models.run(name, **params, **options)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    return result


def _headline(result: Result) -> str:
    """Elapsed time, throughput with what it counts, and the truncation flag."""
    counts = THROUGHPUT_COUNTS.get(result.scenario, "units of work")
    rate = f"throughput {result.throughput_per_s:,.1f} {counts}/s" if counts else "throughput not counted"
    flag = f"  TRUNCATED: {result.truncated_reason}" if result.truncated else ""
    return f"{result.scenario}: elapsed {result.elapsed_ms:,.3f} ms, {rate}{flag}"


def _table(title: str, df: pd.DataFrame) -> str:
    """One titled table of a run, numbers to three decimals."""
    return f"-- {title}\n{df.to_string(index=False, float_format=lambda x: f'{x:,.3f}')}\n"


def _run(scenario: str | None, assignments: list[str], as_json: bool) -> None:
    """Check the input, run the scenario and print its headline and tables (or its JSON)."""
    if scenario is None or "=" in scenario:
        raise ParameterError(f"a scenario is required: python -m models run SCENARIO [name=value ...] with SCENARIO "
                             f"one of {', '.join(models.scenarios())} (python -m models list shows their parameters)")
    spec = models.get_scenario(scenario)
    params, options = parse(spec, assignments)
    if engine_cache_is_cold():
        print(COMPILING, file=sys.stderr, flush=True)
    result = _run_with_warnings(spec.name, params, options)
    if as_json:
        print(result.to_json())
        return
    print(_headline(result) + "\n")
    tables = [("queries (one row per query)", result.queries), ("sys.dm_os_latch_stats", result.latch_stats),
              ("sys.dm_os_wait_stats", result.wait_stats), ("sys.dm_os_spinlock_stats", result.spin_stats),
              ("schedulers", result.schedulers)]
    for title, table in tables:
        if table is not None and len(table):  # a workload without latches has no latch or spinlock rows
            print(_table(title, table))


def _parser() -> argparse.ArgumentParser:
    """The parser of the three commands; ``run --help`` lists the run options and the scenarios."""
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="list scenarios, their parameters and the run options")
    p_list.add_argument("--json", action="store_true", help="the scenarios and their parameters as JSON")
    p_run = sub.add_parser("run", help="run a scenario and print DMV-shaped tables",
                           description="Run SCENARIO with the parameters and run options given (the others at "
                                       "their defaults) and print DMV-shaped tables.",
                           epilog=_run_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p_run.add_argument("scenario", nargs="?", help=f"one of {', '.join(models.scenarios())}")
    p_run.add_argument("params", nargs="*", metavar="name=value",
                       help="a parameter of the scenario or a run option, each at most once")
    p_run.add_argument("--json", action="store_true", help="print the result as JSON instead of tables")
    p_sweep = sub.add_parser("sweep", help="precompute a sweep into book/data/NAME.csv")
    p_sweep.add_argument("name")
    where = p_sweep.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="processes on this machine (default: every core; 1: run here, one by one)")
    where.add_argument("--dask", default=None, metavar="ADDRESS",
                       help="run on the Dask scheduler at ADDRESS (tcp://host:8786) instead")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            _list(args.json)
        elif args.command == "run":
            _run(args.scenario, args.params, args.json)
        else:
            from models.sweep import write_sweep

            for path in write_sweep(args.name, jobs=args.jobs, dask=args.dask):
                print(path)
    except ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout stopped early (| head): not an error of the run
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the interpreter's final flush stays quiet
        return 0
    return 0
