"""The run's database side on both backends (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from reporting.db import engine as db_engine
from reporting.ingest import ingest
from reporting.sync import lock, store
from reporting.sync.observation import SizeNameEntry
from tests.conftest import migrated_database_url
from tests.functional.sync.conftest import collector_create

T = dt.datetime(2026, 11, 2, 12, 0)


@pytest.fixture(params=["sqlite", "postgresql"])
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> sessionmaker[Session]:
    url = migrated_database_url(request.param, request, tmp_path)
    engine = db_engine.make_engine(url)
    request.addfinalizer(engine.dispose)
    return db_engine.make_sessionmaker(engine)


def test_sightings_open_close_reopen_and_age_out(factory):
    keys = [("volume", "v1"), ("volume", "v2")]
    earlier = T - dt.timedelta(minutes=10)
    store.record_sightings(factory, "sim", keys, earlier, None)  # the first completed run
    # Open sightings were listed by every completed run since: the newest one.
    assert store.last_seen(factory, "sim", keys + [("volume", "v3")], earlier) == {
        ("volume", "v1"): earlier, ("volume", "v2"): earlier}
    store.record_sightings(factory, "sim", keys[:1], T, earlier)  # v2 not listed at T
    later = T + dt.timedelta(minutes=10)
    assert store.last_seen(factory, "sim", keys, T) == {
        ("volume", "v1"): T, ("volume", "v2"): earlier}
    store.record_sightings(factory, "sim", keys, later, T)  # v2 back (a cell came back)
    assert store.last_seen(factory, "sim", keys, later) == {
        ("volume", "v1"): later, ("volume", "v2"): later}
    store.record_sightings(factory, "sim", [], later + dt.timedelta(days=8), later)
    assert store.last_seen(factory, "sim", keys, later) == {}  # closed long ago: forgotten
    assert store.last_seen(factory, "other", keys, later) == {}


def test_a_type_not_listed_completely_closes_no_sighting(factory):
    # Instances below nova 2.69: a server left out may sit in an unreachable cell.
    keys = [("instance", "i1"), ("instance", "i2"), ("volume", "v1")]
    earlier = T - dt.timedelta(minutes=10)
    store.record_sightings(factory, "sim", keys, earlier, None)
    store.record_sightings(factory, "sim", [("instance", "i1")], T, earlier,
                           exhaustive={"volume"})
    assert store.last_seen(factory, "sim", keys, T) == {
        ("instance", "i1"): T, ("instance", "i2"): T, ("volume", "v1"): earlier}


def test_held_deleted_names_rows_the_projection_ended(factory):
    keys = [("volume", "v1"), ("volume", "v2")]
    create = collector_create("volume", "v2", T - dt.timedelta(days=1),
                              size={"size_gb": 1, "type": "ssd"})
    delete = {**create, "event_id": "del-v2", "event_type": "volume.delete.end",
              "timestamp": "2026-11-02T12:30:00Z", "payload": {}}
    live = collector_create("volume", "v1", T - dt.timedelta(days=1),
                            size={"size_gb": 1, "type": "ssd"})
    assert [r.status for r in ingest(factory, [create, delete, live],
                                            require_size_schema=False)] == ["stored"] * 3
    assert store.held_deleted(factory, "openstack", "sim", keys) == {("volume", "v2")}


def test_keyed_reads_find_each_key_of_its_cloud_and_type_only(factory):
    """An incremental run's lookups by key (every type in one statement on
    PostgreSQL): each key's own row, never a row of the same id in another cloud or
    of another type, rows held as deleted told apart."""
    day = T - dt.timedelta(days=1)
    vol = {"size_gb": 1, "type": "ssd"}
    events = [collector_create("volume", "v1", day, size=vol),
              collector_create("instance", "i1", day, project="p-i1"),
              collector_create("volume", "v2", day, size=vol),
              collector_create("loadbalancer", "lb1", day),
              # v3 lives in another cloud; i1's id is also a volume's there.
              {**collector_create("volume", "v3", day, size=vol), "cloud": "other"},
              {**collector_create("volume", "i1", day, size=vol), "cloud": "other",
               "event_id": "other-i1"}]
    events.append({**events[2], "event_id": "del-v2", "event_type": "volume.delete.end",
                   "timestamp": "2026-11-02T12:30:00Z", "payload": {}})
    assert {r.status for r in ingest(factory, events, require_size_schema=False)} == {
        "stored"}
    keys = [("volume", "v1"), ("instance", "i1"), ("volume", "v2"), ("volume", "v3"),
            ("image", "i1"), ("volume", "nowhere")]
    rows = store.projection_rows_by_key(
        factory, "openstack", "sim",
        keys + sorted(store.live_keys(factory, "openstack", "sim", ["loadbalancer"])))
    assert sorted((r.resource_type, r.resource_id, r.project_id) for r in rows) == [
        ("instance", "i1", "p-i1"), ("loadbalancer", "lb1", "p-collector"),
        ("volume", "v1", "p-collector")]
    assert store.held_deleted(factory, "openstack", "sim", keys) == {("volume", "v2")}
    assert store.held_deleted(factory, "openstack", "other", keys) == set()
    store.record_sightings(factory, "sim", keys[:2], T, None)
    store.record_sightings(factory, "other", [("volume", "v1"), ("volume", "v2")], T, None)
    later = T + dt.timedelta(hours=1)
    assert store.last_seen(factory, "sim", keys, later) == {
        ("volume", "v1"): later, ("instance", "i1"): later}


def test_completed_bounds_of_every_run_and_of_full_runs(factory):
    assert store.completed_bounds(factory, "sim") == (None, None)
    for minutes, kind, status in ((0, "full", "completed"), (10, "incremental", "completed"),
                                  (20, "full", "failed")):
        run_id = f"run-{minutes}"
        at = T + dt.timedelta(minutes=minutes)
        store.create_run(factory, run_id, "sim", at)
        store.finish_run(factory, run_id, status, at, {"kind": kind})
    assert store.completed_bounds(factory, "sim") == (T + dt.timedelta(minutes=10), T)
    assert store.completed_bounds(factory, "other") == (None, None)


def test_size_names_are_upserted(factory):
    store.store_size_names(factory, "openstack", "sim",
                           [SizeNameEntry("volume_type", "id-1", "ssd")], T)
    store.store_size_names(factory, "openstack", "sim",
                           [SizeNameEntry("volume_type", "id-1", "fast-ssd")], T)
    from sqlalchemy import select

    from reporting.db.models import SizeName
    with factory() as session:
        assert [(n.size_id, n.name) for n in session.execute(select(SizeName)).scalars()] == [
            ("id-1", "fast-ssd")]


def test_lease_is_exclusive_until_released_or_expired(factory):
    lease = dt.timedelta(minutes=1)
    assert lock.acquire(factory, "sim", "run-a", lease)
    assert not lock.acquire(factory, "sim", "run-b", lease)
    assert lock.acquire(factory, "other", "run-c", lease)
    lock.release(factory, "sim", "run-b")  # not its lease: nothing happens
    assert not lock.acquire(factory, "sim", "run-b", lease)
    lock.release(factory, "sim", "run-a")
    assert lock.acquire(factory, "sim", "run-b", dt.timedelta(seconds=-1))  # already expired
    assert lock.acquire(factory, "sim", "run-d", lease)  # takes the expired lease over
