"""The oslo.messaging side of the collector: listener, endpoint, ack discipline.

A batch notification listener with an explicit pool consumes ``<topic>.info`` on
every configured exchange.  The endpoint maps each notification
(``mapping.openstack.map_notification``), writes the whole batch to the disk
buffer in one transaction and returns HANDLED only after that commit; oslo then
acknowledges.  A failed write returns REQUEUE (the listener is built with
``allow_requeue=True``), after a capped, jittered pause so a broken disk does not
turn into a hot redelivery loop.  A full buffer holds the batch unacknowledged
until there is room (back-pressure into RabbitMQ).

oslo's own batch dispatcher is replaced (``collector.dispatch``): every message of a
batch reaches this endpoint, a notification at INFO to be booked (``info``), any
other one (a priority that is missing, not a string, not INFO) to be parked with
the reason it is not booked (``keep``).
"""

from __future__ import annotations

import logging
import random
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from typing import Any

import oslo_messaging
from oslo_config import cfg
from oslo_messaging.notify.dispatcher import NotificationResult

from collector.backlog import BacklogSignal
from collector.buffer import EventBuffer
from collector.dispatch import NotBooked, batch_listener
from collector.errors import ConfigurationError
from collector.metrics import CollectorMetrics
from mapping.event import route_problem
from mapping.openstack import map_notification
from tally_common.jsontext import dumps_finite

LOG = logging.getLogger(__name__)

DEFAULT_EXCHANGES = ["nova", "cinder", "neutron", "glance", "octavia", "openstack"]

OPTS = [
    cfg.StrOpt(
        "cloud",
        help="Name of the cloud in Tally (the 'cloud' of every event). Required. "
        "The environment variable TALLY_OSC_CLOUD overrides it.",
    ),
    cfg.ListOpt(
        "topics", default=["notifications"],
        help="Notification topics to consume (the services' "
        "[oslo_messaging_notifications] topics).",
    ),
    cfg.ListOpt(
        "exchanges", default=DEFAULT_EXCHANGES,
        help="Exchanges to bind on: each service publishes to its own control "
        "exchange; 'openstack' covers a service that leaves control_exchange alone.",
    ),
    cfg.StrOpt(
        "pool", default="tally",
        help="Listener pool: the collector's own queue, so it receives every "
        "notification beside other consumers such as Ceilometer.",
    ),
    cfg.IntOpt(
        "listener_batch_size", default=200, min=1,
        help="Notifications handed to the endpoint at once and written to the "
        "buffer in one transaction.",
    ),
    cfg.FloatOpt(
        "listener_batch_timeout", default=0.5, min=0.01,
        help="Seconds to wait for a batch to fill before handling what arrived.",
    ),
    cfg.IntOpt(
        "max_write_attempts", default=5, min=1,
        help="Deliveries of one notification whose buffer write failed before it "
        "is moved to the parked store (only when the disk accepts the parked "
        "copy; otherwise it keeps being requeued).",
    ),
    cfg.FloatOpt(
        "requeue_max_delay_s", default=30.0, min=0.0,
        help="Cap of the pause before requeueing a batch whose buffer write failed.",
    ),
]

_ATTEMPTS_REMEMBERED = 10_000
_FULL_BUFFER_POLL_S = 0.5
_REQUEUE_BASE_DELAY_S = 0.2


def resolve_cloud(conf: cfg.ConfigOpts) -> str:
    """The cloud name, ``[collector] cloud`` (or its alias TALLY_OSC_CLOUD, applied with
    the configuration).  Raises when unset."""
    cloud = conf.collector.cloud
    if not cloud:
        raise ConfigurationError(
            "no cloud name: set [collector] cloud or the TALLY_OSC_CLOUD environment variable")
    problem = route_problem(cloud)
    if problem is not None:
        # The API refuses every event of such a cloud: no resource URL could hold it.
        raise ConfigurationError(f"cloud name {cloud!r} {problem}")
    return str(cloud)


class _Unparkable(Exception):
    """A notification that could neither be mapped nor parked."""


