"""Charts for the book: pure functions from a run's tables to Altair charts and pandas tables.

A chart here takes data and draws it: it never runs the model or a sweep (the
chapters' computations live in :mod:`models.book.analysis`, the grids in
:mod:`models.book.sweep`), so this module imports neither.

Every chart carries a title, axis titles with units and a one-sentence caption
(the title's subtitle, so it shows on the static site), and its spec contains
no random ids: parameter names are explicit and the data is inlined, so a
notebook's stored output is the same at every execution and a chart drawn
from a sweep stays interactive in the static site with no kernel.

Importing this module enables the book's offline Altair renderer
(:func:`models.book.render.enable`): it writes each chart's data into its spec
with floats rounded to a few significant digits, and shows a chart as
Vega-Lite JSON in JupyterLab or, on the static site, as a div with a
hash-of-the-spec id drawn by the site's own vendored vega bundle (no CDN).

- :func:`timeline` / :func:`timeline_compare`: which worker runs, waits, spins, when.
- :func:`wait_distribution`: the per-acquire latch wait, as an ECDF with p50, p99 and max.
- :func:`throughput_vs`: a metric against a parameter, with reference lines.
- :func:`dmv_table` / :func:`text_table`: a DMV-shaped DataFrame, or a table of words, as a readable table.
- :func:`grant_timeline`: queries waiting for memory grants, running and failing, over the memory granted.
- :func:`explorer`: a sweep with sliders and dropdowns bound to Altair parameters; a metric
  whose ``<metric>_ci95`` column (:data:`models.book.stored.CI_SUFFIX`) is in the frame gets
  its 95% confidence interval as a band.
- the chapter-specific charts below them (convoy onsets, nested transactions, hot pages,
  memory grants, what-ifs), each named after what it shows.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from typing import Any, Iterable, Mapping

import altair as alt
import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

import models
from models.book import render
from models.book.render import SLIDER_VALUES
from models.book.stored import CI_SUFFIX

# Every chart this module returns is shown by the offline renderer: deterministic output, no CDN.
render.enable()

THEME = "latch"
# Room Vega keeps between two tick labels of one axis (px): it drops labels until this much is free, so
# "4,000" and "5,000" never run together as "4,0005,000", at the drawn size or scaled down on a phone.
LABEL_SEPARATION_PX = 8


@alt.theme.register(THEME, enable=True)
def _theme() -> alt.theme.ThemeConfig:
    """The book's chart defaults: Altair's default view size, and tick labels kept apart on every axis."""
    return {"config": {"view": {"continuousWidth": 300, "continuousHeight": 300},
                       "axis": {"labelSeparation": LABEL_SEPARATION_PX}}}


__all__ = [
    # constants: the fixed colours and orders every chart shares, and the spec's slider-values key
    "STATES", "STATE_COLORS", "SERIES_COLORS", "PHASE_COLORS", "OUTCOME_COLORS", "ROWGROUP_COLORS",
    "MAX_RADIO", "SLIDER_VALUES", "DMVTable",
    # labels and tables
    "label", "wait_summary", "dmv_table", "text_table", "wrap_headers", "query_phases",
    # general charts
    "timeline", "timeline_compare", "wait_distribution", "throughput_vs", "points_on_curves",
    "explorer", "slider_values",
    # chapter charts
    "series_lines", "time_to_convoy", "points_vs_formula", "against_diagonal", "time_split",
    "insert_heatmap", "grant_timeline", "stacked_counts", "whatif_chart",
]

# Fixed order and colour-blind-safe colours (Okabe-Ito), so a state has one colour in every chart.
STATES = ("running", "runnable", "spinning", "backoff", "suspended")
STATE_COLORS = {
    "running": "#009E73",    # bluish green: doing work on a CPU
    "runnable": "#E69F00",   # orange: ready, waiting for its scheduler (signal wait)
    "spinning": "#D55E00",   # vermillion: burning CPU on the latch
    "backoff": "#CC79A7",    # reddish purple: paused between spin rounds
    "suspended": "#56B4E9",  # sky blue: off the CPU, queued on the latch
}
SERIES_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
# Dash patterns of throughput_vs's second series column, in order of first appearance: solid, then two that
# differ from the reference rules' long dash (6, 4).
DASHES = ((1, 0), (2, 2), (8, 3, 2, 3))

_METRIC_LABELS = {
    "elapsed_ms": "elapsed time (ms)",
    "throughput_per_s": "throughput (per second)",
    "acquires": "latch acquires (count)",
    "waiting_requests_count": "waiting requests (count)",
    "waiting_tasks_count": "waiting tasks (count)",
    "wait_time_ms": "total latch wait (ms)",
    "max_wait_time_ms": "max latch wait (ms)",
    "p50_wait_ms": "median latch wait (ms)",
    "p95_wait_ms": "p95 latch wait (ms)",
    "p99_wait_ms": "p99 latch wait (ms)",
    "mean_wait_ms": "mean latch wait (ms)",
    "signal_wait_time_ms": "signal wait (ms)",
    "collisions": "spin collisions (count)",
    "spins": "spins (count)",
    "backoffs": "back-offs (count)",
    "policy": "latch policy",
    "schedulers": "schedulers (count)",
    "workers": "workers (count)",
    "maxdop": "MAXDOP (workers)",
    "busy_scheduler": "co-tenant on CPU (-1: none)",  # a scheduler index; a scheduler per CPU
    "row_bytes": "row size (bytes)",
}
MAX_RADIO = 4  # a slider column with at most this many values becomes radio buttons
LEGEND_ROW_CHARS = 48  # a legend under a chart: at most this many characters of labels per row (a phone's column)
RULE_LABEL_PLACES = ("left", "right", "left-below", "right-below")  # where a reference rule's label goes
READOUT_LINE_PX = 17  # an explorer's 'Showing:' readout: one line of this height per input (13 px text)
READOUT_LINE_CHARS = 22  # the longest line of an explorer's readout (characters): it fits a phone's panel
# Abbreviated words in column names, spelled out for labels ('hold_dist' -> 'hold distribution').
_SPELLED = {"dist": "distribution", "cpu": "CPU", "os": "OS", "lpim": "LPIM", "adr": "ADR", "mb": "MB", "dop": "DOP"}
_SUFFIX_UNITS = (("_per_s", "per second"), ("_ms", "ms"), ("_us", "µs"), ("_count", "count"))


@functools.lru_cache(maxsize=1)
def _catalogue_units() -> dict[str, tuple[str, str]]:
    """Parameter name -> (kind, unit) over every scenario's catalogue."""
    found: dict[str, tuple[str, str]] = {}
    for scenario in models.scenarios().values():
        for p in scenario.params:
            found.setdefault(p.name, (p.kind, p.unit))
    return found


def label(column: str, labels: Mapping[str, str] | None = None) -> str:
    """A readable axis or input label with its unit, e.g. 'hold_ms' -> 'hold (ms)'."""
    if labels and column in labels:
        return labels[column]
    if column in _METRIC_LABELS:
        return _METRIC_LABELS[column]
    words = column
    unit = ""
    for suffix, suffix_unit in _SUFFIX_UNITS:
        if column.endswith(suffix):
            words, unit = column[: -len(suffix)], suffix_unit
            break
    kind, cat_unit = _catalogue_units().get(column, ("", ""))
    if cat_unit:
        unit = "µs" if cat_unit == "us" else cat_unit
    elif not unit and kind == "int":
        unit = "count"
    words = " ".join(_SPELLED.get(word, word) for word in words.split("_")).replace("co tenant", "co-tenant")
    if unit and words.split()[-1].lower() == unit.lower():  # 'rows (rows)', 'max server memory mb (MB)'
        if unit == "rows" or " " not in words:
            unit = "count"
        else:
            words = words.rsplit(" ", 1)[0]
    return f"{words} ({unit})" if unit else words


def _palette(n: int) -> list[str]:
    """n series colours from the fixed colour-blind-safe list (repeating past eight)."""
    return [SERIES_COLORS[k % len(SERIES_COLORS)] for k in range(n)]


