"""What a change would buy: the fitted model run again with one setting changed, with an uncertainty.

Each scenario lists the changes a DBA can make to it (:class:`~models.scenarios.base.Change`)
and the parameters each sets.  :func:`predict` runs the fitted model with and without the change,
at the estimates and at every replicate's refitted parameters (see
:mod:`models.fitting.fit`), so each predicted throughput and wait carries the spread
that the snapshot's own uncertainty gives it: the same level, t quantile
and widening as the fit's own ranges (:attr:`models.fitting.fit.Fit.ranges`).
"""

from __future__ import annotations

import difflib
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from models.counters.snapshot import Snapshot
from models.fitting.fit import TARGET_VISITS, Fit
from models.fitting.fit import sized
from models.fitting.fit import band_points
from models.params import Param, ParameterError, resolve, shown
from models.result import Result
from models.scenarios import CATALOGUE, get_scenario, run
from models.scenarios.base import Change, Scenario
from models.statistics import t_quantile

LATCH_MODES = r"_(KP|SH|UP|EX|DT)"


def changes() -> dict[str, list[tuple[Scenario, Change]]]:
    """Every change any scenario offers, by name, with the scenarios it acts on (in catalogue order)."""
    found: dict[str, list[tuple[Scenario, Change]]] = {}
    for spec in CATALOGUE.values():
        for change in spec.changes:
            found.setdefault(change.name, []).append((spec, change))
    return found


def value_param(name: str) -> Param | None:
    """The catalogue entry that checks change ``name``'s value (None: the change takes no value)."""
    spec, change = changes()[name][0]
    return spec.param(change.param) if change.param else None


def unit(spec: Scenario) -> str:
    """The unit of the scenario's throughput, as the what-if tables print it."""
    return f"{spec.throughput.counts}/s"


def wait_types(spec: Scenario) -> str:
    """The waits the scenario's what-ifs report, as the tables print them."""
    return " + ".join(spec.reported_waits)


@dataclass(frozen=True)
class Range:
    """A predicted value and its range."""

    estimate: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{figure(self.estimate)} ({figure(self.low)} to {figure(self.high)})"


def figure(x: float) -> str:
    """A number as reports print it: whole with thousands separators from 1,000, else four significant digits."""
    if isinstance(x, (int, np.integer)) or abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


@dataclass(frozen=True)
class Prediction:
    """One change's predicted throughput and wait, beside the fitted model's now."""

    change: str
    what: str
    sets: dict[str, Any]
    unit: str
    wait_type: str
    throughput: Range | None
    wait_ms_per_s: Range | None
    now_throughput: Range | None
    now_wait_ms_per_s: Range | None
    note: str  # why it does not apply, or what it rests on

    @property
    def applies(self) -> bool:
        return self.throughput is not None

    @property
    def ratio(self) -> float:
        """Predicted throughput over the fitted model's now."""
        if not self.applies or self.now_throughput.estimate <= 0:
            return math.nan
        return self.throughput.estimate / self.now_throughput.estimate


def metrics(spec: Scenario, result: Result) -> tuple[float, float]:
    """(throughput in the scenario's unit, milliseconds per second of its reported waits) of one run."""
    seconds = result.elapsed_ms / 1000.0
    waited = waited_ms(spec, result.wait_stats["wait_type"], result.wait_stats["wait_time_ms"])
    return float(spec.throughput.per_s(result)), waited / seconds


def waited_ms(spec: Scenario, wait_type: pd.Series, wait_time_ms: pd.Series) -> float:
    """The milliseconds of the scenario's reported waits among these wait rows."""
    keep = pd.Series(False, index=wait_type.index)
    for kind in spec.reported_waits:
        keep |= wait_type.str.fullmatch(kind + LATCH_MODES) if kind in ("LATCH", "PAGELATCH") else wait_type == kind
    return float(wait_time_ms[keep].fillna(0.0).sum())


