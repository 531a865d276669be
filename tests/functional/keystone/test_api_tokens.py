"""The Reporting API in keystone mode (keystonemiddleware, [keystone_authtoken]
service_type = usage-history) against a real keystone: admin, a project member (its
own project only), expired and revoked tokens, an application credential with access
rules; ``tally --os-cloud`` and ``openstack tally`` find the API in the catalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tallyclient.cli.main import main as tally_main
from tests.functional.collector.harness import wait_until
from tests.functional.keystone.conftest import UNSCOPED_USER, Deployment
from tests.functional.keystone.server import ADMIN_PASSWORD, TOKEN_EXPIRATION_S, Admin, token

OPENSTACK = str(Path(sys.executable).parent / "openstack")


def _get(deployment: Deployment, path: str, auth: str | None, **params: str) -> requests.Response:
    return requests.get(deployment.api.base_url + path, params=params, timeout=60,
                        headers={"X-Auth-Token": auth} if auth else {})


@pytest.fixture(scope="module")
def seeded(deployment: Deployment) -> Deployment:
    """One instance in alpha, one in beta, posted as the collector's service user."""
    events: list[dict[str, Any]] = [{
        "event_id": f"ev-{uuid.uuid4().hex}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "ks", "resource_type": "instance",
        "resource_id": f"vm-{name}", "project_id": deployment.projects[name],
        "timestamp": "2026-11-01T00:00:00Z", "source": "collector",
        "payload": {"state": "active", "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 20,
                                                "flavor": "m1.small"}},
    } for name in ("alpha", "beta")]
    ingest = token(deployment.keystone, "tally-collector", deployment.password, system=True)
    response = requests.post(f"{deployment.api.base_url}/v1/events", json={"events": events},
                             headers={"X-Auth-Token": ingest}, timeout=60)
    assert response.status_code == 200, response.text
    return deployment


def test_admin_and_a_member_see_what_their_roles_allow(seeded: Deployment) -> None:
    admin = token(seeded.keystone, "admin", ADMIN_PASSWORD, system=True)
    listed = _get(seeded, "/v1/resources", admin, cloud="ks")
    assert sorted(item["resource_id"] for item in listed.json()["items"]) == [
        "vm-alpha", "vm-beta"]
    alice = token(seeded.keystone, "alice", seeded.password, project="alpha")
    mine = _get(seeded, "/v1/resources", alice, cloud="ks")
    assert [item["resource_id"] for item in mine.json()["items"]] == ["vm-alpha"]
    other = _get(seeded, "/v1/resources", alice, cloud="ks", project_id=seeded.projects["beta"])
    assert other.status_code == 403
    assert _get(seeded, "/v1/resources", None).status_code == 401


def test_a_revoked_token_is_refused(seeded: Deployment) -> None:
    alice = token(seeded.keystone, "alice", seeded.password, project="alpha")
    assert _get(seeded, "/v1/resources", alice).status_code == 200
    admin = token(seeded.keystone, "admin", ADMIN_PASSWORD, system=True)
    revoked = requests.delete(f"{seeded.keystone.auth_url}/auth/tokens", timeout=60,
                              headers={"X-Auth-Token": admin, "X-Subject-Token": alice})
    assert revoked.status_code == 204
    assert _get(seeded, "/v1/resources", alice).status_code == 401


def test_an_expired_token_is_refused(seeded: Deployment) -> None:
    early, issued = seeded.early_token
    wait_until(lambda: time.monotonic() > issued + TOKEN_EXPIRATION_S + 2,
               TOKEN_EXPIRATION_S + 60, "the session's first token to expire")
    assert _get(seeded, "/v1/resources", early).status_code == 401


def test_an_application_credential_with_access_rules(seeded: Deployment) -> None:
    alice = token(seeded.keystone, "alice", seeded.password, project="alpha")
    created = requests.post(
        f"{seeded.keystone.auth_url}/users/{seeded.users['alice']}/application_credentials",
        headers={"X-Auth-Token": alice}, timeout=60, json={"application_credential": {
            "name": f"inventory-{uuid.uuid4().hex[:6]}", "access_rules": [
                {"service": "usage-history", "method": "GET", "path": "/v1/resources"}]}})
    assert created.status_code == 201, created.text
    credential = created.json()["application_credential"]
    login = requests.post(f"{seeded.keystone.auth_url}/auth/tokens", timeout=60, json={
        "auth": {"identity": {"methods": ["application_credential"], "application_credential": {
            "id": credential["id"], "secret": credential["secret"]}}}})
    assert login.status_code == 201, login.text
    restricted = login.headers["X-Subject-Token"]
    allowed = _get(seeded, "/v1/resources", restricted, cloud="ks")
    assert allowed.status_code == 200, allowed.text
    assert [item["resource_id"] for item in allowed.json()["items"]] == ["vm-alpha"]
    # A request no rule allows is refused by keystonemiddleware.
    assert _get(seeded, "/v1/periods/ks", restricted).status_code == 401