def _legend_columns(names: Iterable[Any]) -> int:
    """Entries per row of a legend under a chart: one to three, as many as fit LEGEND_ROW_CHARS of labels."""
    longest = max((len(str(n)) for n in names), default=1)
    return max(1, min(3, LEGEND_ROW_CHARS // max(longest, 1)))


def _title(title: str, caption: str) -> alt.TitleParams:
    """The chart title with the caption as its subtitle (shown on the static site)."""
    return alt.TitleParams(text=title, subtitle=caption, anchor="start", subtitleFontStyle="italic")


def _records(df: pd.DataFrame) -> pd.DataFrame:
    """A chart's data: the DataFrame itself, which the book's data transformer (models.book.render) writes into
    the spec as plain JSON rows when the spec is made, so building a chart never copies its rows."""
    return df.reset_index(drop=True)


def _empty(title: str, caption: str, message: str) -> alt.Chart:
    """A chart that says there is nothing to draw, with the usual title."""
    return (alt.Chart(alt.Data(values=[{"message": message}]))
            .mark_text(align="left", fontSize=13, color="#555")
            .encode(text=alt.Text("message:N"))
            .properties(title=_title(title, caption), width=400, height=40))


def _slug(text: str) -> str:
    """A short identifier from free text (for ids and parameter names)."""
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()
    return slug[:40] or "table"


# ---------------------------------------------------------------- timeline

def _trace_frame(trace: Any) -> pd.DataFrame | None:
    """The trace DataFrame from a Result or a DataFrame (None if there is none)."""
    if trace is not None and not isinstance(trace, pd.DataFrame):
        trace = getattr(trace, "trace", None)
    if trace is None or len(trace) == 0:
        return None
    return trace


def _timeline_rows(trace: pd.DataFrame, until_ms: float | None, max_workers: int | None) -> pd.DataFrame:
    """Trace rows with a 'row' label 'W3 @ S1', plain-string states, a time window and a row limit."""
    df = trace[["worker", "scheduler", "state", "start_ms", "end_ms"]].copy()
    df["state"] = df["state"].astype(str)
    if max_workers is not None:
        df = df[df["worker"].isin(sorted(df["worker"].unique())[:max_workers])]
    if until_ms is not None:
        df = df[df["start_ms"] < until_ms]
        df["end_ms"] = df["end_ms"].clip(upper=until_ms)
    df["row"] = "W" + df["worker"].astype(str) + " @ S" + df["scheduler"].astype(str)
    df["duration_ms"] = df["end_ms"] - df["start_ms"]
    df[["start_ms", "end_ms", "duration_ms"]] = df[["start_ms", "end_ms", "duration_ms"]].round(4)  # 0.1 µs
    return df.sort_values(["worker", "start_ms"], kind="stable").reset_index(drop=True)


def _row_order(df: pd.DataFrame) -> list[str]:
    """Row labels in worker order (a worker's first scheduler first)."""
    return list(dict.fromkeys(df.sort_values(["worker", "start_ms"], kind="stable")["row"]))


def _state_color() -> alt.Color:
    """The worker-state colour channel with the fixed state order and palette."""
    return alt.Color("state:N", title="worker state",
                     scale=alt.Scale(domain=list(STATES), range=[STATE_COLORS[s] for s in STATES]),
                     sort=list(STATES), legend=alt.Legend(orient="top"))


def _gantt(df: pd.DataFrame, order: list[str], *, x_title: str) -> alt.Chart:
    """The bare Gantt layer: one bar per state interval, rows in ``order``.

    The order travels in the data (a ``row_order`` column) rather than in the spec, so two runs with
    different workers give the same spec and a live panel only swaps the data.
    """
    position = {row: k for k, row in enumerate(order)}
    data = _records(df.assign(row_order=df["row"].map(position)))
    return alt.Chart(data).mark_bar(height={"band": 0.8}).encode(
        x=alt.X("start_ms:Q", title=x_title),
        x2=alt.X2("end_ms"),
        y=alt.Y("row:N", title="worker @ scheduler", sort=alt.EncodingSortField(field="row_order", op="min")),
        color=_state_color(),
        tooltip=[alt.Tooltip("row:N", title="worker"), alt.Tooltip("state:N"),
                 alt.Tooltip("start_ms:Q", title="from (ms)", format=",.3f"),
                 alt.Tooltip("duration_ms:Q", title="for (ms)", format=",.3f")],
    )


def timeline(trace: Any, *, title: str = "Worker states over time", caption: str | None = None,
             by_scheduler: bool = False, until_ms: float | None = None,
             max_workers: int | None = 40, width: int = 640, row_height: int = 16) -> alt.Chart | alt.FacetChart:
    """A Gantt chart of worker states from Result.trace (or the Result), to show who runs and who waits.

    ``until_ms`` cuts the time window, ``max_workers`` keeps the lowest-numbered workers (a convoy run
    has one worker per request), ``by_scheduler`` gives one row block per scheduler.
    """
    caption = caption or ("Each bar is one worker's state over time: green runs, orange waits for its "
                          "scheduler, vermillion spins, blue is suspended on the latch.")
    df = _trace_frame(trace)
    if df is not None:
        df = _timeline_rows(df, until_ms, max_workers)
    if df is None or df.empty:
        return _empty(title, caption, "No trace recorded: run the model with trace_events > 0.")
    x_title = "simulated time (ms)"
    if by_scheduler:
        base = _gantt(df, _row_order(df), x_title=x_title).properties(
            width=width, height=alt.Step(row_height))
        return (base.facet(row=alt.Row("scheduler:O", title="scheduler",
                                       header=alt.Header(labelExpr="'S' + datum.value")))
                .resolve_scale(y="independent").properties(title=_title(title, caption)))
    return _gantt(df, _row_order(df), x_title=x_title).properties(
        title=_title(title, caption), width=width, height=alt.Step(row_height))


def timeline_compare(traces: Mapping[str, Any], *, title: str = "Worker states, side by side",
                     caption: str | None = None, until_ms: float | None = None,
                     max_workers: int | None = 40, width: int = 640, row_height: int = 14
                     ) -> alt.Chart | alt.FacetChart:
    """Timelines of several runs stacked on one shared time axis, e.g. {'fair': res1, 'unfair': res2}."""
    caption = caption or ("The same workload under each setting, on one time axis: compare how much "
                          "of each row is green (running) against blue (suspended) or vermillion (spinning).")
    frames = []
    for name, trace in traces.items():
        df = _trace_frame(trace)
        if df is not None:
            frames.append(_timeline_rows(df, until_ms, max_workers).assign(run=str(name)))
    if not frames:
        return _empty(title, caption, "No trace recorded: run the models with trace_events > 0.")
    df = pd.concat(frames, ignore_index=True)
    order = list(dict.fromkeys(r for f in frames for r in _row_order(f)))
    base = _gantt(df, order, x_title="simulated time (ms)").properties(
        width=width, height=alt.Step(row_height))
    return (base.facet(row=alt.Row("run:N", title=None, sort=[str(k) for k in traces],
                                   header=alt.Header(labelFontWeight="bold", labelAngle=0,
                                                     labelAlign="left", labelOrient="top")))
            .resolve_scale(y="independent", x="shared")
            .properties(title=_title(title, caption)))


# ---------------------------------------------------------------- waits

def _waits(item: Any) -> np.ndarray:
    """The per-acquire waits in ms from a Result or an array-like."""
    values = getattr(item, "acquire_wait_ms", item)
    return np.asarray(values, dtype=float).ravel()


def wait_summary(results: Mapping[str, Any]) -> pd.DataFrame:
    """p50, p99 and max per-acquire wait (ms) for each labelled run or array."""
    rows = []
    for name, item in results.items():
        w = _waits(item)
        if w.size:
            rows.append({"run": str(name), "acquires": int(w.size),
                         "p50_ms": float(np.percentile(w, 50)), "p99_ms": float(np.percentile(w, 99)),
                         "max_ms": float(w.max())})
    return pd.DataFrame(rows, columns=["run", "acquires", "p50_ms", "p99_ms", "max_ms"])


def _ecdf(name: str, w: np.ndarray, max_points: int) -> pd.DataFrame:
    """An ECDF thinned to at most max_points steps (always keeping the first and last)."""
    w = np.sort(w)
    idx = np.unique(np.round(np.linspace(0, w.size - 1, min(w.size, max_points))).astype(int))
    return pd.DataFrame({"run": name, "wait_ms": w[idx], "percent": 100.0 * (idx + 1) / w.size})


def _symlog_ticks(top: float, constant: float) -> list[float]:
    """Axis ticks 0, then 1-2-5 steps from the symlog constant up to top."""
    low = 10.0 ** math.floor(math.log10(constant))
    decades = max(0, math.ceil(math.log10(max(top, low) / low)))
    ticks = [0.0] + [round(m * low * 10.0 ** k, 12) for k in range(decades + 1) for m in (1, 2, 5)]
    return [t for t in ticks if t <= top * 1.0001]


_TICKS_TOP_MS = 100_000.0  # the longest wait any axis of per-acquire waits is given ticks for


def wait_distribution(results: Mapping[str, Any], *, title: str = "Latch wait per acquire",
                      caption: str | None = None, max_points: int = 400, width: int = 560,
                      height: int = 280, symlog_constant_ms: float = 0.01) -> alt.Chart | alt.LayerChart:
    """ECDF of per-acquire latch waits (Result.acquire_wait_ms) per run, with p50, p99 and max marked."""
    caption = caption or ("How long an acquire waited for the latch: the curve's height at a wait is the "
                          "share of acquires that waited at most that long; markers show p50, p99 and max.")
    frames = [_ecdf(str(k), w, max_points) for k, w in ((k, _waits(v)) for k, v in results.items()) if w.size]
    if not frames:
        return _empty(title, caption, "No acquires recorded.")
    curve = pd.concat(frames, ignore_index=True)
    stats = wait_summary(results)
    marks = stats.melt(id_vars=["run"], value_vars=["p50_ms", "p99_ms", "max_ms"],
                       var_name="statistic", value_name="wait_ms")
    marks["statistic"] = marks["statistic"].str.replace("_ms", "", regex=False)
    marks["percent"] = marks["statistic"].map({"p50": 50.0, "p99": 99.0, "max": 100.0})
    names = [str(k) for k in results]
    color = alt.Color("run:N", title="run", sort=names,
                      scale=alt.Scale(domain=names, range=_palette(len(names))))
    # Candidate ticks 0 and 1-2-5 steps up to 100 s: Vega draws those inside the data's domain and drops
    # labels that would overlap, so the spec does not depend on the data (a live panel only swaps data).
    x = alt.X("wait_ms:Q", title="wait from request to running with the latch (ms, symlog scale)",
              scale=alt.Scale(type="symlog", constant=symlog_constant_ms),
              axis=alt.Axis(values=_symlog_ticks(_TICKS_TOP_MS, symlog_constant_ms),
                            format="~g", labelOverlap="greedy"))
    y = alt.Y("percent:Q", title="acquires waiting at most this long (%)", scale=alt.Scale(domain=[0, 100]))
    line = alt.Chart(_records(curve)).mark_line(interpolate="step-after").encode(x=x, y=y, color=color)
    points = alt.Chart(_records(marks)).mark_point(size=70, filled=True).encode(
        x=x, y=y, color=color,
        shape=alt.Shape("statistic:N", title="marker", sort=["p50", "p99", "max"],
                        scale=alt.Scale(domain=["p50", "p99", "max"], range=["circle", "diamond", "triangle-up"])),
        tooltip=[alt.Tooltip("run:N"), alt.Tooltip("statistic:N"),
                 alt.Tooltip("wait_ms:Q", title="wait (ms)", format=",.3f")])
    return alt.layer(line, points).properties(title=_title(title, caption), width=width, height=height)


# ---------------------------------------------------------------- metric vs parameter

def _reference_layers(reference: Any, x: str, y: str, y_scale: alt.Scale, at: str = "left") -> list[alt.Chart]:
    """Dashed reference curves (DataFrame with x, y[, label]) or horizontal rules (dict label -> value), their
    labels at the plot's ``at`` end."""
    if reference is None:
        return []
    if isinstance(reference, pd.DataFrame):
        ref = reference.copy()
        if "label" not in ref:
            ref["label"] = "reference"
        return [alt.Chart(_records(ref[[x, y, "label"]])).mark_line(strokeDash=[6, 4], color="#333").encode(
            x=alt.X(f"{x}:Q"), y=alt.Y(f"{y}:Q", scale=y_scale), detail=alt.Detail("label:N"),
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip(f"{x}:Q"), alt.Tooltip(f"{y}:Q", format=",.4g")])]
    rules = pd.DataFrame({"label": [str(k) for k in reference], "value": [float(v) for v in reference.values()]})
    rule = alt.Chart(_records(rules)).mark_rule(strokeDash=[6, 4], color="#333").encode(
        y=alt.Y("value:Q", scale=y_scale), tooltip=[alt.Tooltip("label:N"), alt.Tooltip("value:Q", format=",.4g")])
    return [rule, *_rule_labels(rules, "value", y_scale, at)]


def _rule_labels(rules: pd.DataFrame, y: str, y_scale: alt.Scale | Any, at: str) -> list[alt.Chart]:
    """A horizontal rule's label just above it (or below it: ``at`` ends in '-below'), at the plot's left or right
    end, over a white halo: a data line that crosses the label passes under it and the label stays whole."""
    if at not in RULE_LABEL_PLACES:
        raise ValueError(f"rule labels go {RULE_LABEL_PLACES}, not {at!r}")
    side, below = at.split("-")[0], at.endswith("-below")
    where = {"align": side, "dx": 4 if side == "left" else -4, "dy": 14 if below else -7}
    x = alt.value(0) if side == "left" else alt.value("width")
    base = alt.Chart(_records(rules)).encode(y=alt.Y(f"{y}:Q", scale=y_scale), x=x, text=alt.Text("label:N"))
    halo = base.mark_text(**where, stroke="white", strokeWidth=4, strokeJoin="round", color="white")
    return [halo, base.mark_text(**where, color="#333")]


def throughput_vs(df: pd.DataFrame, x: str, y: str = "throughput_per_s", color: str | None = None, *,
                  reference: pd.DataFrame | Mapping[str, float] | None = None, title: str | None = None,
                  caption: str | None = None, labels: Mapping[str, str] | None = None,
                  log_x: bool = False, log_y: bool = False, width: int = 520, height: int = 300,
                  reference_at: str = "left", dash: str | None = None) -> alt.LayerChart:
    """A line chart of a metric against a parameter (optionally one line per `color`, and per `dash`, a second
    column drawn as the line's dash pattern, e.g. the latch policy), with reference lines (their labels at the
    plot's ``reference_at`` end: put them where the data is not)."""
    missing = [c for c in (x, y, color, dash) if c is not None and c not in df.columns]
    if missing:
        raise ValueError(f"throughput_vs: columns {missing} are not in the DataFrame ({list(df.columns)})")
    title = title or f"{label(y, labels).split(' (')[0].capitalize()} against {label(x, labels).split(' (')[0]}"
    caption = caption or f"How {label(y, labels).split(' (')[0]} changes as {label(x, labels).split(' (')[0]} rises."
    cols = [c for c in dict.fromkeys([x, y, color, dash]) if c is not None]
    x_scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    y_scale = alt.Scale(type="log") if log_y else alt.Scale()
    enc: dict[str, Any] = {
        "x": alt.X(f"{x}:Q", title=label(x, labels), scale=x_scale),
        "y": alt.Y(f"{y}:Q", title=label(y, labels), scale=y_scale),
        "tooltip": [alt.Tooltip(f"{c}:{'Q' if pd.api.types.is_numeric_dtype(df[c]) else 'N'}", title=label(c, labels))
                    for c in cols],
    }
    if color is not None:
        enc["color"] = alt.Color(f"{color}:N", title=label(color, labels),
                                 scale=alt.Scale(range=list(SERIES_COLORS)),
                                 legend=alt.Legend(orient="bottom", direction="horizontal",
                                                   columns=_legend_columns(df[color].astype(str).unique())))
    if dash is not None:
        kinds = list(dict.fromkeys(df[dash].astype(str)))
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=label(dash, labels), sort=kinds,
                                           scale=alt.Scale(domain=kinds, range=[list(DASHES[i % len(DASHES)])
                                                                               for i in range(len(kinds))]),
                                           legend=alt.Legend(orient="bottom", direction="horizontal",
                                                             columns=_legend_columns(kinds), symbolType="stroke",
                                                             symbolSize=300, symbolStrokeWidth=2, symbolOpacity=1,
                                                             symbolStrokeColor="#333", symbolFillColor="transparent"))
        if color is None:
            enc["detail"] = alt.Detail(f"{dash}:N")
    lines = alt.Chart(_records(df[cols].sort_values(x, kind="stable"))).mark_line(point=True).encode(**enc)
    return alt.layer(lines, *_reference_layers(reference, x, y, y_scale, reference_at)).properties(
        title=_title(title, caption), width=width, height=height)