def _run(spec: Scenario, params: dict[str, Any], rate: float, seconds: float) -> tuple[float, float]:
    """The metrics of one run of the model, sized to ``seconds`` at ``rate`` visits per second."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return metrics(spec, run(spec.name, **sized(spec, params, rate, seconds)))


def _ranges(fit: Fit, params: list[dict[str, Any]], seconds: float) -> tuple[Range, Range]:
    """The metrics at the estimates (first) and their spread over the replicates, scaled to the interval."""
    spec = get_scenario(fit.scenario)
    values = np.array([_run(spec, p, fit.rate_per_s, seconds) for p in params])
    est = values[0]
    if len(values) > 2:
        sd = np.std(values[1:] - est, axis=0, ddof=1) * fit.scale
        # the fit's own t quantile and level, over the replicates (values[0] is the estimate)
        half = fit.half_width or t_quantile(len(values) - 2, fit.level)
    else:
        sd, half = np.zeros(2), 0.0
    return tuple(Range(float(e), float(max(e - half * s, 0.0)), float(e + half * s)) for e, s in zip(est, sd))


def run_seconds(fit: Fit) -> float:
    """How much simulated time a what-if run covers: about TARGET_VISITS visits at the fitted rate (at least 50 ms)."""
    if not get_scenario(fit.scenario).replicated:  # a model that draws nothing at random: run the interval
        return fit.interval_s
    return max(TARGET_VISITS / max(fit.rate_per_s, 1e-9), 0.05)


def _param_sets(fit: Fit, extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The estimates, then each replicate's refitted values held within the model's range, with ``extra`` on top."""
    base = fit.model_params()
    return [dict(base, **extra)] + [dict(base, **_within_model(fit.scenario, r), **extra) for r in fit.replicates]


def _within_model(scenario: str, refit: dict[str, Any]) -> dict[str, Any]:
    """A replicate's refitted values, each held within its catalogue range (see :func:`replicates_held`)."""
    spec = get_scenario(scenario)
    held = {}
    for name, value in refit.items():
        p = spec.param(name)
        held[name] = min(max(value, p.low), p.high)
        if p.kind == "int":
            held[name] = round(held[name])
    return held


def replicates_held(fit: Fit) -> list[str]:
    """The parameters some replicate's refit put beyond the model's range (held at the bound for its runs)."""
    spec = get_scenario(fit.scenario)
    return sorted({name for r in fit.replicates for name, value in r.items()
                   if not spec.param(name).low <= value <= spec.param(name).high})


def parse_change(text: str) -> tuple[str, float | None]:
    """``name`` or ``name=value`` as (name, value), the value checked by the parameter it sets; else a ParameterError."""
    name, sep, value = str(text).partition("=")
    known = changes()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ParameterError(f"change {shown(name)} is unknown: use one of {', '.join(known)}{hint}")
    if not sep:
        return name, None
    entry = value_param(name)
    if entry is None:
        raise ParameterError(f"change {name!r} takes no value: write it alone")
    try:
        return name, entry.check(value)
    except ParameterError as err:
        raise ParameterError(f"{name}: {err} ({known[name][0][1].value})") from None


def predict(fit: Fit, change: str, value: float | None = None, now: tuple[Range, Range] | None = None) -> Prediction:
    """The fitted model with ``change`` (and its optional value) beside the model as fitted."""
    if not isinstance(fit, Fit):
        raise ParameterError(f"fit={type(fit).__name__} is not a Fit: make one with models.fitting.fit.fit")
    name, given = parse_change(change)
    if given is None and value is not None:  # a value passed apart from the change's name gets the same check
        given = parse_change(f"{name}={value}")[1]
    acts_on = changes()[name]
    chosen, value = acts_on[0][1], given
    if fit.scenario is None:
        return Prediction(chosen.name, chosen.what, {}, "", "", None, None, None, None, "no model was fitted")
    spec = get_scenario(fit.scenario)
    unit_text, wait = unit(spec), wait_types(spec)
    if spec.change(name) is None:
        return Prediction(chosen.name, chosen.what, {}, unit_text, wait, None, None, None, None,
                          f"does not apply to {fit.scenario} (it acts on {', '.join(s.name for s, _ in acts_on)})")
    chosen = spec.change(name)
    base = fit.model_params()
    why = chosen.unless(base) if chosen.unless else ""
    if why:
        return Prediction(chosen.name, chosen.what, {}, unit_text, wait, None, None, None, None, why)
    extra = chosen.sets(base, value)
    try:  # the catalogue's check of each changed value, then the scenario's of the whole set, before anything runs
        for pname, pvalue in extra.items():
            spec.param(pname).check(pvalue)
        resolve(spec, sized(spec, dict(base, **extra), fit.rate_per_s, run_seconds(fit)))
    except ParameterError as err:
        raise ParameterError(f"{chosen.name}: {err}") from None
    seconds = run_seconds(fit)
    now = now or _ranges(fit, _param_sets(fit, {}), seconds)
    after = _ranges(fit, _param_sets(fit, extra), seconds)
    rests = [u["param"] for u in fit.undetermined]
    notes = [f"rests on the assumed {', '.join(rests)}"] if rests else []
    if chosen.leaves_out:
        notes.insert(0, f"not in the model: {chosen.leaves_out}")
    held = replicates_held(fit)
    if held:
        notes.append(f"its range is too narrow: replicates of {', '.join(held)} beyond the model's range were held "
                     "at its bounds")
    note = "; ".join(notes)
    what = chosen.what if value is None else f"{chosen.value} = {value:g}"  # the change as given, not its default
    return Prediction(chosen.name, what, extra, unit_text, wait, after[0], after[1], now[0], now[1], note)


