"""Live panels: ipywidgets controls built from a scenario's catalogue that re-run the model.

One notebook line builds a panel::

    widgets.panel(scenario, knobs=["hold_ms", "wakeup_us", "policy", "quantum_ms", "schedulers"])

Each knob becomes a slider or dropdown with the unit in its label and the
range the chapter gives it (the catalogue's otherwise), or a slider over a
list of values.  A change re-runs the model at once (sliders report only when
released) and redraws the DMV tables and the charts, which the front end draws
with vega-embed (swapping only the data into a chart whose spec is unchanged);
the status line says how long the whole update took.  An
update estimated to take longer than a second waits for the Run button and
shows a progress bar.  A rejected parameter combination shows its message
instead of a traceback.

A widget view cannot compute in the static site, so the panel's display also
carries a short note (text/html and text/plain): JupyterLab shows the live
widget, the site shows the note (with the site's myst-nb configuration
dropping the widget-view mime type), and nbval compares only the note, which
is the same at every execution.

What a panel shows beyond the DMVs is the scenario's to say: a scenario whose
queries ask for memory gives its grants (:attr:`Scenario.grants`), which the
"grants" output draws.
"""

from __future__ import annotations

import functools
import html
import math
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import anywidget
import ipywidgets as w
import pandas as pd
import traitlets
from IPython.display import display

import models
from models.book import charts, render
from models.book.analysis import your_server
from models.book.stored import find_book_root
from models.fitting import fit
from models.fitting import whatif
from models.params import check_name
from models.scenarios.base import Scenario

__all__ = ["panel", "Panel", "PanelBox", "ChartsView", "Debouncer", "static_note", "NOTE", "QUANTUM_NOTE",
           "control_for", "snapshot_panel", "SnapshotPanel"]

NOTE = ("Live panel: run this notebook in JupyterLab (make lab) to use it; "
        "the explorer below works here.")
# Beside any panel that offers the quantum: SQL Server's is fixed, so the knob is for understanding.
QUANTUM_NOTE = ("SQL Server's quantum is fixed at 4 ms and cannot be configured: the quantum knob shows how "
                "the mechanism depends on it, not a setting to tune.")
OUTPUTS = ("dmv", "timeline", "waits", "grants")
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


@functools.lru_cache(maxsize=1)
def _chart_view_esm() -> str:
    """The chart view's front end: the vega-embed bundle (as the book's site vendors it, when the book's folder is
    found; else from vl-convert), wrapped so it only sets window.vegaEmbed, then models/book/chart_view.js."""
    book = find_book_root()
    vendored = book / "book" / "_vendor" / "vega" / "vega-embed-bundle.js" if book is not None else None
    if vendored is not None and vendored.is_file():
        bundle = vendored.read_text(encoding="utf-8")
    else:
        import vl_convert  # a large native library: loaded only when the vendored bundle is missing

        bundle = "(function () {\n" + vl_convert.javascript_bundle() + "\n})();\n"
    return bundle + Path(__file__).with_name("chart_view.js").read_text(encoding="utf-8")


class ChartsView(anywidget.AnyWidget):
    """A panel's charts, drawn in the front end by vega-embed (offline, from the book's own bundle).

    A run whose charts have the same specs as the last one's sends only their data, which the front end
    swaps into the existing views: no chart is compiled or laid out again (a few ms instead of ~70 ms each).
    """

    charts = traitlets.List().tag(sync=True)    # [{"spec": Vega-Lite without data, "datasets": {name: rows}}]
    version = traitlets.Int(0).tag(sync=True)   # bumped once per update, after charts: the redraw signal

    @property
    def _esm(self) -> str:  # read once by AnyWidget.__init__
        return _chart_view_esm()

    def show(self, specs: list[dict[str, Any]]) -> None:
        """Draw these Vega-Lite specs (from :func:`models.book.render.quick_spec`), replacing the last ones."""
        with self.hold_sync():  # one message to the front end, with the redraw signal
            self.charts = [{"spec": {k: v for k, v in spec.items() if k != "datasets"},
                            "datasets": spec.get("datasets", {})} for spec in specs]
            self.version += 1


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