def points_on_curves(points: pd.DataFrame, curves: pd.DataFrame, x: str, y: str, color: str, ci: str, *,
                     title: str, caption: str, labels: Mapping[str, str] | None = None,
                     width: int = 480, height: int = 280) -> alt.LayerChart:
    """Simulated points with 95% interval bars (half-width column ``ci``) over the exact curves they should sit on.

    ``points`` and ``curves`` share the columns ``x``, ``y`` and ``color``
    (one colour per series, the same in both).
    """
    missing = [c for c in (x, y, color, ci) if c not in points.columns] + \
              [c for c in (x, y, color) if c not in curves.columns]
    if missing:
        raise ValueError(f"points_on_curves: columns {missing} are missing")
    series = list(dict.fromkeys([*curves[color].astype(str), *points[color].astype(str)]))
    colour = alt.Color(f"{color}:N", title=label(color, labels),
                       scale=alt.Scale(domain=series, range=_palette(len(series))))
    xq = alt.X(f"{x}:Q", title=label(x, labels))
    pts = points[[x, y, color]].assign(low=points[y] - points[ci], high=points[y] + points[ci])
    line = alt.Chart(_records(curves[[x, y, color]])).mark_line().encode(
        x=xq, y=alt.Y(f"{y}:Q", title=label(y, labels)), color=colour)
    bars = alt.Chart(_records(pts)).mark_rule().encode(x=xq, y=alt.Y("low:Q"), y2=alt.Y2("high"), color=colour)
    dots = alt.Chart(_records(pts)).mark_point(filled=True, size=50).encode(
        x=xq, y=f"{y}:Q", color=colour,
        tooltip=[alt.Tooltip(f"{x}:Q", title=label(x, labels)),
                 alt.Tooltip(f"{y}:Q", title=label(y, labels), format=",.3f"),
                 alt.Tooltip("low:Q", title="95% low", format=",.3f"),
                 alt.Tooltip("high:Q", title="95% high", format=",.3f")])
    return alt.layer(line, bars, dots).properties(title=_title(title, caption), width=width, height=height)


