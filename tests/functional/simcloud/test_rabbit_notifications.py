"""Notifications published to the real RabbitMQ match the truth when nothing is lost."""

from __future__ import annotations

import uuid

import kombu
import oslo_messaging
import pytest
from oslo_config import cfg

from simcloud.config import WorldConfig
from simcloud.world import World
from tests.unit.simcloud.conftest import Received, _Endpoint
from tests.unit.simcloud.truthcheck import assert_notifications_match_truth


@pytest.mark.rabbit
def test_month_over_rabbitmq_matches_the_truth(rabbit_url: str) -> None:
    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(conf, url=rabbit_url)
    tag = uuid.uuid4().hex[:10]
    # Exchanges of our own: other suites share this broker and listen on "nova" & co.
    exchanges = {s: f"simtest-{tag}-{s}" for s in ("nova", "cinder", "neutron", "glance",
                                                   "octavia")}
    received = Received()
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic="notifications", exchange=e)
                    for e in exchanges.values()],
        [_Endpoint(received, "any")], executor="threading", pool=f"simtest-{tag}")
    listener.start()
    world = World(WorldConfig(seed=41, scale=80, days=4, empty_start=True,
                              transport_url=rabbit_url, exchanges=exchanges))
    try:
        sent = 0
        for day in range(1, 5):
            sent += world.advance_to(world.config.start.replace(day=1 + day))["sent"]
        messages = received.wait_for(sent, timeout=120)
        assert len(messages) == sent
        assert assert_notifications_match_truth(world, messages) > 50
    finally:
        world.close()
        listener.stop()
        listener.wait()
        transport.cleanup()
        _remove_broker_objects(rabbit_url, f"simtest-{tag}", exchanges.values())


def _remove_broker_objects(url: str, queue: str, exchanges: object) -> None:
    """Delete this test's pool queue and exchanges so the shared broker stays clean."""
    with kombu.Connection(url.replace("rabbit://", "amqp://", 1)) as connection:
        channel = connection.channel()
        kombu.Queue(queue, channel=channel).delete()
        for name in exchanges:  # type: ignore[attr-defined]
            kombu.Exchange(name, channel=channel).delete()
