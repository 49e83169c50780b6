"""Chart specs carry units, captions, fixed state colours, bound inputs and filters, and are deterministic."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import vl_convert

import models
from models.book import charts


@pytest.fixture(scope="module")
def fair() -> models.Result:
    return models.run("convoy", requests=150, arrival_rate_per_s=480, trace_events=300, seed=3)


@pytest.fixture(scope="module")
def unfair() -> models.Result:
    return models.run("convoy", requests=150, arrival_rate_per_s=480, trace_events=300, seed=3, policy="unfair")


def sweep() -> pd.DataFrame:
    """A fake sweep: a non-uniform hold grid, a uniform scheduler grid, two policies, four rates."""
    rows = []
    for policy in ("fair", "unfair"):
        for hold in (0.5, 1.0, 2.0, 5.0, 10.0):
            for sched in (2, 4, 6, 8, 10):
                for rate in (100.0, 200.0, 300.0, 400.0):
                    rows.append({"policy": policy, "hold_ms": hold, "schedulers": sched,
                                 "arrival_rate_per_s": rate, "throughput_per_s": rate / hold + sched,
                                 "p99_wait_ms": hold * rate / 100 + (policy == "unfair")})
    return pd.DataFrame(rows)


def svg(chart) -> str:
    return vl_convert.vegalite_to_svg(chart.to_dict())


# ------------------------------------------------------------ labels

@pytest.mark.parametrize("column, expected", [
    ("hold_ms", "hold (ms)"), ("arrival_rate_per_s", "arrival rate (req/s)"), ("wakeup_us", "wakeup (µs)"),
    ("p99_wait_ms", "p99 latch wait (ms)"), ("workers", "workers (count)"), ("policy", "latch policy"),
])
def test_label_has_unit(column, expected):
    assert charts.label(column) == expected
    assert charts.label(column, {column: "custom (s)"}) == "custom (s)"


# ------------------------------------------------------------ timeline

def test_timeline_encodings_titles_and_fixed_palette(fair):
    spec = charts.timeline(fair).to_dict()
    enc = spec["encoding"]
    assert enc["x"]["field"] == "start_ms" and enc["x2"]["field"] == "end_ms"
    assert "(ms)" in enc["x"]["title"]
    assert enc["color"]["scale"]["domain"] == list(charts.STATES)
    assert enc["color"]["scale"]["range"] == [charts.STATE_COLORS[s] for s in charts.STATES]
    assert spec["title"]["text"] and spec["title"]["subtitle"]
    rows = [r["row"] for r in spec["data"]["values"]]
    assert rows[0].startswith("W0 @ S")
    assert "<rect" in svg(charts.timeline(fair)) or "<path" in svg(charts.timeline(fair))


def test_timeline_rows_sorted_by_worker_number_not_text():
    trace = pd.DataFrame({"worker": [10, 2, 2], "scheduler": [1, 0, 0],
                          "state": ["running", "suspended", "running"],
                          "start_ms": [0.0, 0.0, 1.0], "end_ms": [1.0, 1.0, 2.0]})
    spec = charts.timeline(trace).to_dict()
    assert spec["encoding"]["y"]["sort"] == {"field": "row_order", "op": "min"}  # the order travels in the data
    order = {v["row"]: v["row_order"] for v in spec["data"]["values"]}
    assert sorted(order, key=order.get) == ["W2 @ S0", "W10 @ S1"]


def test_panel_charts_keep_their_spec_when_only_the_data_changes():
    """A live panel swaps data into the drawn chart when the spec (without data) is unchanged."""
    from models.book import render

    def bare(chart):
        spec = render.quick_spec(chart)
        spec.pop("datasets")
        return spec

    a = models.run("closed-latch", workers=8, acquires=400, trace_events=300, seed=1)
    b = models.run("closed-latch", workers=9, acquires=400, trace_events=300, seed=2)
    assert bare(charts.timeline(a)) == bare(charts.timeline(b))
    assert render.quick_spec(charts.timeline(a))["datasets"] != render.quick_spec(charts.timeline(b))["datasets"]


def test_timeline_window_and_worker_limit(fair):
    spec = charts.timeline(fair, until_ms=5.0, max_workers=3).to_dict()
    values = spec["data"]["values"]
    assert max(v["end_ms"] for v in values) <= 5.0
    assert len({v["worker"] for v in values}) <= 3


@pytest.mark.parametrize("trace", [None, pd.DataFrame(columns=["worker", "scheduler", "state", "start_ms", "end_ms"])])
def test_timeline_empty_trace_says_so(trace):
    chart = charts.timeline(trace)
    spec = chart.to_dict()
    assert "trace_events" in spec["data"]["values"][0]["message"]
    assert spec["title"]["text"] == "Worker states over time"
    svg(chart)


def test_timeline_by_scheduler_facets(fair):
    spec = charts.timeline(fair, by_scheduler=True).to_dict()
    assert spec["facet"]["row"]["field"] == "scheduler"


def test_timeline_compare_shares_x_and_keeps_order(fair, unfair):
    chart = charts.timeline_compare({"fair": fair, "unfair": unfair.trace, "none": None})
    spec = chart.to_dict()
    assert spec["facet"]["row"]["field"] == "run"
    assert spec["facet"]["row"]["sort"] == ["fair", "unfair", "none"]
    assert spec["resolve"]["scale"]["x"] == "shared"
    assert {v["run"] for v in spec["data"]["values"]} == {"fair", "unfair"}
    svg(chart)


# ------------------------------------------------------------ waits

def test_wait_distribution_marks_percentiles(fair, unfair):
    waits = np.concatenate([np.zeros(50), np.linspace(0.1, 30.0, 1000)])
    chart = charts.wait_distribution({"fair": fair, "array": waits}, max_points=100)
    spec = chart.to_dict()
    line, points = spec["layer"]
    assert line["encoding"]["x"]["scale"]["type"] == "symlog"
    assert "(ms" in line["encoding"]["x"]["title"] and "(%)" in line["encoding"]["y"]["title"]
    curve = pd.DataFrame(line["data"]["values"])
    assert (curve.groupby("run").size() <= 100).all()
    assert curve.groupby("run")["percent"].max().tolist() == [100.0, 100.0]
    marks = pd.DataFrame(points["data"]["values"]).set_index(["run", "statistic"])["wait_ms"]
    assert marks["array", "p50"] == pytest.approx(np.percentile(waits, 50))
    assert marks["array", "p99"] == pytest.approx(np.percentile(waits, 99))
    assert marks["array", "max"] == pytest.approx(30.0)
    assert marks["fair", "max"] == pytest.approx(fair.acquire_wait_ms.max())
    assert spec["title"]["subtitle"]
    svg(chart)


def test_wait_distribution_with_no_acquires():
    spec = charts.wait_distribution({"x": np.array([])}).to_dict()
    assert spec["data"]["values"][0]["message"] == "No acquires recorded."


# ------------------------------------------------------------ metric vs parameter

def test_throughput_vs_with_rule_and_curve_references():
    df = sweep().query("policy == 'fair' and schedulers == 2")
    ref = pd.DataFrame({"arrival_rate_per_s": [100.0, 400.0], "throughput_per_s": [100.0, 400.0],
                        "label": ["offered load", "offered load"]})
    chart = charts.throughput_vs(df, "arrival_rate_per_s", color="hold_ms", reference={"capacity 1/hold": 500.0})
    spec = chart.to_dict()
    lines, rule, halo, text = spec["layer"]
    assert halo["mark"]["stroke"] == "white" and text["mark"]["align"] == "left"
    assert lines["encoding"]["x"]["title"] == "arrival rate (req/s)"
    assert lines["encoding"]["y"]["title"] == "throughput (per second)"
    assert lines["encoding"]["color"]["field"] == "hold_ms"
    assert rule["mark"]["type"] == "rule" and rule["data"]["values"] == [{"label": "capacity 1/hold", "value": 500.0}]
    curve = charts.throughput_vs(df[df.hold_ms == 2.0], "arrival_rate_per_s", reference=ref).to_dict()
    assert curve["layer"][1]["mark"]["strokeDash"] == [6, 4]
    with pytest.raises(ValueError, match="nope"):
        charts.throughput_vs(df, "nope")
    svg(chart)


@pytest.mark.parametrize("at, align, x, below", [("left", "left", 0, False), ("right", "right", "width", False),
                                                 ("right-below", "right", "width", True)])
def test_reference_labels_go_where_asked_over_a_halo(at, align, x, below):
    """A reference rule's label sits at the asked end, above or below its rule, drawn over a white halo so a data
    line crossing it passes under the text."""
    df = sweep().query("policy == 'fair' and schedulers == 2 and hold_ms == 1.0")
    spec = charts.throughput_vs(df, "arrival_rate_per_s", reference={"ceiling": 500.0}, reference_at=at).to_dict()
    lines, rule, halo, text = spec["layer"]
    for mark in (halo, text):
        assert mark["mark"]["type"] == "text" and mark["mark"]["align"] == align
        assert mark["encoding"]["x"] == {"value": x}
        assert (mark["mark"]["dy"] > 0) == below
    assert halo["mark"]["stroke"] == "white" and halo["mark"]["strokeWidth"] >= 3
    with pytest.raises(ValueError, match="rule labels"):
        charts.throughput_vs(df, "arrival_rate_per_s", reference={"ceiling": 500.0}, reference_at="middle")


def test_the_book_theme_keeps_tick_labels_apart():
    """The book's theme asks Vega to drop tick labels closer than a few px ("4,0005,000" cannot happen)."""
    spec = charts.throughput_vs(sweep().query("policy == 'fair' and schedulers == 2 and hold_ms == 1.0"),
                                "arrival_rate_per_s").to_dict()
    assert spec["config"]["axis"]["labelSeparation"] >= 6


