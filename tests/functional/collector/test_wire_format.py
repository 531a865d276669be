"""Real notifications on the real RabbitMQ reach a real tally-reporting as the right events.

Published two ways on every default exchange: by oslo's Notifier with a real
RequestContext (as the services publish), and as raw messagingv2 envelopes built
from the captures in tests/fixtures (the bytes nova and cinder put on the bus).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from collector.listener import DEFAULT_EXCHANGES
from mapping.openstack import map_notification
from mapping.oslo_forms import from_capture
from tests.conftest import FIXTURES_DIR, load_fixture
from tests.functional.collector.conftest import Names
from tests.functional.collector.harness import (
    CollectorProcess,
    ReportingServer,
    WirePublisher,
    collector_config,
    oslo_notifier,
    queue_depth,
    request_context,
    wait_until,
    wire_message,
)

pytestmark = [pytest.mark.rabbit, pytest.mark.postgres]

# (exchange, publisher, oslo type, payload) published through oslo's Notifier
NOTIFIER_CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("nova", "compute.host1", "compute.instance.create.end",
     {"instance_id": "i-nova", "tenant_id": "p-nova", "state": "active", "vcpus": 2,
      "memory_mb": 2048, "root_gb": 10, "ephemeral_gb": 0, "instance_type": "m1.small"}),
    ("cinder", "volume.host1@lvm", "volume.create.end",
     {"volume_id": "v-cinder", "tenant_id": "p-cinder", "status": "creating", "size": 5,
      "volume_type": "type-id"}),
    ("neutron", "network.host1", "floatingip.delete.end", {"floatingip_id": "f-neutron"}),
    ("glance", "image.localhost", "image.upload",
     {"id": "g-glance", "owner": "p-glance", "size": 1073741824, "status": "active"}),
    ("octavia", "null", "octavia.loadbalancer.create.end",
     {"loadbalancer_id": "lb-octavia", "project_id": "p-octavia"}),
    ("openstack", "volume.host2", "volume.delete.end",
     {"volume_id": "v-openstack", "tenant_id": "p-openstack", "status": "deleting"}),
    ("nova", "compute.host1", "compute.instance.exists", {"instance_id": "i-skipped"}),
]

EXCHANGE_OF_PREFIX = {"compute": "nova", "volume": "cinder", "floatingip": "neutron",
                      "image": "glance", "octavia": "octavia"}


def _captures() -> list[dict[str, Any]]:
    """Every legacy capture that carries a message id and a time (wire and listener shapes)."""
    captures = []
    for path in sorted((FIXTURES_DIR / "notifications").glob("*.json")):
        # shares its message_id with volume.retype_searchlight (a quirk of the source)
        if path.name == "volume.delete.end_searchlight.json":
            continue
        capture = load_fixture(f"notifications/{path.name}")
        args = from_capture(capture)
        if args["metadata"].get("message_id") and args["metadata"].get("timestamp"):
            captures.append(capture)
    return captures


def _expected(cloud: str, args: Any) -> dict[str, Any] | None:
    return map_notification(cloud, args["ctxt"], args["publisher_id"], args["event_type"],
                            args["payload"], args["metadata"])


def _stored_like(reporting: ReportingServer, cloud: str, expected: dict[str, Any]) -> None:
    history = reporting.history(cloud, expected["resource_type"], expected["resource_id"])
    matching = [e for e in history if e["event_id"] == expected["event_id"]]
    assert len(matching) == 1, (expected["event_id"], history)
    stored = matching[0]
    for field in ("event_type", "platform", "cloud", "resource_type", "resource_id",
                  "project_id", "timestamp", "source", "payload"):
        assert stored[field] == expected[field], (field, stored, expected)


def test_every_exchange_reaches_the_api(
    rabbit_url: str, names: Names, rabbit_queues: None, reporting: ReportingServer,
    tmp_path: Path,
) -> None:
    config = collector_config(
        tmp_path / "collector.conf", cloud=names.cloud, transport_url=rabbit_url,
        reporting_url=reporting.url, pool=names.pool, topic=names.topic,
        buffer_dir=tmp_path / "buffer")
    collector = CollectorProcess(config, tmp_path / "collector.log")
    collector.start()
    try:
        wait_until(lambda: _consumed_by_one(rabbit_url, names.pool), 60,
                   "the collector's queue to have its consumer")
        expected: list[dict[str, Any]] = []

        for exchange, publisher, event_type, payload in NOTIFIER_CASES:
            with oslo_notifier(rabbit_url, exchange, names.topic, publisher) as notifier:
                notifier.info(request_context(f"ctx-{exchange}"), event_type, payload)

        publisher = WirePublisher(rabbit_url)
        try:
            for capture in _captures():
                args = from_capture(capture)
                message = wire_message(
                    args["event_type"], args["payload"], args["ctxt"],
                    str(args["publisher_id"]), args["metadata"]["message_id"],
                    args["metadata"]["timestamp"])
                exchange = EXCHANGE_OF_PREFIX[args["event_type"].split(".")[0]]
                publisher.publish(exchange, names.topic, message)
                mapped = _expected(names.cloud, args)
                if mapped is not None:
                    expected.append(mapped)
        finally:
            publisher.close()

        total = len(expected) + len(NOTIFIER_CASES) - 1  # one Notifier case is skipped
        wait_until(lambda: len(reporting.event_ids(names.cloud)) >= total, 60,
                   f"{total} events in the Reporting API")
        assert collector.terminate() == 0
    finally:
        if collector.alive():
            collector.kill()

    ids = reporting.event_ids(names.cloud)
    assert len(ids) == len(set(ids)) == total
    for event in expected:
        _stored_like(reporting, names.cloud, event)

    # the Notifier cases: the oslo wire decode, message_id and the context project
    nova = reporting.history(names.cloud, "instance", "i-nova")
    assert [e["event_type"] for e in nova] == ["compute.instance.create.end"]
    assert nova[0]["payload"]["size"] == {"vcpus": 2, "ram_gb": 2.0, "disk_gb": 10, "flavor": "m1.small"}
    assert nova[0]["project_id"] == "p-nova"
    fip = reporting.history(names.cloud, "floating_ip", "f-neutron")
    assert fip[0]["project_id"] == "ctx-neutron"      # only the request context names it
    lb = reporting.history(names.cloud, "loadbalancer", "lb-octavia")
    assert lb[0]["payload"]["size"] == {"listeners": 0, "pools": 0}
    assert reporting.history(names.cloud, "volume", "v-openstack")[0]["event_type"] == "volume.delete.end"
    assert reporting.history(names.cloud, "volume", "v-cinder")[0]["payload"]["state"] == "available"
    assert reporting.history(names.cloud, "image", "g-glance")[0]["payload"]["size"] == {"size_gb": 1.0}
    assert set(DEFAULT_EXCHANGES) == {case[0] for case in NOTIFIER_CASES}


def _consumed_by_one(rabbit_url: str, queue: str) -> bool:
    try:
        return queue_depth(rabbit_url, queue)[1] >= 1
    except Exception:
        return False
