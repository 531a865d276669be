"""Integers beyond 64 bits come back from every JSON column exactly, on SQLite and
PostgreSQL: orjson reads such an integer as a float (``10**30`` as ``1e+30``), so the
columns are read by the standard library whenever a run of 19 digits could be one.
Billing rates sizes read from those columns: a float there would be rated inexactly."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.engine import _json_loads
from reporting.db.models import CurrentResource, Event, RejectedEvent, ResourceInterval
from tests.functional.reporting.fixtures import auth

HUGE = 10**30
WIDE = -(2**64) - 1


def _event(**payload: Any) -> dict[str, Any]:
    return {
        "event_id": "big-1", "event_type": "share.create.end", "platform": "openstack",
        "cloud": "c1", "resource_type": "share", "resource_id": "s-1", "project_id": "p1",
        "timestamp": "2026-01-01T00:00:00Z", "source": "collector", "payload": payload,
    }


def _raw(value: Any) -> str:
    # The answer's own text: the test client's get_json would hide nothing, but the
    # comparison is made on the exact text to tell 1e+30 from 10**30.
    return json.dumps(value, sort_keys=True)


def test_integers_beyond_64_bits_round_trip_every_column(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    size = {"vcpus": HUGE, "ram_gb": WIDE, "ids": [HUGE + 1], "note": "1234567890123456789012"}
    put = client.put("/v1/resource-types/openstack/share",
                     json={"size_schema": {"type": "object",
                                           "properties": {"vcpus": {"maximum": HUGE}}}},
                     headers=auth("admin"))
    assert put.status_code in (200, 201), put.get_data(as_text=True)
    stored = client.post("/v1/events", json={"events": [_event(size=size)]},
                         headers=auth("ingest")).get_json()
    assert stored["stored"] == 1, stored
    # Refused (vcpus over the schema's maximum, read back exactly): the dead letter.
    over = {**_event(size={"vcpus": HUGE + 1}), "event_id": "big-2", "resource_id": "s-2"}
    refused = client.post("/v1/events", json={"events": [over]}, headers=auth("ingest")).get_json()
    assert refused["rejected"] == 1, refused
    assert "maximum" in refused["results"][0]["reason"]

    resource = client.get("/v1/resources/openstack/c1/share/s-1", headers=auth("read")).get_json()
    assert _raw(resource["size"]) == _raw(size)
    events = client.get("/v1/resources/openstack/c1/share/s-1/events",
                        headers=auth("read")).get_json()
    assert _raw(events["items"][0]["payload"]["size"]) == _raw(size)
    schema = client.get("/v1/resource-types/openstack/share", headers=auth("read")).get_json()
    assert schema["size_schema"]["properties"]["vcpus"]["maximum"] == HUGE
    assert type(schema["size_schema"]["properties"]["vcpus"]["maximum"]) is int

    with session_factory() as session:
        assert session.scalars(sa.select(Event.payload)).one()["size"] == size
        assert session.scalars(sa.select(CurrentResource.size)).one() == size
        assert session.scalars(sa.select(ResourceInterval.size)).one() == size
        raw = session.scalars(sa.select(RejectedEvent.raw)).one()
        assert type(raw["payload"]["size"]["vcpus"]) is int
        assert raw["payload"]["size"]["vcpus"] == HUGE + 1


def test_the_column_reader_answers_as_the_standard_library() -> None:
    for text in ('{"a": 1000000000000000000000000000000}', '[-18446744073709551617, 1.5]',
                 '{"k": "12345678901234567890", "n": 12}', '{"f": 1.0000000000000000000001}',
                 '{"e": 1e30}', '"x"'):
        for data in (text, text.encode()):
            assert _raw(_json_loads(data)) == _raw(json.loads(text))
