"""openstacksdk and keystoneauth1, used as an operator would, against tally-simcloud."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import openstack
import openstack.config
import pytest
from keystoneauth1.adapter import Adapter

from simcloud import model
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer, running_simcloud

AT = dt.datetime(2026, 11, 9, 14, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCloudServer, Path]]:
    with running_simcloud(WorldConfig(seed=31, scale=120, hidden_image_fraction=0.2)) as server:
        server.world.advance_to(AT)
        path = server.write_clouds_yaml(tmp_path_factory.mktemp("sim") / "clouds.yaml")
        yield server, path


@pytest.fixture
def clouds(sim: tuple[SimCloudServer, Path], monkeypatch: pytest.MonkeyPatch) -> SimCloudServer:
    server, path = sim
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    return server


def _truth_ids(server: SimCloudServer, kind: str, project: str | None = None) -> set[str]:
    return {r["resource_id"] for r in server.world.truth(resource_type=kind, live=True)
            if project is None or r["project_id"] == project}


def test_admin_lists_every_type_with_openstacksdk(clouds: SimCloudServer) -> None:
    conn = openstack.connect(cloud="sim-admin")
    try:
        servers = list(conn.compute.servers(details=True, all_projects=True))
        assert {s.id for s in servers} == _truth_ids(clouds, model.INSTANCE)
        volumes = list(conn.block_storage.volumes(details=True, all_projects=True))
        assert {v.id for v in volumes} == _truth_ids(clouds, model.VOLUME)
        ips = list(conn.network.ips())
        assert {i.id for i in ips} == _truth_ids(clouds, model.FLOATING_IP)
        hidden = {r.id for r in clouds.world.resources if r.hidden}
        images = {i.id for i in conn.image.images()} | {
            i.id for i in conn.image.images(os_hidden=True)}
        assert images == _truth_ids(clouds, model.IMAGE)
        assert hidden & images
        lbs = list(conn.load_balancer.load_balancers())
        assert {lb.id for lb in lbs} == _truth_ids(clouds, model.LOADBALANCER)
        types = {t.name for t in conn.block_storage.types(is_public="None")}
        assert {"__DEFAULT__", "gold-private"} <= types
    finally:
        conn.close()


def test_member_gets_403_from_nova_and_its_own_project_elsewhere(clouds: SimCloudServer) -> None:
    conn = openstack.connect(cloud="sim-member")
    demo = clouds.world.projects[0].id
    try:
        with pytest.raises(openstack.exceptions.ForbiddenException):
            list(conn.compute.servers(all_projects=True))
        assert {s.id for s in conn.compute.servers()} == _truth_ids(clouds, model.INSTANCE, demo)
        assert {v.id for v in conn.block_storage.volumes(all_projects=True)} == \
            _truth_ids(clouds, model.VOLUME, demo)
        assert {i.id for i in conn.network.ips()} == _truth_ids(clouds, model.FLOATING_IP, demo)
        assert {lb.id for lb in conn.load_balancer.load_balancers()} == \
            _truth_ids(clouds, model.LOADBALANCER, demo)
    finally:
        conn.close()


LISTINGS = [
    ("compute", "servers/detail", "servers", {"all_tenants": 1}, model.INSTANCE, "2.47"),
    ("block-storage", "volumes/detail", "volumes", {"all_tenants": 1}, model.VOLUME, "3.63"),
    ("network", "v2.0/floatingips", "floatingips", {}, model.FLOATING_IP, None),
    ("image", "v2/images", "images", {}, model.IMAGE, None),
    ("load-balancer", "v2/lbaas/loadbalancers", "loadbalancers", {}, model.LOADBALANCER, None),
]


def _adapter(entry: str, service_type: str) -> Adapter:
    region = openstack.config.get_cloud_region(cloud=entry)
    return Adapter(region.get_session(), service_type=service_type, interface="public",
                   region_name="RegionOne")


def _walk(adapter: Adapter, path: str, key: str, params: dict, limit: int,
          microversion: str | None) -> list[dict]:
    """Follow the service's next links, taking only the marker (the safe way)."""
    items: list[dict] = []
    query = dict(params, limit=limit)
    while True:
        body = adapter.get(path, params=query, microversion=microversion).json()
        page = body[key]
        items += page
        links = body.get(f"{key}_links") or []
        has_next = any(link["rel"] == "next" for link in links) or body.get("next")
        if not has_next or not page:
            return items
        query = dict(params, limit=limit, marker=page[-1]["id"])


@pytest.mark.parametrize("service_type,path,key,params,kind,microversion", LISTINGS)
def test_keystoneauth_pagination_every_page_size(clouds: SimCloudServer, service_type: str,
                                                 path: str, key: str, params: dict, kind: str,
                                                 microversion: str | None) -> None:
    adapter = _adapter("sim-admin-readonly", service_type)
    expected = _truth_ids(clouds, kind)
    if kind == model.IMAGE:
        expected -= {r.id for r in clouds.world.resources if r.hidden}
    for limit in range(1, len(expected) + 2):
        items = _walk(adapter, path, key, params, limit, microversion)
        ids = [item["id"] for item in items]
        assert len(ids) == len(set(ids)) and set(ids) == expected, limit


def test_sizes_and_states_read_through_keystoneauth(clouds: SimCloudServer) -> None:
    truth = {r["resource_id"]: r for r in clouds.world.truth() if r["live"]}
    nova = _adapter("sim-admin", "compute")
    servers = _walk(nova, "servers/detail", "servers", {"all_tenants": 1}, 1000, "2.47")
    for server in servers:
        record = truth[server["id"]]
        flavor = server["flavor"]
        assert record["size"] == {"vcpus": flavor["vcpus"], "ram_gb": flavor["ram"] / 1024,
                                  "disk_gb": flavor["disk"] + flavor["ephemeral"],
                                  "flavor": flavor["original_name"]}
        assert record["status"] == server["OS-EXT-STS:vm_state"]
        assert record["task_state"] == server["OS-EXT-STS:task_state"]
    cinder = _adapter("sim-admin", "volumev3")
    for volume in _walk(cinder, "volumes/detail", "volumes", {"all_tenants": 1}, 1000, "3.0"):
        record = truth[volume["id"]]
        assert record["size"] == {"size_gb": volume["size"], "type": volume["volume_type"]}
        assert record["project_id"] == volume["os-vol-tenant-attr:tenant_id"]


def test_deleted_servers_window(clouds: SimCloudServer) -> None:
    nova = _adapter("sim-admin", "compute")
    since = AT - dt.timedelta(days=2)
    deleted = _walk(nova, "servers/detail", "servers",
                    {"all_tenants": 1, "deleted": "true",
                     "changes-since": since.strftime("%Y-%m-%dT%H:%M:%SZ")}, 7, "2.47")
    expected = {r["resource_id"]: r for r in clouds.world.truth(resource_type=model.INSTANCE)
                if not r["live"] and r["deleted_at"] >= model.rfc3339(since.timestamp())}
    assert expected and {s["id"] for s in deleted} == set(expected)
    for server in deleted:
        terminated = dt.datetime.fromisoformat(server["OS-SRV-USG:terminated_at"]).replace(
            tzinfo=dt.UTC)
        assert model.rfc3339(terminated.timestamp()) == expected[server["id"]]["deleted_at"]
