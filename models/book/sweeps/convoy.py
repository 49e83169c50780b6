"""The convoy chapter's explorer grid, and its time-to-convoy table (``python -m models.book.sweeps.convoy``).

Explorer: arrival rate x wake-up cost x latch policy x arrival process x
initial burst, one EX latch held 2 ms, the calibrated 2 us context switch,
20,000 requests per run and 10 seeds per point (the table holds their mean and
95% interval).  The hand-off is wakeup_us + 2 us, so the wake-up values give
hand-offs of 2, 9.7 (the calibrated default), 100 and 200 us.

Time-to-convoy: Poisson arrivals with a 200 us hand-off, many seeds per
rate; each run lasts the horizon plus a confirmation window, and its onset
is found by :func:`models.book.analysis.convoy.convoy_onset_ms` (the last
time the latch was found free, if the run ends with a wait over 1 s).

Sensitivity of the onset shares: the rates near the line (450 to 465 req/s)
run once for the longest horizon plus the confirmation window, and each shorter
run is read as a prefix of it (a fair FIFO latch's waits before a time depend
only on the arrivals before it); each threshold and horizon of
:data:`SENSITIVITY_THRESHOLDS_MS` x :data:`SENSITIVITY_HORIZONS_S` is then one
reading of the same runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

import models
from models.book.analysis.convoy import by_request, convoy_onset_ms
from models.book.stored import data_dir
from models.book.sweep import Sweep, write_table
from models.calibration import CONTEXT_SWITCH_US, WAKEUP_US

HOLD_MS = 2.0
SWITCH_US = CONTEXT_SWITCH_US

SWEEP = Sweep(
    name="convoy",
    scenario="convoy",
    grid={
        "arrival_rate_per_s": [300, 350, 400, 425, 440, 450, 460, 470, 480, 490, 500, 525, 550],
        "wakeup_us": [0.0, WAKEUP_US, 98.0, 198.0],
        "policy": ["fair", "unfair"],
        "arrivals": ["poisson", "even"],
        "initial_queue": [0, 50],
    },
    fixed={"hold_ms": HOLD_MS, "context_switch_us": SWITCH_US, "requests": 20_000, "seed": 1},
    replications=10,
    doc="One EX latch held 2 ms: wait and throughput against arrival rate, hand-off cost, policy, "
        "arrival process and an initial burst.",
)

# Time to convoy: Poisson arrivals, hand-off 198 + 2 = 200 us (capacities 500 and 454.5 req/s).
ONSET_RATES = [430, 440, 450, 455, 460, 465, 470, 480, 490, 500]
ONSET_SEEDS = 100
ONSET_WAKEUP_US = 198.0
# A convoy: the run's last request waits over 1 s (500 holds), about ten times Welch's stationary mean
# wait at 450 req/s (108.9 ms, models.analytic.fair_handoff_queue), a level the stable queue does not reach;
# its time is when the latch was last found free.
ONSET_THRESHOLD_MS = 500 * HOLD_MS
ONSET_HORIZON_S = 60.0                # onsets counted up to here
ONSET_CONFIRM_S = 60.0                # the run goes on this long after the horizon
ONSET_FILE = "convoy_onset.csv"

# How the shares depend on the definition: the threshold on the last request's wait (half, once and twice the 1 s)
# and the horizon in which the convoy must start (half, once and twice the 60 s), the confirmation window kept.
SENSITIVITY_RATES = [450, 455, 460, 465]
SENSITIVITY_THRESHOLDS_MS = (500.0, ONSET_THRESHOLD_MS, 2000.0)
SENSITIVITY_HORIZONS_S = (30.0, ONSET_HORIZON_S, 120.0)
SENSITIVITY_FILE = "convoy_onset_sensitivity.csv"


def onset_row(rate: float, seed: int) -> dict[str, float | int]:
    """One run's time to convoy in seconds (NaN if none within the horizon)."""
    requests = int(rate * (ONSET_HORIZON_S + ONSET_CONFIRM_S))
    res = models.run("convoy", arrival_rate_per_s=rate, arrivals="poisson", hold_ms=HOLD_MS,
                     wakeup_us=ONSET_WAKEUP_US, context_switch_us=SWITCH_US, requests=requests,
                     seed=seed, record_acquires=requests)
    log = by_request(res.acquire_log)
    onset = convoy_onset_ms(log["request_ms"].to_numpy(), log["wait_ms"].to_numpy(), ONSET_THRESHOLD_MS)
    seconds = onset / 1000.0
    if not seconds <= ONSET_HORIZON_S:  # NaN or after the horizon: no convoy counted
        seconds = float("nan")
    return {"arrival_rate_per_s": rate, "seed": seed, "time_to_convoy_s": seconds,
            "mean_wait_ms": res.mean_wait_ms, "throughput_per_s": res.throughput_per_s}


