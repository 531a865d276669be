from __future__ import annotations

import datetime as dt

from reporting.sync.window import deletion_window

AT = dt.datetime(2026, 3, 10, 12, 0)
SETTLE = dt.timedelta(seconds=60)
MAX = dt.timedelta(days=30)


def test_first_run_asks_for_no_deletions():
    assert deletion_window(AT, None, SETTLE, MAX).since is None


def test_window_opens_at_bound_less_settle():
    bound = AT - dt.timedelta(minutes=10)
    window = deletion_window(AT, bound, SETTLE, MAX)
    assert window.since == bound - SETTLE and not window.clamped


def test_an_outage_of_days_asks_for_the_whole_gap():
    # Six days without a completed run: nova still lists every server deleted since.
    bound = AT - dt.timedelta(days=6)
    window = deletion_window(AT, bound, SETTLE, MAX)
    assert window.since == bound - SETTLE and not window.clamped


def test_window_is_clamped_to_its_bound_only_beyond_it():
    window = deletion_window(AT, AT - dt.timedelta(days=7), SETTLE, dt.timedelta(days=2))
    assert window.since == AT - dt.timedelta(days=2) and window.clamped


def test_told_instant_behind_the_bound_asks_for_the_whole_24_hours():
    window = deletion_window(AT, AT + dt.timedelta(hours=2), SETTLE, MAX)
    assert window.since == AT - dt.timedelta(hours=24) and window.behind_bound
