"""The OpenStack adapter against the upstream API samples, faked at the transport."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from reporting.openstack.adapter import OpenStackAdapter
from reporting.sync.observation import ObserveRequest, RunAborted
from tests.unit.sync.openstack.conftest import (
    CINDER,
    GLANCE,
    NEUTRON,
    NOVA,
    NOVA_TWO,
    FakeCloud,
    api,
    deadline,
    write_clouds_yaml,
)

AT = dt.datetime(2026, 3, 10, 12, 0)
ALL = {"instance", "volume", "floating_ip", "image"}


def observe(env: dict[str, str], *, include_octavia: bool = False,
            since: dt.datetime | None = None, config: dict | None = None):
    adapter_config = config if config is not None else {
        "os_cloud": "testcloud", "include_octavia": include_octavia}
    adapter = OpenStackAdapter("c1", adapter_config, budget_s=30, environ=env)
    return adapter.observe(ObserveRequest("c1", AT, since, deadline()))


def by_type(observation, rtype):
    return {o.resource_id: o for o in observation.resources if o.resource_type == rtype}


def test_full_observation_of_every_type(fake_cloud: FakeCloud, clouds_env):
    observation = observe(clouds_env, include_octavia=True)
    assert observation.errors == []
    assert observation.enumerated_types == ALL | {"loadbalancer"}
    server = by_type(observation, "instance")["764e369e-a874-4401-b7ce-43e4760888da"]
    # 2.47+: the embedded flavor, never the catalogue.
    assert server.size == {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny.specs"}
    assert server.state == "active" and server.project_id == "6f70656e737461636b20342065766572"
    assert server.created_at == dt.datetime(2017, 2, 14, 19, 24, 42)
    assert server.last_changed == dt.datetime(2017, 2, 14, 19, 24, 43)
    assert not fake_cloud.requested("/flavors/detail")
    microversions = {r.headers.get("OpenStack-API-Version") for r in fake_cloud.requested("servers")}
    assert microversions == {"compute 2.69"}
    volume = by_type(observation, "volume")["cb49b381-9012-40cb-b8ee-80c19a4801b5"]
    assert volume.size == {"size_gb": 10, "type": "__DEFAULT__"}
    assert volume.in_transition and volume.state == "creating"
    assert len(by_type(observation, "floating_ip")) == 3
    assert by_type(observation, "floating_ip")["2f245a7b-796b-4f26-9cf9-9e82d248fda7"].size == {
        "ip_version": 4}
    image = by_type(observation, "image")["1bea47ed-f6a9-463b-b423-14b9cca9ad27"]
    assert image.size == {"size_gb": 13167616 / 1073741824} and image.state == "active"
    lb = by_type(observation, "loadbalancer")["607226db-27ef-4d41-ae89-f2a800e9c2db"]
    assert lb.size == {"listeners": 1, "pools": 1} and lb.state == "active"
    assert lb.last_changed == dt.datetime(2017, 2, 28, 0, 43, 30)
    assert {(e.kind, e.name) for e in observation.size_names} >= {("volume_type", "__DEFAULT__")}
    # The listings pass every project's flag where the service has one.
    assert all(r.qs.get("all_tenants") == ["1"] for r in fake_cloud.requested("/detail"))


def test_admin_probe_precedes_every_listing(fake_cloud: FakeCloud, clouds_env):
    observe(clouds_env)
    listings = [r for r in fake_cloud.mock.request_history
                if r.method == "GET" and "keystone" not in r.url
                and r.url.rstrip("/") != NOVA]  # the version document is no listing
    probe = listings[0]
    assert "/servers/detail" in probe.url and probe.qs["limit"] == ["1"]
    assert probe.qs["all_tenants"] == ["1"]
    assert all(r.qs.get("limit") == ["1000"] for r in listings[1:] if "/types" not in r.url)


def test_octavia_is_not_asked_without_include_octavia(fake_cloud: FakeCloud, clouds_env):
    observation = observe(clouds_env)
    assert "loadbalancer" not in observation.enumerated_types
    assert not fake_cloud.requested("octavia.test")


def test_probe_refused_ends_the_run_before_any_listing(fake_cloud: FakeCloud, clouds_env):
    fake_cloud.mock.get(f"{NOVA}/servers/detail", status_code=403,
                        json={"forbidden": {"message": "Policy doesn't allow it"}})
    with pytest.raises(RunAborted, match='^the clouds.yaml entry "testcloud" cannot observe '
                                          "the whole cloud: "):
        observe(clouds_env)
    assert not fake_cloud.requested("cinder.test") and not fake_cloud.requested("neutron.test")


def test_keystone_refusal_ends_the_run(fake_cloud: FakeCloud, clouds_env):
    fake_cloud.mock.post("http://keystone.test/v3/auth/tokens", status_code=401,
                         json={"error": {"code": 401, "message": "The request you have made "
                                         "requires authentication."}})
    with pytest.raises(RunAborted, match='^authenticating against the cloud "testcloud": '):
        observe(clouds_env)


def test_application_credential_without_secret(tmp_path: Path, fake_cloud: FakeCloud):
    path = tmp_path / "clouds.yaml"
    path.write_text(
        "clouds:\n  testcloud:\n    auth_type: v3applicationcredential\n    auth:\n"
        "      auth_url: http://keystone.test/v3\n      application_credential_id: abc\n")
    with pytest.raises(RunAborted) as caught:
        observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    assert str(caught.value) == ('authenticating against the cloud "testcloud": '
                                 "You must provide an Application Credential Secret")


def test_secure_yaml_beside_the_file_supplies_the_secret(tmp_path: Path, fake_cloud: FakeCloud):
    path = tmp_path / "clouds.yaml"
    path.write_text(
        "clouds:\n  testcloud:\n    auth_type: v3applicationcredential\n    auth:\n"
        "      auth_url: http://keystone.test/v3\n      application_credential_id: abc\n"
        "    region_name: RegionOne\n")
    (tmp_path / "secure.yaml").write_text(
        "clouds:\n  testcloud:\n    auth:\n      application_credential_secret: s3\n")
    observation = observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    body = fake_cloud.requested("/auth/tokens")[0].json()
    assert body["auth"]["identity"]["application_credential"]["secret"] == "s3"
    assert observation.enumerated_types == ALL


def test_unknown_adapter_setting_is_refused_by_name(fake_cloud: FakeCloud, clouds_env):
    with pytest.raises(RunAborted, match="unknown setting 'include_octvia'"):
        observe(clouds_env, config={"os_cloud": "testcloud", "include_octvia": True})
    assert fake_cloud.mock.request_history == []


def test_missing_clouds_yaml_names_the_locations_searched(tmp_path: Path, fake_cloud):
    missing = tmp_path / "nowhere" / "clouds.yaml"
    with pytest.raises(RunAborted, match=f"searched {missing}$"):
        observe({"OS_CLIENT_CONFIG_FILE": str(missing)})


def test_unknown_entry_cannot_be_resolved(fake_cloud: FakeCloud, clouds_env):
    with pytest.raises(RunAborted, match='^resolving the clouds.yaml entry "other"'):
        observe(clouds_env, config={"os_cloud": "other"})


def test_os_region_name_and_interface_override_the_entry(tmp_path: Path, fake_cloud: FakeCloud):
    path = write_clouds_yaml(tmp_path, regions=["RegionOne", "RegionTwo"])
    servers = api("nova_v2.47_servers-details-resp.json")
    fake_cloud.pages(f"{NOVA_TWO}/servers/detail", "servers", servers["servers"], [])
    env = {"OS_CLIENT_CONFIG_FILE": str(path), "OS_REGION_NAME": "RegionTwo",
           "OS_INTERFACE": "internal"}
    observation = observe(env)
    assert fake_cloud.requested("nova-two.test") and not fake_cloud.requested("nova.test/")
    assert "instance" in observation.enumerated_types


def test_old_nova_is_read_with_the_flavor_catalogue(fake_cloud: FakeCloud, clouds_env):
    version = api("nova_v21-version-get-resp.json")
    version["version"]["version"] = "2.38"
    fake_cloud.mock.get(NOVA, json=version)
    fake_cloud.mock.get(NOVA + "/", json=version)
    servers = api("nova_servers-details-resp.json")
    fake_cloud.pages(f"{NOVA}/servers/detail", "servers", servers["servers"], [])
    observation = observe(clouds_env)
    server = next(iter(by_type(observation, "instance").values()))
    assert server.size == {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}
    assert fake_cloud.requested("/flavors/detail")[0].qs["is_public"] == ["none"]
    assert {r.headers.get("OpenStack-API-Version") for r in fake_cloud.requested("servers")} == {
        "compute 2.38"}


def test_flavor_listing_refused_costs_the_instance_type(fake_cloud: FakeCloud, clouds_env):
    version = api("nova_v21-version-get-resp.json")
    version["version"]["version"] = "2.38"
    fake_cloud.mock.get(NOVA, json=version)
    fake_cloud.mock.get(NOVA + "/", json=version)
    servers = api("nova_servers-details-resp.json")
    fake_cloud.pages(f"{NOVA}/servers/detail", "servers", servers["servers"], [])
    fake_cloud.mock.get(f"{NOVA}/flavors/detail", status_code=403, json={})
    observation = observe(clouds_env)
    assert "instance" not in observation.enumerated_types
    assert observation.errors[0].startswith("enumerating instance: listing the flavors: ")
    assert all(o.size is None for o in by_type(observation, "instance").values())
    assert by_type(observation, "instance")


def test_service_down_costs_its_type_alone(fake_cloud: FakeCloud, clouds_env):
    fake_cloud.mock.get(f"{CINDER}/volumes/detail", status_code=503, json={})
    observation = observe(clouds_env)
    assert observation.enumerated_types == ALL - {"volume"}
    assert [e for e in observation.errors if e.startswith("enumerating volume: ")]


def test_volume_types_failure_costs_no_type(fake_cloud: FakeCloud, clouds_env):
    fake_cloud.mock.get(f"{CINDER}/types", status_code=401, json={})
    observation = observe(clouds_env)
    assert observation.enumerated_types == ALL
    assert observation.size_names is None
    assert observation.errors == [
        e for e in observation.errors
        if e.startswith("listing the size names of c1: listing the volume types: ")]
    assert len(observation.errors) == 1


def test_private_volume_types_are_asked_for(fake_cloud: FakeCloud, clouds_env):
    observe(clouds_env)
    assert fake_cloud.requested(f"{CINDER}/types")[0].qs["is_public"] == ["none"]


def test_capped_volume_type_listing_is_followed(fake_cloud: FakeCloud, clouds_env):
    types = api("cinder_v3_volume-types-list-response.json")["volume_types"]
    assert len(types) >= 2

    def answer(request, context):
        if "marker" in request.qs:
            return {"volume_types": types[1:]}
        return {"volume_types": types[:1], "volume_type_links": [
            {"rel": "next", "href": f"{CINDER}/types?marker={types[0]['id']}"}]}

    fake_cloud.mock.get(f"{CINDER}/types", json=answer)
    observation = observe(clouds_env)
    assert {e.size_id for e in observation.size_names} == {str(t["id"]) for t in types}


def test_down_cell_servers_are_never_read_as_absent(fake_cloud: FakeCloud, clouds_env):
    servers = api("nova_v2.47_servers-details-resp.json")["servers"]
    down = {"id": "aaaaaaaa-0000-0000-0000-000000000001", "status": "UNKNOWN",
            "tenant_id": "p", "created": "2017-02-14T19:24:42Z", "links": []}
    fake_cloud.pages(f"{NOVA}/servers/detail", "servers", [*servers, down], [])
    observation = observe(clouds_env)
    assert ("instance", down["id"]) in observation.unknown
    assert down["id"] not in by_type(observation, "instance")
    assert "instance" in observation.enumerated_types


def test_hidden_images_are_listed(fake_cloud: FakeCloud, clouds_env):
    images = api("glance_images-list-response.json")["images"]
    hidden = {**images[0], "id": "hidden-1", "os_hidden": True}
    fake_cloud.images(images, hidden=[hidden])
    observation = observe(clouds_env)
    assert "hidden-1" in by_type(observation, "image")
    assert any(r.qs.get("os_hidden") == ["true"] for r in fake_cloud.requested("/v2/images"))


def test_ownerless_image_costs_the_image_type(fake_cloud: FakeCloud, clouds_env):
    images = api("glance_images-list-response.json")["images"]
    images[0]["owner"] = None
    fake_cloud.images(images, hidden=[])
    observation = observe(clouds_env)
    assert "image" not in observation.enumerated_types
    assert observation.errors == [f"enumerating image: glance names no owner for image {images[0]['id']}"]
    assert images[1]["id"] in by_type(observation, "image")


def test_glance_relative_next_link_is_followed_by_marker(fake_cloud: FakeCloud, clouds_env):
    images = api("glance_images-list-response.json")["images"]

    def answer(request, context):
        if request.qs.get("os_hidden") == ["true"]:
            return {"images": []}
        if "marker" not in request.qs:
            return {"images": images[:1], "next": f"/v2/images?limit=1&marker={images[0]['id']}"}
        assert request.qs["marker"] == [images[0]["id"]]
        return {"images": images[1:]}

    fake_cloud.mock.get(f"{GLANCE}/v2/images", json=answer)
    observation = observe(clouds_env)
    assert set(by_type(observation, "image")) == {i["id"] for i in images}


def test_neutron_capped_page_with_a_next_link_is_not_the_last(fake_cloud: FakeCloud,
                                                               clouds_env):
    # pagination_max_limit = 2: two of three addresses, linked; then the third.
    ips = api("neutron_floating-ips-list-response.json")["floatingips"]
    assert len(ips) == 3

    def answer(request, context):
        start = 0 if "marker" not in request.qs else 2
        page = ips[start:start + 2]
        links = [{"rel": "previous", "href": "http://neutron.test/v2.0/floatingips?page_reverse=True"}]
        if len(page) == 2:
            links.insert(0, {"rel": "next", "href": "http://elsewhere/v2.0/floatingips?"
                             f"limit=1000&marker={page[-1]['id']}"})
        return {"floatingips": page, "floatingips_links": links}

    fake_cloud.mock.get(f"{NEUTRON}/v2.0/floatingips", json=answer)
    observation = observe(clouds_env)
    assert set(by_type(observation, "floating_ip")) == {ip["id"] for ip in ips}
    assert "floating_ip" in observation.enumerated_types
    second = fake_cloud.requested("/floatingips")[1]
    assert second.url.startswith(NEUTRON) and second.qs["marker"] == [ips[1]["id"]]


def test_neutron_full_last_page_is_followed_to_its_empty_page(fake_cloud: FakeCloud,
                                                              clouds_env):
    ips = api("neutron_floating-ips-list-response.json")["floatingips"]

    def answer(request, context):
        if "marker" in request.qs:  # neutron: empty, a previous link only
            return {"floatingips": [], "floatingips_links": [
                {"rel": "previous", "href": "http://neutron.test/v2.0/floatingips?page_reverse=True"}]}
        return {"floatingips": ips, "floatingips_links": [
            {"rel": "next", "href": f"http://neutron.test/v2.0/floatingips?marker={ips[-1]['id']}"}]}

    fake_cloud.mock.get(f"{NEUTRON}/v2.0/floatingips", json=answer)
    observation = observe(clouds_env)
    assert len(fake_cloud.requested("/floatingips")) == 2
    assert len(by_type(observation, "floating_ip")) == 3
    assert "floating_ip" in observation.enumerated_types


def test_nova_full_page_link_is_followed_with_our_own_endpoint(fake_cloud, clouds_env):
    observe(clouds_env)
    second = [r for r in fake_cloud.requested("/servers/detail") if "marker" in r.qs]
    assert second and all(r.url.startswith(NOVA) for r in second)
    assert second[0].qs["marker"] == ["764e369e-a874-4401-b7ce-43e4760888da"]


def test_deleted_servers_are_listed_for_the_window(fake_cloud: FakeCloud, clouds_env):
    deleted = {"id": "dead-1", "tenant_id": "p1", "status": "DELETED",
               "OS-EXT-STS:vm_state": "deleted", "OS-SRV-USG:terminated_at":
               "2026-03-10T11:50:01.123456", "updated": "2026-03-10T11:50:02Z"}
    live = api("nova_v2.47_servers-details-resp.json")["servers"]

    def answer(request, context):
        if request.qs.get("deleted") == ["true"]:
            return {"servers": [deleted] if "marker" not in request.qs else []}
        return {"servers": live if "marker" not in request.qs else []}

    fake_cloud.mock.get(f"{NOVA}/servers/detail", json=answer)
    observation = observe(clouds_env, since=dt.datetime(2026, 3, 10, 11, 0))
    asked = [r for r in fake_cloud.requested("/servers/detail") if r.qs.get("deleted")]
    assert asked[0].qs["changes-since"] == ["2026-03-10t11:00:00.000000z"]
    [deletion] = observation.deletions
    assert deletion.deleted_at == dt.datetime(2026, 3, 10, 11, 50, 1, 123456)
    assert deletion.project_id == "p1" and "instance" in observation.enumerated_types


def test_first_run_asks_for_no_deleted_servers(fake_cloud: FakeCloud, clouds_env):
    observe(clouds_env, since=None)
    assert not [r for r in fake_cloud.requested("/servers/detail") if r.qs.get("deleted")]


def test_deleted_listing_failure_costs_the_instance_type(fake_cloud: FakeCloud, clouds_env):
    live = api("nova_v2.47_servers-details-resp.json")["servers"]

    def answer(request, context):
        if request.qs.get("deleted") == ["true"]:
            context.status_code = 500
            return {}
        return {"servers": live if "marker" not in request.qs else []}

    fake_cloud.mock.get(f"{NOVA}/servers/detail", json=answer)
    observation = observe(clouds_env, since=dt.datetime(2026, 3, 10, 11, 0))
    assert "instance" not in observation.enumerated_types
    assert observation.errors[0].startswith("enumerating instance: listing the deleted servers: ")
    assert by_type(observation, "instance")
