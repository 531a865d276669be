"""A fake OpenStack at the transport: keystoneauth's token fixture + requests-mock.

Every API answers with the real upstream samples in tests/fixtures/api.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml
from keystoneauth1 import fixture as ks_fixture

from tests.conftest import load_fixture

AUTH_URL = "http://keystone.test/v3"
NOVA = "http://nova.test/v2.1"
CINDER = "http://cinder.test/v3/proj"
NEUTRON = "http://neutron.test"
GLANCE = "http://glance.test"
OCTAVIA = "http://octavia.test"
NOVA_TWO = "http://nova-two.test/v2.1"


def api(name: str) -> Any:
    return copy.deepcopy(load_fixture(f"api/{name}"))


def token_body() -> dict[str, Any]:
    token = ks_fixture.V3Token(project_id="admin-project", user_id="admin-user")
    token.set_project_scope()
    for service_type, url, url_two in (
        ("compute", NOVA, NOVA_TWO),
        ("volumev3", CINDER, None),
        ("network", NEUTRON, None),
        ("image", GLANCE, None),
        ("load-balancer", OCTAVIA, None),
    ):
        service = token.add_service(service_type)
        service.add_standard_endpoints(public=url, internal=url, admin=url, region="RegionOne")
        if url_two:
            service.add_standard_endpoints(public=url_two, internal=url_two, region="RegionTwo")
    return token


def write_clouds_yaml(directory: Path, entry: str = "testcloud", **extra: Any) -> Path:
    cloud = {
        "auth_type": "password",
        "auth": {"auth_url": AUTH_URL, "username": "admin", "password": "secret",
                 "project_name": "admin", "user_domain_name": "Default",
                 "project_domain_name": "Default"},
        "region_name": "RegionOne",
        "interface": "public",
        **extra,
    }
    path = directory / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {entry: cloud}}))
    return path


class FakeCloud:
    """Registers the default happy answers; tests override single URLs."""

    def __init__(self, mock: requests_mock.Mocker) -> None:
        self.mock = mock
        mock.get(AUTH_URL, json={"version": ks_fixture.V3Discovery(AUTH_URL)})
        mock.post(f"{AUTH_URL}/auth/tokens", json=token_body(),
                  headers={"X-Subject-Token": "tok-admin"}, status_code=201)
        version = api("nova_v21-version-get-resp.json")
        for root in (NOVA, NOVA_TWO):
            mock.get(root, json=version)
            mock.get(root + "/", json=version)
        servers = api("nova_v2.47_servers-details-resp.json")
        self.pages(f"{NOVA}/servers/detail", "servers", servers["servers"],
                   servers["servers_links"])
        mock.get(f"{NOVA}/flavors/detail", json=api("nova_flavors-detail-resp.json"))
        mock.get(f"{CINDER}/volumes/detail",
                 json=api("cinder_v3_volumes-list-detailed-response.json"))
        mock.get(f"{CINDER}/types", json=api("cinder_v3_volume-types-list-response.json"))
        mock.get(f"{NEUTRON}/v2.0/floatingips",
                 json=api("neutron_floating-ips-list-response.json"))
        self.images(api("glance_images-list-response.json")["images"], hidden=[])
        mock.get(f"{OCTAVIA}/v2/lbaas/loadbalancers",
                 json=api("octavia_loadbalancers-list-response.json"))

    def pages(self, url: str, key: str, items: list[Any], links: list[Any]) -> None:
        """First page ``items`` with ``links``; a request with a marker gets an empty page."""

        def answer(request: Any, context: Any) -> dict[str, Any]:
            if "marker" in request.qs:
                return {key: [], f"{key}_links": []}
            return {key: items, f"{key}_links": links}

        self.mock.get(url, json=answer)

    def images(self, visible: list[Any], hidden: list[Any]) -> None:
        def answer(request: Any, context: Any) -> dict[str, Any]:
            chosen = hidden if request.qs.get("os_hidden") == ["true"] else visible
            return {"images": chosen, "first": "/v2/images", "schema": "/v2/schemas/images"}

        self.mock.get(f"{GLANCE}/v2/images", json=answer)

    def requested(self, fragment: str) -> list[Any]:
        return [r for r in self.mock.request_history if fragment in r.url]


@pytest.fixture
def fake_cloud() -> Iterator[FakeCloud]:
    with requests_mock.Mocker() as mock:
        yield FakeCloud(mock)


@pytest.fixture
def clouds_env(tmp_path: Path) -> dict[str, str]:
    path = write_clouds_yaml(tmp_path)
    return {"OS_CLIENT_CONFIG_FILE": str(path)}


def deadline() -> float:
    return time.monotonic() + 30
