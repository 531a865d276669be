"""The listener and its endpoint on oslo.messaging's fake:// transport."""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import oslo_messaging
import pytest
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_messaging.notify.dispatcher import NotificationResult

from collector.backlog import BacklogSignal
from collector.buffer import EventBuffer
from collector.errors import ConfigurationError
from collector.listener import NotificationEndpoint, build_listener, resolve_cloud
from collector.metrics import CollectorMetrics
from tally_common.env_aliases import apply_env_aliases
from tests.unit.collector.conftest import sample_value

META = {"message_id": "m-1", "timestamp": "2026-11-29 23:46:12.702142"}
VOLUME = {"volume_id": "v-1", "tenant_id": "p-1", "status": "available", "size": 1,
          "volume_type": "t"}


def _message(event_type: str = "volume.create.end", payload: Any = None,
             message_id: str | None = None, ctxt: Any = None) -> dict[str, Any]:
    return {"ctxt": ctxt or {}, "publisher_id": "volume.host", "event_type": event_type,
            "payload": VOLUME if payload is None else payload,
            "metadata": {**META, "message_id": message_id or str(uuid.uuid4())}}


class FlakyBuffer(EventBuffer):
    """A real buffer whose appends fail while ``failing`` says so."""

    def __init__(self, directory: str, max_items: int = 1_000_000) -> None:
        super().__init__(directory, max_items)
        self.failing: Any = lambda values: False
        self.calls = 0

    def append(self, events_json: Any) -> None:
        self.calls += 1
        if self.failing(list(events_json)):
            raise OSError("disk on fire")
        super().append(events_json)


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[FlakyBuffer]:
    buf = FlakyBuffer(str(tmp_path / "flaky"))
    yield buf
    buf.close()


def _endpoint(buffer: EventBuffer, metrics: CollectorMetrics, **kwargs: Any) -> NotificationEndpoint:
    kwargs.setdefault("requeue_max_delay_s", 0.0)
    return NotificationEndpoint("os-unit", buffer, metrics, threading.Event(),
                                threading.Event(), **kwargs)


def _buffered(buffer: EventBuffer) -> list[dict[str, Any]]:
    return [json.loads(event.value) for event in buffer.peek(10_000)]


# --- the endpoint -----------------------------------------------------------------------


def test_batch_is_buffered_then_handled(buffer: EventBuffer, metrics: CollectorMetrics) -> None:
    endpoint = _endpoint(buffer, metrics)
    result = endpoint.info([_message(message_id="a"), _message("compute.instance.exists"),
                            _message("volume.delete.end", message_id="b")])
    assert result == NotificationResult.HANDLED
    assert [(e["event_id"], e["event_type"]) for e in _buffered(buffer)] == [
        ("a", "volume.create.end"), ("b", "volume.delete.end")]
    assert sample_value(metrics, "tally_collector_skipped_total",
                        {"oslo_event_type": "compute.instance.exists"}) == 1
    assert sample_value(metrics, "tally_collector_mapped_total",
                        {"oslo_event_type": "volume.create.end"}) == 1


def test_failed_write_requeues_and_keeps_nothing(flaky: FlakyBuffer, metrics: CollectorMetrics) -> None:
    flaky.failing = lambda values: True
    endpoint = _endpoint(flaky, metrics)
    assert endpoint.info([_message(), _message()]) == NotificationResult.REQUEUE
    assert flaky.depth() == 0 and flaky.parked_depth() == 0
    assert sample_value(metrics, "tally_collector_buffer_write_failures_total") == 1


def test_poison_message_is_parked_after_max_attempts(flaky: FlakyBuffer, metrics: CollectorMetrics) -> None:
    # Only the message "poison" fails to write; its batch-mates succeed.
    flaky.failing = lambda values: any('"poison"' in v for v in values)
    endpoint = _endpoint(flaky, metrics, max_write_attempts=3)
    batch = [_message(message_id="good"), _message(message_id="poison")]
    assert endpoint.info(batch) == NotificationResult.REQUEUE
    assert endpoint.info(batch) == NotificationResult.REQUEUE
    assert endpoint.info(batch) == NotificationResult.HANDLED   # third strike: parked
    parked = flaky.parked_items()
    assert len(parked) == 1 and json.loads(parked[0]["notification"]["event"])["event_id"] == "poison"
    # "good" was written on each delivery; the API deduplicates the copies
    assert {e["event_id"] for e in _buffered(flaky)} == {"good"}
    assert sample_value(metrics, "tally_collector_parked_total", {"reason": "buffer_write"}) == 1


