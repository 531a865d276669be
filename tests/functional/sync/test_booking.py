"""Booking a first sync in several batches.

A first sync fills an empty projection batch after batch, with no planner
statistics (the request path never analyses; autovacuum does): every batch is
booked and the rows match the cloud.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
import sqlalchemy as sa

from reporting.db.models import Event
from reporting.sync import reconcile
from reporting.sync.api import SERVICE_KEY
from reporting.sync.stats import empty_stats
from tests.functional.sync.conftest import CLOUD, START, Syncer
from tests.functional.sync.test_rules import assert_rows_match, settled_truth

T1 = START + dt.timedelta(hours=6)


def test_a_first_sync_booked_in_many_batches(
        syncer: Syncer, monkeypatch: pytest.MonkeyPatch):
    # The run's work, in this process (a run's own process cannot be patched): a
    # batch of 7 instead of the wire limit.
    monkeypatch.setattr(reconcile, "MAX_BATCH", 7)
    sizes: list[int] = []
    real_ingest = reconcile.ingest

    def counted(factory, events, **kwargs):
        sizes.append(len(events))
        return real_ingest(factory, events, **kwargs)

    monkeypatch.setattr(reconcile, "ingest", counted)
    syncer.advance(T1)
    stats = empty_stats()
    entry = syncer.app.extensions[SERVICE_KEY].clouds[CLOUD]
    reconcile.reconcile(syncer.app.config["TALLY_CONF"], syncer.factory, entry, "batches",
                        T1.replace(tzinfo=None), time.monotonic() + 60, stats)
    stats["error_count"] = len(stats["errors"])
    settled = settled_truth(syncer, T1)
    assert len(settled) > 3 * 7  # several batches after the first
    assert stats["created"] == len(settled) and stats["error_count"] == 0
    assert stats["restated"] == len(settled)
    assert_rows_match(syncer, settled)
    # Every create (each dated at a creation instant before the poll) and its
    # restatement at the poll, booked together in batches of at most 7 events.
    with syncer.factory() as session:
        assert session.execute(
            sa.select(sa.func.count()).select_from(Event)).scalar_one() == 2 * len(settled)
    assert sizes and max(sizes) <= 7 and all(size % 2 == 0 for size in sizes)
    assert sum(sizes) == 2 * len(settled)
