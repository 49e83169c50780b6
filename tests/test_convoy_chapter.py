"""The convoy chapter's claims: capacities, hysteresis, recovery, onset detection and its stored data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import json
from pathlib import Path
from types import SimpleNamespace

from models.book.analysis import convoy as cv
from models.calibration import CONTEXT_SWITCH_US, HANDOFF_US, WAKEUP_US
from models.book.sweep import DATA_DIR, run_point
from models.book.sweeps import convoy as sweep_def

BIG = {"wakeup_us": 198.0, "context_switch_us": CONTEXT_SWITCH_US}   # the chapter's 200 us hand-off
DEFAULT = {"wakeup_us": WAKEUP_US, "context_switch_us": CONTEXT_SWITCH_US}
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "02_convoys.ipynb"


def _run(**kw):
    return cv.run(**kw)  # the chapter's 2 ms hold, with an acquire log


def test_capacities_and_md1():
    assert cv.capacities(2.0, 0.0) == (500.0, 500.0)
    assert cv.capacities(2.0, 200.0)[1] == pytest.approx(1000 / 2.2)
    assert cv.md1_mean_wait_ms(400, 2.0) == pytest.approx(4.0)
    assert math.isinf(cv.md1_mean_wait_ms(500, 2.0))
    with pytest.raises(ValueError):
        cv.capacities(0.0, 10.0)


def test_md1_helper_agrees_with_analytic_module_when_present():
    analytic = pytest.importorskip("models.analytic")
    assert cv.md1_mean_wait_ms(400, 2.0) == pytest.approx(analytic.md1(0.4, 2.0).mean_wait)


def test_convoy_onset_definition():
    t = np.arange(10.0)
    assert math.isnan(cv.convoy_onset_ms(t, np.zeros(10), 5.0))            # never above
    assert cv.convoy_onset_ms(t, np.full(10, 9.0), 5.0) == 0.0            # never found free: from the start
    w = np.array([0, 9, 9, 0, 0, 9, 9, 9, 9, 9], dtype=float)             # an excursion that came back
    assert cv.convoy_onset_ms(t, w, 5.0) == 4.0                           # the last request that found it free
    w[-1] = 4.0                                                            # ends below the threshold: no convoy
    assert math.isnan(cv.convoy_onset_ms(t, w, 5.0))
    with pytest.raises(ValueError):
        cv.convoy_onset_ms(t[::-1], w, 5.0)


def test_wilson_interval():
    lo, hi = cv.wilson_interval(4, 30)
    assert (round(lo, 3), round(hi, 3)) == (0.053, 0.297)
    assert cv.wilson_interval(0, 100)[0] == pytest.approx(0.0, abs=1e-12)
    assert cv.wilson_interval(100, 100)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        cv.wilson_interval(3, 2)


def test_onset_threshold_is_far_above_the_stable_queue():
    """The convoy threshold sits about ten times above Welch's mean wait at 450 req/s, the grid's highest stable rate."""
    analytic = pytest.importorskip("models.analytic")
    welch = analytic.fair_handoff_queue(0.45, 2.0, 4.0, 0.2).mean_latch_wait
    assert welch == pytest.approx(108.9, abs=0.05)
    assert 9 < sweep_def.ONSET_THRESHOLD_MS / welch < 10


def test_onset_summary_counts_censored_runs_as_later():
    df = pd.DataFrame({"arrival_rate_per_s": [460] * 4, "time_to_convoy_s": [1.0, 2.0, np.nan, 70.0]})
    row = cv.onset_summary(df, horizon_s=60.0).iloc[0]
    assert row["convoyed"] == 2 and row["share"] == 0.5
    assert row["share_lo"] < 0.5 < row["share_hi"]
    assert math.isnan(row["median_s"])  # half never convoyed within the horizon: no finite median
    df.loc[2, "time_to_convoy_s"] = 3.0
    assert cv.onset_summary(df, 60.0).iloc[0]["median_s"] == pytest.approx(2.5)


def test_queue_growth_is_one_hold_per_request_ahead():
    free = _run(arrival_rate_per_s=550, arrivals="even", requests=1000, wakeup_us=0, context_switch_us=0)
    assert free.throughput_per_s == pytest.approx(500.0, rel=1e-3)
    assert cv.wait_per_request_ahead(free.acquire_log) == pytest.approx(2.0, rel=1e-3)
    handed = _run(arrival_rate_per_s=1000, arrivals="even", requests=1000, **BIG)
    assert cv.wait_per_request_ahead(handed.acquire_log) == pytest.approx(2.2, rel=1e-3)


def test_queue_length_from_log():
    res = _run(arrival_rate_per_s=480, arrivals="even", requests=1000, initial_queue=20, **BIG)
    q = cv.queue_length(res.acquire_log, np.array([1.0, 1000.0, 2000.0]))
    assert 15 <= q[0] <= 20  # the burst reaches the latch as its tasks get onto their schedulers
    growth = (q[2] - q[1]) / 1.0
    assert growth == pytest.approx(480 - 1000 / 2.2, abs=2)
    assert (cv.queue_length(res.acquire_log, [1000.0], include_holder=True) == q[1] + 1).all()


@pytest.mark.parametrize("rate,drains", [(440, True), (460, False)])
def test_recovery_needs_load_below_convoy_capacity(rate, drains):
    res = _run(arrival_rate_per_s=rate, arrivals="even", requests=3000, initial_queue=50, **BIG)
    q = cv.queue_series(res.acquire_log, 6000.0, 61)["queue"].to_numpy()
    assert bool(q[-1] == 0) is drains
    assert bool(q[-1] > 50) is (not drains)


def test_hysteresis_with_calibrated_handoff():
    """The band exists at the calibrated 9.7 us hand-off too, only narrower (497.6 to 500 req/s)."""
    assert HANDOFF_US == 9.7 and cv.capacities(2.0, HANDOFF_US)[1] == pytest.approx(497.587, abs=1e-3)
    kw = dict(arrival_rate_per_s=499, arrivals="even", requests=3000, **DEFAULT)
    assert _run(**kw).latch_stats.loc[0, "waiting_requests_count"] == 0
    stuck = _run(initial_queue=10, **kw)
    assert stuck.throughput_per_s == pytest.approx(cv.capacities(2.0, HANDOFF_US)[1], rel=1e-3)
    assert stuck.throughput_per_s < 499 - 1


def test_poisson_convoy_detected_above_and_not_below():
    def onset(rate):
        res = _run(arrival_rate_per_s=rate, requests=int(rate * 30), seed=3, **BIG)
        log = cv.by_request(res.acquire_log)
        return cv.convoy_onset_ms(log["request_ms"].to_numpy(), log["wait_ms"].to_numpy(), 100.0)
    assert math.isnan(onset(400))
    assert onset(490) < 20_000


def test_sweep_definition_and_stored_rows_are_fresh():
    sweep = sweep_def.SWEEP
    assert sweep.scenario == "convoy"
    stored = pd.read_csv(DATA_DIR / "convoy.csv")
    assert len(stored) == len(sweep.points())
    for k in (0, 97, 311):  # a sample of grid points, recomputed
        point = sweep.points()[k]
        row = run_point(sweep, point)
        for col in ("throughput_per_s", "mean_wait_ms", "p99_wait_ms"):
            assert stored.loc[k, col] == pytest.approx(row[col], rel=1e-4, abs=1e-6), (k, col)


def test_onset_table_is_fresh():
    stored = pd.read_csv(DATA_DIR / sweep_def.ONSET_FILE)
    assert len(stored) == len(sweep_def.ONSET_RATES) * sweep_def.ONSET_SEEDS
    for rate, seed in ((470, 2), (440, 1)):
        row = sweep_def.onset_row(rate, seed)
        old = stored[(stored["arrival_rate_per_s"] == rate) & (stored["seed"] == seed)].iloc[0]
        if math.isnan(row["time_to_convoy_s"]):
            assert math.isnan(old["time_to_convoy_s"])
        else:
            assert old["time_to_convoy_s"] == pytest.approx(row["time_to_convoy_s"], rel=1e-4)


def test_drain_time_and_saturation_table():
    series = pd.DataFrame({"time_ms": [0.0, 500.0, 1000.0, 1500.0], "queue": [0, 4, 0, 0]})
    assert cv.drain_time_s(series) == 1.0
    assert math.isnan(cv.drain_time_s(series.assign(queue=[0, 4, 3, 2])))
    runs = {name: _run(arrival_rate_per_s=1000, arrivals="even", requests=1000, **kw)
            for name, kw in (("free", {"wakeup_us": 0.0, "context_switch_us": 0.0}), ("200", BIG))}
    table = cv.saturation_table(runs, {"free": 0.0, "200": 200.0})
    assert list(table["hand-off (µs)"]) == [0.0, 200.0]
    assert table["simulated throughput (req/s)"].to_numpy() == pytest.approx(
        table["1/(hold + hand-off) (req/s)"].to_numpy(), rel=1e-3)
    assert table["wait per request ahead (ms)"].to_numpy() == pytest.approx([2.0, 2.2], rel=1e-3)


def test_onset_shares_text_merges_equal_neighbours():
    summary = pd.DataFrame({"arrival_rate_per_s": [430.0, 440.0, 450.0, 455.0, 460.0, 500.0],
                            "share": [0.0, 0.0, 4 / 30, 23 / 30, 1.0, 1.0]})
    assert cv.onset_shares_text(summary) == "0% at 430-440, 13% at 450, 77% at 455, 100% at 460-500 req/s"


def test_dmv_signature_of_whites_fair_run():
    """White's fair run: 271,458 LATCH_EX waits, 21,949 ms of wait, 2,644 ms of signal wait in 5.5 s."""
    sig = cv.dmv_signature(271_458, 21_949, 2_644, 5_500)
    assert sig["avg_wait_ms"] * 1000 == pytest.approx(80.9, abs=0.05)     # about 81 us per wait
    assert sig["signal_per_wait_us"] == pytest.approx(9.74, abs=0.01)     # the calibrated hand-off
    assert sig["mean_waiters"] == pytest.approx(3.99, abs=0.01)           # Little's law
    assert sig["handoff_time_share"] == pytest.approx(0.48, abs=0.005)
    assert math.isnan(sig["waits_per_acquire"])                           # White reports no acquire count
    with pytest.raises(ValueError):
        cv.dmv_signature(1, 1, 1, 0)