def test_a_broken_disk_never_parks(flaky: FlakyBuffer, metrics: CollectorMetrics) -> None:
    flaky.failing = lambda values: True
    flaky.parked.close()
    endpoint = _endpoint(flaky, metrics, max_write_attempts=1)

    def broken_park(record: Any) -> None:
        raise OSError("disk on fire")

    flaky.park = broken_park  # type: ignore[method-assign]
    for _ in range(3):
        assert endpoint.info([_message(message_id="x")]) == NotificationResult.REQUEUE


def test_unserialisable_notification_is_parked_not_lost(buffer: EventBuffer, metrics: CollectorMetrics) -> None:
    nan_state = {"instance_id": "i", "tenant_id": "p", "state": math.nan}
    endpoint = _endpoint(buffer, metrics)
    secret_ctxt = {"project_id": "p", "auth_token": "s3cr3t", "service_catalog": [{"x": 1}]}
    result = endpoint.info([_message("compute.instance.create.end", nan_state, "bad", secret_ctxt),
                            _message(message_id="ok")])
    assert result == NotificationResult.HANDLED
    assert [e["event_id"] for e in _buffered(buffer)] == ["ok"]
    parked = buffer.parked_items()
    assert parked[0]["reason"].startswith("unmappable")
    assert parked[0]["notification"]["metadata"]["message_id"] == "bad"
    assert parked[0]["notification"]["ctxt"] == {"project_id": "p"}   # no credentials on disk


def test_full_buffer_holds_back_until_there_is_room(tmp_path: Path, metrics: CollectorMetrics) -> None:
    buf = EventBuffer(str(tmp_path / "small"), max_items=2)
    try:
        buf.append(["{}", "{}"])
        endpoint = _endpoint(buf, metrics)
        results: list[Any] = []
        worker = threading.Thread(target=lambda: results.append(endpoint.info([_message(message_id="late")])))
        worker.start()
        worker.join(1.0)
        assert worker.is_alive() and results == []       # not acknowledged while full
        assert sample_value(metrics, "tally_collector_backpressure") == 1
        buf.remove(buf.peek(1))
        worker.join(5)
        assert results == [NotificationResult.HANDLED]
        assert sample_value(metrics, "tally_collector_backpressure") == 0
        assert json.loads(buf.peek(10)[-1].value)["event_id"] == "late"
    finally:
        buf.close()


def test_stop_while_full_requeues(tmp_path: Path, metrics: CollectorMetrics) -> None:
    buf = EventBuffer(str(tmp_path / "small"), max_items=1)
    try:
        buf.append(["{}"])
        stop = threading.Event()
        endpoint = NotificationEndpoint("c", buf, metrics, stop, threading.Event())
        stop.set()
        assert endpoint.info([_message()]) == NotificationResult.REQUEUE
        assert buf.depth() == 1
    finally:
        buf.close()


def test_cloud_name_resolution(conf: cfg.ConfigOpts) -> None:
    assert resolve_cloud(conf) == "os-unit"
    apply_env_aliases(conf, {"TALLY_OSC_CLOUD": "from-env"})
    assert resolve_cloud(conf) == "from-env"
    conf.clear_override("cloud", group="collector")
    with pytest.raises(ConfigurationError, match="no cloud name"):
        resolve_cloud(conf)


# --- through oslo.messaging's fake driver ----------------------------------------------------


class DictContextSerializer(oslo_messaging.NoOpSerializer):
    """Hands the context over as a dict, like the AMQP drivers do."""

    def serialize_context(self, ctxt: Any) -> Any:
        return ctxt.to_dict()


@pytest.fixture
def fake_transport(conf: cfg.ConfigOpts) -> Iterator[oslo_messaging.Transport]:
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    yield transport
    transport.cleanup()


