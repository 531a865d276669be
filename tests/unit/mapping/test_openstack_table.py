"""The OpenStack notification table: every row, rule and fallback.

As docs/notification-mapping.md describes them.
"""

from __future__ import annotations

from typing import Any

import pytest
from oslo_context import context as oslo_context

from mapping import event
from mapping.openstack import (
    NOTIFICATION_TABLE,
    context_project_id,
    map_notification,
    oslo_timestamp,
    rule_for,
)
from mapping.openstack_rules import (
    fixed_state,
    floating_ip_size,
    image_size,
    instance_size,
    loadbalancer_size,
    normalize_vm_state,
    normalize_volume_status,
    unsized_image,
    volume_size,
)

CLOUD = "os-unit"
META = {"message_id": "m-1", "timestamp": "2026-11-29 23:46:12.702142"}
TS = "2026-11-29T23:46:12.702142Z"

INSTANCE = {"instance_id": "i-1", "tenant_id": "p-1", "state": "active", "vcpus": 2,
            "memory_mb": 4096, "root_gb": 20, "ephemeral_gb": 5, "instance_type": "m1.medium"}
INSTANCE_SIZE = {"vcpus": 2, "ram_gb": 4.0, "disk_gb": 25, "flavor": "m1.medium"}
VOLUME = {"volume_id": "v-1", "tenant_id": "p-1", "status": "in-use", "size": 10,
          "volume_type": "type-id-1"}
VOLUME_SIZE = {"size_gb": 10, "type": "type-id-1"}
FIP = {"floatingip": {"id": "f-1", "tenant_id": "p-1", "floating_ip_address": "2001:db8::5"}}
IMAGE = {"id": "g-1", "owner": "p-1", "size": 2 * 1073741824}
LB = {"loadbalancer_id": "lb-1", "project_id": "p-1", "listeners": [{"id": "l"}], "pools": None}

# (oslo type, payload, tally type, resource type, resource id, state, size)
ROWS: list[tuple[str, dict[str, Any], str, str, str, str | None, dict[str, Any] | None]] = [
    ("compute.instance.create.end", INSTANCE, "compute.instance.create.end", "instance", "i-1", "active", INSTANCE_SIZE),
    ("compute.instance.delete.end", INSTANCE, "compute.instance.delete.end", "instance", "i-1", None, None),
    ("compute.instance.finish_resize.end", {**INSTANCE, "state": "resized"}, "compute.instance.resize.end", "instance", "i-1", "active", INSTANCE_SIZE),
    ("compute.instance.resize.confirm.end", {**INSTANCE, "state": "stopped"}, "compute.instance.resize.confirm.end", "instance", "i-1", "shutoff", INSTANCE_SIZE),
    ("compute.instance.resize.revert.end", INSTANCE, "compute.instance.resize.revert.end", "instance", "i-1", "active", INSTANCE_SIZE),
    ("compute.instance.shelve_offload.end", {**INSTANCE, "state": "shelved_offloaded"}, "compute.instance.shelve", "instance", "i-1", "shelved", None),
    ("compute.instance.unshelve.end", {**INSTANCE, "state": "whatever"}, "compute.instance.unshelve", "instance", "i-1", "active", None),
    ("compute.instance.power_off.end", {**INSTANCE, "state": "stopped"}, "compute.instance.power_off", "instance", "i-1", "shutoff", None),
    ("compute.instance.power_on.end", INSTANCE, "compute.instance.power_on", "instance", "i-1", "active", None),
    ("volume.create.end", {**VOLUME, "status": "creating"}, "volume.create.end", "volume", "v-1", "available", VOLUME_SIZE),
    ("volume.delete.end", VOLUME, "volume.delete.end", "volume", "v-1", None, None),
    ("volume.resize.end", VOLUME, "volume.resize.end", "volume", "v-1", "in-use", VOLUME_SIZE),
    ("volume.retype", VOLUME, "volume.retype", "volume", "v-1", "in-use", VOLUME_SIZE),
    ("volume.transfer.accept.end", VOLUME, "volume.transfer.accept.end", "volume", "v-1", "in-use", VOLUME_SIZE),
    ("floatingip.create.end", FIP, "floatingip.create.end", "floating_ip", "f-1", "active", {"ip_version": 6}),
    ("floatingip.delete.end", {"floatingip_id": "f-1", **FIP}, "floatingip.delete.end", "floating_ip", "f-1", None, None),
    ("image.upload", IMAGE, "image.create", "image", "g-1", "active", {"size_gb": 2.0}),
    ("image.create", IMAGE, "image.create", "image", "g-1", "active", {"size_gb": 2.0}),
    ("image.delete", IMAGE, "image.delete", "image", "g-1", None, None),
    ("octavia.loadbalancer.create.end", LB, "octavia.loadbalancer.create.end", "loadbalancer", "lb-1", "active", {"listeners": 1, "pools": 0}),
    ("octavia.loadbalancer.update.end", LB, "octavia.loadbalancer.update.end", "loadbalancer", "lb-1", "active", None),
    ("octavia.loadbalancer.delete.end", LB, "octavia.loadbalancer.delete.end", "loadbalancer", "lb-1", None, None),
]


