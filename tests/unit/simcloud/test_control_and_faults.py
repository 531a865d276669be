"""Access rules, fault switches, down cells, transitions and the /_sim endpoints."""

from __future__ import annotations

import datetime as dt

import requests

from simcloud import model
from simcloud.config import WorldConfig
from simcloud.identity import READ_ONLY_RULES
from simcloud.server import running_simcloud
from tests.unit.simcloud.apihelp import app_credential_token, get, password_token

READ_PATHS = [
    "/compute/v2.1/", "/compute/v2.1/servers/detail", "/compute/v2.1/flavors/detail",
    "/volume/v3/volumes/detail", "/volume/v3/types", "/networking/v2.0/floatingips",
    "/image/v2/images", "/load-balancer/v2/lbaas/loadbalancers",
]


def test_access_rules_of_a_read_only_credential() -> None:
    with running_simcloud(WorldConfig(seed=2, scale=30)) as sim:
        cred = sim.reader_credential
        token = app_credential_token(sim, cred.id, cred.secret).headers["X-Subject-Token"]
        for path in READ_PATHS:
            assert get(sim, path, token).status_code == 200, path
        # nova redirects /v2.1 to /v2.1/, but keystonemiddleware sees /v2.1 first: `/**/`
        # does not match it (keystoneauth's own discovery reads /v2.1 without the slash).
        assert get(sim, "/compute/v2.1", token).status_code == 401
        admin = password_token(sim, "admin")
        redirect = requests.get(f"{sim.base_url}/compute/v2.1", allow_redirects=False,
                                headers={"X-Auth-Token": admin}, timeout=10)
        assert redirect.status_code == 302
        assert redirect.headers["Location"].endswith("/compute/v2.1/")
        # Nothing outside the eight rules: another path, another method.
        assert get(sim, "/compute/v2.1/os-hypervisors", token).status_code == 401
        assert requests.delete(f"{sim.base_url}/compute/v2.1/servers/detail",
                               headers={"X-Auth-Token": token}, timeout=10).status_code == 401
        narrow = sim.identity.add_application_credential(
            "admin", "no-types", access_rules=[r for r in READ_ONLY_RULES
                                               if not r["path"].endswith("/types")])
        token2 = app_credential_token(sim, narrow.id, narrow.secret).headers["X-Subject-Token"]
        assert get(sim, "/volume/v3/types", token2).status_code == 401
        assert get(sim, "/volume/v3/volumes/detail", token2).status_code == 200
        sim.identity.revoke_application_credential(narrow.id)
        assert get(sim, "/volume/v3/volumes/detail", token2).status_code == 401
        assert app_credential_token(sim, narrow.id, narrow.secret).status_code == 401


def test_cinder_with_a_service_type_the_catalog_lacks() -> None:
    with running_simcloud(WorldConfig(seed=2, scale=30,
                                      authtoken_service_types={"block-storage": "volume",
                                                               "network": ""})) as sim:
        cred = sim.reader_credential
        token = app_credential_token(sim, cred.id, cred.secret).headers["X-Subject-Token"]
        assert get(sim, "/volume/v3/volumes/detail", token).status_code == 401
        assert get(sim, "/networking/v2.0/floatingips", token).status_code == 401  # unset
        assert get(sim, "/compute/v2.1/servers/detail", token).status_code == 200
        admin = password_token(sim, "admin")  # no access rules: unaffected
        assert get(sim, "/volume/v3/volumes/detail", admin).status_code == 200


def test_fault_switches_in_python_and_over_http() -> None:
    with running_simcloud(WorldConfig(seed=2, scale=30)) as sim:
        admin = password_token(sim, "admin")
        sim.world.faults.set("block-storage", status=503)
        assert get(sim, "/volume/v3/volumes/detail", admin).status_code == 503
        assert get(sim, "/compute/v2.1/servers/detail", admin).status_code == 200
        sim.world.faults.set("block-storage")
        assert get(sim, "/volume/v3/volumes/detail", admin).status_code == 200
        answer = requests.post(f"{sim.base_url}/_sim/faults", timeout=10, json={
            "services": {"network": {"status": 401}, "image": {"delay_s": 0.01}}})
        assert answer.status_code == 200
        assert answer.json()["services"]["network"] == {"status": 401, "delay_s": 0.0}
        assert get(sim, "/networking/v2.0/floatingips", admin).status_code == 401
        assert get(sim, "/image/v2/images", admin).status_code == 200
        bad = requests.post(f"{sim.base_url}/_sim/faults", timeout=10, json={
            "services": {"compute": {"status": 503}, "swift": {"status": 503}}})
        assert bad.status_code == 400 and "swift" in bad.text
        assert sim.world.faults.get("compute") is None  # all or nothing
        sim.world.faults.set("identity", status=503)
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"name": "Default"}, "password": "simcloud-admin"}}}}}
        assert requests.post(f"{sim.base_url}/identity/v3/auth/tokens", json=body,
                             timeout=10).status_code == 503
        assert requests.delete(f"{sim.base_url}/_sim/faults", timeout=10).json() == {
            "services": {}, "down_cell_fraction": 0.0, "nova_version_document": None}


