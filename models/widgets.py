"""Live panels: ipywidgets controls built from a scenario's catalogue that re-run the model.

One notebook line builds a panel::

    widgets.panel("convoy", knobs=["arrival_rate_per_s", "hold_ms", "wakeup_us", "policy",
                                   "quantum_ms", "schedulers"])

Each knob becomes a slider or dropdown with the catalogue's range, default and
unit.  A change re-runs the model after a short pause (debounced), or, when a
run is estimated to take longer than a second, waits for the Run button and
shows a progress bar.  The panel shows the DMV tables and charts, or the
message of a rejected parameter combination instead of a traceback.

A widget view cannot compute in the static site, so the panel's display also
carries a short note (text/html and text/plain): JupyterLab shows the live
widget, the site shows the note (with the site's myst-nb configuration
dropping the widget-view mime type), and nbval compares only the note, which
is the same at every execution.
"""

from __future__ import annotations

import html
import math
import threading
import time
import warnings
from typing import Any, Callable, Iterable, Mapping

import ipywidgets as w

import models
from models import charts

__all__ = ["panel", "Panel", "PanelBox", "Debouncer", "static_note", "NOTE", "QUANTUM_NOTE", "control_for"]

NOTE = ("Live panel: run this notebook in JupyterLab (make lab) to use it; "
        "the explorer below works here.")
# Beside any panel that offers the quantum: SQL Server's is fixed, so the knob is for understanding.
QUANTUM_NOTE = ("SQL Server's quantum is fixed at 4 ms and cannot be configured: the quantum knob shows how "
                "the mechanism depends on it, not a setting to tune.")
OUTPUTS = ("dmv", "timeline", "waits", "grants")
SIZE_PARAMS = ("requests", "initial_queue", "acquires", "rows", "window_ms", "inserts_per_session", "rows_per_query")
_DESCRIPTION_STYLE = {"description_width": "200px"}
_LAYOUT = {"width": "560px"}


class StaticNote:
    """The static-site stand-in for a live panel: the same note as HTML and plain text."""

    def __init__(self, text: str = NOTE) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return _note_html(self.text)

    def __repr__(self) -> str:
        return self.text


def _note_html(text: str) -> str:
    """The note as a small boxed paragraph."""
    return (f'<div class="live-panel-note" style="border-left: 4px solid #0072B2; padding: 4px 10px; '
            f'background: #f3f7fb;"><p>{html.escape(text)}</p></div>')


def static_note(text: str = NOTE) -> StaticNote:
    """The note a static page shows in place of a live panel (display it or leave it as a cell's value)."""
    return StaticNote(text)


class PanelBox(w.VBox):
    """The panel's VBox; its display adds the static note so the site shows text, not a dead widget."""

    note = NOTE

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = self.note
        data["text/html"] = _note_html(self.note)
        return data

    def __repr__(self) -> str:
        return self.note


class Debouncer:
    """Call ``fn`` once, ``delay_s`` after the last of a burst of triggers (a timer per burst)."""

    def __init__(self, delay_s: float, fn: Callable[[], Any],
                 timer: Callable[[float, Callable[[], Any]], Any] = threading.Timer) -> None:
        self.delay_s, self.fn, self._timer_factory = delay_s, fn, timer
        self._timer: Any = None
        self._lock = threading.Lock()

    def trigger(self) -> None:
        """(Re)start the countdown; only the last trigger of a burst leads to a call."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._timer_factory(self.delay_s, self._fire)
            if hasattr(self._timer, "daemon"):
                self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._timer = None
        self.fn()

    @property
    def pending(self) -> bool:
        """True while a call is scheduled."""
        return self._timer is not None

    def cancel(self) -> None:
        """Drop a scheduled call."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def flush(self) -> None:
        """Make a scheduled call now."""
        if self.pending:
            self.cancel()
            self.fn()


def control_for(p: Any, value: Any = None, bounds: tuple[float, float] | None = None) -> w.ValueWidget:
    """The widget for one catalogue Param: Dropdown, IntSlider, FloatSlider or FloatLogSlider (wide ranges)."""
    value = p.default if value is None else value
    common = dict(description=charts.label(p.name), tooltip=p.help, style=_DESCRIPTION_STYLE,
                  layout=dict(_LAYOUT), continuous_update=False)
    if p.kind == "choice":
        common.pop("continuous_update")
        return w.Dropdown(options=list(p.choices), value=value, **common)
    low, high = bounds if bounds is not None else (p.low, p.high)
    if not (p.low <= low < high <= p.high):
        raise ValueError(f"range for {p.name} must lie within the catalogue's {p.low:g} to {p.high:g}")
    if not low <= value <= high:
        raise ValueError(f"{p.name}={value!r} is outside the panel range {low:g} to {high:g}")
    wide = low > 0 and high / low >= (5000 if p.kind == "int" else 100)
    if p.kind == "int" and not wide:
        return w.IntSlider(min=int(low), max=int(high), value=int(value), **common)
    if wide:
        exp_low, exp_high = math.log10(low), math.log10(high)
        return w.FloatLogSlider(base=10, min=exp_low, max=exp_high, step=(exp_high - exp_low) / 400,
                                value=value, readout_format=",.0f" if p.kind == "int" else ".3g", **common)
    step = 10.0 ** math.floor(math.log10((high - low) / 10000.0))
    return w.FloatSlider(min=low, max=high, step=step, value=value, readout_format=".4g", **common)