def control_for(p: Any, value: Any = None, bounds: tuple[float, float] | list[Any] | None = None,
                description: str | None = None) -> w.ValueWidget:
    """The widget for one catalogue Param: Dropdown, IntSlider, FloatSlider, FloatLogSlider (wide ranges),
    or a SelectionSlider over the values a panel lists (a range from 0 over several decades, say).
    ``description`` replaces the label made from the parameter's name."""
    value = p.default if value is None else value
    common = dict(description=description or charts.label(p.name), tooltip=p.help, style=_DESCRIPTION_STYLE,
                  layout=dict(_LAYOUT), continuous_update=False)
    if p.kind == "choice":
        common.pop("continuous_update")
        return w.Dropdown(options=list(p.choices), value=value, **common)
    if isinstance(bounds, list):
        outside = [v for v in bounds if not p.low <= v <= p.high]
        if outside or len(bounds) < 2:
            raise ValueError(f"values for {p.name} must be two or more within the catalogue's "
                             f"{p.low:g} to {p.high:g}; got {bounds}")
        if value not in bounds:
            raise ValueError(f"{p.name}={value!r} is not one of the panel's values {bounds}")
        return w.SelectionSlider(options=[(f"{v:,g}", v) for v in bounds], value=value, **common)
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


def _size(spec: Scenario, values: Mapping[str, Any]) -> float:
    """The run's size (its scenario's size knobs: requests, acquires, rows...): run time grows about linearly with it."""
    return float(sum(values.get(name, 0) for name in spec.size_params)) or 1.0


def _error_html(message: str) -> str:
    """A rejected combination, shown as its message in a red box (no traceback)."""
    return (f'<div style="border-left: 4px solid #D55E00; padding: 4px 10px; background: #fdf1ec;">'
            f'<b>Not run:</b> {html.escape(message)}</div>')