# ---------------------------------------------------------------- DMV tables

class DMVTable(Styler):
    """A pandas Styler whose plain-text form is the formatted table (not an object address)."""

    def __repr__(self) -> str:
        return self.to_string(delimiter="  ")


def _column_format(name: str, series: pd.Series) -> str | None:
    """The display format of one DMV column: ms rounded, counts with thousands separators."""
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return None
    if name.endswith("_ms") or name.endswith("_per_s"):
        return "{:,.3f}" if name.endswith("_ms") else "{:,.1f}"
    if pd.api.types.is_integer_dtype(series) or (series.dropna() == series.dropna().round()).all():
        return "{:,.0f}"
    return "{:,.3f}"


def dmv_table(df: pd.DataFrame, title: str, caption: str | None = None) -> DMVTable:
    """A DMV-shaped DataFrame as a readable, deterministic HTML table (thousands separators, ms rounded)."""
    formats = {c: f for c in df.columns if (f := _column_format(c, df[c])) is not None}
    styler = DMVTable(df.reset_index(drop=True), uuid=_slug(title), cell_ids=False)
    styler = styler.format(formats, na_rep="").hide(axis="index")
    text = f"{title}: {caption}" if caption else title
    styler = styler.set_caption(text).set_table_styles([
        {"selector": "caption", "props": "caption-side: top; text-align: left; font-weight: bold;"},
        {"selector": "th", "props": "text-align: right; padding: 2px 8px;"},
        {"selector": "td", "props": "text-align: right; padding: 2px 8px; font-variant-numeric: tabular-nums;"},
    ])
    return styler


def _plain_number(value: Any) -> Any:
    """A float as the caller rounded it, with thousands separators and no padding zeros (9.7, not 9.700000)."""
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else f"{value:,.6f}".rstrip("0").rstrip(".")
    return value


def text_table(df: pd.DataFrame, title: str, caption: str | None = None, *, break_words: bool = False) -> DMVTable:
    """A table of words (a comparison, a checklist) as deterministic HTML: every cell whole, left-aligned, wrapping.

    A plain DataFrame's HTML cuts cells at ``display.max_colwidth`` (50 characters) with '...';
    a Styler never does, and a fixed uuid keeps the stored output the same at every execution.
    ``break_words`` lets a long name (APPEND_ONLY_STORAGE_INSERT_POINT) break inside, so the table fits a phone.
    """
    styler = DMVTable(df.reset_index(drop=True), uuid=_slug(title), cell_ids=False).hide(axis="index")
    styler = styler.format(_breakable if break_words else _plain_number)
    if break_words:
        styler = wrap_headers(styler)
    text = f"{title}: {caption}" if caption else title
    pad = "2px 6px" if break_words else "2px 8px"  # a table made to fit a phone keeps its gutters narrow too
    return styler.set_caption(text).set_table_styles([
        {"selector": "caption", "props": "caption-side: top; text-align: left; font-weight: bold;"},
        {"selector": "th", "props": f"text-align: left; padding: {pad}; vertical-align: bottom;"},
        {"selector": "td", "props": f"text-align: left; padding: {pad}; vertical-align: top; white-space: normal;"},
    ])


def _breakable(value: Any) -> Any:
    """A cell that may wrap after each '_', or a '.' before a letter (a long DMV or parameter name), as HTML."""
    value = _plain_number(value)
    if not isinstance(value, str):
        return value
    return re.sub(r"\.(?=[A-Za-z])", ".<wbr>", html.escape(value).replace("_", "_<wbr>"))


class _WrappedHeaders(DMVTable):
    """A DMVTable whose HTML headers carry <wbr> break points; its plain text keeps the names whole."""

    def __repr__(self) -> str:
        return super().__repr__().replace("<wbr>", "").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")


def wrap_headers(table: DMVTable) -> DMVTable:
    """``table`` (from :func:`dmv_table`) with column headers that may wrap after an underscore.

    A DMV's snake_case column names have no break points, so a table of seven of them is wider than
    the ~720 px text column; a <wbr> after each '_' lets the browser wrap a header only when the
    column is too narrow for it, and copying a header still gives the plain name.
    """
    table.__class__ = _WrappedHeaders
    return table.format_index(lambda name: str(name).replace("_", "_<wbr>"), axis=1)


# ---------------------------------------------------------------- static explorer

def _grid_values(series: pd.Series) -> list[Any]:
    """Sorted unique values as plain Python numbers or strings."""
    values = sorted(series.dropna().unique().tolist())
    return [v.item() if hasattr(v, "item") else v for v in values]


def _is_uniform(values: list[float]) -> bool:
    """True when the numeric grid is evenly spaced (so a plain range slider hits every value)."""
    if len(values) < 2:
        return False
    steps = np.diff(np.asarray(values, dtype=float))
    return bool(np.allclose(steps, steps[0], rtol=1e-9, atol=0.0) and steps[0] > 0)


def _fmt(v: Any) -> str:
    """A grid value as short text."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _unit_of(text: str) -> str:
    """The unit in a label 'name (unit)', or ''."""
    m = re.search(r"\(([^)]*)\)\s*$", text)
    return m.group(1) if m and m.group(1) != "count" else ""


def _slider(col: str, values: list[Any], start: Any, labels: Mapping[str, str] | None
            ) -> tuple[alt.Parameter, str, str]:
    """An Altair parameter bound to a range input, its filter expression and its readout expression."""
    name = f"s_{_slug(col)}"
    text = label(col, labels)
    unit = _unit_of(text)
    if _is_uniform(values):
        step = values[1] - values[0]
        bind = alt.binding_range(min=values[0], max=values[-1], step=step, name=f"{text} ")
        param = alt.param(name=name, value=start, bind=bind)
        return param, f"abs(datum[{json.dumps(col)}] - {name}) < {step / 2!r}", _with_unit(name, unit)
    # An uneven grid: the input moves over positions; the site's embed script (models.book.render) shows the
    # value at each position beside it (the chart's usermeta carries them, see slider_values).
    bind = alt.binding_range(min=0, max=len(values) - 1, step=1, name=f"{text} ")
    param = alt.param(name=name, value=values.index(start), bind=bind)
    array = json.dumps(values)
    readout = f"{array}[{name}]"
    return param, f"datum[{json.dumps(col)}] == {readout}", _with_unit(readout, unit)


def slider_values(col: str, values: list[Any], labels: Mapping[str, str] | None) -> list[str] | None:
    """What an uneven grid's slider shows at each position ('98 µs'), or None for an even grid."""
    if _is_uniform(values):
        return None
    unit = _unit_of(label(col, labels))
    return [_fmt(v) + (f" {unit}" if unit else "") for v in values]