def test_signature_separates_a_busy_latch_from_a_convoy():
    """On the model's own DMV tables: a busy latch often has nobody waiting, a convoy almost never."""
    busy = cv.signature_of(_run(arrival_rate_per_s=450, requests=10_000, **DEFAULT))
    band = cv.signature_of(_run(arrival_rate_per_s=499, requests=10_000, **DEFAULT))
    convoy = cv.signature_of(_run(arrival_rate_per_s=480, requests=10_000, **BIG))
    assert busy["waits_per_acquire"] == pytest.approx(0.9, abs=0.02)     # about the utilisation
    assert busy["no_waiter_share"] > 0.15
    for sig in (band, convoy):
        assert sig["waits_per_acquire"] > 0.99 and sig["no_waiter_share"] < 0.02
    assert busy["signal_per_wait_us"] == pytest.approx(HANDOFF_US, rel=1e-3)
    assert convoy["signal_per_wait_us"] == pytest.approx(200.0, rel=1e-3)
    small = {"busy": _run(arrival_rate_per_s=450, requests=2000, **DEFAULT)}
    snap = cv.dmv_snapshot(small)
    assert list(snap.columns) == ["run", "latch_class", "waiting_requests_count", "wait_time_ms", "max_wait_time_ms",
                                  "signal_wait_time_ms", "acquires", "elapsed_ms"]
    report = cv.signature_report(small).set_index("counter")
    assert report.loc["acquires", "busy"] == "2,000" and report.loc["signal wait per wait (µs)", "busy"] == "9.7"
    assert report.loc["time nobody waits (%)", "busy"].endswith(" %")