MISFIT = 0.25  # the fitted model's waits off the capture's by more than this share: its what-ifs are doubtful


def captured_wait(fit: Fit, snap: Snapshot) -> float:
    """The capture's own ms of the scenario's reported waits per second, to hold the fitted model's against."""
    waits = snap.table("wait")
    return waited_ms(get_scenario(fit.scenario), waits["name"], waits["time_ms"]) / snap.interval_s


def check(fit: Fit, snap: Snapshot, now: tuple[Range, Range]) -> str:
    """How the fitted model's waits compare with the capture's: agreement is fitted, so only a miss says much."""
    captured, model = captured_wait(fit, snap), now[1].estimate
    text = (f"the capture had {figure(captured)} ms/s of {wait_types(get_scenario(fit.scenario))} waits, "
            f"the fitted model {figure(model)}")
    if captured > 0 and abs(model - captured) > MISFIT * captured:
        return text + ": the fitted model does not reproduce the capture, so its what-ifs are doubtful"
    return text + " (the fit used them: agreement here shows only that it converged)"


@dataclass(frozen=True)
class BandGain:
    """A change's gain over now at each end of one band of an assumed value (None: the fit refused that end)."""

    param: str
    low: float
    high: float
    gain_low: float | None
    gain_high: float | None
    measure: str

    def to_dict(self) -> dict[str, Any]:
        return {"param": self.param, "low": self.low, "high": self.high, "gain_low": self.gain_low,
                "gain_high": self.gain_high, "measure": self.measure}

    def __str__(self) -> str:
        def end(value: float, gain: float | None) -> str:
            return f"x{gain:.2f} at {value:g}" if gain is not None else f"not fitted at {value:g} (the capture rules it out)"
        return f"over {self.param} {self.low:g} to {self.high:g}: {end(self.low, self.gain_low)}, {end(self.high, self.gain_high)}"

    @property
    def gains(self) -> list[float]:
        return [g for g in (self.gain_low, self.gain_high) if g is not None]


HELPS = 1.05  # a gain above this everywhere in the bands "helps"; below 1 / HELPS everywhere, "hurts"


def gain_bands(fit: Fit, snap: Snapshot, change: str, value: float | None = None) -> list[BandGain]:
    """``change``'s gain over now at each end of every band that applies (Scenario.bands, where the fit assumed
    the value): :func:`band_table` for that change alone."""
    return band_table(fit, snap, value, only=change).get(change, [])


def band_table(fit: Fit, snap: Snapshot, value: float | None = None,
               only: str | None = None) -> dict[str, list[BandGain]]:
    """Every change's BandGain for every band that applies, by change name (``only``: that change's alone); the
    band ends and their estimates are the fit's own (:func:`models.fitting.fit.band_points`)."""
    if fit.scenario is None or snap is None:
        return {}
    spec = get_scenario(fit.scenario)
    chosen = [c for c in spec.changes if only is None or c.name == only]
    seconds = run_seconds(fit) / 2.0  # the ends move the gain by far more than half the run's noise
    out: dict[str, list[BandGain]] = {}
    ends: dict[tuple[str, str], tuple[float, dict[str, float] | None]] = {}
    for band, side, end, moved in band_points(spec, snap, fit):
        if moved is None:
            ends[(band.param, side)] = (end, None)
            continue
        base = dict(fit.model_params(), **{band.param: end}, **moved)
        now, _ = _run(spec, base, fit.rate_per_s, seconds)
        gains = {}
        for each in chosen:
            why = each.unless(base) if each.unless else ""
            if why or now <= 0:
                continue
            try:
                after, _ = _run(spec, dict(base, **each.sets(base, value)), fit.rate_per_s, seconds)
            except ParameterError:
                continue
            gains[each.name] = after / now
        ends[(band.param, side)] = (end, gains)
    for band in spec.bands:
        if (band.param, "low") not in ends:
            continue
        (low, at_low), (high, at_high) = ends[(band.param, "low")], ends[(band.param, "high")]
        for each in chosen:
            out.setdefault(each.name, []).append(BandGain(
                band.param, low, high, None if at_low is None else at_low.get(each.name),
                None if at_high is None else at_high.get(each.name), band.measure))
    return out


