"""A row whose newest event was dated far in the future (stored before ingest refused
such events: a floatingip.update.end dated 2099) is no longer deferred as recent by
every run for ever: the run deletes it at the poll (docs/reconciliation.md,
"Instants from the future").  PostgreSQL and the real simulated cloud."""

from __future__ import annotations

import datetime as dt

from tests.functional.sync.conftest import Syncer, collector_create
from tests.functional.sync.test_rules import T1

FAR = dt.datetime(2099, 11, 1, tzinfo=dt.UTC)


def test_a_row_with_an_event_from_the_far_future_is_deleted_at_the_poll(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    ghost = collector_create("volume", "ghost-volume", T1 - dt.timedelta(hours=1),
                             size={"size_gb": 1, "type": "ssd"})
    poison = collector_create("volume", "ghost-volume", FAR)
    poison["event_type"] = "volume.update.end"
    syncer.ingest(ghost, poison)  # the in-process path: no future bound, as before the rule
    later = T1 + dt.timedelta(minutes=10)
    syncer.advance(later)
    run = syncer.sync_ok(later)
    assert run["stats"]["deferred"]["recent"] == 0, run["stats"]
    [delete] = syncer.events(event_type="sync.delete", resource_id="ghost-volume")
    assert delete.timestamp == later.replace(tzinfo=None)
    row = syncer.rows()[("volume", "ghost-volume")]
    assert not row.live and row.deleted_at == later.replace(tzinfo=None)
    # A further run finds nothing to do about it.
    again = T1 + dt.timedelta(minutes=20)
    syncer.advance(again)
    assert syncer.sync_ok(again)["stats"]["deleted"] == 0
