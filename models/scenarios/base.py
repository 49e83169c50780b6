"""What a scenario is: one object that carries every fact about one workload.

The command line, the fit, the what-ifs, the snapshot writer and the panels
ask a :class:`Scenario` what they need (its parameters, what its throughput
counts, the waits it reports, what a capture of it holds, how to recognise it
in a capture and estimate its parameters, the changes a DBA can make to it,
how long a run is) and keep no table of their own.  Every fact is a required
keyword, so a scenario that forgets one fails when its module is imported,
with a :class:`ScenarioError` that names the scenario and the fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable

from models.params import MAX_DOP, MAX_SCHEDULERS, MAX_SESSIONS, Param

if TYPE_CHECKING:  # imported only for the annotations
    from models.counters.evidence import Clue, Point
    from models.counters.snapshot import Snapshot
    from models.result import Result
    from models.workload import Workload


class ScenarioError(TypeError):
    """A scenario declared without one of its facts, or with one of the wrong kind."""


def _result_throughput(result: Result) -> float:
    """The engine's own throughput: units of work (or latch acquires) per second."""
    return float(result.throughput_per_s)


@dataclass(frozen=True, kw_only=True)
class Throughput:
    """What a run's throughput counts (``counts``, plural: "rows") and how it is read off a Result."""

    counts: str
    per_s: Callable[[Result], float] = _result_throughput


@dataclass(frozen=True, kw_only=True)
class Capture:
    """What a capture of the scenario holds beyond the DMVs every run has.

    ``session_param`` is the parameter that sets how many user sessions a
    capture counts (None: an open stream of requests, or ``sessions``
    computes it); ``rows`` gives the performance-counter, index and semaphore
    rows a run moves, as a server would count them, and ``setting`` rows
    (name, value) for the settings the scenario states itself (its version,
    its memory model).
    """

    session_param: str | None
    rows: Callable[[dict[str, Any], Result], list[dict[str, Any]]]
    sessions: Callable[[dict[str, Any]], int | None] | None = None

    def session_count(self, values: dict[str, Any]) -> int | None:
        """The user sessions a capture of a run with ``values`` would count (None: no fixed set)."""
        if self.sessions is not None:
            return self.sessions(values)
        return None if self.session_param is None else int(values[self.session_param])


@dataclass(frozen=True, kw_only=True)
class DiagnosisRule:
    """How the fit recognises the scenario in a capture.

    ``claims`` reads the capture's clues (its top wait, latch family and
    class) and returns the evidence that this scenario explains it, None when
    the pattern is not its own, or raises :class:`models.counters.evidence.Refusal`
    when the pattern is its family's but no model here covers it.  Rules are
    tried in ``rank`` order (specific patterns first); ``label`` and
    ``looks_like`` are how the diagnosis is named and described; ``advice``
    (optional) adds the standard advice for the pattern, read off the capture.
    """

    label: str
    looks_like: str
    rank: int
    claims: Callable[[Clue], list[str] | None]
    advice: Callable[[Snapshot], list[str]] | None = None


@dataclass(frozen=True, kw_only=True)
class Change:
    """A change a DBA can make to the scenario, as the parameters it sets.

    ``sets`` maps the fitted values and the optional given value to the
    parameters changed; ``param`` names the parameter whose catalogue entry
    checks a given value (""; the change takes none); ``unless`` says why the
    change does not apply to a fit ("" when it does); ``leaves_out`` says
    what the change costs that the model does not have (a what-if's gain is
    the latch's alone).
    """

    name: str
    what: str
    value: str
    sets: Callable[[dict[str, Any], float | None], dict[str, Any]]
    param: str = ""
    unless: Callable[[dict[str, Any]], str] | None = None
    leaves_out: str = ""


@dataclass(frozen=True, kw_only=True)
class Band:
    """An assumed value no capture can tell, and the range a fit's what-ifs are redone over.

    ``param`` is the parameter, ``low`` and ``high`` the ends of what is plausible, ``what`` what the value is
    and ``measure`` the measurement that would settle it.  A band applies where the fit assumed the value; a
    ``relative`` one (ends as multiples of the value) also where the capture gave it but cannot tell how much of
    it is the workload's (the sessions of a database that other work shares).
    """

    param: str
    low: float
    high: float
    what: str
    measure: str
    relative: bool = False  # the ends are multiples of the value the capture gave (read), not values

    def ends(self, value: float) -> tuple[float, float]:
        """The band's two ends for a fit whose value of the parameter is ``value``."""
        return (self.low * value, self.high * value) if self.relative else (self.low, self.high)


