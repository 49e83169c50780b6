"""Parameter catalogues and the one place where every parameter is checked.

Each scenario declares its parameters as :class:`Param` records (default,
unit, allowed range or choices, one-line meaning).  :func:`resolve` checks a
call against the catalogue before anything is compiled or simulated, so a bad
value fails at once with a message naming the parameter, the value given and
what is allowed, and an unknown name gets the closest valid one suggested.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable

from models.calibration import CONTEXT_SWITCH_US, WAKEUP_US


class ParameterError(ValueError):
    """A parameter value (or name, or combination) that a scenario does not accept."""


def bound_text(x: float) -> str:
    """A range bound as messages show it: a whole number in full (2,147,483,647), else as written (0.0001)."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class Param:
    """One parameter of a scenario."""

    name: str
    kind: str  # "int", "float" or "choice"
    default: Any
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""

    def allowed(self) -> str:
        """The allowed values, as an error message would say them."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        unit = f" {self.unit}" if self.unit else ""
        what = "an integer" if self.kind == "int" else "a number"
        return f"{what} from {bound_text(self.low)} to {bound_text(self.high)}{unit}"

    def check(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type, or raise ParameterError."""
        if self.kind == "choice":
            if isinstance(value, str) and value in self.choices:
                return value
            raise ParameterError(f"{self.name}={value!r} is not allowed: use {self.allowed()}")
        try:
            if isinstance(value, bool):
                raise TypeError
            number = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{self.name}={value!r} is not a number: use {self.allowed()}") from None
        if self.kind == "int":
            if not math.isfinite(number) or number != int(number):
                raise ParameterError(f"{self.name}={value!r} must be {self.allowed()}")
            number = int(number)
        if not (math.isfinite(number) and self.low <= number <= self.high):
            raise ParameterError(f"{self.name}={value!r} is out of range: use {self.allowed()}")
        return number


@dataclass(frozen=True)
class Scenario:
    """A named workload: its parameter catalogue and how to build it."""

    name: str
    doc: str
    params: tuple[Param, ...]
    build: Callable[[dict[str, Any]], Any]
    check: Callable[[dict[str, Any]], None] | None = None

    def param(self, name: str) -> Param:
        """The catalogue entry called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Every parameter at its default."""
        return {p.name: p.default for p in self.params}


def resolve(scenario: Scenario, given: dict[str, Any]) -> dict[str, Any]:
    """Check ``given`` against the catalogue and return every parameter's value."""
    names = [p.name for p in scenario.params]
    for name in given:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid names: {', '.join(names)}"
            raise ParameterError(f"{scenario.name} has no parameter {name!r}{hint}")
    values = scenario.defaults()
    for name, value in given.items():
        values[name] = scenario.param(name).check(value)
    if scenario.check is not None:
        scenario.check(values)
    return values


# Parameters every scenario shares, with the same meaning and range everywhere.
def common_params(*, schedulers: int, policy: str = "fair", context_switch_us: float = CONTEXT_SWITCH_US,
                  wakeup_us: float = WAKEUP_US) -> tuple[Param, ...]:
    """The shared catalogue entries, with scenario-specific defaults where they differ.

    The default hand-off (``wakeup_us + context_switch_us``) is the one :mod:`models.calibration`
    derives from White's measured signal wait.
    """
    return (
        Param("schedulers", "int", schedulers, "", 1, 256, help="SQLOS schedulers (one per logical CPU)"),
        Param("quantum_ms", "float", 4.0, "ms", 0.1, 100.0,
              help="CPU a worker may use before it must yield at a yield point"),
        Param("policy", "choice", policy, choices=("fair", "unfair"),
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


def scheduling_params(*, schedulers: int) -> tuple[Param, ...]:
    """The shared entries of a workload with no latch: schedulers, quantum, hand-off costs and seed (no policy or spin knobs)."""
    keep = ("schedulers", "quantum_ms", "context_switch_us", "wakeup_us", "seed")
    return tuple(p for p in common_params(schedulers=schedulers) if p.name in keep)


def latch_knobs(values: dict[str, Any]) -> dict[str, Any]:
    """The policy and spin parameters as keyword arguments for a LatchSpec."""
    return {
        "policy": values["policy"], "spin_us": values["spin_us"],
        "spins_per_round": values["spins_per_round"], "max_backoffs": values["max_backoffs"],
        "backoff_us": values["backoff_us"],
    }
