"""Helpers for the convoy chapter: capacities, queue length over time and time-to-convoy detection.

Everything here is a pure function of numbers or of a run's acquire log
(``Result.acquire_log`` from ``models.run(..., record_acquires=N)``), so the
chapter's claims can be tested without plotting anything.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

import models
from models import analytic
from models.book.analysis.fairness import PUBLISHED, RECORDS
from models.book.stored import fitted
from models.statistics import mean_ci

__all__ = ["HOLD_MS", "run", "capacities", "md1_mean_wait_ms", "by_request", "queue_length", "queue_series",
           "drain_time_s", "wait_per_request_ahead", "saturation_table", "whites_example_table", "convoy_onset_ms",
           "wilson_interval", "onset_summary", "onset_shares_text", "dmv_snapshot", "dmv_signature", "signature_of",
           "signature_table", "signature_report", "unfair_idle_us", "onset_sensitivity", "sensitivity_display",
           "escape_probability", "threshold_waiters", "mean_waiters", "waiters_by_length", "GROWTH_SEEDS",
           "whites_fair_signature", "capacity_without_handoffs", "welch_beside", "collapsed"]

HOLD_MS = 2.0  # White's example: every request holds the EX latch for 2 ms


def run(**params: Any) -> "models.Result":
    """One run of the ``convoy`` scenario with the chapter's 2 ms hold (unless ``hold_ms`` is given).

    The run records every request's acquire (``Result.acquire_log``), which the queue-length and
    onset helpers below read.
    """
    params.setdefault("hold_ms", HOLD_MS)
    n = params.get("requests", 20_000) + params.get("initial_queue", 0)
    return models.run("convoy", record_acquires=n, **params)


def capacities(hold_ms: float, handoff_us: float) -> tuple[float, float]:
    """Requests per second one EX latch can serve: (1/hold with no queue, 1/(hold + hand-off) with one)."""
    if hold_ms <= 0 or handoff_us < 0:
        raise ValueError(f"hold_ms={hold_ms} must be > 0 and handoff_us={handoff_us} >= 0")
    return 1000.0 / hold_ms, 1000.0 / (hold_ms + handoff_us / 1000.0)


def unfair_idle_us(rate_per_s: float, handoff_us: float) -> float:
    """Mean idle time of an unfair latch after each release with a queue and Poisson arrivals, in µs.

    Nobody may be running at the release: the latch then waits for the next arrival (exponential,
    rate lambda) or the woken waiter (``handoff_us`` later), whichever comes first, so the idle time
    is E[min(Exp(lambda), h)] = (1 - exp(-lambda h)) / lambda, which tends to h as lambda h -> 0.
    """
    if rate_per_s <= 0 or handoff_us < 0:
        raise ValueError(f"rate_per_s={rate_per_s} must be > 0 and handoff_us={handoff_us} >= 0")
    lam = rate_per_s / 1e6  # per µs
    return -math.expm1(-lam * handoff_us) / lam


def md1_mean_wait_ms(rate_per_s: float, hold_ms: float) -> float:
    """M/D/1 mean wait in queue, Wq = rho S / (2 (1 - rho)), in ms (inf at or above saturation)."""
    rho = rate_per_s * hold_ms / 1000.0
    if rho < 0:
        raise ValueError(f"rate_per_s={rate_per_s} must be >= 0")
    return math.inf if rho >= 1.0 else rho * hold_ms / (2.0 * (1.0 - rho))


def by_request(log: pd.DataFrame) -> pd.DataFrame:
    """The acquire log in request order with each request's wait (request -> running with the latch)."""
    out = log.sort_values(["request_ms", "queue_seq"], kind="stable").reset_index(drop=True)
    return out.assign(wait_ms=out["run_ms"] - out["request_ms"])


def queue_length(log: pd.DataFrame, times_ms: np.ndarray, *, include_holder: bool = False) -> np.ndarray:
    """How many requests wait for the latch at each time (requested, not yet running with it).

    With ``include_holder`` the request running with the latch counts too (requests in the system).
    """
    t = np.asarray(times_ms, dtype=float)
    ends = log["release_ms" if include_holder else "run_ms"].to_numpy()
    arrived = np.searchsorted(np.sort(log["request_ms"].to_numpy()), t, side="right")
    left = np.searchsorted(np.sort(ends), t, side="right")
    return (arrived - left).astype(int)


