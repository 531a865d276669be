"""Every option of tally-collector (entry point ``oslo.config.opts: tally.collector``)."""

from __future__ import annotations

import itertools

from oslo_config import cfg

from collector import broker, buffer, delivery_config, listener, metrics
from tally_common import service_auth

GROUP = cfg.OptGroup(
    "collector",
    title="Notification collector",
    help="tally-collector: consumes OpenStack notifications from RabbitMQ, buffers "
    "the mapped events on disk and delivers them to the Reporting API.",
)


def _collector_opts() -> list[cfg.Opt]:
    return list(itertools.chain(listener.OPTS, broker.OPTS, buffer.OPTS, delivery_config.OPTS,
                                metrics.OPTS))


def list_opts() -> list[tuple[cfg.OptGroup | str, list[cfg.Opt]]]:
    """The collector's options and, for the sample, ``[service_credentials]``."""
    return [(GROUP, _collector_opts()), *service_auth.list_opts()]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # keystoneauth's options (the auth plugin's once its auth_type is read).
    service_auth.register_opts(conf)
    for group, opts in [(GROUP, _collector_opts())]:
        # A group of its own per ConfigOpts: register_group keeps a shallow copy of the
        # object it is given, whose option registry (and so every set_override) would
        # otherwise be shared by every ConfigOpts of the process.
        conf.register_group(cfg.OptGroup(group.name, title=group.title, help=group.help))
        conf.register_opts(opts, group=group.name)
