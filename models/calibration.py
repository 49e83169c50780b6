"""Measured costs every chapter shares, each derived once here from a cited measurement.

The hand-off is what a fair latch loses between one owner's release and the
next owner's first instruction: the waiter's wake-up plus the scheduler's
switch to it.  SQL Server reports exactly that interval as signal wait, so
White's fair run (NESTING_TRANSACTION_FULL, trace flag 3933 off) gives it
directly: 2,644 ms of signal wait over 271,458 LATCH_EX waits.  It is that
latch's hand-off on that machine, derived from his totals (it also holds any
time a woken waiter queued for a busy scheduler).  Every scenario's default wake-up is taken
from it, but for any other latch class it is an assumption, not a
measurement: the hot-page and version-store chapters refit what depends on
it over a band of wake-ups (1 to 30 us) and show the conclusions as ranges.
"""

from __future__ import annotations

# White (2022), fair run: LATCH_EX signal wait and waits from sys.dm_os_wait_stats.
WHITE_FAIR_SIGNAL_WAIT_MS = 2_644.0
WHITE_FAIR_LATCH_WAITS = 271_458

# Signal wait per waited acquire, rounded to what the book prints: 2,644 ms / 271,458 = 9.7 us.
HANDOFF_US = round(WHITE_FAIR_SIGNAL_WAIT_MS * 1000.0 / WHITE_FAIR_LATCH_WAITS, 1)

# The scheduler's share of it: a Windows thread switch costs about 4,000 to 10,000 cycles (Duffy,
# 2006), about 2 us at 3 GHz; the rest of the signal wait is the waiter's wake-up.
CONTEXT_SWITCH_US = 2.0
WAKEUP_US = round(HANDOFF_US - CONTEXT_SWITCH_US, 1)

# Poché (2023), WideWorldImporters batching test: 23 us a row inserted one call at a time, 4.2 us a row
# for 500 rows in one call.  With a cost c per call and r per row, c + r = 23 and c + 500 r = 2,100, so
# r = 4.16 us: the row's own work, which an insert does under its leaf page's latch; c = 18.84 us is the
# call (its CPU and its commit's log flush, which nothing measured splits).
POCHE_SERIAL_US_PER_ROW = 23.0
POCHE_BATCH500_US_PER_ROW = 4.2
INSERT_ROW_US = (500 * POCHE_BATCH500_US_PER_ROW - POCHE_SERIAL_US_PER_ROW) / 499
INSERT_CALL_US = POCHE_SERIAL_US_PER_ROW - INSERT_ROW_US

# The wake-ups over which a chapter or a fit refits what depends on the hand-off of a latch whose hand-off nobody
# measured: from an idle core that wakes at once to one several times White's.
WAKEUP_BAND_US = (1.0, 30.0)
