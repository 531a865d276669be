"""A forged page marker (right list, right shape, a value no row can hold) is a 400 on
every paginated endpoint, never a 500; ``/v1/sync-runs`` checks its parameters like the
other lists.  Both backends."""

from __future__ import annotations

import base64
import json

import pytest
from flask.testing import FlaskClient

from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import event, post

RESOURCE = "/v1/resources/openstack/c1/instance/vm-1"
T = "2026-01-01T00:00:00.000000Z"


def forged(tag: str, parts: list[object]) -> str:
    # json.dumps escapes a lone surrogate (\ud800) and a NUL (\u0000).
    text = json.dumps([tag, parts])
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# (url with its other parameters, the list's tag, a sort key with each forged value)
LISTS = [
    ("/v1/resources?", "resources", lambda v: [v, "c1", "instance", "vm-1"]),
    ("/v1/resources?as_of=2026-01-02T00:00:00Z&", "resources-as-of",
     lambda v: ["openstack", v, "instance", "vm-1"]),
    (RESOURCE + "/events?", "events", lambda v: [T, v]),
    ("/v1/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&", "usage-resource",
     lambda v: ["openstack", "c1", "instance", v]),
    ("/v1/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&group_by=project&",
     "usage-project", lambda v: [v]),
    ("/v1/resource-types?", "resource-types", lambda v: ["openstack", v]),
    ("/v1/rejected-events?", "rejected-events", lambda v: [v]),
    ("/v1/sync-runs?", "sync-runs", lambda v: [T, v]),
    # Billing: price list versions by number, periods and statement summaries by name.
    ("/v1/price-lists/default?", "price-lists", lambda v: [v]),
    ("/v1/periods/c1?", "periods", lambda v: [v]),
    ("/v1/statements?cloud=c1&period=2026-01&", "statements", lambda v: [v]),
]
STRINGS = ["nul\x00", "sur\ud800"]
INTEGERS = [2**64, -(2**64), 2**63]


@pytest.mark.parametrize(("url", "tag", "key"), LISTS, ids=[entry[1] for entry in LISTS])
def test_a_forged_marker_is_a_400(client: FlaskClient, url: str, tag: str, key) -> None:
    post(client, {"events": [event(1)]})
    int_lists = ("events", "rejected-events", "price-lists")
    values = INTEGERS if tag in int_lists else STRINGS
    # The list itself answers: the 400 below is the marker's.
    assert client.get(url.rstrip("?&"), headers=auth("read")).status_code == 200, tag
    for value in values:
        response = client.get(f"{url}marker={forged(tag, key(value))}", headers=auth("read"))
        assert response.status_code == 400, (tag, value, response.get_data(as_text=True)[:200])
        assert response.get_json()["error"]["code"] == "bad_request"


def test_sync_runs_checks_its_parameters(client: FlaskClient) -> None:
    for query in ("cloud=a%00b", "colour=blue", "limit=0", "marker=garbage"):
        response = client.get(f"/v1/sync-runs?{query}", headers=auth("read"))
        assert response.status_code == 400, query
    assert client.get("/v1/sync-runs?cloud=c1&limit=5", headers=auth("read")).status_code == 200