def _wait_for(condition: Any, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@contextlib.contextmanager
def _publisher(exchange: str, publisher_id: str, serializer: Any) -> Iterator[Any]:
    """A Notifier on its own fake transport publishing to ``exchange``.

    The exchange is the transport's control_exchange, read when the transport is
    built, so it is set (process-wide) just for that moment on a fresh ConfigOpts.
    """
    pconf = cfg.ConfigOpts()
    pconf([], project="tally-unit-test", default_config_files=[])
    oslo_messaging.set_transport_defaults(control_exchange=exchange)
    try:
        transport = oslo_messaging.get_notification_transport(pconf, url="fake:")
    finally:
        oslo_messaging.set_transport_defaults(control_exchange="openstack")
    try:
        yield oslo_messaging.Notifier(transport, publisher_id=publisher_id, driver="messaging",
                                      topics=["notifications"], serializer=serializer)
    finally:
        transport.cleanup()


def _run_listener(conf: cfg.ConfigOpts, transport: Any, endpoint: NotificationEndpoint) -> Any:
    listener = build_listener(conf, transport, endpoint)
    listener.start()
    return listener


@pytest.mark.parametrize("serializer", [None, DictContextSerializer()], ids=["object-ctxt", "dict-ctxt"])
def test_fake_transport_end_to_end(conf: cfg.ConfigOpts, fake_transport: Any, buffer: EventBuffer,
                                   metrics: CollectorMetrics, serializer: Any) -> None:
    exchange = f"nova-{uuid.uuid4().hex[:8]}"
    conf.set_override("exchanges", [exchange, "cinder"], group="collector")
    conf.set_override("pool", f"tally-{uuid.uuid4().hex[:8]}", group="collector")
    conf.set_override("listener_batch_timeout", 0.05, group="collector")
    endpoint = _endpoint(buffer, metrics)
    listener = _run_listener(conf, fake_transport, endpoint)
    try:
        ctx = oslo_context.RequestContext(project_id="ctx-project", user_id="u")
        with _publisher(exchange, "network.host", serializer) as notifier:
            notifier.info(ctx, "floatingip.delete.end", {"floatingip_id": "f-1"})
            notifier.info(ctx, "port.create.end", {"port": {}})
            notifier.info(ctx, "floatingip.create.end",
                          {"floatingip": {"id": "f-2", "tenant_id": "p-2",
                                          "floating_ip_address": "10.0.0.1"}})
            # (the fake driver's cleanup empties every exchange: wait inside)
            assert _wait_for(lambda: buffer.depth() == 2)
    finally:
        listener.stop()
        listener.wait()
    events = _buffered(buffer)
    assert [(e["event_type"], e["resource_id"], e["project_id"]) for e in events] == [
        ("floatingip.delete.end", "f-1", "ctx-project"),
        ("floatingip.create.end", "f-2", "p-2"),
    ]
    assert all(len(e["event_id"]) == 36 for e in events)
    assert sample_value(metrics, "tally_collector_skipped_total", {"oslo_event_type": "port.create.end"}) == 1


def test_fake_transport_requeues_a_failed_write(conf: cfg.ConfigOpts, fake_transport: Any,
                                                flaky: FlakyBuffer, metrics: CollectorMetrics) -> None:
    exchange = f"cinder-{uuid.uuid4().hex[:8]}"
    conf.set_override("exchanges", [exchange], group="collector")
    conf.set_override("pool", f"tally-{uuid.uuid4().hex[:8]}", group="collector")
    conf.set_override("listener_batch_timeout", 0.05, group="collector")
    failures = {"left": 2}

    def fail_twice(values: list[str]) -> bool:
        if failures["left"]:
            failures["left"] -= 1
            return True
        return False

    flaky.failing = fail_twice
    listener = _run_listener(conf, fake_transport, _endpoint(flaky, metrics))
    try:
        with _publisher(exchange, "volume.h", None) as notifier:
            notifier.info(oslo_context.RequestContext(project_id="p"), "volume.create.end", VOLUME)
            assert _wait_for(lambda: flaky.depth() == 1)
    finally:
        listener.stop()
        listener.wait()
    assert failures["left"] == 0
    assert _buffered(flaky)[0]["resource_id"] == "v-1"


def test_full_listener_batches_mark_a_backlog_being_drained(
        buffer: EventBuffer, metrics: CollectorMetrics) -> None:
    backlog = BacklogSignal()
    endpoint = NotificationEndpoint("os-unit", buffer, metrics, threading.Event(),
                                    threading.Event(), backlog=backlog, batch_size=2)
    volume = [_message("volume.create.end", dict(VOLUME, volume_id=f"v-{n}"))
              for n in range(3)]
    assert endpoint.info(volume[:2]) == NotificationResult.HANDLED
    assert backlog.draining()
    assert endpoint.info(volume[2:]) == NotificationResult.HANDLED
    assert not backlog.draining()
    assert buffer.depth() == 3
