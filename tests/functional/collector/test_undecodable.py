"""A message oslo.messaging cannot decode is rejected by oslo itself (RabbitMQ drops it,
or dead-letters it when the queue has a dead-letter exchange) before the collector
sees it: the collector counts each one, so the loss is visible."""

from __future__ import annotations

from pathlib import Path

import kombu
import oslo_messaging
import pytest
from oslo_config import cfg

from collector import opts
from collector.service import Collector
from tests.functional.collector.conftest import Names
from tests.functional.collector.harness import consumed, kombu_url, wait_until

pytestmark = [pytest.mark.rabbit]


def _conf(tmp_path: Path, names: Names) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project="tally-functional-test", default_config_files=[])
    for name, value in {"cloud": names.cloud, "buffer_dir": str(tmp_path / "buffer"),
                        "reporting_url": "http://127.0.0.1:1", "metrics_bind": "",
                        "auth_strategy": "noauth",
                        "topics": [names.topic], "exchanges": [names.uid],
                        "pool": names.pool}.items():
        conf.set_override(name, value, group="collector")
    return conf


def _publish_raw(rabbit_url: str, exchange: str, topic: str, body: bytes) -> None:
    with kombu.Connection(kombu_url(rabbit_url)) as connection:
        target = kombu.Exchange(exchange, type="topic", durable=False, auto_delete=False)
        kombu.Producer(connection.channel()).publish(
            body, exchange=target, declare=[target], routing_key=f"{topic}.info",
            content_type="application/json", content_encoding="utf-8", serializer=None)


def test_undecodable_messages_are_counted(
    tmp_path: Path, rabbit_url: str, names: Names, rabbit_queues: None
) -> None:
    conf = _conf(tmp_path, names)
    transport = oslo_messaging.get_notification_transport(conf, url=rabbit_url)
    collector = Collector(conf, transport=transport)
    collector.start()
    try:
        wait_until(lambda: collector.listening, 60, "the listener to consume")
        wait_until(lambda: consumed(rabbit_url, names.pool), 60, "the queue to be consumed")
        for body in (b"not json at all", b'{"oslo.message": "{broken", "oslo.version": "2.0"}'):
            _publish_raw(rabbit_url, names.uid, names.topic, body)

        def counted() -> float:
            value = collector.metrics.registry.get_sample_value(
                "tally_collector_undecodable_total")
            return value or 0.0

        wait_until(lambda: counted() == 2, 30, "both undecodable messages to be counted")
    finally:
        collector.stop()
        transport.cleanup()
