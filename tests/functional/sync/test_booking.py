"""Booking a first sync in several batches against PostgreSQL.

A first sync fills an empty projection; ingest gives the planner statistics after
the first batch (reporting.planner_statistics), so the by-key lookups of the later
batches use the primary key.
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


def tables_with_statistics(syncer: Syncer) -> set[str]:
    with syncer.factory() as session:
        return set(session.execute(sa.text(
            "SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = current_schema()"
        )).scalars())


def test_a_first_sync_booked_in_many_batches_analyses_the_projection_once(
        syncer: Syncer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner, "MAX_BATCH", 7)
    assert tables_with_statistics(syncer).isdisjoint({"current_resources", "events"})
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
    assert {"current_resources", "resource_intervals", "events"} <= (
        tables_with_statistics(syncer))


def test_a_sync_booked_in_one_batch_gives_the_projection_statistics_too(syncer: Syncer):
    assert tables_with_statistics(syncer).isdisjoint({"current_resources", "events"})
    syncer.advance(T1)
    assert syncer.sync_ok(T1)["stats"]["created"] == len(settled_truth(syncer, T1))
    assert {"current_resources", "resource_intervals", "events"} <= (
        tables_with_statistics(syncer))
