"""Every message of a batch reaches the collector's code, whatever its priority: one
that is not booked is parked with its reason and counted, the rest of the batch goes
on, nothing is requeued but what the disk did not take."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import oslo_messaging
import pytest
from oslo_config import cfg

from collector.buffer import EventBuffer
from collector.dispatch import priority_problem, read_message
from collector.listener import NotificationEndpoint, build_listener
from collector.metrics import CollectorMetrics
from tests.unit.collector.conftest import sample_value

VOLUME = {"volume_id": "v-1", "tenant_id": "p-1", "status": "available", "size": 1,
          "volume_type": "t"}


def _wire(priority: Any = "INFO", event_type: str = "volume.create.end",
          message_id: str | None = None, drop_priority: bool = False) -> dict[str, Any]:
    """A notification as the driver hands it over (the body's fields)."""
    message = {"message_id": message_id or str(uuid.uuid4()), "publisher_id": "volume.host",
               "event_type": event_type, "priority": priority, "payload": VOLUME,
               "timestamp": "2026-11-29 23:46:12.702142"}
    if drop_priority:
        del message["priority"]
    return message


class Incoming:
    """A received message as a driver hands it to the server: ack or requeue it."""

    def __init__(self, message: Any, ctxt: Any = None) -> None:
        self.message = message
        self.ctxt = {"project_id": "p-ctx", "auth_token": "s3cr3t"} if ctxt is None else ctxt
        self.outcome: str | None = None

    def acknowledge(self) -> None:
        self.outcome = "ack"

    def requeue(self) -> None:
        self.outcome = "requeue"


def _endpoint(buffer: EventBuffer, metrics: CollectorMetrics) -> NotificationEndpoint:
    return NotificationEndpoint("os-unit", buffer, metrics, threading.Event(),
                                threading.Event(), requeue_max_delay_s=0.0)


@pytest.fixture
def fake_transport(conf: cfg.ConfigOpts) -> Iterator[oslo_messaging.Transport]:
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    yield transport
    transport.cleanup()


@pytest.mark.parametrize(("priority", "present", "label"), [
    ("INFO", True, None), ("info", True, None), ("Info", True, None),
    ("Info ", True, "priority_unknown"), ("", True, "priority_unknown"),
    (None, False, "priority_missing"), (None, True, "priority_not_a_string"),
    (3, True, "priority_not_a_string"), (["info"], True, "priority_not_a_string"),
    ("ERROR", True, "priority_error"), ("error", True, "priority_error"),
    ("WARN", True, "priority_warn"), ("SAMPLE", True, "priority_sample"),
])
def test_which_priorities_are_booked(priority: Any, present: bool, label: str | None) -> None:
    problem = priority_problem(priority, present)
    assert (problem.label if problem else None) == label


def test_a_message_that_is_not_an_object_is_read_without_raising() -> None:
    message, problem = read_message(Incoming(["not", "an", "object"]))
    assert problem is not None and problem.label == "not_an_object"
    assert "list" in problem.reason and message["message"].startswith("[")


def test_a_poison_message_is_parked_and_its_batch_goes_on(
        conf: cfg.ConfigOpts, fake_transport: Any, buffer: EventBuffer,
        metrics: CollectorMetrics) -> None:
    listener = build_listener(conf, fake_transport, _endpoint(buffer, metrics))
    batch = [Incoming(_wire(message_id="good-1")), Incoming(_wire(None, message_id="poison")),
             Incoming(_wire("Info ", message_id="spaced")),
             Incoming(_wire(message_id="nameless", drop_priority=True)),
             Incoming(_wire("ERROR", "compute.instance.create.error", message_id="failed")),
             Incoming(_wire(message_id="good-2"))]
    listener._process_incoming(batch)  # what the server does with one polled batch
    assert [m.outcome for m in batch] == ["ack"] * 6   # none requeued
    assert buffer.depth() == 2
    parked = {item["notification"]["metadata"]["message_id"]: item
              for item in buffer.parked_items()}
    assert set(parked) == {"poison", "spaced", "nameless", "failed"}
    assert parked["poison"]["reason"] == "not booked: priority None is not a string"
    assert parked["poison"]["notification"]["priority"] is None
    assert parked["failed"]["reason"] == ("not booked: priority ERROR: only INFO "
                                          "notifications are booked")
    assert parked["failed"]["notification"]["event_type"] == "compute.instance.create.error"
    assert parked["poison"]["notification"]["ctxt"] == {"project_id": "p-ctx"}  # no token
    for label in ("priority_not_a_string", "priority_unknown", "priority_missing",
                  "priority_error"):
        assert sample_value(metrics, "tally_collector_parked_total", {"reason": label}) == 1


def test_only_what_the_disk_did_not_take_is_requeued(
        conf: cfg.ConfigOpts, fake_transport: Any, buffer: EventBuffer,
        metrics: CollectorMetrics) -> None:
    listener = build_listener(conf, fake_transport, _endpoint(buffer, metrics))

    def broken_park(record: Any) -> None:
        raise OSError("disk on fire")

    buffer.park = broken_park  # type: ignore[method-assign]
    batch = [Incoming(_wire(message_id="good")), Incoming(_wire(None, message_id="poison"))]
    listener._process_incoming(batch)
    assert [m.outcome for m in batch] == ["ack", "requeue"]
    assert buffer.depth() == 1


def _wait_for(condition: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_through_the_fake_transport_a_poison_batch_is_not_requeued_for_ever(
        conf: cfg.ConfigOpts, fake_transport: Any, buffer: EventBuffer,
        metrics: CollectorMetrics) -> None:
    exchange = f"cinder-{uuid.uuid4().hex[:8]}"
    conf.set_override("exchanges", [exchange], group="collector")
    conf.set_override("pool", f"tally-{uuid.uuid4().hex[:8]}", group="collector")
    conf.set_override("listener_batch_size", 10, group="collector")
    conf.set_override("listener_batch_timeout", 0.2, group="collector")
    endpoint = _endpoint(buffer, metrics)
    calls = {"batches": 0}
    info = endpoint.info

    def counting(messages: list[dict[str, Any]]) -> Any:
        calls["batches"] += 1
        return info(messages)

    endpoint.info = counting  # type: ignore[method-assign]
    listener = build_listener(conf, fake_transport, endpoint)
    listener.start()
    try:
        target = oslo_messaging.Target(topic="notifications.info", exchange=exchange)
        for message in (_wire(message_id="a"), _wire(None, message_id="p"),
                        _wire(message_id="b")):
            fake_transport._send_notification(target, {}, message, version=2.0)
        assert _wait_for(lambda: buffer.depth() == 2 and buffer.parked_depth() == 1)
    finally:
        listener.stop()
        listener.wait()
    # a requeued batch would have come back: the valid two were booked once
    assert buffer.depth() == 2 and buffer.parked_depth() == 1
    assert sample_value(metrics, "tally_collector_mapped_total",
                        {"oslo_event_type": "volume.create.end"}) == 2
