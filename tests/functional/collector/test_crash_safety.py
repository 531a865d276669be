"""Crash safety: every notification is stored exactly once, whatever happens between.

The collector runs as a ``tally-collector`` process that the test SIGKILLs while it
consumes and while it delivers; the Reporting API is stopped for a while; every
AMQP connection is cut (through a relay in front of the shared RabbitMQ).  8000 notifications on five
exchanges, raw messagingv2 envelopes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.functional.collector.conftest import Names
from tests.functional.collector.harness import (
    CollectorProcess,
    ReportingServer,
    TcpProxy,
    WirePublisher,
    collector_config,
    free_port,
    metric,
    queue_depth,
    wait_until,
    wire_message,
)

pytestmark = [pytest.mark.rabbit, pytest.mark.postgres]

KINDS = [
    ("nova", "compute.instance.create.end", "compute.h",
     lambda i: {"instance_id": f"i-{i}", "tenant_id": "p", "state": "active", "vcpus": 1,
                "memory_mb": 512, "root_gb": 1, "instance_type": "m1.tiny"}),
    ("cinder", "volume.create.end", "volume.h",
     lambda i: {"volume_id": f"v-{i}", "tenant_id": "p", "size": 1, "volume_type": "t"}),
    ("neutron", "floatingip.create.end", "network.h",
     lambda i: {"floatingip": {"id": f"f-{i}", "tenant_id": "p", "floating_ip_address": "10.0.0.1"}}),
    ("glance", "image.upload", "image.localhost",
     lambda i: {"id": f"g-{i}", "owner": "p", "size": 1024}),
    ("octavia", "octavia.loadbalancer.create.end", "null",
     lambda i: {"loadbalancer_id": f"lb-{i}", "project_id": "p"}),
]


def _publish(rabbit_url: str, topic: str, start: int, count: int) -> set[str]:
    ids = set()
    publisher = WirePublisher(rabbit_url)
    try:
        for i in range(start, start + count):
            exchange, event_type, publisher_id, payload = KINDS[i % len(KINDS)]
            message_id = str(uuid.uuid4())
            ids.add(message_id)
            publisher.publish(exchange, topic, wire_message(
                event_type, payload(i), {"project_id": "p"}, publisher_id, message_id))
    finally:
        publisher.close()
    return ids


def _queue(rabbit_url: str, name: str) -> tuple[int, int]:
    try:
        return queue_depth(rabbit_url, name)
    except Exception:
        return (-1, 0)


class Rig:
    def __init__(self, rabbit_url: str, names: Names, reporting: ReportingServer,
                 tmp_path: Path, **options: Any) -> None:
        self.rabbit_url = rabbit_url
        self.names = names
        self.reporting = reporting
        rabbit_port = int(rabbit_url.rsplit(":", 1)[1].split("/")[0])
        self.proxy = TcpProxy("127.0.0.1", rabbit_port)
        self.metrics_port = free_port()
        proxied = rabbit_url.replace(f":{rabbit_port}", f":{self.proxy.port}")
        config = collector_config(
            tmp_path / "collector.conf", cloud=names.cloud, transport_url=proxied,
            reporting_url=reporting.url, pool=names.pool, topic=names.topic,
            buffer_dir=tmp_path / "buffer", metrics_port=self.metrics_port, **options)
        self.collector = CollectorProcess(config, tmp_path / "collector.log")

    def start_collector(self) -> None:
        self.collector.start()
        wait_until(lambda: _queue(self.rabbit_url, self.names.pool)[1] >= 1, 60,
                   "the collector to consume its queue")

    def buffered(self) -> float:
        return metric(self.metrics_port, "tally_collector_buffer_depth") or 0.0

    def stored(self) -> int:
        return len(self.reporting.event_ids(self.names.cloud))

    def close(self) -> None:
        if self.collector.alive():
            self.collector.kill()
        self.proxy.close()


def test_kills_outage_and_reconnects_store_everything_once(
    rabbit_url: str, names: Names, rabbit_queues: None, reporting: ReportingServer,
    tmp_path: Path,
) -> None:
    rig = Rig(rabbit_url, names, reporting, tmp_path, listener_batch_size=50)
    try:
        # The first start declares the queue; a backlog then waits for the second.
        rig.start_collector()
        rig.collector.kill()
        published = _publish(rabbit_url, names.topic, 0, 4000)
        rig.start_collector()

        # 1. SIGKILL while it consumes: the queue still holds notifications.
        wait_until(lambda: rig.buffered() > 0 or rig.stored() > 0, 60, "consumption to start",
                   step=0.02)
        ready, _ = _queue(rabbit_url, names.pool)
        rig.collector.kill()
        assert ready > 0, "the collector had already drained the queue; nothing was in flight"
        rig.start_collector()

        # 2. The API goes away; the collector buffers, and is SIGKILLed with a full buffer.
        reporting.stop()
        published |= _publish(rabbit_url, names.topic, 4000, 2000)
        wait_until(lambda: rig.buffered() >= 500, 60, "the buffer to fill while the API is down")
        assert (metric(rig.metrics_port, "tally_collector_delivery_failures_total",
                       {"reason": "connection"}) or 0) > 0
        rig.collector.kill()
        rig.start_collector()

        # 3. Every AMQP connection is cut while notifications keep arriving.
        published |= _publish(rabbit_url, names.topic, 6000, 1000)
        wait_until(lambda: rig.proxy.live() > 0, 60, "the collector to connect to RabbitMQ")
        assert rig.proxy.cut() > 0
        published |= _publish(rabbit_url, names.topic, 7000, 1000)

        # 4. The API comes back; SIGKILL the collector while it delivers.
        reporting.start()
        wait_until(lambda: rig.stored() > 0, 60, "delivery to resume")
        rig.collector.kill()
        assert rig.stored() < len(published), "delivery had already finished"
        rig.start_collector()

        wait_until(lambda: rig.stored() >= len(published), 180,
                   f"{len(published)} events in the Reporting API")
        wait_until(lambda: rig.buffered() == 0, 60, "the buffer to drain")
        assert _queue(rabbit_url, names.pool)[0] == 0
        assert rig.collector.terminate() == 0
    finally:
        rig.close()

    ids = reporting.event_ids(names.cloud)
    assert len(ids) == len(set(ids)) == len(published) == 8000
    assert set(ids) == published
    assert reporting.rejected_count(names.cloud) == 0


def test_full_buffer_pushes_back_into_rabbitmq(
    rabbit_url: str, names: Names, rabbit_queues: None, reporting: ReportingServer,
    tmp_path: Path,
) -> None:
    rig = Rig(rabbit_url, names, reporting, tmp_path, buffer_max_items=100,
              listener_batch_size=20)
    try:
        reporting.stop()
        rig.start_collector()
        published = _publish(rabbit_url, names.topic, 0, 600)
        wait_until(lambda: metric(rig.metrics_port, "tally_collector_backpressure") == 1, 60,
                   "back-pressure")
        depth = rig.buffered()
        ready, _ = _queue(rabbit_url, names.pool)
        # bounded: at most the limit plus the batches that were already being written
        assert 100 <= depth <= 100 + 2 * 20
        assert ready > 0   # the rest waits in RabbitMQ, unacknowledged or ready
        reporting.start()
        wait_until(lambda: rig.stored() >= len(published), 120, "every event delivered")
        assert rig.collector.terminate() == 0
    finally:
        rig.close()
    ids = reporting.event_ids(names.cloud)
    assert len(ids) == len(set(ids)) == 600 and set(ids) == published
