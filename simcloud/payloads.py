"""Legacy notification payloads and request contexts, as the real services build them.

nova ``info_from_instance``, cinder ``_usage_from_volume``, neutron's API view of a
floating IP, glance ``format_image_notification`` and octavia's provider-driver
load balancer dict (the real captures are in ``tests/fixtures/notifications/``).
"""

from __future__ import annotations

from typing import Any

from oslo_context import context as oslo_context

from simcloud import model
from simcloud.model import FLAVORS, VOLUME_TYPES, Phase, Resource, to_datetime

# The oslo exchange and publisher id of each resource type's service.
EXCHANGES = {
    model.INSTANCE: "nova",
    model.VOLUME: "cinder",
    model.FLOATING_IP: "neutron",
    model.IMAGE: "glance",
    model.LOADBALANCER: "octavia",
}
FLOATING_NETWORK_ID = "5f7774a3-759f-4798-92f0-5ef59c88705c"
IMAGE_REF = "70a599e0-31e7-49b7-b260-868f441e862b"
# The legacy events nova sends with the instance's network info (``fixed_ips``), as
# nova 34 does (tests/real); the others have no such key at all.
_WITH_NETWORK_INFO = frozenset({
    "compute.instance.create.end", "compute.instance.resize.start",
    "compute.instance.finish_resize.start", "compute.instance.finish_resize.end",
    "compute.instance.resize.end", "compute.instance.resize.confirm.end",
    "compute.instance.rebuild.end",
})


def publisher_id(resource: Resource) -> str | None:
    kind = resource.kind
    if kind == model.INSTANCE:
        return f"compute.{resource.host}"
    if kind == model.VOLUME:
        return f"volume.{resource.host}"
    if kind == model.FLOATING_IP:
        return f"network.{resource.host}"
    if kind == model.IMAGE:
        return "image.localhost"
    return None  # octavia publishes with publisher_id None


def context(resource: Resource, phase: Phase) -> Any:
    """The request context the service notifies with (glance always sends ``{}``)."""
    if resource.kind == model.IMAGE:
        return {}
    if resource.kind == model.LOADBALANCER:
        return oslo_context.RequestContext(project_id=phase.project)
    return oslo_context.RequestContext(user_id=resource.user_id, project_id=phase.project,
                                       roles=["member"])


def _space(t: float | None) -> str:
    """nova's ``str(datetime)`` rendering, '' for None."""
    return "" if t is None else to_datetime(t).strftime("%Y-%m-%d %H:%M:%S+00:00")


def _primitive(t: float | None) -> str:
    """A datetime nova hands its notifier, as oslo's serializer renders it (naive
    ISO 8601, microseconds, no offset), '' for None."""
    return "" if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S.%f")


def _str_time(t: float) -> str:
    """nova's ``str()`` of a naive UTC datetime (no fraction when it has none)."""
    return str(to_datetime(t).replace(tzinfo=None))


def _cinder_time(t: float | None) -> str | None:
    """cinder 29's ``_usage_from_volume`` instants: ``isoformat()`` of an aware UTC
    datetime (``2026-12-02T18:34:45.641999+00:00``)."""
    return None if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _glance_time(t: float | None) -> str | None:
    return None if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def build(resource: Resource, phase: Phase, event_type: str, at: float) -> dict[str, Any]:
    kind = resource.kind
    if kind == model.INSTANCE:
        return _instance(resource, phase, event_type)
    if kind == model.VOLUME:
        return _volume(resource, phase, event_type)
    if kind == model.FLOATING_IP:
        view = floating_ip_view(resource, phase, at)
        if event_type.startswith("floatingip.delete"):
            return {"floatingip_id": resource.id, "floatingip": view}
        return {"floatingip": view}
    if kind == model.IMAGE:
        return _image(resource, phase, event_type, at)
    return _loadbalancer(resource, phase)


