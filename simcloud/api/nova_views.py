"""nova's server and flavor views, per microversion (nova ``views/servers.py``)."""

from __future__ import annotations

import functools
from typing import Any

from simcloud.model import FLAVORS, Flavor, Resource, to_datetime

# nova api/openstack/common.py _STATE_MAP, the parts the simulation reaches.
_TASK_STATUS = {
    "resize_prep": "RESIZE", "resize_migrating": "RESIZE", "resize_migrated": "RESIZE",
    "resize_finish": "RESIZE",
}
_VM_STATUS = {
    "active": "ACTIVE", "building": "BUILD", "stopped": "SHUTOFF", "resized": "VERIFY_RESIZE",
    "shelved": "SHELVED", "shelved_offloaded": "SHELVED_OFFLOADED", "deleted": "DELETED",
}
# nova shows ``progress`` only in these statuses (views/servers.py _progress_statuses).
_PROGRESS_STATUSES = frozenset({"ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE",
                                "MIGRATING"})
_POWER = {"active": 1, "resized": 1, "building": 0, "stopped": 4, "shelved": 4,
          "shelved_offloaded": 4, "deleted": 0}


# Listing 100k servers renders the same instants over and over: remember them.
@functools.lru_cache(maxsize=1 << 18)
def _z(t: float) -> str:
    return to_datetime(t).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=1 << 18)
def _micro(t: float | None) -> str | None:
    return None if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S.%f")


def status_of(vm_state: str, task: str | None) -> str:
    if vm_state == "resized" and task == "resize_reverting":
        return "REVERT_RESIZE"
    if task in _TASK_STATUS and vm_state in ("active", "stopped"):
        return _TASK_STATUS[task]
    return _VM_STATUS.get(vm_state, "UNKNOWN")


StaticCache = dict[tuple[str, str, tuple[int, int], bool], dict[str, Any]]
# Per world: the never-changing part of each server's view, per (base, version, admin).
_CACHE_LIMIT = 1 << 16


def server_view(res: Resource, now: float, version: tuple[int, int], admin: bool, base: str,
                down_cell: bool, cache: StaticCache) -> dict[str, Any]:
    phase = res.phase_at(now)
    key = (res.id, base, version, admin)
    static = cache.get(key)
    if static is None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()  # bounded memory; a listing rebuilds what it needs
        static = cache[key] = _static(res, base, version, admin)
    if down_cell and version >= (2, 69):
        # A server in a cell nova cannot reach: the minimal record of its mapping.
        return {"id": res.id, "status": "UNKNOWN", "tenant_id": phase.project,
                "created": static["created"], "links": static["links"]}
    gone = res.deleted_at is not None and res.deleted_at <= now
    vm_state = "deleted" if gone else phase.status
    task = None if gone else phase.task
    launched = res.ready_at if res.ready_at <= now else None
    offloaded = vm_state == "shelved_offloaded"
    server = dict(static)  # the parts that never change, shared between listings
    server["status"] = status_of(vm_state, task)
    if server["status"] in _PROGRESS_STATUSES:
        server["progress"] = 0
    if not gone:
        # a deleted server's ports are gone, and nova lists its groups through them
        server["security_groups"] = [{"name": "default"}]
    server["hostId"] = "" if offloaded else static["hostId"]
    server["updated"] = _z(res.updated_at(now))
    server["OS-SRV-USG:launched_at"] = _micro(launched)
    server["OS-SRV-USG:terminated_at"] = _micro(res.deleted_at) if gone else None
    server["OS-EXT-STS:task_state"] = task
    server["OS-EXT-STS:vm_state"] = vm_state
    server["OS-EXT-STS:power_state"] = _POWER.get(vm_state, 0)
    server["flavor"] = _flavor(phase.size, version, base)
    if admin:
        host = None if offloaded else res.host
        server["OS-EXT-SRV-ATTR:host"] = host
        server["OS-EXT-SRV-ATTR:hypervisor_hostname"] = host
        if version >= (2, 16):
            server["host_status"] = "" if host is None else "UP"
    return server