@dataclass(frozen=True, kw_only=True)
class RoundTrip:
    """A known setup of the scenario and the window its capture reads: chapter 9 fits a capture of it, and the
    fit's coverage study draws true values around it and counts how often the fit's ranges hold them."""

    values: dict[str, Any]  # the parameters the setup sets (the others at the scenario's defaults)
    window: dict[str, float] = field(default_factory=dict)  # the capture's start_s and interval_s ({}: from_model's)
    # Parameter -> the value it acts with, from every true value, where a capture cannot show the one set (a grant
    # asked above its cap acts as the cap): the round trips and the coverage study score the fit against it.
    acting: dict[str, Callable[[dict[str, Any]], float]] = field(default_factory=dict)
    # The coverage study's changes to ``values``, where a draw around the setup would leave the model's range
    # (an open latch drawn past saturation has no steady state to fit).
    study_values: dict[str, Any] = field(default_factory=dict)
    study_spread: float | None = None  # the study's spread of true values about the setup (None: the study's own)

    def study_setup(self) -> dict[str, Any]:
        """The setup the coverage study draws around: :attr:`values` with :attr:`study_values` over them."""
        return dict(self.values, **self.study_values)


@dataclass(frozen=True, kw_only=True)
class GrantView:
    """A run's memory grants as a live panel draws them: the semaphore's log (time_ms, granted_mb, waiters), its
    target and limit, what each query asks for, and what a query forced to its minimum grant does."""

    log: Any            # a DataFrame: the granted memory and the waiters over time
    target_mb: float    # the semaphore's target
    limit_mb: float     # the memory it may grant at most
    ask_mb: float       # each query's grant request
    behaviour: str      # the run's value of the parameter that says what a forced query does


_REQUIRED: Any = object()  # a fact's default only so that a forgotten one is named by Scenario, not by dataclasses