def test_unfair_latch_recovers_by_overtaking_the_suspended():
    kw = dict(arrival_rate_per_s=480, arrivals="even", requests=5000, initial_queue=50, **BIG)
    fair, unfair = _run(**kw), _run(policy="unfair", **kw)
    assert fair.throughput_per_s == pytest.approx(1000 / 2.2, rel=1e-3)
    assert unfair.throughput_per_s == pytest.approx(480, rel=1e-2)
    assert unfair.latch_stats.loc[0, "waiting_requests_count"] < 100            # only the early ones waited...
    assert unfair.latch_stats.loc[0, "max_wait_time_ms"] > 5000                 # ...and some of them for seconds


def test_unfair_cure_needs_running_requesters():
    """Even arrivals at 480/s bring the next request 83 us after each release, inside the 200 us hand-off, so an
    unfair latch keeps up (test above); Poisson arrivals leave it idle for the next arrival or the woken waiter."""
    assert 1e6 / 480 - 1000 * cv.HOLD_MS < 200.0
    idle = cv.unfair_idle_us(480, 200.0)
    assert idle == pytest.approx(190.7, abs=0.05) and cv.unfair_idle_us(1e-3, 200.0) == pytest.approx(200.0)
    with pytest.raises(ValueError):
        cv.unfair_idle_us(0.0, 200.0)
    unfair = _run(arrival_rate_per_s=480, requests=10_000, policy="unfair", **BIG)
    assert unfair.throughput_per_s == pytest.approx(1000 / (2.0 + idle / 1000), rel=0.01)
    assert unfair.throughput_per_s < 460 and unfair.mean_wait_ms > 300           # still a convoy
    grid = pd.read_csv(DATA_DIR / "convoy.csv").query(
        "wakeup_us == 198 and arrivals == 'poisson' and initial_queue == 0 and arrival_rate_per_s == 480")
    tp = grid.set_index("policy")["throughput_per_s"]
    assert tp["fair"] < tp["unfair"] < 460


