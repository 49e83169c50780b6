"""Parameter catalogues and the one place where every parameter is checked.

Each scenario declares its parameters as :class:`Param` records (default,
unit, allowed range or choices, one-line meaning).  :func:`resolve` checks a
call against the catalogue before anything is compiled or simulated, so a bad
value fails at once with a message naming the parameter, the value given and
what is allowed, and an unknown name gets the closest valid one suggested.
"""

from __future__ import annotations

import decimal
import difflib
import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

import numpy as np

from models.calibration import CONTEXT_SWITCH_US, WAKEUP_US
from models.engine.latch import POLICIES


class ParameterError(ValueError):
    """A parameter value (or name, or combination) that a scenario does not accept."""


def bound_text(x: float) -> str:
    """A range bound as messages show it: a whole number in full (2,147,483,647), else as written (0.0001)."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def shown(value: Any) -> str:
    """``value`` as a message quotes it: its repr, cut to 40 characters with the full length said (a 401-digit number)."""
    if isinstance(value, int) and value.bit_length() > 512:  # past what repr() may print (4,300 digits)
        return f"an integer of about {int(value.bit_length() * math.log10(2)):,} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


@dataclass(frozen=True)
class Param:
    """One parameter of a scenario, or one run option of models.run: its kind, default, unit and allowed values."""

    name: str
    kind: str  # "int", "float" or "choice"
    default: Any
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""
    above_low: bool = False  # the low bound itself is refused (max_sim_ms must be above 0)

    def allowed(self) -> str:
        """The allowed values, as an error message would say them."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        unit = f" {self.unit}" if self.unit else ""
        if self.above_low:
            return f"a number above {bound_text(self.low)} and up to {bound_text(self.high)}{unit}"
        what = "an integer" if self.kind == "int" else "a number"
        return f"{what} from {bound_text(self.low)} to {bound_text(self.high)}{unit}"

    def check(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type, or raise ParameterError.

        Python and numpy numbers are taken alike, and so is their text ("2", "1e3", as the command line and
        the panels give them); a bool is no number, and a number too large for a float is out of range.
        """
        if self.kind == "choice":
            return self._choice(value)
        number = _as_number(value)
        # Text that reads as a number is quoted as typed (hold_ms=-3), other values by their repr (hold_ms='abc').
        typed = isinstance(value, str) and number is not None and len(value.strip()) <= 40
        given = value.strip() if typed else shown(value)
        not_what = f"{self.name}={given} is not {'an integer' if self.kind == 'int' else 'a number'}"
        if number is None:
            raise ParameterError(f"{not_what}: use {self.allowed()}")
        if self.kind == "int" and isinstance(number, float):
            if math.isfinite(number) and not number.is_integer():
                raise ParameterError(f"{not_what}: use {self.allowed()}")
            if math.isfinite(number) and self.low <= number <= self.high:
                number = int(number)
        in_range = (isinstance(number, int) or math.isfinite(number)) and self.low <= number <= self.high
        if not in_range or (self.above_low and number <= self.low):
            raise ParameterError(f"{self.name}={given} is out of range: use {self.allowed()}")
        return number if self.kind == "int" else float(number)

    def _choice(self, value: Any) -> str:
        """``value`` if it is one of the choices, else a ParameterError suggesting the closest one."""
        if isinstance(value, str) and value in self.choices:
            return value
        close = difflib.get_close_matches(str(value).lower(), self.choices, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ParameterError(f"{self.name}={shown(value)} is not allowed: use {self.allowed()}{hint}")


def _as_number(value: Any) -> int | float | None:
    """``value`` as a Python int or float (None: not a number); text is read as the command line writes numbers."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        for cast in (int, float):
            try:
                return cast(text)
            except ValueError:  # also int text past Python's 4,300-digit limit: read as a float (inf)
                pass
        return None
    if not isinstance(value, (numbers.Real, decimal.Decimal)):  # bytes and the like, which float() would read
        return None
    try:
        return float(value)  # Fraction, Decimal and other real numbers
    except OverflowError:
        return math.inf
    except ValueError:  # Decimal('sNaN')
        return None


class Catalogue(Protocol):
    """What :func:`resolve` checks against: a named parameter catalogue and its check of a whole set of values."""

    name: str
    params: tuple[Param, ...]
    check: Callable[[dict[str, Any]], None] | None

    def param(self, name: str) -> Param: ...

    def defaults(self) -> dict[str, Any]: ...


def check_name(scenario: Catalogue, name: str) -> None:
    """A ParameterError naming the closest valid name, if ``scenario`` has no parameter ``name``."""
    names = [p.name for p in scenario.params]
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; valid names: {', '.join(names)}"
        raise ParameterError(f"{scenario.name} has no parameter {name!r}{hint}")


def resolve(scenario: Catalogue, given: dict[str, Any]) -> dict[str, Any]:
    """Check ``given`` against the catalogue and return every parameter's value."""
    for name in given:
        check_name(scenario, name)
    values = scenario.defaults()
    for name, value in given.items():
        values[name] = scenario.param(name).check(value)
    if scenario.check is not None:
        scenario.check(values)
    return values


# models.run's options that bound or record a run: Params like a scenario's, checked by the same code, and set
# on the command line like a parameter.  MAX_SIM_MS stays below the clock's exact range (models.engine.clock).
MAX_SIM_MS = 1e9
RUN_OPTIONS: tuple[Param, ...] = (
    Param("trace_events", "int", 0, "", 0, 2_000_000,
          help="worker-state intervals kept for a timeline (Result.trace; not printed here)"),
    Param("record_acquires", "int", 0, "", 0, 5_000_000,
          help="latch acquires kept in a log (Result.acquire_log; not printed here)"),
    Param("max_events", "int", 0, "", 0, 10**11,
          help="stop after this many events, flagged TRUNCATED (0: a bound scaled to the workload)"),
    Param("max_sim_ms", "float", MAX_SIM_MS, "ms", 0, MAX_SIM_MS, above_low=True,
          help="stop after this much simulated time, flagged TRUNCATED"),
)


def check_run_options(given: dict[str, Any]) -> dict[str, Any]:
    """Every run option's value: ``given`` checked, the others at their defaults."""
    values = {option.name: option.default for option in RUN_OPTIONS}
    for option in RUN_OPTIONS:
        if option.name in given:
            values[option.name] = option.check(given[option.name])
    return values


# The most any scenario runs of each: a snapshot's settings are capped here too, so no estimator sees more.
MAX_SCHEDULERS = 256
MAX_DOP = 64
MAX_SESSIONS = 4_096


# Parameters every scenario shares, with the same meaning and range everywhere.
def common_params(*, schedulers: int, policy: str = "fair", context_switch_us: float = CONTEXT_SWITCH_US,
                  wakeup_us: float = WAKEUP_US) -> tuple[Param, ...]:
    """The shared catalogue entries, with scenario-specific defaults where they differ.

    The default hand-off (``wakeup_us + context_switch_us``) is the one :mod:`models.calibration`
    derives from White's measured signal wait.
    """
    return (
        Param("schedulers", "int", schedulers, "", 1, MAX_SCHEDULERS, help="SQLOS schedulers (one per logical CPU)"),
        Param("quantum_ms", "float", 4.0, "ms", 0.1, 100.0,
              help="CPU a worker may use before it must yield at a yield point"),
        Param("policy", "choice", policy, choices=POLICIES,
              help="latch hand-off policy: fair passes ownership to the head waiter; unfair lets running workers barge"),
        Param("context_switch_us", "float", context_switch_us, "us", 0.0, 10_000.0,
              help="scheduler time to switch to a runnable worker"),
        Param("wakeup_us", "float", wakeup_us, "us", 0.0, 10_000.0,
              help="delay from a signal until the waiter is runnable"),
        Param("spin_us", "float", 2.0, "us", 0.01, 1000.0,
              help="length of one spin round (unfair policy)"),
        Param("spins_per_round", "int", 250, "", 1, 1_000_000,
              help="spins counted for one spin round (unfair policy)"),
        Param("max_backoffs", "int", 3, "", 0, 30,
              help="back-offs before a spinning requester suspends (unfair policy)"),
        Param("backoff_us", "float", 5.0, "us", 0.0, 10_000.0,
              help="first back-off pause; each further one doubles (unfair policy)"),
        Param("seed", "int", 1, "", 0, 2**31 - 1, help="seed of the run's random generator"),
    )


def scheduling_params(*, schedulers: int, draws: bool = True) -> tuple[Param, ...]:
    """The shared entries of a workload with no latch: schedulers, quantum, hand-off costs and seed (no policy or spin knobs).

    ``draws=False`` is a workload that draws nothing at random: its seed is kept (a run is still a function of
    its seed) but says that every seed gives the same run.
    """
    keep = ("schedulers", "quantum_ms", "context_switch_us", "wakeup_us", "seed")
    shared = tuple(p for p in common_params(schedulers=schedulers) if p.name in keep)
    if draws:
        return shared
    return tuple(replace(p, help="kept for a uniform interface: this workload draws nothing at random, so every "
                                 "seed gives the same run") if p.name == "seed" else p for p in shared)


def latch_knobs(values: dict[str, Any]) -> dict[str, Any]:
    """The policy and spin parameters as keyword arguments for a LatchSpec."""
    return {
        "policy": values["policy"], "spin_us": values["spin_us"],
        "spins_per_round": values["spins_per_round"], "max_backoffs": values["max_backoffs"],
        "backoff_us": values["backoff_us"],
    }
