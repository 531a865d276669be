"""``reporting.wsgi:application`` for any WSGI server (uwsgi, mod_wsgi, gunicorn).

Reads the configuration file named by ``TALLY_CONFIG_FILE`` (environment aliases
apply as under tally-reporting).  Under several worker processes, set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the server starts so
``/metrics`` aggregates every worker.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Flask

from reporting.cmd import ConfigError, check_settings, load_conf, require_database, setup_logging

PROG = "tally-reporting-wsgi"
LOG = logging.getLogger(__name__)


def load_application(environ: dict[str, str] | None = None) -> Flask:
    env = dict(os.environ if environ is None else environ)
    path = env.get("TALLY_CONFIG_FILE")
    if not path:
        raise ConfigError("TALLY_CONFIG_FILE must name the configuration file")
    conf = load_conf([], prog=PROG, config_files=[path], environ=env)
    setup_logging(conf, PROG)
    database = require_database(conf)
    from reporting.app import create_app

    app = create_app(conf)
    check_settings(conf, PROG, only=("keystone_authtoken",))
    LOG.info("database: %s", database)
    return app


def __getattr__(name: str) -> Any:
    # ``application`` is built on first access (what a WSGI server does right after
    # importing this module), so importing the module alone reads no configuration.
    if name == "application":
        app = load_application()
        globals()["application"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
