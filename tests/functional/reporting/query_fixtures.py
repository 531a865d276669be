"""Fixtures of the read-side tests: a history of several clouds, projects and types
(so a dropped filter shows), stored through the one ingest path.

The backends (``db_url``, ``app``, ``client``, ``session_factory`` on SQLite and
PostgreSQL) come from ``tests/functional/reporting/fixtures.py``; a test module wraps
``seeded_client(app, session_factory)`` in a fixture of its own.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

import jsonschema
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker
from werkzeug.test import TestResponse

from mapping.event import format_timestamp
from reporting.api.openapi import document
from reporting.ingest import ingest
from tests.functional.reporting.fixtures import auth

HEADERS = {role: auth(role) for role in ("read", "ingest", "admin")}

T0 = dt.datetime(2026, 1, 10, 0, 0, 0)


def at(hours: float = 0, *, days: float = 0) -> str:
    """An RFC 3339 instant relative to T0."""
    return format_timestamp(T0 + dt.timedelta(hours=hours, days=days))


_ids = itertools.count(1)


def event(
    event_type: str,
    resource_id: str,
    timestamp: str,
    *,
    cloud: str = "c1",
    resource_type: str = "instance",
    project_id: str = "p1",
    source: str = "collector",
    **payload: Any,
) -> dict[str, Any]:
    """A canonical event (payload members: state, size)."""
    return {
        "event_id": f"ev-{next(_ids):05d}",
        "event_type": event_type,
        "platform": "openstack",
        "cloud": cloud,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "timestamp": timestamp,
        "source": source,
        "payload": payload,
    }


SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}
VOL10 = {"size_gb": 10, "type": "ssd"}


def seeded_history() -> list[dict[str, Any]]:
    """The history every query test reads (in receipt order).

    - inst-a (c1/p1): created T0 active small, shutoff at +1h, resized large at +2h,
      deleted at +3h;
    - inst-b (c1, p2): created +0.5h, moved to p1 at +2h, still live;
    - vol-a (c1/p1 volume): created +1h, live;
    - inst-c (c2/p1): created T0, live;
    - inst-d (c1/p1): created T0-1d, deleted T0-12h;
    - inst-e (c1/p2): created +1h; its update at +1.5h arrives first, the create
      in a later batch (a late event: history and row are still in fold order).
    """
    return [
        event("compute.instance.create.end", "inst-a", at(0), state="active", size=SMALL),
        event("compute.instance.power_off.end", "inst-a", at(1), state="shutoff"),
        event("compute.instance.resize.confirm.end", "inst-a", at(2), size=LARGE),
        event("compute.instance.delete.end", "inst-a", at(3), project_id=""),
        event("compute.instance.create.end", "inst-b", at(0.5), project_id="p2",
              state="active", size=SMALL),
        event("compute.instance.update", "inst-b", at(2), project_id="p1"),
        event("volume.create.end", "vol-a", at(1), resource_type="volume",
              state="available", size=VOL10),
        event("compute.instance.create.end", "inst-c", at(0), cloud="c2", state="active",
              size=SMALL),
        event("compute.instance.create.end", "inst-d", at(0, days=-1), state="active",
              size=SMALL),
        event("sync.delete", "inst-d", at(-12), source="reconciliation"),
        event("compute.instance.update", "inst-e", at(1.5), project_id="p2",
              state="shutoff"),
        event("compute.instance.create.end", "inst-e", at(1), project_id="p2",
              state="active", size=SMALL),
    ]


SEEDED = seeded_history()
# The create of inst-e arrives in a second batch, after its update.
FIRST_BATCH, LATE_BATCH = SEEDED[:-1], SEEDED[-1:]


def seed(factory: sessionmaker[Session], items: list[dict[str, Any]]) -> None:
    """Store ``items`` through ingest; every one must be stored."""
    results = ingest(factory, items, require_size_schema=False)
    bad = [(r.index, r.status, r.reason) for r in results if r.status != "stored"]
    assert not bad, bad


def seeded_client(app: Flask, session_factory: sessionmaker[Session]) -> FlaskClient:
    """A client of ``app`` whose database holds SEEDED (use it from a fixture)."""
    seed(session_factory, FIRST_BATCH)
    seed(session_factory, LATE_BATCH)
    return app.test_client()


# --- contract: a response against the OpenAPI document ---

_RULE_PARAM = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
# What format_timestamp renders: RFC 3339 UTC with microseconds.
CANONICAL_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def openapi_path(rule: str) -> str:
    """A Flask rule (``/v1/x/<a>``) in OpenAPI form (``/v1/x/{a}``)."""
    return _RULE_PARAM.sub(r"{\1}", rule)


def assert_contract(app: Flask, method: str, url: str, response: TestResponse) -> Any:
    """The response's status is documented and its JSON body matches; returns the body."""
    doc = document()
    adapter = app.url_map.bind("localhost")
    rule, _args = adapter.match(url.split("?", 1)[0], method=method, return_rule=True)
    operation = doc["paths"][openapi_path(rule.rule)][method.lower()]
    documented = operation["responses"]
    status = str(response.status_code)
    assert status in documented, f"{method} {url}: {status} is not documented"
    schema = documented[status]["content"]["application/json"]["schema"]
    body = response.get_json()
    jsonschema.validate(body, {"components": doc["components"], **schema},
                        cls=jsonschema.Draft202012Validator)
    _check_instants(body)
    return body


def _check_instants(value: Any, key: str = "") -> None:
    """Every instant the read side answers is in the canonical rendering."""
    if isinstance(value, dict):
        for name, member in value.items():
            _check_instants(member, name)
    elif isinstance(value, list):
        for member in value:
            _check_instants(member, key)
    elif isinstance(value, str) and key in {
        "created_at", "deleted_at", "last_event_at", "timestamp", "received_at",
        "start", "end", "from", "to",
    }:
        assert CANONICAL_INSTANT.match(value), f"{key}={value!r} is not canonical"
