"""Live panels: catalogue-driven controls, debounced re-runs, the Run button for slow runs, error text."""

from __future__ import annotations

import html
import math
import threading
import time
import warnings

import ipywidgets as w
import pytest

import models
from models.book import widgets

KNOBS = ["arrival_rate_per_s", "hold_ms", "wakeup_us", "policy", "quantum_ms", "schedulers"]


@pytest.fixture(scope="module")
def small() -> models.Result:
    return models.run("convoy", requests=120, trace_events=200, seed=2)


class FakeRunner:
    """Records calls and returns a prepared Result (optionally after reporting progress)."""

    def __init__(self, result, warn: str = "") -> None:
        self.result, self.warn, self.calls = result, warn, []
        self.seen_progress: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, scenario, progress=None, **params):
        with self.lock:
            self.calls.append((scenario, params))
        if progress is not None:
            progress(0.5)
            self.seen_progress.append(0.5)
        if self.warn:
            warnings.warn(self.warn)
        return self.result


def wait_for(predicate, timeout=120.0):  # a condition, polled; the limit only ends a wait that never comes true
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


def test_controls_follow_the_catalogue(small):
    box = widgets.panel("convoy", knobs=KNOBS, runner=FakeRunner(small))
    c = box.panel.controls
    spec = models.scenarios()["convoy"]
    rate = c["arrival_rate_per_s"]
    assert isinstance(rate, w.FloatLogSlider)
    assert rate.min == pytest.approx(math.log10(spec.param("arrival_rate_per_s").low))
    assert rate.max == pytest.approx(math.log10(spec.param("arrival_rate_per_s").high))
    assert rate.value == spec.param("arrival_rate_per_s").default and "(req/s)" in rate.description
    assert isinstance(c["hold_ms"], w.FloatLogSlider) and "(ms)" in c["hold_ms"].description
    assert isinstance(c["wakeup_us"], w.FloatSlider) and "(µs)" in c["wakeup_us"].description
    assert (c["wakeup_us"].min, c["wakeup_us"].max) == (0.0, 10_000.0)
    assert isinstance(c["policy"], w.Dropdown) and list(c["policy"].options) == ["fair", "unfair"]
    sched = c["schedulers"]
    assert isinstance(sched, w.IntSlider) and (sched.min, sched.max, sched.value) == (1, 256, 8)
    assert box.panel.runs == 1  # the panel shows a first run at once


def test_fixed_values_and_narrowed_ranges(small):
    runner = FakeRunner(small)
    box = widgets.panel("convoy", knobs=["wakeup_us", "schedulers"], fixed={"requests": 500, "schedulers": 4},
                        ranges={"wakeup_us": (0.0, 200.0)}, runner=runner)
    assert box.panel.controls["schedulers"].value == 4
    assert box.panel.controls["wakeup_us"].max == 200.0
    assert runner.calls[-1][1]["requests"] == 500 and runner.calls[-1][1]["schedulers"] == 4
    with pytest.raises(ValueError, match="within the catalogue"):
        widgets.panel("convoy", knobs=["wakeup_us"], ranges={"wakeup_us": (0.0, 1e9)}, runner=runner)
    with pytest.raises(models.ParameterError, match="hold_time"):
        widgets.panel("convoy", knobs=["hold_time"], runner=runner)


def test_real_run_shows_tables_and_charts():
    box = widgets.panel("convoy", knobs=KNOBS, fixed={"requests": 200}, trace_events=200)
    p = box.panel
    kinds = [sorted(o["data"]) for o in p.output.outputs]
    htmls = [o["data"]["text/html"] for o in p.output.outputs if "text/html" in o["data"]]
    assert any("sys.dm_os_latch_stats" in h for h in htmls)
    assert any("sys.dm_os_wait_stats" in h for h in htmls)
    assert any("sys.dm_os_spinlock_stats" in h for h in htmls)
    assert all(k == ["text/html", "text/plain"] for k in kinds)
    # The timeline and the wait distribution, as Vega-Lite for the front end to draw (no SVG from the kernel).
    assert [c["spec"]["title"]["text"] for c in p.chart_view.charts] == ["Worker states over time",
                                                                          "Latch wait per acquire"]
    assert all(c["datasets"] and "datasets" not in c["spec"] for c in p.chart_view.charts)
    assert "throughput" in p.summary.value and p.chart_view.version == 1
    assert p.last_result.params["requests"] == 200
    assert p.status.value.startswith("updated in ") and "(model " in p.status.value


def test_a_change_runs_at_once_and_reports_the_whole_update(small):
    runner = FakeRunner(small)
    box = widgets.panel("convoy", knobs=KNOBS, runner=runner, outputs=("waits",), run_at_start=False)
    p = box.panel
    p.controls["policy"].value = "unfair"
    assert len(runner.calls) == 1 and p.chart_view.version == 1  # no debounce pause by default
    assert p.last_update_s is not None and p.status.value == (
        f"updated in {p.last_update_s * 1000:.0f} ms (model {p.status.value.split('model ')[1]}")


def test_a_listed_range_is_a_slider_over_those_values():
    box = widgets.panel("convoy", knobs=["wakeup_us"], fixed={"wakeup_us": 20.0},
                        ranges={"wakeup_us": [0.0, 5.0, 20.0, 50.0, 200.0]}, run_at_start=False)
    control = box.panel.controls["wakeup_us"]
    assert isinstance(control, w.SelectionSlider) and control.value == 20.0
    assert [label for label, _ in control.options] == ["0", "5", "20", "50", "200"] and control.label == "20"
    with pytest.raises(ValueError, match="wakeup_us"):
        widgets.panel("convoy", knobs=["wakeup_us"], ranges={"wakeup_us": [0.0, 20_000.0]}, run_at_start=False)


