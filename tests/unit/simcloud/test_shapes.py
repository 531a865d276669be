"""Every listing item has exactly the members of the upstream api-ref sample."""

from __future__ import annotations

import pytest

from simcloud.config import WorldConfig
from simcloud.server import running_simcloud
from tests.conftest import load_fixture
from tests.unit.simcloud.apihelp import get, password_token

# (sample, key, path, microversion header, query, account).  nova's servers are held to
# nova 34's own answers, per server status (test_nova34_answers.py), not to the api-ref's.
CASES = [
    ("nova_flavors-detail-resp.json", "flavors", "/compute/v2.1/flavors/detail", None, {},
     "admin"),
    ("cinder_v3_volumes-list-detailed-response.json", "volumes", "/volume/v3/volumes/detail",
     None, {"all_tenants": 1}, "admin"),
    ("cinder_v3.69_volumes-list-detailed-response.json", "volumes",
     "/volume/v3/volumes/detail", "volume 3.69", {"all_tenants": 1}, "admin"),
    ("cinder_v3_volume-types-list-response.json", "volume_types", "/volume/v3/types", None, {},
     "admin"),
    ("neutron_floating-ips-list-response.json", "floatingips", "/networking/v2.0/floatingips",
     None, {}, "admin"),
    ("glance_images-list-response.json", "images", "/image/v2/images", None, {}, "admin"),
    ("octavia_loadbalancers-list-response.json", "loadbalancers",
     "/load-balancer/v2/lbaas/loadbalancers", None, {}, "admin"),
]


@pytest.fixture(scope="module")
def sim():
    with running_simcloud(WorldConfig(seed=1, scale=100)) as server:
        server.world.advance_to("2026-11-05T00:00:00Z")
        yield server


@pytest.mark.parametrize("sample,key,path,version,query,account", CASES,
                         ids=[c[0] for c in CASES])
def test_items_have_the_sample_members(sim, sample, key, path, version, query,
                                       account) -> None:
    reference = load_fixture(f"api/{sample}")
    token = password_token(sim, account)
    body = get(sim, path, token, version, **query).json()
    assert body[key], "the world should hold at least one item to compare"
    for item in body[key]:
        assert set(item) == set(reference[key][0]), item.get("id")
    top = set(reference) - {f"{key}_links", "next"}
    assert top <= set(body)
