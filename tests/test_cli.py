"""The command line: list, run (tables and JSON), bad input without a traceback."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys

import pytest

import models
from models import cli as cli_module
from models import text_columns
from models.cli import COMPILING, RUN_OPTIONS, main
from models.params import ParameterError


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "models", *args], capture_output=True, text=True)


def test_list_json_names_every_scenario():
    out = cli("list", "--json")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert {"convoy", "closed-latch", "parallel-insert"} <= set(data)
    hold = next(p for p in data["convoy"]["params"] if p["name"] == "hold_ms")
    assert hold["unit"] == "ms" and hold["default"] == 2.0


def test_run_json_matches_md1():
    out = cli("run", "convoy", "arrival_rate_per_s=400", "hold_ms=2", "requests=60000",
              "wakeup_us=0", "context_switch_us=0", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["scenario", "params", "seed", "elapsed_ms", "throughput_per_s", "truncated",
                          "latch_stats", "wait_stats", "spin_stats", "schedulers", "workers"]
    latch = data["latch_stats"][0]
    mean_wait = latch["wait_time_ms"] / latch["acquires"]
    assert abs(mean_wait - 4.0) < 0.3  # M/D/1: rho S / (2 (1 - rho)) = 0.8 * 2 / 0.4 ms


def test_run_prints_dmv_tables():
    out = cli("run", "closed-latch", "acquires=1000")
    assert out.returncode == 0
    for title in ("sys.dm_os_latch_stats", "sys.dm_os_wait_stats", "sys.dm_os_spinlock_stats"):
        assert title in out.stdout


def test_bad_input_is_one_line_and_nonzero():
    out = cli("run", "convoy", "hold_ms=-3")
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0
    assert "hold_ms=-3" in out.stderr and "Traceback" not in out.stderr
    out = cli("run", "nosuch")
    assert out.returncode != 0 and "Traceback" not in out.stderr


def test_run_prints_the_queries_of_a_memory_grant_workload():
    out = cli("run", "cci-insert", "queries=6", "behaviour=cu14", "rows_per_query=400000", "grant_timeout_s=1")
    assert out.returncode == 0, out.stderr
    assert "queries (one row per query)" in out.stdout and "error_8645" in out.stdout
    assert "RESOURCE_SEMAPHORE" in out.stdout and "sys.dm_os_latch_stats" not in out.stdout  # no latches: no rows
    data = json.loads(cli("run", "cci-insert", "queries=2", "--json").stdout)
    assert [q["outcome"] for q in data["queries"]] == ["granted", "granted"]


# ---------------------------------------------------------------- issue 14: the command line


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """``python -m models ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_reserved_names_are_refused_by_name_without_a_traceback():
    for assignment, name in (("scenario=closed-latch", "'scenario'"), ("progress=1", "'progress'")):
        out = cli("run", "convoy", assignment)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and out.stderr.strip().count("\n") == 0
        assert out.stderr.startswith(f"error: {assignment.split('=')[0]}=") and name in out.stderr


def test_every_keyword_of_models_run_is_a_listed_run_option_or_refused(capsys):
    keywords = [name for name, p in inspect.signature(models.run).parameters.items()
                if p.kind is not p.VAR_KEYWORD]
    listed = run_main(capsys, "list")[1].split("run options")[1]
    for name in keywords:
        if name in {o.name for o in RUN_OPTIONS}:
            assert f"\n  {name} " in listed
        else:
            code, _, err = run_main(capsys, "run", "convoy", f"{name}=1")
            assert code == 2 and f"{name}='1' is refused: {name!r}" in err


def _entry(text: str, name: str) -> str:
    """The entry of ``name`` in wrapped list or help text: its line and the indented lines below, joined."""
    lines = text.splitlines()
    at = next(k for k, ln in enumerate(lines) if ln.split()[:1] == [name])
    below = []
    for line in lines[at + 1:]:
        if not line.startswith(text_columns.BELOW) and not line.startswith(" " * 8):
            break
        below.append(line.strip())
    return " ".join([lines[at].strip(), *below])