def queue_series(log: pd.DataFrame, until_ms: float, points: int = 400) -> pd.DataFrame:
    """Queue length sampled on an even time grid from 0 to ``until_ms`` (for a line chart)."""
    t = np.linspace(0.0, until_ms, points)
    return pd.DataFrame({"time_ms": t, "queue": queue_length(log, t)})


def drain_time_s(series: pd.DataFrame) -> float:
    """When a sampled queue (from :func:`queue_series`) first reaches zero after time 0, in seconds; NaN if never."""
    empty = series[(series["time_ms"] > 0) & (series["queue"] == 0)]
    return float(empty["time_ms"].min() / 1000.0) if len(empty) else math.nan


def wait_per_request_ahead(log: pd.DataFrame) -> float:
    """Least-squares slope of a request's wait against the requests waiting ahead of it (ms per request).

    Each waiter ahead must hold the latch (and, under a fair latch, be handed it) before this one runs,
    so the slope estimates the service time per request: the hold, plus the hand-off once a queue exists.
    """
    df = by_request(log)
    req = df["request_ms"].to_numpy()
    ahead = queue_length(df, req) - 1  # the request itself counts as waiting at its own request time
    ahead = np.maximum(ahead, 0)
    if np.ptp(ahead) == 0:
        raise ValueError("no variation in the queue ahead: the slope is undefined")
    slope, _ = np.polyfit(ahead, df["wait_ms"].to_numpy(), 1)
    return float(slope)


def saturation_table(results: Mapping[str, Any], handoffs_us: Mapping[str, float],
                     hold_ms: float = HOLD_MS) -> pd.DataFrame:
    """Saturated runs side by side: 1/(hold + hand-off) against the simulated throughput and service per request.

    ``results`` and ``handoffs_us`` share their keys (a label per hand-off).  The wait per request ahead
    is a least-squares slope, rounded with :func:`models.book.stored.fitted` so it is the same on every CPU.
    """
    rows = []
    for name, res in results.items():
        h = float(handoffs_us[name])
        rows.append({"hand-off (µs)": h, "1/(hold + hand-off) (req/s)": capacities(hold_ms, h)[1],
                     "simulated throughput (req/s)": res.throughput_per_s,
                     "hold + hand-off (ms)": hold_ms + h / 1000.0,
                     "wait per request ahead (ms)": fitted(wait_per_request_ahead(res.acquire_log))})
    return pd.DataFrame(rows)


def whites_example_table(saturation: pd.DataFrame, calibrated: Any, hold_ms: float = HOLD_MS) -> pd.DataFrame:
    """The chapter's model against White (2022): his example's figures and his fair run's signal wait per wait.

    ``saturation`` is :func:`saturation_table` of the saturated runs with no hand-off, the calibrated one and the
    200 us one, in that order; ``calibrated`` is the calibrated run, whose LATCH_EX signal wait per wait is the
    hand-off set from White's.  Every row is an input of the model, and the ``basis`` column says so.
    """
    if len(saturation) != 3:
        raise ValueError(f"saturation has {len(saturation)} rows: give the free, calibrated and 200 us runs' three")
    throughput, ahead = saturation["simulated throughput (req/s)"], saturation["wait per request ahead (ms)"]
    capacity, handoff = saturation["1/(hold + hand-off) (req/s)"], saturation["hand-off (µs)"]
    fair = PUBLISHED["fair"]
    latch_ex = calibrated.wait_stats.set_index("wait_type").loc["LATCH_EX"]
    arithmetic = "input (arithmetic on hold and hand-off)"
    return pd.DataFrame([
        {"quantity": f"capacity, even requests, {hold_ms:g} ms hold", "White (2022)": f"{1000 / hold_ms:,.0f} req/s",
         "model": f"{throughput.iloc[0]:.1f} req/s", "basis": "input: the example's hold"},
        {"quantity": "wait per request ahead", "White (2022)": f"{hold_ms:g} ms",
         "model": f"{ahead.iloc[0]:.3f} ms", "basis": "input: the same hold"},
        {"quantity": "throughput with hand-offs", "White (2022)": f"below {1000 / hold_ms:,.0f} req/s",
         "model": (f"{throughput.iloc[1]:.1f} ({handoff.iloc[1]:g} µs), "
                   f"{throughput.iloc[2]:.1f} ({handoff.iloc[2]:g} µs)"),
         "basis": arithmetic},
        {"quantity": "rate below which a queue drains", "White (2022)": f"{1000 / hold_ms:,.0f} req/s (no hand-off)",
         "model": f"{capacity.iloc[1]:.1f} ({handoff.iloc[1]:g} µs), {capacity.iloc[2]:.1f} ({handoff.iloc[2]:g} µs)",
         "basis": arithmetic},
        {"quantity": "LATCH_EX signal wait per wait",
         "White (2022)": (f"{fair['signal_wait_ms']:,.0f} ms / {fair['latch_waits']:,} = "
                          f"{1000 * fair['signal_wait_ms'] / fair['latch_waits']:.1f} µs"),
         "model": f"{1000 * latch_ex['signal_wait_time_ms'] / latch_ex['waiting_tasks_count']:.1f} µs",
         "basis": "input: sets h"},
    ])