def _radio(col: str, values: list[Any], start: Any, labels: Mapping[str, str] | None
           ) -> tuple[alt.Parameter, str, str]:
    """Radio buttons for a slider column with only a few values: each value is shown, none is a position."""
    name = f"r_{_slug(col)}"
    unit = _unit_of(label(col, labels))
    bind = alt.binding_radio(options=values, labels=[_fmt(v) + (f" {unit}" if unit else "") for v in values],
                             name=f"{label(col, labels)} ")
    param = alt.param(name=name, value=start, bind=bind)
    return param, f"datum[{json.dumps(col)}] == {name}", _with_unit(name, unit)


def _dropdown(col: str, values: list[Any], start: Any, labels: Mapping[str, str] | None
              ) -> tuple[alt.Parameter, str, str]:
    """An Altair parameter bound to a select input, its filter expression and its readout expression."""
    name = f"d_{_slug(col)}"
    bind = alt.binding_select(options=values, labels=[_fmt(v) for v in values], name=f"{label(col, labels)} ")
    param = alt.param(name=name, value=start, bind=bind)
    return param, f"datum[{json.dumps(col)}] == {name}", _with_unit(name, _unit_of(label(col, labels)))


def _with_unit(expr: str, unit: str) -> str:
    """A readout expression followed by its unit, if any."""
    return expr + (f" + ' {unit}'" if unit else "")


