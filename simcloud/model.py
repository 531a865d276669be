"""What the simulated cloud holds: resources, their phases, flavors and volume types.

A resource's whole life is generated up front as a list of :class:`Phase` records,
each the platform's view from its instant on.  Every question about an instant (an
API listing, the ground truth) is answered by looking up the phase in force then,
so nothing is mutated while the clock moves and any instant can be asked.

Instants are float POSIX seconds (whole seconds): cheap to compare at 100k scale and
rendered exactly in every API's timestamp format.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
from typing import Any, Final, NamedTuple

from mapping.openstack_rules import BYTES_PER_GIB, normalize_vm_state

INSTANCE: Final = "instance"
VOLUME: Final = "volume"
FLOATING_IP: Final = "floating_ip"
IMAGE: Final = "image"
LOADBALANCER: Final = "loadbalancer"
RESOURCE_TYPES: Final = (INSTANCE, VOLUME, FLOATING_IP, IMAGE, LOADBALANCER)


class Flavor(NamedTuple):
    id: str
    name: str
    vcpus: int
    ram_mb: int
    disk_gb: int
    ephemeral_gb: int
    is_public: bool


FLAVORS: Final = (
    Flavor("1", "m1.tiny", 1, 512, 1, 0, True),
    Flavor("2", "m1.small", 1, 2048, 20, 0, True),
    Flavor("3", "m1.medium", 2, 4096, 40, 0, True),
    Flavor("4", "m1.large", 4, 8192, 80, 0, True),
    Flavor("5", "m1.xlarge", 8, 16384, 160, 0, True),
    Flavor("6", "c1.scratch", 4, 8192, 40, 100, True),
    # A private flavor: only ``flavors/detail?is_public=None`` shows it to an admin.
    Flavor("7", "p1.gold", 16, 65536, 200, 0, False),
)


class VolumeType(NamedTuple):
    id: str
    name: str
    is_public: bool
    description: str | None


VOLUME_TYPES: Final = (
    VolumeType("9d3c7e4e-6f3b-4a57-8f0e-3e2b1c0a0001", "__DEFAULT__", True, "Default Volume Type"),
    VolumeType("9d3c7e4e-6f3b-4a57-8f0e-3e2b1c0a0002", "lvmdriver-1", True, None),
    VolumeType("9d3c7e4e-6f3b-4a57-8f0e-3e2b1c0a0003", "ssd", True, "solid state"),
    # A private type: cinder lists it for admins only with ``is_public=None``.
    VolumeType("9d3c7e4e-6f3b-4a57-8f0e-3e2b1c0a0004", "gold-private", False, "private tier"),
)


class Phase(NamedTuple):
    """The platform's view of a resource from ``at`` until the next phase.

    ``status`` is the raw platform status (nova vm_state, cinder status, neutron
    status, glance status, octavia provisioning_status); ``task`` is nova's
    task_state (None elsewhere); ``state`` is the state Tally books for it;
    ``size`` is per type (flavor index, (GiB, type index), ip version, bytes or
    None, (listeners, pools)); ``attached`` is a volume's server or a floating IP's
    port, when it has one.
    """

    at: float
    status: str
    task: str | None
    state: str
    project: str
    size: Any
    attached: str | None = None


@dataclasses.dataclass(slots=True, eq=False)
class Resource:
    """One resource and its whole simulated life.

    ``created_at`` is the platform's creation instant (the API's ``created``),
    ``ready_at`` the instant its creation finished (when the create notification is
    dated), ``deleted_at`` the instant it left the live listings (None: never in the
    simulated period).
    """

    kind: str
    id: str
    name: str
    user_id: str
    host: str
    created_at: float
    ready_at: float
    deleted_at: float | None
    phases: list[Phase]
    phase_times: list[float] = dataclasses.field(default_factory=list)
    hidden: bool = False  # glance os_hidden
    ownerless: bool = False  # glance image without an owner
    visibility: str = "private"  # glance
    address: str = ""  # floating IP address or LB VIP

    def finish(self) -> None:
        self.phase_times = [p.at for p in self.phases]

    def exists_at(self, t: float) -> bool:
        return self.created_at <= t and (self.deleted_at is None or t < self.deleted_at)

    def phase_at(self, t: float) -> Phase:
        """The phase in force at ``t`` (the first one before the resource existed)."""
        index = bisect.bisect_right(self.phase_times, t) - 1
        return self.phases[max(index, 0)]

    def updated_at(self, t: float) -> float:
        """The platform's last change at or before ``t``."""
        if self.deleted_at is not None and t >= self.deleted_at:
            return self.deleted_at
        return self.phase_at(t).at


