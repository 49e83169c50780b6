"""Every fact about a scenario lives in its own Scenario object, and nothing generic keeps a table of them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import toy_scenario  # tests/toy_scenario.py (pytest puts tests/ on the path)

import models
from models import cli
from models.fitting import fit
from models.fitting import whatif
from models.fitting.capture import from_model
from models.scenarios.base import Capture, ScenarioError, Throughput

ROOT = Path(__file__).resolve().parent.parent
# Modules that serve every scenario: none may name one (a chapter's own analysis and sweeps may).
GENERIC = ["models/__init__.py", "models/cli.py", "models/params.py", "models/workload.py", "models/result.py",
           "models/files.py", "models/figures.py", "models/book/sweep.py", "models/book/charts.py",
           "models/book/render.py", "models/book/widgets.py", "models/book/stored.py",
           *[f"models/fitting/{p.name}" for p in (ROOT / "models" / "fitting").glob("*.py")],
           *[f"models/engine/{p.name}" for p in (ROOT / "models" / "engine").glob("*.py")]]


def _strings_outside_docstrings(path: Path) -> list[tuple[int, str]]:
    """Every string constant in ``path`` that is not a docstring, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


@pytest.mark.parametrize("module", GENERIC)
def test_no_generic_module_names_a_scenario(module: str) -> None:
    """A scenario's name as a string in a generic module is a table kept outside its Scenario; the "tempdb"
    scenario shares its name with the database, which the snapshot's modules name as a database."""
    from models.counters.snapshot import SYSTEM_DATABASES

    names = set(models.scenarios())
    found = [(line, text) for line, text in _strings_outside_docstrings(ROOT / module)
             if text not in SYSTEM_DATABASES.values()
             and any(text == name or ("-" in name and name in text) for name in names)]
    assert not found, f"{module} names scenarios (ask the Scenario object instead): {found}"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch):
    """The toy scenario registered, as its one line in models/scenarios/__init__.py would."""
    monkeypatch.setitem(models.CATALOGUE, "toy", toy_scenario.SCENARIO)
    return toy_scenario.SCENARIO


def test_a_new_scenario_needs_one_module_and_its_registration(toy, capsys) -> None:
    result = models.run("toy", workers=3, rounds=50)
    assert result.throughput_per_s > 0 and result.latch_stats["acquires"].sum() == 150
    assert cli.main(["run", "toy", "workers=3", "rounds=50"]) == 0
    assert "acquires/s" in capsys.readouterr().out.splitlines()[0]
    assert cli.main(["list"]) == 0 and "toy: A toy scenario" in capsys.readouterr().out
    snap = from_model("toy", {"workers": 3, "rounds": 200, "wakeup_us": 20.0})
    assert snap.setting("sessions") == 3  # the capture counts the sessions by the toy's own parameter
    assert fit.diagnoses()["TOY_LATCH"] == ("LATCH_EX on TOY_LATCH", "toy")
    assert fit.diagnose(snap).scenario == "toy"
    with pytest.raises(fit.FitError, match="the toy scenario has no estimator"):
        fit.fit(snap, replicates=2)
    assert [spec.name for spec, _ in whatif.changes()["shorter-hold"]] == ["toy"]
    assert whatif.parse_change("shorter-hold=20") == ("shorter-hold", 20.0)
    from models.book import widgets
    panel = widgets.Panel("toy", knobs=["hold_us", "workers"], run_at_start=False)
    assert set(panel.controls) == {"hold_us", "workers"}


def test_a_scenario_that_forgets_a_fact_fails_when_declared_naming_it() -> None:
    spec = toy_scenario.SCENARIO
    facts = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    for fact in ("throughput", "capture", "diagnosis", "estimate", "size_run", "changes", "reported_waits"):
        partial = {name: value for name, value in facts.items() if name != fact}
        with pytest.raises(ScenarioError, match=f"scenario 'toy' does not say its {fact}"):
            type(spec)(**partial)
    with pytest.raises(ScenarioError, match="'toy'.*throughput must be a Throughput"):
        dataclasses.replace(spec, throughput="acquires")
    with pytest.raises(ScenarioError, match="'toy' names 'rows'"):
        dataclasses.replace(spec, size_params=("rows",))
    with pytest.raises(ScenarioError, match="counts sessions by 'sessions'"):
        dataclasses.replace(spec, capture=Capture(session_param="sessions", rows=lambda values, result: []))
    with pytest.raises(ScenarioError, match="reports no waits"):
        dataclasses.replace(spec, reported_waits=())
    assert dataclasses.replace(spec, throughput=Throughput(counts="rows")).throughput.counts == "rows"


