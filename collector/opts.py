"""Every option of tally-collector (entry point ``oslo.config.opts: tally.collector``)."""

from __future__ import annotations

import itertools

from oslo_config import cfg

from collector import broker, buffer, delivery_config, listener, metrics

GROUP = cfg.OptGroup(
    "collector",
    title="Notification collector",
    help="tally-collector: consumes OpenStack notifications from RabbitMQ, buffers "
    "the mapped events on disk and delivers them to the Reporting API.",
)


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, list(itertools.chain(
        listener.OPTS, broker.OPTS, buffer.OPTS, delivery_config.OPTS, metrics.OPTS)))]


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in list_opts():
        # A group of its own per ConfigOpts: register_group keeps a shallow copy of the
        # object it is given, whose option registry (and so every set_override) would
        # otherwise be shared by every ConfigOpts of the process.
        conf.register_group(cfg.OptGroup(group.name, title=group.title, help=group.help))
        conf.register_opts(opts, group=group.name)
