"""adapter_config accounts_by_domain against keystone's answers (requests-mock with
keystoneauth's fixtures): the projects listed and their domains; a cut list, a
malformed entry, a cloud whose catalog lacks keystone and a refusal are said in
``default_account_errors``, and never fail the run."""

from __future__ import annotations

import datetime as dt
from typing import Any

from reporting.openstack.adapter import OpenStackAdapter
from reporting.sync.observation import Observation, ObserveRequest
from tests.unit.sync.openstack.conftest import AUTH_URL, FakeCloud, deadline, token_body

AT = dt.datetime(2026, 3, 10, 12, 0)
PROJECTS = [
    {"id": "p1", "name": "one", "domain_id": "default", "is_domain": False},
    {"id": "p2", "name": "two", "domain_id": "8a3f", "is_domain": False},
    {"id": "8a3f", "name": "acme", "domain_id": "<<keystone.domain.root>>",
     "is_domain": True},
]


def _with_keystone(fake_cloud: FakeCloud) -> None:
    body = token_body()
    service = body.add_service("identity")
    service.add_standard_endpoints(public=AUTH_URL, internal=AUTH_URL, admin=AUTH_URL,
                                   region="RegionOne")
    fake_cloud.mock.post(f"{AUTH_URL}/auth/tokens", json=body,
                         headers={"X-Subject-Token": "tok-admin"}, status_code=201)


def _observe(env: dict[str, str]) -> Observation:
    adapter = OpenStackAdapter("c1", {"os_cloud": "testcloud",
                                      "accounts_by_domain": "{cloud}.{domain_id}"},
                               budget_s=30, environ=env)
    return adapter.observe(ObserveRequest("c1", AT, None, deadline()))


def _projects(fake_cloud: FakeCloud, body: Any, status: int = 200) -> None:
    fake_cloud.mock.get(f"{AUTH_URL}/projects", json=body, status_code=status)


def test_each_project_is_named_after_its_domain(fake_cloud: FakeCloud,
                                                clouds_env: dict[str, str]) -> None:
    _with_keystone(fake_cloud)
    _projects(fake_cloud, {"projects": PROJECTS, "links": {"next": None}})
    observation = _observe(clouds_env)
    assert observation.errors == [] and observation.default_account_errors == []
    assert observation.default_accounts == {
        "p1": ("c1.default", "keystone domain default of cloud c1"),
        "p2": ("c1.8a3f", "keystone domain 8a3f of cloud c1")}


def test_a_cut_list_and_a_malformed_project_are_said(fake_cloud: FakeCloud,
                                                     clouds_env: dict[str, str]) -> None:
    _with_keystone(fake_cloud)
    _projects(fake_cloud, {"projects": [*PROJECTS[:2], {"id": "p3"}], "truncated": True})
    observation = _observe(clouds_env)
    assert set(observation.default_accounts or {}) == {"p1", "p2"}
    assert observation.default_account_errors == [
        "keystone listed a project without an id and a domain_id: {'id': 'p3'}",
        "keystone cut its project list at 3 projects (its [DEFAULT] list_limit): the "
        "projects beyond it get no default account until it lists them all"]
    assert observation.errors == []


def test_a_refusal_says_which_permission_is_missing(fake_cloud: FakeCloud,
                                                    clouds_env: dict[str, str]) -> None:
    _with_keystone(fake_cloud)
    _projects(fake_cloud, {"error": {"code": 403, "title": "Forbidden", "message":
                                     "You are not authorized to perform the requested "
                                     "action: identity:list_projects."}}, status=403)
    observation = _observe(clouds_env)
    assert observation.default_accounts is None and observation.errors == []
    (error,) = observation.default_account_errors
    assert error.startswith("listing keystone's projects: keystone answered GET "), error
    assert "HTTP 403: You are not authorized" in error, error
    assert error.endswith("; the clouds.yaml entry's credentials need keystone's "
                          "identity:list_projects (an admin, or a system-scoped reader)")


def test_a_catalog_without_keystone_is_said(fake_cloud: FakeCloud,
                                            clouds_env: dict[str, str]) -> None:
    observation = _observe(clouds_env)  # the default catalog lists no identity service
    assert observation.default_accounts is None and observation.errors == []
    (error,) = observation.default_account_errors
    assert error.startswith("listing keystone's projects: ") and "identity" in error, error
