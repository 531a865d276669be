"""A run's errors quote what the cloud said (tests/fixtures/api/errors)."""

from __future__ import annotations

import pytest

from reporting.sync.observation import RunAborted
from tests.conftest import load_fixture
from tests.unit.sync.openstack.conftest import (
    AUTH_URL,
    CINDER,
    GLANCE,
    NEUTRON,
    NOVA,
    OCTAVIA,
    FakeCloud,
    token_body,
)
from tests.unit.sync.openstack.test_adapter import observe


def answer_with(fake_cloud: FakeCloud, url: str, fixture: str) -> None:
    sample = load_fixture(f"api/errors/{fixture}")
    fake_cloud.mock.get(url, status_code=sample["status"], text=sample["body"],
                        headers={"Content-Type": sample["content_type"],
                                 "x-openstack-request-id": "req-1234"})


def test_nova_refusing_the_probe_is_quoted(fake_cloud: FakeCloud, clouds_env):
    answer_with(fake_cloud, f"{NOVA}/servers/detail", "nova34_forbidden.json")
    with pytest.raises(RunAborted) as caught:
        observe(clouds_env)
    assert str(caught.value) == (
        'the clouds.yaml entry "testcloud" cannot observe the whole cloud: nova answered '
        "GET servers/detail with HTTP 403: Policy doesn't allow "
        "os_compute_api:servers:detail:get_all_tenants to be performed. (request id req-1234)")
    assert "Unrecognized schema" not in str(caught.value)


@pytest.mark.parametrize("url, fixture, rtype, expected", [
    # cinder's faults have nova's shape: nova 34's own 403 stands in for one
    (f"{CINDER}/volumes/detail", "nova34_forbidden.json", "volume",
     "cinder answered GET volumes/detail with HTTP 403: Policy doesn't allow "
     "os_compute_api:servers:detail:get_all_tenants to be performed."),
    (f"{NEUTRON}/v2.0/floatingips", "neutron_forbidden.json", "floating_ip",
     "neutron answered GET v2.0/floatingips with HTTP 403: (rule:get_floatingip) is "
     "disallowed by policy"),
    (f"{GLANCE}/v2/images", "glance_forbidden.json", "image",
     "glance answered GET v2/images with HTTP 403: You are not authorized to complete "
     "get_images action."),
    (f"{OCTAVIA}/v2/lbaas/loadbalancers", "octavia_forbidden.json", "loadbalancer",
     "octavia answered GET v2/lbaas/loadbalancers with HTTP 403: Policy does not allow "
     "this request to be performed."),
    (f"{CINDER}/volumes/detail", "nova_unauthorized-text.json", "volume",
     "cinder answered GET volumes/detail with HTTP 401: 401 Unauthorized This server could "
     "not verify that you are authorized to access the document you requested."),
    (f"{NEUTRON}/v2.0/floatingips", "proxy_503.json", "floating_ip",
     "neutron answered GET v2.0/floatingips with HTTP 503: 503 Service Unavailable No "
     "server is available to handle this request."),
])
def test_each_services_words_are_quoted(fake_cloud: FakeCloud, clouds_env, url, fixture,
                                        rtype, expected):
    answer_with(fake_cloud, url, fixture)
    observation = observe(clouds_env, include_octavia=True)
    [error] = [e for e in observation.errors if e.startswith(f"enumerating {rtype}: ")]
    assert error.startswith(f"enumerating {rtype}: {expected}")
    assert error.endswith("(request id req-1234)")
    assert rtype not in observation.enumerated_types


def test_a_service_missing_from_the_catalog_is_worded_as_such(fake_cloud: FakeCloud,
                                                              clouds_env):
    token = token_body()
    token["token"]["catalog"] = [s for s in token["token"]["catalog"] if s["type"] != "image"]
    fake_cloud.mock.post(f"{AUTH_URL}/auth/tokens", json=token,
                         headers={"X-Subject-Token": "tok-admin"}, status_code=201)
    observation = observe(clouds_env)
    assert observation.errors == [
        "enumerating image: the catalog lists no image endpoint (interface public, "
        "region RegionOne)"]
