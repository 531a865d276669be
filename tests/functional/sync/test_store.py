"""The run's database side on both backends (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from reporting.db import engine as db_engine
from reporting.db import migrations
from reporting.ingest import ingest_events
from reporting.sync import lock, store
from reporting.sync.observation import SizeNameEntry
from tests.functional.sync.conftest import collector_create

T = dt.datetime(2026, 11, 2, 12, 0)


@pytest.fixture(params=["sqlite", "postgresql"])
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> sessionmaker[Session]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tally.sqlite'}"
    else:
        url = str(request.getfixturevalue("pg_database"))
    migrations.upgrade(url)
    engine = db_engine.make_engine(url)
    request.addfinalizer(engine.dispose)
    return db_engine.make_sessionmaker(engine)


def test_sightings_keep_the_newest_instant_and_forget_deleted_rows(factory):
    keys = [("volume", "v1"), ("volume", "v2")]
    store.record_sightings(factory, "openstack", "sim", keys, T)
    store.record_sightings(factory, "openstack", "sim", keys[:1], T - dt.timedelta(hours=1))
    assert store.last_seen(factory, "sim", keys + [("volume", "v3")]) == {
        ("volume", "v1"): T, ("volume", "v2"): T}
    create = collector_create("volume", "v2", T - dt.timedelta(days=1),
                              size={"size_gb": 1, "type": "ssd"})
    delete = {**create, "event_id": "del-v2", "event_type": "volume.delete.end",
              "timestamp": "2026-11-02T12:30:00Z", "payload": {}}
    assert [r.status for r in ingest_events(factory, [create, delete],
                                            require_size_schema=False)] == ["stored"] * 2
    assert store.held_deleted(factory, "openstack", "sim", keys) == {("volume", "v2")}
    store.record_sightings(factory, "openstack", "sim", keys[:1], T + dt.timedelta(hours=1))
    assert store.last_seen(factory, "sim", keys) == {("volume", "v1"): T + dt.timedelta(hours=1)}


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
