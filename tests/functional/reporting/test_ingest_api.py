"""HTTP contract of POST /v1/events (SPEC §3.2), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import CurrentResource, Event, RejectedEvent, ResourceInterval
from tests.unit.reporting.fixtures import auth


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
