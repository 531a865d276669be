"""The OpenStack notification table and the function that applies it.

The table is documented in docs/notification-mapping.md.

``NOTIFICATION_TABLE`` is the data: one row per oslo event type Tally books, naming
the Tally event type, the resource type, the state rule, the size builder, where
the resource id and the owning project are read, and the skip rule.  Adapting
Tally to another OpenStack release is an edit to that literal only.  The named
functions it refers to live in ``mapping.openstack_rules``.

``map_notification`` turns what an oslo.messaging listener endpoint receives into
a canonical event (``mapping.event``), or None when the table does not book the
notification.  It never raises: a payload it cannot read still becomes an event,
which the Reporting API dead-letters with the reason it broke.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from mapping import event
from mapping.openstack_rules import (
    SizeBuilder,
    SkipRule,
    StateRule,
    fixed_state,
    floating_ip_size,
    image_size,
    instance_size,
    loadbalancer_size,
    normalize_vm_state,
    normalize_volume_status,
    read_path,
    stored_image,
    unsized_image,
    vm_state,
    volume_size,
    volume_status,
)

__all__ = [
    "NOTIFICATION_TABLE",
    "NotificationRule",
    "RULES_BY_OSLO_TYPE",
    "context_project_id",
    "map_notification",
    "normalize_vm_state",
    "normalize_volume_status",
    "oslo_timestamp",
    "rule_for",
]


@dataclass(frozen=True, kw_only=True)
class NotificationRule:
    """One row of the table, its fields always named (a row reads without counting columns).

    ``resource_id`` lists payload paths tried in order; a later one is read only
    when the earlier ones came back empty.  ``project_id`` is a payload path, or
    None where the table names the request context.
    """

    oslo_event_type: str
    event_type: str
    resource_type: str
    state: StateRule | None
    size: SizeBuilder | None
    resource_id: tuple[str, ...]
    project_id: str | None
    skip: SkipRule | None = None


_R = NotificationRule
_INSTANCE_ID = ("instance_id",)
_VOLUME_ID = ("volume_id",)
_IMAGE_ID = ("id",)
_LOADBALANCER_ID = ("loadbalancer_id", "id")

# fmt: off
NOTIFICATION_TABLE: Final[tuple[NotificationRule, ...]] = (
    _R(oslo_event_type="compute.instance.create.end", event_type="compute.instance.create.end", resource_type="instance", state=vm_state, size=instance_size, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.delete.end", event_type="compute.instance.delete.end", resource_type="instance", state=None, size=None, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.finish_resize.end", event_type="compute.instance.resize.end", resource_type="instance", state=vm_state, size=instance_size, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.resize.confirm.end", event_type="compute.instance.resize.confirm.end", resource_type="instance", state=vm_state, size=instance_size, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.resize.revert.end", event_type="compute.instance.resize.revert.end", resource_type="instance", state=vm_state, size=instance_size, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.shelve_offload.end", event_type="compute.instance.shelve", resource_type="instance", state=fixed_state("shelved"), size=None, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.unshelve.end", event_type="compute.instance.unshelve", resource_type="instance", state=fixed_state("active"), size=None, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.power_off.end", event_type="compute.instance.power_off", resource_type="instance", state=fixed_state("shutoff"), size=None, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="compute.instance.power_on.end", event_type="compute.instance.power_on", resource_type="instance", state=fixed_state("active"), size=None, resource_id=_INSTANCE_ID, project_id="tenant_id"),
    _R(oslo_event_type="volume.create.end", event_type="volume.create.end", resource_type="volume", state=fixed_state("available"), size=volume_size, resource_id=_VOLUME_ID, project_id="tenant_id"),
    _R(oslo_event_type="volume.delete.end", event_type="volume.delete.end", resource_type="volume", state=None, size=None, resource_id=_VOLUME_ID, project_id="tenant_id"),
    _R(oslo_event_type="volume.resize.end", event_type="volume.resize.end", resource_type="volume", state=volume_status, size=volume_size, resource_id=_VOLUME_ID, project_id="tenant_id"),
    _R(oslo_event_type="volume.retype", event_type="volume.retype", resource_type="volume", state=volume_status, size=volume_size, resource_id=_VOLUME_ID, project_id="tenant_id"),
    _R(oslo_event_type="volume.transfer.accept.end", event_type="volume.transfer.accept.end", resource_type="volume", state=volume_status, size=volume_size, resource_id=_VOLUME_ID, project_id="tenant_id"),
    _R(oslo_event_type="floatingip.create.end", event_type="floatingip.create.end", resource_type="floating_ip", state=fixed_state("active"), size=floating_ip_size, resource_id=("floatingip.id",), project_id="floatingip.tenant_id"),
    _R(oslo_event_type="floatingip.delete.end", event_type="floatingip.delete.end", resource_type="floating_ip", state=None, size=None, resource_id=("floatingip_id",), project_id=None),
    _R(oslo_event_type="image.upload", event_type="image.create", resource_type="image", state=stored_image, size=image_size, resource_id=_IMAGE_ID, project_id="owner"),
    _R(oslo_event_type="image.create", event_type="image.create", resource_type="image", state=stored_image, size=image_size, resource_id=_IMAGE_ID, project_id="owner", skip=unsized_image),
    _R(oslo_event_type="image.delete", event_type="image.delete", resource_type="image", state=None, size=None, resource_id=_IMAGE_ID, project_id="owner"),
    _R(oslo_event_type="octavia.loadbalancer.create.end", event_type="octavia.loadbalancer.create.end", resource_type="loadbalancer", state=fixed_state("active"), size=loadbalancer_size, resource_id=_LOADBALANCER_ID, project_id="project_id"),
    _R(oslo_event_type="octavia.loadbalancer.update.end", event_type="octavia.loadbalancer.update.end", resource_type="loadbalancer", state=fixed_state("active"), size=None, resource_id=_LOADBALANCER_ID, project_id="project_id"),
    _R(oslo_event_type="octavia.loadbalancer.delete.end", event_type="octavia.loadbalancer.delete.end", resource_type="loadbalancer", state=None, size=None, resource_id=_LOADBALANCER_ID, project_id="project_id"),
)
# fmt: on

RULES_BY_OSLO_TYPE: Final[Mapping[str, NotificationRule]] = MappingProxyType(
    {rule.oslo_event_type: rule for rule in NOTIFICATION_TABLE}
)

# Context keys, in order: the project id, then the tenant id (oslo.context and the
# services have spelled both ways over the years).
_CONTEXT_PROJECT_KEYS: Final = ("project_id", "project")
_CONTEXT_TENANT_KEYS: Final = ("tenant_id", "tenant")

# oslo metadata: "2026-11-29 23:46:12.702142" (naive UTC); also accepted with a "T",
# without the fraction, or with an offset.
_OSLO_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})?$"
)


def rule_for(oslo_event_type: str) -> NotificationRule | None:
    """The table's row for an oslo event type, or None when the table does not book it."""
    return RULES_BY_OSLO_TYPE.get(oslo_event_type)


