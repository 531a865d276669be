"""The dead letter keeps what arrived byte for byte, and replay ingests exactly that.

A refused item can hold what no database column stores as text (a lone surrogate, a
NUL).  The listing shows it as it arrived and a replay never books an altered copy
nor calls it a duplicate of another event.  Both backends.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import Event, RejectedEvent
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import count, event, post


def _post_text(client: FlaskClient, items: list[Any]) -> Any:
    # json.dumps escapes a lone surrogate (\udc80) and a NUL (\u0000): valid JSON text.
    data = json.dumps({"events": items})
    return client.post("/v1/events", data=data,
                       headers={**auth("ingest"), "Content-Type": "application/json"}).get_json()


def _rows(client: FlaskClient) -> list[dict[str, Any]]:
    return list(client.get("/v1/rejected-events", headers=auth("read")).get_json()["items"])


def _replay(client: FlaskClient, ids: list[int]) -> Any:
    return client.post("/v1/rejected-events/replay", json={"ids": ids},
                       headers=auth("admin")).get_json()


def test_listing_shows_the_item_as_it_arrived(client: FlaskClient) -> None:
    surrogate = event(1, resource_id="res-sur\udc80")
    nul = event(2, resource_id="res-nul\x00")
    body = _post_text(client, [surrogate, nul])
    assert [r["status"] for r in body["results"]] == ["rejected", "rejected"]
    raws = [row["raw"] for row in _rows(client)]
    assert raws[0]["resource_id"] == "res-sur\udc80"
    assert raws[1]["resource_id"] == "res-nul\x00"


def test_replay_never_books_an_altered_copy(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    _post_text(client, [event(1, resource_id="res-sur\udc80"), event(2, resource_id="res-nul\x00")])
    ids = [row["id"] for row in _rows(client)]
    replayed = _replay(client, ids)
    assert [r["status"] for r in replayed["results"]] == ["rejected", "rejected"]
    assert all("NUL or an unpaired surrogate" in r["reason"] for r in replayed["results"])
    assert count(session_factory, Event) == 0
    with session_factory() as session:
        rows = session.execute(sa.select(RejectedEvent)).scalars().all()
        assert [row.replayed_at for row in rows] == [None, None]
    assert count(session_factory, RejectedEvent) == 2


def test_replay_is_never_a_duplicate_of_another_event(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    # The cloud sent "ev-x?" (stored) and "ev-x\udc80" (refused): two events.
    assert post(client, {"events": [event(1, event_id="ev-x?")]}).get_json()["stored"] == 1
    _post_text(client, [event(2, event_id="ev-x\udc80")])
    (row,) = _rows(client)
    assert row["raw"]["event_id"] == "ev-x\udc80"
    replayed = _replay(client, [row["id"]])
    assert replayed["results"][0]["status"] == "rejected"
    with session_factory() as session:
        stored = session.get(RejectedEvent, row["id"])
        assert stored is not None and stored.replayed_at is None


def test_replay_of_a_changed_event_under_a_stored_id_stays_rejected(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    strict = {"type": "object", "properties": {"vcpus": {"type": "integer", "maximum": 4}}}
    client.put("/v1/resource-types/openstack/instance", json={"size_schema": strict},
               headers=auth("admin"))
    big = event(1)
    big["payload"]["size"]["vcpus"] = 8
    assert post(client, {"events": [big]}).get_json()["rejected"] == 1
    # Another event under the same id is stored meanwhile (a different resource).
    assert post(client, {"events": [event(1, resource_id="vm-other")]}).get_json()["stored"] == 1
    client.put("/v1/resource-types/openstack/instance", json={"size_schema": {"type": "object"}},
               headers=auth("admin"))
    (row,) = _rows(client)
    result = _replay(client, [row["id"]])["results"][0]
    assert result["status"] == "rejected"
    assert result["reason"].startswith("replay: event_id ev-1 is already stored for a different event")
    with session_factory() as session:
        stored = session.get(RejectedEvent, row["id"])
        assert stored is not None and stored.replayed_at is None


def test_replay_of_the_very_event_already_stored_is_a_duplicate(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    strict = {"type": "object", "properties": {"vcpus": {"type": "integer", "maximum": 4}}}
    client.put("/v1/resource-types/openstack/instance", json={"size_schema": strict},
               headers=auth("admin"))
    big = event(3)
    big["payload"]["size"]["vcpus"] = 8
    assert post(client, {"events": [big]}).get_json()["rejected"] == 1
    client.put("/v1/resource-types/openstack/instance", json={"size_schema": {"type": "object"}},
               headers=auth("admin"))
    assert post(client, {"events": [big]}).get_json()["stored"] == 1  # the collector's retry
    (row,) = _rows(client)
    assert _replay(client, [row["id"]])["results"][0]["status"] == "duplicate"
    with session_factory() as session:
        stored = session.get(RejectedEvent, row["id"])
        assert stored is not None and stored.replayed_at is not None
