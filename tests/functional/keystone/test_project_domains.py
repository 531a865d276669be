"""The keystone project list behind adapter_config accounts_by_domain, against the
real keystone: which scopes may list it (keystone's ``identity:list_projects``), the
domains it names, and its refusal in keystone's own words."""

from __future__ import annotations

import time
import uuid

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from reporting.openstack.errors import ServiceAnswered
from reporting.openstack.http import Budget, ServiceClient
from reporting.openstack.keystone_projects import project_domains
from tests.functional.keystone.conftest import Deployment
from tests.functional.keystone.server import ADMIN_PASSWORD


def _identity(deployment: Deployment, user: str, password: str, **scope: str | bool
              ) -> ServiceClient:
    auth = v3.Password(auth_url=deployment.keystone.auth_url, username=user,
                       password=password, user_domain_id="default", **scope)
    session = ks_session.Session(auth=auth)
    adapter = ks_adapter.Adapter(session, service_type="identity", interface="public")
    return ServiceClient(adapter, Budget(time.monotonic() + 60, 60), "identity")


def test_an_admin_lists_every_project_with_its_domain(deployment: Deployment) -> None:
    name = f"acme-{uuid.uuid4().hex[:8]}"
    domain = deployment.admin.call("POST", "/domains", {"domain": {"name": name}})["domain"]
    project = deployment.admin.call("POST", "/projects", {"project": {
        "name": "web", "domain_id": domain["id"]}})["project"]
    for scope in ({"project_name": "admin", "project_domain_id": "default"},
                  {"system_scope": "all"}):
        found, problems = project_domains(_identity(deployment, "admin", ADMIN_PASSWORD,
                                                    **scope))
        assert problems == []
        assert found[project["id"]] == domain["id"], scope
        assert found[deployment.projects["alpha"]] == "default"
        assert domain["id"] not in found  # a domain is not a project of its own


def test_a_projects_member_is_refused_in_keystones_words(deployment: Deployment) -> None:
    identity = _identity(deployment, "alice", deployment.password, project_name="alpha",
                         project_domain_id="default")
    with pytest.raises(ServiceAnswered) as refused:
        project_domains(identity)
    assert refused.value.http_status == 403
    assert str(refused.value).startswith("keystone answered GET "), str(refused.value)
    assert "identity:list_projects" in str(refused.value), str(refused.value)
