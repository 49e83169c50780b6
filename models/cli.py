"""Command line: run the book's models, fit them to a server's snapshot, and precompute the book's data.

    python -m models list [--json]
    python -m models run SCENARIO name=value ... [--json]
    python -m models warm
    python -m models sweep NAME [--jobs N | --dask ADDRESS] [--quick]
    python -m models snapshot SCENARIO name=value ... [--interval-s S] [--start-s T] [--no-xevents]
    python -m models fit SNAPSHOT.csv [--json] [--scenario NAME] [--assume name=value ...]
    python -m models whatif SNAPSHOT.csv [CHANGE[=VALUE]] [--json] [--assume name=value ...]

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
import time
import warnings
from typing import Any, Callable

import pandas as pd

import models
from models.counters.snapshot import read
from models.engine.cache import cache_counts, engine_cache_dir, engine_cache_is_cold
from models.fitting import fit, whatif
from models.fitting.capture import from_model
from models.fitting.whatif import changes, figure
from models.params import RUN_OPTIONS, Param, ParameterError
from models.result import Result
from models.scenarios.base import Scenario
from models.text_columns import (
    DEFAULT_WIDTH, column_widths, columns, output_width, reflow, reflowed, wrap, wrapped,
)

COMPILE_TIME = "about 30 s"  # what compiling the whole engine takes on a 2-core machine (benchmarks/first_run.py)
COMPILING = (f"compiling the engine ({COMPILE_TIME}, once; `python -m models warm`, which `make install` runs, "
             "does it ahead)...")
# Events each scenario runs to warm the cache. Numba compiles a kernel with everything it calls, so running
# each scenario at all reaches its kernels: the count only keeps the warm-up short.
WARM_EVENTS = 2_000

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


def parse(spec: Scenario, items: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The scenario parameters and run options ``items`` set, as typed: models.run checks their values (once)."""
    params: dict[str, str] = {}
    options: dict[str, str] = {}
    run_options = {o.name for o in RUN_OPTIONS}
    for name, text in _assignments(items).items():
        _entry(spec, name)  # a name neither a parameter nor a run option: refused here, with the closest one
        (options if name in run_options else params)[name] = text
    return params, options


# ----------------------------------------------------------------------------- list and help


def _default_text(p: Param) -> str:
    """``default VALUE UNIT``, as the list shows it (a large whole number with thousands separators)."""
    unit = f" {p.unit}" if p.unit and p.kind != "choice" else ""
    value = p.default
    large = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 10_000
    shown = f"{value:,.0f}" if large and float(value).is_integer() else repr(value)
    return f"default {shown}{unit}"


def _rows(entries: tuple[Param, ...]) -> list[tuple[str, ...]]:
    """One row (name, default, allowed values, meaning) per parameter or run option."""
    return [(p.name, _default_text(p), p.allowed(), p.help) for p in entries]


def _list_text(width: int = DEFAULT_WIDTH) -> str:
    """Every scenario with its parameters, then the run options, wrapped to ``width`` columns.

    Each entry is one line (name, default, allowed values) with its meaning on the indented lines below;
    the columns line up across every section.
    """
    catalogue = models.scenarios()
    sections = [(f"{name}: {s.doc}", _rows(s.params)) for name, s in catalogue.items()]
    sections.append(("run options (any scenario, set like a parameter):", _rows(RUN_OPTIONS)))
    widths = column_widths([row[:-1] for _, rows in sections for row in rows])
    return "\n\n".join("\n".join([*wrap(title, width, "", ""), *wrapped(rows, width, widths, last_below=True)])
                       for title, rows in sections) + "\n"


def _list(as_json: bool) -> None:
    """Print the catalogue: text wrapped to the terminal, or the scenarios and their parameters as JSON."""
    if as_json:
        out = {name: {"doc": s.doc, "params": [
            {"name": p.name, "kind": p.kind, "default": p.default, "unit": p.unit, "low": p.low,
             "high": p.high, "choices": list(p.choices) if p.choices else None, "help": p.help}
            for p in s.params]} for name, s in models.scenarios().items()}
        print(json.dumps(out, indent=2))
        return
    print(_list_text(output_width()))