def convoy_onset_ms(request_ms: np.ndarray, wait_ms: np.ndarray, threshold_ms: float) -> float:
    """When the convoy formed: the start of the queue that never emptied again, confirmed by its size at the end.

    A run has convoyed when its last request waited over ``threshold_ms`` (a wait the stable queue
    beside the band does not reach; the chapter uses about ten times Welch's mean wait at 450 req/s).
    The convoy then began with the last request that found the latch free (waited 0): from there on
    every request queued behind another, up to the end of the run.  Just above 1/(hold + hand-off) such a
    queue may still empty later (at 455 req/s and a 200 us hand-off, with probability about 0.4), so
    "convoyed" means "in a queue at the end of the run".  NaN when the last request waited ``threshold_ms``
    or less.
    ``request_ms`` must be in increasing order, ``wait_ms`` aligned with it.
    """
    t = np.asarray(request_ms, dtype=float)
    w = np.asarray(wait_ms, dtype=float)
    if t.shape != w.shape or t.size == 0:
        raise ValueError("request_ms and wait_ms must be non-empty and of equal length")
    if np.any(np.diff(t) < 0):
        raise ValueError("request_ms must be in increasing order")
    if not w[-1] > threshold_ms:
        return math.nan
    free = np.flatnonzero(w <= 0.0)
    return float(t[free[-1]]) if free.size else float(t[0])


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a share ``successes / trials`` (95 % with the default z)."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"successes={successes} must lie in [0, trials={trials}] and trials must be > 0")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def onset_summary(onsets: pd.DataFrame, horizon_s: float) -> pd.DataFrame:
    """Per arrival rate: runs, share that convoyed within the horizon (with its Wilson 95 % interval,
    share_lo to share_hi), and median time to convoy (s)."""
    rows = []
    for rate, grp in onsets.groupby("arrival_rate_per_s", sort=True):
        t = grp["time_to_convoy_s"].to_numpy(dtype=float)
        hit = np.isfinite(t) & (t <= horizon_s)
        censored = np.where(hit, t, math.inf)  # a run that never convoyed counts as "later than any"
        median = float(np.median(censored)) if len(t) else math.nan
        lo, hi = wilson_interval(int(hit.sum()), len(t)) if len(t) else (math.nan, math.nan)
        rows.append({"arrival_rate_per_s": float(rate), "runs": int(len(t)),
                     "convoyed": int(hit.sum()), "share": float(hit.mean()) if len(t) else 0.0,
                     "share_lo": lo, "share_hi": hi,
                     "median_s": median if math.isfinite(median) else math.nan})
    return pd.DataFrame(rows)


def onset_shares_text(summary: pd.DataFrame) -> str:
    """The share of runs that convoyed at each rate, as text ('0% at 430, ..., 100% at 500 req/s').

    Consecutive rates with the same share are merged ('100% at 460-500 req/s').
    """
    groups: list[tuple[int, list[int]]] = []
    for _, r in summary.sort_values("arrival_rate_per_s").iterrows():
        pct, rate = int(round(100 * r["share"])), int(r["arrival_rate_per_s"])
        if groups and groups[-1][0] == pct:
            groups[-1][1].append(rate)
        else:
            groups.append((pct, [rate]))
    parts = [f"{pct}% at {rates[0]}" if len(rates) == 1 else f"{pct}% at {rates[0]}-{rates[-1]}"
             for pct, rates in groups]
    return ", ".join(parts) + " req/s"


