"""The rules of docs/reconciliation.md, one test each, against tally-simcloud and PostgreSQL.

No collector runs here: every difference the sync finds is one it must book (or
defer), so the truth of the simulated cloud says exactly what each run owes.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from mapping.event import correction_event_id, format_timestamp
from reporting.ingest import ingest
from tests.functional.sync.conftest import CLOUD, START, Syncer, collector_create, naive

SETTLE = dt.timedelta(seconds=60)
T1 = START + dt.timedelta(hours=6)


def is_recent(record: dict[str, Any], at: dt.datetime) -> bool:
    return naive(record["updated_at"]) >= (at - SETTLE).replace(tzinfo=None)


def settled_truth(syncer: Syncer, at: dt.datetime) -> list[dict[str, Any]]:
    """Live resources a run at ``at`` must have booked (not in transition, not recent)."""
    return [r for r in syncer.truth(at, live=True)
            if not r["in_transition"] and not is_recent(r, at)]


def restates(event: Any) -> bool:
    """Whether ``event`` restates a create at its run's poll (not a correction of its own)."""
    return event.payload["provider"].get("restates") == "sync.create"


def updates(syncer: Syncer, **filters: Any) -> list[Any]:
    """The ``sync.update`` corrections booked, without the creates' restatements."""
    return [e for e in syncer.events(event_type="sync.update", **filters) if not restates(e)]


def assert_rows_match(syncer: Syncer, records: list[dict[str, Any]]) -> None:
    rows = syncer.rows()
    for record in records:
        row = rows[(record["resource_type"], record["resource_id"])]
        assert row.live, record
        assert (row.project_id, row.state, row.size) == (
            record["project_id"], record["state"], record["size"]), record


def test_first_sync_books_the_cloud_then_a_further_sync_books_nothing(syncer: Syncer):
    syncer.advance(T1)
    summary = syncer.sync_ok(T1)
    live = syncer.truth(T1, live=True)
    transition = [r for r in live if r["in_transition"]]
    recent = [r for r in live if not r["in_transition"] and is_recent(r, T1)]
    settled = settled_truth(syncer, T1)
    assert settled and summary["status"] == "completed"
    stats = summary["stats"]
    assert stats["created"] == len(settled)
    assert stats["deferred"] == {"transition": len(transition), "recent": len(recent)}
    assert stats["updated"] == stats["deleted"] == stats["error_count"] == 0
    assert stats["enumerated_types"] == [
        "floating_ip", "image", "instance", "loadbalancer", "volume"]
    assert stats["deletion_window"] == {  # first run
        "since": None, "clamped": False, "deleted_at_poll": 0}
    assert_rows_match(syncer, settled)
    # Every create is dated at the platform's creation instant.
    for event in syncer.events(event_type="sync.create"):
        record = next(r for r in settled if r["resource_id"] == event.resource_id)
        assert event.timestamp == naive(record["created_at"])
        assert event.source == "reconciliation"
        assert event.event_id == correction_event_id(
            summary["id"], "openstack", CLOUD, event.resource_type, event.resource_id, "create")
    again = syncer.sync_ok(T1)["stats"]
    assert (again["created"], again["updated"], again["deleted"]) == (0, 0, 0)


