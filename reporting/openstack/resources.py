"""What the OpenStack APIs report, read as observations (pure; no I/O).

States are normalised through the same functions the notification table uses, so
a correction books what a collector event would have booked:
instance -> nova vm_state normalised (``stopped`` -> ``shutoff`` ...), volume -> the
cinder status, image -> ``active`` while glance holds its data (``active``,
``deactivated``; still uploading, or a status the table does not know, is a
transition; without data is not there),
floating_ip and loadbalancer ->
``active`` (the table books their existence; neutron's ACTIVE/DOWN says whether
the address is bound, octavia's provisioning status is evidence of a transition).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

from mapping.openstack_rules import (
    BYTES_PER_GIB,
    MIB_PER_GIB,
    ImageData,
    floating_ip_size,
    image_data,
    image_state,
    normalize_vm_state,
    normalize_volume_status,
)
from reporting.sync.observation import ObservedResource, ReportedDeletion

# Cinder statuses of an operation in flight (docs/reconciliation.md, The listings);
# the other ten rest.
VOLUME_TRANSITIONS: Final = frozenset({
    "creating", "deleting", "managing", "attaching", "detaching", "reserved",
    "restoring-backup", "backing-up", "downloading", "uploading", "retyping", "extending",
})
EXISTS: Final = "active"


class UnreadableResource(ValueError):
    """An item of a listing the adapter cannot read (its type is then incomplete)."""


def parse_instant(value: Any) -> dt.datetime | None:
    """An API timestamp (``...Z``, an offset, or zone-less UTC) as naive UTC."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _required_id(item: Mapping[str, Any], what: str) -> str:
    value = item.get("id")
    if not isinstance(value, str) or not value:
        raise UnreadableResource(f"a {what} without an id")
    return value


def _changed(item: Mapping[str, Any], updated: str, created: str) -> dt.datetime | None:
    return parse_instant(item.get(updated)) or parse_instant(item.get(created))


# --- nova -------------------------------------------------------------------------------

def flavor_size(flavor: Mapping[str, Any], name_key: str) -> dict[str, Any] | None:
    """Size from an embedded flavor (2.47+, ``original_name``) or a catalogue flavor."""
    try:
        vcpus = int(flavor["vcpus"])
        ram_mb = float(flavor["ram"])
        disk = flavor.get("disk") or 0
        ephemeral = flavor.get("ephemeral", flavor.get("OS-FLV-EXT-DATA:ephemeral")) or 0
        name = flavor[name_key]
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(name, str):
        return None
    ram_gb = ram_mb / MIB_PER_GIB
    return {"vcpus": vcpus, "ram_gb": ram_gb, "disk_gb": disk + ephemeral, "flavor": name}


def is_down_cell_record(server: Mapping[str, Any]) -> bool:
    """A minimal record of a server in a cell nova cannot reach (2.69+)."""
    return server.get("status") == "UNKNOWN"


def instance(
    server: Mapping[str, Any], flavors: Mapping[str, dict[str, Any]] | None
) -> ObservedResource:
    """``flavors`` is the catalogue by id below 2.47, None from 2.47 (embedded flavor)."""
    rid = _required_id(server, "server")
    flavor = server.get("flavor")
    size: dict[str, Any] | None = None
    if isinstance(flavor, Mapping):
        if flavors is None:
            size = flavor_size(flavor, "original_name")
        else:
            size = flavors.get(str(flavor.get("id")))
    vm_state = server.get("OS-EXT-STS:vm_state")
    return ObservedResource(
        resource_type="instance",
        resource_id=rid,
        project_id=str(server.get("tenant_id") or ""),
        state=normalize_vm_state(vm_state) if isinstance(vm_state, str) else None,
        size=size,
        in_transition=server.get("OS-EXT-STS:task_state") is not None or vm_state == "building",
        last_changed=_changed(server, "updated", "created"),
        created_at=parse_instant(server.get("created")),
    )


def is_deleted_server(server: Mapping[str, Any]) -> bool:
    """Whether nova shows ``server`` as deleted (changes-since lists those too)."""
    return server.get("OS-EXT-STS:vm_state") == "deleted" or server.get("status") == "DELETED"