def test_on_your_server_scripts_rerun_and_fail_loudly():
    prose = "\n".join(_sources("markdown"))
    assert "map_value IN (N'TRAN_NESTING_FULL', N'NESTING_TRANSACTION_FULL')" in prose
    assert "IF @class IS NULL THROW" in prose
    assert prose.index("DROP EVENT SESSION convoy_check") < prose.index("CREATE EVENT SESSION convoy_check")
    assert "DROP TABLE IF EXISTS #l0" in prose and "DROP TABLE IF EXISTS #s" in prose
    assert "not in the size of its queue" not in " ".join(prose.split())


def _notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def _sources(kind):
    return ["".join(c["source"]) for c in _notebook()["cells"] if c["cell_type"] == kind]


def test_notebook_uses_the_calibrated_handoff_and_says_why_it_departs():
    code = "\n".join(_sources("code"))
    assert "from models.calibration import" in code and "WAKEUP_US" in code
    prose = " ".join(" ".join(_sources("markdown")).split())  # line breaks as spaces
    assert "too thin to see" in prose
    assert "fair by default" not in prose.replace("latches are fair by default", "")
    assert "bistable" not in prose.replace("not bistable", "")
    assert "On your server" in prose and "sys.dm_os_waiting_tasks" in prose and "latch_suspend_end" in prose


def test_time_to_convoy_chart_states_the_computed_shares_on_shared_categories():
    summary = cv.onset_summary(pd.read_csv(DATA_DIR / sweep_def.ONSET_FILE), sweep_def.ONSET_HORIZON_S)
    wanted = cv.onset_shares_text(summary)
    for cell in _notebook()["cells"]:
        for out in cell.get("outputs", []):
            spec = out.get("data", {}).get("application/vnd.vegalite.v5+json") or out.get("data", {}).get(
                "application/vnd.vegalite.v6+json")
            if spec and "hconcat" in spec and "Time to convoy" in json.dumps(spec.get("title")):
                # The stored title and subtitle are lists of lines wrapped to the chart's width (render.dressed).
                lines = [line for part in ("text", "subtitle") for line in np.atleast_1d(spec["title"].get(part, []))]
                assert wanted in " ".join(map(str, lines))
                left, right = spec["hconcat"]
                domains = {json.dumps(layer["encoding"]["x"]["scale"]["domain"])
                           for panel in (left, right) for layer in panel.get("layer", [panel])}
                assert len(domains) == 1
                return
    pytest.fail("no time-to-convoy chart in the stored notebook outputs")


def test_every_exercise_names_its_knob_and_shows_its_run():
    """Each exercise: the question naming its knob, the run a reader can open, then (after the hidden cell that
    hands the run's figures to the prose) the solution quoting them, closed in a dropdown."""
    cells = _notebook()["cells"]
    start = next(k for k, c in enumerate(cells) if "## Exercises" in "".join(c["source"]))
    solutions = [k for k, c in enumerate(cells[start:], start)
                 if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("```{dropdown} Solution")]
    assert len(solutions) >= 4
    for k in solutions:
        question, run, numbers = cells[k - 3], cells[k - 2], cells[k - 1]
        assert question["cell_type"] == "markdown" and "`" in "".join(question["source"])  # a knob, as a parameter
        assert run["cell_type"] == "code" and "hide-cell" in run["metadata"].get("tags", [])
        assert "convoy.run(" in "".join(run["source"]) and run["outputs"]     # a run the reader can open, and its figure
        assert "remove-input" in numbers["metadata"].get("tags", []) and "glue" in "".join(numbers["source"])

# ---------------------------------------------------------------- issue 42: bounds, notation, definitions

CH1 = Path(__file__).resolve().parent.parent / "notebooks" / "01_latches_and_scheduling.ipynb"
GLOSSARY = Path(__file__).resolve().parent.parent / "book" / "glossary.md"