def _size(values: Mapping[str, Any]) -> float:
    """The run's size (requests, acquires or rows): run time grows about linearly with it."""
    return float(sum(values.get(k, 0) for k in SIZE_PARAMS)) or 1.0


def _error_html(message: str) -> str:
    """A rejected combination, shown as its message in a red box (no traceback)."""
    return (f'<div style="border-left: 4px solid #D55E00; padding: 4px 10px; background: #fdf1ec;">'
            f'<b>Not run:</b> {html.escape(message)}</div>')


class Panel:
    """Controls for a scenario's knobs, a debounced or button-driven re-run, and the run's tables and charts."""

    def __init__(self, scenario: str, knobs: Iterable[str], fixed: Mapping[str, Any] | None = None,
                 outputs: Iterable[str] = OUTPUTS, *, ranges: Mapping[str, tuple[float, float]] | None = None,
                 runner: Callable[..., Any] | None = None, debounce_s: float = 0.3, slow_s: float = 1.0,
                 trace_events: int = 600, timeline_workers: int = 24, chart_format: str = "svg",
                 run_at_start: bool = True) -> None:
        spec = models.scenarios().get(scenario)
        if spec is None:
            raise models.ParameterError(f"scenario={scenario!r} is unknown: use one of {', '.join(models.scenarios())}")
        self.scenario, self.spec = scenario, spec
        self.fixed = dict(fixed or {})
        self.outputs = tuple(outputs)
        unknown = [o for o in self.outputs if o not in OUTPUTS]
        if unknown:
            raise ValueError(f"outputs {unknown} are unknown: use some of {OUTPUTS}")
        self.runner = runner or models.run
        self.slow_s, self.trace_events, self.timeline_workers = slow_s, trace_events, timeline_workers
        self.chart_format = chart_format
        self.seconds_per_unit: float | None = None
        self.runs = 0
        self.last_result: Any = None
        self.last_error = ""
        self._run_lock = threading.Lock()
        names = [p.name for p in spec.params]
        self.controls: dict[str, w.ValueWidget] = {}
        for name in knobs:
            if name not in names:
                raise models.ParameterError(f"{scenario} has no parameter {name!r}; valid names: {', '.join(names)}")
            self.controls[name] = control_for(spec.param(name), self.fixed.pop(name, None),
                                              (ranges or {}).get(name))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play",
                                   tooltip="re-run the model with these settings")
        self.progress = w.FloatProgress(min=0.0, max=1.0, value=0.0, description="progress",
                                        layout={"width": "260px", "visibility": "hidden"})
        self.status = w.HTML(value="")
        self.output = w.Output()
        self.debouncer = Debouncer(debounce_s, self.run)
        self.run_button.on_click(lambda _button: self.run())
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        notes = [w.HTML(value=f"<p><i>{html.escape(QUANTUM_NOTE)}</i></p>")] if "quantum_ms" in self.controls else []
        self.box = PanelBox([*self.controls.values(), *notes,
                             w.HBox([self.run_button, self.progress, self.status]), self.output])
        self.box.panel = self
        if notes:
            self.box.note = f"{NOTE} {QUANTUM_NOTE}"
        if run_at_start:
            self.run()

    def values(self) -> dict[str, Any]:
        """The parameters of the next run: the fixed ones, then the controls (log sliders rounded for ints)."""
        out = dict(self.fixed)
        for name, control in self.controls.items():
            value = control.value
            if self.spec.param(name).kind == "int":
                value = int(round(value))
            out[name] = value
        return out

    def estimate_s(self, values: Mapping[str, Any] | None = None) -> float | None:
        """Estimated run time in seconds, from the fastest run so far per unit of size (None before any run)."""
        if self.seconds_per_unit is None:
            return None
        return self.seconds_per_unit * _size(values if values is not None else self.values())

    def _changed(self, _change: Any = None) -> None:
        """A control moved: re-run after the debounce pause, or ask for the Run button if a run is slow."""
        estimate = self.estimate_s()
        if estimate is not None and estimate > self.slow_s:
            self.debouncer.cancel()
            self.status.value = f"a run takes about {estimate:.1f} s: press Run"
            return
        self.debouncer.trigger()

    def _progress(self, fraction: float) -> None:
        self.progress.value = min(max(float(fraction), 0.0), 1.0)

    def run(self) -> Any:
        """Run the model with the current values and show the outcome; a rejected combination shows its message."""
        with self._run_lock:
            values = self.values()
            kwargs: dict[str, Any] = dict(values, progress=self._progress)
            if "timeline" in self.outputs:
                kwargs["trace_events"] = self.trace_events
            self.progress.value = 0.0
            self.progress.layout.visibility = "visible"
            self.status.value = "running…"
            started = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = self.runner(self.scenario, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a panel shows the message, never a traceback
                # models.ParameterError (a ValueError) is the expected case; anything else is named.
                self.last_error = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                self.output.outputs = ({"output_type": "display_data", "data": {
                    "text/html": _error_html(self.last_error), "text/plain": f"Not run: {self.last_error}"},
                    "metadata": {}},)
                self.status.value = ""
                return None
            finally:
                self.progress.layout.visibility = "hidden"
            seconds = time.perf_counter() - started
            per_unit = seconds / _size(values)
            self.seconds_per_unit = per_unit if self.seconds_per_unit is None else min(self.seconds_per_unit, per_unit)
            self.runs += 1
            self.last_result, self.last_error = result, ""
            notes = [str(m.message) for m in caught]
            self.status.value = f"ran in {seconds:.2f} s" + (f"; {html.escape('; '.join(notes))}" if notes else "")
            self.output.outputs = tuple(self._bundles(result))
            return result

    def _bundles(self, res: Any) -> list[dict[str, Any]]:
        """The run's outputs as Output-widget display_data records."""
        items: list[dict[str, Any]] = [_html_output(_summary_html(res))]
        if "dmv" in self.outputs:
            for attr, title in (("latch_stats", "sys.dm_os_latch_stats"), ("wait_stats", "sys.dm_os_wait_stats"),
                                ("spin_stats", "sys.dm_os_spinlock_stats")):
                table = getattr(res, attr, None)
                if table is not None and len(table):  # (a workload without latches has no latch rows)
                    styled = charts.dmv_table(table, title)
                    items.append(_html_output(styled.to_html(), repr(styled)))
        if "timeline" in self.outputs:
            items.append(self._chart_output(charts.timeline(res, max_workers=self.timeline_workers)))
        if "waits" in self.outputs:
            items.append(self._chart_output(charts.wait_distribution({self.scenario: res})))
        if "grants" in self.outputs and getattr(res, "queries", None) is not None:
            e = res.extra
            items.append(self._chart_output(charts.grant_timeline(
                res.queries, e["grants"], behaviour=res.params["behaviour"], target_mb=e["target_mb"],
                limit_mb=e["limit_mb"], title="The inserts and their memory grants",
                caption=f"Each insert asks for {e['grant_mb']:,.0f} MB; blue bars wait for it.")))
            styled = charts.dmv_table(res.queries, "per insert (model)")
            items.append(_html_output(styled.to_html(), repr(styled)))
        return items

    def _chart_output(self, chart: Any) -> dict[str, Any]:
        """A chart as an SVG picture (offline in any front end) or as the active Altair renderer shows it."""
        if self.chart_format == "svg":
            import vl_convert

            data = {"image/svg+xml": vl_convert.vegalite_to_svg(chart.to_dict()), "text/plain": "<chart>"}
        else:  # the active Altair renderer's own bundle (e.g. the site's offline renderer)
            bundle = chart._repr_mimebundle_()
            data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
        return {"output_type": "display_data", "data": data, "metadata": {}}


def _html_output(text: str, plain: str = "") -> dict[str, Any]:
    """An HTML display_data record."""
    return {"output_type": "display_data", "data": {"text/html": text, "text/plain": plain or "<table>"},
            "metadata": {}}


def _summary_html(res: Any) -> str:
    """One line: throughput (or the queries' outcomes) and simulated time, plus the truncation reason if any."""
    queries = getattr(res, "queries", None)
    if queries is not None:
        counts = queries["outcome"].value_counts()
        head = " &nbsp;·&nbsp; ".join(f"<b>{html.escape(o)}</b> {int(counts.get(o, 0))}"
                                      for o in ("granted", "forced_minimum", "error_8645"))
    else:
        head = f"<b>throughput</b> {res.throughput_per_s:,.1f} per second"
    text = f"<p>{head} &nbsp;·&nbsp; <b>simulated time</b> {res.elapsed_ms:,.1f} ms</p>"
    if getattr(res, "truncated", False):
        text += f'<p style="color:#D55E00">truncated: {html.escape(res.truncated_reason)}</p>'
    return text


def panel(scenario: str, knobs: Iterable[str], fixed: Mapping[str, Any] | None = None,
          outputs: Iterable[str] = OUTPUTS, **options: Any) -> PanelBox:
    """A live panel (a VBox) re-running ``scenario`` as its knobs move; options go to :class:`Panel`."""
    return Panel(scenario, knobs, fixed, outputs, **options).box
