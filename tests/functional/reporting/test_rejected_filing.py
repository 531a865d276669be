"""POST /v1/rejected-events: what a collector parked is filed into the dead letter under
its key (a retry files nothing new), kept exactly, listed and replayed like any row.
Both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import RejectedEvent
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import count, event

NAN_NOTIFICATION = '{"event_type": "compute.instance.create.end", "payload": {"vcpus": NaN}}'


def file(client: FlaskClient, items: Any, role: str = "ingest") -> Any:
    return client.post("/v1/rejected-events", data=json.dumps({"items": items}),
                       headers={**auth(role), "Content-Type": "application/json"})


def item(key: str, raw: Any, reason: str = "HTTP 413 request_entity_too_large") -> dict:
    return {"key": key, "raw": raw if isinstance(raw, str) else json.dumps(raw),
            "reason": reason}


def parked_rows(client: FlaskClient) -> list[dict[str, Any]]:
    listed = client.get("/v1/rejected-events?reason=parked:", headers=auth("read"))
    assert listed.status_code == 200
    return list(listed.get_json()["items"])


def bad_size_event() -> dict[str, Any]:
    refused = event(7)
    refused["payload"]["size"]["vcpus"] = -1
    return refused


def test_filed_items_are_listed_with_their_reason_and_kept_exactly(client: FlaskClient) -> None:
    odd = event(8, resource_id="res-\x00-\udc80")  # what no text column stores as is
    response = file(client, [
        item("k-1", bad_size_event()),
        item("k-2", NAN_NOTIFICATION, "unmappable: ValueError: vcpus is NaN"),
        item("k-3", json.dumps(odd, ensure_ascii=True)),
    ])
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["filed"], body["duplicates"]) == (3, 0)
    assert [(r["index"], r["key"], r["status"]) for r in body["results"]] == [
        (0, "k-1", "filed"), (1, "k-2", "filed"), (2, "k-3", "filed")]
    rows = parked_rows(client)
    assert [row["id"] for row in rows] == [r["id"] for r in body["results"]]
    assert rows[0]["reason"] == "parked: HTTP 413 request_entity_too_large"
    assert rows[0]["raw"] == bad_size_event()
    assert (rows[0]["cloud"], rows[0]["event_id"]) == ("c1", "ev-7")
    # Not a JSON document (NaN): the text itself, exactly.
    assert rows[1]["raw"] == NAN_NOTIFICATION and rows[1]["cloud"] is None
    assert rows[1]["reason"] == "parked: unmappable: ValueError: vcpus is NaN"
    assert rows[2]["raw"] == odd


def test_a_retry_files_nothing_new(client: FlaskClient,
                                   session_factory: sessionmaker[Session]) -> None:
    first = file(client, [item("k-1", bad_size_event()), item("k-2", NAN_NOTIFICATION)])
    again = file(client, [item("k-2", NAN_NOTIFICATION), item("k-1", bad_size_event()),
                          item("k-3", event(9)), item("k-3", event(9))])
    assert again.status_code == 200
    ids = {r["key"]: r["id"] for r in first.get_json()["results"]}
    results = again.get_json()["results"]
    assert [(r["key"], r["status"]) for r in results] == [
        ("k-2", "duplicate"), ("k-1", "duplicate"), ("k-3", "filed"), ("k-3", "duplicate")]
    assert results[0]["id"] == ids["k-2"] and results[1]["id"] == ids["k-1"]
    assert results[2]["id"] == results[3]["id"]
    assert (again.get_json()["filed"], again.get_json()["duplicates"]) == (1, 3)
    assert count(session_factory, RejectedEvent) == 3


def test_a_filed_event_replays_through_ingest(client: FlaskClient) -> None:
    filed = file(client, [item("k-1", bad_size_event()), item("k-2", NAN_NOTIFICATION)])
    ids = [r["id"] for r in filed.get_json()["results"]]

    def replay() -> list[dict[str, Any]]:
        answer = client.post("/v1/rejected-events/replay", json={"ids": ids},
                             headers=auth("admin"))
        assert answer.status_code == 200
        return list(answer.get_json()["results"])

    # Still refused by the same cause, and the notification is no event at all.
    event_row, notification_row = replay()
    assert event_row["status"] == "rejected"
    assert event_row["reason"].startswith("size_schema: openstack/instance: /vcpus")
    assert notification_row["status"] == "rejected"
    assert notification_row["reason"].startswith("event_schema: ")
    # Once the cause is fixed, the event is stored exactly as the collector had it.
    relaxed = {"type": "object", "properties": {"vcpus": {"type": "integer"}}}
    assert client.put("/v1/resource-types/openstack/instance", json={"size_schema": relaxed},
                      headers=auth("admin")).status_code == 200
    event_row, notification_row = replay()
    assert (event_row["status"], event_row["event_id"]) == ("stored", "ev-7")
    assert notification_row["status"] == "rejected"
    resource = client.get("/v1/resources/openstack/c1/instance/vm-7", headers=auth("read"))
    assert resource.get_json()["size"]["vcpus"] == -1


def test_roles(client: FlaskClient) -> None:
    assert file(client, [item("k-1", event(1))], role="read").status_code == 403
    anonymous = client.post("/v1/rejected-events", json={"items": [item("k-1", event(1))]})
    assert anonymous.status_code == 401
    assert file(client, [item("k-1", event(1))], role="admin").status_code == 200


@pytest.mark.parametrize("items", [
    [],
    "k-1",
    [["k-1", "{}", "x"]],
    [{"key": "k-1", "raw": "{}"}],
    [{"key": "k-1", "raw": "{}", "reason": "x", "cloud": "c1"}],
    [{"key": "", "raw": "{}", "reason": "x"}],
    [{"key": "k 1", "raw": "{}", "reason": "x"}],
    [{"key": "k" * 256, "raw": "{}", "reason": "x"}],
    [{"key": "k-1", "raw": "", "reason": "x"}],
    [{"key": "k-1", "raw": {}, "reason": "x"}],
    [{"key": "k-1", "raw": "{}", "reason": ""}],
    [{"key": "k-1", "raw": "{}", "reason": "x" * 1001}],
    [{"key": "k-1", "raw": "{}", "reason": "nul\x00"}],
    [{"key": "k-1", "raw": "{}", "reason": "sur\ud800"}],
    [{"key": "k-1", "raw": "{}", "reason": "x"}, {"key": 1, "raw": "{}", "reason": "x"}],
], ids=lambda value: repr(value)[:40])
def test_a_bad_item_refuses_the_request_and_files_nothing(
        client: FlaskClient, session_factory: sessionmaker[Session], items: Any) -> None:
    response = file(client, items)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"]["code"] == "bad_request"
    assert count(session_factory, RejectedEvent) == 0


def test_more_than_1000_items_is_413(client: FlaskClient) -> None:
    response = file(client, [item(f"k-{n}", "{}") for n in range(1001)])
    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "too_many_items"


def test_unknown_body_member_is_400(client: FlaskClient) -> None:
    response = client.post("/v1/rejected-events", json={"items": [item("k", "{}")], "x": 1},
                           headers=auth("ingest"))
    assert response.status_code == 400