def _prose(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown").split())


def test_sensitivity_runs_are_the_onset_runs_read_again():
    """The sensitivity table's 1 s / 60 s reading is the stored onset table, run for run; and one rate and seed,
    rerun, gives back its stored rows at every threshold and horizon."""
    sens = pd.read_csv(DATA_DIR / sweep_def.SENSITIVITY_FILE)
    onsets = pd.read_csv(DATA_DIR / sweep_def.ONSET_FILE)
    assert len(sens) == (len(sweep_def.SENSITIVITY_RATES) * sweep_def.ONSET_SEEDS
                         * len(sweep_def.SENSITIVITY_THRESHOLDS_MS) * len(sweep_def.SENSITIVITY_HORIZONS_S))
    main = sens.query("threshold_s == 1.0 and horizon_s == 60.0").merge(onsets, on=["arrival_rate_per_s", "seed"])
    assert len(main) == len(sweep_def.SENSITIVITY_RATES) * sweep_def.ONSET_SEEDS
    assert main["time_to_convoy_s_x"].fillna(-1).to_numpy() == pytest.approx(
        main["time_to_convoy_s_y"].fillna(-1).to_numpy(), rel=1e-4)
    fresh = pd.DataFrame(sweep_def.sensitivity_rows(460, 7))
    stored = sens.query("arrival_rate_per_s == 460 and seed == 7").sort_values(["horizon_s", "threshold_s"])
    fresh = fresh.sort_values(["horizon_s", "threshold_s"])
    assert fresh["time_to_convoy_s"].fillna(-1).to_numpy() == pytest.approx(
        stored["time_to_convoy_s"].fillna(-1).to_numpy(), rel=1e-4)


def test_onset_shares_depend_on_the_definition_only_near_the_line():
    """A higher threshold or a shorter horizon flags fewer runs; from 465 up nearly every setting flags them all,
    and at 450 (below 1/S1) only the lowest threshold flags any."""
    s = cv.onset_sensitivity(pd.read_csv(DATA_DIR / sweep_def.SENSITIVITY_FILE))
    share = s.set_index(["threshold_s", "horizon_s", "arrival_rate_per_s"])["share"]
    for rate in sweep_def.SENSITIVITY_RATES:
        assert share[(0.5, 60.0, rate)] >= share[(1.0, 60.0, rate)] >= share[(2.0, 60.0, rate)]
        assert share[(1.0, 30.0, rate)] <= share[(1.0, 60.0, rate)] <= share[(1.0, 120.0, rate)]
    assert share[(1.0, 60.0, 450)] == 0 and share[(0.5, 60.0, 450)] < 0.05
    assert share[(2.0, 60.0, 460)] < 0.3 < 0.9 < share[(0.5, 60.0, 460)]
    assert all(share[(t, h, 465)] > 0.6 for t, h in cv.SENSITIVITY_COLUMNS)
    table = cv.sensitivity_display(s)
    assert list(table.columns) == ["rate (req/s)"] + [f"{t:g} s, {h:g} s" for t, h in cv.SENSITIVITY_COLUMNS]
    assert table.iloc[0, 0] == "450" and table.iloc[3, 2].startswith("100 (")


def test_x_counts_waiters_and_the_escape_odds():
    """x = 1 s / S1 = 455 waiters (a count: it equals the 455 req/s rate by coincidence); such a queue empties
    again with probability about 0.4 at 455 req/s and 1.9 in 100,000 at 460 (the exact root of z = exp(m(z - 1));
    the diffusion approximation gives 2.1), and always at or below 1/S1."""
    import math

    x = sweep_def.ONSET_THRESHOLD_MS / (2.0 + 0.2)
    assert round(x) == 455
    assert cv.escape_probability(455, 2.0, 200.0, x) == pytest.approx(0.403, abs=0.001)
    assert 1e5 * cv.escape_probability(460, 2.0, 200.0, x) == pytest.approx(1.91, abs=0.01)
    assert 1e5 * cv.escape_probability(460, 2.0, 200.0, x, exact=False) == pytest.approx(2.08, abs=0.01)
    assert cv.escape_probability(450, 2.0, 200.0, x) == 1.0
    for rate in (455, 460, 480):   # the root z solves z = exp(m (z - 1)) with 0 < z < 1
        m = rate * 2.2 / 1000
        z = cv.escape_probability(rate, 2.0, 200.0, 1.0)
        assert 0 < z < 1 and z == pytest.approx(math.exp(m * (z - 1)), rel=1e-12)
    prose = _prose(NOTEBOOK)
    assert "diffusion approximation" in prose and "empties_460_diffusion_per_100k" in prose


def test_collapsed_table_is_a_closed_dropdown_with_its_text():
    table = cv.collapsed(_StubTable(), "A title", note="A note & more")
    html = table._repr_html_()
    assert html.startswith('<details class="sd-sphinx-override sd-dropdown') and " open" not in html.split(">")[0]
    assert "<table>stub</table>" in html and "A note &amp; more" in html
    assert repr(table) == "A title\nstub\nA note & more"


class _StubTable:
    def _repr_html_(self):
        return "<table>stub</table>"

    def __repr__(self):
        return "stub"


def test_handoff_lower_bound_is_the_one_derivation_everywhere():
    """Chapters 1 and 2 glue the bound from fairness.lower_handoff_range_us; the glossary, which cannot glue, prints
    the same rounded figures (face value, both ends of White's rounding, the model's waits there and the bound with
    White's own waits); nobody calls 3 µs White's bound any more, and the low end lies just above the face-value
    bound."""
    from models import calibration
    from models.book.analysis import fairness as fx

    bound = fx.lower_handoff_range_us()
    glossary = " ".join(GLOSSARY.read_text(encoding="utf-8").split())
    assert f"about {bound['face_value']:.1f} µs at face value" in glossary
    assert f"from about {bound['narrowest_gap']:.1f} µs to about {bound['widest_gap']:.1f} µs" in glossary
    assert f"±{fx.ELAPSED_ROUNDING_S:.2f} s" in glossary
    assert f"about {bound['waits']:,.0f} waits" in glossary
    assert f"{calibration.WHITE_FAIR_LATCH_WAITS:,} waits in place of the model's, the same bound would be about " \
           f"{bound['with_whites_waits']:.1f} µs" in glossary
    assert "from his figures alone" in glossary and "there is none" in glossary
    low = min(fx.BAND_HANDOFFS_US)
    assert low == calibration.CONTEXT_SWITCH_US + calibration.WAKEUP_BAND_US[0]
    assert f"low end of {low:.1f} µs is an assumption" in glossary
    # the low end lies just above the face-value bound (inside the rounded one), and the glossary says so
    assert bound["narrowest_gap"] < bound["face_value"] < low < bound["widest_gap"]
    assert "just above the face-value bound" in glossary
    for stale in ("below the face-value bound", "3.5 µs at face value", "W = 271,458"):
        assert stale not in glossary
    for path in (CH1, NOTEBOOK):
        prose = _prose(path)
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "code")
        assert "lower_handoff_range_us()" in code
        for stale in ("bounds it from below at about 3", "from below at about {eval}", "2.9 µs", "(5.5 − 4.5)/R"):
            assert stale not in prose, (path.name, stale)
    for stale in ("bounds it from below at about 3", "about 3 µs", "no bound at all", "idle time of the model's fair run"):
        assert stale not in glossary
    for path in (CH1, NOTEBOOK):
        for stale in ("no bound at all", "not at all once", "none within", "below the face-value bound",
                      "below it at face value", "exclude"):
            assert stale not in _prose(path), (path.name, stale)