def test_changes_between_runs_are_booked_and_dated_by_kind(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    t2 = T1 + dt.timedelta(hours=12)
    syncer.advance(t2)
    run = syncer.sync_ok(t2)
    assert run["stats"]["deletion_window"]["since"] == format_timestamp(T1 - SETTLE)
    gone = [r for r in syncer.truth(t2, live=False)
            if naive(r["deleted_at"]) > T1.replace(tzinfo=None)
            and naive(r["created_at"]) < (T1 - SETTLE).replace(tzinfo=None)]
    assert any(r["resource_type"] == "instance" for r in gone)
    assert any(r["resource_type"] != "instance" for r in gone)
    deletes = {e.resource_id: e for e in syncer.events(event_type="sync.delete")}
    for record in gone:
        event = deletes.get(record["resource_id"])
        if event is None:  # it had no settled row at T1 (created or changed inside the window)
            assert record["resource_id"] not in {k[1] for k in syncer.rows()} or \
                not syncer.rows()[(record["resource_type"], record["resource_id"])].live
            continue
        provider = event.payload["provider"]
        if record["resource_type"] == "instance":
            # nova's deleted listing: the platform's own instant
            assert event.timestamp == naive(record["deleted_at"])
            assert provider["dated_by"] == "platform"
        else:
            # by absence: at poll, with the last run that saw it alive
            assert event.timestamp == t2.replace(tzinfo=None)
            assert provider == {"sync_run_id": run["id"], "dated_by": "poll",
                                "polled_at": format_timestamp(t2),
                                "last_seen_alive": format_timestamp(T1)}
    assert run["stats"]["deleted"] == len(deletes) > 0
    assert run["stats"]["updated"] > 0
    for event in updates(syncer):
        assert event.timestamp == t2.replace(tzinfo=None)
    for event in syncer.events(event_type="sync.update"):
        assert event.timestamp in {T1.replace(tzinfo=None), t2.replace(tzinfo=None)}
    assert_rows_match(syncer, settled_truth(syncer, t2))


def test_deferred_deletion_is_booked_next_run_at_the_platform_instant(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    deleted = sorted(
        (r for r in syncer.truth(T1 + dt.timedelta(days=2), live=False, resource_type="instance")
         if naive(r["deleted_at"]) > T1.replace(tzinfo=None) + SETTLE
         and naive(r["created_at"]) < (T1 - SETTLE).replace(tzinfo=None)),
        key=lambda r: r["deleted_at"])
    target = deleted[0]
    at = naive(target["deleted_at"]).replace(tzinfo=dt.UTC) + dt.timedelta(seconds=30)
    syncer.advance(at)
    run = syncer.sync_ok(at)
    assert run["stats"]["deferred"]["recent"] >= 1
    assert syncer.rows()[("instance", target["resource_id"])].live
    later = at + dt.timedelta(minutes=10)
    syncer.advance(later)
    syncer.sync_ok(later)
    [event] = syncer.events(event_type="sync.delete", resource_id=target["resource_id"])
    # The window opened at the deferring run's start less the settle window.
    assert event.timestamp == naive(target["deleted_at"])


def test_absence_pass_respects_the_rows_newest_event(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    ghost = collector_create("volume", "ghost-volume", T1 - dt.timedelta(seconds=10),
                             size={"size_gb": 1, "type": "ssd"})
    syncer.ingest(ghost)
    run = syncer.sync_ok(T1)
    assert run["stats"]["deleted"] == 0 and run["stats"]["deferred"]["recent"] >= 1
    later = T1 + dt.timedelta(minutes=5)
    syncer.advance(later)
    syncer.sync_ok(later)
    [event] = syncer.events(event_type="sync.delete", resource_id="ghost-volume")
    assert event.timestamp == later.replace(tzinfo=None)
    assert event.payload["provider"]["dated_by"] == "poll"
    assert event.payload["provider"]["last_seen_alive"] is None  # no run ever listed it


def test_row_held_as_deleted_is_never_revived(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    record = settled_truth(syncer, T1)[0]
    delete = collector_create(record["resource_type"], record["resource_id"],
                              T1 - dt.timedelta(hours=1))
    delete["event_type"] = "sync.delete"
    delete["event_id"] = "operator-delete"
    syncer.ingest(delete)
    later = T1 + dt.timedelta(minutes=10)
    syncer.advance(later)
    syncer.sync_ok(later)
    row = syncer.rows()[(record["resource_type"], record["resource_id"])]
    assert not row.live
    events = syncer.events(resource_id=record["resource_id"])
    # The create, its restatement at T1's poll, the delete; the delete stands.
    assert sorted(e.event_type for e in events) == ["sync.create", "sync.delete",
                                                    "sync.update"]


def test_clamp_of_the_deleted_servers_window_to_its_bound(syncer: Syncer):
    from prometheus_client import REGISTRY

    def clamped_runs() -> float:
        return REGISTRY.get_sample_value("tally_sync_deletion_windows_clamped_total",
                                         {"cloud": CLOUD}) or 0.0

    syncer.app.config["TALLY_CONF"].set_override("deletion_window_max_days", 1,
                                                  group="sync")
    syncer.advance(T1)
    syncer.sync_ok(T1)
    before = clamped_runs()
    t3 = T1 + dt.timedelta(days=3)
    syncer.advance(t3)
    run = syncer.sync_ok(t3)
    window = run["stats"]["deletion_window"]
    assert {k: window[k] for k in ("since", "clamped")} == {
        "since": format_timestamp(t3 - dt.timedelta(hours=24)), "clamped": True}
    assert clamped_runs() == before + 1
    polled = [e for e in syncer.events(event_type="sync.delete", resource_type="instance")
              if e.payload["provider"]["dated_by"] == "poll"]
    # The run's stats say how many instance deletes the clamp left to the poll.
    assert window["deleted_at_poll"] == len(polled) > 0
    floor = (t3 - dt.timedelta(hours=24)).replace(tzinfo=None)
    gone = [r for r in syncer.truth(t3, live=False, resource_type="instance")
            if naive(r["created_at"]) < (T1 - SETTLE).replace(tzinfo=None)
            and naive(r["deleted_at"]) > T1.replace(tzinfo=None)]
    deletes = {e.resource_id: e for e in syncer.events(event_type="sync.delete",
                                                       resource_type="instance")}
    old = [r for r in gone if naive(r["deleted_at"]) < floor and r["resource_id"] in deletes]
    new = [r for r in gone if naive(r["deleted_at"]) > floor and r["resource_id"] in deletes]
    assert old and new
    for record in old:  # outside the clamped window: found by absence, dated at poll
        event = deletes[record["resource_id"]]
        assert event.timestamp == t3.replace(tzinfo=None)
        assert event.payload["provider"]["dated_by"] == "poll"
    for record in new:
        assert deletes[record["resource_id"]].timestamp == naive(record["deleted_at"])


def test_told_instant_going_backwards(syncer: Syncer, capfd):
    # With the settle window on, a row whose newest event lies after the told
    # instant is deferred; with it off the correction still lands, one microsecond
    # past that event.
    syncer.app.config["TALLY_CONF"].set_override("settle_s", 0, group="sync")
    t2 = T1 + dt.timedelta(hours=2)
    syncer.advance(t2)
    syncer.sync_ok(t2)
    record = next(r for r in settled_truth(syncer, t2) if r["resource_type"] == "volume")
    newest = t2 + dt.timedelta(hours=1)
    drift = collector_create("volume", record["resource_id"], newest,
                             project=record["project_id"], size=record["size"])
    drift["event_type"] = "volume.resize.end"
    drift["payload"]["state"] = "error"
    syncer.ingest(drift)
    told = t2 - dt.timedelta(minutes=30)
    capfd.readouterr()
    run = syncer.sync_ok(told)
    # Logged by the run's own process, on the service's stderr.
    logged = [line for line in capfd.readouterr().err.splitlines()
              if "WARNING reporting.sync.reconcile" in line]
    assert len(logged) == 1 and "behind the last completed run" in logged[0], logged
    assert run["stats"]["deletion_window"] == {
        "since": format_timestamp(told - dt.timedelta(hours=24)), "clamped": True,
        "deleted_at_poll": 0}
    assert run["started_at"] == format_timestamp(told)
    [update] = updates(syncer, resource_id=record["resource_id"])
    assert update.timestamp == newest.replace(tzinfo=None) + dt.timedelta(microseconds=1)
    assert syncer.rows()[("volume", record["resource_id"])].state == record["state"]


def test_create_over_an_update_only_row_is_dated_past_its_newest_event(syncer: Syncer):
    syncer.advance(T1)
    record = settled_truth(syncer, T1)[0]
    newest = naive(record["created_at"]) + dt.timedelta(seconds=5)
    orphan = collector_create(record["resource_type"], record["resource_id"],
                              newest.replace(tzinfo=dt.UTC), project=record["project_id"])
    orphan["event_type"] = "compute.instance.power_off"  # an update: no create seen
    syncer.ingest(orphan)
    assert not syncer.rows()[(record["resource_type"], record["resource_id"])].live
    syncer.sync_ok(T1)
    [create] = syncer.events(event_type="sync.create", resource_id=record["resource_id"])
    assert create.timestamp == newest + dt.timedelta(microseconds=1)
    assert syncer.rows()[(record["resource_type"], record["resource_id"])].live


def test_corrections_are_deterministic_and_replay_as_duplicates(syncer: Syncer):
    syncer.advance(T1)
    run = syncer.sync_ok(T1)
    events = syncer.events(source="reconciliation")
    assert events
    for event in events:
        assert event.event_id == correction_event_id(
            run["id"], "openstack", CLOUD, event.resource_type, event.resource_id,
            event.event_type.removeprefix("sync."))
        assert event.payload["provider"]["sync_run_id"] == run["id"]
    replay = [{
        "event_id": e.event_id, "event_type": e.event_type, "platform": e.platform,
        "cloud": e.cloud, "resource_type": e.resource_type, "resource_id": e.resource_id,
        "project_id": e.project_id, "timestamp": format_timestamp(e.timestamp),
        "source": e.source, "payload": e.payload} for e in events]
    results = ingest(syncer.factory, replay, require_size_schema=True)
    assert {r.status for r in results} == {"duplicate"}


def test_size_names_hold_every_volume_type_private_too(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    import sqlalchemy as sa

    from reporting.db.models import SizeName
    with syncer.factory() as session:
        names = {(n.size_id, n.name) for n in session.execute(sa.select(SizeName)).scalars()}
    assert names == set(syncer.world.world.volume_types().items())
    assert any(name == "gold-private" for _, name in names)


def test_runs_are_counted_in_the_metrics_of_spec_6(syncer: Syncer):
    from prometheus_client import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, {"cloud": CLOUD, **labels}) or 0.0

    before = {
        "runs": value("tally_sync_runs_total", status="completed"),
        "created": value("tally_sync_resources_reconciled_total", action="created"),
        "transition": value("tally_sync_resources_deferred_total", reason="transition"),
        "ingested": value("tally_ingest_events_total", source="reconciliation",
                          outcome="stored"),
    }
    syncer.advance(T1)
    stats = syncer.sync_ok(T1)["stats"]
    assert value("tally_sync_runs_total", status="completed") == before["runs"] + 1
    assert value("tally_sync_resources_reconciled_total", action="created") == \
        before["created"] + stats["created"]
    assert value("tally_sync_resources_deferred_total", reason="transition") == \
        before["transition"] + stats["deferred"]["transition"]
    # Each create dated before the poll is booked with its restatement at the poll.
    restated = len([e for e in syncer.events(event_type="sync.update") if restates(e)])
    assert 0 < restated <= stats["created"]
    # The run's stats count them: its events add up from its stats alone.
    assert stats["restated"] == restated
    assert value("tally_ingest_events_total", source="reconciliation", outcome="stored") == \
        before["ingested"] + stats["created"] + restated
    assert value("tally_sync_last_completed_timestamp") > 0


def test_update_in_transition_is_deferred_until_it_settles(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    rows = syncer.rows()
    # An instant at which a resource with a settled row is in transition.
    moment, record = None, None
    for minute in range(1, 48 * 60):
        t = T1 + dt.timedelta(minutes=minute)
        found = [r for r in syncer.truth(t, live=True) if r["in_transition"]
                 and (r["resource_type"], r["resource_id"]) in rows
                 and rows[(r["resource_type"], r["resource_id"])].live]
        if found:
            moment, record = t, found[0]
            break
    assert moment is not None and record is not None
    key = (record["resource_type"], record["resource_id"])
    # The projection disagrees with the platform (a lost notification, say), from after
    # T1's run restated what it created.
    drift = collector_create(record["resource_type"], record["resource_id"],
                             T1 + dt.timedelta(seconds=1), project=record["project_id"])
    drift["event_type"] = "test.drift"  # an update by the verb rule
    drift["event_id"] = "drifted"
    drift["payload"]["state"] = "drifted"
    syncer.ingest(drift)
    syncer.advance(moment)
    run = syncer.sync_ok(moment)
    assert run["stats"]["deferred"]["transition"] >= 1
    assert syncer.rows()[key].state == "drifted"
    assert not updates(syncer, resource_id=record["resource_id"])
    settled = next(t for t in (moment + dt.timedelta(minutes=m) for m in range(1, 24 * 60))
                   if not next(r for r in syncer.truth(t) if r["resource_id"] == key[1])
                   ["in_transition"])
    later = settled + dt.timedelta(minutes=10)
    syncer.advance(later)
    syncer.sync_ok(later)
    truth = next(r for r in syncer.truth(later) if r["resource_id"] == key[1])
    assert truth["live"]  # the seeded world keeps this one alive
    assert syncer.rows()[key].state == truth["state"]
    [update] = updates(syncer, resource_id=key[1])
    assert update.timestamp == later.replace(tzinfo=None)


def test_a_late_collector_fact_does_not_outlive_the_creates_observation(syncer: Syncer):
    """The e2e month's load balancer: its create.end (no listeners yet) is still in
    the collector when a run, after octavia added listeners and pools, books its create
    at the creation instant; the notification then arrives, dated between the creation
    and the poll.  What the run observed must stay the resource's from the poll on, not
    wait for the next run."""
    world = syncer.world.world
    lb = next(r for r in world.resources
              if r.kind == "loadbalancer" and r.created_at > START.timestamp()
              and len(r.phases) >= 4 and r.phases[1].size == (0, 0)
              and r.phases[3].size != (0, 0))
    counted = lb.phases[3]  # ACTIVE with its listeners and pools
    at = dt.datetime.fromtimestamp(counted.at, dt.UTC) + 2 * SETTLE
    assert lb.deleted_at is None or lb.deleted_at > at.timestamp()
    assert len(lb.phases) == 4 or lb.phases[4].at > at.timestamp()
    syncer.advance(at)
    run = syncer.sync_ok(at)
    [create] = syncer.events(event_type="sync.create", resource_id=lb.id)
    assert create.timestamp == naive(format_timestamp(
        dt.datetime.fromtimestamp(lb.created_at, dt.UTC)))
    late = collector_create("loadbalancer", lb.id,
                            dt.datetime.fromtimestamp(lb.ready_at, dt.UTC),
                            project=counted.project, size={"listeners": 0, "pools": 0})
    syncer.ingest(late)
    [record] = [r for r in syncer.truth(at) if r["resource_id"] == lb.id]
    row = syncer.rows()[("loadbalancer", lb.id)]
    assert (row.project_id, row.state, row.size) == (
        record["project_id"], record["state"], record["size"]) != (
        counted.project, "active", {"listeners": 0, "pools": 0})
    # Booked as one create (the restatement at the poll counts nowhere); a further run
    # at the same instant finds nothing to book.
    [restated] = syncer.events(event_type="sync.update", resource_id=lb.id)
    assert restated.timestamp == at.replace(tzinfo=None)
    assert restated.payload["provider"] == {"sync_run_id": run["id"], "dated_by": "poll",
                                            "restates": "sync.create"}
    again = syncer.sync_ok(at)["stats"]
    assert (again["created"], again["updated"], again["deleted"]) == (0, 0, 0)