def escape_probability(rate_per_s: float, hold_ms: float, handoff_us: float, waiters: float,
                       exact: bool = True) -> float:
    """The chance that a queue of ``waiters`` above 1/(hold + hand-off) ever empties again.

    While a queue exists each service takes a fixed S1 = hold + hand-off, during which a Poisson number of requests
    arrive, m = rate x S1 on average; seen at service ends the queue moves by that number less one, never down by
    more than one, so it ever falls ``waiters`` steps with probability z ** waiters, z the root in (0, 1) of
    z = exp(m (z - 1)) (``exact``, the default; fixed hold and hand-off, as in the chapter).  With ``exact=False``,
    the diffusion approximation: a walk with drift m - 1 and variance m per service, exp(-theta x waiters) with
    theta = 2 (m - 1) / m.  1 at or below 1/S1, where every queue empties.
    """
    m = rate_per_s * (hold_ms + handoff_us / 1000.0) / 1000.0
    if m <= 1.0:
        return 1.0
    if not exact:
        return math.exp(-2.0 * (m - 1.0) / m * waiters)
    # theta = -ln z solves theta = m (1 - exp(-theta)): below it the right side is the larger, above it the smaller
    low, high = 0.0, m
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if mid < m * -math.expm1(-mid) else (low, mid)
    return math.exp(-high * waiters)


def threshold_waiters(threshold_ms: float, hold_ms: float, handoff_us: float) -> float:
    """The waiters ahead of a request that waited ``threshold_ms`` behind a queue served one hold + hand-off each.

    A count, threshold / S1 with S1 = hold + hand-off: the queue a run had when the onset rule flagged it, which
    :func:`escape_probability` asks about.
    """
    if threshold_ms < 0 or hold_ms <= 0 or handoff_us < 0:
        raise ValueError(f"threshold_ms={threshold_ms} must be >= 0, hold_ms={hold_ms} > 0 "
                         f"and handoff_us={handoff_us} >= 0")
    return threshold_ms / (hold_ms + handoff_us / 1000.0)


# The settings the sensitivity table shows, one changed at a time from the chapter's (threshold 1 s, horizon 60 s).
SENSITIVITY_COLUMNS = ((0.5, 60.0), (1.0, 60.0), (2.0, 60.0), (1.0, 30.0), (1.0, 120.0))


