"""auth_strategy=keystone: keystonemiddleware's auth_token validates tokens against a
keystone v3 faked at the transport (requests-mock + keystoneauth1 fixtures)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import requests_mock
from flask import Flask
from flask.testing import FlaskClient
from oslo_config import cfg

from reporting.api.auth import AuthConfigError
from reporting.api.keystone_auth import NO_ROLE, tally_role
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from reporting.ingest import ingest
from tests.functional.reporting import keystone_fake
from tests.functional.reporting.keystone_fake import AUTH_URL, FakeKeystone


@pytest.fixture
def keystone() -> Iterator[FakeKeystone]:
    with requests_mock.Mocker() as mocker:
        yield FakeKeystone(mocker)


@pytest.fixture
def keystone_conf(tmp_path: Path, db_url: str) -> Callable[..., cfg.ConfigOpts]:
    def factory(extra: str = "") -> cfg.ConfigOpts:
        return keystone_fake.keystone_conf(tmp_path, db_url, extra)

    return factory


@pytest.fixture
def keystone_app(keystone_conf: Callable[..., cfg.ConfigOpts]) -> Iterator[Flask]:
    app = create_app(keystone_conf("keystone_role_map = admin:admin,reader:read,"
                                   "member:read,tally_ingest:ingest"))
    yield app
    app.extensions[ENGINE_KEY].dispose()


@pytest.fixture
def ks_client(keystone_app: Flask) -> FlaskClient:
    return keystone_app.test_client()


def test_missing_or_unknown_token_is_401(keystone: FakeKeystone, ks_client: FlaskClient) -> None:
    assert ks_client.get("/v1/resources").status_code == 401
    response = ks_client.get("/v1/resources", headers={"X-Auth-Token": "nope"})
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "unauthorized"
    assert keystone.validations >= 1  # the unknown token was asked about


def test_mapped_roles_grant_tally_roles(keystone: FakeKeystone, ks_client: FlaskClient) -> None:
    # System-scoped tokens: every mapped role grants what it maps to.
    reader = {"X-Auth-Token": keystone.issue_system(["reader"])}
    assert ks_client.get("/v1/resources", headers=reader).status_code == 200
    response = ks_client.post("/v1/events", json={"events": []}, headers=reader)
    assert response.status_code == 403
    ingest = {"X-Auth-Token": keystone.issue_system(["tally_ingest"])}
    assert ks_client.post("/v1/events", json={"events": []}, headers=ingest).status_code == 200
    assert ks_client.get("/v1/resources", headers=ingest).status_code == 403
    # Keystone role names in any case, as oslo.policy compares them.
    admin = {"X-Auth-Token": keystone.issue_system(["Admin"])}
    assert ks_client.get("/v1/resources", headers=admin).status_code == 200
    assert ks_client.post("/v1/events", json={"events": []}, headers=admin).status_code == 200


def test_valid_token_without_a_mapped_role_is_403(
    keystone: FakeKeystone, ks_client: FlaskClient
) -> None:
    headers = {"X-Auth-Token": keystone.issue(["load-balancer_member"])}
    response = ks_client.get("/v1/resources", headers=headers)
    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "forbidden"


def test_identity_headers_sent_by_the_client_are_not_trusted(
    keystone: FakeKeystone, ks_client: FlaskClient
) -> None:
    forged = {"X-Identity-Status": "Confirmed", "X-Roles": "admin"}
    assert ks_client.get("/v1/resources", headers=forged).status_code == 401
    forged["X-Auth-Token"] = keystone.issue(["member"])
    response = ks_client.post("/v1/events", json={"events": []}, headers=forged)
    assert response.status_code == 403  # the token's own role (read), not the forged one


def test_open_endpoints_need_no_token(keystone: FakeKeystone, ks_client: FlaskClient) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/v1/openapi.json"):
        assert ks_client.get(path).status_code == 200, path


def test_default_role_map(keystone: FakeKeystone,
                          keystone_conf: Callable[..., cfg.ConfigOpts]) -> None:
    app = create_app(keystone_conf())
    client = app.test_client()
    try:
        member = {"X-Auth-Token": keystone.issue(["member"])}
        assert client.get("/v1/resources", headers=member).status_code == 200
        assert client.post("/v1/events", json={"events": []}, headers=member).status_code == 403
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_role_map_naming_an_unknown_tally_role_refuses_to_start(
    keystone_conf: Callable[..., cfg.ConfigOpts],
) -> None:
    with pytest.raises(AuthConfigError, match="superuser"):
        create_app(keystone_conf("keystone_role_map = admin:superuser"))


def test_strongest_role_wins() -> None:
    role_map = {"admin": "admin", "reader": "read", "svc": "ingest"}
    assert tally_role(["reader", "svc"], role_map) == "ingest"
    assert tally_role(["reader", "ADMIN"], role_map) == "admin"
    assert tally_role(["reader"], role_map) == "read"
    assert tally_role(["other"], role_map) == NO_ROLE
    assert tally_role([], role_map) == NO_ROLE
    # One name is one role: never split at a comma, never trimmed.
    assert tally_role(["reader,admin"], role_map) == NO_ROLE
    assert tally_role([" admin"], role_map) == NO_ROLE


# --- project scope -------------------------------------------------------------------

def _seed(app: Flask) -> None:
    """vm-1 in p1, vm-2 in p2, over one hour."""
    events = []
    for number, project in ((1, "p1"), (2, "p2")):
        events.append({
            "event_id": f"ev-{number}", "event_type": "compute.instance.create.end",
            "platform": "openstack", "cloud": "c1", "resource_type": "instance",
            "resource_id": f"vm-{number}", "project_id": project,
            "timestamp": "2026-01-10T00:00:00Z", "source": "collector",
            "payload": {"state": "active", "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 20,
                                                       "flavor": "m1.small"}},
        })
    results = ingest(app.extensions[SESSIONMAKER_KEY], events, require_size_schema=False)
    assert [r.status for r in results] == ["stored", "stored"], [r.reason for r in results]


USAGE = "/v1/usage?from=2026-01-10T00:00:00Z&to=2026-01-10T01:00:00Z"
VM = "/v1/resources/openstack/c1/instance/vm-{}"


def test_member_token_reads_its_project_only(keystone: FakeKeystone,
                                            keystone_conf: Callable[..., cfg.ConfigOpts]) -> None:
    app = create_app(keystone_conf())  # the default map: member -> project_reader
    try:
        _seed(app)
        client = app.test_client()
        member = {"X-Auth-Token": keystone.issue(["member"], "p1")}
        body = client.get("/v1/resources", headers=member).get_json()
        assert [item["resource_id"] for item in body["items"]] == ["vm-1"]
        usage = client.get(USAGE, headers=member).get_json()["items"]
        assert [(item["resource_id"], item["seconds"]) for item in usage] == [("vm-1", 3600)]
        for suffix in ("", "/events", "/lifecycle"):
            assert client.get(VM.format(1) + suffix, headers=member).status_code == 200
            assert client.get(VM.format(2) + suffix, headers=member).status_code == 404
        for path in ("/v1/resources?project_id=p2", USAGE + "&project_id=p2"):
            assert client.get(path, headers=member).status_code == 403
        reader_p2 = {"X-Auth-Token": keystone.issue(["reader"], "p2")}
        body = client.get("/v1/resources", headers=reader_p2).get_json()
        assert [item["resource_id"] for item in body["items"]] == ["vm-2"]
        admin = {"X-Auth-Token": keystone.issue_system(["admin"])}  # cloud-wide
        body = client.get("/v1/resources", headers=admin).get_json()
        assert [item["resource_id"] for item in body["items"]] == ["vm-1", "vm-2"]
        assert client.get(VM.format(2), headers=admin).status_code == 200
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_project_reader_without_a_project_scope_is_403(
    keystone: FakeKeystone, keystone_conf: Callable[..., cfg.ConfigOpts]
) -> None:
    app = create_app(keystone_conf())
    try:
        domain_scoped = {"X-Auth-Token": keystone.issue(["member"], None)}
        response = app.test_client().get("/v1/resources", headers=domain_scoped)
        assert response.status_code == 403
        message = response.get_json()["error"]["message"]
        assert "a domain-scoped token grants nothing" in message, message
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_revoked_token_is_401(keystone: FakeKeystone, ks_client: FlaskClient) -> None:
    token = keystone.issue(["reader"])
    assert ks_client.get("/v1/resources", headers={"X-Auth-Token": token}).status_code == 200
    keystone.revoke(token)  # keystone answers 404 for it from now on
    response = ks_client.get("/v1/resources", headers={"X-Auth-Token": token})
    assert response.status_code == 401


@pytest.mark.parametrize(("failure", "seen_as"), [
    (requests.exceptions.ConnectionError("refused"), "ConnectFailure"),
    # A keystone that accepts and never answers (the middleware lets this one through).
    (requests.exceptions.ReadTimeout("read timed out"), "ConnectTimeout"),
    (requests.exceptions.ConnectTimeout("connect timed out"), "ConnectTimeout"),
    (requests.exceptions.SSLError("certificate verify failed"), "SSLError"),
    (requests.exceptions.ChunkedEncodingError("connection broken"), "UnknownConnectionError"),
])
def test_keystone_unreachable_is_503_not_a_hang(
    keystone_conf: Callable[..., cfg.ConfigOpts], failure: Exception, seen_as: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="reporting.api.keystone_auth")
    with requests_mock.Mocker() as mocker:
        mocker.register_uri(requests_mock.ANY, requests_mock.ANY, exc=failure)
        app = create_app(keystone_conf())
        try:
            client = app.test_client()
            response = client.get("/v1/resources", headers={"X-Auth-Token": "some-token"})
            assert response.status_code == 503
            error = response.get_json()["error"]
            assert error["code"] == "keystone_unavailable"
            assert "keystone is unavailable" in error["message"]
            assert f"({seen_as}" in error["message"], error["message"]
            late = "keystone did not answer in time" in error["message"]
            assert late == (seen_as == "ConnectTimeout"), error["message"]
            # keystone's address is for the operator's log, not for the caller.
            assert "keystone.test" not in response.get_data(as_text=True)
            logged = [r.getMessage() for r in caplog.records
                      if "keystone is unavailable" in r.getMessage()]
            assert logged and f"{seen_as}: " in logged[-1], logged
            timed_out = "http_connect_timeout = 5 s" in logged[-1]
            assert timed_out == (seen_as == "ConnectTimeout"), logged[-1]
            # A service token is validated by the same path.
            response = client.get("/v1/resources", headers={"X-Auth-Token": "some-token",
                                                            "X-Service-Token": "svc-token"})
            assert response.status_code == 503
            # A request without a token needs no keystone: still a plain 401.
            assert client.get("/v1/resources").status_code == 401
            assert client.get("/healthz").status_code == 200
        finally:
            app.extensions[ENGINE_KEY].dispose()


def test_keystone_waits_are_bounded_by_default(
    keystone: FakeKeystone, keystone_conf: Callable[..., cfg.ConfigOpts]
) -> None:
    conf = keystone_conf()
    app = create_app(conf)
    try:
        assert conf.keystone_authtoken.http_connect_timeout == 5
        assert conf.keystone_authtoken.http_request_max_retries == 1
    finally:
        app.extensions[ENGINE_KEY].dispose()
    conf = keystone_conf("[keystone_authtoken]\nhttp_connect_timeout = 2\n")
    app = create_app(conf)
    try:
        assert conf.keystone_authtoken.http_connect_timeout == 2  # the file still wins
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_service_user_refused_by_keystone_is_503(
    keystone: FakeKeystone, keystone_conf: Callable[..., cfg.ConfigOpts],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The service user's own login fails (a wrong [keystone_authtoken] password).
    keystone.mocker.post(AUTH_URL + "/auth/tokens", status_code=401,
                         json={"error": {"code": 401, "message": "bad password"}})
    app = create_app(keystone_conf())
    try:
        response = app.test_client().get(
            "/v1/resources", headers={"X-Auth-Token": keystone.issue(["member"])})
        assert response.status_code == 503
        message = response.get_json()["error"]["message"]
        assert "(ServiceError; " in message, message
        assert any("rejected authorization" in record.getMessage()
                   for record in caplog.records if record.name == "reporting.api.keystone_auth")
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_clouds_list_is_cloud_wide(keystone: FakeKeystone,
                                   keystone_conf: Callable[..., cfg.ConfigOpts]) -> None:
    """Cloud names and every cloud's resource count: not for a project's member, nor
    for a token whose roles map to no Tally role."""
    app = create_app(keystone_conf("keystone_role_map = admin:admin,member:project_reader,"
                                   "tally_auditor:read,tally_ingest:ingest"))
    try:
        _seed(app)
        client = app.test_client()
        for roles in (["member"], ["load-balancer_member"]):
            response = client.get("/v1/clouds", headers={"X-Auth-Token": keystone.issue(roles)})
            assert response.status_code == 403, roles
            assert response.get_json()["error"]["code"] == "forbidden"
        for roles in (["tally_ingest"], ["tally_auditor"], ["admin"]):
            # Project-scoped, these roles read the project at most.
            response = client.get("/v1/clouds", headers={"X-Auth-Token": keystone.issue(roles)})
            assert response.status_code == 403, roles
            response = client.get("/v1/clouds",
                                  headers={"X-Auth-Token": keystone.issue_system(roles)})
            assert response.status_code == 200, roles
            assert response.get_json()["items"][0]["resources"] == 2
    finally:
        app.extensions[ENGINE_KEY].dispose()