def _static(res: Resource, base: str, version: tuple[int, int], admin: bool
            ) -> dict[str, Any]:
    project = res.phases[0].project  # a server never changes project
    server: dict[str, Any] = {
        "id": res.id,
        "name": res.name,
        "tenant_id": project,
        "user_id": res.user_id,
        "metadata": {},
        "hostId": res.host.encode().hex()[:56],
        "image": {"id": "70a599e0-31e7-49b7-b260-868f441e862b", "links": [
            {"rel": "bookmark",
             "href": f"{base}/compute/images/70a599e0-31e7-49b7-b260-868f441e862b"}]},
        "created": _z(res.created_at),
        "addresses": {},
        "accessIPv4": "",
        "accessIPv6": "",
        # nova's links carry no project id (unless the request's URL had one)
        "links": [{"rel": "self", "href": f"{base}/compute/v2.1/servers/{res.id}"},
                  {"rel": "bookmark", "href": f"{base}/compute/servers/{res.id}"}],
        "OS-DCF:diskConfig": "AUTO",
        "OS-EXT-AZ:availability_zone": "nova",
        "config_drive": "",
        "key_name": None,
        "os-extended-volumes:volumes_attached": [],
    }
    if admin:
        server["OS-EXT-SRV-ATTR:instance_name"] = "instance-" + res.id[:8]
        if version >= (2, 3):
            server.update({
                "OS-EXT-SRV-ATTR:reservation_id": "r-" + res.id[:8],
                "OS-EXT-SRV-ATTR:launch_index": 0,
                "OS-EXT-SRV-ATTR:hostname": res.name,
                "OS-EXT-SRV-ATTR:kernel_id": "",
                "OS-EXT-SRV-ATTR:ramdisk_id": "",
                "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                "OS-EXT-SRV-ATTR:user_data": None,
            })
    if version >= (2, 90):
        server["OS-EXT-SRV-ATTR:hostname"] = res.name  # shown to every caller from 2.90
    if version >= (2, 9):
        server["locked"] = False
    if version >= (2, 19):
        server["description"] = None
    if version >= (2, 26):
        server["tags"] = []
    if version >= (2, 63):
        server["trusted_image_certificates"] = None
    if version >= (2, 73):
        server["locked_reason"] = None
    if version >= (2, 96):
        server["pinned_availability_zone"] = None
    if version >= (2, 100):
        server["scheduler_hints"] = {}
    return server


@functools.lru_cache(maxsize=1024)
def _flavor(index: int, version: tuple[int, int], base: str) -> dict[str, Any]:
    flavor = FLAVORS[index]
    if version < (2, 47):
        return {"id": flavor.id, "links": [
            {"rel": "bookmark", "href": f"{base}/compute/flavors/{flavor.id}"}]}
    embedded: dict[str, Any] = {"vcpus": flavor.vcpus, "ram": flavor.ram_mb,
                                "disk": flavor.disk_gb, "ephemeral": flavor.ephemeral_gb,
                                "swap": 0, "original_name": flavor.name}
    # nova's stock policy lets a project's readers see extra specs, not only admins
    embedded["extra_specs"] = {}
    return embedded


def flavor_view(flavor: Flavor, version: tuple[int, int], base: str) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": flavor.id,
        "name": flavor.name,
        "vcpus": flavor.vcpus,
        "ram": flavor.ram_mb,
        "disk": flavor.disk_gb,
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        "swap": "" if version < (2, 75) else 0,
        "os-flavor-access:is_public": flavor.is_public,
        "links": [{"rel": "self", "href": f"{base}/compute/v2.1/flavors/{flavor.id}"},
                  {"rel": "bookmark", "href": f"{base}/compute/flavors/{flavor.id}"}],
    }
    if version < (2, 102):
        view["OS-FLV-DISABLED:disabled"] = False
        view["rxtx_factor"] = 1.0
    if version >= (2, 55):
        view["description"] = None
    if version >= (2, 61):
        view["extra_specs"] = {}
    return view
