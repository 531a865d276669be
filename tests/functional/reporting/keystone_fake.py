"""A keystone v3 faked at the transport (requests-mock + keystoneauth1 fixtures) for
the ``auth_strategy = keystone`` tests of the API, and their configuration."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import requests_mock
from keystoneauth1 import fixture as ks_fixture
from oslo_config import cfg

from reporting import opts

KEYSTONE = "http://keystone.test"
AUTH_URL = KEYSTONE + "/v3"
SERVICE_TOKEN = "service-" + uuid.uuid4().hex

KEYSTONE_SECTION = f"""
[keystone_authtoken]
# Every request asks keystone (a revoked token is refused at once).
token_cache_time = -1
auth_type = password
auth_url = {AUTH_URL}
www_authenticate_uri = {AUTH_URL}
username = tally
password = secret
project_name = service
user_domain_id = default
project_domain_id = default
service_token_roles_required = true
"""


def _user_token(roles: list[str], project_id: str | None = "p1", *,
                system: bool = False, domain_id: str = "default") -> dict[str, Any]:
    """A token body as keystone v3 answers ``GET /v3/auth/tokens``: scoped to the
    system (``"system": {"all": true}``, no project, no domain), to a domain
    (``project_id=None``) or to a project."""
    if system:
        token = ks_fixture.V3Token(user_id="u1", user_name="alice", user_domain_id="default")
        token.set_system_scope()
    elif project_id is None:  # a domain-scoped token
        token = ks_fixture.V3Token(user_id="u1", user_name="alice", user_domain_id="default",
                                   domain_id=domain_id, domain_name=f"name-{domain_id}")
    else:
        token = ks_fixture.V3Token(user_id="u1", user_name="alice", user_domain_id="default",
                                   project_id=project_id, project_name=f"name-{project_id}",
                                   project_domain_id=domain_id)
    for role in roles:
        token.add_role(name=role)
    return token


def _service_token() -> dict[str, Any]:
    token = ks_fixture.V3Token(user_id="svc", user_name="tally", project_id="svcp",
                               project_name="service", user_domain_id="default",
                               project_domain_id="default")
    token.add_role(name="service")
    identity = token.add_service("identity")
    identity.add_standard_endpoints(public=AUTH_URL, internal=AUTH_URL, admin=AUTH_URL)
    return token


class FakeKeystone:
    """Keystone v3 at the transport: discovery, the service login, token validation."""

    def __init__(self, mocker: requests_mock.Mocker) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.mocker = mocker
        discovery = ks_fixture.DiscoveryList(href=KEYSTONE, v2=False)
        mocker.get(KEYSTONE, json=discovery)
        mocker.get(AUTH_URL, json={"version": ks_fixture.V3Discovery(AUTH_URL)})
        mocker.post(AUTH_URL + "/auth/tokens", json=_service_token(),
                    headers={"X-Subject-Token": SERVICE_TOKEN}, status_code=201)
        mocker.get(AUTH_URL + "/auth/tokens", json=self._validate)
        self.validations = 0

    def issue(self, roles: list[str], project_id: str | None = "p1", *,
              domain_id: str = "default") -> str:
        """A token scoped to ``project_id`` (of ``domain_id``), or to the domain
        ``domain_id`` when ``project_id`` is None."""
        token_id = uuid.uuid4().hex
        self.tokens[token_id] = _user_token(roles, project_id, domain_id=domain_id)
        return token_id

    def issue_system(self, roles: list[str]) -> str:
        """A system-scoped token (``openstack --os-system-scope all token issue``)."""
        token_id = uuid.uuid4().hex
        self.tokens[token_id] = _user_token(roles, system=True)
        return token_id

    def revoke(self, token_id: str) -> None:
        del self.tokens[token_id]

    def _validate(self, request: Any, context: Any) -> dict[str, Any]:
        self.validations += 1
        if request.headers.get("X-Auth-Token") != SERVICE_TOKEN:
            context.status_code = 401
            return {"error": {"code": 401, "message": "service not authenticated"}}
        body = self.tokens.get(request.headers.get("X-Subject-Token", ""))
        if body is None:
            context.status_code = 404
            return {"error": {"code": 404, "message": "token not found"}}
        context.status_code = 200
        context.headers["X-Subject-Token"] = request.headers["X-Subject-Token"]
        return body


def keystone_conf(tmp_path: Path, db_url: str, extra: str = "") -> cfg.ConfigOpts:
    """A reporting ConfigOpts with auth_strategy=keystone against the fake keystone;
    ``extra`` goes into ``[api]``."""
    path = tmp_path / "tally.conf"
    path.write_text(f"[api]\nauth_strategy = keystone\n{extra}\n{KEYSTONE_SECTION}")
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf(["--config-file", str(path)], project="tally", default_config_files=[],
         default_config_dirs=[])
    conf.set_override("connection", db_url, group="database")
    return conf
