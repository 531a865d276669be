"""The canonical event: its JSON Schema, the verb rule, timestamps, ids, the identity
of a resource and the most events one request carries.

Documented for operators in docs/canonical-event.md.

Everything that produces or consumes events (collector, reporting, reconciliation,
simcloud's truth checks) goes through these functions, so the contract lives in one
place.  This module is pure: no I/O, no configuration, no imports from the services.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Any, Final, Literal

PLATFORM_OPENSTACK: Final = "openstack"
SOURCE_COLLECTOR: Final = "collector"
SOURCE_RECONCILIATION: Final = "reconciliation"

Verb = Literal["create", "update", "delete"]

# Fixed namespace of every deterministic event id.  Changing it would give every
# replayed notification without a message_id and every correction a new id, i.e.
# duplicates, so it is a constant of the data format, not a setting.
EVENT_ID_NAMESPACE: Final = uuid.UUID("5b0b4d52-4f3c-4d0e-9a55-7a11e1a7a11e")

MAX_ID_LEN: Final = 255
MAX_STATE_LEN: Final = 255

# The fields a resource's URL is made of (/v1/resources/{platform}/{cloud}/{type}/{id}):
# none may hold "/", or the resource could be stored but never fetched.
# (resource_type's own pattern already excludes it.)
PATH_FIELDS: Final = ("platform", "cloud", "resource_id")


def route_problem(value: str) -> str | None:
    """Why ``value`` cannot be a platform, cloud or resource id, or None: the one rule of
    ingest, the API's clouds file and the collector's cloud name."""
    if "/" in value:
        return "must not hold '/' (no route could serve it)"
    return None


# The wire limit: the most events one POST /v1/events carries.  The API refuses a
# larger batch (413) and the collector never sends one.
MAX_BATCH: Final = 1000
# The longest reason the dead letter keeps: reasons quote offending values, and a
# 10 MiB string must not become a 10 MiB reason.  A collector filing what it parked
# trims its own reasons to it.
MAX_REASON_LEN: Final = 1000

# The identity of the resource an event is about.
ResourceKey = tuple[str, str, str, str]  # (platform, cloud, resource_type, resource_id)

# RFC 3339 date-time with a mandatory offset and at most microseconds.
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})$"
)

EVENT_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://tally.invalid/schemas/canonical-event.json",
    "title": "Tally canonical event",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "event_id", "event_type", "platform", "cloud", "resource_type",
        "resource_id", "project_id", "timestamp", "source", "payload",
    ],
    "properties": {
        "event_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN},
        "event_type": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN},
        "platform": {"type": "string", "minLength": 1, "maxLength": 64},
        "cloud": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN},
        "resource_type": {
            "type": "string", "minLength": 1, "maxLength": 64,
            "pattern": "^[a-z][a-z0-9_]*$",
        },
        "resource_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN},
        "project_id": {"type": "string", "maxLength": MAX_ID_LEN},
        "timestamp": {"type": "string", "maxLength": 64, "pattern": _RFC3339.pattern},
        "source": {"enum": [SOURCE_COLLECTOR, SOURCE_RECONCILIATION]},
        "payload": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "state": {"type": "string", "maxLength": MAX_STATE_LEN},
                "size": {"type": "object"},
                "provider": {"type": "object"},
            },
        },
    },
}


def verb(event_type: str) -> Verb:
    """Classify an event type by the verb rule (docs/canonical-event.md).

    A trailing ``.start``/``.end`` is stripped; the last dotted segment then decides:
    ``create`` creates, ``delete`` deletes, anything else updates.
    """
    segments = event_type.split(".")
    if len(segments) > 1 and segments[-1] in ("start", "end"):
        segments = segments[:-1]
    last = segments[-1]
    if last == "create":
        return "create"
    if last == "delete":
        return "delete"
    return "update"


class TimestampError(ValueError):
    """A timestamp that is not RFC 3339 with an offset."""


def parse_timestamp(value: str) -> dt.datetime:
    """Parse an RFC 3339 date-time with an offset into an aware UTC datetime.

    Raises TimestampError for anything else: no offset, a space separator, more than
    microseconds, or an impossible date.
    """
    if not isinstance(value, str) or not _RFC3339.match(value) or value.endswith("\n"):
        raise TimestampError(
            f"timestamp {value!r} is not RFC 3339 with an offset (e.g. 2026-01-31T12:00:00Z)"
        )
    text = value.replace("t", "T")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise TimestampError(f"timestamp {value!r} is not a valid date-time: {exc}") from None
    if parsed.utcoffset() is None:  # pragma: no cover - the pattern demands an offset
        raise TimestampError(f"timestamp {value!r} has no offset")
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        raise TimestampError(f"timestamp {value!r} is out of range in UTC") from None


def format_timestamp(moment: dt.datetime) -> str:
    """Render an instant as RFC 3339 UTC with microseconds, e.g. 2026-01-31T12:00:00.000000Z.

    A naive datetime is taken to be UTC already (that is what oslo and the
    databases hand us).
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    # isoformat, not strftime: %Y drops the zero padding of years below 1000.
    utc = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


def normalize_timestamp(value: str) -> str:
    """Parse and re-render an RFC 3339 timestamp in the canonical UTC form."""
    return format_timestamp(parse_timestamp(value))


def _uuid5(*parts: str) -> str:
    # The unit separator cannot occur in the fields we join, so distinct tuples
    # can never collide into the same name.
    return str(uuid.uuid5(EVENT_ID_NAMESPACE, "\x1f".join(parts)))


def notification_event_id(
    platform: str, cloud: str, resource_id: str, event_type: str, timestamp: str
) -> str:
    """Deterministic id of a notification that carried no message_id.

    ``event_type`` is the mapped (Tally) type and ``timestamp`` the canonical
    rendering, so the same notification redelivered maps to the same id.
    """
    return _uuid5("notification", platform, cloud, resource_id, event_type, timestamp)


def correction_event_id(
    sync_run_id: str,
    platform: str,
    cloud: str,
    resource_type: str,
    resource_id: str,
    action: str,
) -> str:
    """Deterministic id of a reconciliation correction (``action``: create/update/delete)."""
    return _uuid5("correction", sync_run_id, platform, cloud, resource_type, resource_id, action)
