"""A notification oslo.messaging's own dispatcher cannot read (``"priority": null``)
in a batch with valid ones, on the real RabbitMQ: the valid ones are stored by the real
API, the poison and the other priorities the collector does not book are parked with
their reason and filed in the dead letter, and nothing is requeued."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.functional.collector.conftest import Names
from tests.functional.collector.harness import (
    READ_TOKEN,
    CollectorProcess,
    ReportingServer,
    WirePublisher,
    collector_config,
    free_port,
    metric,
    queue_depth,
    wait_until,
    wire_message,
)

pytestmark = [pytest.mark.rabbit]


def _volume(n: int) -> dict[str, object]:
    return {"volume_id": f"vol-poison-{n}", "tenant_id": "p1", "status": "available",
            "size": 1, "volume_type": "t"}


def test_a_poison_message_is_parked_and_the_valid_ones_are_stored(
    tmp_path: Path, rabbit_url: str, names: Names, rabbit_queues: None,
    reporting: ReportingServer,
) -> None:
    port = free_port()
    config = collector_config(
        tmp_path / "collector.conf", cloud=names.cloud, transport_url=rabbit_url,
        reporting_url=reporting.url, pool=names.pool, topic=names.topic,
        buffer_dir=tmp_path / "buffer", exchanges=[names.uid], metrics_port=port,
        listener_batch_size=50, listener_batch_timeout=1.0)
    collector = CollectorProcess(config, tmp_path / "collector.log")
    collector.start()
    publisher = WirePublisher(rabbit_url)
    try:
        wait_until(lambda: _consumers(rabbit_url, names.pool) == 1, 60,
                   "the collector to consume its queue")
        messages = []
        for n, priority in enumerate(["INFO", None, "INFO", "Info ", "ERROR", "INFO"]):
            message = wire_message("volume.create.end", _volume(n), {"project_id": "p1"},
                                   "volume.host", message_id=f"poison-test-{n}")
            message["priority"] = priority
            messages.append(message)
        del messages[5]["priority"]  # no priority at all
        messages.append(wire_message("volume.create.end", _volume(6), {"project_id": "p1"},
                                     "volume.host", message_id="poison-test-6"))
        for message in messages:
            publisher.publish(names.uid, names.topic, message)

        wait_until(lambda: len(reporting.event_ids(names.cloud)) == 3, 60,
                   "the three valid notifications to be stored")
        wait_until(lambda: metric(port, "tally_collector_parked_forwarded_total",
                                  {"outcome": "filed"}) == 4, 60,
                   "the four others to be filed in the dead letter")
        assert sorted(reporting.event_ids(names.cloud)) == [
            "poison-test-0", "poison-test-2", "poison-test-6"]
        for label in ("priority_not_a_string", "priority_unknown", "priority_error",
                      "priority_missing"):
            assert metric(port, "tally_collector_parked_total", {"reason": label}) == 1, label
        assert queue_depth(rabbit_url, names.pool)[0] == 0   # nothing left or requeued
        assert collector.terminate(timeout=60) == 0
    finally:
        publisher.close()
        if collector.alive():
            collector.kill()

    response = requests.get(f"{reporting.url}/v1/rejected-events",
                            headers={"Authorization": f"Bearer {READ_TOKEN}"}, timeout=10)
    response.raise_for_status()
    reasons = sorted(row["reason"] for row in response.json()["items"])
    assert reasons == [
        "parked: not booked: no priority",
        "parked: not booked: priority 'Info ' is not an oslo.messaging priority",
        "parked: not booked: priority ERROR: only INFO notifications are booked",
        "parked: not booked: priority None is not a string",
    ]
    log = (tmp_path / "collector.log").read_text()
    assert "Traceback" not in log
    assert log.count("is not booked") == 4   # each parked once: no requeue loop


def _consumers(rabbit_url: str, queue: str) -> int:
    try:
        return queue_depth(rabbit_url, queue)[1]
    except Exception:
        return 0