def test_points_on_curves_draws_interval_bars_in_the_curves_colours():
    curves = pd.DataFrame({"rho": [0.1, 0.5, 0.1, 0.5], "mean_wait_ms": [0.1, 1.0, 0.2, 2.0],
                           "hold": ["a", "a", "b", "b"]})
    points = pd.DataFrame({"rho": [0.5, 0.5], "mean_wait_ms": [1.1, 1.9], "ci": [0.2, 0.3], "hold": ["a", "b"]})
    chart = charts.points_on_curves(points, curves, "rho", "mean_wait_ms", "hold", "ci", title="t", caption="c")
    line, bars, dots = chart.to_dict()["layer"]
    assert line["encoding"]["y"]["title"] == "mean latch wait (ms)"
    assert bars["encoding"]["y2"]["field"] == "high"
    assert [round(r["low"], 6) for r in bars["data"]["values"]] == [0.9, 1.6]
    assert line["encoding"]["color"]["scale"] == dots["encoding"]["color"]["scale"]
    assert chart.to_dict()["width"] <= 720
    with pytest.raises(ValueError, match="ci"):
        charts.points_on_curves(points.drop(columns="ci"), curves, "rho", "mean_wait_ms", "hold", "ci",
                                title="t", caption="c")
    svg(chart)


