"""The collector's connection to the real RabbitMQ, as an operator sees it: a wrong
password or vhost is retried and said once per attempt, ``tally_collector_connected``
stays 0, and the process exits non-zero once ``first_connection_timeout_s`` has passed;
a broker cut and a Reporting API outage are each followed by one line saying they
are over."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

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

pytestmark = [pytest.mark.rabbit]


def _with(rabbit_url: str, *, password: str | None = None, vhost: str | None = None,
          port: int | None = None) -> str:
    parts = urlsplit(rabbit_url)
    user = parts.username or "guest"
    secret = parts.password if password is None else password
    host = parts.hostname or "127.0.0.1"
    path = parts.path if vhost is None else f"/{vhost}"
    return f"rabbit://{user}:{secret}@{host}:{port or parts.port or 5672}{path or '/'}"


@pytest.mark.parametrize(("broken", "refusal"), [
    ({"password": "not-the-password"}, "ACCESS_REFUSED"),
    ({"vhost": "no-such-vhost"}, "NOT_ALLOWED - vhost no-such-vhost not found"),
])
def test_a_refused_connection_is_retried_then_the_collector_exits_non_zero(
    tmp_path: Path, rabbit_url: str, names: Names, broken: dict[str, str], refusal: str,
) -> None:
    port = free_port()
    config = collector_config(
        tmp_path / "collector.conf", cloud=names.cloud,
        transport_url=_with(rabbit_url, **broken),
        reporting_url=f"http://127.0.0.1:{free_port()}", pool=names.pool, topic=names.topic,
        buffer_dir=tmp_path / "buffer", exchanges=[names.uid], metrics_port=port,
        first_connection_timeout_s=6)
    log = tmp_path / "collector.log"
    collector = CollectorProcess(config, log)
    collector.start()
    try:
        wait_until(lambda: (metric(port, "tally_collector_connection_failures_total") or 0) >= 2,
                   60, "two refused attempts")
        assert metric(port, "tally_collector_connected") == 0
        assert collector.proc is not None
        code = collector.proc.wait(120)
    finally:
        if collector.alive():
            collector.kill()
    assert code == 1
    text = log.read_text()
    assert "Traceback" not in text
    attempts = [line for line in text.splitlines() if "Connecting to RabbitMQ at" in line]
    assert len(attempts) >= 2
    for n, line in enumerate(attempts, start=1):
        assert f"failed (attempt {n}: " in line and refusal in line and "retrying in " in line
        assert "not-the-password" not in line
    assert re.search(r"^tally-collector: not connected to RabbitMQ at rabbit://guest:\*\*\*@"
                     r".* within 6s \(\d+ attempts; last: .*" + re.escape(refusal), text,
                     re.MULTILINE)


def test_a_broker_cut_and_an_api_outage_each_end_in_one_line(
    tmp_path: Path, rabbit_url: str, names: Names, rabbit_queues: None,
    reporting: ReportingServer,
) -> None:
    parts = urlsplit(rabbit_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5672)
    port = free_port()
    config = collector_config(
        tmp_path / "collector.conf", cloud=names.cloud,
        transport_url=_with(rabbit_url, port=proxy.port), reporting_url=reporting.url,
        pool=names.pool, topic=names.topic, buffer_dir=tmp_path / "buffer",
        exchanges=[names.uid], metrics_port=port)
    log = tmp_path / "collector.log"
    collector = CollectorProcess(config, log)
    publisher = WirePublisher(rabbit_url)
    sent = 0

    def publish(count: int) -> None:
        nonlocal sent
        for _ in range(count):
            publisher.publish(names.uid, names.topic, wire_message(
                "volume.create.end",
                {"volume_id": f"vol-cut-{sent}", "tenant_id": "p1", "status": "available",
                 "size": 1, "volume_type": "t"},
                {"project_id": "p1"}, "volume.host", message_id=f"cut-{sent}"))
            sent += 1

    collector.start()
    try:
        wait_until(lambda: metric(port, "tally_collector_connected") == 1, 60, "a connection")
        wait_until(lambda: _consumers(rabbit_url, names.pool) == 1, 60, "the consumer")
        publish(5)
        wait_until(lambda: len(reporting.event_ids(names.cloud)) == 5, 60, "5 stored")

        # The broker cut: every AMQP connection reset.
        assert proxy.cut() > 0
        wait_until(lambda: (metric(port, "tally_collector_reconnections_total") or 0) >= 1,
                   120, "the reconnection")
        assert metric(port, "tally_collector_connected") == 1
        wait_until(lambda: _consumers(rabbit_url, names.pool) == 1, 60, "the consumer again")
        publish(5)
        wait_until(lambda: len(reporting.event_ids(names.cloud)) == 10, 60, "10 stored")

        # The Reporting API down while notifications arrive, then back.
        reporting.stop()
        publish(5)
        wait_until(lambda: (metric(port, "tally_collector_delivery_failures_total",
                                   {"reason": "connection"}) or 0) >= 2, 60,
                   "failed deliveries")
        reporting.start()
        wait_until(lambda: len(reporting.event_ids(names.cloud)) == 15, 120, "15 stored")
        wait_until(lambda: "Delivery succeeds again" in log.read_text(), 30,
                   "the recovery line")
        # RabbitMQ may deliver again what it sent before the cut (its acknowledgement
        # lost): oslo skips those, each once a traceback; now counted, said per burst.
        wait_until(lambda: _said_skipped(log) == (
            metric(port, "tally_collector_duplicates_skipped_total") or 0), 30,
            "every skipped redelivery to be said")
        assert collector.terminate(timeout=60) == 0
    finally:
        publisher.close()
        proxy.close()
        if collector.alive():
            collector.kill()
    assert sorted(reporting.event_ids(names.cloud)) == sorted(f"cut-{n}" for n in range(15))
    text = log.read_text()
    reconnected = [line for line in text.splitlines() if "Reconnected to RabbitMQ after" in line]
    assert len(reconnected) == 1, reconnected
    assert re.search(r"Reconnected to RabbitMQ after \d+\.\ds without a connection "
                     r"\(\d+ failed attempts\); consuming again", reconnected[0])
    recovered = [line for line in text.splitlines() if "Delivery succeeds again" in line]
    assert len(recovered) == 1
    assert re.search(r"Delivery succeeds again after \d+\.\ds and \d+ failed attempts; "
                     r"5 events waited, the oldest for \d+\.\ds", recovered[0])
    assert "DuplicateMessageError" not in text


def _said_skipped(log: Path) -> int:
    return sum(int(n) for n in re.findall(
        r"Skipped (\d+) notifications RabbitMQ delivered again after a reconnect",
        log.read_text()))


def _consumers(rabbit_url: str, queue: str) -> int:
    try:
        return queue_depth(rabbit_url, queue)[1]
    except Exception:
        return 0
