"""Every captured notification in tests/fixtures/notifications, mapped.

Each expected canonical event is written out in full: a change to the table or to
a rule shows up here as a diff against what a real OpenStack sent.
"""

from __future__ import annotations

from typing import Any

import pytest

from mapping import event
from mapping.openstack import map_notification
from mapping.oslo_forms import from_capture
from tests.conftest import FIXTURES_DIR, load_fixture

CLOUD = "os-test"
GIB = 1073741824


def _event(
    event_id: str,
    event_type: str,
    resource_type: str,
    resource_id: str,
    project_id: str,
    timestamp: str,
    oslo_event_type: str,
    state: str | None = None,
    size: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if state is not None:
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    payload["provider"] = {"oslo_event_type": oslo_event_type}
    return {
        "event_id": event_id,
        "event_type": event_type,
        "platform": "openstack",
        "cloud": CLOUD,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "timestamp": timestamp,
        "source": "collector",
        "payload": payload,
    }


def _derived(resource_id: str, event_type: str, timestamp: str) -> str:
    return event.notification_event_id("openstack", CLOUD, resource_id, event_type, timestamp)


CIE = "compute.instance.create.end"
NOVA34_SERVER = "8a8d2b3f-ed31-4d3b-a1a6-a9eb16460506"
NOVA34_PROJECT = "6f70656e737461636b20342065766572"
CID = "compute.instance.delete.end"

CINDER29_VOLUME = "9c304044-a0c8-4d96-997d-56b8b58c1f40"
CINDER29_PROJECT = "64961c0158044666ad60f36482a5f8b3"
CINDER29_DEFAULT_TYPE = "924867b6-1d97-40a0-9649-a7b713a4e8e7"

GLANCE33_IMAGE = "c2bbf24a-fe7b-4c2f-9caf-9b9b0fd0e121"
GLANCE33_OWNER = "885d6f33e40c4fc4a158fb57a6e04b64"

EXPECTED: dict[str, dict[str, Any] | None] = {
    # wire shape, _context_* keys
    "compute.instance.create.end_ceilometer.json": _event(
        "dae6f69c-00e0-41c0-b371-41ec3b7f4451", CIE, "instance",
        "9f9d01b9-4a58-4271-9e27-398b21ab20d1", "7c150a59fe714e6f9263774af9688f0e",
        "2012-05-08T20:23:48.028195Z", CIE, "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 0, "flavor": "m1.tiny"}),
    # wire shape with the full 14 _context_* keys and a service catalog
    "compute.instance.create.end_designate.json": _event(
        "af100d58-7a9c-41a1-9311-8c52b44ca294", CIE, "instance",
        "3e301a55-fbbe-478d-92d0-eefabf135c38", "33a88272e06a49c1a0f653abc374b56b",
        "2012-11-03T17:54:48.797009Z", CIE, "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 0, "flavor": "m1.tiny"}),
    # listener shape: metadata, no ctxt
    "compute.instance.create.end_watcher.json": _event(
        "577bfd11-88e0-4044-b8ae-496e3257efe2", CIE, "instance",
        "c03c0bf9-f46e-4e4f-93f1-817568567ee2", "57ab04ad6d3b495789a58258bc00842b",
        "2016-08-19T10:20:59.279903Z", CIE, "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}),
    "compute.instance.delete.end_searchlight.json": _event(
        "56428f7d-3f07-4b23-882d-612d8852e422", CID, "instance",
        "ab327a92-25c5-4c1d-b0be-8ee55632defc", "b1fbc598025841899f63333269abe1d2",
        "2016-03-14T00:44:57.126816Z", CID),
    # bare shape: no message_id, no timestamp -> derived id, the API rejects the time
    "compute.instance.delete.end_watcher.json": _event(
        _derived("73b09e16-35b7-4922-804e-e8f5d9b740fc", CID, ""), CID, "instance",
        "73b09e16-35b7-4922-804e-e8f5d9b740fc", "15995ea2694e4268b3631db32e38678b", "", CID),
    # finish_resize is booked as resize.end, resized -> active, new flavor
    "compute.instance.finish_resize.end_ceilometer.json": _event(
        "a2f7770d-b85d-4797-ab10-41407a44368e", "compute.instance.resize.end", "instance",
        "648e8963-6886-4c3c-98f9-4511c292f86b", "cea4b25edb484e5392727181b7721d29",
        "2013-01-04T15:10:17.436974Z", "compute.instance.finish_resize.end", "active",
        {"vcpus": 1, "ram_gb": 2.0, "disk_gb": 20, "flavor": "m1.small"}),
    "compute.instance.resize.confirm.end_watcher.json": _event(
        _derived("73b09e16-35b7-4922-804e-e8f5d9b740fc", "compute.instance.resize.confirm.end", ""),
        "compute.instance.resize.confirm.end", "instance",
        "73b09e16-35b7-4922-804e-e8f5d9b740fc", "b18faa9487864b20b61386438b7ae2ce", "",
        "compute.instance.resize.confirm.end", "active",
        {"vcpus": 2, "ram_gb": 2.0, "disk_gb": 20, "flavor": "U2M2D20"}),
    "compute.instance.resize.revert.end_ceilometer.json": _event(
        "c48deeba-d0c3-4154-b3db-47480b52267a", "compute.instance.resize.revert.end", "instance",
        "648e8963-6886-4c3c-98f9-4511c292f86b", "cea4b25edb484e5392727181b7721d29",
        "2013-01-04T15:20:32.009532Z", "compute.instance.resize.revert.end", "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 0, "flavor": "m1.tiny"}),
    "floatingip.create.end_searchlight.json": _event(
        "0e9b345b-d664-4900-aa16-6cac8dfd6bd1", "floatingip.create.end", "floating_ip",
        "1a124625-4c71-4d20-a65b-3cf34465dab2", "5fe7c4e4e492490393c674089a178e19",
        "2016-06-14T19:45:48.649772Z", "floatingip.create.end", "active", {"ip_version": 4}),
    # the project is only in the request context
    "floatingip.delete.end_searchlight.json": _event(
        "e9495361-c04d-4350-94d2-478ef7e49804", "floatingip.delete.end", "floating_ip",
        "1a124625-4c71-4d20-a65b-3cf34465dab2", "5fe7c4e4e492490393c674089a178e19",
        "2016-06-14T20:11:34.064247Z", "floatingip.delete.end"),
    # glance sends ctxt {}; this create already carries a positive size
    "image.create_searchlight.json": _event(
        "41b88064-ee84-4163-8e7e-d695655ac65f", "image.create", "image",
        "7ba7087c-b81e-4807-b0e3-dd851f334add", "e9869fa1d7584b91b3f88c25193116e7",
        "2015-09-01T08:57:35.282586Z", "image.create", "active", {"size_gb": 4979632 / GIB}),
    "image.delete_searchlight.json": _event(
        "71949af5-24af-403b-a115-109eadcee9c4", "image.delete", "image",
        "7ba7087c-b81e-4807-b0e3-dd851f334add", "e9869fa1d7584b91b3f88c25193116e7",
        "2015-09-01T09:56:18.872189Z", "image.delete"),
    "image.upload_ceilometer.json": _event(
        "0c65cb9c-018c-11e2-bc91-5453ed1bbb5f", "image.create", "image",
        "cccccccc-cccc-cccc-cccccccccccc", "fake", "2015-08-07T08:28:00.000000Z",
        "image.upload", "active", {"size_gb": 19 / GIB}),
    # the admin guide's id-keyed dict; the context has project/tenant, not project_id
    "octavia.loadbalancer.create.end_octavia-doc.json": _event(
        "d84a3800-06ca-410e-a1a3-b40a02306a97", "octavia.loadbalancer.create.end",
        "loadbalancer", "8d4c8f66-7ac1-408e-82d5-59f6fcdea9ee",
        "qs59p6z696cp9cho8ze96edddvpfyvgz", "2022-04-22T23:02:15.717375Z",
        "octavia.loadbalancer.create.end", "active", {"listeners": 0, "pools": 0}),
    # listener shape with the full ctxt (service catalog, auth token)
    "volume.create.end_searchlight.json": _event(
        "771e22da-cd5b-4ecd-8475-dc74e7b87e80", "volume.create.end", "volume",
        "f54b1d2f-4514-4688-8da7-4bc66767b6be", "1816a16093df465dbc609cf638422a05",
        "2016-03-07T16:23:09.259310Z", "volume.create.end", "available",
        {"size_gb": 1, "type": "3706aa72-cb65-4971-83e8-48e1477efd1d"}),
    # hand-written: size is the string "40", which is left out (the API rejects)
    "volume.create.end_watcher-bootable.json": _event(
        _derived("990a723f-6c19-4f83-8526-6383c9e9389f", "volume.create.end", ""),
        "volume.create.end", "volume", "990a723f-6c19-4f83-8526-6383c9e9389f",
        "52044438-21f2-4a48-add4-d48bab20f7e1", "", "volume.create.end", "available",
        {"type": "type_0"}),
    "volume.create.end_watcher.json": _event(
        _derived("990a723f-6c19-4f83-8526-6383c9e9389f", "volume.create.end", ""),
        "volume.create.end", "volume", "990a723f-6c19-4f83-8526-6383c9e9389f",
        "52044438-21f2-4a48-add4-d48bab20f7e1", "", "volume.create.end", "available",
        {"type": "type_0"}),
    "volume.delete.end_searchlight.json": _event(
        "59d7cfbb-51dd-4dab-804c-e0c60aa67518", "volume.delete.end", "volume",
        "342b0875-2c7a-48b7-a391-f4d6ea8987c0", "1816a16093df465dbc609cf638422a05",
        "2016-03-07T16:24:45.157255Z", "volume.delete.end"),
    "volume.delete.end_watcher.json": _event(
        _derived("5028b1eb-8749-48ae-a42c-5bdd1323976f", "volume.delete.end", ""),
        "volume.delete.end", "volume", "5028b1eb-8749-48ae-a42c-5bdd1323976f",
        "91FFFE30-78A0-4152-ACD2-8310FF274DC9", "", "volume.delete.end"),
    "volume.resize.end_watcher.json": _event(
        _derived("5028b1eb-8749-48ae-a42c-5bdd1323976f", "volume.resize.end", ""),
        "volume.resize.end", "volume", "5028b1eb-8749-48ae-a42c-5bdd1323976f",
        "91FFFE30-78A0-4152-ACD2-8310FF274DC9", "", "volume.resize.end", "in-use",
        {"type": "type_0"}),
    # no .end suffix; the new type id
    "volume.retype_searchlight.json": _event(
        "59d7cfbb-51dd-4dab-804c-e0c60aa67518", "volume.retype", "volume",
        "f54b1d2f-4514-4688-8da7-4bc66767b6be", "1816a16093df465dbc609cf638422a05",
        "2016-03-07T16:24:45.157255Z", "volume.retype", "available",
        {"size_gb": 1, "type": "a16c8514-616f-4d40-baf7-eb8c8fb18677"}),
    # notigen templates: real shapes, placeholder values pass through unparsed
    "templates/compute.instance.power_off.end_notigen-template.json": _event(
        "[[[[UUID_6]]]]", "compute.instance.power_off", "instance", "[[[[UUID_1]]]]",
        "[[[[tenant_id]]]]", "[[[[DT_9]]]]", "compute.instance.power_off.end", "shutoff"),
    "templates/compute.instance.create.end_notigen-template.json": _event(
        "[[[[UUID_25]]]]", CIE, "instance", "[[[[UUID_1]]]]", "[[[[tenant_id]]]]",
        "[[[[DT_41]]]]", CIE, "building",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 20, "flavor": "512MB Standard Instance"}),
    # the source host's resize.end carries the old flavor: not in the table
    "templates/compute.instance.resize.end_notigen-template.json": None,
    # nova 34 (tests/real), listener shape: a full ctxt, times without an offset
    "compute.instance.create.end_nova34.json": _event(
        "d79054dd-eccc-467d-bece-4fcb10f7e1a2", CIE, "instance", NOVA34_SERVER,
        NOVA34_PROJECT, "2026-12-02T07:21:57.947382Z", CIE, "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}),
    "compute.instance.power_off.end_nova34.json": _event(
        "bb2bc629-8b2a-444c-94af-8a98661a380e", "compute.instance.power_off", "instance",
        NOVA34_SERVER, NOVA34_PROJECT, "2026-12-02T07:21:58.517206Z",
        "compute.instance.power_off.end", "shutoff"),
    # nova's usage audit and the resize's prep step: not in the table
    "compute.instance.exists_nova34.json": None,
    "compute.instance.resize.prep.end_nova34.json": None,
    # state "resized" books as active, with the new flavor
    "compute.instance.finish_resize.end_nova34.json": _event(
        "43e1e39e-dbb3-45f1-86c2-00e455e34eda", "compute.instance.resize.end", "instance",
        NOVA34_SERVER, NOVA34_PROJECT, "2026-12-02T07:22:00.031491Z",
        "compute.instance.finish_resize.end", "active",
        {"vcpus": 1, "ram_gb": 2.0, "disk_gb": 20, "flavor": "m1.small"}),
    # host, node and availability_zone null
    "compute.instance.shelve_offload.end_nova34.json": _event(
        "63c4759e-b1dd-4b0e-af33-bd0c62b91b7c", "compute.instance.shelve", "instance",
        NOVA34_SERVER, NOVA34_PROJECT, "2026-12-02T07:22:01.736537Z",
        "compute.instance.shelve_offload.end", "shelved"),
    # dated at the send time, after terminated_at and deleted_at in its payload
    "compute.instance.delete.end_nova34.json": _event(
        "f064bb45-720b-45e5-8dcd-de1166885d46", CID, "instance", NOVA34_SERVER,
        NOVA34_PROJECT, "2026-12-02T07:22:02.903027Z", CID),
    # cinder 29 (tests/real), listener shape: the type is its id, dated at the send time
    "volume.create.end_cinder29.json": _event(
        "5f57a895-ddaf-4354-b204-496fd8d4b388", "volume.create.end", "volume",
        CINDER29_VOLUME, CINDER29_PROJECT, "2026-12-02T18:37:17.971227Z",
        "volume.create.end", "available", {"size_gb": 1, "type": CINDER29_DEFAULT_TYPE}),
    "volume.resize.end_cinder29.json": _event(
        "beb032ec-5021-44d7-ba63-db946188a72c", "volume.resize.end", "volume",
        CINDER29_VOLUME, CINDER29_PROJECT, "2026-12-02T18:37:18.441357Z",
        "volume.resize.end", "available", {"size_gb": 2, "type": CINDER29_DEFAULT_TYPE}),
    "volume.retype_cinder29.json": _event(
        "e2e24f15-99ac-4bd6-8294-a1516234b55f", "volume.retype", "volume",
        CINDER29_VOLUME, CINDER29_PROJECT, "2026-12-02T18:37:19.062553Z",
        "volume.retype", "available",
        {"size_gb": 2, "type": "cb1a23cb-00dc-47a9-bc4b-f687d94c8176"}),
    "volume.delete.end_cinder29.json": _event(
        "fc235dff-e339-450a-a708-48b118ad692f", "volume.delete.end", "volume",
        "e3a156b8-8441-4248-b078-866d6dc0356c", CINDER29_PROJECT,
        "2026-12-02T18:37:20.404922Z", "volume.delete.end"),
    # glance 33 (tests/real), listener shape: only the upload and the delete book
    "image.create_glance33.json": None,
    "image.update_glance33.json": None,
    "image.activate_glance33.json": None,
    "image.upload_glance33.json": _event(
        "64724c27-f87b-46c5-aa6c-4a839c8cdadc", "image.create", "image",
        GLANCE33_IMAGE, GLANCE33_OWNER, "2026-12-02T14:43:29.254428Z", "image.upload",
        "active", {"size_gb": 3 / 1024}),
    "image.delete_glance33.json": _event(
        "7b2c76c1-9ad1-4935-b482-e7b3036553c2", "image.delete", "image",
        "00fc4dcf-645f-4930-94da-8a2ba1ac0473", GLANCE33_OWNER,
        "2026-12-02T14:43:31.573690Z", "image.delete"),
}

# nova's versioned notifications (topic versioned_notifications) are not in the table.
VERSIONED = sorted(p.name for p in (FIXTURES_DIR / "notifications" / "versioned").glob("*.json"))


def test_every_legacy_capture_has_an_expectation() -> None:
    captures = {p.name for p in (FIXTURES_DIR / "notifications").glob("*.json")}
    assert captures == {name for name in EXPECTED if "/" not in name}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_maps_to_expected_event(name: str) -> None:
    args = from_capture(load_fixture(f"notifications/{name}"))
    assert map_notification(CLOUD, **args) == EXPECTED[name]


@pytest.mark.parametrize("name", VERSIONED)
def test_versioned_notification_is_skipped(name: str) -> None:
    args = from_capture(load_fixture(f"notifications/versioned/{name}"))
    assert map_notification(CLOUD, **args) is None


def test_wire_context_is_unpacked_like_oslo() -> None:
    capture = load_fixture("notifications/compute.instance.create.end_designate.json")
    args = from_capture(capture)
    assert args["ctxt"]["project_id"] == "33a88272e06a49c1a0f653abc374b56b"
    assert args["ctxt"]["project_name"] == "tenant-name"
    assert "service_catalog" in args["ctxt"]
    assert args["metadata"] == {
        "message_id": "af100d58-7a9c-41a1-9311-8c52b44ca294",
        "timestamp": "2012-11-03 17:54:48.797009",
    }