def deleted_instance(server: Mapping[str, Any]) -> ReportedDeletion | None:
    """A server of the deleted listing; None for one nova does not show as deleted."""
    rid = _required_id(server, "deleted server")
    if not is_deleted_server(server):
        return None
    deleted_at = parse_instant(server.get("OS-SRV-USG:terminated_at")) or parse_instant(
        server.get("updated")
    )
    if deleted_at is None:
        raise UnreadableResource(f"deleted server {rid} carries no terminated_at")
    return ReportedDeletion("instance", rid, str(server.get("tenant_id") or ""), deleted_at)


# --- cinder -----------------------------------------------------------------------------

def volume(item: Mapping[str, Any], type_names: Mapping[str, str]) -> ObservedResource:
    """``type_names`` maps type ids to names, for a cinder that reports the id."""
    rid = _required_id(item, "volume")
    status = item.get("status")
    type_name = item.get("volume_type")
    size: dict[str, Any] | None = None
    if isinstance(type_name, str) and isinstance(item.get("size"), int | float):
        size = {"size_gb": item["size"], "type": type_names.get(type_name, type_name)}
    return ObservedResource(
        resource_type="volume",
        resource_id=rid,
        project_id=str(item.get("os-vol-tenant-attr:tenant_id") or ""),
        state=normalize_volume_status(status),
        size=size,
        in_transition=status in VOLUME_TRANSITIONS,
        last_changed=_changed(item, "updated_at", "created_at"),
        created_at=parse_instant(item.get("created_at")),
    )


# --- neutron ----------------------------------------------------------------------------

def floating_ip(item: Mapping[str, Any]) -> ObservedResource:
    rid = _required_id(item, "floating IP")
    return ObservedResource(
        resource_type="floating_ip",
        resource_id=rid,
        project_id=str(item.get("project_id") or item.get("tenant_id") or ""),
        state=EXISTS,
        size=floating_ip_size({"floatingip": {"floating_ip_address": item.get("floating_ip_address")}}),
        in_transition=False,
        last_changed=_changed(item, "updated_at", "created_at"),
        created_at=parse_instant(item.get("created_at")),
    )


# --- glance -----------------------------------------------------------------------------

def image(item: Mapping[str, Any]) -> ObservedResource | None:
    """What the table would book for this image (``image_data``/``image_state``): live
    with its size once glance holds its data; None when it has none (killed, deleted);
    a transition with no state or size while its data is on its way in, or when glance
    reports a status the table does not know (nothing says whether the data is there:
    neither booked live nor read as gone).  UnreadableResource for one without owner."""
    rid = _required_id(item, "image")
    data = image_data(item.get("status"))
    if data is ImageData.ABSENT:
        return None
    owner = item.get("owner")
    if not isinstance(owner, str) or not owner:
        raise UnreadableResource(f"glance names no owner for image {rid}")
    size_bytes = item.get("size")
    size = (
        {"size_gb": size_bytes / BYTES_PER_GIB}
        if isinstance(size_bytes, int | float) and not isinstance(size_bytes, bool)
        and data is ImageData.STORED
        else None
    )
    return ObservedResource(
        resource_type="image",
        resource_id=rid,
        project_id=owner,
        state=image_state(data),
        size=size,
        in_transition=data is not ImageData.STORED,
        last_changed=_changed(item, "updated_at", "created_at"),
        created_at=parse_instant(item.get("created_at")),
    )


# --- octavia ----------------------------------------------------------------------------

def loadbalancer(item: Mapping[str, Any]) -> ObservedResource | None:
    """None for a DELETED load balancer; PENDING_* is observed, as a transition."""
    rid = _required_id(item, "load balancer")
    provisioning = str(item.get("provisioning_status") or "")
    if provisioning == "DELETED":
        return None
    listeners, pools = item.get("listeners"), item.get("pools")
    size = (
        {"listeners": len(listeners), "pools": len(pools)}
        if isinstance(listeners, list) and isinstance(pools, list)
        else None
    )
    return ObservedResource(
        resource_type="loadbalancer",
        resource_id=rid,
        project_id=str(item.get("project_id") or ""),
        state=EXISTS,
        size=size,
        in_transition=provisioning.startswith("PENDING_"),
        last_changed=_changed(item, "updated_at", "created_at"),
        created_at=parse_instant(item.get("created_at")),
    )
