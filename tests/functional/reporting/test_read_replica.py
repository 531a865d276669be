"""Reads from a real PostgreSQL hot standby (``[database] slave_connection``), writes to
the primary, and never a reply older than the caller's own last write
(docs/deployment.md, "Read replicas").

The standby's replay is paused to make it lag on purpose: what a caller then reads
proves which database answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import REGISTRY

from reporting.api.replica_reads import replica_engine
from reporting.app import create_app
from reporting.db import migrations
from reporting.db.replica import ReplicaConfigError
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth
from tests.functional.reporting.streaming_replica import StreamingPair

RESOURCE = "/v1/resources/openstack/c1/instance/{}"


@pytest.fixture(scope="module")
def pair() -> Iterator[StreamingPair]:
    streaming = StreamingPair().start()
    try:
        migrations.upgrade(streaming.primary_url)
        streaming.wait_replayed()
        yield streaming
    finally:
        streaming.stop()


@pytest.fixture
def replica_app(pair: StreamingPair, make_conf: ConfFactory) -> Iterator[Flask]:
    pair.execute_on_standby("SELECT pg_wal_replay_resume()")
    pair.wait_replayed()
    app = create_app(make_conf(pair.primary_url,
                               database={"slave_connection": pair.replica_url}))
    app.config["TESTING"] = True
    yield app
    app.extensions[ENGINE_KEY].dispose()
    engine = replica_engine(app)
    assert engine is not None
    engine.dispose()


def _event(resource_id: str) -> dict[str, Any]:
    return {
        "event_id": f"ev-{resource_id}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "c1", "resource_type": "instance",
        "resource_id": resource_id, "project_id": "p1",
        "timestamp": "2026-01-01T00:00:00Z", "source": "collector",
        "payload": {"state": "active",
                    "size": {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.small"}},
    }


def _ingest(client: FlaskClient, resource_id: str, role: str = "admin") -> None:
    response = client.post("/v1/events", data=json.dumps({"events": [_event(resource_id)]}),
                           headers={**auth(role), "Content-Type": "application/json"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["stored"] == 1


def _status(client: FlaskClient, resource_id: str, role: str) -> int:
    return client.get(RESOURCE.format(resource_id), headers=auth(role)).status_code


def _sessions(database: str, reason: str) -> float:
    return REGISTRY.get_sample_value(
        "tally_api_read_sessions_total", {"database": database, "reason": reason}) or 0.0


def test_a_caller_reads_its_own_write_while_others_read_the_lagging_replica(
        replica_app: Flask, pair: StreamingPair) -> None:
    client = replica_app.test_client()
    assert _status(client, "vm-before", "read") == 404
    pair.execute_on_standby("SELECT pg_wal_replay_pause()")
    _ingest(client, "vm-lagging")  # the admin writes; the standby does not replay it
    # Another caller reads the replica, which has not replayed the write: proof that
    # its reads are answered there.
    replica_reads = _sessions("replica", "no_writes")
    assert _status(client, "vm-lagging", "read") == 404
    assert _sessions("replica", "no_writes") == replica_reads + 1
    # The writer itself is answered by the primary while the replica lags.
    behind = _sessions("primary", "behind")
    assert _status(client, "vm-lagging", "admin") == 200
    assert _sessions("primary", "behind") == behind + 1
    pair.execute_on_standby("SELECT pg_wal_replay_resume()")
    pair.wait_replayed()
    # Once replayed, both read the replica again, and both see the write.
    replayed = _sessions("replica", "replayed")
    assert _status(client, "vm-lagging", "admin") == 200
    assert _sessions("replica", "replayed") == replayed + 1
    assert _status(client, "vm-lagging", "read") == 200


def test_writes_go_to_the_primary_and_record_only_authenticated_callers(
        replica_app: Flask, pair: StreamingPair) -> None:
    client = replica_app.test_client()
    _ingest(client, "vm-ingested", role="ingest")
    refused = client.post("/v1/events", data=json.dumps({"events": [_event("vm-refused")]}),
                          headers={"Authorization": "Bearer nobody",
                                   "Content-Type": "application/json"})
    assert refused.status_code == 401
    primary = sa.create_engine(pair.primary_url, poolclass=sa.pool.NullPool)
    try:
        with primary.connect() as conn:
            callers = set(conn.execute(sa.text("SELECT caller FROM write_positions")).scalars())
            stored = conn.execute(sa.text(
                "SELECT count(*) FROM events WHERE event_id = 'ev-vm-ingested'")).scalar()
    finally:
        primary.dispose()
    assert stored == 1
    assert any(caller.endswith("(ingest)") for caller in callers)
    assert not any("nobody" in caller for caller in callers)
    assert len(callers) == len({c for c in callers if c.startswith("token:")})


def test_a_replica_that_is_down_costs_no_read(replica_app: Flask, pair: StreamingPair) -> None:
    client = replica_app.test_client()
    _ingest(client, "vm-while-down")
    pair.wait_replayed()
    pair.stop_standby()
    try:
        unreachable = _sessions("primary", "unreachable")
        assert _status(client, "vm-while-down", "read") == 200
        assert _status(client, "vm-while-down", "admin") == 200
        assert _sessions("primary", "unreachable") == unreachable + 2
    finally:
        pair.start_standby()


def test_a_primary_named_as_its_own_replica_answers_everything(
        pair: StreamingPair, make_conf: ConfFactory) -> None:
    app = create_app(make_conf(pair.primary_url,
                               database={"slave_connection": pair.primary_url}))
    try:
        client = app.test_client()
        not_a_standby = _sessions("primary", "not_a_standby")
        assert _status(client, "vm-nowhere", "read") == 404
        assert _sessions("primary", "not_a_standby") == not_a_standby + 1
    finally:
        app.extensions[ENGINE_KEY].dispose()
        engine = replica_engine(app)
        assert engine is not None
        engine.dispose()


def test_sqlite_has_no_replica(make_conf: ConfFactory, tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'tally.sqlite'}"
    with pytest.raises(ReplicaConfigError, match="needs PostgreSQL streaming replication"):
        create_app(make_conf(url, database={"slave_connection": url}))