class NotificationEndpoint:
    """Batch endpoint: map, buffer durably, then let oslo acknowledge."""

    def __init__(
        self,
        cloud: str,
        buffer: EventBuffer,
        metrics: CollectorMetrics,
        stop: threading.Event,
        written: threading.Event,
        max_write_attempts: int = 5,
        requeue_max_delay_s: float = 30.0,
        backlog: BacklogSignal | None = None,
        batch_size: int = 200,
    ) -> None:
        self._cloud = cloud
        # Told whether each batch came full (a backlog waits in RabbitMQ).
        self._backlog = backlog
        self._batch_size = batch_size
        self._buffer = buffer
        self._metrics = metrics
        self._stop = stop
        self._written = written
        self._max_write_attempts = max_write_attempts
        self._requeue_max_delay_s = requeue_max_delay_s
        self._lock = threading.Lock()
        self._attempts: OrderedDict[str, int] = OrderedDict()
        self._consecutive_failures = 0
        self._holding = 0  # batches waiting for room in the buffer

    # oslo calls the method named after the priority; only INFO is consumed.
    def info(self, messages: list[dict[str, Any]]) -> NotificationResult:
        if self._backlog is not None:
            self._backlog.batch_handled(len(messages) >= self._batch_size)
        if not self._wait_for_room():
            return NotificationResult.REQUEUE
        items: list[tuple[str, str, str]] = []  # (attempt key, oslo type, event JSON)
        try:
            for message in messages:
                item = self._map(message)
                if item is not None:
                    items.append(item)
        except _Unparkable:
            return self._requeue_after_pause()
        if not items:
            return NotificationResult.HANDLED
        failure = None
        try:
            self._buffer.append([value for _, _, value in items])
        except Exception as exc:
            failure = str(exc)  # text, not the exception: no cycle through its frames
        if failure is not None:
            # Outside the except block, so oslo.log does not append the error again.
            LOG.warning("Buffer write of %d events failed (%s); writing them one by one",
                        len(items), failure)
            return self._write_one_by_one(items)
        self._succeeded(items)
        return NotificationResult.HANDLED

    def keep(self, message: dict[str, Any], why: NotBooked) -> bool:
        """Park a notification the collector does not book (``collector.dispatch``
        says why); False when the disk did not take it (it is then requeued)."""
        LOG.warning("Notification %s of type %s is not booked (%s); parked",
                    _message_id(message) or "(no message_id)",
                    _describe_type(message.get("event_type")), why.reason)
        return self._park(_without_secrets(message), f"not booked: {why.reason}", why.label)

    def pause_before_requeue(self) -> None:
        self._requeue_after_pause()

    def _wait_for_room(self) -> bool:
        if not self._buffer.is_full():
            return True
        with self._lock:
            self._holding += 1
            if self._holding == 1:
                LOG.warning("Buffer holds %d events (limit %d): holding back "
                            "acknowledgements", self._buffer.depth(), self._buffer.max_items)
                self._metrics.backpressure.set(1)
        try:
            while self._buffer.is_full():
                if self._stop.wait(_FULL_BUFFER_POLL_S):
                    return False
            return True
        finally:
            with self._lock:
                self._holding -= 1
                if self._holding == 0:
                    LOG.info("Buffer has room again (%d events)", self._buffer.depth())
                    self._metrics.backpressure.set(0)

    def _map(self, message: dict[str, Any]) -> tuple[str, str, str] | None:
        """(attempt key, oslo type, JSON) for a booked notification, None when skipped
        or parked.  Raises _Unparkable when it could neither be mapped nor parked."""
        oslo_type = str(message.get("event_type"))
        try:
            event = map_notification(
                self._cloud, message.get("ctxt"), message.get("publisher_id"),
                oslo_type, message.get("payload"), message.get("metadata"))
            if event is None:
                self._metrics.skipped.labels(oslo_type).inc()
                return None
            value = dumps_finite(event)
        except Exception as exc:
            # Deterministic: the same notification fails the same way every time.
            LOG.error("Notification %s of type %s cannot be mapped (%s); parking it",
                      _message_id(message), oslo_type, type(exc).__name__)
            if self._park(_without_secrets(message), f"unmappable: {exc}", "unmappable"):
                return None
            raise _Unparkable() from exc
        return (_message_id(message) or event["event_id"], oslo_type, value)

    def _write_one_by_one(self, items: list[tuple[str, str, str]]) -> NotificationResult:
        failed = []
        for item in items:
            try:
                self._buffer.append([item[2]])
            except Exception:
                failed.append(item)
        if not failed:
            self._succeeded(items)
            return NotificationResult.HANDLED
        self._count_written([item for item in items if item not in failed])
        still_failing = []
        for key, oslo_type, value in failed:
            if self._note_attempt(key) < self._max_write_attempts:
                still_failing.append(key)
            elif self._park({"event_type": oslo_type, "event": value},
                            "buffer write failed repeatedly", "buffer_write"):
                LOG.error("Event %s failed %d buffer writes; parked", key,
                          self._max_write_attempts)
            else:
                still_failing.append(key)
        self._metrics.buffer_write_failures.inc()
        if still_failing:
            # Items that were written will come back and be written again: harmless,
            # the Reporting API deduplicates on event_id.
            return self._requeue_after_pause()
        return NotificationResult.HANDLED

    def _park(self, record: Mapping[str, Any], reason: str, label: str) -> bool:
        failure = None
        try:
            self._buffer.park({"reason": reason, "notification": dict(record)})
        except Exception as exc:
            failure = str(exc)
        if failure is not None:
            LOG.error("Parking failed too (%s)", failure)
            return False
        self._metrics.parked.labels(label).inc()
        return True

    def _succeeded(self, items: list[tuple[str, str, str]]) -> None:
        with self._lock:
            self._consecutive_failures = 0
            for key, _, _ in items:
                self._attempts.pop(key, None)
        self._count_written(items)

    def _count_written(self, items: list[tuple[str, str, str]]) -> None:
        for oslo_type, count in Counter(oslo_type for _, oslo_type, _ in items).items():
            self._metrics.mapped.labels(oslo_type).inc(count)
        if items:
            self._written.set()

    def _note_attempt(self, key: str) -> int:
        with self._lock:
            count = self._attempts.pop(key, 0) + 1
            self._attempts[key] = count
            while len(self._attempts) > _ATTEMPTS_REMEMBERED:
                self._attempts.popitem(last=False)
            return count

    def _requeue_after_pause(self) -> NotificationResult:
        with self._lock:
            self._consecutive_failures += 1
            exponent = min(self._consecutive_failures, 16)
        delay = min(self._requeue_max_delay_s, _REQUEUE_BASE_DELAY_S * 2**exponent)
        self._stop.wait(delay / 2 + random.uniform(0, delay / 2))  # noqa: S311 - jitter
        return NotificationResult.REQUEUE