def test_glossary_fixes_the_notation():
    text = GLOSSARY.read_text(encoding="utf-8")
    terms = [line for line in text.splitlines() if line and not line.startswith((" ", "#", "`", "{"))]
    for term in ("hand-off", "convoy", "λ", "S0", "S1", "N*"):
        assert term in terms, term
    flat = " ".join(text.split())
    assert "$h$, a parameter of the book's model" in flat and "It is not a measurement" in flat
    assert "The book uses the word in this one sense" in flat
    assert "$N^* =" not in flat  # the USL's peak is not N*


def test_no_raw_number_leaks_onto_the_page():
    """No stored text output of chapters 1 and 2 shows a number with more than four decimals (a glue on a cell's last
    line printed its value raw: 3.327177083 under chapter 1's timeline)."""
    import re

    for path in (CH1, NOTEBOOK):
        for k, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            for out in cell.get("outputs", []):
                texts = [out.get("text", "")] + [v for key, v in (out.get("data") or {}).items()
                                                  if key in ("text/plain", "text/html")]
                for text in texts:
                    text = "".join(text) if isinstance(text, list) else text
                    assert not re.search(r"\d\.\d{5,}", text), (path.name, k, text[:200])


def test_chapter_1_says_where_the_model_differs_from_a_server():
    prose = _prose(CH1)
    assert "one is enough" in prose and "preemptive" in prose            # one scheduler can contend on a server
    assert "an I/O wait, not contention" not in prose and "They are still latch waits" in prose
    assert "heavy stream of SH requests" in prose                         # superlatches are for read-hot pages
    assert "```{warning}" in "".join("".join(c["source"]) for c in json.loads(CH1.read_text())["cells"])
    assert "WAITFOR DELAY '00:00:05'" in prose and "WHERE class = <map_key>" in prose