def _instance(res: Resource, phase: Phase, event_type: str) -> dict[str, Any]:
    flavor = FLAVORS[phase.size]
    deleted = event_type == "compute.instance.delete.end"
    offloaded = phase.status == "shelved_offloaded"
    state = "deleted" if deleted else phase.status
    payload: dict[str, Any] = {
        "tenant_id": phase.project,
        "user_id": res.user_id,
        "instance_id": res.id,
        "display_name": res.name,
        "hostname": res.name,
        "reservation_id": "r-" + res.id[:8],
        "instance_type": flavor.name,
        "instance_type_id": int(flavor.id),
        "instance_flavor_id": flavor.id,
        "vcpus": flavor.vcpus,
        "memory_mb": flavor.ram_mb,
        "root_gb": flavor.disk_gb,
        "ephemeral_gb": flavor.ephemeral_gb,
        "disk_gb": flavor.disk_gb + flavor.ephemeral_gb,
        "host": None if offloaded else res.host,
        "node": None if offloaded else res.host,
        # An offloaded instance is in no zone until it is unshelved.
        "availability_zone": None if offloaded else "nova",
        "cell_name": "",
        # created_at is nova's str(); the others are datetimes its serializer renders.
        "created_at": _space(res.created_at),
        "launched_at": _primitive(res.ready_at) if res.ready_at <= phase.at or deleted else "",
        "terminated_at": _primitive(res.deleted_at) if deleted else "",
        "deleted_at": _primitive(res.deleted_at) if deleted else "",
        "state": state,
        "state_description": "" if deleted else (phase.task or ""),
        "progress": "",
        "architecture": "x86_64",
        "os_type": None,
        "image_ref_url": f"http://image.simcloud.invalid/images/{IMAGE_REF}",
        "image_meta": {"architecture": "x86_64", "base_image_ref": IMAGE_REF,
                       "container_format": "bare", "disk_format": "qcow2",
                       "kernel_id": "nokernel", "min_disk": str(flavor.disk_gb),
                       "min_ram": "0", "ramdisk_id": "nokernel"},
        "metadata": {},
        "access_ip_v4": None,
        "access_ip_v6": None,
        "kernel_id": "",
        "ramdisk_id": "",
    }
    if event_type in _WITH_NETWORK_INFO:
        payload["fixed_ips"] = [_fixed_ip(res)]
    if event_type == "compute.instance.create.end":
        payload["message"] = "Success"
    elif event_type == "compute.instance.resize.prep.end":
        new = FLAVORS[_next_size(res, phase)]
        payload.update({"new_instance_type": new.name, "new_instance_type_id": int(new.id)})
    elif event_type == "compute.instance.exists":
        # The usage audit: the current audit period (nova's default is the month).
        day = to_datetime(phase.at)
        begin = day.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        # nova's str() of utcnow(): microseconds, which a real clock always has.
        payload.update({"audit_period_beginning": _str_time(begin.timestamp()),
                        "audit_period_ending": day.strftime("%Y-%m-%d %H:%M:%S.%f")})
    return payload


def _next_size(res: Resource, phase: Phase) -> int:
    """The flavor a resize under way moves to: the first later phase's other size."""
    later = (p.size for p in res.phases if p.at > phase.at and p.size != phase.size)
    return next(later, phase.size)


def _fixed_ip(res: Resource) -> dict[str, Any]:
    """One private IPv4 address, the shape nova's network info gives it."""
    digest = int(res.id.replace("-", "")[:8], 16)
    return {"address": f"192.168.{(digest >> 8) % 256}.{digest % 254 + 1}",
            "floating_ips": [], "label": "private", "meta": {}, "type": "fixed",
            "version": 4,
            "vif_mac": "fa:16:3e:" + ":".join(f"{(digest >> s) % 256:02x}" for s in (16, 8, 0))}


