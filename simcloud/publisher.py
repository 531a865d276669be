"""Publish the world's notifications through oslo.messaging, as the services do.

One :class:`oslo_messaging.Notifier` per service exchange (nova, cinder, neutron,
glance, octavia), driver ``messagingv2``, topic ``notifications``, priority INFO.
Two things differ from a service's own notifier, both on purpose:

* the timestamp is the virtual instant of the event, not the wall clock, and the
  ``message_id`` is a uuid4 drawn from the seeded stream (same seed, same ids);
* the exchange is chosen per message on one shared transport, so the demo can hand
  in the ``fake://`` transport its collector listens on.

Delivery faults (loss, duplication, reordering) are applied here, per batch of one
clock move, from their own seeded stream.
"""

from __future__ import annotations

import logging
import random
import uuid
from typing import Any

import oslo_messaging
from oslo_config import cfg
from oslo_messaging import serializer as oslo_serializer
from oslo_messaging import transport as oslo_transport
from oslo_messaging.notify import notifier as oslo_notifier

from simcloud.config import STOCK_EXCHANGES, WorldConfig

LOG = logging.getLogger(__name__)
TOPIC = "notifications"
PRIORITY = "INFO"


class _ExchangeTransport(oslo_transport.NotificationTransport):
    """A view of a notification transport that sends to one named exchange.

    oslo's notifier targets carry no exchange (a service sets control_exchange
    process-wide); both the AMQP and the fake driver honour ``target.exchange``,
    so pinning it here lets five services share one transport and one process.
    """

    def __init__(self, base: oslo_transport.Transport, exchange: str) -> None:
        super().__init__(base._driver)
        self._exchange = exchange

    def _send_notification(self, target: Any, ctxt: Any, message: Any, version: Any,
                           retry: Any = None) -> None:
        target = oslo_messaging.Target(exchange=self._exchange, topic=target.topic)
        super()._send_notification(target, ctxt, message, version, retry=retry)


class _ContextSerializer(oslo_serializer.NoOpSerializer):
    """Serialise a RequestContext to its dict, like nova's RequestContextSerializer."""

    def serialize_context(self, ctxt: Any) -> Any:
        return ctxt.to_dict() if hasattr(ctxt, "to_dict") else ctxt


class VirtualClockNotifier(oslo_messaging.Notifier):
    """oslo's Notifier with the message's timestamp and id given by the caller."""

    def notify_at(self, ctxt: Any, event_type: str, payload: dict[str, Any],
                  timestamp: str, message_id: str, publisher_id: str | None) -> None:
        # Mirrors Notifier._notify, which would stamp the wall clock and a fresh uuid.
        payload = self._serializer.serialize_entity(ctxt, payload)
        safe_ctxt = oslo_notifier._sanitize_context(ctxt)
        wire_ctxt = self._serializer.serialize_context(safe_ctxt)
        msg = {"message_id": message_id, "publisher_id": publisher_id,
               "event_type": event_type, "priority": PRIORITY, "payload": payload,
               "timestamp": timestamp}
        for ext in self._driver_mgr.extensions:
            ext.obj.notify(wire_ctxt, msg, PRIORITY, self.retry)


class Publication:
    """One notification ready to go: what a consumer would receive."""

    __slots__ = ("exchange", "publisher_id", "event_type", "payload", "ctxt",
                 "timestamp", "message_id")

    def __init__(self, exchange: str, publisher_id: str | None, event_type: str,
                 payload: dict[str, Any], ctxt: Any, timestamp: str, message_id: str) -> None:
        self.exchange = exchange
        self.publisher_id = publisher_id
        self.event_type = event_type
        self.payload = payload
        self.ctxt = ctxt
        self.timestamp = timestamp
        self.message_id = message_id


class Publisher:
    """Sends publications with the configured loss, duplication and reordering."""

    def __init__(self, config: WorldConfig) -> None:
        self._config = config
        self._faults = random.Random(f"delivery-{config.seed}")
        self._own_transport: Any = None
        transport = config.transport
        if transport is None and config.transport_url:
            conf = cfg.ConfigOpts()
            conf([], project="tally-simcloud")
            transport = oslo_messaging.get_notification_transport(conf, url=config.transport_url)
            self._own_transport = transport
        self._notifiers: dict[str, VirtualClockNotifier] = {}
        if transport is not None:
            for service in STOCK_EXCHANGES:
                self._notifiers[service] = VirtualClockNotifier(
                    _ExchangeTransport(transport, config.exchange(service)),
                    driver="messagingv2",
                    topics=[TOPIC], serializer=_ContextSerializer())

    @property
    def enabled(self) -> bool:
        return bool(self._notifiers)

    def deliver(self, batch: list[Publication]) -> dict[str, Any]:
        """Apply the delivery faults to ``batch`` and send what survives, in order."""
        rng = self._faults
        config = self._config
        out: list[tuple[float, Publication]] = []
        lost = duplicated = 0
        window = config.reorder_window
        for index, pub in enumerate(batch):
            if config.loss and rng.random() < config.loss:
                lost += 1
                continue
            key = index + (rng.uniform(0, window) if config.reorder else 0.0)
            out.append((key, pub))
            if config.duplicate and rng.random() < config.duplicate:
                duplicated += 1
                # A redelivery: the same message (same message_id), a little later.
                out.append((key + rng.uniform(0.5, window), pub))
        out.sort(key=lambda item: item[0])
        for _, pub in out:
            notifier = self._notifiers.get(pub.exchange)
            if notifier is not None:
                notifier.notify_at(pub.ctxt, pub.event_type, pub.payload, pub.timestamp,
                                   pub.message_id, pub.publisher_id)
        return {"generated": len(batch), "lost": lost, "duplicated": duplicated,
                "sent": len(out) if self._notifiers else 0}

    def close(self) -> None:
        if self._own_transport is not None:
            self._own_transport.cleanup()
            self._own_transport = None


def message_id(seed: int, seq: int) -> str:
    """The uuid4 message_id of the ``seq``-th notification of a world."""
    return str(uuid.UUID(int=random.Random(f"{seed}-{seq}").getrandbits(128), version=4))
