"""Handing every message of a listener batch to the collector's own code.

oslo.messaging's ``BatchNotificationDispatcher`` reads each message's ``priority``
with ``message.get('priority', '').lower()`` before any endpoint runs: a priority
that is not a string (``null``, a number) raises there, the listener requeues the
whole batch, and the same batch comes back for ever.  A priority that is a string
but not the endpoint's (``"Info "``, missing, ``"error"``) is dropped with at most
a WARNING, and oslo acknowledges it.

``CollectorDispatcher`` replaces it.  It never raises on a message: each one is
read on its own; an INFO notification goes to the endpoint to be mapped and
buffered, and every other one is kept by the endpoint in the parked store with the
reason it is not booked (``tally_collector_parked_total{reason}``), from where it
goes to the Reporting API's dead letter.  The batch goes on either way; only what
could not be put on disk is requeued.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import oslo_messaging
from oslo_messaging.notify.dispatcher import (
    PRIORITIES,
    BatchNotificationDispatcher,
    NotificationResult,
)
from oslo_messaging.notify.listener import BatchNotificationServer

LOG = logging.getLogger(__name__)

BOOKED_PRIORITY = "info"


@dataclass(frozen=True)
class NotBooked:
    """Why a message is kept instead of booked: a metric label and a sentence."""

    label: str
    reason: str


class Endpoint(Protocol):
    def info(self, messages: list[dict[str, Any]]) -> str: ...

    def keep(self, message: dict[str, Any], why: NotBooked) -> bool: ...

    def pause_before_requeue(self) -> None: ...


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def priority_problem(priority: Any, present: bool) -> NotBooked | None:
    """None for a priority the collector books (INFO, as oslo reads it: any case);
    otherwise why the message is kept instead."""
    if not present:
        return NotBooked("priority_missing", "no priority")
    if not isinstance(priority, str):
        return NotBooked("priority_not_a_string",
                         f"priority {_describe(priority)} is not a string")
    lowered = priority.lower()
    if lowered == BOOKED_PRIORITY:
        return None
    if lowered in PRIORITIES:
        # e.g. compute.instance.create.error (a failed build), glance's failed
        # image.upload: reports of a failure, which the table books none of.
        return NotBooked(f"priority_{lowered}",
                         f"priority {priority.upper()}: only INFO notifications are booked")
    return NotBooked("priority_unknown",
                     f"priority {_describe(priority)} is not an oslo.messaging priority")


def read_message(incoming: Any) -> tuple[dict[str, Any], NotBooked | None]:
    """The message as the endpoint takes it (ctxt, publisher_id, event_type, payload,
    metadata) and why it is not booked (None: it is).  Never raises."""
    try:
        message = incoming.message
        ctxt = incoming.ctxt
        if not isinstance(message, Mapping):
            return ({"message": repr(message)[:10_000]},
                    NotBooked("not_an_object",
                              f"the notification is a {type(message).__name__}, not an object"))
        record = {
            "ctxt": ctxt,
            "publisher_id": message.get("publisher_id"),
            "event_type": message.get("event_type"),
            "payload": message.get("payload"),
            "metadata": {"message_id": message.get("message_id"),
                         "timestamp": message.get("timestamp")},
        }
        problem = priority_problem(message.get("priority"), "priority" in message)
        if problem is not None:
            record["priority"] = message.get("priority")
        return record, problem
    except Exception as exc:  # a message object no driver should hand over
        return ({"message": repr(incoming)[:10_000]},
                NotBooked("undispatchable", f"cannot be read: {type(exc).__name__}: {exc}"))


class CollectorDispatcher(BatchNotificationDispatcher):
    """oslo's batch dispatcher for one endpoint, reading each message on its own."""

    def __init__(self, endpoint: Endpoint) -> None:
        # The endpoint's ``info`` method makes the listener bind ``<topic>.info``.
        super().__init__([endpoint], None)
        self._endpoint = endpoint

    def dispatch(self, incoming: Iterable[Any]) -> set[Any]:
        """Answers the messages to requeue (oslo acknowledges the others)."""
        booked_raw: list[Any] = []
        booked: list[dict[str, Any]] = []
        requeue: set[Any] = set()
        for raw in incoming:
            message, problem = read_message(raw)
            if problem is None:
                booked_raw.append(raw)
                booked.append(message)
            elif not self._keep(message, problem):
                requeue.add(raw)
        if requeue:
            self._endpoint.pause_before_requeue()
        if booked and self._book(booked) == NotificationResult.REQUEUE:
            requeue.update(booked_raw)
        return requeue

    def _keep(self, message: dict[str, Any], why: NotBooked) -> bool:
        try:
            return self._endpoint.keep(message, why)
        except Exception:
            LOG.exception("Keeping a notification failed; it is requeued")
            return False

    def _book(self, messages: list[dict[str, Any]]) -> str:
        try:
            return self._endpoint.info(messages)
        except Exception:
            LOG.exception("Booking a batch failed; it is requeued")
            return NotificationResult.REQUEUE


def batch_listener(
    transport: oslo_messaging.Transport, targets: list[oslo_messaging.Target],
    endpoint: Endpoint, *, pool: str, batch_size: int, batch_timeout: float,
) -> oslo_messaging.MessageHandlingServer:
    """What ``oslo_messaging.get_batch_notification_listener`` builds, with the
    collector's dispatcher (threading executor, requeue allowed)."""
    return BatchNotificationServer(
        transport, targets, CollectorDispatcher(endpoint), "threading",
        allow_requeue=True, pool=pool, batch_size=batch_size, batch_timeout=batch_timeout)