def _volume(res: Resource, phase: Phase, event_type: str) -> dict[str, Any]:
    size_gb, type_index = phase.size
    attachments = [{"server_id": phase.attached, "attachment_id": res.id[:8]}] \
        if phase.attached and phase.status in ("in-use", "detaching") else []
    return {
        "tenant_id": phase.project,
        "user_id": res.user_id,
        "host": res.host,
        "availability_zone": "nova",
        "volume_id": res.id,
        "volume_type": VOLUME_TYPES[type_index].id,  # the id, not the name
        "display_name": res.name,
        "launched_at": _cinder_time(res.ready_at) if res.ready_at <= phase.at else "",
        "created_at": _cinder_time(res.created_at),
        "size": size_gb,
        "snapshot_id": None,
        # cinder 29: volume.delete.start while deleting, volume.delete.end once deleted
        "status": {"volume.delete.start": "deleting",
                   "volume.delete.end": "deleted"}.get(event_type, phase.status),
        "replication_status": None,
        "replication_extended_status": None,
        "replication_driver_data": None,
        # a list (cinder's volume_metadata rows), empty here as in cinder 29's payloads
        "metadata": [],
        "volume_attachment": attachments,
    }


def floating_ip_view(res: Resource, phase: Phase, at: float) -> dict[str, Any]:
    """neutron's API view of a floating IP (also the notification payload)."""
    return {
        "id": res.id,
        "tenant_id": phase.project,
        "project_id": phase.project,
        "floating_ip_address": res.address,
        "floating_network_id": FLOATING_NETWORK_ID,
        "fixed_ip_address": f"10.0.0.{int(res.id[:2], 16) % 250 + 3}" if phase.attached
        else None,
        "port_id": phase.attached,
        "router_id": "d23abc8d-2991-4a55-ba98-2aaea84cc72f" if phase.attached else None,
        "status": phase.status,
        "description": "",
        "dns_domain": "",
        "dns_name": "",
        "port_details": None,
        "port_forwardings": [],
        "qos_policy_id": None,
        "qos_network_policy_id": None,
        "revision_number": res.phase_times.index(phase.at) + 1 if phase.at in res.phase_times
        else 1,
        "tags": [],
        "created_at": _glance_time(res.created_at),
        "updated_at": _glance_time(res.updated_at(at)),
    }


def _image(res: Resource, phase: Phase, event_type: str, at: float) -> dict[str, Any]:
    # glance 33's format_image_notification: no os_hidden; a raw image's virtual_size
    # is its size; image.upload adds the two import lists (docs/simcloud.md).
    deleted = event_type == "image.delete"
    payload = {
        "id": res.id,
        "name": res.name,
        "status": "deleted" if deleted else phase.status,
        "owner": None if res.ownerless else phase.project,
        "size": phase.size,
        "virtual_size": phase.size,
        "visibility": res.visibility,
        "is_public": res.visibility == "public",
        "disk_format": "raw",
        "container_format": "bare",
        "min_disk": 0,
        "min_ram": 0,
        "protected": False,
        "checksum": res.id.replace("-", "")[:32] if phase.size else None,
        "created_at": _glance_time(res.created_at),
        "updated_at": _glance_time(at),
        "deleted": deleted,
        "deleted_at": _glance_time(at) if deleted else None,
        "properties": {},
        "tags": [],
    }
    if event_type == "image.upload":
        payload.update({"os_glance_importing_to_stores": [], "os_glance_failed_import": []})
    return payload


def _loadbalancer(res: Resource, phase: Phase) -> dict[str, Any]:
    listeners, pools = phase.size
    return {
        "loadbalancer_id": res.id,
        "project_id": phase.project,
        "name": res.name,
        "description": "",
        "admin_state_up": True,
        "availability_zone": None,
        "vip_address": res.address,
        "vip_network_id": "849b08a9-4397-4d6e-929d-90efc055ab8e",
        "vip_port_id": res.id[:24] + "000000000000",
        "vip_subnet_id": "d59311ee-ed3a-42c0-ac97-cebf7945facc",
        "vip_qos_policy_id": None,
        "listeners": [{"listener_id": f"{res.id[:30]}{i:06d}", "loadbalancer_id": res.id}
                      for i in range(listeners)],
        "pools": [{"pool_id": f"{res.id[:30]}{i + 100:06d}", "loadbalancer_id": res.id}
                  for i in range(pools)],
    }
