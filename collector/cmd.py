"""``tally-collector --config-file F``: run the notification collector until SIGTERM.

Nothing but the standard library is imported at module level: oslo.messaging
imports eventlet, which warns in nine lines on every start, ``--help`` and error
unless that one warning is filtered before the import.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
import warnings
from types import FrameType

PROG = "tally-collector"
LOG = logging.getLogger("collector")


def quiet_eventlet_warning() -> None:
    """Filter eventlet's deprecation notice (only that one) before oslo.messaging loads."""
    warnings.filterwarnings("ignore", message=r"(?s)\s*Eventlet is deprecated")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    quiet_eventlet_warning()
    import oslo_messaging
    from oslo_config import cfg

    from collector import opts
    from collector.errors import ConfigurationError
    from mapping import logs
    from mapping.config_check import UnknownSettingError, check_config_files, redact_url
    from mapping.env_aliases import EnvAliasError, apply_env_aliases
    from mapping.service_auth import ServiceAuthError, register_plugin_opts

    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logs.register_options(conf)
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
        for warning in check_config_files(conf, only=("DEFAULT", "oslo_messaging_rabbit",
                                                      "oslo_messaging_notifications",
                                                      "service_credentials")):
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
    while not stop.wait(1.0):
        pass
    collector.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
