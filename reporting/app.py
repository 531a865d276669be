"""``create_app(conf)``: the Reporting API's Flask application factory.

The API is documented in docs/reporting-api.md and docs/reporting-queries.md.
"""

from __future__ import annotations

from flask import Flask
from oslo_config import cfg

from reporting import metrics
from reporting.api import (
    account_summaries,
    accounts,
    auth,
    clouds,
    errors,
    events,
    filing,
    handoff,
    health,
    openapi,
    periods,
    price_lists,
    read_limits,
    rejected,
    replica_reads,
    request_metrics,
    resource_types,
    resources,
    statements,
    usage,
)
from reporting.db import engine as db_engine
from reporting.db import session as db_session
from reporting.sync import api as sync_api


def create_app(conf: cfg.ConfigOpts) -> Flask:
    """Build the app from a parsed ConfigOpts with reporting's options registered.

    One engine per app; a session per request.  Raises on a configuration the
    service cannot run with (the entry point turns that into one clear line).
    """
    app = Flask("reporting")
    app.config["TALLY_CONF"] = conf
    app.json.sort_keys = False  # type: ignore[attr-defined]
    engine = db_engine.engine_from_conf(conf)
    db_session.init_app(app, engine, db_engine.make_sessionmaker(engine))
    replica_reads.init_app(app, conf)  # [database] slave_connection, when set
    errors.init_app(app)
    auth.init_app(app, conf)
    read_limits.init_app(app, conf)
    _register_blueprints(app, conf)
    # Outermost, around keystonemiddleware too: every answer counted, none in HTML.
    app.wsgi_app = request_metrics.measured(  # type: ignore[method-assign,assignment]
        request_metrics.guarded(app.wsgi_app), app.url_map)
    metrics.record_build_info()
    return app


def _register_blueprints(app: Flask, conf: cfg.ConfigOpts) -> None:
    for read_side in (health, openapi, resources, usage, clouds):
        app.register_blueprint(read_side.bp)
    events.init_app(app, conf)
    for write_side in (events, rejected, filing, resource_types):
        app.register_blueprint(write_side.bp)
    sync_api.init_app(app, conf)
    app.register_blueprint(sync_api.bp)
    handoff.init_app(app, conf)
    for billing in (price_lists, statements, periods, accounts, account_summaries, handoff):
        app.register_blueprint(billing.bp)
