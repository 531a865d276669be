"""Helpers shared by the simcloud unit tests: a fake:// transport and a listener."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import oslo_messaging
import pytest
from oslo_config import cfg


class Received:
    """Everything a notification listener got, in arrival order."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, item: dict[str, Any]) -> None:
        with self._lock:
            self.items.append(item)

    def wait_for(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.items) >= count:
                    return list(self.items)
            time.sleep(0.02)
        with self._lock:
            return list(self.items)


class _Endpoint:
    def __init__(self, received: Received, exchange: str) -> None:
        self._received = received
        self._exchange = exchange

    def info(self, ctxt: Any, publisher_id: Any, event_type: str, payload: Any,
             metadata: Any) -> None:
        self._received.add({"exchange": self._exchange, "ctxt": ctxt,
                            "publisher_id": publisher_id, "event_type": event_type,
                            "payload": payload, "metadata": metadata})


@pytest.fixture
def fake_bus() -> Iterator[tuple[Any, dict[str, str], Received]]:
    """A fake:// transport, unique exchange names per service, and what arrives on them."""
    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    tag = uuid.uuid4().hex[:8]
    exchanges = {s: f"{s}-{tag}" for s in ("nova", "cinder", "neutron", "glance", "octavia")}
    received = Received()
    listeners = []
    for service, exchange in exchanges.items():
        listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic="notifications", exchange=exchange)],
            [_Endpoint(received, service)], executor="threading", pool=f"test-{tag}")
        listener.start()
        listeners.append(listener)
    try:
        yield transport, exchanges, received
    finally:
        # Each stop() waits out a poll of the fake driver: stop them side by side.
        stoppers = [threading.Thread(target=lambda x=x: (x.stop(), x.wait())) for x in listeners]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        transport.cleanup()