# ------------------------------------------------------------ DMV tables

def test_dmv_table_formats_and_is_deterministic():
    df = pd.DataFrame({"latch_class": ["CONVOY_LATCH"], "waiting_requests_count": [1234567],
                       "wait_time_ms": [12345.678912], "p99_wait_ms": [0.0004]})
    table = charts.dmv_table(df, "sys.dm_os_latch_stats")
    out = table.to_html()
    assert "1,234,567" in out and "12,345.679" in out and "0.000" in out
    assert 'id="T_sys_dm_os_latch_stats"' in out
    assert out == charts.dmv_table(df, "sys.dm_os_latch_stats").to_html()
    assert "object at 0x" not in repr(table) and "1,234,567" in repr(table)
    assert "sys.dm_os_latch_stats" in out


def test_dmv_table_on_real_result(fair):
    out = charts.dmv_table(fair.wait_stats, "sys.dm_os_wait_stats").to_html()
    assert "LATCH_EX" in out and "SOS_SCHEDULER_YIELD" in out


def test_text_table_keeps_long_cells_whole_and_is_deterministic():
    long = "quantum_ms parameter, default 4; checked at yield points, and only when another worker is runnable"
    df = pd.DataFrame({"behaviour": ["quantum"], "model": [long]})
    assert "..." in df._repr_html_()  # what a notebook would have stored for the plain DataFrame
    out = charts.text_table(df, "Model and documentation", "one row per rule").to_html()
    assert long in out and "..." not in out
    assert 'id="T_model_and_documentation"' in out and "one row per rule" in out
    assert out == charts.text_table(df, "Model and documentation", "one row per rule").to_html()
    assert long in repr(charts.text_table(df, "Model and documentation"))