def test_down_cell_servers() -> None:
    with running_simcloud(WorldConfig(seed=4, scale=200)) as sim:
        admin = password_token(sim, "admin")
        live = {r["resource_id"] for r in sim.world.truth(resource_type="instance", live=True)}
        sim.world.faults.down_cell_fraction = 0.3
        old = get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.68",
                  all_tenants="1").json()["servers"]
        assert 0 < len(old) < len(live)  # skipped silently below 2.69
        new = get(sim, "/compute/v2.1/servers/detail", admin, "compute 2.69",
                  all_tenants="1").json()["servers"]
        assert {s["id"] for s in new} == live
        minimal = [s for s in new if s["status"] == "UNKNOWN"]
        assert len(minimal) == len(live) - len(old)
        assert all(set(s) == {"id", "status", "tenant_id", "created", "links"} for s in minimal)


def test_listings_show_operations_in_flight() -> None:
    config = WorldConfig(seed=12, scale=400)
    with running_simcloud(config) as sim:
        world = sim.world
        # The first instant some instance, volume and load balancer are mid-operation.
        start = config.start.timestamp()
        candidates = [p.at for r in world.resources for p in r.phases
                      if p.at > start + 3600 and model.in_transition(r, p)]
        at = min(candidates)
        world.advance_to(model.to_datetime(at))
        admin = password_token(sim, "admin")
        servers = get(sim, "/compute/v2.1/servers/detail", admin, all_tenants="1").json()
        volumes = get(sim, "/volume/v3/volumes/detail", admin, all_tenants="1").json()
        lbs = get(sim, "/load-balancer/v2/lbaas/loadbalancers", admin).json()
        in_flight = (
            [s for s in servers["servers"] if s["OS-EXT-STS:task_state"]]
            + [v for v in volumes["volumes"] if v["status"] in model.VOLUME_TRANSITIONS]
            + [lb for lb in lbs["loadbalancers"]
               if lb["provisioning_status"].startswith("PENDING_")])
        truth = [r for r in world.truth() if r["live"] and r["in_transition"]]
        assert in_flight and {x["id"] for x in in_flight} == {r["resource_id"] for r in truth}


def test_clock_and_truth_over_http() -> None:
    with running_simcloud(WorldConfig(seed=3, scale=40)) as sim:
        url = f"{sim.base_url}/_sim"
        clock = requests.get(f"{url}/clock", timeout=10).json()
        assert clock["at"] == clock["start"] == "2026-11-01T00:00:00.000000Z"
        moved = requests.post(f"{url}/clock", json={"at": "2026-11-04T00:00:00Z"}, timeout=10)
        assert moved.status_code == 200 and moved.json()["at"] == "2026-11-04T00:00:00.000000Z"
        assert moved.json()["moved"]["generated"] > 0
        back = requests.post(f"{url}/clock", json={"at": "2026-11-02T00:00:00Z"}, timeout=10)
        assert back.status_code == 409
        assert requests.post(f"{url}/clock", json={"at": "soon"}, timeout=10).status_code == 400
        assert requests.post(f"{url}/clock", json={"when": "x"}, timeout=10).status_code == 400
        truth = requests.get(f"{url}/truth", timeout=10).json()
        assert truth["resources"] == sim.world.truth()
        past = requests.get(f"{url}/truth", timeout=10, params={
            "at": "2026-11-02T00:00:00Z", "resource_type": "volume", "live": "true"}).json()
        assert past["resources"] == sim.world.truth(
            dt.datetime(2026, 11, 2, tzinfo=dt.UTC), "volume", True)
        assert requests.get(f"{url}/truth", params={"resource_type": "server"},
                            timeout=10).status_code == 400


def test_a_cloud_without_cinder_has_no_block_storage_in_its_catalog() -> None:
    import pytest

    from simcloud.cmd import build_parser, world_config
    from simcloud.config import ConfigError

    with running_simcloud(WorldConfig(seed=2, scale=30,
                                      absent_services=frozenset({"block-storage"}))) as sim:
        admin = password_token(sim, "admin")
        catalog = requests.get(f"{sim.base_url}/identity/v3/auth/tokens", timeout=10,
                               headers={"X-Auth-Token": admin, "X-Subject-Token": admin}
                               ).json()["token"]["catalog"]
        types = {service["type"] for service in catalog}
        assert {"compute", "network", "image"} <= types
        assert not types & {"block-storage", "volumev3"}
        assert get(sim, "/volume/v3/volumes/detail", admin).status_code == 404
        assert get(sim, "/compute/v2.1/servers/detail", admin).status_code == 200
    with pytest.raises(ConfigError, match="absent_services"):
        WorldConfig(absent_services=frozenset({"compute"}))
    args = build_parser().parse_args(["serve", "--without-service", "block-storage"])
    assert world_config(args).absent_services == {"block-storage"}
