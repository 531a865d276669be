"""The simulated APIs answer like the real services on the requests Tally makes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from simcloud import model
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer, running_simcloud
from tests.unit.simcloud.apihelp import app_credential_token, get, password_token

MID_MONTH = dt.datetime(2026, 11, 12, 9, 30, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCloudServer]:
    with running_simcloud(WorldConfig(seed=17, scale=150, hidden_image_fraction=0.2)) as server:
        server.world.advance_to(MID_MONTH)
        yield server


@pytest.fixture(scope="module")
def admin(sim: SimCloudServer) -> str:
    return password_token(sim, "admin")


@pytest.fixture(scope="module")
def member(sim: SimCloudServer) -> str:
    return password_token(sim, "demo")


def _live_ids(sim: SimCloudServer, kind: str, project: str | None = None) -> set[str]:
    return {r["resource_id"] for r in sim.world.truth(resource_type=kind, live=True)
            if project is None or r["project_id"] == project}


# --- keystone ------------------------------------------------------------------------


def test_token_carries_the_catalog(sim: SimCloudServer) -> None:
    token = password_token(sim, "admin")
    assert token
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": "wrong"}}}}}
    import requests
    assert requests.post(f"{sim.base_url}/identity/v3/auth/tokens", json=body,
                         timeout=10).status_code == 401
    cred = sim.reader_credential
    response = app_credential_token(sim, cred.id, cred.secret)
    assert response.status_code == 201
    doc = response.json()["token"]
    types = {entry["type"] for entry in doc["catalog"]}
    assert {"compute", "volumev3", "block-storage", "network", "image", "load-balancer",
            "identity"} <= types
    assert doc["application_credential"]["access_rules"]
    assert app_credential_token(sim, cred.id, "nope").status_code == 401


def test_requests_without_a_valid_token_get_401(sim: SimCloudServer) -> None:
    assert get(sim, "/compute/v2.1/servers/detail", None).status_code == 401
    assert get(sim, "/networking/v2.0/floatingips", "bogus").status_code == 401
    assert get(sim, "/image/", None).status_code == 300  # version documents are public


# --- nova ------------------------------------------------------------------------------


def test_microversion_negotiation(sim: SimCloudServer, admin: str) -> None:
    plain = get(sim, "/compute/v2.1/servers/detail", admin, limit=1, all_tenants="1")
    assert plain.headers["OpenStack-API-Version"] == "compute 2.1"
    assert set(plain.json()["servers"][0]["flavor"]) == {"id", "links"}
    embedded = get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.47", limit=1,
                   all_tenants="1")
    assert embedded.headers["OpenStack-API-Version"] == "compute 2.47"
    assert "OpenStack-API-Version" in embedded.headers["Vary"]
    assert {"vcpus", "ram", "disk", "original_name"} <= set(embedded.json()["servers"][0]["flavor"])
    assert get(sim, "/compute/v2.1/servers/detail", admin, "compute latest").headers[
        "OpenStack-API-Version"] == "compute 2.104"
    assert get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.105").status_code == 406
    assert get(sim, "/compute/v2.1/servers/detail", admin, "compute two").status_code == 400
    version = get(sim, "/compute/v2.1", admin).json()["version"]
    assert (version["min_version"], version["version"]) == ("2.1", "2.104")


def test_unknown_query_parameters_from_2_75(sim: SimCloudServer, admin: str) -> None:
    assert get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.74",
               bogus="1").status_code == 200
    refused = get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.75", bogus="1")
    assert refused.status_code == 400 and "bogus" in refused.text
    # A nova filter the simulation does not implement is refused, never ignored.
    assert get(sim, "/compute/v2.1/servers/detail", admin, name="x").status_code == 400


def test_policy_for_a_member(sim: SimCloudServer, member: str) -> None:
    demo = sim.world.projects[0].id
    forbidden = get(sim, "/compute/v2.1/servers/detail", member, all_tenants="1")
    assert forbidden.status_code == 403 and "forbidden" in forbidden.json()
    own = get(sim, "/compute/v2.1/servers/detail", member).json()["servers"]
    assert {s["id"] for s in own} == _live_ids(sim, model.INSTANCE, demo)
    dropped = get(sim, "/compute/v2.1/servers/detail", member, deleted="true").json()["servers"]
    assert {s["id"] for s in dropped} == _live_ids(sim, model.INSTANCE, demo)
    volumes = get(sim, "/volume/v3/volumes/detail", member, all_tenants="1").json()["volumes"]
    assert {v["id"] for v in volumes} == _live_ids(sim, model.VOLUME, demo)
    fips = get(sim, "/networking/v2.0/floatingips", member).json()["floatingips"]
    assert {f["id"] for f in fips} == _live_ids(sim, model.FLOATING_IP, demo)
    lbs = get(sim, "/load-balancer/v2/lbaas/loadbalancers", member).json()["loadbalancers"]
    assert {lb["id"] for lb in lbs} == _live_ids(sim, model.LOADBALANCER, demo)
    images = get(sim, "/image/v2/images", member, limit=1000).json()["images"]
    assert images and all(i["owner"] == demo or i["visibility"] == "public" for i in images)


def test_deleted_servers_since(sim: SimCloudServer, admin: str) -> None:
    since = dt.datetime(2026, 11, 5, tzinfo=dt.UTC)
    body = get(sim, "/compute/v2.1/servers/detail", admin, all_tenants="1", deleted="true",
               **{"changes-since": since.isoformat()}).json()
    expected = {r["resource_id"] for r in sim.world.truth(resource_type=model.INSTANCE)
                if not r["live"] and r["deleted_at"] >= model.rfc3339(since.timestamp())}
    assert expected and {s["id"] for s in body["servers"]} == expected
    for server in body["servers"]:
        assert server["status"] == "DELETED" and server["OS-EXT-STS:vm_state"] == "deleted"
        assert server["OS-SRV-USG:terminated_at"] is not None
    everything = get(sim, "/compute/v2.1/servers/detail", admin, all_tenants="1",
                     **{"changes-since": since.isoformat()}).json()["servers"]
    assert expected < {s["id"] for s in everything}  # changes-since alone includes deleted


def test_flavors_include_private_ones_for_admins(sim: SimCloudServer, admin: str,
                                                 member: str) -> None:
    names = {f["name"] for f in get(sim, "/compute/v2.1/flavors/detail", admin,
                                    is_public="None").json()["flavors"]}
    assert "p1.gold" in names
    public = {f["name"] for f in get(sim, "/compute/v2.1/flavors/detail", member,
                                     is_public="None").json()["flavors"]}
    assert "p1.gold" not in public and "m1.tiny" in public


# --- pagination ----------------------------------------------------------------------

LISTINGS = {
    model.INSTANCE: ("/compute/v2.1/servers/detail", "servers", {"all_tenants": "1"}),
    model.VOLUME: ("/volume/v3/volumes/detail", "volumes", {"all_tenants": "1"}),
    model.FLOATING_IP: ("/networking/v2.0/floatingips", "floatingips", {}),
    model.IMAGE: ("/image/v2/images", "images", {}),
    model.LOADBALANCER: ("/load-balancer/v2/lbaas/loadbalancers", "loadbalancers", {}),
}


def _walk(sim: SimCloudServer, token: str, kind: str, limit: int) -> list[str]:
    path, key, params = LISTINGS[kind]
    ids: list[str] = []
    response = get(sim, path, token, limit=limit, **params)
    while True:
        assert response.status_code == 200, response.text
        body = response.json()
        ids += [item["id"] for item in body[key]]
        if kind == model.IMAGE:
            nxt = body.get("next")
            if nxt is None:
                return ids
            assert nxt.startswith("/v2/images?")  # glance's relative link
            response = get(sim, f"/image{nxt}", token)
            continue
        links = [link for link in body.get(f"{key}_links", []) if link["rel"] == "next"]
        if not links:
            return ids
        assert len(body[key]) == limit  # a link only on a full page
        response = get(sim, links[0]["href"], token)


@pytest.mark.parametrize("kind", model.RESOURCE_TYPES)
def test_every_page_size_returns_each_item_once(sim: SimCloudServer, admin: str,
                                                kind: str) -> None:
    expected = _live_ids(sim, kind)
    if kind == model.IMAGE:
        expected -= {r.id for r in sim.world.resources if r.hidden}
    assert len(expected) > 5
    for limit in range(1, len(expected) + 2):
        ids = _walk(sim, admin, kind, limit)
        assert len(ids) == len(set(ids)) and set(ids) == expected, limit


def test_service_specific_link_quirks(sim: SimCloudServer, admin: str) -> None:
    n = len(_live_ids(sim, model.INSTANCE))
    exact = get(sim, "/compute/v2.1/servers/detail", admin, all_tenants="1", limit=n).json()
    assert exact["servers_links"]  # nova links a full last page too
    fips = get(sim, "/networking/v2.0/floatingips", admin).json()
    assert "floatingips_links" not in fips  # neutron: no limit, no links
    assert len(fips["floatingips"]) == len(_live_ids(sim, model.FLOATING_IP))
    project = sim.world.projects[0].id
    lbs = get(sim, "/load-balancer/v2/lbaas/loadbalancers", admin, project_id=project,
              limit=1).json()
    href = lbs["loadbalancers_links"][0]["href"]
    assert "project_id" not in parse_qs(urlsplit(href).query)  # octavia drops filters
    images = get(sim, "/image/v2/images", admin, limit=3).json()
    assert len(images["images"]) == 3 and images["next"].startswith("/v2/images?")
    assert parse_qs(urlsplit(images["next"]).query)["limit"] == ["3"]
    assert get(sim, "/compute/v2.1/servers/detail", admin, marker="nope").status_code == 400


def test_hidden_images_only_when_asked(sim: SimCloudServer, admin: str) -> None:
    hidden = {r.id for r in sim.world.resources if r.hidden} & _live_ids(sim, model.IMAGE)
    assert hidden
    listed = get(sim, "/image/v2/images", admin, limit=1000, os_hidden="true").json()["images"]
    assert {i["id"] for i in listed} == hidden
    default = get(sim, "/image/v2/images", admin, limit=1000).json()["images"]
    assert not hidden & {i["id"] for i in default}


def test_volume_types_and_names(sim: SimCloudServer, admin: str, member: str) -> None:
    all_types = get(sim, "/volume/v3/types", admin, is_public="None").json()["volume_types"]
    assert any(t["is_public"] is False for t in all_types)
    public = get(sim, "/volume/v3/types", member, is_public="None").json()["volume_types"]
    assert all(t["is_public"] for t in public)
    names = {t["name"] for t in all_types}
    vols = get(sim, "/volume/v3/volumes/detail", admin, "volume 3.63",
               all_tenants="1").json()["volumes"]
    assert all(v["volume_type"] in names and "volume_type_id" in v for v in vols)
    assert get(sim, "/volume/v3/volumes/detail", admin, "volume 3.72").status_code == 406


def test_glance_default_page_and_limit_zero() -> None:
    with running_simcloud(WorldConfig(seed=8, scale=600, hidden_image_fraction=0.0)) as server:
        token = password_token(server, "admin")
        images = get(server, "/image/v2/images", token).json()
        # glance's next link keeps the query as it was asked: no limit when none was
        assert len(images["images"]) == 25 and "limit" not in images["next"]
        assert get(server, "/image/v2/images", token, limit=0).json()["images"] == []
        everything = get(server, "/networking/v2.0/floatingips", token, limit=0).json()
        assert len(everything["floatingips"]) == len(_live_ids(server, model.FLOATING_IP))
        assert get(server, "/compute/v2.1/servers/detail", token, limit=-1).status_code == 400