def test_wrap_headers_breaks_html_headers_only(fair):
    table = charts.wrap_headers(charts.dmv_table(fair.wait_stats, "sys.dm_os_wait_stats"))
    out = table.to_html()
    assert "signal_<wbr>wait_<wbr>time_<wbr>ms" in out and "waiting_<wbr>tasks_<wbr>count" in out
    assert "SOS_SCHEDULER_YIELD" in out  # cells are left alone
    assert out == charts.wrap_headers(charts.dmv_table(fair.wait_stats, "sys.dm_os_wait_stats")).to_html()
    text = repr(table)
    assert "signal_wait_time_ms" in text and "<wbr>" not in text


# ------------------------------------------------------------ explorer

def test_explorer_binds_inputs_with_units_and_ranges():
    chart = charts.explorer(sweep(), "arrival_rate_per_s", "throughput_per_s", sliders=["hold_ms", "schedulers"],
                            dropdowns=["policy"], y2="p99_wait_ms")
    spec = chart.to_dict()
    params = {p["name"]: p for p in spec["params"]}
    hold = params["s_hold_ms"]  # non-uniform grid: a slider over the value's position
    assert hold["bind"]["input"] == "range"
    assert (hold["bind"]["min"], hold["bind"]["max"], hold["bind"]["step"]) == (0, 4, 1)
    assert "(ms)" in hold["bind"]["name"] and "position" not in hold["bind"]["name"]
    assert hold["value"] == 2  # the catalogue default 2 ms is the third grid value
    # The site's script prints the value at each position beside the input, not the position.
    assert spec["usermeta"][charts.SLIDER_VALUES] == {"s_hold_ms": ["0.5 ms", "1 ms", "2 ms", "5 ms", "10 ms"]}
    sched = params["s_schedulers"]  # uniform grid: a slider over the values themselves
    assert (sched["bind"]["min"], sched["bind"]["max"], sched["bind"]["step"]) == (2, 10, 2)
    assert params["d_policy"]["bind"] == {"input": "select", "options": ["fair", "unfair"],
                                          "labels": ["fair", "unfair"], "name": "latch policy "}
    panels = spec["vconcat"][1]["hconcat"]
    assert [p["encoding"]["y"]["field"] for p in panels] == ["throughput_per_s", "p99_wait_ms"]
    for p in panels:
        expr = p["transform"][0]["filter"]
        assert "s_hold_ms" in expr and "s_schedulers" in expr and "d_policy" in expr
    assert spec["title"]["text"] and spec["title"]["subtitle"]
    assert "s_hold_ms" in spec["vconcat"][0]["transform"][0]["calculate"]


def test_explorer_slider_moves_the_chart():
    df = sweep().query("schedulers == 4")
    chart = charts.explorer(df, "arrival_rate_per_s", "throughput_per_s", sliders=["hold_ms"], color="policy")
    spec = chart.to_dict()
    first = vl_convert.vegalite_to_svg(spec)
    spec["params"][0]["value"] = 0
    moved = vl_convert.vegalite_to_svg(spec)
    assert "<path" in first and first != moved


def test_explorer_numeric_colour_column_gets_distinct_colours():
    chart = charts.explorer(sweep(), "arrival_rate_per_s", "throughput_per_s", sliders=["schedulers"],
                            dropdowns=["policy"], color="hold_ms")
    spec = chart.to_dict()
    assert spec["vconcat"][1]["encoding"]["color"]["scale"]["domain"] == [0.5, 1.0, 2.0, 5.0, 10.0]
    drawn = svg(chart)
    assert sum(colour.lower() in drawn.lower() for colour in charts.SERIES_COLORS[:5]) == 5