def no_rows(values: dict[str, Any], result: Result) -> list[dict[str, Any]]:
    """A capture's extra rows for a scenario that moves no performance counter: none."""
    return []


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """A named workload and every fact about it (see the module docstring)."""

    name: str
    doc: str = _REQUIRED
    params: tuple[Param, ...] = _REQUIRED
    build: Callable[[dict[str, Any]], Workload] = _REQUIRED
    check: Callable[[dict[str, Any]], None] | None = _REQUIRED  # None: no check beyond each parameter's own
    throughput: Throughput = _REQUIRED
    reported_waits: tuple[str, ...] = _REQUIRED  # latch families ("LATCH", "PAGELATCH": every mode) or wait types
    capture: Capture = _REQUIRED
    diagnosis: DiagnosisRule = _REQUIRED
    estimate: Callable[[Snapshot, dict[str, Any]], Point] = _REQUIRED  # (capture, assumed setup) -> estimates
    size_run: Callable[[dict[str, Any], int, float], dict[str, Any]] = _REQUIRED  # (values, visits, seconds) -> sizes
    size_params: tuple[str, ...] = _REQUIRED  # the parameters that set how long a run is (a panel's progress scale)
    changes: tuple[Change, ...] = _REQUIRED
    replicated: bool = True  # False: the model draws nothing at random, so refits from its own snapshots say nothing
    # (assumed choice parameter, fitted parameter) pairs: no counter shows the choice, yet it moves that fitted value
    # beyond its range, so the fit gives the range as the union of its fits under each of the choice's values.
    range_over: tuple[tuple[str, str], ...] = ()
    # What no capture can tell (the wake-up, the hold's split, the log flush): every what-if is redone at both ends.
    bands: tuple[Band, ...] = ()
    # Values the fit assumes where they differ from the model's defaults (name, value): what a capture leaves open
    # is assumed at the end its one-way checks accept (tempdb's one page per object), not at the chapter's value.
    fit_defaults: tuple[tuple[str, Any], ...] = ()
    round_trip: RoundTrip | None = None  # a known setup that chapter 9 and the coverage study fit (None: none)
    grants: Callable[[Result], GrantView] | None = None  # a run's memory grants for a panel (None: it asks for none)

    def __post_init__(self) -> None:
        missing = [fact.name for fact in fields(self) if getattr(self, fact.name) is _REQUIRED]
        if missing:
            raise ScenarioError(f"scenario {self.name!r} does not say its {', '.join(missing)}: every fact is "
                                "required (see models.scenarios.base)")
        kinds = {"throughput": Throughput, "capture": Capture, "diagnosis": DiagnosisRule, "params": tuple,
                 "reported_waits": tuple, "size_params": tuple, "changes": tuple}
        for fact in fields(self):
            value = getattr(self, fact.name)
            if fact.name in kinds and not isinstance(value, kinds[fact.name]):
                raise ScenarioError(f"scenario {self.name!r}: {fact.name} must be a {kinds[fact.name].__name__}, "
                                    f"not {type(value).__name__}")
            if fact.name in ("build", "estimate", "size_run") and not callable(value):
                raise ScenarioError(f"scenario {self.name!r}: {fact.name} must be a function")
        names = {p.name for p in self.params}
        for name in self.size_params + tuple(c.param for c in self.changes if c.param):
            if name not in names:
                raise ScenarioError(f"scenario {self.name!r} names {name!r}, which is not one of its parameters")
        for band in self.bands:
            if band.param not in names or not band.low < band.high:
                raise ScenarioError(f"scenario {self.name!r}: band {band.param!r} must name one of its parameters and "
                                    "have low < high")
        for name, _ in self.fit_defaults:
            if name not in names:
                raise ScenarioError(f"scenario {self.name!r}: fit_defaults names {name!r}, which is not one of its "
                                    "parameters")
        for choice, fitted in self.range_over:
            if choice not in names or fitted not in names or self.param(choice).choices is None:
                raise ScenarioError(f"scenario {self.name!r}: range_over pairs ({choice!r}, {fitted!r}) must be a "
                                    "choice parameter and a parameter of the scenario")
        if self.capture.session_param is not None and self.capture.session_param not in names:
            raise ScenarioError(f"scenario {self.name!r}: its capture counts sessions by {self.capture.session_param!r}, "
                                "which is not one of its parameters")
        # A snapshot's settings are capped at the most any scenario runs (models.params): none may run more.
        most = {"schedulers": MAX_SCHEDULERS, "maxdop": MAX_DOP, self.capture.session_param: MAX_SESSIONS}
        for entry in self.params:
            if entry.name in most and entry.high > most[entry.name]:
                raise ScenarioError(f"scenario {self.name!r}: {entry.name} goes up to {entry.high:,g}, above the "
                                    f"{most[entry.name]:,} a snapshot may hold (models.params)")
        if not self.reported_waits:
            raise ScenarioError(f"scenario {self.name!r} reports no waits: name the latch family or wait types")
        if self.round_trip is not None and not isinstance(self.round_trip, RoundTrip):
            raise ScenarioError(f"scenario {self.name!r}: round_trip must be a RoundTrip, not "
                                f"{type(self.round_trip).__name__}")
        if self.grants is not None and not callable(self.grants):
            raise ScenarioError(f"scenario {self.name!r}: grants must be a function of a Result, or None")
        if self.round_trip is not None:
            named = {*self.round_trip.values, *self.round_trip.acting, *self.round_trip.study_values}
            unknown = sorted(named - names - {"seed"})
            if unknown:
                raise ScenarioError(f"scenario {self.name!r}: its round trip names {', '.join(map(repr, unknown))}, "
                                    "which are not its parameters")

    def param(self, name: str) -> Param:
        """The catalogue entry called ``name``."""
        for entry in self.params:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Every parameter at its default."""
        return {entry.name: entry.default for entry in self.params}

    def change(self, name: str) -> Change | None:
        """The change called ``name`` if this scenario has it."""
        return next((c for c in self.changes if c.name == name), None)


def _half_maxdop(fitted: dict[str, Any], given: float | None) -> dict[str, Any]:
    """MAXDOP as given, else half the fitted one (at least 1)."""
    return {"maxdop": int(given) if given is not None else max(1, fitted["maxdop"] // 2)}


# The share of the captured database's sessions that may be other work in that database (the capture tells the
# database's sessions and CPU apart from the instance's, not one workload's from another's in the same database).
OTHER_IN_DATABASE = 0.2


def database_share_band(param: str) -> Band:
    """The band two scenarios share over how many of the captured database's sessions (``param``) run the workload."""
    return Band(param=param, low=1.0 - OTHER_IN_DATABASE, high=1.0, relative=True,
                what=f"how many of the captured database's sessions run this workload (up to "
                     f"{OTHER_IN_DATABASE:.0%} may be other work in the same database, which no counter tells apart)",
                measure="sys.dm_exec_requests sampled during the capture, grouped by query_hash, or Query Store's "
                        "executions per query")


def wakeup_band(low: float, high: float) -> Band:
    """The band two scenarios share over the wake-up of a waiter handed the latch (models.calibration's)."""
    return Band(param="wakeup_us", low=low, high=high, what="the wake-up of a waiter handed the latch",
                measure="a capture at a quiet time with fewer active sessions than schedulers, or a trace of "
                        "Windows context switches (ETW)")


# A change two scenarios share (the parallel insert and the columnstore insert both run at a MAXDOP).
LOWER_MAXDOP = Change(name="lower-maxdop", what="lower MAXDOP (to half)", value="the new MAXDOP", sets=_half_maxdop,
                      param="maxdop", unless=lambda fitted: "MAXDOP is 1 already" if fitted["maxdop"] <= 1 else "")
