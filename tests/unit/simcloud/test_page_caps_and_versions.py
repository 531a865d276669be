"""The knobs of a cloud configured the ways real ones are: per-service page caps,
an old nova's highest microversion, nova's version document unreadable."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from simcloud import model
from simcloud.config import ConfigError, WorldConfig
from simcloud.faults import FaultError
from simcloud.server import SimCloudServer, running_simcloud
from tests.unit.simcloud.apihelp import get, password_token

CAP = 4
CAPS = {"compute": CAP, "block-storage": CAP, "network": CAP, "image": CAP,
        "load-balancer": CAP}
# (path, items key, extra query) per type, each asking for far more than the cap.
LISTINGS = {
    model.INSTANCE: ("/compute/v2.1/servers/detail", "servers", {"all_tenants": "1"}),
    model.VOLUME: ("/volume/v3/volumes/detail", "volumes", {"all_tenants": "1"}),
    model.FLOATING_IP: ("/networking/v2.0/floatingips", "floatingips", {}),
    model.IMAGE: ("/image/v2/images", "images", {}),
    model.LOADBALANCER: ("/load-balancer/v2/lbaas/loadbalancers", "loadbalancers", {}),
}


@pytest.fixture(scope="module")
def capped() -> Iterator[SimCloudServer]:
    with running_simcloud(WorldConfig(seed=21, scale=120, hidden_image_fraction=0.0,
                                      page_caps=CAPS)) as server:
        yield server


def _live(sim: SimCloudServer, kind: str) -> set[str]:
    return {r["resource_id"] for r in sim.world.truth(resource_type=kind, live=True)}


def _next(body: dict, key: str) -> str | None:
    if key == "images":
        return body.get("next")
    links = [link["href"] for link in body.get(f"{key}_links", []) if link["rel"] == "next"]
    return links[0] if links else None


@pytest.mark.parametrize("kind", list(LISTINGS))
def test_a_capped_page_carries_a_next_link(capped: SimCloudServer, kind: str) -> None:
    path, key, params = LISTINGS[kind]
    token = password_token(capped, "admin")
    pages, ids = [], []
    response = get(capped, path, token, limit=1000, **params)
    while True:
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(len(body[key]))
        ids += [item["id"] for item in body[key]]
        link = _next(body, key)
        if link is None:
            break
        marker = parse_qs(urlsplit(link).query)["marker"][0]
        response = get(capped, path, token, limit=1000, marker=marker, **params)
    assert set(ids) == _live(capped, kind) and len(ids) == len(set(ids))
    assert max(pages) == CAP and len(pages) > 2  # every page capped, and linked


def test_neutron_caps_a_request_without_a_limit_and_links_a_full_last_page(
        capped: SimCloudServer) -> None:
    token = password_token(capped, "admin")
    body = get(capped, "/networking/v2.0/floatingips", token).json()
    assert len(body["floatingips"]) == CAP and _next(body, "floatingips")
    live = sorted(_live(capped, model.FLOATING_IP))
    # Pages of a size dividing the count: the page ending on the last address is full,
    # linked all the same, and the page after it is empty, with a previous link only.
    size = max(d for d in range(1, CAP + 1) if len(live) % d == 0)
    ids: list[str] = []
    marker = None
    while True:
        params = {"limit": size} if marker is None else {"limit": size, "marker": marker}
        body = get(capped, "/networking/v2.0/floatingips", token, **params).json()
        ids += [f["id"] for f in body["floatingips"]]
        link = _next(body, "floatingips")
        if link is None:
            break
        marker = parse_qs(urlsplit(link).query)["marker"][0]
    assert sorted(ids) == live
    assert body["floatingips"] == []
    assert [link["rel"] for link in body["floatingips_links"]] == ["previous"]


def test_cinder_caps_its_volume_types_too() -> None:
    with running_simcloud(WorldConfig(seed=3, scale=30,
                                      page_caps={"block-storage": 2})) as sim:
        token = password_token(sim, "admin")
        first = get(sim, "/volume/v3/types", token, is_public="None", limit=1000).json()
        assert len(first["volume_types"]) == 2 and first["volume_type_links"]
        marker = first["volume_types"][-1]["id"]
        rest = get(sim, "/volume/v3/types", token, is_public="None", marker=marker).json()
        names = [t["name"] for t in first["volume_types"] + rest["volume_types"]]
        assert names == [t.name for t in model.VOLUME_TYPES]


def test_page_caps_are_checked() -> None:
    with pytest.raises(ConfigError, match="page_caps: unknown APIs"):
        WorldConfig(page_caps={"swift": 10})
    with pytest.raises(ConfigError, match="whole number >= 1"):
        WorldConfig(page_caps={"network": 0})


def test_an_old_nova_names_its_highest_microversion_and_refuses_above_it() -> None:
    with running_simcloud(WorldConfig(seed=3, scale=30, nova_max_microversion="2.38")) as sim:
        token = password_token(sim, "admin")
        document = get(sim, "/compute/v2.1/", token).json()
        assert document["version"]["version"] == "2.38"
        assert get(sim, "/compute/v2.1/servers/detail", token, "compute 2.38",
                   all_tenants="1").status_code == 200
        refused = get(sim, "/compute/v2.1/servers/detail", token, "compute 2.47")
        assert refused.status_code == 406 and "maximum is 2.38" in refused.text
        latest = get(sim, "/compute/v2.1/servers/detail", token, "compute latest",
                     all_tenants="1")
        assert latest.headers["OpenStack-API-Version"] == "compute 2.38"
        assert "original_name" not in str(latest.json()["servers"][0]["flavor"])
    with pytest.raises(ConfigError, match="2.1-2.104"):
        WorldConfig(nova_max_microversion="2.200")


def test_nova_version_document_fault() -> None:
    with running_simcloud(WorldConfig(seed=3, scale=30)) as sim:
        token = password_token(sim, "admin")
        sim.world.faults.nova_version_document = 401
        assert get(sim, "/compute/v2.1", token).status_code == 401
        assert get(sim, "/compute/v2.1/", token).status_code == 401
        assert get(sim, "/compute/", None).status_code == 200  # the root stays public
        # Only the document: the listings answer as before.
        assert get(sim, "/compute/v2.1/servers/detail", token, all_tenants="1").status_code == 200
        sim.world.faults.nova_version_document = 503
        assert get(sim, "/compute/v2.1/", token).status_code == 503
        assert get(sim, "/compute/", None).status_code == 503
        sim.world.faults.apply_document({"nova_version_document": None})
        assert get(sim, "/compute/v2.1/", token).json()["version"]["version"] == "2.104"
        with pytest.raises(FaultError, match="nova_version_document"):
            sim.world.faults.apply_document({"nova_version_document": 500})
