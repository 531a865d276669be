"""An API outage longer than a day: the next completed run asks nova for every server
deleted since the last completed run, so each instance delete is dated at nova's
instant, never at the poll, and nothing live is deleted."""

from __future__ import annotations

import datetime as dt

from prometheus_client import REGISTRY

from mapping.event import format_timestamp
from simcloud.faults import SERVICES
from tests.functional.sync.conftest import CLOUD, START, Syncer, naive

SETTLE = dt.timedelta(seconds=60)
T1 = START + dt.timedelta(hours=6)
OUTAGE = dt.timedelta(days=6)


def _clamped_runs() -> float:
    return REGISTRY.get_sample_value("tally_sync_deletion_windows_clamped_total",
                                     {"cloud": CLOUD}) or 0.0


def test_a_six_day_outage_dates_every_instance_delete_at_novas_instant(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    # The whole cloud's API down (every service at 503): every run of the outage fails,
    # whatever token the run process kept from the run before.
    for service in SERVICES:
        syncer.world.world.faults.set(service, status=503)
    at = T1
    while at < T1 + OUTAGE:
        at += dt.timedelta(hours=12)
        syncer.advance(at)
        assert syncer.sync(at).status_code == 500
    syncer.world.world.faults.clear()
    clamped_before = _clamped_runs()
    end = T1 + OUTAGE
    run = syncer.sync_ok(end)

    stats = run["stats"]
    assert stats["deletion_window"] == {  # the whole gap, not clamped
        "since": format_timestamp(T1 - SETTLE), "clamped": False, "deleted_at_poll": 0}
    assert _clamped_runs() == clamped_before
    truth = {(r["resource_type"], r["resource_id"]): r for r in syncer.truth(end)}
    deletes = syncer.events(event_type="sync.delete")
    assert stats["deleted"] == len(deletes) > 0
    # Zero deletes of live resources.
    assert [e.resource_id for e in deletes
            if truth[(e.resource_type, e.resource_id)]["live"]] == []
    instance_deletes = [e for e in deletes if e.resource_type == "instance"]
    gone = [r for r in syncer.truth(end, resource_type="instance", live=False)
            if naive(r["deleted_at"]) > T1.replace(tzinfo=None)
            and naive(r["created_at"]) < (T1 - SETTLE).replace(tzinfo=None)]
    assert len(gone) > 3 and len(instance_deletes) == len(gone)
    for event in instance_deletes:
        record = truth[("instance", event.resource_id)]
        assert event.payload["provider"]["dated_by"] == "platform", event.payload
        assert event.timestamp == naive(record["deleted_at"])