def test_run_options_are_in_list_and_run_help(capsys):
    _, listed, _ = run_main(capsys, "list")
    options = listed.split("run options (any scenario, set like a parameter):\n")[1]
    assert main(["run", "--help"]) == 0  # argparse's exit, returned as an exit code after stdout is flushed
    helped = capsys.readouterr().out
    for option in RUN_OPTIONS:
        for text in (options, helped.split("run options (any scenario")[1]):
            entry = _entry(text, option.name)
            assert option.allowed() in entry and option.help in entry
    assert "python -m models list" in helped
    for name, spec in models.scenarios().items():
        assert _entry(helped, name).split() == [name, *spec.doc.split()], name


def test_run_option_ranges_are_the_ones_models_run_checks():
    for option in RUN_OPTIONS:
        assert option.check(option.high) == option.high
        over = option.high + 1 if option.kind == "int" else option.high * 2
        with pytest.raises(ParameterError, match=f"{option.name}="):
            models.run("convoy", **{option.name: over})
        with pytest.raises(ParameterError, match="out of range"):
            option.check(over)
    with pytest.raises(ParameterError, match="above 0"):
        next(o for o in RUN_OPTIONS if o.name == "max_sim_ms").check(0)
    with pytest.raises(ParameterError):
        models.run("convoy", max_sim_ms=0)


def test_a_repeated_parameter_is_refused_by_name(capsys):
    code, out, err = run_main(capsys, "run", "convoy", "hold_ms=1", "requests=100", "hold_ms=2")
    assert code == 2 and out == ""
    assert err == "error: hold_ms is given twice (hold_ms=1, hold_ms=2): give it once\n"


def test_a_value_that_is_not_a_number_says_so(capsys):
    cases = [
        (("convoy", "trace_events=abc"), "error: trace_events='abc' is not an integer: use an integer from 0 to 2,000,000"),
        (("closed-latch", "workers=1.5"), "error: workers=1.5 is not an integer: use an integer from 1 to 1,024"),
        (("convoy", "hold_ms=abc"), "error: hold_ms='abc' is not a number: use a number from 0.0001 to 1,000 ms"),
        (("convoy", "max_sim_ms=x"), "error: max_sim_ms='x' is not a number: use a number above 0 and up to "
                                     "1,000,000,000 ms"),
    ]
    for args, message in cases:
        code, _, err = run_main(capsys, "run", *args)
        assert (code, err) == (2, message + "\n")
    code, out, _ = run_main(capsys, "run", "closed-latch", "workers=1e1", "acquires=100", "--json")
    assert code == 0 and json.loads(out)["params"]["workers"] == 10  # a whole number written as a float is fine


def test_integer_bounds_print_in_full(capsys):
    code, _, err = run_main(capsys, "run", "convoy", "seed=-1")
    assert code == 2 and "use an integer from 0 to 2,147,483,647" in err
    _, listed, _ = run_main(capsys, "list")
    assert "2,147,483,647" in listed and not re.search(r"\de[+-]\d", listed)


def _sections(listed: str) -> list[tuple[tuple, str]]:
    """Each scenario's parameters (then the run options) with its section of the list."""
    sections = listed.strip("\n").split("\n\n")
    owners = [spec.params for spec in models.scenarios().values()] + [RUN_OPTIONS]
    assert len(sections) == len(owners)
    return list(zip(owners, sections))


