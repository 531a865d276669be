"""The shapes a legacy oslo notification comes in, reduced to listener arguments.

An oslo.messaging endpoint receives ``(ctxt, publisher_id, event_type, payload,
metadata)``.  On the wire (messagingv2) the same notification is one flat object
with ``message_id``, ``timestamp`` and the context flattened into ``_context_*``
keys, itself JSON-encoded in the ``oslo.message`` member of the envelope.  These
functions undo that exactly as oslo.messaging's AMQP driver does
(``_drivers/common.py deserialize_msg``, ``_drivers/amqp.py unpack_context``), so
tests, the simulated cloud and benchmarks can feed captured notifications to
``mapping.openstack.map_notification``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, TypedDict

CONTEXT_PREFIX: Final = "_context_"
ENVELOPE_VERSION: Final = "2.0"


class ListenerArgs(TypedDict):
    """What a notification listener endpoint is called with."""

    ctxt: dict[str, Any]
    publisher_id: Any
    event_type: str
    payload: Any
    metadata: dict[str, Any]


def from_wire(message: Mapping[str, Any]) -> ListenerArgs:
    """Listener arguments of a flat wire message (``_context_*`` keys, no envelope)."""
    ctxt = {
        key[len(CONTEXT_PREFIX):]: value
        for key, value in message.items()
        if key.startswith(CONTEXT_PREFIX)
    }
    metadata = {}
    for key in ("message_id", "timestamp"):
        if key in message:
            metadata[key] = message[key]
    return ListenerArgs(
        ctxt=ctxt,
        publisher_id=message.get("publisher_id"),
        event_type=str(message.get("event_type", "")),
        payload=message.get("payload"),
        metadata=metadata,
    )


def from_envelope(body: Mapping[str, Any]) -> ListenerArgs:
    """Listener arguments of a messagingv2 envelope ``{"oslo.version", "oslo.message"}``."""
    inner = body.get("oslo.message")
    if not isinstance(inner, str):
        raise ValueError("not a messagingv2 envelope: 'oslo.message' is not a JSON string")
    message = json.loads(inner)
    if not isinstance(message, dict):
        raise ValueError("'oslo.message' does not hold a JSON object")
    return from_wire(message)


def to_envelope(message: Mapping[str, Any]) -> dict[str, str]:
    """The messagingv2 envelope of a flat wire message, as nova and cinder send it."""
    return {"oslo.version": ENVELOPE_VERSION, "oslo.message": json.dumps(message)}


def from_capture(capture: Mapping[str, Any]) -> ListenerArgs:
    """Listener arguments of a captured notification in any of the three shapes.

    The listener shape carries ``ctxt``/``metadata`` members; the wire shape carries
    ``_context_*``, ``message_id`` and ``timestamp``; the bare shape has neither and
    yields an empty context and metadata.  Keys starting with a single underscore
    (``_source``, ``_notes``, ``_unique_id``) are annotations, not data.
    """
    if "ctxt" in capture or "metadata" in capture:
        ctxt = capture.get("ctxt")
        metadata = capture.get("metadata")
        return ListenerArgs(
            ctxt=dict(ctxt) if isinstance(ctxt, Mapping) else {},
            publisher_id=capture.get("publisher_id"),
            event_type=str(capture.get("event_type", "")),
            payload=capture.get("payload"),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        )
    return from_wire(capture)