def test_invalid_combination_shows_the_message_not_a_traceback():
    box = widgets.panel("closed-latch", knobs=["workers"], fixed={"acquires": 10, "trace_events": 0},
                        outputs=("dmv",), run_at_start=False)
    p = box.panel
    p.controls["workers"].value = 20  # more workers than acquires: the scenario rejects it
    p.debouncer.flush()
    assert p.last_error and "acquires" in p.last_error
    (only,) = p.output.outputs
    assert "Not run:" in only["data"]["text/html"] and "Traceback" not in only["data"]["text/html"]
    assert p.chart_view.layout.display == "none" and p.summary.value == ""
    assert "acquires=10" in only["data"]["text/plain"]


def test_debounce_collapses_a_burst_into_one_run(small):
    runner = FakeRunner(small)
    box = widgets.panel("convoy", knobs=KNOBS, runner=runner, debounce_s=0.1, run_at_start=False,
                        outputs=("dmv",))
    p = box.panel
    for rate in (100.0, 200.0, 300.0, 450.0):
        p.controls["arrival_rate_per_s"].value = rate
    p.controls["policy"].value = "unfair"
    assert runner.calls == []
    assert wait_for(lambda: len(runner.calls) == 1)
    time.sleep(0.3)  # an absence (no second run): a slow machine can only hide one, never fail the test
    assert len(runner.calls) == 1
    assert runner.calls[0][1]["arrival_rate_per_s"] == 450.0 and runner.calls[0][1]["policy"] == "unfair"


def test_slow_runs_wait_for_the_button_and_report_progress(small):
    runner = FakeRunner(small)
    box = widgets.panel("convoy", knobs=KNOBS, runner=runner, debounce_s=0.05, outputs=("dmv",))
    p = box.panel
    p.seconds_per_unit = 10.0  # pretend the fastest run so far took 10 s per request
    p.controls["hold_ms"].value = 1.0
    assert wait_for(lambda: len(runner.calls) == 1 and "press Run" in p.status.value), p.status.value
    p.run_button.click()
    assert len(runner.calls) == 2 and runner.calls[-1][1]["hold_ms"] == 1.0
    assert runner.seen_progress == [0.5, 0.5] and p.progress.value == 0.5
    assert p.progress.layout.visibility == "hidden"


def test_int_values_are_integers_and_estimate_scales_with_size(small):
    runner = FakeRunner(small)
    box = widgets.panel("convoy", knobs=["requests"], runner=runner, outputs=("dmv",))
    p = box.panel
    assert isinstance(p.controls["requests"], w.FloatLogSlider)  # 1 .. 2,000,000: a log slider
    p.controls["requests"].value = 1234.4
    assert p.values()["requests"] == 1234 and isinstance(p.values()["requests"], int)
    p.seconds_per_unit = 1e-4
    assert p.estimate_s({"requests": 20_000}) == pytest.approx(2.0)


def test_warnings_go_to_the_status_line_not_the_cell(small):
    runner = FakeRunner(small, warn="convoy: the run reached max_events")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        box = widgets.panel("convoy", knobs=["policy"], runner=runner, outputs=("dmv",))
    assert not caught
    assert "max_events" in box.panel.status.value


def test_display_is_the_static_note(small):
    box = widgets.panel("convoy", knobs=["policy"], runner=FakeRunner(small), outputs=("dmv",))
    bundle = box._repr_mimebundle_()
    assert bundle["text/plain"] == widgets.NOTE
    assert "make lab" in bundle["text/html"]
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == box.model_id
    assert repr(box) == widgets.NOTE and isinstance(box, w.VBox)
    assert repr(widgets.static_note()) == widgets.NOTE and "JupyterLab" in widgets.static_note()._repr_html_()


def test_quantum_knob_says_it_is_not_configurable(small):
    box = widgets.panel("convoy", knobs=["policy", "quantum_ms"], runner=FakeRunner(small), outputs=("dmv",))
    shown = " ".join(c.value for c in box.children if isinstance(c, w.HTML))
    assert html.escape(widgets.QUANTUM_NOTE) in shown  # beside the live controls
    assert widgets.QUANTUM_NOTE in box._repr_mimebundle_()["text/plain"]  # and on the static site
    plain = widgets.panel("convoy", knobs=["policy"], runner=FakeRunner(small), outputs=("dmv",))
    assert widgets.QUANTUM_NOTE not in repr(plain)


def test_debouncer_with_a_manual_timer():
    fired = []

    class ManualTimer:
        made: list = []

        def __init__(self, delay, fn):
            self.fn, self.cancelled = fn, False
            ManualTimer.made.append(self)

        def start(self):
            pass

        def cancel(self):
            self.cancelled = True

    d = widgets.Debouncer(0.3, lambda: fired.append(1), timer=ManualTimer)
    for _ in range(3):
        d.trigger()
    assert [t.cancelled for t in ManualTimer.made] == [True, True, False]
    ManualTimer.made[-1].fn()
    assert fired == [1] and not d.pending
    d.trigger()
    d.flush()
    assert fired == [1, 1] and not d.pending