def _start(col: str, values: list[Any], defaults: Mapping[str, Any] | None) -> Any:
    """The initial input value: the given default, else the catalogue default, else the middle value."""
    wanted = (defaults or {}).get(col)
    if wanted is None:
        for scenario in models.scenarios().values():
            for p in scenario.params:
                if p.name == col and p.default in values:
                    wanted = p.default
                    break
            if wanted is not None:
                break
    if wanted is not None and wanted not in values:
        raise ValueError(f"explorer: default {col}={wanted!r} is not a grid value; use one of {values}")
    return wanted if wanted is not None else values[(len(values) - 1) // 2]


def _check_unique(df: pd.DataFrame, keys: list[str]) -> None:
    """Fail when the inputs leave more than one row per point (a grid dimension without an input)."""
    dup = df.duplicated(subset=keys, keep=False)
    if dup.any():
        raise ValueError(
            "explorer: several rows share the same x, colour, slider and dropdown values "
            f"(e.g. {df.loc[dup, keys].iloc[0].to_dict()}); add the remaining grid parameter as a "
            "slider or dropdown, or filter the DataFrame first")


def explorer(df: pd.DataFrame, x: str, y: str, sliders: Iterable[str] = (), dropdowns: Iterable[str] = (),
             color: str | None = None, *, y2: str | None = None, title: str | None = None,
             caption: str | None = None, labels: Mapping[str, str] | None = None,
             defaults: Mapping[str, Any] | None = None, log_x: bool = False, log_y: bool = False,
             fixed_y: bool = True, width: int = 440, height: int = 280,
             colors: Mapping[str, str] | None = None,
             x_rules: Mapping[str, float] | None = None, legend_below: bool = False) -> alt.VConcatChart:
    """A static explorer over a precomputed sweep: sliders and dropdowns are Altair parameters bound to inputs.

    ``colors`` fixes each ``color`` value's colour (and the legend's order), as the book's other charts draw it.
    ``x_rules`` (label -> x) draws dashed vertical marks that stay put as the inputs move (a rule of thumb's
    steps, say), each labelled at the plot's top.  ``legend_below`` puts the colour legend under the plot (long
    labels beside it would squeeze the plot on a phone).
    """
    sliders, dropdowns = list(sliders), list(dropdowns)
    inputs = sliders + dropdowns
    keys = [c for c in dict.fromkeys([x, color, *inputs]) if c is not None]
    metrics = [m for m in (y, y2) if m is not None]
    missing = [c for c in keys + metrics if c not in df.columns]
    if missing:
        raise ValueError(f"explorer: columns {missing} are not in the DataFrame ({list(df.columns)})")
    bands = [m + CI_SUFFIX for m in metrics if m + CI_SUFFIX in df.columns]
    data = df[keys + [m for m in metrics if m not in keys] + bands].reset_index(drop=True)
    _check_unique(data, keys)
    title = title or f"Explore {label(y, labels).split(' (')[0]} against {label(x, labels).split(' (')[0]}"
    caption = caption or "Move the sliders and pick from the lists below the chart: it redraws with no kernel."
    params, filters, readouts, shown_values = [], [], [], {}
    for col in inputs:
        values = _grid_values(data[col])
        make = _slider if col in sliders and len(values) > MAX_RADIO else _radio if col in sliders else _dropdown
        if make is _slider and (texts := slider_values(col, values, labels)) is not None:
            shown_values[f"s_{_slug(col)}"] = texts
        param, expr, readout = make(col, values, _start(col, values, defaults), labels)
        params.append(param)
        filters.append(expr)
        unit = _unit_of(label(col, labels))
        longest = max(len(_fmt(v)) for v in values) + (len(unit) + 1 if unit else 0)
        readouts.append((label(col, labels).split(' (')[0], readout, longest))
    keep = " && ".join(f"({f})" for f in filters) or "true"
    data = _with_bands(data, metrics, log_y)  # one frame for every panel: the site sends it once (render.compact)
    panels = [_explorer_panel(data, x, m, color, keep, labels, log_x, log_y, fixed_y, width, height, colors,
                              legend_below) for m in metrics]
    if x_rules:
        panels = [alt.layer(p, *_x_rule_layers(x_rules, x, log_x)) for p in panels]
    panels[0] = panels[0].add_params(*params)
    lines = _readout_lines(readouts)
    readout = (alt.Chart(alt.Data(values=[{}])).transform_calculate(showing=f"[{', '.join(lines)}]")
               .mark_text(align="left", baseline="top", fontSize=render.TEXT_PX, lineHeight=READOUT_LINE_PX, color="#333")
               .encode(text=alt.Text("showing:N"), x=alt.value(0), y=alt.value(0))
               .properties(width=width, height=READOUT_LINE_PX * len(lines), view=alt.ViewBackground(strokeWidth=0)))
    body = alt.hconcat(*panels) if len(panels) > 1 else panels[0]
    chart = alt.vconcat(readout, body).properties(title=_title(title, caption))
    return chart.properties(usermeta={SLIDER_VALUES: shown_values}) if shown_values else chart


def _x_rule_layers(rules: Mapping[str, float], x: str, log_x: bool) -> list[alt.Chart]:
    """Dashed vertical marks at fixed x values, each labelled just inside the plot's top over a white halo."""
    marks = pd.DataFrame({"label": [str(k) for k in rules], x: [float(v) for v in rules.values()]})
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    base = alt.Chart(_records(marks)).encode(x=alt.X(f"{x}:Q", scale=scale))
    rule = base.mark_rule(strokeDash=[4, 3], color="#555").encode(tooltip=[alt.Tooltip("label:N")])
    where = {"align": "center", "baseline": "top", "dy": 2, "fontSize": render.TEXT_PX}
    text = base.encode(y=alt.value(0), text=alt.Text("label:N"))
    halo = text.mark_text(**where, stroke="white", strokeWidth=3, strokeJoin="round", color="white")
    return [rule, halo, text.mark_text(**where, color="#333")]


def _readout_lines(readouts: list[tuple[str, str, int]]) -> list[str]:
    """The explorer's 'Showing:' readout as Vega expressions, one line each (a text mark draws an array as lines).

    ``readouts`` holds (input name, value expression, longest value text) per input: 'Showing:', then
    'name = value' per input; a line that could run past READOUT_LINE_CHARS puts the value on a line of its own
    and breaks a long name at its spaces and underscores, so no line is wider than a phone's panel (Vega would
    cut it with an ellipsis).
    """
    if not readouts:
        return ["'Showing: all rows'"]
    lines = ["'Showing:'"]
    for name, value, longest in readouts:
        if len(name) + 3 + longest <= READOUT_LINE_CHARS:
            lines.append(f"{json.dumps(name + ' = ')} + {value}")
            continue
        words, line = re.findall(r"[^ _]+(?:_| |$)", name + " ="), ""
        for word in words:
            if line and len(line + word) > READOUT_LINE_CHARS:
                lines.append(json.dumps(line.rstrip()))
                line = ""
            line += word
        lines += [json.dumps(line.rstrip()), value]
    return lines


def _with_bands(data: pd.DataFrame, metrics: list[str], log_y: bool) -> pd.DataFrame:
    """The explorer's rows with each metric's 95% band as ``<metric>_low`` and ``<metric>_high`` columns, where
    the frame has its ``<metric>_ci95``."""
    for y in metrics:
        if y + CI_SUFFIX not in data.columns:
            continue
        data = data.assign(**{f"{y}_low": data[y] - data[y + CI_SUFFIX], f"{y}_high": data[y] + data[y + CI_SUFFIX]})
        if log_y:  # a log axis cannot draw zero: the band stops at the smallest positive value
            floor = data[y][data[y] > 0].min()
            data[f"{y}_low"] = data[f"{y}_low"].where(data[f"{y}_low"] > 0, floor)
    return data


def _explorer_panel(data: pd.DataFrame, x: str, y: str, color: str | None, keep: str,
                    labels: Mapping[str, str] | None, log_x: bool, log_y: bool, fixed_y: bool,
                    width: int, height: int, colors: Mapping[str, str] | None = None,
                    legend_below: bool = False) -> alt.Chart | alt.LayerChart:
    """One explorer panel: y against x over the rows the inputs select, over its CI band if it has one
    (``data`` from :func:`_with_bands`)."""
    band = y + CI_SUFFIX in data.columns
    y_domain = alt.Undefined
    if fixed_y:
        ys = pd.concat([data[y], data[f"{y}_high"]] if band else [data[y]]).dropna()
        ys = ys[ys > 0] if log_y else ys
        if len(ys):
            low, high = float(ys.min()), float(ys.max())
            y_domain = [low, high] if log_y else [min(0.0, low), high if high > low else low + 1.0]
    y_scale = alt.Scale(type="log" if log_y else "linear", domain=y_domain, clamp=True)
    enc: dict[str, Any] = {
        "x": alt.X(f"{x}:Q", title=label(x, labels), scale=alt.Scale(type="log") if log_x else alt.Scale(zero=False)),
        "y": alt.Y(f"{y}:Q", title=label(y, labels), scale=y_scale),
        "tooltip": [alt.Tooltip(f"{c}:{'Q' if pd.api.types.is_numeric_dtype(data[c]) else 'N'}",
                                title=label(c, labels)) for c in dict.fromkeys([x, y, color]) if c],
    }
    if color is not None:
        values = [v for v in colors if v in set(data[color])] if colors else _grid_values(data[color])
        enc["color"] = alt.Color(f"{color}:N", title=label(color, labels), sort=values,
                                 scale=alt.Scale(domain=values, range=[colors[v] for v in values] if colors
                                                 else _palette(len(values))),
                                 legend=(alt.Legend(orient="bottom", direction="horizontal",
                                                    columns=_legend_columns(values), symbolOpacity=1)
                                         if legend_below else alt.Undefined))
    if not band:
        return (alt.Chart(_records(data)).transform_filter(keep).mark_line(point=True).encode(**enc)
                .properties(width=width, height=height))
    enc["tooltip"].append(alt.Tooltip(f"{y}{CI_SUFFIX}:Q", title="± 95% interval", format=".3~g"))
    base = alt.Chart().transform_filter(keep)  # both layers read the layer's one copy of the data
    area = base.mark_area(opacity=0.2).encode(
        x=enc["x"], y=alt.Y(f"{y}_low:Q", title=label(y, labels), scale=y_scale),
        y2=alt.Y2(f"{y}_high:Q"), **({"color": enc["color"]} if color is not None else {}))
    line = base.mark_line(point=True).encode(**enc)
    return alt.layer(area, line, data=_records(data)).properties(width=width, height=height)


# ---------------------------------------------------------------- convoy chapter

def series_lines(df: pd.DataFrame, x: str, y: str, series: str, *, title: str, caption: str,
                 x_title: str, y_title: str, width: int = 560, height: int = 220) -> alt.Chart:
    """One plain line per ``series`` value (no point markers), in first-seen order, e.g. queue length over time.

    A single series gets no legend (name it in the title or caption).
    """
    names = list(dict.fromkeys(df[series].astype(str)))
    legend = alt.Legend(orient="bottom", direction="horizontal", columns=_legend_columns(names)) if len(names) > 1 else None
    return alt.Chart(_records(df[[x, y, series]])).mark_line().encode(
        x=alt.X(f"{x}:Q", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title),
        color=alt.Color(f"{series}:N", title=None, sort=names,
                        scale=alt.Scale(domain=names, range=_palette(len(names))), legend=legend),
        tooltip=[alt.Tooltip(f"{series}:N"), alt.Tooltip(f"{x}:Q", title=x_title, format=",.1f"),
                 alt.Tooltip(f"{y}:Q", title=y_title, format=",.1f")],
    ).properties(title=_title(title, caption), width=width, height=height)


def time_to_convoy(onsets: pd.DataFrame, summary: pd.DataFrame, *, horizon_s: float, title: str,
                   caption: str | list[str], width: int = 300, height: int = 200) -> alt.HConcatChart:
    """Two panels over the same arrival rates: each run's time to convoy (ticks, medians as diamonds, log
    scale) and the share of runs that convoyed within ``horizon_s`` (bars, with error bars when ``summary``
    has share_lo and share_hi).  A caption given as a list of strings is drawn one line each.

    ``onsets`` has arrival_rate_per_s, seed and time_to_convoy_s (NaN: none); ``summary`` is
    :func:`models.book.analysis.convoy.onset_summary` of it.  Both panels list every rate in ``summary``.
    """
    rates = sorted(float(r) for r in summary["arrival_rate_per_s"])
    x = alt.X("arrival_rate_per_s:O", title="arrival rate (req/s)", scale=alt.Scale(domain=rates),
              axis=alt.Axis(labelAngle=0, labelExpr="format(datum.value, 'd')"))
    hit = onsets.dropna(subset=["time_to_convoy_s"])[["arrival_rate_per_s", "seed", "time_to_convoy_s"]]
    hit = hit.assign(arrival_rate_per_s=hit["arrival_rate_per_s"].astype(float))
    medians = summary.dropna(subset=["median_s"])[["arrival_rate_per_s", "median_s"]]
    y_time = alt.Y("time_to_convoy_s:Q", title="time to convoy (s, log scale)", scale=alt.Scale(type="log"))
    ticks = alt.Chart(_records(hit)).mark_tick(opacity=0.6, thickness=1.5, color=SERIES_COLORS[0]).encode(
        x=x, y=y_time, tooltip=[alt.Tooltip("arrival_rate_per_s:Q"), alt.Tooltip("seed:Q"),
                                alt.Tooltip("time_to_convoy_s:Q", format=".2f")])
    diamonds = alt.Chart(_records(medians)).mark_point(shape="diamond", size=90, filled=True,
                                                       color=SERIES_COLORS[1]).encode(
        x=x, y=alt.Y("median_s:Q", scale=alt.Scale(type="log")),
        tooltip=[alt.Tooltip("arrival_rate_per_s:Q"), alt.Tooltip("median_s:Q", title="median (s)", format=".2f")])
    has_ci = {"share_lo", "share_hi"} <= set(summary.columns)
    share_cols = ["arrival_rate_per_s", "share", "convoyed", "runs"] + (["share_lo", "share_hi"] if has_ci else [])
    tips = [alt.Tooltip("arrival_rate_per_s:Q"), alt.Tooltip("convoyed:Q"), alt.Tooltip("runs:Q")]
    if has_ci:
        tips += [alt.Tooltip("share_lo:Q", title="95% interval from", format=".0%"),
                 alt.Tooltip("share_hi:Q", title="95% interval to", format=".0%")]
    share_base = alt.Chart(_records(summary[share_cols]))
    bars = share_base.mark_bar(color=SERIES_COLORS[0]).encode(
        x=x, y=alt.Y("share:Q", title=f"runs that convoyed within {horizon_s:g} s (%)",
                      axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        tooltip=tips)
    if has_ci:  # Wilson 95% intervals as error bars
        bars = bars + share_base.mark_rule(color="#333333").encode(
            x=x, y=alt.Y("share_lo:Q", scale=alt.Scale(domain=[0, 1])), y2="share_hi:Q", tooltip=tips)
    return alt.hconcat((ticks + diamonds).properties(width=width, height=height),
                       bars.properties(width=int(width * 0.7), height=height)).properties(
        title=_title(title, caption))


def points_vs_formula(df: pd.DataFrame, x: str, y: str, series: str, formula: str, *, title: str,
                      caption: str, x_title: str, y_title: str, log_y: bool = True,
                      width: int = 520, height: int = 240) -> alt.LayerChart:
    """Simulated points against a formula: the ``series`` value ``formula`` is drawn as a dashed grey line,
    every other series as filled points (e.g. simulated mean wait against M/D/1)."""
    names = [formula] + [n for n in dict.fromkeys(df[series].astype(str)) if n != formula]
    colors = ["#555555"] + _palette(len(names) - 1)
    base = alt.Chart(_records(df[[x, y, series]])).encode(
        x=alt.X(f"{x}:Q", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(type="log" if log_y else "linear")),
        color=alt.Color(f"{series}:N", title=None, sort=names, scale=alt.Scale(domain=names, range=colors),
                        legend=alt.Legend(orient="bottom", direction="horizontal", columns=_legend_columns(names))),
        tooltip=[f"{series}:N", alt.Tooltip(f"{x}:Q", title=x_title),
                 alt.Tooltip(f"{y}:Q", title=y_title, format=",.3f")])
    keep = f"datum[{json.dumps(series)}] == {json.dumps(formula)}"
    line = base.transform_filter(keep).mark_line(strokeDash=[5, 3])
    points = base.transform_filter(f"!({keep})").mark_point(filled=True, size=50)
    return alt.layer(line, points).properties(title=_title(title, caption), width=width, height=height)


# ---------------------------------------------------------------- nested-transactions chapter

def against_diagonal(df: pd.DataFrame, x: str, y: str, color: str, shape: str | None = None, *, title: str,
                     caption: str, x_title: str, y_title: str, width: int = 420, height: int = 300) -> alt.LayerChart:
    """Points of ``y`` against ``x`` over the dashed line y = x: how close a formula (x) comes to a run (y)."""
    top = float(max(df[x].max(), df[y].max())) * 1.05
    diag = alt.Chart(_records(pd.DataFrame({x: [0.0, top], y: [0.0, top]}))).mark_line(
        strokeDash=[4, 4], color="#777").encode(x=f"{x}:Q", y=f"{y}:Q")
    cols = [c for c in dict.fromkeys([x, y, color, shape]) if c is not None]
    names = [str(v) for v in dict.fromkeys(df[color])]
    enc: dict[str, Any] = {
        "x": alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(domain=[0, top])),
        "y": alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(domain=[0, top])),
        "color": alt.Color(f"{color}:N", title=label(color), sort=names,
                           scale=alt.Scale(domain=names, range=_palette(len(names)))),
        "tooltip": [alt.Tooltip(f"{c}:{'Q' if pd.api.types.is_numeric_dtype(df[c]) else 'N'}", title=label(c))
                    for c in cols],
    }
    if shape is not None:
        enc["shape"] = alt.Shape(f"{shape}:N", title=label(shape))
    data = df[cols].astype({color: str})
    points = alt.Chart(_records(data)).mark_point(filled=True, size=70).encode(**enc)
    return alt.layer(diag, points).properties(title=_title(title, caption), width=width, height=height)