def test_chapter_2_says_what_x_and_the_signal_share_are():
    prose = _prose(NOTEBOOK)
    assert "waiters (a count, not the 455 req/s rate)" in prose
    assert "about half the run being handed" not in prose
    assert "the DMVs give neither per class" in prose and "$s_{\\text{type}} \\ge s$" in prose
    assert "$S_1 = S + h$" in prose and "$S_0 = S$" in prose
    # the query's signal-wait column is a mean count of tasks, not a share: summed over classes it can exceed 1
    assert "signal_share_of_interval" not in prose and "AS mean_tasks_in_signal_wait" in prose
    assert "so it can exceed 1" in prose


def test_the_escape_odds_at_the_threshold_against_their_closed_forms():
    """x = threshold / (hold + hand-off); the exact odds are z ** x with z the least root of z = exp(m (z - 1)), found
    here by the fixed-point iteration from 0 (which climbs to that root) rather than the module's bisection; the
    diffusion odds are exp(-2 (m - 1) / m x)."""
    x = cv.threshold_waiters(sweep_def.ONSET_THRESHOLD_MS, 2.0, 200.0)
    assert x == pytest.approx(1000.0 / 2.2, rel=1e-15)
    for rate in (455, 460, 480):
        m = rate * 2.2 / 1000
        z = 0.0
        for _ in range(100_000):
            z = math.exp(m * (z - 1))
        assert cv.escape_probability(rate, 2.0, 200.0, x) == pytest.approx(z ** x, rel=1e-6)
        assert cv.escape_probability(rate, 2.0, 200.0, x, exact=False) == pytest.approx(
            math.exp(-2 * (m - 1) / m * x), rel=1e-12)
    with pytest.raises(ValueError, match="hold_ms=0"):
        cv.threshold_waiters(1000.0, 0.0, 200.0)


def test_whites_fair_run_as_a_signature_by_hand():
    """From fairness.PUBLISHED, White's one cited home: 21,949 ms / 271,458 waits = 80.9 us a wait, 3.99 waiters, 48 %
    of 5.5 s in signal wait; at a 3 us hand-off W x h is 0.81 s, 15 % of the run and 31 % of the signal wait; at the
    calibrated hand-off it is the whole signal wait (h was set from it)."""
    from models.book.analysis.fairness import PUBLISHED, RECORDS

    fair = PUBLISHED["fair"]
    assert (fair["latch_waits"], fair["signal_wait_ms"]) == (271_458, 2_644.0)
    white = cv.whites_fair_signature(3.0)
    assert 1000 * white["avg_wait_ms"] == pytest.approx(1000 * 21_949 / 271_458, rel=1e-12)
    assert white["mean_waiters"] == pytest.approx(21_949 / 5_500, rel=1e-12)
    assert white["handoff_time_share"] == pytest.approx(0.4807, abs=1e-4)
    assert white["waits_per_record"] == pytest.approx(271_458 / RECORDS, rel=1e-12) and white["waits_per_record"] < 1
    assert white["band_low_share"] == pytest.approx(0.148068, rel=1e-9)
    assert white["band_low_share_of_signal"] == pytest.approx(271_458 * 3 / 2_644_000, rel=1e-12)
    assert cv.whites_fair_signature(HANDOFF_US)["band_low_share_of_signal"] == pytest.approx(1.0, abs=0.005)
    with pytest.raises(ValueError, match="band_low_us=-1"):
        cv.whites_fair_signature(-1.0)


def test_waiters_by_length_keeps_a_stable_queue_and_grows_an_overloaded_one():
    """Without a hand-off at 400 req/s (rho 0.8) the mean waiters is M/D/1's Lq = 1.6 inside its interval; at 499 req/s
    with a 200 us hand-off (capacity 455/s) the queue grows with the run."""
    stable = cv.waiters_by_length({"control": {"wakeup_us": 0.0, "context_switch_us": 0.0}}, 400, (20_000,),
                                  seeds=(1, 2, 3, 4))
    row = stable.iloc[0]
    lq = 400 * cv.md1_mean_wait_ms(400, 2.0) / 1000
    assert abs(row["mean_waiters"] - lq) < row["mean_waiters_ci95"] < 0.5
    over = cv.waiters_by_length({"band": {"wakeup_us": 198.0, "context_switch_us": 2.0}}, 499, (2_000, 8_000),
                                seeds=(1, 2, 3)).set_index("requests")
    assert list(over["run"]) == ["band", "band"] and len(cv.GROWTH_SEEDS) == 8
    assert (over.loc[8_000, "mean_waiters"] - over.loc[8_000, "mean_waiters_ci95"]
            > over.loc[2_000, "mean_waiters"] + over.loc[2_000, "mean_waiters_ci95"])
    with pytest.raises(ValueError, match="seeds"):
        cv.waiters_by_length({"band": {}}, 499, (2_000,), seeds=())