def verdict(ratio: float, bands: list[BandGain]) -> str:
    """Whether a change helps across every band, hurts across them, buys nothing, or depends on one (and how to
    measure it).  Each band's two ends are run with the others at their assumed values, one seed each: interactions
    between bands and a band's interior are not run."""
    gains = [ratio, *[g for b in bands for g in b.gains]] if math.isfinite(ratio) else [g for b in bands for g in b.gains]
    if not gains:
        return "no gain could be computed"
    if not bands:
        return "no assumed value is banded for this fit"
    if min(gains) > HELPS:
        return f"helps across the whole band (x{min(gains):.2f} to x{max(gains):.2f})"
    if max(gains) < 1.0 / HELPS:
        return f"hurts across the whole band (x{min(gains):.2f} to x{max(gains):.2f})"
    if min(gains) >= 1.0 / HELPS and max(gains) <= HELPS:
        return f"no gain across the whole band (x{min(gains):.2f} to x{max(gains):.2f})"
    refused = [f"{b.param}={end:g}" for b in bands for end, gain in ((b.low, b.gain_low), (b.high, b.gain_high))
               if gain is None]
    swing = max(bands, key=lambda b: (max(b.gains) - min(b.gains)) if b.gains else -1.0)
    return (f"depends on {swing.param}: x{min(gains):.2f} to x{max(gains):.2f} over the bands; measure it with "
            f"{swing.measure}" + (f" (not evaluated at {', '.join(refused)}: the estimator refuses it)" if refused
                                  else ""))


def _holding(ends: tuple[float, float] | None, ratio: float) -> tuple[float, float] | None:
    """The bands' ends widened to hold the fit's own gain ``ratio`` (the band is over both)."""
    if not ends or not math.isfinite(ratio):
        return ends
    return min(ends[0], ratio), max(ends[1], ratio)


def _row(change: str, what: str, throughput: Range | None, wait: Range | None, now: Range | None, unit: str,
         note: str, band: tuple[float, float] | None = None, judged: str = "") -> dict[str, Any]:
    nan = math.nan
    return {"change": change, "what": what,
            "band_low": band[0] if band else nan, "band_high": band[1] if band else nan,
            "throughput": throughput.estimate if throughput else nan,
            "throughput_low": throughput.low if throughput else nan,
            "throughput_high": throughput.high if throughput else nan,
            "vs_now": throughput.estimate / now.estimate if throughput and now and now.estimate > 0 else nan,
            "wait_ms_per_s": wait.estimate if wait else nan, "wait_low": wait.low if wait else nan,
            "wait_high": wait.high if wait else nan, "unit": unit, "note": note, "verdict": judged}


def table(fit: Fit, snap: Snapshot | None = None) -> pd.DataFrame:
    """The fitted model now, then each of its scenario's changes: predicted throughput and wait with their ranges, or why not.

    With the snapshot, the first row's note holds the fitted model's waits against the capture's.
    """
    if not isinstance(fit, Fit):
        raise ParameterError(f"fit={type(fit).__name__} is not a Fit: make one with models.fitting.fit.fit")
    if fit.scenario is None:  # nothing was fitted: no model to run, no change to make
        return pd.DataFrame([])
    spec = get_scenario(fit.scenario)
    now = _ranges(fit, _param_sets(fit, {}), run_seconds(fit))
    notes = [check(fit, snap, now)] if snap is not None else []
    held = replicates_held(fit)
    if held:
        notes.append(f"every range is too narrow: replicates of {', '.join(held)} beyond the model's range were "
                     "held at its bounds")
    bands = band_table(fit, snap) if snap is not None else {}
    banded = sorted({b.param for each in bands.values() for b in each})
    if banded:
        notes.append(f"the band columns redo the fit at both ends of what the capture cannot tell ({', '.join(banded)}) "
                     "and give each change's gain over all of them")
    rows = [_row("now", "the fitted model, unchanged", now[0], now[1], now[0], unit(spec), "; ".join(notes))]
    for change in spec.changes:
        try:
            prediction = predict(fit, change.name, now=now)
        except ParameterError as err:  # the change would take the fitted model out of its range
            rows.append(_row(change.name, change.what, None, None, None, unit(spec), f"not modelled: {err}"))
            continue
        mine = bands.get(change.name, [])
        gains = [g for b in mine for g in b.gains]
        rows.append(_row(prediction.change, prediction.what, prediction.throughput, prediction.wait_ms_per_s,
                         prediction.now_throughput, prediction.unit, prediction.note,
                         _holding((min(gains), max(gains)) if gains else None, prediction.ratio),
                         verdict(prediction.ratio, mine) if mine else ""))
    return pd.DataFrame(rows)