def test_rows_cover_the_whole_table() -> None:
    assert [row[0] for row in ROWS] == [rule.oslo_event_type for rule in NOTIFICATION_TABLE]


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_row(row: tuple[Any, ...]) -> None:
    oslo_type, payload, tally_type, resource_type, resource_id, state, size = row
    ctxt = {"project_id": "ctx-project"}
    mapped = map_notification(CLOUD, ctxt, "svc.host", oslo_type, payload, META)
    expected_payload: dict[str, Any] = {}
    if state is not None:
        expected_payload["state"] = state
    if size is not None:
        expected_payload["size"] = size
    expected_payload["provider"] = {"oslo_event_type": oslo_type}
    assert mapped == {
        "event_id": "m-1", "event_type": tally_type, "platform": "openstack",
        "cloud": CLOUD, "resource_type": resource_type, "resource_id": resource_id,
        # floatingip.delete.end reads the project from the request context
        "project_id": "ctx-project" if oslo_type == "floatingip.delete.end" else "p-1",
        "timestamp": TS, "source": "collector", "payload": expected_payload,
    }


def test_every_mapped_type_keeps_the_verb_the_seed_implies() -> None:
    for rule in NOTIFICATION_TABLE:
        if rule.state is None and rule.size is None:
            assert event.verb(rule.event_type) == "delete", rule.oslo_event_type
    assert event.verb("compute.instance.shelve") == "update"


def test_unknown_type_is_skipped() -> None:
    assert map_notification(CLOUD, {}, "compute.h", "compute.instance.resize.end", INSTANCE, META) is None
    assert map_notification(CLOUD, {}, "compute.h", "compute.instance.exists", INSTANCE, META) is None
    assert rule_for("volume.retype.end") is None


# --- identity -------------------------------------------------------------------------


def test_message_id_becomes_event_id() -> None:
    mapped = map_notification(CLOUD, {}, None, "volume.delete.end", VOLUME, META)
    assert mapped is not None and mapped["event_id"] == "m-1"


@pytest.mark.parametrize("metadata", [{"timestamp": META["timestamp"]},
                                      {"timestamp": META["timestamp"], "message_id": ""},
                                      {"timestamp": META["timestamp"], "message_id": None}])
def test_without_message_id_the_id_is_deterministic(metadata: dict[str, Any]) -> None:
    mapped = map_notification(CLOUD, {}, None, "compute.instance.finish_resize.end", INSTANCE, metadata)
    assert mapped is not None
    # derived from the mapped type, not the oslo one
    assert mapped["event_id"] == event.notification_event_id(
        "openstack", CLOUD, "i-1", "compute.instance.resize.end", TS)
    again = map_notification(CLOUD, {}, None, "compute.instance.finish_resize.end", INSTANCE, metadata)
    assert again is not None and again["event_id"] == mapped["event_id"]
    other_cloud = map_notification("other", {}, None, "compute.instance.finish_resize.end", INSTANCE, metadata)
    assert other_cloud is not None and other_cloud["event_id"] != mapped["event_id"]


def test_octavia_id_falls_back_to_id_only_when_loadbalancer_id_is_empty() -> None:
    both = {"loadbalancer_id": "lb-a", "id": "lb-b", "project_id": "p"}
    only_id = {"id": "lb-b", "project_id": "p"}
    empty_first = {"loadbalancer_id": "", "id": "lb-b", "project_id": "p"}
    for payload, expected in ((both, "lb-a"), (only_id, "lb-b"), (empty_first, "lb-b")):
        mapped = map_notification(CLOUD, {}, None, "octavia.loadbalancer.delete.end", payload, META)
        assert mapped is not None and mapped["resource_id"] == expected