_SECRET_MARKERS = ("token", "secret", "password", "service_catalog")


def _without_secrets(message: Mapping[str, Any]) -> dict[str, Any]:
    """The notification as parked: context credentials (old services send a real
    auth_token, a service catalog) never reach the disk."""
    kept = dict(message)
    ctxt = message.get("ctxt")
    if isinstance(ctxt, Mapping):
        kept["ctxt"] = {key: value for key, value in ctxt.items()
                        if not any(marker in str(key).lower() for marker in _SECRET_MARKERS)}
    elif ctxt is not None:
        kept["ctxt"] = repr(type(ctxt))
    return kept


def _describe_type(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _message_id(message: Mapping[str, Any]) -> str:
    metadata = message.get("metadata")
    if isinstance(metadata, Mapping):
        value = metadata.get("message_id")
        if isinstance(value, str):
            return value
    return ""


def build_targets(conf: cfg.ConfigOpts) -> list[oslo_messaging.Target]:
    group = conf.collector
    topics = [t for t in group.topics if t]
    exchanges = [e for e in group.exchanges if e]
    if not topics:
        raise ConfigurationError("[collector] topics is empty")
    if not exchanges:
        raise ConfigurationError("[collector] exchanges is empty")
    return [oslo_messaging.Target(topic=t, exchange=e) for t in topics for e in exchanges]


def build_listener(
    conf: cfg.ConfigOpts, transport: oslo_messaging.Transport, endpoint: NotificationEndpoint
) -> oslo_messaging.MessageHandlingServer:
    """The batch listener: explicit pool, threading executor, requeue allowed, and the
    collector's dispatcher (every message reaches the endpoint, ``collector.dispatch``)."""
    group = conf.collector
    if not group.pool:
        raise ConfigurationError("[collector] pool must name the collector's own queue")
    return batch_listener(
        transport, build_targets(conf), endpoint, pool=group.pool,
        batch_size=group.listener_batch_size, batch_timeout=group.listener_batch_timeout)
