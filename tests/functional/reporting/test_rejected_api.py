"""The dead letter over HTTP: GET /v1/rejected-events and replay, both backends."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import Event, RejectedEvent
from reporting.pagination import encode_marker
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import count, event, post


def lb_event(n: int, **size: Any) -> dict[str, Any]:
    return event(
        n,
        event_type="octavia.loadbalancer.create.end",
        resource_type="loadbalancer",
        resource_id=f"lb-{n}",
        payload={"state": "active", "size": size},
    )


def reject_some(client: FlaskClient) -> None:
    bad_size = event(1)
    bad_size["payload"]["size"]["vcpus"] = "two"
    other_cloud = event(2, cloud="c2", timestamp="2026-01-01T00:00:00")  # no offset
    body = post(client, {"events": [bad_size, other_cloud, 42, event(3)]}).get_json()
    assert [r["status"] for r in body["results"]] == ["rejected", "rejected", "rejected", "stored"]


def test_list_filters_and_shape(client: FlaskClient) -> None:
    reject_some(client)
    listed = client.get("/v1/rejected-events", headers=auth("read")).get_json()
    assert listed["next_marker"] is None
    items = listed["items"]
    assert [i["cloud"] for i in items] == ["c1", "c2", None]
    assert items[0]["reason"].startswith("size_schema: openstack/instance: /vcpus")
    assert items[1]["reason"].startswith("event_schema: /timestamp")
    assert items[2]["raw"] == 42 and items[2]["event_id"] is None
    assert items[0]["raw"]["payload"]["size"]["vcpus"] == "two"
    assert items[0]["replayed_at"] is None and items[0]["received_at"].endswith("Z")

    def ids(query: str) -> list[int]:
        response = client.get(f"/v1/rejected-events?{query}", headers=auth("read"))
        assert response.status_code == 200, response.get_json()
        return [i["id"] for i in response.get_json()["items"]]

    assert ids("cloud=c2") == [items[1]["id"]]
    assert ids("reason=size_schema:") == [items[0]["id"]]
    assert ids("reason=event_schema") == [items[1]["id"], items[2]["id"]]
    assert ids("reason=%25") == []  # a LIKE wildcard is a literal prefix
    assert ids("since=2000-01-01T00:00:00Z") == [i["id"] for i in items]
    assert ids("since=2999-01-01T00:00:00Z") == []
    assert ids("replayed=false") == [i["id"] for i in items]


def test_pagination_walks_every_row_once(client: FlaskClient) -> None:
    post(client, {"events": [{"n": n} for n in range(7)]})
    seen: list[int] = []
    url = "/v1/rejected-events?limit=3"
    while True:
        body = client.get(url, headers=auth("read")).get_json()
        seen += [i["id"] for i in body["items"]]
        if body["next_marker"] is None:
            break
        url = f"/v1/rejected-events?limit=3&marker={body['next_marker']}"
    assert len(seen) == 7 and seen == sorted(set(seen))


def test_list_errors(client: FlaskClient) -> None:
    huge = encode_marker("rejected-events", [2**70])
    for query in ("limit=0", "limit=1001", "limit=x", "marker=garbage", "since=yesterday",
                  "replayed=maybe", "colour=blue", f"marker={huge}", "cloud=a%00b",
                  "reason=%00"):
        response = client.get(f"/v1/rejected-events?{query}", headers=auth("read"))
        assert response.status_code == 400, query
        assert response.get_json()["error"]["code"] == "bad_request"
    assert client.get("/v1/rejected-events").status_code == 401
    assert client.get("/v1/rejected-events", headers=auth("ingest")).status_code == 403


def test_replay_after_schema_fix(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    # An operator's schema that refuses pools > 0 dead-letters a sync correction...
    strict = {"type": "object", "properties": {"pools": {"type": "integer", "maximum": 0}}}
    assert client.put("/v1/resource-types/openstack/loadbalancer", json={"size_schema": strict},
                      headers=auth("admin")).status_code == 200
    body = post(client, {"events": [lb_event(1, listeners=1, pools=2), lb_event(2, listeners=1, pools=0)]})
    assert [r["status"] for r in body.get_json()["results"]] == ["rejected", "stored"]
    (row_id,) = [i["id"] for i in client.get("/v1/rejected-events", headers=auth("read")).get_json()["items"]]

    # ...replaying before the fix changes nothing and files no second row...
    again = client.post("/v1/rejected-events/replay", json={"ids": [row_id, 999999]}, headers=auth("admin"))
    assert again.status_code == 200
    assert [r["status"] for r in again.get_json()["results"]] == ["rejected", "not_found"]
    assert count(session_factory, RejectedEvent) == 1

    # ...after the fix the row is ingested, marked and kept.
    relaxed = {"type": "object", "properties": {"pools": {"type": "integer"}}}
    client.put("/v1/resource-types/openstack/loadbalancer", json={"size_schema": relaxed}, headers=auth("admin"))
    fixed = client.post("/v1/rejected-events/replay", json={"ids": [row_id]}, headers=auth("admin")).get_json()
    assert fixed["results"] == [{"id": row_id, "status": "stored", "event_id": "ev-1"}]
    assert fixed["stored"] == 1
    with session_factory() as session:
        assert session.scalar(sa.select(Event.payload).where(Event.event_id == "ev-1")) == {
            "state": "active", "size": {"listeners": 1, "pools": 2}}
        row = session.get(RejectedEvent, row_id)
        assert row is not None and row.replayed_at is not None
    twice = client.post("/v1/rejected-events/replay", json={"ids": [row_id]}, headers=auth("admin")).get_json()
    assert twice["results"][0]["status"] == "already_replayed"
    listed = client.get("/v1/rejected-events?replayed=true", headers=auth("read")).get_json()
    assert [i["id"] for i in listed["items"]] == [row_id]


def test_replay_errors(client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    url = "/v1/rejected-events/replay"
    for body in (b"not json", b"[]", b'{"ids": []}', b'{"ids": ["1"]}', b'{"ids": [true]}',
                 b'{"ids": [1], "x": 1}', b'{}', b'{"ids": [9223372036854775808]}',
                 b'{"ids": [1.5]}'):
        response = client.post(url, data=body, headers=auth("admin"))
        assert response.status_code == 400, body
    too_many = client.post(url, json={"ids": list(range(1001))}, headers=auth("admin"))
    assert too_many.status_code == 413
    assert client.post(url, json={"ids": [1]}, headers=auth("read")).status_code == 403
    assert client.post(url, json={"ids": [1]}).status_code == 401


def test_replay_is_the_ingest_service_s_not_the_view_s(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """``dead_letter.replay`` does all of it without HTTP: a row still refused stays,
    a fixed one is stored and marked, a repeated id is replayed once, an unknown id is
    not found, and a second replay answers already_replayed."""
    from reporting import dead_letter

    strict = {"type": "object", "properties": {"pools": {"type": "integer", "maximum": 0}}}
    client.put("/v1/resource-types/openstack/loadbalancer", json={"size_schema": strict},
               headers=auth("admin"))
    post(client, {"events": [lb_event(7, listeners=1, pools=2)]})
    (row_id,) = [i["id"] for i in
                 client.get("/v1/rejected-events", headers=auth("read")).get_json()["items"]]

    def replay(*ids: int) -> list[tuple[int, str, str | None]]:
        return [(o.row_id, o.status, o.event_id) for o in dead_letter.replay(
            session_factory, ids, require_size_schema=False)]

    (refused,) = dead_letter.replay(session_factory, [row_id], require_size_schema=False)
    assert refused.status == "rejected" and refused.reason is not None
    assert refused.reason.startswith("size_schema:")
    relaxed = {"type": "object", "properties": {"pools": {"type": "integer"}}}
    client.put("/v1/resource-types/openstack/loadbalancer", json={"size_schema": relaxed},
               headers=auth("admin"))
    assert replay(row_id, row_id, 424242) == [(row_id, "stored", "ev-7"),
                                              (424242, "not_found", None)]
    assert replay(row_id) == [(row_id, "already_replayed", "ev-7")]
    assert count(session_factory, Event) == 1