def test_list_columns_are_aligned(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # pytest-xdist's workers set 80: test the width of a pipe, 100
    _, listed, _ = run_main(capsys, "list")
    starts = set()
    for params, section in _sections(listed):
        for p in params:
            line = next(ln for ln in section.splitlines() if ln.split()[:2] == [p.name, "default"])
            default = line.index("default ")
            starts.add((line.index(p.name), default, line.index(" ".join(p.allowed().split()[:2]), default + 9)))
    assert len(starts) == 1, sorted(starts)


@pytest.mark.parametrize("columns", [None, "80", "60"])
def test_list_fits_the_width_and_keeps_every_word(capsys, monkeypatch, columns):
    """Not a terminal: 100 columns, or $COLUMNS; every entry still says its default, allowed values and meaning."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns or text_columns.DEFAULT_WIDTH)
    _, listed, _ = run_main(capsys, "list")
    longest = max(listed.splitlines(), key=len)
    assert len(longest) <= width, longest
    for (params, section), (name, spec) in zip(_sections(listed), [*models.scenarios().items(), (None, None)]):
        if spec is not None:
            assert " ".join(section.split()).startswith(" ".join(f"{name}: {spec.doc}".split()))
        for p in params:
            entry = _entry(section, p.name)
            for part in (cli_module._default_text(p), p.allowed(), p.help):
                assert " ".join(part.split()) in entry, (p.name, part)


def test_reflow_keeps_short_lines_and_wraps_long_ones_under_their_text():
    text = "short\n  - " + "word " * 40 + "\n  name  " + "more " * 40
    out = text_columns.reflow(text, 60).splitlines()
    assert out[0] == "short" and all(len(line) <= 60 for line in out)
    assert out[1].startswith("  - word") and out[2].startswith("    word")  # a bullet continues under its text
    assert " ".join(text_columns.reflow(text, 60).split()) == " ".join(text.split())


def test_fit_and_whatif_print_within_the_width(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, err = run_main(capsys, "fit", "book/data/example_snapshot.csv")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= text_columns.DEFAULT_WIDTH
    assert "Student t with 5 degrees of freedom" in " ".join(out.split())
    for change in ((), ("batch=50",)):
        code, out, err = run_main(capsys, "whatif", "book/data/example_snapshot.csv", *change)
        assert code == 0, err
        assert max(len(line) for line in out.splitlines()) <= text_columns.DEFAULT_WIDTH, change


def test_bare_run_asks_for_the_scenario(capsys):
    for args in (("run",), ("run", "hold_ms=2")):
        code, _, err = run_main(capsys, *args)
        assert code == 2 and err.startswith("error: a scenario is required") and "name=value is" not in err
        assert all(name in err for name in models.scenarios())


def test_a_truncated_run_warns_in_one_plain_line():
    out = cli("run", "convoy", "requests=100000", "max_events=1000")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln != COMPILING]
    assert lines == ["warning: convoy: the run reached max_events=1000 before the workload finished; "
                     "the result is truncated"]
    assert "TRUNCATED" in out.stdout.splitlines()[0]


def test_every_throughput_names_what_it_counts(capsys):
    for name, spec in models.scenarios().items():
        code, out, err = run_main(capsys, "run", name)
        assert code == 0, err
        headline = out.splitlines()[0]
        match = re.search(rf", throughput ([\d,]+\.\d) {spec.throughput.counts}/s$", headline)
        assert match, headline
        assert float(match.group(1).replace(",", "")) > 0, f"{name}: a default run counts nothing"
    assert "log records/s" in cli("run", "parallel-insert").stdout.splitlines()[0]


def test_compiling_message_only_when_the_cache_is_cold(capsys, monkeypatch):
    for cold in (True, False):
        monkeypatch.setattr(cli_module, "engine_cache_is_cold", lambda cold=cold: cold)
        code, _, err = run_main(capsys, "run", "convoy", "requests=100")
        assert code == 0 and (COMPILING in err) == cold
    monkeypatch.setattr(cli_module, "engine_cache_is_cold", lambda: True)
    code, _, err = run_main(capsys, "run", "convoy", "hold_ms=-1")
    assert code == 2 and COMPILING not in err  # bad input fails before the message


def test_cold_cache_detection_reads_numbas_cache(tmp_path):
    check = "from models.engine.cache import engine_cache_is_cold; print(engine_cache_is_cold())"
    empty = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                           env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert empty.stdout.strip() == "True", empty.stderr
    cli("run", "convoy", "requests=100")  # warms the cache if this clone never ran the engine
    warm = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert warm.stdout.strip() == "False", warm.stderr
    assert COMPILING not in cli("run", "convoy", "requests=100").stderr


def test_a_pipe_closed_early_is_not_a_traceback():
    run = subprocess.run(f"{sys.executable} -m models list | head -1", shell=True, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() and "Traceback" not in run.stderr


def test_a_subcommands_unknown_option_gets_its_usage_and_names_the_option(capsys):
    code, out, err = run_main(capsys, "run", "convoy", "--jsn")
    assert code == 2 and out == ""
    assert err.startswith("usage: python -m models run ")  # run's usage, not the top level's
    assert "unknown option --jsn: did you mean --json?" in err
    code, _, err = run_main(capsys, "sweep", "convoy", "--jbos", "2")
    assert code == 2 and err.startswith("usage: python -m models sweep ") and "unknown option --jbos: did you mean --jobs?" in err
    code, _, err = run_main(capsys, "list", "extra")
    assert code == 2 and err.startswith("usage: python -m models list ") and "unexpected argument extra" in err
    code, _, err = run_main(capsys, "--verbose", "list")  # before the command: the top level's own
    assert code == 2 and err.startswith("usage: python -m models [-h]") and "--verbose" in err


def test_sweep_help_lists_every_sweep_and_study_from_their_definitions(capsys):
    from models.book.sweep import studies, sweeps, tasks

    assert main(["sweep", "--help"]) == 0
    helped = capsys.readouterr().out
    for name, grid in sweeps().items():
        entry = _entry(helped, name)
        assert f"{len(tasks(grid)):,} runs" in entry and grid.doc.strip().splitlines()[0] in entry, name
    for name, study in studies().items():
        assert study.doc.strip().splitlines()[0] in _entry(helped, name), name
    assert max(len(line) for line in helped.splitlines()) <= 100


def test_top_level_help_names_every_command_and_the_warm_up(capsys):
    assert main(["--help"]) == 0
    helped = capsys.readouterr().out
    for command in ("list", "run", "warm", "sweep", "snapshot", "fit", "whatif"):
        assert re.search(rf"^    {command} ", helped, re.M), command
    assert "python -m models warm" in helped


def test_whatif_with_a_value_says_the_value_asked_for(capsys):
    code, out, err = run_main(capsys, "whatif", "book/data/example_snapshot.csv", "batch=50")
    assert code == 0, err
    assert out.splitlines()[0].startswith("diagnosis: PAGELATCH")  # the diagnosis comes first, before the fit
    first = next(line for line in out.splitlines() if line.startswith("batch: "))
    assert "50" in first and "10 rows" not in first, first
    assert "sets batch_rows=50" in out


WARM_CHECK = """
import json, sys
from models.cli import main
from models.engine.cache import cache_counts, engine_kernels
code = main(["run", "convoy", "--json"])
kernels = engine_kernels()
print(json.dumps({"code": code, "counts": cache_counts(),
                  "compiled": sorted(n for n, k in kernels.items() if k.stats.cache_misses),
                  "loaded": sorted(n for n, k in kernels.items() if k.stats.cache_hits)}), file=sys.stderr)
"""


def test_after_warm_a_first_run_loads_every_kernel_from_the_cache(tmp_path):
    """`python -m models warm` in an empty cache compiles; a new process's run then compiles nothing."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    warmed = subprocess.run([sys.executable, "-m", "models", "warm"], capture_output=True, text=True, env=env)
    assert warmed.returncode == 0, warmed.stderr
    assert str(tmp_path) in warmed.stderr and "cold, compiling" in warmed.stderr
    assert all(f"  {name} ..." in warmed.stderr for name in models.scenarios())
    compiled = int(re.search(r"(\d+) kernels compiled", warmed.stderr).group(1))
    assert compiled > 20  # the whole event loop's call tree, not one kernel
    run = subprocess.run([sys.executable, "-c", WARM_CHECK], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stderr.strip().splitlines()[-1])
    assert report["code"] == 0 and COMPILING not in run.stderr
    assert report["compiled"] == [] and report["counts"][1] == 0, report
    assert "loop.run_events" in report["loaded"], report
    again = subprocess.run([sys.executable, "-m", "models", "warm"], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "0 kernels compiled" in again.stderr, again.stderr  # idempotent


def test_no_command_shows_every_command(capsys):
    code, out, err = run_main(capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: python -m models") and all(f"    {c} " in err for c in ("list", "run", "warm", "fit"))


def test_sweep_help_works_outside_the_book_and_a_sweep_there_says_how_to_name_it(tmp_path):
    """Importing the sweeps reads no folder: `sweep --help` answers anywhere; a sweep outside the book names the
    variable that says where the book is, in one line."""
    env = {key: value for key, value in os.environ.items() if key != "LATCH_BOOK_ROOT"}

    def outside(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "models", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env)

    helped = outside("sweep", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "NAME" in helped.stdout
    refused = outside("sweep", "convoy", "--quick")
    assert refused.returncode != 0
    assert "LATCH_BOOK_ROOT" in refused.stderr and "Traceback" not in refused.stderr