def onset_sensitivity(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`onset_summary` of the stored sensitivity runs at every threshold and horizon they were read at.

    ``runs`` has one row per rate, seed, threshold (s) and horizon (s), as
    ``models.book.sweeps.convoy.sensitivity_table`` writes it; the result one row per threshold, horizon and rate.
    """
    out = []
    for (threshold, horizon), grp in runs.groupby(["threshold_s", "horizon_s"], sort=True):
        out.append(onset_summary(grp, horizon).assign(threshold_s=threshold, horizon_s=horizon))
    cols = ["threshold_s", "horizon_s"]
    return pd.concat(out, ignore_index=True)[cols + [c for c in out[0].columns if c not in cols]]


def sensitivity_display(summary: pd.DataFrame, columns=SENSITIVITY_COLUMNS) -> pd.DataFrame:
    """The share that convoyed, in % with its Wilson 95 % interval, one row per rate and one column per setting of
    ``columns`` ((threshold s, horizon s) pairs), read from :func:`onset_sensitivity`."""
    table = summary.set_index(["threshold_s", "horizon_s", "arrival_rate_per_s"])
    rates = sorted(summary["arrival_rate_per_s"].unique())
    out = {"rate (req/s)": [f"{r:.0f}" for r in rates]}
    for threshold, horizon in columns:
        cells = []
        for rate in rates:
            r = table.loc[(threshold, horizon, rate)]
            cells.append(f"{100 * r['share']:.0f} ({100 * r['share_lo']:.0f}–{100 * r['share_hi']:.0f})")
        out[f"{threshold:g} s, {horizon:g} s"] = cells
    return pd.DataFrame(out)


_CHEVRON = ('<span class="sd-summary-state-marker sd-summary-chevron-right"><svg version="1.1" width="1.5em" '
            'height="1.5em" class="sd-octicon sd-octicon-chevron-right" viewBox="0 0 24 24" aria-hidden="true">'
            '<path d="M8.72 18.78a.75.75 0 0 1 0-1.06L14.44 12 8.72 6.28a.751.751 0 0 1 .018-1.042.751.751 0 0 1 '
            '1.042-.018l6.25 6.25a.75.75 0 0 1 0 1.06l-6.25 6.25a.75.75 0 0 1-1.06 0Z"></path></svg></span>')


class collapsed:  # noqa: N801 - used like a function: collapsed(table, "title")
    """A table (any object with ``_repr_html_``) in a closed dropdown, drawn as the book's MyST dropdowns are
    (sphinx-design's markup), for a secondary table the page keeps one click away; ``note`` is a paragraph of
    plain text under the table.  Its plain-text form is the title, the table's text and the note."""

    def __init__(self, table: Any, title: str, note: str = "") -> None:
        self.table, self.title, self.note = table, title, note

    def _repr_html_(self) -> str:
        note = f'<p class="sd-card-text">{html.escape(self.note)}</p>' if self.note else ""
        return ('<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3">'
                f'<summary class="sd-summary-title sd-card-header"><span class="sd-summary-text">'
                f'{html.escape(self.title)}</span>{_CHEVRON}</summary>'
                f'<div class="sd-summary-content sd-card-body docutils">{self.table._repr_html_()}{note}</div>'
                '</details>')

    def __repr__(self) -> str:
        return "\n".join(part for part in (self.title, repr(self.table), self.note) if part)


def dmv_snapshot(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per labelled run: its sys.dm_os_latch_stats row, the LATCH_EX signal wait from
    sys.dm_os_wait_stats, the acquire count (what the latch_acquired event counts) and the elapsed time."""
    rows = []
    for label, res in results.items():
        latch = res.latch_stats.iloc[0]
        wait = res.wait_stats.set_index("wait_type").loc["LATCH_EX"]
        rows.append({"run": label, "latch_class": latch["latch_class"],
                     "waiting_requests_count": int(latch["waiting_requests_count"]),
                     "wait_time_ms": float(latch["wait_time_ms"]), "max_wait_time_ms": float(latch["max_wait_time_ms"]),
                     "signal_wait_time_ms": float(wait["signal_wait_time_ms"]), "acquires": int(latch["acquires"]),
                     "elapsed_ms": float(res.elapsed_ms)})
    return pd.DataFrame(rows)


def dmv_signature(waits: float, wait_time_ms: float, signal_wait_time_ms: float, elapsed_ms: float,
                  acquires: float = math.nan) -> dict[str, float]:
    """What the DMVs say about one hot latch over an interval (deltas between two snapshots).

    ``waits`` and ``wait_time_ms`` come from sys.dm_os_latch_stats (or the LATCH_EX row of
    sys.dm_os_wait_stats), ``signal_wait_time_ms`` from sys.dm_os_wait_stats, ``elapsed_ms`` is the
    interval, and ``acquires`` (every acquire, waited or not) from a count of the latch_acquired event.

    - ``waits_per_acquire``: near 1 when the latch is never found free (a convoy);
    - ``mean_waiters``: tasks waiting on average, wait time over elapsed time (Little's law);
    - ``handoff_time_share``: signal wait over elapsed time, the share of the interval a fair latch spent
      granted to a woken waiter not yet running: the hand-off h plus that waiter's CPU queueing (one latch's
      only when that latch owns the wait type's signal wait);
    - ``signal_per_wait_us`` and ``signal_share``: the hand-off per wait, and its share of each wait.
    """
    if elapsed_ms <= 0 or waits < 0:
        raise ValueError(f"elapsed_ms={elapsed_ms} must be > 0 and waits={waits} >= 0")
    per_wait = (lambda x: x / waits) if waits else (lambda x: math.nan)
    return {"waits_per_acquire": waits / acquires if acquires else math.nan,
            "waits_per_s": waits / (elapsed_ms / 1000.0),
            "avg_wait_ms": per_wait(wait_time_ms),
            "mean_waiters": wait_time_ms / elapsed_ms,
            "signal_per_wait_us": 1000.0 * per_wait(signal_wait_time_ms),
            "signal_share": signal_wait_time_ms / wait_time_ms if wait_time_ms else math.nan,
            "handoff_time_share": signal_wait_time_ms / elapsed_ms}


def whites_fair_signature(band_low_us: float) -> dict[str, float]:
    """White's fair run (:data:`models.book.analysis.fairness.PUBLISHED`) read as :func:`dmv_signature`, with what
    the hand-off band's low end ``band_low_us`` would leave of its signal wait.

    Beside the signature: ``waits_per_record``, his LATCH_EX waits per log record the model writes (near 1 when
    almost every record waited); ``band_low_share`` and ``band_low_share_of_signal``, the time W x h his waits would
    spend in hand-offs of ``band_low_us`` each, as a share of his elapsed time and of his signal wait (the
    calibrated hand-off gives back the whole signal wait by construction: it was set from it).
    """
    if band_low_us < 0:
        raise ValueError(f"band_low_us={band_low_us} is out of range: use 0 or more")
    fair = PUBLISHED["fair"]
    waits = fair["latch_waits"]
    signature = dmv_signature(waits, fair["latch_wait_ms"], fair["signal_wait_ms"], fair["elapsed_s"] * 1000.0)
    return {**signature, "waits_per_record": waits / RECORDS,
            "band_low_share": waits * band_low_us / (fair["elapsed_s"] * 1e6),
            "band_low_share_of_signal": waits * band_low_us / (fair["signal_wait_ms"] * 1000.0)}


def mean_waiters(result: Any) -> float:
    """A run's mean number of waiters on its latch: wait time over elapsed time (Little's law, as in
    :func:`dmv_signature`)."""
    return float(result.latch_stats.iloc[0]["wait_time_ms"]) / float(result.elapsed_ms)


GROWTH_SEEDS = tuple(range(1, 9))  # the seeds the band's growth is read over


def waiters_by_length(handoffs: Mapping[str, Mapping[str, float]], rate_per_s: float, requests: Iterable[int],
                      seeds: Iterable[int] = GROWTH_SEEDS) -> pd.DataFrame:
    """Mean waiters over ``seeds`` with its 95 % half-width, one row per hand-off setting and run length.

    ``handoffs`` maps a label to the run's ``wakeup_us`` and ``context_switch_us``; each run offers ``rate_per_s``
    Poisson requests, ``requests`` of them.  A queue that is stable keeps the same mean as the run grows; one whose
    rate is above 1/(hold + hand-off) grows with the run: the test between overload and a stable queue.
    """
    seeds, lengths = tuple(seeds), tuple(requests)
    if not seeds or not lengths:
        raise ValueError(f"seeds={seeds} and requests={lengths} are out of range: give one or more of each")
    rows = []
    for label, handoff in handoffs.items():
        for length in lengths:
            mean, half_width = mean_ci([mean_waiters(run(arrival_rate_per_s=rate_per_s, requests=length, seed=seed,
                                                         **handoff)) for seed in seeds])
            rows.append({"run": label, "requests": length, "mean_waiters": mean, "mean_waiters_ci95": half_width})
    return pd.DataFrame(rows)


def capacity_without_handoffs(result: Any) -> dict[str, float]:
    """A saturated run's completions X (grants/s), its LATCH_EX signal wait's share s of the interval and X / (1 - s),
    its capacity without hand-offs: the chapter's convoy-or-overload test (an offer between X and X / (1 - s) is a convoy).
    """
    latch = result.latch_stats.iloc[0]
    signal_ms = float(result.wait_stats.set_index("wait_type").loc["LATCH_EX", "signal_wait_time_ms"])
    elapsed_ms = float(result.elapsed_ms)
    x_per_s = 1000.0 * float(latch["acquires"]) / elapsed_ms
    share = signal_ms / elapsed_ms
    if share >= 1:
        raise ValueError(f"signal wait share={share} is out of range: a latch's signal wait is below its interval")
    return {"x_per_s": x_per_s, "signal_share": share, "capacity_per_s": x_per_s / (1 - share)}


def welch_beside(result: Any, rate_per_s: float, handoff_us: float, hold_ms: float = HOLD_MS) -> dict[str, float]:
    """Welch's stable fair queue (:func:`models.analytic.fair_handoff_queue`, fixed hold) at a run's offered rate,
    beside the run: each one's chance that an acquire waits and mean latch wait per acquire (ms)."""
    queue = analytic.fair_handoff_queue(rate_per_s / 1000.0, hold_ms, hold_ms ** 2, handoff_us / 1000.0)
    latch = result.latch_stats.iloc[0]
    acquires = float(latch["acquires"])
    return {"welch_pwait": queue.prob_wait, "welch_wait_ms": queue.mean_latch_wait,
            "run_pwait": float(latch["waiting_requests_count"]) / acquires,
            "run_wait_ms": float(latch["wait_time_ms"]) / acquires}


def signature_of(result: Any, samples: int = 2000) -> dict[str, float]:
    """:func:`dmv_signature` of one run's own DMV tables, plus how often nobody was waiting.

    ``no_waiter_share`` samples the queue (what sys.dm_os_waiting_tasks would list for the latch) at
    ``samples`` evenly spaced instants while requests arrive; it needs the run's acquire log.
    """
    latch = result.latch_stats.iloc[0]
    wait = result.wait_stats.set_index("wait_type").loc["LATCH_EX"]
    sig = dmv_signature(float(latch["waiting_requests_count"]), float(latch["wait_time_ms"]),
                        float(wait["signal_wait_time_ms"]), float(result.elapsed_ms), float(latch["acquires"]))
    log = result.acquire_log
    if log is not None and len(log):
        t = np.linspace(0.0, float(log["request_ms"].max()), samples)
        sig["no_waiter_share"] = float(np.mean(queue_length(log, t) == 0))
    return sig


def signature_table(results: Mapping[str, Any]) -> pd.DataFrame:
    """:func:`signature_of` for several labelled runs, one row each, with readable column names."""
    names = {"waits_per_acquire": "waits per acquire", "no_waiter_share": "time nobody waits (%)",
             "mean_waiters": "mean waiters", "avg_wait_ms": "avg wait (ms)",
             "signal_per_wait_us": "signal wait per wait (µs)", "handoff_time_share": "signal wait share of time (%)"}
    rows = []
    for label, res in results.items():
        sig = signature_of(res)
        row = {"run": label}
        for key, title in names.items():
            value = sig.get(key, math.nan)
            row[title] = 100.0 * value if title.endswith("(%)") else value
        rows.append(row)
    return pd.DataFrame(rows)


# (label, source, key, format): the rows of :func:`signature_report`, counters first, then what follows from them.
_REPORT_ROWS = (
    ("waiting_requests_count", "dm_os_latch_stats", "waiting_requests_count", "{:,.0f}"),
    ("wait_time_ms", "dm_os_latch_stats", "wait_time_ms", "{:,.0f}"),
    ("max_wait_time_ms", "dm_os_latch_stats", "max_wait_time_ms", "{:,.1f}"),
    ("signal_wait_time_ms", "dm_os_wait_stats", "signal_wait_time_ms", "{:,.1f}"),
    ("acquires", "latch_acquired events", "acquires", "{:,.0f}"),
    ("elapsed (ms)", "the interval", "elapsed_ms", "{:,.0f}"),
    ("waits per acquire", "waits / acquires", "waits_per_acquire", "{:.4f}"),
    ("time nobody waits (%)", "dm_os_waiting_tasks samples", "no_waiter_share", "{:.1%}"),
    ("mean waiters", "wait time / elapsed", "mean_waiters", "{:,.1f}"),
    ("avg wait (ms)", "wait time / waits", "avg_wait_ms", "{:,.1f}"),
    ("signal wait per wait (µs)", "signal wait / waits", "signal_per_wait_us", "{:,.1f}"),
    ("signal wait / elapsed (% of this run)", "signal wait / elapsed", "handoff_time_share", "{:.2%}"),
)


def signature_report(results: Mapping[str, Any], samples: int = 2000) -> pd.DataFrame:
    """The DMV counters of several labelled runs and the convoy signature computed from them, as text.

    One row per counter or derived quantity, one column per run (plus where the number comes from on
    a real server), formatted for reading: the counters of :func:`dmv_snapshot`, then
    :func:`signature_of`.
    """
    snap = dmv_snapshot(results).set_index("run")
    cols: dict[str, list[str]] = {"counter": [r[0] for r in _REPORT_ROWS], "from": [r[1] for r in _REPORT_ROWS]}
    for label, res in results.items():
        values = {**snap.loc[label].to_dict(), **signature_of(res, samples)}
        cols[label] = [fmt.format(values[key]).replace("%", " %") for _, _, key, fmt in _REPORT_ROWS]
    return pd.DataFrame(cols)