def _run_epilog() -> str:
    """The run options and the scenarios, for ``run --help``."""
    width = output_width()
    scenarios = [(name, s.doc) for name, s in models.scenarios().items()]
    return "\n".join(["run options (any scenario, set like a parameter):",
                      *wrapped(_rows(RUN_OPTIONS), width, last_below=True), "",
                      "scenarios (python -m models list shows each one's parameters):", *wrapped(scenarios, width)])


def _sweep_epilog() -> str:
    """Every sweep and study with its size and the first line of its description, for ``sweep --help``."""
    from models.book.sweep import studies, sweeps, tasks  # the book layer: loaded only for `sweep --help`

    def first_line(doc: str) -> str:
        return (doc.strip().splitlines() or [""])[0]

    rows = [(name, f"{len(tasks(grid)):,} runs", first_line(grid.doc)) for name, grid in sweeps().items()]
    rows += [(name, "study", first_line(study.doc)) for name, study in studies().items()]
    return "\n".join(["sweeps (grids of runs) and studies, from models/book/sweeps/:",
                      *wrapped(sorted(rows), output_width())])


# ----------------------------------------------------------------------------- run


def warm(out: Any = None) -> tuple[int, int]:
    """Compile the engine into numba's cache, or load it from there: a tiny run of every scenario.

    Idempotent: on a warm cache it only loads (about a second).  Says what it does on ``out``
    (stderr by default), one line per scenario, and returns :func:`cache_counts`.
    """
    out = out or sys.stderr
    start = time.monotonic()
    cold = engine_cache_is_cold()
    print(f"engine cache ({engine_cache_dir()}): " + (f"cold, compiling the engine ({COMPILE_TIME}, once per machine "
          "and per edit of models/engine/)" if cold else "checking every scenario loads from it"), file=out, flush=True)
    for name in models.scenarios():
        began = time.monotonic()
        print(f"  {name} ...", end="", file=out, flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a run cut at WARM_EVENTS is truncated on purpose
            models.run(name, max_events=WARM_EVENTS)
        print(f" {time.monotonic() - began:.1f} s", file=out, flush=True)
    loaded, compiled = cache_counts()
    print(f"engine cache warm in {time.monotonic() - start:.1f} s: {compiled} kernels compiled and cached, "
          f"{loaded} loaded from the cache", file=out, flush=True)
    return loaded, compiled


def _say_compiling_once(cold: bool) -> Callable[[float], None]:
    """A progress callback that says, when the checked run starts, that the engine compiles (if its cache is cold)."""
    said = [not cold]

    def progress(_done: float) -> None:
        if not said[0]:
            print(COMPILING, file=sys.stderr, flush=True)
            said[0] = True
    return progress


def _run_with_warnings(name: str, params: dict[str, Any], options: dict[str, Any]) -> Result:
    """models.run, with each warning it raises (a truncated run) printed as one ``warning:`` line on stderr.

    The input is checked by models.run itself; only a run that passed its checks says it is compiling.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # recorded every time, whatever the caller's filters
        result = models.run(name, progress=_say_compiling_once(engine_cache_is_cold()), **params, **options)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    return result


def _headline(result: Result) -> str:
    """The simulated time the run covered (not how long it took), throughput with what it counts, any truncation."""
    throughput = models.get_scenario(result.scenario).throughput
    rate = f"throughput {throughput.per_s(result):,.1f} {throughput.counts}/s"
    flag = f"  TRUNCATED: {result.truncated_reason}" if result.truncated else ""
    return f"{result.scenario}: {result.elapsed_ms:,.3f} ms of simulated time, {rate}{flag}"


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


# ----------------------------------------------------------------------------- snapshot, fit, what-if


def _snapshot(scenario: str | None, assignments: list[str], interval_s: float | None, start_s: float,
              xevents: bool) -> None:
    """Print the CSV a capture of the scenario's run would give (see models.counters.snapshot)."""
    if scenario is None or "=" in scenario:
        raise ParameterError(f"a scenario is required: python -m models snapshot SCENARIO [name=value ...] with "
                             f"SCENARIO one of {', '.join(models.scenarios())}")
    spec = models.get_scenario(scenario)
    params, options = parse(spec, assignments)
    if options:
        raise ParameterError(f"{', '.join(options)}: run options do not apply to a snapshot; "
                             "--start-s and --interval-s set its window")
    snap = from_model(spec.name, params, interval_s=interval_s, start_s=start_s, xevents=xevents,
                      progress=_say_compiling_once(engine_cache_is_cold()))
    print(snap.to_csv(), end="")


def _number_text(x: Any, unit: str) -> str:
    """A parameter value as the report prints it: four significant digits and its unit."""
    return x if isinstance(x, str) else f"{figure(x)} {unit}".strip()


def diagnosis_text(diagnosis: Any, width: int | None = None) -> str:
    """A diagnosis as the command line prints it, before any fit: its name, evidence, advice and what is missing."""
    lines = [f"diagnosis: {diagnosis.name}" + (f" -> scenario {diagnosis.scenario}" if diagnosis.scenario else ""),
             "evidence:"]
    lines += [f"  - {e}" for e in diagnosis.evidence]
    if diagnosis.advice:
        lines.append("what to look at next:")
        lines += [f"  - {a}" for a in diagnosis.advice]
    if diagnosis.missing:
        lines.append("not in the capture (the script writes these by default):")
        lines += [f"  - {m}" for m in diagnosis.missing]
    return reflowed("\n".join(lines) + "\n", width)


def fit_text(f: Any, width: int | None = None, with_diagnosis: bool = True) -> str:
    """A fit as the command line prints it: diagnosis, evidence, parameters with ranges, what is undetermined.

    ``width`` wraps it to that many columns (the command line's terminal); None keeps each entry on one line.
    ``with_diagnosis=False`` leaves out the diagnosis (printed already, before the fit ran).
    """
    head = diagnosis_text(f.diagnosis, width) if with_diagnosis else ""
    lines: list[str] = []
    if f.refusal:
        lines.append(f"no model fitted: the capture contradicts the {f.scenario} model or lacks what it needs:")
        lines.append(f"  - {f.refusal}")
        lines += [f"  - {a}" for a in f.advice]
        return head + reflowed("\n".join(lines) + "\n", width)
    if f.scenario is None:
        return head
    lines.append("what the estimates assume of the capture:")
    lines += [f"  - {c}" for c in f.caveats]
    banded = any(e.band_low is not None for e in f.params.values())
    lines.append(f"parameters (estimate, then low to high; from {f.interval_s:,.4g} s of counters"
                 + ("; then the span over the bands of what no capture tells" if banded else "") + "):")
    lines.append(f"  ({f.ranges})")
    rows = [(name, _number_text(e.estimate, e.unit),
             "" if e.low == e.high else f"{_number_text(e.low, '')} to {_number_text(e.high, e.unit)}",
             *([f"band {_number_text(e.band_low, '')} to {_number_text(e.band_high, e.unit)}"
                if e.band_low is not None else ""] if banded else []),
             f"{e.basis}, CLIPPED" if e.clipped else e.basis, e.how)
            for name, e in f.params.items() if e.basis != "assumed"]
    lines += columns(rows, width)
    if f.misfit:
        lines.append("the fitted model misses counts it was not fitted to (every range is widened to match):")
        lines += [f"  - {text}" for text in f.misfit]
    if f.background:
        lines.append("background: the instance's other work, which the model leaves out and is not held to:")
        lines += [f"  - {text}" for text in f.background]
    if f.undetermined:
        lines.append("not determined by this snapshot (the scenario's value, or the one assumed, is used):")
        lines += columns([(u["param"], f"assumed {u['assumed']}", u["why"] + "; would need " + u["measure"])
                           for u in f.undetermined], width)
    return head + reflowed("\n".join(lines) + "\n", width)


def whatif_text(table: pd.DataFrame, width: int | None = None) -> str:
    """The what-if table as text: the fitted model now, each change's throughput and wait with ranges, or why not.

    ``width`` wraps it to that many columns, each change's description below its figures.
    """
    applies = table[table["throughput"].notna()]
    lines = [f"now: {r.note}" for r in applies.itertuples() if r.change == "now" and r.note]
    banded = "band_low" in table and table["band_low"].notna().any()
    rows = [(r.change, f"{figure(r.throughput)} {r.unit}",
             f"({figure(r.throughput_low)} to {figure(r.throughput_high)})",
             f"x{r.vs_now:.2f}", *([f"band x{r.band_low:.2f} to x{r.band_high:.2f}" if r.band_low == r.band_low
                                    else "" ] if banded else []),
             f"wait {figure(r.wait_ms_per_s)} ms/s", r.what) for r in applies.itertuples()]
    lines += columns(rows, width)
    judged = [r for r in applies.itertuples() if getattr(r, "verdict", "")]
    if judged:
        lines.append("across what the capture cannot tell:")
        lines += columns([(r.change, r.verdict) for r in judged], width, last_below=False)
    skipped = table[table["throughput"].isna()]
    if len(skipped):
        lines.append("not applicable:")
        lines += columns([(r.change, r.note) for r in skipped.itertuples()], width, last_below=False)
    return reflowed("\n".join(lines) + "\n", width)


def _assumed(pairs: list[str] | None) -> dict[str, str] | None:
    """``--assume name=value`` pairs as a dict (the fit checks each value against its parameter)."""
    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ParameterError(f"--assume {pair!r} is not name=value: write it as new_page_us=17.2")
        if name in out:
            raise ParameterError(f"--assume gives {name} twice: give each parameter once")
        out[name] = value
    return out


def _diagnosed(path: str, as_json: bool) -> tuple[Any, Any]:
    """The snapshot at ``path`` and its diagnosis, printed at once in text mode (the fit after it takes seconds)."""
    snap = read(path)
    diagnosis = fit.diagnose(snap)
    if not as_json:
        print(diagnosis_text(diagnosis, output_width()), end="", flush=True)
    if diagnosis.scenario is not None and engine_cache_is_cold():
        print(COMPILING, file=sys.stderr, flush=True)
    return snap, diagnosis


def _fit(path: str, as_json: bool, scenario: str | None, assume: list[str] | None = None) -> None:
    """Read a snapshot, diagnose it, fit it (under the values ``assume`` gives) and print the report (or its JSON).

    A capture the model cannot fit is an answer (exit 0): the diagnosis stands and the refusal says why.
    """
    snap, _ = _diagnosed(path, as_json)
    fitted = fit.answer(snap, scenario=scenario, assume=_assumed(assume))
    print(fitted.to_json() if as_json else fit_text(fitted, output_width(), with_diagnosis=False),
          end="\n" if as_json else "")


def _whatif(path: str, change: str | None, as_json: bool, scenario: str | None,
            assume: list[str] | None = None) -> None:
    """Fit a snapshot (under the values ``assume`` gives) and print one change's prediction, or every change's."""
    if change is not None:
        _, value = whatif.parse_change(change)  # a bad change fails before the fit runs
    snap, _ = _diagnosed(path, as_json)
    fitted = fit.answer(snap, scenario=scenario, assume=_assumed(assume))
    if fitted.scenario is None or fitted.refusal:
        why = fitted.refusal or f"{fitted.diagnosis.name}: no model here to change"
        if as_json:
            print(json.dumps({"diagnosis": fitted.diagnosis.name, "evidence": fitted.diagnosis.evidence,
                              "advice": fitted.diagnosis.advice, "whatifs": [], "why": why}, indent=2))
        else:
            print(fit_text(fitted, output_width(), with_diagnosis=False), end="")
            print(reflow(f"no what-ifs: {why}", output_width()))
        return
    if change is not None:
        prediction = whatif.predict(fitted, change)
        out = {"change": prediction.change, "what": prediction.what, "sets": prediction.sets, "unit": prediction.unit, "applies": prediction.applies,
               "note": prediction.note}
        bands = []
        if prediction.applies:
            for key in ("throughput", "wait_ms_per_s", "now_throughput", "now_wait_ms_per_s"):
                band = getattr(prediction, key)
                out[key] = {"estimate": band.estimate, "low": band.low, "high": band.high}
            bands = whatif.gain_bands(fitted, snap, prediction.change, value)
            out["bands"] = [band.to_dict() for band in bands]
            out["verdict"] = whatif.verdict(prediction.ratio, bands)
        if as_json:
            print(json.dumps(out, indent=2))
        elif prediction.applies:
            print(reflow(f"{prediction.change}: {prediction.what}\n"
                         f"  sets {', '.join(f'{k}={v}' for k, v in prediction.sets.items())}\n"
                         f"  throughput {prediction.throughput} {prediction.unit} (now {prediction.now_throughput}), "
                         f"x{prediction.ratio:.2f}\n"
                         f"  {prediction.wait_type} wait {prediction.wait_ms_per_s} ms/s (now {prediction.now_wait_ms_per_s})"
                         + "".join(f"\n  {band}" for band in bands)
                         + f"\n  {whatif.verdict(prediction.ratio, bands)}"
                         + (f"\n  {prediction.note}" if prediction.note else ""), output_width()))
        else:
            print(reflow(f"{prediction.change}: not applicable: {prediction.note}", output_width()))
        return
    table = whatif.table(fitted, snap)
    if as_json:
        print(table.to_json(orient="records", indent=2))
        return
    print(fit_text(fitted, output_width(), with_diagnosis=False), end="")
    print(whatif_text(table, output_width()), end="")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that a failed write of help or usage is raised, not dropped (a full disk),
    and an epilog may be a function, called only when the help is shown (``sweep``'s imports every sweep)."""

    epilog_from: Callable[[], str] | None = None

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (file or sys.stderr).write(message)

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


TOP_EPILOG = f"""\
a first run compiles the engine ({COMPILE_TIME}, once per machine and per edit of models/engine/);
`python -m models warm` does it ahead, and `make install` (so `make book`, `make test`) runs it.

examples:
  python -m models list
  python -m models run convoy arrival_rate_per_s=400 hold_ms=2
  python -m models fit book/data/example_snapshot.csv
  python -m models whatif book/data/example_snapshot.csv batch=50
each command's --help says more (python -m models run --help)."""


def _parser() -> argparse.ArgumentParser:
    """The parser of every command; ``run --help`` lists the run options and the scenarios, ``sweep --help`` the sweeps."""
    parser = _Parser(prog="python -m models", description=__doc__.splitlines()[0], epilog=TOP_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    sub.add_parser("warm", help="compile the engine into its cache now, so that no later run waits for it",
                            description="Compile the engine's kernels into numba's cache (models/engine/__pycache__), "
                                        "or check that every scenario loads them from there: a tiny run of each. "
                                        f"{COMPILE_TIME.capitalize()} the first time, a second or two after; "
                                        "`make install` runs it.")
    p_sweep = sub.add_parser("sweep", help="precompute a sweep (or a study) into book/data/NAME.csv",
                             description="Run the sweep (a grid of replicated runs) or study NAME and write "
                                         "book/data/NAME.csv, whole.",
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    p_sweep.epilog_from = _sweep_epilog
    p_sweep.add_argument("name", metavar="NAME", help="a sweep or study listed below")
    p_sweep.add_argument("--quick", action="store_true", help="a study's smaller version (a grid refuses it)")
    where = p_sweep.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="processes on this machine (default: every core; 1: run here, one by one)")
    where.add_argument("--dask", default=None, metavar="ADDRESS",
                       help="run on the Dask scheduler at ADDRESS (tcp://host:8786) instead")
    p_snap = sub.add_parser("snapshot", help="write the DMV snapshot CSV of a model run (the capture script's format)",
                            description="Run SCENARIO and print, as CSV, the snapshot a capture would take of it "
                                        "between --start-s and --start-s + --interval-s (default: to the run's end).")
    p_snap.add_argument("scenario", nargs="?", help=f"one of {', '.join(models.scenarios())}")
    p_snap.add_argument("params", nargs="*", metavar="name=value", help="a parameter of the scenario")
    p_snap.add_argument("--interval-s", type=float, default=None, metavar="S", help="seconds between the two reads")
    p_snap.add_argument("--start-s", type=float, default=0.0, metavar="T", help="when the first read is (default 0)")
    p_snap.add_argument("--no-xevents", action="store_true", help="leave out the latch_acquired counts")
    p_fit = sub.add_parser("fit", help="diagnose a snapshot and fit its model",
                           description="Read SNAPSHOT.csv (book/sql/capture_snapshot.sql's output), name the dominant "
                                       "contention, and fit the model that explains it, with a range for each "
                                       "parameter.")
    p_fit.add_argument("snapshot", metavar="SNAPSHOT.csv")
    p_fit.add_argument("--json", action="store_true",
                       help="scenario, params (estimate, low, high) and evidence as JSON")
    p_fit.add_argument("--scenario", default=None, help="fit this scenario instead of the diagnosed one")
    p_fit.add_argument("--assume", action="append", metavar="name=value",
                       help="a value of a parameter the snapshot does not determine (repeatable): the fit, its "
                            "replicates and bias correction run under it")
    p_what = sub.add_parser("whatif", help="predict what a change would buy, from a snapshot's fitted model",
                            description="Fit SNAPSHOT.csv and predict throughput and waits after CHANGE, or after "
                                        "every change when none is named.",
                            epilog="changes:\n" + "\n".join(f"  {c.name:16s}{c.what}" + (f" (=VALUE: {c.value})"
                                                                                          if c.value else "")
                                                               for c in _changes()),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p_what.add_argument("snapshot", metavar="SNAPSHOT.csv")
    p_what.add_argument("change", nargs="?", metavar="CHANGE[=VALUE]", help="one change (default: the table of all)")
    p_what.add_argument("--json", action="store_true", help="the prediction(s) as JSON")
    p_what.add_argument("--scenario", default=None, help="fit this scenario instead of the diagnosed one")
    p_what.add_argument("--assume", action="append", metavar="name=value",
                        help="a value of a parameter the snapshot does not determine (repeatable)")
    return parser


def _changes():
    """Every change some scenario offers, once each (the first scenario's wording)."""
    return [offered[0][1] for offered in changes().values()]


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code.

    Bad input is one ``error:`` line and exit 2; Ctrl-C one line and 130 (the shell's code for SIGINT);
    a pipe closed early one line and 141 (SIGPIPE's); any other failed read or write one line and 1.
    """
    if sys.stdout is None:  # started with stdout closed (>&-): nothing could be printed
        print("error: standard output is closed: nothing can be printed", file=sys.stderr)
        return 1
    try:
        try:
            args = _parse(_parser(), sys.argv[1:] if argv is None else list(argv))
        except SystemExit as done:  # --help and argparse's own usage errors: still flushed, so a full disk shows
            sys.stdout.flush()
            return done.code if isinstance(done.code, int) else 2
        _command(args)
        sys.stdout.flush()  # a full disk shows here, not in the interpreter's last flush
    except ParameterError as err:
        kind = getattr(err, "kind", "")  # a snapshot's errors say which kind they are
        print(f"error: {kind + ': ' if kind else ''}{err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted (Ctrl-C); nothing more was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        print("error: standard output was closed before everything was written (a pipe's reader stopped early)",
              file=sys.stderr)
        return 141
    except OSError as err:
        if err.filename is None:  # a write to standard output: /dev/full, a full disk
            _quiet_stdout()
        where = err.filename if err.filename is not None else "standard output"
        print(f"error: {where}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; an argument no command takes is refused by the command it was given to, with its usage.

    (argparse alone hands a subcommand's unknown option up to the top-level parser, whose usage
    does not show the subcommand's options.)
    """
    if not argv:  # no command: what each one does, rather than only that one is required
        parser.print_help(sys.stderr)
        raise SystemExit(2)
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    at = argv.index(args.command) if args.command in argv else -1
    last = len(argv) - 1 - argv[::-1].index(extras[-1])  # where the last extra was given
    owner = commands[args.command] if last > at else parser
    options = [o for action in owner._actions for o in action.option_strings if o.startswith("--")]
    unknown = [e for e in extras if e.startswith("-")]
    if unknown:
        close = difflib.get_close_matches(unknown[0].split("=")[0], options, n=1)
        hint = f": did you mean {close[0]}?" if close else f": {owner.prog} takes {', '.join(options)}"
        owner.error(f"unknown option {unknown[0]}{hint}")
    owner.error(f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}")
    raise AssertionError("argparse's error() exits")  # pragma: no cover


def _command(args: argparse.Namespace) -> None:
    """Carry out the parsed command."""
    if args.command == "list":
        _list(args.json)
    elif args.command == "run":
        _run(args.scenario, args.params, args.json)
    elif args.command == "snapshot":
        _snapshot(args.scenario, args.params, args.interval_s, args.start_s, not args.no_xevents)
    elif args.command == "fit":
        _fit(args.snapshot, args.json, args.scenario, args.assume)
    elif args.command == "whatif":
        _whatif(args.snapshot, args.change, args.json, args.scenario, args.assume)
    elif args.command == "warm":
        warm()
    else:
        from models.book.sweep import studies, sweeps, write_sweep  # the book layer: loaded only for `sweep`

        if args.dask is None and args.name in {*sweeps(), *studies()} and engine_cache_is_cold():
            warm()  # compiled once, here, rather than in every worker process at once
        for path in write_sweep(args.name, jobs=args.jobs, dask=args.dask, quick=args.quick):
            print(path)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of what is left stays quiet."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process ends
    except OSError:
        pass
