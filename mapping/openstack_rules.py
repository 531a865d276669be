"""The named functions the OpenStack notification table refers to.

State rules, size builders and skip rules (docs/notification-mapping.md): each
reads a legacy notification payload and never raises.  A value the function cannot
read is left out (size members) or passed through as reported (states), so the
Reporting API can dead-letter the event with a reason instead of the collector
booking something nobody reported.

The state normalisations are public because reconciliation normalises what the
APIs report through the very same functions.
"""

from __future__ import annotations

import enum
import ipaddress
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

Payload = Mapping[str, Any]
StateRule = Callable[[Payload], Any]
SizeBuilder = Callable[[Payload], dict[str, Any]]
SkipRule = Callable[[Payload], bool]

BYTES_PER_GIB: Final = 1073741824
MIB_PER_GIB: Final = 1024

# nova vm_state -> Tally state.  Anything not listed passes through unchanged:
# replacing an unknown state by a known one would hide it.
VM_STATE_NORMALIZATION: Final[Mapping[str, str]] = MappingProxyType({
    "stopped": "shutoff",
    "shelved_offloaded": "shelved",
    # A resized server waits for confirm/revert; it is booked active until then
    # Nova also reports a server resized while stopped as resized (and keeps it off);
    # nothing tells the two apart, so it too is booked active until confirm/revert.
    "resized": "active",
})

# Volume events that change size or owner do not always repeat the status.
DEFAULT_VOLUME_STATUS: Final = "available"



class ImageData(enum.Enum):
    """Whether glance holds an image's data, which is what an image is booked by."""

    STORED = "stored"  # in the store: the table's image.upload (or a sized image.create)
    ARRIVING = "arriving"  # still on its way in: nothing is booked until image.upload
    ABSENT = "absent"  # never got data or lost it: the upload failed, or it is deleted
    UNKNOWN = "unknown"  # a glance status this table does not know (a newer glance)


# Glance statuses by what they say of the data.  ``deactivated`` only hides an image
# from non-admins: its data still occupies the store.
IMAGE_STATUSES: Final[Mapping[str, ImageData]] = MappingProxyType({
    "active": ImageData.STORED,
    "deactivated": ImageData.STORED,
    "queued": ImageData.ARRIVING,
    "saving": ImageData.ARRIVING,
    "uploading": ImageData.ARRIVING,
    "importing": ImageData.ARRIVING,
    "killed": ImageData.ABSENT,
    "deleted": ImageData.ABSENT,
    "pending_delete": ImageData.ABSENT,
})


def read_path(payload: Any, path: str) -> Any:
    """The value at a dotted path (``floatingip.id``), or None where it leads nowhere."""
    value = payload
    for segment in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(segment)
    return value


def _number(value: Any) -> float | int | None:
    """A finite, non-negative JSON number, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value < 0:
        return None
    return value


def _integer(value: Any) -> int | None:
    number = _number(value)
    return number if isinstance(number, int) else None


# --- state rules ---------------------------------------------------------------------


def normalize_vm_state(state: Any) -> Any:
    """Normalise a nova vm_state (``stopped`` -> ``shutoff``, ...).

    Unknown states pass through as nova reported them; None stays None.
    """
    if isinstance(state, str):
        return VM_STATE_NORMALIZATION.get(state, state)
    return state


def normalize_volume_status(status: Any) -> Any:
    """A cinder status as Tally books it: absent or empty falls back to ``available``."""
    if status is None or status == "":
        return DEFAULT_VOLUME_STATUS
    return status


def vm_state(payload: Payload) -> Any:
    """State rule ``vmState``: the payload's ``state``, normalised."""
    return normalize_vm_state(payload.get("state"))


def volume_status(payload: Payload) -> Any:
    """State rule ``volumeStatus``: the payload's ``status``, ``available`` when absent."""
    return normalize_volume_status(payload.get("status"))


def fixed_state(state: str) -> StateRule:
    """State rule ``fixedState(state)``: the notification type already says the state."""

    def rule(payload: Payload) -> str:
        return state

    rule.__name__ = f"fixed_state({state!r})"
    rule.__qualname__ = rule.__name__
    return rule