def time_split(df: pd.DataFrame, y: str, x: str = "seconds", state: str = "state", row: str | None = None, *,
               title: str, caption: str, x_title: str, tooltip: Iterable[str] = (), width: int = 440,
               bar_height: int = 26) -> alt.Chart | alt.FacetChart:
    """Stacked horizontal bars, one per ``y`` (a worker), split by worker state in the book's state colours.

    ``df`` is long: one row per (``row``, ``y``, ``state``) with the time in ``x``; ``row`` makes one
    panel per value, stacked vertically so the chart keeps to the text column.
    """
    states = [s for s in STATES if s in set(df[state])]
    data = df.assign(state_order=df[state].map(STATES.index))
    names = list(dict.fromkeys(df[y]))
    enc: dict[str, Any] = {
        "y": alt.Y(f"{y}:N", title=None, sort=names),
        "x": alt.X(f"{x}:Q", title=x_title, stack="zero"),
        "color": alt.Color(f"{state}:N", title="worker state", sort=states, legend=alt.Legend(orient="top"),
                           scale=alt.Scale(domain=states, range=[STATE_COLORS[s] for s in states])),
        "order": alt.Order("state_order:Q"),
        "tooltip": [alt.Tooltip(f"{c}:{'Q' if pd.api.types.is_numeric_dtype(df[c]) else 'N'}")
                    for c in dict.fromkeys([*(c for c in (row, y, state, x) if c), *tooltip])],
    }
    chart = alt.Chart(_records(data)).mark_bar().encode(**enc).properties(width=width, height=bar_height * len(names))
    if row is not None:
        chart = chart.facet(row=alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(df[row]))))
    return chart.properties(title=_title(title, caption))


def insert_heatmap(frames: Mapping[str, pd.DataFrame], *, title: str, caption: str, time_bins: int = 24,
                   position_bins: int = 24, width: int = 160, height: int = 160) -> alt.HConcatChart:
    """Inserts per leaf page over time, one small heat map per run (a key strategy).

    Each frame is a run's ``extra["inserts"]`` (``time_ms``, ``leaf_position``: where the page ends up
    in key order, 0 the first leaf and 1 the last); it is binned here so the chart carries a few
    hundred cells, not one mark per insert.
    """
    cells = []
    for name, df in frames.items():
        end = float(df["time_ms"].max()) or 1.0
        t = np.minimum((df["time_ms"] / end * time_bins).astype(int), time_bins - 1)
        p = np.minimum((df["leaf_position"] * position_bins).astype(int), position_bins - 1)
        counts = pd.DataFrame({"t": t, "p": p}).value_counts().rename("inserts").reset_index()
        cells.append(counts.assign(
            run=name, time_lo=100.0 * counts["t"] / time_bins, time_hi=100.0 * (counts["t"] + 1) / time_bins,
            pos_lo=100.0 * counts["p"] / position_bins, pos_hi=100.0 * (counts["p"] + 1) / position_bins))
    data = pd.concat(cells, ignore_index=True)
    top = int(data["inserts"].max()) if len(data) else 1
    # One panel per run side by side (a concatenation, not a facet): the site lays them one above the other
    # at full size in a column too narrow for the row, instead of scaling the row down (models.book.render).
    color = alt.Color("inserts:Q", title="inserts per cell", scale=alt.Scale(type="log", scheme="blues", domain=[1, top]),
                      legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160))
    panels = [alt.Chart(_records(data[data["run"] == name])).mark_rect().encode(
        x=alt.X("time_lo:Q", title="time (% of the run)", scale=alt.Scale(domain=[0, 100])), x2=alt.X2("time_hi"),
        y=alt.Y("pos_lo:Q", title="leaf page in key order (%)" if k == 0 else None, scale=alt.Scale(domain=[0, 100])),
        y2=alt.Y2("pos_hi"), color=color,
        tooltip=[alt.Tooltip("run:N", title="key"), alt.Tooltip("inserts:Q")],
    ).properties(width=width, height=height, title=alt.TitleParams(str(name), fontSize=render.TEXT_PX))
        for k, name in enumerate(frames)]
    return alt.hconcat(*panels).properties(title=_title(title, caption))


# ---------------------------------------------------------------- memory chapter

# A query's phases in the grant timeline, and its outcomes and rowgroup states, in the book's colours.
PHASE_COLORS = {
    "waiting for memory": STATE_COLORS["suspended"],
    "compressing": STATE_COLORS["running"],
    "writing delta stores": STATE_COLORS["runnable"],
}
OUTCOME_COLORS = {"granted at once": "#009E73", "forced, compressed": "#56B4E9",
                  "forced, delta stores only": "#E69F00", "error 8645": "#D55E00"}
ROWGROUP_COLORS = {"compressed": "#009E73", "delta store": "#E69F00"}


def query_phases(queries: pd.DataFrame, behaviour: str) -> pd.DataFrame:
    """A per-query table (``Result.queries``) as timeline bars: waiting for memory, then its work (seconds)."""
    rows = []
    for q in queries.itertuples(index=False):
        start, granted = q.start_ms / 1000.0, (q.start_ms + q.grant_wait_ms) / 1000.0
        end = (q.start_ms + q.elapsed_ms) / 1000.0
        name = f"insert {q.query}"
        if q.grant_wait_ms > 0:
            rows.append((name, "waiting for memory", start, granted, q.outcome))
        if q.outcome != "error_8645":
            delta = q.outcome == "forced_minimum" and behaviour == "cu14"
            rows.append((name, "writing delta stores" if delta else "compressing", granted, end, q.outcome))
    return pd.DataFrame(rows, columns=["query", "phase", "start_s", "end_s", "outcome"])