def test_an_unscoped_token_is_refused_saying_why(seeded: Deployment) -> None:
    """A user without a default project, logging in with no scope, gets a token with no
    project, domain or system (so no roles): keystonemiddleware confirms it, and
    Tally's role checks answer 403 naming the scope, on a project read and an admin
    read alike."""
    login = requests.post(f"{seeded.keystone.auth_url}/auth/tokens", timeout=60, json={
        "auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": UNSCOPED_USER, "domain": {"id": "default"},
            "password": seeded.password}}}}})
    assert login.status_code == 201, login.text
    body = login.json()["token"]
    assert not {"project", "domain", "system"} & set(body), body
    assert not body.get("roles"), body
    unscoped = login.headers["X-Subject-Token"]
    for path, params in (("/v1/resources", {"cloud": "ks"}),
                         ("/v1/resources", {"cloud": "ks",
                                            "project_id": seeded.projects["alpha"]}),
                         ("/v1/clouds", {})):
        response = _get(seeded, path, unscoped, **params)
        assert response.status_code == 403, (path, response.text)
        error = response.json()["error"]
        assert error["code"] == "forbidden", error
        assert "an unscoped token (no project, domain or system scope, so no roles) " \
               "grants nothing in Tally" in error["message"], error


def _clouds_yaml(deployment: Deployment, path: Path, user: str = "alice",
                 project: str | None = "alpha") -> Path:
    auth = {"auth_url": deployment.keystone.auth_url, "username": user,
            "password": deployment.password, "user_domain_name": "Default"}
    if project:
        auth.update(project_name=project, project_domain_name="Default")
    path.write_text(yaml.safe_dump({"clouds": {user: {
        "auth": auth, "identity_api_version": 3, "region_name": deployment.region,
        "interface": "public"}}}))
    return path


def test_tally_os_cloud_with_an_unscoped_login_is_one_line(
        seeded: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clouds = _clouds_yaml(seeded, tmp_path / "clouds.yaml", UNSCOPED_USER, None)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    assert tally_main(["--os-cloud", UNSCOPED_USER, "inventory"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"tally: cloud {UNSCOPED_USER}: keystone gave an unscoped token (the entry names no "
        "project and the user has no default project): set project_name or project_id "
        "(that project's data) or system_scope: all (cloud-wide roles)"], captured.err


def test_tally_os_cloud_and_the_openstack_plugin(seeded: Deployment, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    clouds = _clouds_yaml(seeded, tmp_path / "clouds.yaml")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    # A project member's --type check must not need the type list it may not read.
    assert tally_main(["--os-cloud", "alice", "--format", "json", "inventory", "--type",
                       "instance"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [item["resource_id"] for item in listed] == ["vm-alpha"]
    done = subprocess.run([OPENSTACK, "--os-cloud", "alice", "tally", "resource", "list",
                           "--type", "instance", "-f", "value", "-c", "resource_id"],
                          env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds)},
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.split()) == (0, ["vm-alpha"]), done.stderr


def _grant(admin: Admin, target: str, user: str, role: str) -> None:
    """PUT a role assignment (``target``: ``projects/ID``, ``domains/ID``, ``system``)."""
    admin.call("PUT", f"/{target}/users/{user}/roles/{role}", expect=204)


def _login(deployment: Deployment, user: str, scope: dict[str, Any] | None) -> str:
    body: dict[str, Any] = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": user, "domain": {"id": "default"}, "password": deployment.password}}}}}
    if scope is not None:
        body["auth"]["scope"] = scope
    response = requests.post(f"{deployment.keystone.auth_url}/auth/tokens", json=body,
                             timeout=60)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


def test_cloud_wide_roles_follow_the_tokens_scope(seeded: Deployment) -> None:
    """keystone's admin role held on a tenant's project or a customer's domain is no
    Tally admin: only a system-scoped token is (docs/reporting-api.md)."""
    admin = Admin(seeded.keystone)  # a fresh token: the session's first has expired
    roles = {r["name"]: r["id"] for r in admin.call("GET", "/roles", expect=200)["roles"]}
    name = f"carol-{uuid.uuid4().hex[:6]}"
    carol = admin.user(name, seeded.password, seeded.projects["alpha"])
    _grant(admin, f"projects/{seeded.projects['alpha']}", carol, roles["admin"])
    _grant(admin, "domains/default", carol, roles["admin"])
    project_admin = _login(seeded, name, {"project": {"id": seeded.projects["alpha"]}})
    listed = _get(seeded, "/v1/resources", project_admin, cloud="ks")
    assert [item["resource_id"] for item in listed.json()["items"]] == ["vm-alpha"]
    assert _get(seeded, "/v1/clouds", project_admin).status_code == 403
    replay = requests.post(f"{seeded.api.base_url}/v1/rejected-events/replay", timeout=60,
                           headers={"X-Auth-Token": project_admin})
    assert replay.status_code == 403, replay.text
    domain_admin = _login(seeded, name, {"domain": {"id": "default"}})
    assert _get(seeded, "/v1/resources", domain_admin, cloud="ks").status_code == 403
    # Asked for no scope, keystone scopes the token to the user's default project
    # (alpha here), where the admin role again reads that project only.
    default = _login(seeded, name, None)
    listed = _get(seeded, "/v1/resources", default, cloud="ks")
    assert [item["resource_id"] for item in listed.json()["items"]] == ["vm-alpha"]
    # The same user with admin on the system: every project.
    _grant(admin, "system", carol, roles["admin"])
    system_admin = _login(seeded, name, {"system": {"all": True}})
    listed = _get(seeded, "/v1/resources", system_admin, cloud="ks")
    assert sorted(item["resource_id"] for item in listed.json()["items"]) == [
        "vm-alpha", "vm-beta"]
    assert _get(seeded, "/v1/clouds", system_admin).status_code == 200