def test_explorer_few_values_are_radio_buttons_showing_each_value():
    df = sweep().query("hold_ms in (0.5, 1.0, 2.0) and schedulers == 4")
    spec = charts.explorer(df, "arrival_rate_per_s", "throughput_per_s", sliders=["hold_ms"],
                           dropdowns=["policy"]).to_dict()
    radio = {p["name"]: p for p in spec["params"]}["r_hold_ms"]
    assert radio["bind"]["input"] == "radio" and radio["bind"]["labels"] == ["0.5 ms", "1 ms", "2 ms"]
    assert radio["value"] == 2.0 and charts.SLIDER_VALUES not in spec.get("usermeta", {})
    drawn = vl_convert.vegalite_to_svg(spec)
    spec["params"][0]["value"] = 0.5
    assert "<path" in drawn and vl_convert.vegalite_to_svg(spec) != drawn


def test_explorer_readout_is_one_line_per_input():
    """The 'Showing:' readout is a list of lines, one per input, in a view tall enough for all of them: no line is
    cut with an ellipsis in a phone's column."""
    chart = charts.explorer(sweep(), x="arrival_rate_per_s", y="throughput_per_s", sliders=["hold_ms", "schedulers"],
                            dropdowns=["policy"])
    readout = chart.to_dict()["vconcat"][0]
    expr = readout["transform"][0]["calculate"]
    assert expr.startswith("['Showing:', ") and expr.endswith("]") and expr.count(' = " + ') == 3
    assert readout["height"] == 4 * charts.READOUT_LINE_PX
    assert readout["mark"]["baseline"] == "top" and readout["mark"]["lineHeight"] == charts.READOUT_LINE_PX
    text = svg(chart)
    assert ">hold = " in text and ">schedulers = " in text and ">latch policy = " in text and "…" not in text
    long = charts.explorer(sweep(), x="arrival_rate_per_s", y="throughput_per_s", sliders=["hold_ms", "schedulers"],
                           dropdowns=["policy"], labels={"policy": "OPTIMIZE_FOR_SEQUENTIAL_KEY"})
    expr = long.to_dict()["vconcat"][0]["transform"][0]["calculate"]
    assert '"OPTIMIZE_FOR_", "SEQUENTIAL_KEY =", d_policy' in expr  # a long name broken, its value on its own line
    assert long.to_dict()["vconcat"][0]["height"] == 6 * charts.READOUT_LINE_PX


def test_explorer_rejects_an_unbound_grid_dimension_and_bad_defaults():
    with pytest.raises(ValueError, match="several rows"):
        charts.explorer(sweep(), "arrival_rate_per_s", "throughput_per_s", sliders=["hold_ms"], dropdowns=["policy"])
    with pytest.raises(ValueError, match="not a grid value"):
        charts.explorer(sweep(), "arrival_rate_per_s", "throughput_per_s", sliders=["hold_ms", "schedulers"],
                        dropdowns=["policy"], defaults={"hold_ms": 3.0})


def test_specs_are_deterministic(fair):
    def build():
        return [charts.timeline(fair), charts.wait_distribution({"a": fair}),
                charts.explorer(sweep(), "arrival_rate_per_s", "throughput_per_s",
                                sliders=["hold_ms", "schedulers"], dropdowns=["policy"])]
    first = [c.to_json() for c in build()]
    assert first == [c.to_json() for c in build()]
    for text in first:
        assert '"param_' not in text and '"view_' not in text and '"data-' not in text
        json.loads(text)


# ------------------------------------------------------------ convoy chapter