def test_whites_example_table_quotes_his_figures_and_the_models():
    handoffs = {"free": {"wakeup_us": 0.0, "context_switch_us": 0.0},
                "calibrated": {"wakeup_us": WAKEUP_US, "context_switch_us": CONTEXT_SWITCH_US},
                "200 µs": {"wakeup_us": 198.0, "context_switch_us": 2.0}}
    runs = {name: cv.run(arrival_rate_per_s=1000, arrivals="even", requests=1000, **kw) for name, kw in handoffs.items()}
    sat = cv.saturation_table(runs, {name: kw["wakeup_us"] + kw["context_switch_us"] for name, kw in handoffs.items()})
    table = cv.whites_example_table(sat, runs["calibrated"]).set_index("quantity")
    assert table.loc["capacity, even requests, 2 ms hold", "White (2022)"] == "500 req/s"
    assert table.loc["capacity, even requests, 2 ms hold", "model"] == "500.0 req/s"
    assert table.loc["rate below which a queue drains", "model"] == "497.6 (9.7 µs), 454.5 (200 µs)"
    signal = table.loc["LATCH_EX signal wait per wait"]
    assert signal["White (2022)"] == f"2,644 ms / 271,458 = {HANDOFF_US:.1f} µs" and signal["model"] == f"{HANDOFF_US:.1f} µs"
    assert table["basis"].str.startswith("input").all()
    with pytest.raises(ValueError, match="saturation has 2 rows"):
        cv.whites_example_table(sat.iloc[:2], runs["calibrated"])


def _counters(acquires: int, waits: int, wait_ms: float, signal_ms: float, elapsed_ms: float) -> SimpleNamespace:
    """A run's DMV tables, as much of them as the convoy-or-overload test and Welch's comparison read."""
    return SimpleNamespace(
        latch_stats=pd.DataFrame([{"acquires": acquires, "waiting_requests_count": waits, "wait_time_ms": wait_ms}]),
        wait_stats=pd.DataFrame([{"wait_type": "LATCH_EX", "signal_wait_time_ms": signal_ms}]), elapsed_ms=elapsed_ms)


def test_capacity_without_handoffs_by_hand():
    """1,000 grants in 2 s is X = 500/s; 500 ms of signal wait is s = 1/4, so X / (1 - s) = 666.7/s."""
    test = cv.capacity_without_handoffs(_counters(1_000, 990, 50_000.0, 500.0, 2_000.0))
    assert test == pytest.approx({"x_per_s": 500.0, "signal_share": 0.25, "capacity_per_s": 2_000 / 3}, rel=1e-12)
    with pytest.raises(ValueError, match="signal wait share=1.0"):
        cv.capacity_without_handoffs(_counters(1_000, 990, 50_000.0, 2_000.0, 2_000.0))


def test_welch_beside_a_run_against_the_closed_forms():
    """No hand-off: M/D/1, P(wait) = rho = 0.8 and W = lambda S^2 / (2 (1 - rho)) = 4 ms at 400/s and a 2 ms hold.
    A 100 us hand-off, by hand: rho = 0.84, rho0 = 0.8, P(wait) = 1 - 0.16 / 0.96, E[S1^2] = 4.41,
    Wq = 0.4 x 4.41 / 0.32 + 0.4 x (4 - 4.41) / 1.92 and the wait per acquire Wq + P(wait) x 0.1 ms."""
    run = _counters(1_000, 800, 4_100.0, 10.0, 2_500.0)
    free = cv.welch_beside(run, 400, 0.0)
    assert free == pytest.approx({"welch_pwait": 0.8, "welch_wait_ms": 4.0, "run_pwait": 0.8, "run_wait_ms": 4.1},
                                 rel=1e-12)
    paid = cv.welch_beside(run, 400, 100.0)
    p_wait = 1 - 0.16 / 0.96
    assert paid["welch_pwait"] == pytest.approx(p_wait, rel=1e-12)
    assert paid["welch_wait_ms"] == pytest.approx(0.4 * 4.41 / 0.32 + 0.4 * (4 - 4.41) / 1.92 + p_wait * 0.1, rel=1e-12)
    with pytest.raises(ValueError, match="utilisation"):
        cv.welch_beside(run, 500, 100.0)