def grant_timeline(queries: pd.DataFrame, grants: pd.DataFrame, *, behaviour: str, target_mb: float,
                   limit_mb: float, title: str, caption: str, width: int = 520) -> alt.VConcatChart:
    """Who waits, who runs and who fails (top), and the memory granted against the target and the limit (below)."""
    # The spec depends on the data as little as it can (a live panel then only swaps data): the row order
    # travels in the data, the height is a step per row, every phase has its legend entry, the error marks
    # are a layer even when empty, and the two panels share their time axis.
    bars = query_phases(queries, behaviour)
    order = {f"insert {q}": k for k, q in enumerate(dict.fromkeys(queries["query"]))}
    bars = bars.assign(order=bars["query"].map(order))
    end_s = float(max(bars["end_s"].max() if len(bars) else 0.0, grants["time_ms"].max() / 1000.0))
    x = alt.X("start_s:Q", title="time since the first insert started (s)")
    y = alt.Y("query:N", title=None, sort=alt.EncodingSortField(field="order", op="min"))
    phases = list(PHASE_COLORS)
    gantt = alt.Chart(_records(bars)).mark_bar(height=14).encode(
        x=x, x2=alt.X2("end_s"), y=y,
        color=alt.Color("phase:N", title=None, sort=phases,
                        legend=alt.Legend(orient="top", direction="horizontal", columns=_legend_columns(phases)),
                        scale=alt.Scale(domain=phases, range=[PHASE_COLORS[p] for p in phases])),
        tooltip=[alt.Tooltip("query:N"), alt.Tooltip("phase:N"), alt.Tooltip("outcome:N"),
                 alt.Tooltip("start_s:Q", format=".1f"), alt.Tooltip("end_s:Q", format=".1f")])
    failed = queries[queries["outcome"] == "error_8645"]
    marks = pd.DataFrame({"query": [f"insert {q}" for q in failed["query"]],
                          "start_s": (failed["start_ms"] + failed["elapsed_ms"]).to_numpy() / 1000.0,
                          "label": "error 8645"})
    if marks.empty and len(bars):  # an empty layer has no extent (Vega warns "Infinite extent"): one blank label
        marks = pd.DataFrame({"query": [bars["query"].iloc[0]], "start_s": [0.0], "label": [""]})
    marks["order"] = marks["query"].map(order)
    layers = [gantt, alt.Chart(_records(marks)).mark_text(align="left", dx=4, color=OUTCOME_COLORS["error 8645"],
                                                        fontWeight="bold").encode(x=x, y=y, text=alt.Text("label:N"))]
    top = alt.layer(*layers).properties(width=width, height=alt.Step(22))
    steps = pd.concat([grants, pd.DataFrame({"time_ms": [end_s * 1000.0], "granted_mb": [grants["granted_mb"].iloc[-1]],
                                             "waiters": [grants["waiters"].iloc[-1]]})], ignore_index=True)
    steps = steps.assign(time_s=steps["time_ms"] / 1000.0).drop_duplicates("time_s", keep="last")
    memory = alt.Chart(_records(steps[["time_s", "granted_mb", "waiters"]])).mark_line(
        interpolate="step-after", color="#0072B2").encode(
        x=alt.X("time_s:Q", title="time since the first insert started (s)"),
        y=alt.Y("granted_mb:Q", title="memory granted (MB)",
                scale=alt.Scale(domain=[0, max(limit_mb, float(steps["granted_mb"].max())) * 1.05])),
        tooltip=[alt.Tooltip("time_s:Q", format=".1f"), alt.Tooltip("granted_mb:Q", format=",.0f"),
                 alt.Tooltip("waiters:Q")])
    lines = pd.DataFrame({"mb": [target_mb, limit_mb],
                          "label": [f"semaphore target {target_mb:,.0f} MB", f"max server memory {limit_mb:,.0f} MB"]})
    rules = alt.Chart(_records(lines)).mark_rule(strokeDash=[5, 4], color="#555").encode(y=alt.Y("mb:Q"))
    bottom = alt.layer(memory, rules, *_rule_labels(lines, "mb", alt.Undefined, "left")).properties(width=width, height=170)
    return (alt.vconcat(top, bottom).resolve_scale(color="independent", x="shared")
            .properties(title=_title(title, caption)))


def stacked_counts(df: pd.DataFrame, y: str, x: str, color: str, colors: Mapping[str, str], *, row: str | None = None,
                   title: str, caption: str, x_title: str, y_title: str | None = None, width: int = 440,
                   bar_height: int = 18) -> alt.Chart | alt.FacetChart:
    """Horizontal bars of counts per ``y``, stacked by ``color`` in fixed colours; ``row`` stacks panels vertically."""
    order = [c for c in colors if c in set(df[color])]
    names = list(dict.fromkeys(df[y].astype(str)))
    data = df.assign(**{y: df[y].astype(str)}, order=df[color].map(list(colors).index))
    chart = alt.Chart(_records(data)).mark_bar().encode(
        y=alt.Y(f"{y}:N", title=y_title, sort=names),
        x=alt.X(f"{x}:Q", title=x_title, stack="zero", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color(f"{color}:N", title=None, sort=order,
                        legend=alt.Legend(orient="top", direction="horizontal", columns=_legend_columns(order)),
                        scale=alt.Scale(domain=order, range=[colors[c] for c in order])),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip(f"{c}:{'Q' if pd.api.types.is_numeric_dtype(df[c]) else 'N'}")
                 for c in dict.fromkeys([c for c in (row, y, color, x) if c])],
    ).properties(width=width, height=bar_height * len(names))
    if row is not None:
        chart = chart.facet(row=alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(df[row]))))
    return chart.properties(title=_title(title, caption))


# ---------------------------------------------------------------- your server

def whatif_chart(table: pd.DataFrame, *, title: str, caption: str, choose: str | None = None,
                 start: Any = None, labels: Mapping[str, str] | None = None, width: int = 340) -> alt.Chart:
    """Each change's predicted throughput over the fitted model's now (1: no gain), with its range, on a log axis.

    ``table`` is :func:`models.fitting.whatif.table`'s rows that apply; with ``choose`` (a column such as the
    scenario) a list below the chart picks which fit's changes are drawn, with no kernel.
    """
    keys = ["what"] + ([choose] if choose else [])
    data = table[keys + ["change", "vs_now", "throughput", "throughput_low", "throughput_high", "unit"]].copy()
    now = data["throughput"] / data["vs_now"]
    data["low_ratio"] = data["throughput_low"] / now
    data["high_ratio"] = data["throughput_high"] / now
    top = float(max(data["high_ratio"].max(), 1.0)) * 1.15
    bottom = float(min(data["low_ratio"].min(), 1.0)) / 1.15
    scale = alt.Scale(type="log", domain=[bottom, top], nice=False)
    x_title = "throughput after the change ÷ now (log scale)"
    ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 50) if bottom <= t <= top]
    x = alt.X("vs_now:Q", title=x_title, scale=scale,
              axis=alt.Axis(format="~g", values=ticks, labelOverlap="greedy"))
    # Each change is named above its row, not on an axis beside it: a name such as OPTIMIZE_FOR_SEQUENTIAL_KEY
    # takes 230 px at 13 px, which a phone's column cannot spare beside the plot.
    y = alt.Y("what:N", title=None, sort=alt.EncodingSortField("vs_now", order="descending"), axis=None)
    tooltip = [alt.Tooltip("change:N", title="change"), alt.Tooltip("vs_now:Q", title="× now", format=".3~g"),
               alt.Tooltip("throughput:Q", title="throughput", format=",.4~g"), alt.Tooltip("unit:N", title="unit")]
    base = alt.Chart()
    params = []
    if choose:
        values = _grid_values(data[choose])
        param, expr, _ = _dropdown(choose, values, start if start is not None else values[0], labels)
        params.append(param)
        base = base.transform_filter(expr)
    bars = base.mark_rule(strokeWidth=3, color=SERIES_COLORS[0], opacity=0.45).encode(
        x=alt.X("low_ratio:Q", scale=scale, title=x_title), x2="high_ratio:Q", y=y)
    dots = base.mark_point(filled=True, size=70, color=SERIES_COLORS[0]).encode(x=x, y=y, tooltip=tooltip)
    one = alt.Chart(alt.Data(values=[{"one": 1.0}])).mark_rule(color="#555", strokeDash=[4, 3]).encode(
        x=alt.X("one:Q", scale=scale, title=x_title))
    names = base.mark_text(align="left", baseline="bottom", dx=3, dy=-7).encode(x=alt.value(0), y=y, text="what:N")
    layered = alt.layer(bars, dots, names, data=_records(data)).add_params(*params)
    return (alt.layer(layered, one).properties(width=width, height=alt.Step(44),
                                               title=_title(title, caption)))