def test_unreadable_resource_id_still_maps() -> None:
    mapped = map_notification(CLOUD, {}, None, "volume.create.end", {"volume_id": 7}, META)
    assert mapped is not None and mapped["resource_id"] == ""


def test_payload_that_is_not_an_object_still_maps() -> None:
    mapped = map_notification(CLOUD, {"project_id": "p"}, None, "image.upload", "boom", META)
    assert mapped is not None
    assert mapped["resource_id"] == "" and mapped["project_id"] == "p"
    assert mapped["payload"]["size"] == {}


# --- project resolution -----------------------------------------------------------------


def test_payload_project_wins_over_context() -> None:
    mapped = map_notification(CLOUD, {"project_id": "admin"}, None, "volume.create.end", VOLUME, META)
    assert mapped is not None and mapped["project_id"] == "p-1"


@pytest.mark.parametrize(("ctxt", "expected"), [
    ({"project_id": "pid", "tenant": "tid"}, "pid"),
    ({"project": "pid", "tenant": "tid"}, "pid"),
    ({"project_id": "", "tenant_id": "tid"}, "tid"),
    ({"project_id": None, "tenant": "tid"}, "tid"),
    ({}, ""),
])
def test_context_project_then_tenant(ctxt: dict[str, Any], expected: str) -> None:
    assert context_project_id(ctxt) == expected
    # a payload path that leads nowhere falls back to the context
    mapped = map_notification(CLOUD, ctxt, None, "volume.delete.end", {"volume_id": "v"}, META)
    assert mapped is not None and mapped["project_id"] == expected


def test_context_object_from_the_fake_driver() -> None:
    ctxt = oslo_context.RequestContext(project_id="obj-project", user_id="u")
    mapped = map_notification(CLOUD, ctxt, None, "floatingip.delete.end", {"floatingip_id": "f"}, META)
    assert mapped is not None and mapped["project_id"] == "obj-project"
    assert context_project_id(object()) == ""


def test_floatingip_delete_ignores_embedded_view_for_project() -> None:
    payload = {"floatingip_id": "f-1", "floatingip": {"tenant_id": "view"}}
    mapped = map_notification(CLOUD, {"project_id": "ctx"}, None, "floatingip.delete.end", payload, META)
    assert mapped is not None and mapped["project_id"] == "ctx"


# --- timestamps -------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    ("2026-11-29 23:46:12.702142", "2026-11-29T23:46:12.702142Z"),
    ("2026-11-29 23:46:12", "2026-11-29T23:46:12.000000Z"),
    ("2026-11-29T23:46:12.7", "2026-11-29T23:46:12.700000Z"),
    ("2026-11-29T23:46:12.702142+02:00", "2026-11-29T21:46:12.702142Z"),
    ("2026-11-29T23:46:12Z", "2026-11-29T23:46:12.000000Z"),
    ("2026-02-30 10:00:00", "2026-02-30 10:00:00"),   # impossible date: passed through
    ("yesterday", "yesterday"),
    (None, ""),
    (1700000000, ""),
])
def test_oslo_timestamp(raw: Any, expected: str) -> None:
    assert oslo_timestamp(raw) == expected


# --- state rules -------------------------------------------------------------------------


@pytest.mark.parametrize(("state", "expected"), [
    ("stopped", "shutoff"), ("shelved_offloaded", "shelved"), ("resized", "active"),
    ("active", "active"), ("error", "error"), ("rescued", "rescued"), (None, None), (3, 3),
])
def test_normalize_vm_state(state: Any, expected: Any) -> None:
    assert normalize_vm_state(state) == expected


def test_absent_vm_state_stays_absent() -> None:
    payload = {k: v for k, v in INSTANCE.items() if k != "state"}
    mapped = map_notification(CLOUD, {}, None, "compute.instance.create.end", payload, META)
    assert mapped is not None and "state" not in mapped["payload"]


@pytest.mark.parametrize(("status", "expected"), [
    ("in-use", "in-use"), ("available", "available"), ("", "available"), (None, "available"),
])
def test_volume_status(status: Any, expected: str) -> None:
    assert normalize_volume_status(status) == expected
    payload = {**VOLUME, "status": status}
    mapped = map_notification(CLOUD, {}, None, "volume.resize.end", payload, META)
    assert mapped is not None and mapped["payload"]["state"] == expected


def test_volume_status_absent_member() -> None:
    payload = {k: v for k, v in VOLUME.items() if k != "status"}
    mapped = map_notification(CLOUD, {}, None, "volume.transfer.accept.end", payload, META)
    assert mapped is not None and mapped["payload"]["state"] == "available"