def sensitivity_rows(rate: float, seed: int) -> list[dict[str, float | int]]:
    """One run at ``rate`` and ``seed``, read at every threshold and horizon of the sensitivity table.

    The run lasts the longest horizon plus :data:`ONSET_CONFIRM_S`; a shorter horizon reads the first
    rate x (horizon + confirmation window) requests, the run :func:`onset_row` would have made.  One row per
    threshold and horizon: the time to convoy in seconds (NaN if none within that horizon).
    """
    longest = max(SENSITIVITY_HORIZONS_S) + ONSET_CONFIRM_S
    requests = int(rate * longest)
    res = models.run("convoy", arrival_rate_per_s=rate, arrivals="poisson", hold_ms=HOLD_MS,
                     wakeup_us=ONSET_WAKEUP_US, context_switch_us=SWITCH_US, requests=requests,
                     seed=seed, record_acquires=requests)
    log = by_request(res.acquire_log)
    t, w = log["request_ms"].to_numpy(), log["wait_ms"].to_numpy()
    rows = []
    for horizon in SENSITIVITY_HORIZONS_S:
        n = int(rate * (horizon + ONSET_CONFIRM_S))  # the requests a run of that length has (as onset_row)
        for threshold in SENSITIVITY_THRESHOLDS_MS:
            seconds = convoy_onset_ms(t[:n], w[:n], threshold) / 1000.0
            rows.append({"arrival_rate_per_s": rate, "seed": seed, "threshold_s": threshold / 1000.0,
                         "horizon_s": horizon, "time_to_convoy_s": seconds if seconds <= horizon else float("nan")})
    return rows


def sensitivity_table(run: Callable[..., list] | None = None) -> pd.DataFrame:
    """:func:`sensitivity_rows` for every rate of :data:`SENSITIVITY_RATES` and the onset table's seeds."""
    arglist = [(rate, seed) for rate in SENSITIVITY_RATES for seed in range(1, ONSET_SEEDS + 1)]
    chunks = [sensitivity_rows(*args) for args in arglist] if run is None else run(sensitivity_rows, arglist,
                                                                                   "convoy onset sensitivity")
    return pd.DataFrame([row for chunk in chunks for row in chunk])


def onset_table(run: Callable[..., list] | None = None) -> pd.DataFrame:
    """Time to convoy for every rate and seed (``run`` maps the runs onto an executor; default: here)."""
    arglist = [(rate, seed) for rate in ONSET_RATES for seed in range(1, ONSET_SEEDS + 1)]
    if run is None:
        return pd.DataFrame([onset_row(*args) for args in arglist])
    return pd.DataFrame(run(onset_row, arglist, "convoy onset"))


def write_extra(out_dir: Path | None = None, run: Callable[..., list] | None = None) -> list[Path]:
    """The time-to-convoy table and its sensitivity table, which `python -m models sweep convoy` writes beside
    the grid."""
    out_dir = data_dir() if out_dir is None else out_dir
    return [write_table(onset_table(run), out_dir / ONSET_FILE),
            write_table(sensitivity_table(run), out_dir / SENSITIVITY_FILE)]


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["sensitivity"]:  # the sensitivity table alone (about 3 minutes on one core)
        print(write_table(sensitivity_table(), data_dir() / SENSITIVITY_FILE))
    else:
        print(write_extra())