def test_series_lines_keeps_first_seen_order_and_titles():
    df = pd.DataFrame({"t": [0.0, 1.0, 0.0, 1.0], "q": [0, 5, 0, 0], "run": ["burst", "burst", "empty", "empty"]})
    spec = charts.series_lines(df, "t", "q", "run", title="Queue", caption="c", x_title="time (ms)",
                               y_title="waiting (count)").to_dict()
    assert spec["encoding"]["color"]["scale"]["domain"] == ["burst", "empty"]
    assert spec["encoding"]["x"]["title"] == "time (ms)" and spec["width"] <= 720
    assert "<path" in svg(charts.series_lines(df, "t", "q", "run", title="Q", caption="c", x_title="t (ms)",
                                              y_title="q (count)"))
    one = charts.series_lines(df[df["run"] == "burst"], "t", "q", "run", title="Q", caption="c", x_title="t (ms)",
                              y_title="q (count)").to_dict()
    assert one["encoding"]["color"]["legend"] is None  # a single series needs no legend


def test_time_to_convoy_panels_share_their_rates():
    onsets = pd.DataFrame({"arrival_rate_per_s": [430, 430, 470, 470], "seed": [1, 2, 1, 2],
                           "time_to_convoy_s": [np.nan, np.nan, 2.0, 4.0]})
    summary = pd.DataFrame({"arrival_rate_per_s": [430.0, 470.0], "runs": [2, 2], "convoyed": [0, 2],
                            "share": [0.0, 1.0], "median_s": [np.nan, 3.0]})
    spec = charts.time_to_convoy(onsets, summary, horizon_s=60, title="T", caption="c").to_dict()
    left, right = spec["hconcat"]
    domains = [layer["encoding"]["x"]["scale"]["domain"] for layer in left["layer"]]
    domains.append(right["encoding"]["x"]["scale"]["domain"])
    assert all(d == [430.0, 470.0] for d in domains)  # 430 appears on both panels although no run convoyed
    assert "60 s" in right["encoding"]["y"]["title"]
    svg(charts.time_to_convoy(onsets, summary, horizon_s=60, title="T", caption="c"))
    with_ci = summary.assign(share_lo=[0.0, 0.34], share_hi=[0.66, 1.0])  # Wilson intervals: drawn as error bars
    bars, rule = charts.time_to_convoy(onsets, with_ci, horizon_s=60, title="T", caption="c").to_dict()["hconcat"][1]["layer"]
    assert bars["mark"]["type"] == "bar" and rule["mark"]["type"] == "rule"
    assert rule["encoding"]["y2"]["field"] == "share_hi"


def test_points_vs_formula_draws_the_formula_dashed_and_first():
    df = pd.DataFrame({"rho": [0.5, 0.5, 0.8, 0.8], "w": [1.0, 1.1, 4.0, 4.2],
                       "run": ["formula", "sim", "formula", "sim"]})
    spec = charts.points_vs_formula(df, "rho", "w", "run", "formula", title="T", caption="c",
                                    x_title="utilisation", y_title="wait (ms)").to_dict()
    line, points = spec["layer"]
    assert line["mark"]["strokeDash"] == [5, 3] and points["mark"]["type"] == "point"
    assert line["encoding"]["color"]["scale"]["domain"] == ["formula", "sim"]
    assert line["encoding"]["y"]["scale"]["type"] == "log"


def test_against_diagonal_shares_one_square_domain():
    df = pd.DataFrame({"floor_s": [10.0, 20.0], "elapsed_s": [11.0, 21.0], "maxdop": [8, 16],
                       "quantum_ms": [4.0, 4.0]})
    spec = charts.against_diagonal(df, "floor_s", "elapsed_s", "maxdop", "quantum_ms", title="T", caption="c",
                                   x_title="floor (s)", y_title="run (s)").to_dict()
    diag, points = spec["layer"]
    assert diag["mark"]["strokeDash"] == [4, 4] and points["mark"]["type"] == "point"
    top = diag["data"]["values"][1]["floor_s"]
    assert top == pytest.approx(21.0 * 1.05)
    assert points["encoding"]["x"]["scale"]["domain"] == points["encoding"]["y"]["scale"]["domain"] == [0, top]
    assert points["encoding"]["color"]["scale"]["domain"] == ["8", "16"] and spec["width"] <= 720
    assert "<path" in svg(charts.against_diagonal(df, "floor_s", "elapsed_s", "maxdop", title="T", caption="c",
                                                  x_title="f (s)", y_title="r (s)"))


