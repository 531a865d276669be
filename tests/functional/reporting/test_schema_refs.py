"""A size schema is self-contained: ``$ref`` that cannot be resolved, or that points
outside the document, is refused at PUT (400 invalid_schema), and ingest never does
network I/O, even under a schema stored before that rule.  Both backends."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.clock import utcnow
from reporting.db.models import ResourceType
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import event, post


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A socket that listens and never answers: a fetch of it would hang."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def connections(server: socket.socket) -> int:
    accepted = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return accepted
        conn.close()
        accepted += 1


def put(client: FlaskClient, schema: object) -> tuple[int, str]:
    response = client.put("/v1/resource-types/openstack/instance", json={"size_schema": schema},
                          headers=auth("admin"))
    return response.status_code, response.get_json().get("error", {}).get("code", "")


def remote(server: socket.socket) -> str:
    return f"http://127.0.0.1:{server.getsockname()[1]}/size.json"


@pytest.mark.parametrize("ref", ["#/$defs/missing", "#nowhere", "other.json#/x"])
def test_put_refuses_an_unresolvable_ref(client: FlaskClient, ref: str) -> None:
    schema = {"type": "object", "properties": {"vcpus": {"$ref": ref}}}
    assert put(client, schema) == (400, "invalid_schema")


def test_put_refuses_a_remote_ref_without_fetching_it(
    client: FlaskClient, silent_server: socket.socket
) -> None:
    assert put(client, {"$ref": remote(silent_server)}) == (400, "invalid_schema")
    assert put(client, {"$dynamicRef": remote(silent_server)}) == (400, "invalid_schema")
    assert connections(silent_server) == 0


def test_put_takes_a_local_ref(client: FlaskClient) -> None:
    schema = {"type": "object", "$defs": {"count": {"type": "integer", "minimum": 0}},
              "properties": {"vcpus": {"$ref": "#/$defs/count"}}}
    assert put(client, schema)[0] == 200
    bad = event(1)
    bad["payload"]["size"]["vcpus"] = -1
    body = post(client, {"events": [event(0), bad]}).get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "rejected"]


@pytest.mark.parametrize("kind", ["remote", "unresolvable"])
def test_ingest_under_a_stored_bad_ref_rejects_offline(
    client: FlaskClient, session_factory: sessionmaker[Session], silent_server: socket.socket,
    kind: str,
) -> None:
    ref = remote(silent_server) if kind == "remote" else "#/$defs/missing"
    with session_factory() as session, session.begin():
        session.execute(sa.update(ResourceType).where(
            ResourceType.platform == "openstack", ResourceType.resource_type == "instance",
        ).values(size_schema={"properties": {"vcpus": {"$ref": ref}}}, updated_at=utcnow()))
    response = post(client, {"events": [event(1)]})
    assert response.status_code == 200
    (result,) = response.get_json()["results"]
    assert result["status"] == "rejected"
    assert result["reason"].startswith("size_schema: openstack/instance: ")
    assert "reference" in result["reason"]
    assert connections(silent_server) == 0


DATA_KEYWORDS = ["enum", "const", "default", "examples"]


def named(where: str, name: str, schema: dict[str, object]) -> dict[str, object]:
    """A schema holding ``schema`` under ``name`` in the name map ``where``."""
    if where == "dependentSchemas":
        return {"type": "object", "dependentSchemas": {name: schema}}
    return {"type": "object", where: {name: schema}}


@pytest.mark.parametrize("where", ["properties", "patternProperties", "$defs", "definitions",
                                   "dependentSchemas"])
def test_a_schema_named_like_a_data_keyword_is_checked(
    client: FlaskClient, silent_server: socket.socket, where: str
) -> None:
    # Under a name map "enum" is a property's (or definition's) name, not the keyword.
    for name in DATA_KEYWORDS:
        assert put(client, named(where, name, {"$ref": remote(silent_server)})) == (
            400, "invalid_schema"), name
        assert put(client, named(where, name, {"$ref": "#/$defs/missing"})) == (
            400, "invalid_schema"), name
    assert connections(silent_server) == 0


def test_a_local_ref_under_a_property_named_enum_resolves(client: FlaskClient) -> None:
    schema = {"type": "object", "$defs": {"enum": {"type": "integer", "minimum": 0}},
              "properties": {"vcpus": {"$ref": "#/$defs/enum"},
                             "enum": {"$ref": "#/$defs/enum"}}}
    assert put(client, schema)[0] == 200


@pytest.mark.parametrize("keyword", DATA_KEYWORDS)
def test_a_ref_inside_data_is_data(client: FlaskClient, keyword: str) -> None:
    # The value of enum/const/default/examples is an instance: its "$ref" is a string.
    value = {"$ref": "http://203.0.113.1/never-fetched.json"}
    data = [value] if keyword in ("enum", "examples") else value
    schema = {"type": "object", "properties": {"vcpus": {"type": "integer"},
                                               "note": {keyword: data}}}
    assert put(client, schema)[0] == 200
