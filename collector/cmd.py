"""``tally-collector --config-file F``: run the notification collector until SIGTERM.

Nothing but the standard library (and tally_common.library_notices, which imports
nothing else) is imported at module level: oslo.messaging imports eventlet, which
warns on every start, ``--help`` and error unless those notices are filtered before
the import.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from types import FrameType

from tally_common.library_notices import quiet_library_notices

PROG = "tally-collector"
# The library sections whose options the collector knows in full once its transport
# is built: an unknown option there is an error, as in [collector].
STRICT_LIBRARY_SECTIONS = ("DEFAULT", "oslo_messaging_rabbit", "oslo_messaging_notifications",
                           "oslo_messaging_kafka")
LOG = logging.getLogger("collector")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    quiet_library_notices()
    import oslo_messaging
    from oslo_config import cfg
    from oslo_messaging import opts as messaging_opts

    from collector import opts
    from collector.errors import ConfigurationError
    from tally_common import logs
    from tally_common.config_check import UnknownSettingError, check_config_files, redact_url
    from tally_common.env_aliases import EnvAliasError, apply_env_aliases
    from tally_common.service_auth import ServiceAuthError, register_plugin_opts

    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logs.register_options(conf)
    # Every option oslo.messaging documents, so that the check below knows them all
    # before the driver registers its own (the same definitions).
    for group, group_opts in messaging_opts.list_opts():
        conf.register_opts(group_opts, group=group)
    try:
        conf(sys.argv[1:] if argv is None else argv, project="tally", prog=PROG)
        apply_env_aliases(conf, os.environ)
        register_plugin_opts(conf)  # [service_credentials] username, ... are known
        # Tally's own sections now; the library sections once the transport loaded
        # the driver that registers their options.
        check_config_files(conf, lenient=(), only=("collector",))
        logs.setup(conf, PROG)
        from collector.service import Collector  # after logging is set up

        collector = Collector(conf)
        # A misspelt oslo.messaging or oslo.log option is as fatal as one of Tally's:
        # left at its default, it would go unnoticed (``tranport_url``).
        check_config_files(conf, lenient=(), only=STRICT_LIBRARY_SECTIONS)
        # [service_credentials] holds keystoneauth's plugin options, which depend on
        # auth_type: an unknown one there is a warning, as in any library's section.
        for warning in check_config_files(conf, only=("service_credentials",)):
            LOG.warning("%s", warning.removeprefix("WARNING: "))
        try:
            broker = conf.oslo_messaging_notifications.transport_url or conf.transport_url
        except cfg.NoSuchOptError:  # no transport built (tests replace the Collector)
            broker = None
        LOG.info("broker: %s", redact_url(broker))
        api = getattr(collector, "api", None)
        LOG.info("Reporting API: %s", api.describe() if api is not None
                 else redact_url(conf.collector.reporting_url))
        stop = threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        # What start-up built (oslo, kombu, the configuration, the mapping table) lives
        # as long as the process: frozen, it is no longer traversed by every full
        # collection, each of which otherwise holds the GIL for ~45 ms while the
        # listener waits (several per 20,000 notifications; ~2 ms once frozen).
        gc.collect()
        gc.freeze()
        collector.start()
    except (cfg.Error, ConfigurationError, UnknownSettingError, EnvAliasError,
            ServiceAuthError, oslo_messaging.InvalidTransportURL) as exc:
        print(f"{PROG}: configuration error: {_one_line(exc)}", file=sys.stderr)
        return 2
    failure = None
    while not stop.wait(1.0):
        failure = collector.must_exit()
        if failure is not None:
            LOG.error("Exiting: %s", failure)
            break
    collector.stop()
    if failure is not None:
        print(f"{PROG}: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
