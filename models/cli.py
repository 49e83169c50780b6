"""Command line: list scenarios, run one, or precompute a sweep for the book.

    python -m models list [--json]
    python -m models run SCENARIO name=value ... [--json]
    python -m models sweep NAME [--jobs N | --dask ADDRESS]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

import models
from models.params import ParameterError


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _parse_assignments(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ParameterError(f"{item!r} is not a parameter assignment: write name=value")
        params[name] = _value(text)
    return params


def _list(as_json: bool) -> None:
    catalogue = models.scenarios()
    if as_json:
        out = {name: {"doc": s.doc, "params": [
            {"name": p.name, "kind": p.kind, "default": p.default, "unit": p.unit, "low": p.low,
             "high": p.high, "choices": list(p.choices) if p.choices else None, "help": p.help}
            for p in s.params]} for name, s in catalogue.items()}
        print(json.dumps(out, indent=2))
        return
    for name, s in catalogue.items():
        print(f"{name}: {s.doc}")
        for p in s.params:
            unit = f" {p.unit}" if p.unit else ""
            print(f"  {p.name:<24} default {p.default!r}{unit:<8} {p.allowed():<42} {p.help}")
        print()


def _table(title: str, df: pd.DataFrame) -> str:
    return f"-- {title}\n{df.to_string(index=False, float_format=lambda x: f'{x:,.3f}')}\n"


def _run(scenario: str, assignments: list[str], as_json: bool) -> None:
    result = models.run(scenario, **_parse_assignments(assignments))
    if as_json:
        print(result.to_json())
        return
    flag = f"  TRUNCATED: {result.truncated_reason}" if result.truncated else ""
    print(f"{scenario}: elapsed {result.elapsed_ms:,.3f} ms, throughput {result.throughput_per_s:,.1f}/s{flag}\n")
    tables = [("queries (one row per query)", result.queries), ("sys.dm_os_latch_stats", result.latch_stats),
              ("sys.dm_os_wait_stats", result.wait_stats), ("sys.dm_os_spinlock_stats", result.spin_stats),
              ("schedulers", result.schedulers)]
    for title, table in tables:
        if table is not None and len(table):  # a workload without latches has no latch or spinlock rows
            print(_table(title, table))


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="list scenarios and their parameters")
    p_list.add_argument("--json", action="store_true")
    p_run = sub.add_parser("run", help="run a scenario and print DMV-shaped tables")
    p_run.add_argument("scenario")
    p_run.add_argument("params", nargs="*", metavar="name=value")
    p_run.add_argument("--json", action="store_true")
    p_sweep = sub.add_parser("sweep", help="precompute a sweep into book/data/NAME.csv")
    p_sweep.add_argument("name")
    where = p_sweep.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="processes on this machine (default: every core; 1: run here, one by one)")
    where.add_argument("--dask", default=None, metavar="ADDRESS",
                       help="run on the Dask scheduler at ADDRESS (tcp://host:8786) instead")
    args = parser.parse_args(argv)
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
    return 0