def test_the_catalogue_is_consistent() -> None:
    specs = list(models.scenarios().values())
    ranks = [spec.diagnosis.rank for spec in specs]
    assert len(set(ranks)) == len(ranks), "two diagnosis rules share a rank: their order would be arbitrary"
    for spec in specs:
        for change in spec.changes:
            assert change.param == "" or spec.param(change.param), change.name
        defaults = spec.defaults()
        sized = spec.size_run(defaults, 1_000, 1.0)
        assert set(sized) <= set(spec.size_params) | {"window_ms"}, spec.name
        for name, value in sized.items():
            spec.param(name).check(value)  # a sized run is one the scenario accepts
    # Rules that share a diagnosis label describe it alike (the diagnosis table shows one line per label).
    looks: dict[str, str] = {}
    for spec in specs:
        assert looks.setdefault(spec.diagnosis.label, spec.diagnosis.looks_like) == spec.diagnosis.looks_like, spec.name
    # A change two scenarios share is worded and checked alike in both.
    for name, offered in whatif.changes().items():
        assert len({(c.what, c.value, c.param) for _, c in offered}) == 1, name


# ---------------------------------------------------------------- the round trips and the panels' facts

def test_every_scenario_carries_its_round_trip_and_the_coverage_study_asks_it() -> None:
    """Chapter 9's round trips and the coverage study's setups are the records' own: no table of them elsewhere."""
    from models.book.analysis import tempdb_capture, your_server
    from models.book.sweeps import coverage as study
    from models.fitting import coverage

    specs = models.scenarios()
    assert all(spec.round_trip is not None for spec in specs.values()), "a scenario without its round trip"
    assert list(study.SETUPS) == list(your_server.ROUND_TRIPS) == list(specs)
    for name, spec in specs.items():
        trip = spec.round_trip
        assert your_server.ROUND_TRIPS[name] == (trip.values, trip.window)
        assert study.SETUPS[name] == coverage.study_setup(name) == (dict(trip.values, **trip.study_values),
                                                                    trip.window)
        assert study.spread(name) == (study.SPREAD if trip.study_spread is None else trip.study_spread)
    assert study.SETUPS["convoy"][0]["arrival_rate_per_s"] < specs["convoy"].round_trip.values["arrival_rate_per_s"]
    assert your_server.EXAMPLE_PARAMS == specs[your_server.EXAMPLE_SCENARIO].round_trip.values
    assert tempdb_capture.ROUND_TRIP == specs["tempdb"].round_trip.values
    for module in ("models/book/sweeps/coverage.py", "models/book/sweeps/coverage_misspecified.py",
                   "models/book/sweeps/coverage_realistic.py", "models/fitting/coverage.py"):
        assert "ROUND_TRIPS" not in (ROOT / module).read_text(encoding="utf-8"), module


def test_the_fit_is_scored_against_the_value_a_parameter_acts_with() -> None:
    """cci-insert's round trip asks above the 25% cap: its record says the fit should find the grant (the cap)."""
    from models.book.analysis import your_server

    acting = models.get_scenario("cci-insert").round_trip.acting["grant_mb_per_dop"]
    truth = your_server.round_trip_truth("cci-insert")
    assert acting(truth) < truth["grant_mb_per_dop"]


def test_a_round_trip_naming_no_parameter_of_its_scenario_fails_when_declared() -> None:
    from models.scenarios.base import RoundTrip

    with pytest.raises(ScenarioError, match="'toy': its round trip names 'rows'"):
        dataclasses.replace(toy_scenario.SCENARIO, round_trip=RoundTrip(values={"rows": 3}))
    with pytest.raises(ScenarioError, match="round_trip must be a RoundTrip"):
        dataclasses.replace(toy_scenario.SCENARIO, round_trip={"workers": 3})


def test_a_panel_draws_grants_from_what_the_scenario_says(toy) -> None:
    """The grant chart reads the scenario's GrantView, and a scenario without grants gets no grant chart."""
    from models.book import widgets

    result = models.run("cci-insert", queries=2)
    grants = models.get_scenario("cci-insert").grants(result)
    assert grants.behaviour == result.params["behaviour"] and grants.target_mb > 0 and len(grants.log)
    panel = widgets.Panel("cci-insert", knobs=["queries"], fixed={"queries": 2}, outputs=("grants",))
    assert panel.last_error == "" and len(panel._charts(panel.last_result)) == 1
    assert toy.grants is None
    quiet = widgets.Panel("toy", knobs=["workers"], fixed={"rounds": 50}, outputs=("grants",))
    assert quiet.last_error == "" and quiet._charts(quiet.last_result) == []


def test_widgets_and_the_fitting_keep_no_scenario_table() -> None:
    """No scenario's name anywhere in widgets.py or the fitting, docstrings included (the issue's grep)."""
    names = set(models.scenarios())
    for path in [ROOT / "models" / "book" / "widgets.py", *(ROOT / "models" / "fitting").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not [name for name in names if f'"{name}"' in text], path.name