class Panel:
    """Controls for a scenario's knobs, a debounced or button-driven re-run, and the run's tables and charts."""

    def __init__(self, scenario: str, knobs: Iterable[str], fixed: Mapping[str, Any] | None = None,
                 outputs: Iterable[str] = OUTPUTS, *,
                 ranges: Mapping[str, tuple[float, float] | list[Any]] | None = None,
                 runner: Callable[..., Any] | None = None, debounce_s: float = 0.0, slow_s: float = 1.0,
                 trace_events: int = 600, timeline_workers: int = 24, run_at_start: bool = True,
                 labels: Mapping[str, str] | None = None, headline: Callable[[Any], str] | None = None) -> None:
        """``labels`` names a knob's control in the chapter's words; ``headline`` adds a line of HTML (from the
        run's Result) under the panel's throughput line."""
        spec = models.get_scenario(scenario)  # the one check, and its message, that models.run and the CLI give
        self.scenario, self.spec = scenario, spec
        self.fixed = dict(fixed or {})
        self.outputs = tuple(outputs)
        unknown = [o for o in self.outputs if o not in OUTPUTS]
        if unknown:
            raise ValueError(f"outputs {unknown} are unknown: use some of {OUTPUTS}")
        self.runner = runner or models.run
        self.headline = headline
        self.slow_s, self.trace_events, self.timeline_workers = slow_s, trace_events, timeline_workers
        self.debounce_s = debounce_s
        self.seconds_per_unit: float | None = None
        self.runs = 0
        self.last_result: Any = None
        self.last_error = ""
        self.last_update_s: float | None = None  # control change (or Run) to outputs sent, in seconds
        self._changed_at: float | None = None
        self._run_lock = threading.Lock()
        self.controls: dict[str, w.ValueWidget] = {}
        for name in knobs:
            check_name(spec, name)
            self.controls[name] = control_for(spec.param(name), self.fixed.pop(name, None),
                                              (ranges or {}).get(name), (labels or {}).get(name))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play",
                                   tooltip="re-run the model with these settings")
        self.progress = w.FloatProgress(min=0.0, max=1.0, value=0.0, description="progress",
                                        layout={"width": "260px", "visibility": "hidden"})
        self.status = w.HTML(value="")
        self.summary = w.HTML(value="")     # the run's headline figures
        self.chart_view = ChartsView()      # its charts, redrawn in place
        self.output = w.Output()            # its tables, or the message of a rejected combination
        self.debouncer = Debouncer(debounce_s, self.run)
        self.run_button.on_click(lambda _button: self.run())
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        notes = [w.HTML(value=f"<p><i>{html.escape(QUANTUM_NOTE)}</i></p>")] if "quantum_ms" in self.controls else []
        self.box = PanelBox([*self.controls.values(), *notes,
                             w.HBox([self.run_button, self.progress, self.status]), self.summary,
                             self.chart_view, self.output])
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
        """Estimated update time in seconds (model, tables and charts), from the fastest update so far per
        unit of size (None before any run)."""
        if self.seconds_per_unit is None:
            return None
        return self.seconds_per_unit * _size(self.spec, values if values is not None else self.values())

    def _changed(self, _change: Any = None) -> None:
        """A control moved: say so at once and re-run (after the debounce pause, if any), or ask for the
        Run button when an update is estimated to take longer than ``slow_s``."""
        estimate = self.estimate_s()
        if estimate is not None and estimate > self.slow_s:
            self.debouncer.cancel()
            self.status.value = f"an update takes about {estimate:.1f} s: press Run"
            return
        self._changed_at = time.perf_counter()
        self.status.value = "running…"
        if self.debounce_s > 0:
            self.debouncer.trigger()
        else:
            self.run()

    def _progress(self, fraction: float) -> None:
        self.progress.value = min(max(float(fraction), 0.0), 1.0)

    def run(self) -> Any:
        """Run the model with the current values and show the outcome; a rejected combination shows its message.

        The status line then gives the whole update, from the control change (or this call) until the new
        tables and charts are sent to the front end, and the model's share of it. The progress bar shows
        only for a run started with the Run button (one estimated to be slow).
        """
        with self._run_lock:
            started = self._changed_at if self._changed_at is not None else time.perf_counter()
            slow = self._changed_at is None and self.runs > 0
            self._changed_at = None
            values = self.values()
            kwargs: dict[str, Any] = dict(values, progress=self._progress)
            if "timeline" in self.outputs:
                kwargs["trace_events"] = self.trace_events
            if slow:
                self.progress.value = 0.0
                self.progress.layout.visibility = "visible"
            self.status.value = "running…"
            model_started = time.perf_counter()
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
                self.status.value = self.summary.value = ""
                self.chart_view.layout.display = "none"
                return None
            finally:
                if slow:
                    self.progress.layout.visibility = "hidden"
            model_s = time.perf_counter() - model_started
            self.runs += 1
            self.last_result, self.last_error = result, ""
            with render.unchecked():
                specs = [render.quick_spec(chart) for chart in self._charts(result)]
            self.summary.value = _summary_html(result) + (self.headline(result) if self.headline else "")
            self.chart_view.show(specs)
            self.chart_view.layout.display = None
            self.output.outputs = tuple(self._tables(result))
            update_s = time.perf_counter() - started
            self.last_update_s = update_s
            per_unit = update_s / _size(self.spec, values)
            self.seconds_per_unit = per_unit if self.seconds_per_unit is None else min(self.seconds_per_unit, per_unit)
            notes = [str(m.message) for m in caught]
            self.status.value = (f"updated in {_duration(update_s)} (model {_duration(model_s)})"
                                 + (f"; {html.escape('; '.join(notes))}" if notes else ""))
            return result

    def _charts(self, res: Any) -> list[Any]:
        """The run's charts (Altair), in the order the panel shows them."""
        out = []
        if "timeline" in self.outputs:
            out.append(charts.timeline(res, max_workers=self.timeline_workers))
        if "waits" in self.outputs:
            out.append(charts.wait_distribution({self.scenario: res}))
        if "grants" in self.outputs and self.spec.grants is not None:
            grants = self.spec.grants(res)
            out.append(charts.grant_timeline(
                res.queries, grants.log, behaviour=grants.behaviour, target_mb=grants.target_mb,
                limit_mb=grants.limit_mb, title="The inserts and their memory grants",
                caption=f"Each insert asks for {grants.ask_mb:,.0f} MB; blue bars wait for it."))
        return out

    def _tables(self, res: Any) -> list[dict[str, Any]]:
        """The run's tables (the per-query one, then the DMVs) as Output-widget display_data records."""
        tables = []
        if "grants" in self.outputs and self.spec.grants is not None:
            tables.append((res.queries, "per insert (model)"))
        if "dmv" in self.outputs:
            for attr, title in (("latch_stats", "sys.dm_os_latch_stats"), ("wait_stats", "sys.dm_os_wait_stats"),
                                ("spin_stats", "sys.dm_os_spinlock_stats")):
                table = getattr(res, attr, None)
                if table is not None and len(table):  # (a workload without latches has no latch rows)
                    tables.append((table, title))
        return [_html_output(styled.to_html(), repr(styled))
                for styled in (charts.dmv_table(table, title) for table, title in tables)]


