"""Parked items reach the dead letter of a real tally-reporting (PostgreSQL) from a real
tally-collector: kept on the collector's disk while the API is down, listed and
requeued beside the running collector, filed once the API answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from collector.buffer import EventBuffer
from collector.parked_store import ParkedStore
from tests.functional.collector.conftest import Names
from tests.functional.collector.harness import (
    READ_TOKEN,
    CollectorProcess,
    ReportingServer,
    collector_config,
    free_port,
    metric,
    wait_until,
)

pytestmark = [pytest.mark.rabbit]


def event(cloud: str, n: int, vcpus: Any = 2) -> dict[str, Any]:
    return {
        "event_id": f"parked-{n}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": cloud, "resource_type": "instance",
        "resource_id": f"vm-parked-{n}", "project_id": "p1",
        "timestamp": "2026-01-01T00:00:00Z", "source": "collector",
        "payload": {"state": "active",
                    "size": {"vcpus": vcpus, "ram_gb": 2, "disk_gb": 10, "flavor": "f1"}},
    }


def parked_command(buffer_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TALLY_OSC_CLOUD"}
    return subprocess.run([sys.executable, "-m", "collector.parked", "--buffer-dir",
                           str(buffer_dir), *args], capture_output=True, text=True,
                          timeout=120, env=env)


def dead_letter(reporting: ReportingServer) -> list[dict[str, Any]]:
    response = requests.get(f"{reporting.url}/v1/rejected-events",
                            headers={"Authorization": f"Bearer {READ_TOKEN}"}, timeout=10)
    response.raise_for_status()
    return list(response.json()["items"])


def test_parked_items_reach_the_dead_letter_once_the_api_answers(
    tmp_path: Path, rabbit_url: str, names: Names, rabbit_queues: None,
    reporting: ReportingServer
) -> None:
    cloud = names.cloud
    buffer_dir = tmp_path / "buffer"
    buffer = EventBuffer(str(buffer_dir), max_items=1000)
    buffer.append([json.dumps(event(cloud, 1, vcpus="two"))])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 400 bad_request: nests too deep")
    buffer.park({"reason": "buffer write failed repeatedly",
                 "notification": {"event_type": "compute.instance.create.end",
                                  "event": json.dumps(event(cloud, 2))}})
    buffer.park({"reason": "unmappable: ValueError: a state holds NaN",
                 "notification": {"event_type": "compute.instance.update",
                                  "payload": {"state": float("nan")}}})
    buffer.close()
    reporting.stop()  # the API is down when the collector starts

    port = free_port()
    config = collector_config(
        tmp_path / "collector.conf", cloud=cloud, transport_url=rabbit_url,
        reporting_url=reporting.url, pool=names.pool, topic=names.topic,
        buffer_dir=buffer_dir, exchanges=[names.uid], metrics_port=port)
    collector = CollectorProcess(config, tmp_path / "collector.log")
    collector.start()
    try:
        wait_until(lambda: (metric(port, "tally_collector_parked_forward_failures_total",
                                   {"reason": "connection"}) or 0) > 0, 60,
                   "a filing attempt the API did not answer")
        assert metric(port, "tally_collector_parked_depth") == 3  # kept while the API is down

        listed = parked_command(buffer_dir, "list")
        assert listed.returncode == 0, listed.stderr
        assert [json.loads(line)["kind"] for line in listed.stdout.splitlines()] == [
            "event", "event", "notification"]
        requeued = parked_command(buffer_dir, "requeue", "--wait", "60")
        assert requeued.returncode == 0, requeued.stderr
        assert "marked 2 parked events for requeue, 2 moved into the buffer by it" in (
            requeued.stdout)
        # Another process parks beside the running collector (the store has no owner).
        store = ParkedStore(str(buffer_dir / "parked"), sync=None)
        store.park({"reason": "HTTP 413 request_entity_too_large", "event": json.dumps(
            event(cloud, 3))})
        store.close()
        wait_until(lambda: metric(port, "tally_collector_parked_depth") == 2, 30,
                   "the parked depth to count what is left")
        assert metric(port, "tally_collector_buffer_depth") == 2

        reporting.start()
        wait_until(lambda: metric(port, "tally_collector_parked_depth") == 0, 60,
                   "the parked items to be filed")
        wait_until(lambda: metric(port, "tally_collector_buffer_depth") == 0, 60,
                   "the requeued events to be delivered")
        assert collector.terminate(timeout=60) == 0
    finally:
        if collector.alive():
            collector.kill()

    rows = dead_letter(reporting)
    parked_rows = [row for row in rows if row["reason"].startswith("parked: ")]
    assert [row["reason"] for row in parked_rows] == [
        "parked: unmappable: ValueError: a state holds NaN",
        "parked: HTTP 413 request_entity_too_large"]
    notification, refused = parked_rows
    assert notification["raw"] == ('{"event_type": "compute.instance.update", '
                                   '"payload": {"state": NaN}}')  # no JSON: kept as text
    assert refused["raw"] == event(cloud, 3)
    assert (refused["cloud"], refused["event_id"]) == (cloud, "parked-3")
    # The requeued events went through ingest: one stored, one dead-lettered by ingest.
    assert reporting.event_ids(cloud) == ["parked-2"]
    (by_ingest,) = [row for row in rows if row["event_id"] == "parked-1"]
    assert by_ingest["reason"].startswith("size_schema: openstack/instance: /vcpus")
    log = (tmp_path / "collector.log").read_text()
    assert "Filed 2 parked items in the Reporting API's dead letter" in log
