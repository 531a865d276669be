"""What a keystone token's roles grant in Tally depends on the token's scope (the
OpenStack convention; the table in docs/reporting-queries.md, "Keystone scopes"):
system-scoped, scoped to a configured admin project, to a tenant's project, to a
domain. Tokens are minted by the keystone faked at the transport (keystone_fake) with
the scope keystone puts in them (``system: {all: true}``, ``domain``, ``project``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests_mock
from flask import Flask
from flask.testing import FlaskClient

from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from reporting.ingest import ingest
from tests.functional.reporting import keystone_fake
from tests.functional.reporting.keystone_fake import FakeKeystone

ROLE_MAP = ("keystone_role_map = admin:admin,member:project_reader,reader:project_reader,"
            "tally_auditor:read,tally_ingest:ingest,tally_billing:account_reader\n"
            "keystone_admin_project_ids = p-ops")
BOTH = ["vm-1", "vm-2"]


@pytest.fixture
def keystone() -> Iterator[FakeKeystone]:
    with requests_mock.Mocker() as mocker:
        yield FakeKeystone(mocker)


@pytest.fixture
def client(keystone: FakeKeystone, tmp_path: Path, db_url: str) -> Iterator[FlaskClient]:
    app = create_app(keystone_fake.keystone_conf(tmp_path, db_url, ROLE_MAP))
    try:
        _seed(app)
        yield app.test_client()
    finally:
        app.extensions[ENGINE_KEY].dispose()


def _seed(app: Flask) -> None:
    """vm-1 in p1, vm-2 in p2."""
    events = [{
        "event_id": f"ev-{n}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "c1", "resource_type": "instance",
        "resource_id": f"vm-{n}", "project_id": f"p{n}", "timestamp": "2026-01-10T00:00:00Z",
        "source": "collector", "payload": {"state": "active"},
    } for n in (1, 2)]
    results = ingest(app.extensions[SESSIONMAKER_KEY], events, require_size_schema=False)
    assert [r.status for r in results] == ["stored", "stored"]


@dataclass(frozen=True)
class Grant:
    """What a token may do: the inventory it reads (None: 403), the cloud-wide reads
    (the clouds list), ingest, and the admin writes (price lists, replay, sync)."""

    reads: list[str] | None
    clouds: bool = False
    ingest: bool = False
    admin: bool = False


NOTHING = Grant(None)
# (scope, keystone roles) -> what Tally allows. A scope is "system", "project:P" or
# "domain:D"; p-ops is [api] keystone_admin_project_ids.
TABLE: list[tuple[str, list[str], Grant]] = [
    ("system", ["admin"], Grant(BOTH, clouds=True, ingest=True, admin=True)),
    ("system", ["reader"], Grant(BOTH, clouds=True)),
    ("system", ["member"], Grant(BOTH, clouds=True)),
    ("system", ["tally_auditor"], Grant(BOTH, clouds=True)),
    ("system", ["tally_ingest"], Grant(None, clouds=True, ingest=True)),
    ("project:p-ops", ["admin"], Grant(BOTH, clouds=True, ingest=True, admin=True)),
    ("project:p-ops", ["tally_ingest"], Grant(None, clouds=True, ingest=True)),
    ("project:p-ops", ["member"], Grant([])),  # reads p-ops, which holds nothing
    # A tenant's project admin: its own project, nothing cloud-wide.
    ("project:p1", ["admin"], Grant(["vm-1"])),
    ("project:p1", ["admin", "member", "tally_auditor"], Grant(["vm-1"])),
    ("project:p2", ["reader"], Grant(["vm-2"])),
    ("project:p1", ["tally_ingest"], NOTHING),
    # What one role loses to the scope does not take what another grants.
    ("project:p1", ["tally_ingest", "member"], Grant(["vm-1"])),
    # A customer's domain admin: Tally cannot tell which projects its domain holds.
    ("domain:d-acme", ["admin"], NOTHING),
    ("domain:default", ["admin", "member"], NOTHING),
    # One role whose name holds a comma is one role, mapped to nothing.
    ("system", ["member,admin"], NOTHING),
    ("project:p1", ["member,admin"], NOTHING),
]


def _token(keystone: FakeKeystone, scope: str, roles: list[str]) -> dict[str, str]:
    if scope == "system":
        return {"X-Auth-Token": keystone.issue_system(roles)}
    kind, _, name = scope.partition(":")
    if kind == "domain":
        return {"X-Auth-Token": keystone.issue(roles, None, domain_id=name)}
    return {"X-Auth-Token": keystone.issue(roles, name)}


def _allowed(status: int) -> bool:
    assert status != 401
    return status != 403


@pytest.mark.parametrize(("scope", "roles", "grant"), TABLE,
                         ids=[f"{scope}-{'+'.join(roles)}" for scope, roles, _ in TABLE])
def test_what_a_scoped_token_may_do(keystone: FakeKeystone, client: FlaskClient, scope: str,
                                    roles: list[str], grant: Grant) -> None:
    headers = _token(keystone, scope, roles)
    listed = client.get("/v1/resources", headers=headers)
    if grant.reads is None:
        assert listed.status_code == 403, listed.get_json()
    else:
        assert listed.status_code == 200, listed.get_json()
        assert [item["resource_id"] for item in listed.get_json()["items"]] == grant.reads
    assert _allowed(client.get("/v1/clouds", headers=headers).status_code) == grant.clouds
    posted = client.post("/v1/events", json={"events": []}, headers=headers)
    assert _allowed(posted.status_code) == grant.ingest
    for method, path, body in (("PUT", "/v1/price-lists/default", {}),
                               ("POST", "/v1/rejected-events/replay", {"ids": []}),
                               ("POST", "/internal/sync/c1", None)):
        answer = client.open(path, method=method, json=body, headers=headers)
        assert _allowed(answer.status_code) == grant.admin, (method, path, answer.get_json())


def test_a_403_says_what_the_scope_took_away(keystone: FakeKeystone,
                                            client: FlaskClient) -> None:
    project_admin = _token(keystone, "project:p1", ["admin"])
    answer = client.put("/v1/price-lists/default", json={}, headers=project_admin)
    message = answer.get_json()["error"]["message"]
    assert answer.status_code == 403
    assert "maps to admin, which needs a system-scoped token" in message, message
    assert "reads that project only" in message, message
    collector = _token(keystone, "project:p1", ["tally_ingest"])
    message = client.post("/v1/events", json={"events": []},
                          headers=collector).get_json()["error"]["message"]
    assert "maps to ingest, which needs a system-scoped token" in message, message
    domain_admin = _token(keystone, "domain:d-acme", ["admin"])
    message = client.get("/v1/resources", headers=domain_admin).get_json()["error"]["message"]
    assert "a domain-scoped token grants nothing" in message, message


def test_a_service_token_keystone_refuses_is_401(keystone: FakeKeystone,
                                                 client: FlaskClient) -> None:
    headers = {**_token(keystone, "system", ["admin"]), "X-Service-Token": "unknown"}
    answer = client.get("/v1/resources", headers=headers)
    assert answer.status_code == 401, answer.get_json()


def test_an_account_reader_reads_the_account_holding_its_project(
        keystone: FakeKeystone, client: FlaskClient) -> None:
    """acme holds p1 and p2 of c1: a token scoped to p1 whose role maps to
    account_reader reads acme and both projects; scoped to p3 (in no account) or
    system-scoped it reads nothing, and says why."""
    admin = _token(keystone, "system", ["admin"])
    assert client.post("/v1/accounts", json={"account_id": "acme"},
                       headers=admin).status_code == 201
    for project in ("p1", "p2"):
        joined = client.post("/v1/accounts/acme/memberships", headers=admin, json={
            "cloud": "c1", "project_id": project, "effective_from": "2026-01-01T00:00:00Z"})
        assert joined.status_code == 201, joined.get_json()
    reader = _token(keystone, "project:p1", ["tally_billing", "member"])
    listed = client.get("/v1/resources", headers=reader)
    assert [item["resource_id"] for item in listed.get_json()["items"]] == BOTH
    accounts = client.get("/v1/accounts", headers=reader).get_json()
    assert [item["account_id"] for item in accounts["items"]] == ["acme"]
    assert client.get("/v1/accounts/acme", headers=reader).status_code == 200
    assert client.get("/v1/clouds", headers=reader).status_code == 403
    outside = client.get("/v1/resources", headers=_token(keystone, "project:p3",
                                                         ["tally_billing"]))
    assert outside.status_code == 403
    assert "belongs to no billing account now" in outside.get_json()["error"]["message"]
    system = client.get("/v1/accounts", headers=_token(keystone, "system", ["tally_billing"]))
    assert system.status_code == 403
    assert "a system-scoped token names no project" in system.get_json()["error"]["message"]