def _duration(seconds: float) -> str:
    """A duration as a reader reads it: '45 ms' or '1.3 s'."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


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
        throughput = models.get_scenario(res.scenario).throughput
        head = f"<b>throughput</b> {throughput.per_s(res):,.1f} {html.escape(throughput.counts)}/s"
    text = f"<p>{head} &nbsp;·&nbsp; <b>simulated time</b> {res.elapsed_ms:,.1f} ms</p>"
    if getattr(res, "truncated", False):
        text += f'<p style="color:#D55E00">truncated: {html.escape(res.truncated_reason)}</p>'
    return text


def panel(scenario: str, knobs: Iterable[str], fixed: Mapping[str, Any] | None = None,
          outputs: Iterable[str] = OUTPUTS, **options: Any) -> PanelBox:
    """A live panel (a VBox) re-running ``scenario`` as its knobs move; options go to :class:`Panel`."""
    return Panel(scenario, knobs, fixed, outputs, **options).box


# ---------------------------------------------------------------- your server: a snapshot in, its fit out

SNAPSHOT_NOTE = ("Live panel: run this notebook in JupyterLab (make lab) to upload your snapshot, or run "
                 "python -m models fit snapshot.csv; the example's analysis is above.")


class SnapshotPanel:
    """Upload a DMV snapshot (or take the example) and see its diagnosis, fitted model and what-ifs.

    The work is :mod:`models.fitting.fit` and :mod:`models.fitting.whatif`; this only reads the file and lays the answer out.
    A bad file shows its named error (malformed snapshot, missing column, ...), never a traceback.
    """

    def __init__(self, example: Path) -> None:
        self.example = example
        self.upload = w.FileUpload(accept=".csv,.txt", multiple=False, description="Upload snapshot")
        self.use_example = w.Button(description="Use the example", tooltip=str(example.name))
        self.status = w.HTML()
        self.output = w.Output()
        self.upload.observe(self._on_upload, names="value")
        self.use_example.on_click(lambda _: self.analyse(example, example.name))
        self.box = PanelBox([w.HBox([self.upload, self.use_example]), self.status, self.output])
        self.box.note = SNAPSHOT_NOTE

    def _on_upload(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if files:
            item = files[0]
            self.analyse(bytes(item["content"]), item["name"])

    def analyse(self, source: Path | bytes, name: str) -> None:
        """Read, fit and show ``source``; any bad input ends as its message in the status line."""
        self.output.clear_output()
        self.status.value = f"<p>fitting {html.escape(name)}…</p>"
        start = time.perf_counter()
        try:
            snap = your_server.load(source)
            fitted = fit.answer(snap, progress=lambda x: self._progress(name, x))
            table = whatif.table(fitted, snap) if fitted.params else None
        except models.ParameterError as err:
            kind = getattr(err, "kind", "")
            self.status.value = _error_html(f"{name}: {kind + ': ' if kind else ''}{err}")
            return
        with self.output:  # the diagnosis first: it stands whether or not a model is fitted
            display(charts.text_table(your_server.diagnosis_frame(fitted.diagnosis), f"Diagnosis: {fitted.diagnosis.name}"
                                      + (f" (the {fitted.scenario} model)" if fitted.scenario else "")))
            if fitted.refusal:
                display(charts.text_table(pd.DataFrame([{"why no model was fitted": fitted.refusal}]), "No model fitted"))
            if fitted.params:
                display(charts.text_table(your_server.attribution_frame(fitted), "What the fit charged to the workload"))
                display(charts.text_table(your_server.params_frame(fitted), "The fitted model"))
                if fitted.undetermined:
                    display(charts.text_table(your_server.undetermined_frame(fitted), "What this snapshot cannot determine"))
                rows = your_server.whatif_frame(table)
                if len(rows):
                    display(charts.text_table(your_server.whatif_shown(rows), "What each change would buy"))
                    display(charts.whatif_chart(rows, title="What each change would buy",
                                                caption="Each dot is the fitted model's throughput after the change "
                                                        "over its throughput now; the bar is its range."))
        self.status.value = (f"<p>{html.escape(name)}: {html.escape(fitted.diagnosis.name)}, "
                             + ("fitted" if fitted.params else "no model fitted")
                             + f" in {_duration(time.perf_counter() - start)}</p>")

    def _progress(self, name: str, done: float) -> None:
        self.status.value = f"<p>fitting {html.escape(name)}: replicates {done:.0%}</p>"


def snapshot_panel(example: Path) -> PanelBox:
    """The upload panel of the "Your server" chapter (a VBox), starting empty."""
    return SnapshotPanel(example).box
