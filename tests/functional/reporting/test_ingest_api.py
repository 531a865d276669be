"""HTTP contract of POST /v1/events (docs/reporting-api.md), on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.app import create_app
from reporting.db.models import CurrentResource, Event, RejectedEvent, ResourceInterval, SizeName
from tests.functional.reporting.fixtures import auth


def event(n: int = 0, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": f"ev-{n}",
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": "c1",
        "resource_type": "instance",
        "resource_id": f"vm-{n}",
        "project_id": "p1",
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}Z",
        "source": "collector",
        "payload": {
            "state": "active",
            "size": {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.small"},
        },
    }
    base.update(overrides)
    return base


def post(client: FlaskClient, body: Any, role: str = "ingest") -> Any:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post("/v1/events", data=data, headers={**auth(role), "Content-Type": "application/json"})


def count(factory: sessionmaker[Session], model: Any) -> int:
    with factory() as session:
        return int(session.scalar(sa.select(sa.func.count()).select_from(model)) or 0)


def test_stored_duplicate_rejected_in_order(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    bad = event(2)
    bad["payload"]["size"] = {"vcpus": 2}
    response = post(client, {"events": [event(0), event(0), bad, event(1)]})
    assert response.status_code == 200
    body = response.get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "duplicate", "rejected", "stored"]
    assert [r["index"] for r in body["results"]] == [0, 1, 2, 3]
    assert body["results"][2]["reason"].startswith("size_schema: ")
    assert (body["stored"], body["duplicates"], body["rejected"]) == (2, 1, 1)
    assert count(session_factory, Event) == 2
    assert count(session_factory, RejectedEvent) == 1
    assert count(session_factory, CurrentResource) == 2
    assert count(session_factory, ResourceInterval) == 2
    again = post(client, {"events": [event(0), event(1)]}).get_json()
    assert [r["status"] for r in again["results"]] == ["duplicate", "duplicate"]
    assert count(session_factory, Event) == 2


def assert_nothing_stored(factory: sessionmaker[Session]) -> None:
    assert count(factory, Event) == 0
    assert count(factory, RejectedEvent) == 0
    assert count(factory, CurrentResource) == 0


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b'{"events": [',
        b"\xff\xfe{}",
        b'{"events": [{"event_id": "\xc3\x28"}]}',  # invalid UTF-8 inside a string
        b"[]",
        b'"events"',
        b"{}",
        b'{"events": {}}',
        b'{"events": "x"}',
        b'{"events": null}',
        b'{"events": [], "extra": 1}',
        b'{"events": [NaN]}',
        b'{"events": [1e999]}',
        b"[" * 100000 + b"]" * 100000,
        b'{"events": [{"x": ' + b"[" * 900 + b"]" * 900 + b"}]}",  # deeper than 64 levels
    ],
)
def test_malformed_body_is_400_and_stores_nothing(
    client: FlaskClient, session_factory: sessionmaker[Session], body: bytes
) -> None:
    response = post(client, body)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["code"] == "bad_request" and error["message"]
    assert_nothing_stored(session_factory)


def test_more_than_1000_events_is_413_and_stores_nothing(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    response = post(client, {"events": [event(n) for n in range(1001)]})
    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "too_many_events"
    assert_nothing_stored(session_factory)


def test_1000_events_fit_the_default_body_limit(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    events = [event(n, event_id=f"{n:0255d}", resource_id=f"{n:0255d}") for n in range(1000)]
    response = post(client, {"events": events})
    assert response.status_code == 200
    assert response.get_json()["stored"] == 1000
    assert count(session_factory, CurrentResource) == 1000


def test_body_over_the_limit_is_413_and_stores_nothing(make_conf: Any, db_url: str) -> None:
    app = create_app(make_conf(db_url, api={"max_body_bytes": 2048}))
    client = app.test_client()
    factory = app.extensions["tally.sessionmaker"]
    small = post(client, {"events": [event(1)]})
    assert small.status_code == 200
    big = post(client, {"events": [event(n) for n in range(2, 20)]})
    assert big.status_code == 413
    assert count(factory, Event) == 1
    app.extensions["tally.engine"].dispose()


def test_auth(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    body = json.dumps({"events": [event(1)]})
    assert client.post("/v1/events", data=body).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert client.post("/v1/events", data=body, headers=wrong).status_code == 401
    assert post(client, {"events": [event(1)]}, role="read").status_code == 403
    assert_nothing_stored(session_factory)
    assert post(client, {"events": [event(1)]}, role="admin").status_code == 200


def _without(field: str) -> dict[str, Any]:
    item = event(1)
    del item[field]
    return item


@pytest.mark.parametrize(
    ("item", "reason_start"),
    [
        (42, "event_schema: (root): 42 is not of type 'object'"),
        ([event(1)], "event_schema: (root)"),
        (None, "event_schema: (root)"),
        (_without("event_id"), "event_schema: (root): 'event_id' is a required property"),
        (_without("payload"), "event_schema: (root): 'payload' is a required property"),
        (event(1, colour="blue"), "event_schema: (root): Additional properties"),
        (event(1, payload={"state": "x", "owner": "y"}), "event_schema: /payload: Additional"),
        (event(1, event_id=7), "event_schema: /event_id: 7 is not of type 'string'"),
        (event(1, event_id=""), "event_schema: /event_id"),
        (event(1, event_id="x" * 256), "event_schema: /event_id"),
        (event(1, resource_id="r" * 100_000), "event_schema: /resource_id"),
        (event(1, payload={"state": "s" * 256}), "event_schema: /payload/state"),
        (event(1, payload={"size": [1]}), "event_schema: /payload/size"),
        (event(1, source="someone"), "event_schema: /source"),
        (event(1, resource_type="Instance"), "event_schema: /resource_type"),
        (event(1, timestamp="2026-01-01T00:00:00"), "event_schema: /timestamp"),
        (event(1, timestamp="2026-01-01 00:00:00Z"), "event_schema: /timestamp"),
        (event(1, timestamp="2026-02-30T00:00:00Z"), "event_schema: /timestamp"),
        (event(1, timestamp="2026-01-01T00:00:00.1234567Z"), "event_schema: /timestamp"),
        (event(1, timestamp=1767225600), "event_schema: /timestamp"),
        (event(1, project_id=""), "event_schema: /project_id: may be empty only on a delete"),
        (event(1, event_id="a\x00b"), "event_schema: a string holds NUL"),
        (event(1, payload={"state": "\ud800"}), "event_schema: a string holds NUL or an unpaired"),
        (event(1, resource_type="volume", payload={"size": {"size_gb": 1, "type": "t\x00"}}),
         "event_schema: a string holds NUL"),
        (event(1, payload={"size": {"vcpus": -1, "ram_gb": 1, "disk_gb": 1, "flavor": "f"}}),
         "size_schema: openstack/instance: /vcpus"),
        (event(1, payload={"size": {"vcpus": 1, "ram_gb": 1, "disk_gb": 1, "flavor": "f", "x": 1}}),
         "size_schema: openstack/instance: (root): Additional properties"),
    ],
)
def test_invalid_items_are_rejected_and_kept(
    client: FlaskClient, session_factory: sessionmaker[Session], item: Any, reason_start: str
) -> None:
    response = post(client, {"events": [item, event(2)]})
    assert response.status_code == 200
    body = response.get_json()
    first, second = body["results"]
    assert first["status"] == "rejected", first
    assert first["reason"].startswith(reason_start), first["reason"]
    assert len(first["reason"]) <= 1000
    assert second["status"] == "stored"
    with session_factory() as session:
        (row,) = session.execute(sa.select(RejectedEvent)).scalars()
    assert row.reason == first["reason"]
    if isinstance(item, dict) and isinstance(item.get("cloud"), str):
        assert row.cloud == "c1"
    if item is not None and "\\u0000" not in json.dumps(item) and "\\ud800" not in json.dumps(item):
        assert row.raw == item


def test_delete_may_have_an_empty_project(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    delete = event(2, event_type="compute.instance.delete.end", resource_id="vm-1", project_id="",
                   payload={})
    body = post(client, {"events": [event(1), delete]}).get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "stored"]
    with session_factory() as session:
        row = session.get(CurrentResource, ("openstack", "c1", "instance", "vm-1"))
    assert row is not None and row.project_id == "p1" and not row.live


def test_timestamps_are_stored_naive_utc(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    post(client, {"events": [event(1, timestamp="2026-01-01T02:30:00.5+02:00")]})
    with session_factory() as session:
        stored = session.scalar(sa.select(Event.timestamp))
        row = session.get(CurrentResource, ("openstack", "c1", "instance", "vm-1"))
    assert stored == dt.datetime(2026, 1, 1, 0, 30, 0, 500000)
    assert stored.tzinfo is None
    assert row is not None and row.created_at == stored


def test_volume_type_id_is_replaced_by_its_name(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    with session_factory() as session, session.begin():
        session.add(SizeName(platform="openstack", cloud="c1", kind="volume_type", size_id="t-1",
                             name="ssd", updated_at=dt.datetime(2026, 1, 1)))
    def volume(n: int, cloud: str, type_id: str) -> dict[str, Any]:
        return event(n, cloud=cloud, event_type="volume.create.end", resource_type="volume",
                     resource_id=f"vol-{n}", payload={"size": {"size_gb": 10, "type": type_id}})
    body = post(client, {"events": [volume(1, "c1", "t-1"), volume(2, "c1", "t-2"),
                                    volume(3, "c2", "t-1")]}).get_json()
    assert body["stored"] == 3
    with session_factory() as session:
        rows = session.execute(sa.select(CurrentResource.resource_id, CurrentResource.size))
        sizes = {resource_id: size for resource_id, size in rows}
    assert sizes == {
        "vol-1": {"size_gb": 10, "type": "ssd"},  # known in c1
        "vol-2": {"size_gb": 10, "type": "t-2"},  # unknown id stays
        "vol-3": {"size_gb": 10, "type": "t-1"},  # the name belongs to c1 only
    }


def _unregistered(n: int) -> dict[str, Any]:
    return event(n, resource_type="share", resource_id=f"share-{n}", event_type="share.create",
                 payload={"size": {"gb": 1}})


def test_lax_accepts_a_size_without_registered_schema(client: FlaskClient) -> None:
    body = post(client, {"events": [_unregistered(1)]}).get_json()
    assert body["results"][0]["status"] == "stored"


def test_strict_refuses_a_size_without_registered_schema(make_conf: Any, db_url: str) -> None:
    app = create_app(make_conf(db_url, ingest={"require_size_schema": True}))
    client = app.test_client()
    no_size = event(2, resource_type="share", resource_id="share-2", event_type="share.create",
                    payload={"state": "available"})
    body = post(client, {"events": [_unregistered(1), no_size]}).get_json()
    assert body["results"][0]["status"] == "rejected"
    assert body["results"][0]["reason"] == (
        "size_schema: no size schema is registered for openstack/share")
    assert body["results"][1]["status"] == "stored"  # no size, nothing to check
    app.extensions["tally.engine"].dispose()


def test_ingest_metrics(client: FlaskClient) -> None:
    from prometheus_client import REGISTRY

    def value(outcome: str) -> float:
        return REGISTRY.get_sample_value(
            "tally_ingest_events_total", {"cloud": "metrics-cloud", "source": "collector", "outcome": outcome}
        ) or 0.0

    before = {o: value(o) for o in ("stored", "duplicate", "rejected")}
    bad = event(3, cloud="metrics-cloud", timestamp="yesterday")
    post(client, {"events": [event(1, cloud="metrics-cloud"), event(1, cloud="metrics-cloud"), bad]})
    assert value("stored") - before["stored"] == 1
    assert value("duplicate") - before["duplicate"] == 1
    assert value("rejected") - before["rejected"] == 1
    last = REGISTRY.get_sample_value("tally_events_last_received_timestamp", {"cloud": "metrics-cloud"})
    assert last is not None and last > 1.7e9


def test_nesting_up_to_the_limit_is_stored(client: FlaskClient) -> None:
    nested: Any = "leaf"
    for _ in range(58):  # body > events > item > payload > provider > 58 levels
        nested = {"d": nested}
    item = event(1, payload={"provider": {"trace": nested}})
    body = post(client, {"events": [item]})
    assert body.status_code == 200 and body.get_json()["stored"] == 1


@pytest.mark.parametrize("field", ["resource_id", "cloud", "platform"])
def test_a_slash_in_an_identity_is_refused_with_a_reason(
    client: FlaskClient, session_factory: sessionmaker[Session], field: str
) -> None:
    # No route could ever serve the resource: /v1/resources/{platform}/{cloud}/{type}/{id}.
    item = event(1, **{field: "a/b"})
    (result,) = post(client, {"events": [item]}).get_json()["results"]
    assert result["status"] == "rejected"
    assert result["reason"] == f"event_schema: /{field}: must not hold '/' (no route could serve it)"
    assert count(session_factory, Event) == 0