def test_fixed_state_reads_nothing() -> None:
    assert fixed_state("shelved")({}) == "shelved"
    assert fixed_state("shelved")({"state": "active"}) == "shelved"


# --- size builders -----------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "expected"), [
    (INSTANCE, INSTANCE_SIZE),
    ({"vcpus": 1, "memory_mb": 512, "root_gb": 10, "instance_type": "t"},
     {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 10, "flavor": "t"}),          # no ephemeral_gb
    ({"vcpus": 1, "memory_mb": 512, "ephemeral_gb": 3, "instance_type": "t"},
     {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 3, "flavor": "t"}),           # no root_gb
    ({"vcpus": 1, "memory_mb": 512, "instance_type": "t"},
     {"vcpus": 1, "ram_gb": 0.5, "flavor": "t"}),                          # neither: left out
    ({"vcpus": "2", "memory_mb": -1, "root_gb": "20", "instance_type": 5}, {}),  # wrong types
    ({"vcpus": 1.5, "memory_mb": True, "root_gb": 1, "ephemeral_gb": None}, {}),
    ({}, {}),
])
def test_instance_size(payload: dict[str, Any], expected: dict[str, Any]) -> None:
    assert instance_size(payload) == expected


@pytest.mark.parametrize(("payload", "expected"), [
    (VOLUME, VOLUME_SIZE),
    ({"size": 1.5, "volume_type": None}, {"size_gb": 1.5}),
    ({"size": "40", "volume_type": "type_0"}, {"type": "type_0"}),
    ({"size": -1}, {}),
    ({}, {}),
])
def test_volume_size(payload: dict[str, Any], expected: dict[str, Any]) -> None:
    assert volume_size(payload) == expected


@pytest.mark.parametrize(("payload", "expected"), [
    ({"size": 1073741824}, {"size_gb": 1.0}),
    ({"size": 536870912}, {"size_gb": 0.5}),
    ({"size": None}, {}),
    ({"size": "19"}, {}),
    ({}, {}),
])
def test_image_size(payload: dict[str, Any], expected: dict[str, Any]) -> None:
    assert image_size(payload) == expected


@pytest.mark.parametrize(("address", "version"), [
    ("172.24.4.227", 4), ("2001:db8::1", 6), ("not-an-address", 4), (None, 4), (42, 4),
])
def test_floating_ip_size(address: Any, version: int) -> None:
    assert floating_ip_size({"floatingip": {"floating_ip_address": address}}) == {"ip_version": version}


def test_floating_ip_size_without_the_object() -> None:
    assert floating_ip_size({}) == {"ip_version": 4}
    assert floating_ip_size({"floatingip": "x"}) == {"ip_version": 4}


@pytest.mark.parametrize(("payload", "expected"), [
    ({}, {"listeners": 0, "pools": 0}),                         # the worker's dict
    ({"listeners": None, "pools": None}, {"listeners": 0, "pools": 0}),
    ({"listeners": [{}, {}], "pools": [{}]}, {"listeners": 2, "pools": 1}),
    ({"listeners": "x", "pools": {"a": 1}}, {}),                # not arrays: left out
])
def test_loadbalancer_size(payload: dict[str, Any], expected: dict[str, Any]) -> None:
    assert loadbalancer_size(payload) == expected


def test_loadbalancer_update_states_no_size() -> None:
    mapped = map_notification(CLOUD, {}, None, "octavia.loadbalancer.update.end", LB, META)
    assert mapped is not None and "size" not in mapped["payload"]


# --- skip rules -------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "skipped"), [
    (None, True), (0, True), (-5, True), ("100", True), (1, False), (4979632, False),
])
def test_unsized_image(size: Any, skipped: bool) -> None:
    payload = {"id": "g", "owner": "p", "size": size}
    assert unsized_image(payload) is skipped
    mapped = map_notification(CLOUD, {}, None, "image.create", payload, META)
    assert (mapped is None) is skipped


def test_unsized_image_absent_member_and_upload_not_skipped() -> None:
    assert map_notification(CLOUD, {}, None, "image.create", {"id": "g", "owner": "p"}, META) is None
    # the skip rule is image.create's alone: an unsized upload is booked (and rejected)
    upload = map_notification(CLOUD, {}, None, "image.upload", {"id": "g", "owner": "p"}, META)
    assert upload is not None and upload["payload"]["size"] == {}
