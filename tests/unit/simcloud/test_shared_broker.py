"""``tally-simcloud serve`` on a broker other consumers share: exchanges of its own,
and the Tally clouds file it writes for itself."""

from __future__ import annotations

import dataclasses

from simcloud import cmd
from simcloud.config import STOCK_EXCHANGES
from simcloud.world import World
from tests.unit.simcloud.conftest import Received, _Endpoint


def test_exchange_prefix_names_every_exchange() -> None:
    args = cmd.build_parser().parse_args(["serve", "--exchange-prefix", "sim1-"])
    config = cmd.world_config(args)
    assert [config.exchange(s) for s in STOCK_EXCHANGES] == [
        "sim1-nova", "sim1-cinder", "sim1-neutron", "sim1-glance", "sim1-octavia"]
    stock = cmd.world_config(cmd.build_parser().parse_args(["serve"]))
    assert [stock.exchange(s) for s in STOCK_EXCHANGES] == list(STOCK_EXCHANGES)


def test_prefixed_notifications_reach_only_the_prefixed_exchanges() -> None:
    import oslo_messaging
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(conf, url="fake:/")
    received, stock = Received(), Received()
    listeners = [oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic="notifications", exchange=prefix + s)
                    for s in STOCK_EXCHANGES],
        [_Endpoint(sink, "any")], executor="threading", pool=f"pool-{prefix or 'stock'}")
        for prefix, sink in (("p-", received), ("", stock))]
    for listener in listeners:
        listener.start()
    args = cmd.build_parser().parse_args(["serve", "--exchange-prefix", "p-", "--scale", "10",
                                          "--days", "2", "--empty-start"])
    config = cmd.world_config(args)
    world = World(dataclasses.replace(config, transport=transport))
    try:
        sent = world.advance_to(config.start.replace(day=2))["sent"]
        assert sent > 0 and len(received.wait_for(sent, timeout=60)) == sent
        assert stock.wait_for(1, timeout=1) == []
    finally:
        world.close()
        for listener in listeners:
            listener.stop()
            listener.wait()
        transport.cleanup()