def image_data(status: Any) -> ImageData:
    """What a glance image status says of the image's data (UNKNOWN for any other)."""
    if not isinstance(status, str):
        return ImageData.UNKNOWN
    return IMAGE_STATUSES.get(status, ImageData.UNKNOWN)


def image_state(data: ImageData) -> str | None:
    """The state an image is booked with: ``active`` once glance holds its data; None
    (nothing booked live) while it is arriving, when it is absent, or when nothing says.

    The one image-state function: the table's ``stored_image`` and reconciliation's
    reading of glance's listing both book through it."""
    return "active" if data is ImageData.STORED else None


def stored_image(payload: Payload) -> Any:
    """State rule ``stored_image``: an ``image.upload`` (or an ``image.create`` that
    carries a size) is glance saying it holds the data, whatever status the payload
    shows mid-flight (``saving``, ``queued``)."""
    return image_state(ImageData.STORED)


# --- size builders ---------------------------------------------------------------------


def instance_size(payload: Payload) -> dict[str, Any]:
    """Size builder ``instanceSize``: vcpus, ram_gb, disk_gb (root + ephemeral), flavor."""
    size: dict[str, Any] = {}
    vcpus = _integer(payload.get("vcpus"))
    if vcpus is not None:
        size["vcpus"] = vcpus
    memory_mb = _number(payload.get("memory_mb"))
    if memory_mb is not None:
        size["ram_gb"] = memory_mb / MIB_PER_GIB
    disk = _disk_gb(payload)
    if disk is not None:
        size["disk_gb"] = disk
    flavor = payload.get("instance_type")
    if isinstance(flavor, str):
        size["flavor"] = flavor
    return size


def _disk_gb(payload: Payload) -> int | float | None:
    # Either member may be absent (counts as zero); neither present leaves disk_gb
    # out, and a present one that is not a number spoils the sum.
    members = [name for name in ("root_gb", "ephemeral_gb") if name in payload]
    if not members:
        return None
    total: int | float = 0
    for name in members:
        value = _number(payload[name])
        if value is None:
            return None
        total += value
    return total


def volume_size(payload: Payload) -> dict[str, Any]:
    """Size builder ``volumeSize``: size -> size_gb, volume_type (the type id) -> type."""
    size: dict[str, Any] = {}
    size_gb = _number(payload.get("size"))
    if size_gb is not None:
        size["size_gb"] = size_gb
    volume_type = payload.get("volume_type")
    if isinstance(volume_type, str):
        size["type"] = volume_type
    return size


def image_size(payload: Payload) -> dict[str, Any]:
    """Size builder ``imageSize``: size in bytes -> size_gb in GiB."""
    size_bytes = _number(payload.get("size"))
    if size_bytes is None:
        return {}
    return {"size_gb": size_bytes / BYTES_PER_GIB}


def floating_ip_size(payload: Payload) -> dict[str, Any]:
    """Size builder ``floatingIPSize``: the IP version of floatingip.floating_ip_address.

    An absent or unreadable address counts as version 4: skipping the event would
    cost the address its whole billing record.
    """
    address = read_path(payload, "floatingip.floating_ip_address")
    version = 4
    if isinstance(address, str):
        try:
            version = ipaddress.ip_address(address).version
        except ValueError:
            version = 4
    return {"ip_version": version}


def loadbalancer_size(payload: Payload) -> dict[str, Any]:
    """Size builder ``loadBalancerSize``: counts of the listeners and pools arrays.

    Absent and null count as zero (octavia's worker publishes neither); a member
    that is not an array is left out.
    """
    size: dict[str, Any] = {}
    for member in ("listeners", "pools"):
        value = payload.get(member)
        if value is None:
            size[member] = 0
        elif isinstance(value, list):
            size[member] = len(value)
    return size


# --- skip rules ------------------------------------------------------------------------


def unsized_image(payload: Payload) -> bool:
    """Skip rule ``unsizedImage``: an image.create without a positive size.

    Glance creates the record before the bits are uploaded; the image.upload that
    follows carries the real size and books the image.
    """
    size = _number(payload.get("size"))
    return size is None or size <= 0
