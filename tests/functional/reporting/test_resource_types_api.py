"""GET /v1/resource-types, GET|PUT /v1/resource-types/{platform}/{resource_type}."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from mapping.size_schemas import LOADBALANCER_SEED_MARKER_KEY, SEEDED_SIZE_SCHEMAS
from reporting.pagination import encode_marker
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import event, post

URL = "/v1/resource-types/openstack/loadbalancer"


def test_list_answers_the_seeded_schemas_with_the_marker(client: FlaskClient) -> None:
    body = client.get("/v1/resource-types", headers=auth("read")).get_json()
    assert body["next_marker"] is None
    listed = {(i["platform"], i["resource_type"]): i["size_schema"] for i in body["items"]}
    assert listed == {("openstack", name): schema for name, schema in SEEDED_SIZE_SCHEMAS.items()}
    assert listed[("openstack", "loadbalancer")][LOADBALANCER_SEED_MARKER_KEY] == (
        "0006_seed_loadbalancer_type")
    assert [i["resource_type"] for i in body["items"]] == sorted(SEEDED_SIZE_SCHEMAS)


def test_list_pages(client: FlaskClient) -> None:
    seen: list[str] = []
    url = "/v1/resource-types?limit=2"
    while url:
        body = client.get(url, headers=auth("read")).get_json()
        seen += [i["resource_type"] for i in body["items"]]
        url = f"/v1/resource-types?limit=2&marker={body['next_marker']}" if body["next_marker"] else ""
    assert seen == sorted(SEEDED_SIZE_SCHEMAS)


def test_list_refuses_a_bad_marker(client: FlaskClient) -> None:
    for marker in ("garbage", encode_marker("resource-types", ["open\x00stack", "x"]),
                   encode_marker("rejected-events", [1])):
        response = client.get(f"/v1/resource-types?marker={marker}", headers=auth("read"))
        assert response.status_code == 400, marker
    assert client.get("/v1/resource-types?colour=1", headers=auth("read")).status_code == 400


def test_get_one_and_unknown(client: FlaskClient) -> None:
    one = client.get(URL, headers=auth("read"))
    assert one.status_code == 200
    body = one.get_json()
    assert body["size_schema"] == SEEDED_SIZE_SCHEMAS["loadbalancer"]
    assert body["updated_at"].endswith("Z")
    missing = client.get("/v1/resource-types/openstack/share", headers=auth("read"))
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"
    assert client.get("/v1/resource-types/openstack/Bad-Type", headers=auth("read")).status_code == 400


def test_put_registers_and_replaces_and_is_enforced(client: FlaskClient) -> None:
    schema = {"type": "object", "required": ["gb"], "properties": {"gb": {"type": "number"}}}
    created = client.put("/v1/resource-types/openstack/share", json={"size_schema": schema},
                         headers=auth("admin"))
    assert created.status_code == 201
    assert created.get_json()["size_schema"] == schema

    def share(n: int, size: object) -> dict[str, object]:
        return event(n, resource_type="share", resource_id=f"s-{n}", event_type="share.create",
                     payload={"size": size})

    body = post(client, {"events": [share(1, {"gb": 1}), share(2, {"gb": "x"})]}).get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "rejected"]
    assert body["results"][1]["reason"].startswith("size_schema: openstack/share: /gb")

    replaced = client.put("/v1/resource-types/openstack/share",
                          json={"size_schema": {"type": "object"}}, headers=auth("admin"))
    assert replaced.status_code == 200
    fetched = client.get("/v1/resource-types/openstack/share", headers=auth("read")).get_json()
    assert fetched["size_schema"] == {"type": "object"}


def test_editing_the_seeded_document_keeps_what_the_operator_sent(client: FlaskClient) -> None:
    edited = dict(SEEDED_SIZE_SCHEMAS["loadbalancer"])
    edited["required"] = ["listeners"]
    assert client.put(URL, json={"size_schema": edited}, headers=auth("admin")).status_code == 200
    assert client.get(URL, headers=auth("read")).get_json()["size_schema"] == edited


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"{}",
        b'{"size_schema": {"type": "object"}, "x": 1}',
        b'{"size_schema": []}',
        b'{"size_schema": "object"}',
        b'{"size_schema": {"type": "no-such-type"}}',
        b'{"size_schema": {"type": "object", "required": "gb"}}',
        b'{"size_schema": {"minimum": "zero"}}',
        b'{"size_schema": {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 1}}',
        b'{"size_schema": {"type": "object", "description": "\\u0000"}}',
    ],
)
def test_put_refuses_what_is_not_a_json_schema(client: FlaskClient, body: bytes) -> None:
    response = client.put(URL, data=body, headers={**auth("admin"), "Content-Type": "application/json"})
    assert response.status_code == 400, response.get_json()
    assert client.get(URL, headers=auth("read")).get_json()["size_schema"] == (
        SEEDED_SIZE_SCHEMAS["loadbalancer"])


def test_roles(client: FlaskClient) -> None:
    doc = {"size_schema": {"type": "object"}}
    assert client.get("/v1/resource-types").status_code == 401
    assert client.get("/v1/resource-types", headers=auth("ingest")).status_code == 403
    assert client.put(URL, json=doc).status_code == 401
    assert client.put(URL, json=doc, headers=auth("read")).status_code == 403
    assert client.put(URL, json=doc, headers=auth("ingest")).status_code == 403


def test_patterns_run_in_linear_time_or_the_put_is_refused(client: FlaskClient) -> None:
    # Lookaround needs a backtracking engine: refused with the reason.
    refused = client.put("/v1/resource-types/openstack/share",
                         json={"size_schema": {"properties": {"tier": {"pattern": "^(?=a)"}}}},
                         headers=auth("admin"))
    assert refused.status_code == 400
    assert refused.get_json()["error"]["code"] == "invalid_schema"
    assert "pattern '^(?=a)' is not supported" in refused.get_json()["error"]["message"]
    # Nested quantifiers run on the linear engine: the event is answered at once.
    schema = {"type": "object", "properties": {"tier": {"type": "string", "pattern": "^(a+)+$"}}}
    put = client.put("/v1/resource-types/openstack/share", json={"size_schema": schema},
                     headers=auth("admin"))
    assert put.status_code == 201
    event = {"event_id": "slow-1", "event_type": "share.create.end", "platform": "openstack",
             "cloud": "c1", "resource_type": "share", "resource_id": "s1", "project_id": "p1",
             "timestamp": "2026-01-01T00:00:00Z", "source": "collector",
             "payload": {"size": {"tier": "a" * 40 + "b"}}}
    body = client.post("/v1/events", json={"events": [event]}, headers=auth("ingest")).get_json()
    assert body["rejected"] == 1
    assert body["results"][0]["reason"].startswith("size_schema: openstack/share: /tier: ")
    assert "does not match" in body["results"][0]["reason"]