# Cinder statuses that mean an operation is in flight (the twelve reconciliation
# defers on, docs/reconciliation.md).
VOLUME_TRANSITIONS: Final = frozenset({
    "creating", "deleting", "managing", "attaching", "detaching", "reserved",
    "restoring-backup", "backing-up", "downloading", "uploading", "retyping", "extending",
})


def in_transition(resource: Resource, phase: Phase) -> bool:
    if resource.kind == INSTANCE:
        return phase.task is not None or phase.status == "building"
    if resource.kind == VOLUME:
        return phase.status in VOLUME_TRANSITIONS
    if resource.kind == LOADBALANCER:
        return phase.status.startswith("PENDING_")
    return False


def tally_size(resource: Resource, phase: Phase) -> dict[str, Any] | None:
    """The size as Tally books it (docs/canonical-event.md), or None where the platform
    has none yet."""
    kind = resource.kind
    if kind == INSTANCE:
        flavor = FLAVORS[phase.size]
        return {"vcpus": flavor.vcpus, "ram_gb": flavor.ram_mb / 1024,
                "disk_gb": flavor.disk_gb + flavor.ephemeral_gb, "flavor": flavor.name}
    if kind == VOLUME:
        size_gb, type_index = phase.size
        return {"size_gb": size_gb, "type": VOLUME_TYPES[type_index].name}
    if kind == FLOATING_IP:
        return {"ip_version": phase.size}
    if kind == IMAGE:
        return None if phase.size is None else {"size_gb": phase.size / BYTES_PER_GIB}
    listeners, pools = phase.size
    return {"listeners": listeners, "pools": pools}


def tally_state(resource: Resource, phase: Phase) -> str:
    if resource.kind == INSTANCE:
        return str(normalize_vm_state(phase.state))
    return phase.state


def to_datetime(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, dt.UTC)


def rfc3339(t: float) -> str:
    return to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truth_record(resource: Resource, at: float) -> dict[str, Any]:
    """The ground truth of one resource as of ``at`` (it was created at or before ``at``)."""
    deleted = resource.deleted_at is not None and resource.deleted_at <= at
    phase = resource.phase_at(at)
    record: dict[str, Any] = {
        "resource_type": resource.kind,
        "resource_id": resource.id,
        "project_id": "" if resource.ownerless else phase.project,
        "live": not deleted,
        # A deleted resource keeps the state it was last in, as Tally's row does.
        "state": tally_state(resource, phase),
        "status": "deleted" if deleted else phase.status,
        "task_state": None if deleted else phase.task,
        "in_transition": False if deleted else in_transition(resource, phase),
        "size": tally_size(resource, phase),
        "created_at": rfc3339(resource.created_at),
        "ready_at": rfc3339(resource.ready_at) if resource.ready_at <= at else None,
        "deleted_at": rfc3339(resource.deleted_at) if deleted and resource.deleted_at else None,
        "updated_at": rfc3339(resource.updated_at(at)),
    }
    if resource.kind == VOLUME:
        record["volume_type_id"] = VOLUME_TYPES[phase.size[1]].id
    if resource.kind == IMAGE:
        record["os_hidden"] = resource.hidden
    return record