def test_time_split_stacks_states_in_state_colours_and_order():
    df = pd.DataFrame({"panel": ["A"] * 4 + ["B"] * 4, "worker": ["shared", "shared", "other", "other"] * 2,
                       "state": ["suspended", "runnable"] * 4, "seconds": [1.0, 9.0, 9.0, 1.0] * 2})
    spec = charts.time_split(df, "worker", row="panel", title="T", caption="c", x_title="time (s)").to_dict()
    enc = spec["spec"]["encoding"]
    assert enc["color"]["scale"]["domain"] == ["runnable", "suspended"]  # the book's state order, not the data's
    assert enc["color"]["scale"]["range"] == [charts.STATE_COLORS["runnable"], charts.STATE_COLORS["suspended"]]
    assert enc["order"]["field"] == "state_order" and enc["y"]["sort"] == ["shared", "other"]
    assert spec["facet"]["row"]["sort"] == ["A", "B"] and spec["spec"]["width"] <= 720
    assert "<rect" in svg(charts.time_split(df, "worker", row="panel", title="T", caption="c", x_title="t (s)"))


def test_insert_heatmap_is_one_panel_per_run_side_by_side():
    """The heat map is a concatenation (the site stacks its panels at full size on a phone instead of scaling a
    facet's row down), every panel on one colour scale, each titled with its run."""
    rng = np.random.default_rng(1)
    frames = {name: pd.DataFrame({"time_ms": rng.uniform(0, 50, 300), "leaf_position": rng.uniform(0, 1, 300)})
              for name in ("identity", "guid", "hash-bucket")}
    spec = charts.insert_heatmap(frames, title="t", caption="c").to_dict()
    panels = spec["hconcat"]
    assert [p["title"]["text"] for p in panels] == list(frames)
    domains = {json.dumps(p["encoding"]["color"]["scale"]["domain"]) for p in panels}
    assert len(domains) == 1 and json.loads(domains.pop())[0] == 1
    assert all(p["width"] <= 170 for p in panels)
    svg(charts.insert_heatmap(frames, title="t", caption="c"))


def test_grant_timeline_without_failures_has_no_empty_layer():
    """With no query failing, the error-label layer still holds a (blank) row: an empty layer makes Vega warn
    "Infinite extent for field start_s" on every page load."""
    queries = pd.DataFrame({"query": [1, 2], "start_ms": [0.0, 0.0], "grant_wait_ms": [0.0, 500.0],
                            "elapsed_ms": [1000.0, 2000.0], "outcome": ["granted", "granted"]})
    grants = pd.DataFrame({"time_ms": [0.0, 1000.0], "granted_mb": [100.0, 50.0], "waiters": [1, 0]})
    spec = charts.grant_timeline(queries, grants, behaviour="cu14", target_mb=80.0, limit_mb=120.0,
                                 title="t", caption="c").to_dict()

    def layers(node):
        for key in ("vconcat", "layer"):
            for sub in node.get(key, []):
                yield from layers(sub)
        if "data" in node:
            yield node

    empty = [n["mark"] for n in layers(spec) if "values" in n["data"] and not n["data"]["values"]]
    assert not empty, f"layers with no rows: {empty}"
    labels = [n for n in layers(spec) if n.get("mark", {}).get("type") == "text" and n["mark"].get("fontWeight")]
    assert labels and all(row["label"] == "" for row in labels[0]["data"]["values"])


def test_all_lists_every_public_function_and_every_name_the_notebooks_use():
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tree = ast.parse((root / "models" / "book" / "charts.py").read_text(encoding="utf-8"))
    public = {node.name for node in tree.body
              if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")}
    used = {name for path in (root / "notebooks").glob("*.ipynb")
            for name in re.findall(r"\bcharts\.([A-Za-z_]\w*)", path.read_text(encoding="utf-8"))}
    assert not public - set(charts.__all__), f"public but not in __all__: {sorted(public - set(charts.__all__))}"
    assert not used - set(charts.__all__), f"notebooks use names not in __all__: {sorted(used - set(charts.__all__))}"
    assert all(hasattr(charts, name) for name in charts.__all__)
