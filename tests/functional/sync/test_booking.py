"""Booking a first sync in several batches.

A first sync fills an empty projection batch after batch, with no planner
statistics (the request path never analyses; autovacuum does): every batch is
booked and the rows match the cloud.
"""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from reporting.db.models import Event
from reporting.sync import runner
from tests.functional.sync.conftest import START, Syncer
from tests.functional.sync.test_rules import assert_rows_match, settled_truth

T1 = START + dt.timedelta(hours=6)


def test_a_first_sync_booked_in_many_batches(
        syncer: Syncer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner, "MAX_BATCH", 7)
    syncer.advance(T1)
    summary = syncer.sync_ok(T1)
    settled = settled_truth(syncer, T1)
    assert len(settled) > 3 * 7  # several batches after the first
    stats = summary["stats"]
    assert stats["created"] == len(settled) and stats["error_count"] == 0
    assert_rows_match(syncer, settled)
    with syncer.factory() as session:
        assert session.execute(
            sa.select(sa.func.count()).select_from(Event)).scalar_one() == len(settled)