def oslo_timestamp(value: Any) -> str:
    """An oslo timestamp (naive UTC) as RFC 3339 UTC with microseconds.

    An unreadable value is passed through (a non-string becomes ``""``) so the
    Reporting API rejects the event with a reason rather than Tally guessing a date.
    """
    if not isinstance(value, str):
        return ""
    if not _OSLO_TIMESTAMP.match(value):
        return value
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return event.format_timestamp(parsed)


def _as_dict(ctxt: Any) -> Mapping[str, Any]:
    # Over RabbitMQ ctxt is a dict; the fake driver hands over the context object.
    if isinstance(ctxt, Mapping):
        return ctxt
    to_dict = getattr(ctxt, "to_dict", None)
    if callable(to_dict):
        try:
            as_dict = to_dict()
        except Exception:  # a broken context must not break mapping
            return {}
        if isinstance(as_dict, Mapping):
            return as_dict
    return {}


def _first_string(values: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = values.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def context_project_id(ctxt: Any) -> str:
    """The project of a request context: its project id, else its tenant id, else ``""``."""
    values = _as_dict(ctxt)
    return _first_string(values, _CONTEXT_PROJECT_KEYS) or _first_string(
        values, _CONTEXT_TENANT_KEYS
    )


def _read_id(payload: Mapping[str, Any], paths: tuple[str, ...]) -> str:
    for path in paths:
        value = read_path(payload, path)
        if isinstance(value, str) and value:
            return value
    return ""


def _project_id(rule: NotificationRule, payload: Mapping[str, Any], ctxt: Any) -> str:
    # The payload describes the resource, the context whoever made the call; they
    # differ when an administrator acts on another project's resource.
    if rule.project_id is not None:
        project = _read_id(payload, (rule.project_id,))
        if project:
            return project
    return context_project_id(ctxt)


def map_notification(
    cloud: str,
    ctxt: Any,
    publisher_id: Any,
    event_type: str,
    payload: Any,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """Map one oslo notification (listener arguments) to a canonical event.

    Returns None when the table does not name ``event_type`` or the row's skip
    rule applies.  ``publisher_id`` is accepted for the listener's signature; the
    table does not read it.
    """
    rule = rule_for(event_type)
    if rule is None:
        return None
    body: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
    if rule.skip is not None and rule.skip(body):
        return None

    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    resource_id = _read_id(body, rule.resource_id)
    timestamp = oslo_timestamp(meta.get("timestamp"))
    message_id = meta.get("message_id")
    if isinstance(message_id, str) and message_id:
        event_id = message_id
    else:
        event_id = event.notification_event_id(
            event.PLATFORM_OPENSTACK, cloud, resource_id, rule.event_type, timestamp
        )

    event_payload: dict[str, Any] = {}
    if rule.state is not None:
        state = rule.state(body)
        if state is not None:
            event_payload["state"] = state
    if rule.size is not None:
        event_payload["size"] = rule.size(body)
    event_payload["provider"] = {"oslo_event_type": event_type}

    return {
        "event_id": event_id,
        "event_type": rule.event_type,
        "platform": event.PLATFORM_OPENSTACK,
        "cloud": cloud,
        "resource_type": rule.resource_type,
        "resource_id": resource_id,
        "project_id": _project_id(rule, body, ctxt),
        "timestamp": timestamp,
        "source": event.SOURCE_COLLECTOR,
        "payload": event_payload,
    }
