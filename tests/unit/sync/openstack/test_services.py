"""adapter_config ``services``: a cloud runs the services its entry names.  A type
whose service is not named is not observed (so never absence-deleted); a named
service the catalog lacks fails the run."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from reporting.openstack.adapter import OpenStackAdapter
from reporting.openstack.settings import parse_settings
from reporting.sync.observation import ObserveRequest, RunAborted
from tests.unit.sync.openstack.conftest import AUTH_URL, FakeCloud, deadline, token_body

AT = dt.datetime(2026, 3, 10, 12, 0)
SINCE = dt.datetime(2026, 3, 10, 11, 0)


def observe(env: dict[str, str], config: dict[str, Any], since: dt.datetime | None = None):
    adapter = OpenStackAdapter("c1", {"os_cloud": "testcloud", **config}, budget_s=30,
                               environ=env)
    return adapter.observe(ObserveRequest("c1", AT, since, deadline()))


def without_block_storage(fake_cloud: FakeCloud) -> None:
    body = token_body()
    body["token"]["catalog"] = [service for service in body["token"]["catalog"]
                                if service["type"] != "volumev3"]
    fake_cloud.mock.post(f"{AUTH_URL}/auth/tokens", json=body,
                         headers={"X-Subject-Token": "tok-admin"}, status_code=201)


def test_a_cloud_without_cinder_completes_and_opens_the_deleted_servers(
        fake_cloud: FakeCloud, clouds_env: dict[str, str]) -> None:
    without_block_storage(fake_cloud)
    observation = observe(clouds_env, {"services": ["compute", "network", "image"]}, SINCE)
    assert observation.errors == []
    assert observation.enumerated_types == {"instance", "floating_ip", "image"}
    assert observation.size_names is None  # no volume types asked for
    assert not fake_cloud.requested("cinder.test")
    deleted = [r for r in fake_cloud.requested("/servers/detail") if "deleted" in r.qs]
    assert deleted, "the deleted-servers listing opens"


def test_a_named_service_missing_from_the_catalog_fails_the_run(
        fake_cloud: FakeCloud, clouds_env: dict[str, str]) -> None:
    without_block_storage(fake_cloud)
    observation = observe(clouds_env, {})  # the default names block-storage
    assert "volume" not in observation.enumerated_types
    assert any(error.startswith("enumerating volume: ") and "block-storage" in error
               for error in observation.errors), observation.errors


def test_include_octavia_is_the_deprecated_spelling_of_load_balancer() -> None:
    core = {"compute", "block-storage", "network", "image"}
    assert parse_settings({"os_cloud": "e"}).services == core
    assert parse_settings({"os_cloud": "e", "include_octavia": True}).services == \
        core | {"load-balancer"}
    assert parse_settings({"os_cloud": "e", "services": ["compute", "load-balancer"]}
                          ).include_octavia


@pytest.mark.parametrize(("config", "message"), [
    ({"services": ["compute", "volume"]},
     r"services: unknown service type\(s\) 'volume' \(known: compute, block-storage, "),
    ({"services": "compute"}, "services must be a list of catalog service types"),
    ({"services": ["network"]}, "services must include compute"),
    ({"services": ["compute"], "include_octavia": True},
     "give services or include_octavia, not both"),
])
def test_a_bad_services_setting_aborts_naming_it(config: dict[str, Any], message: str) -> None:
    with pytest.raises(RunAborted, match=r"^adapter_config: " + message):
        parse_settings({"os_cloud": "e", **config})


def test_accounts_by_domain_is_a_template_naming_the_domain() -> None:
    settings = parse_settings({"os_cloud": "x", "accounts_by_domain": "{cloud}-{domain_id}"})
    assert settings.domain_account("eu1", "8a3f") == "eu1-8a3f"
    assert parse_settings({"os_cloud": "x"}).accounts_by_domain is None
    for bad, why in (("{cloud}", "must be text naming {domain_id}"),
                     (True, "must be text naming {domain_id}"),
                     ("{domain_id}-{region}", "uses a name other than {cloud}, {domain_id}"),
                     ("{domain_id}}", "uses a name other than")):
        with pytest.raises(RunAborted, match=re.escape(why)):
            parse_settings({"os_cloud": "x", "accounts_by_domain": bad})
