"""Reads from the replica, writes to the primary, and never a reply older than the
caller's own last write (docs/deployment.md, "Read replicas").

With ``[database] slave_connection`` set:

- a write request (any method but GET/HEAD/OPTIONS) by an authenticated caller
  records, once answered, where the primary's log stands (``write_positions``);
- a GET/HEAD request opens its session on the replica when the caller never wrote or
  the replica has replayed past the caller's last write, else on the primary.  A
  replica that cannot be asked (down) or is no standby sends the read to the primary.

The rule is per caller, across every instance (the positions live in the primary):
what a caller wrote is in every reply it gets afterwards; another caller's writes
appear once the replica replays them.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, current_app, g, request
from oslo_config import cfg
from prometheus_client import Counter
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from reporting.api.auth import current_caller
from reporting.api.billing_common import caller_name
from reporting.clock import utcnow
from reporting.db import engine as db_engine
from reporting.db import replica
from reporting.db.session import ENGINE_KEY, READ_ROUTE_KEY, SESSIONMAKER_KEY

LOG = logging.getLogger(__name__)

REPLICA_KEY = "tally.replica"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

READS = Counter(
    "tally_api_read_sessions",
    "Sessions of GET requests by the database that answered them (replica, primary) and "
    "why (no_writes: the caller never wrote; replayed: the replica has the caller's last "
    "write; behind: it has not yet; unreachable: a database could not be asked; "
    "not_a_standby: slave_connection names a server that replays no log). Only with "
    "[database] slave_connection set.",
    ["database", "reason"],
)


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Route reads to the replica when one is configured; nothing otherwise."""
    url = conf.database.slave_connection
    if not url:
        return
    replica.check_urls(conf.database.connection, url)
    engine = db_engine.make_engine(url, pool_size=conf.database.pool_size,
                                   max_overflow=conf.database.max_overflow)
    app.extensions[REPLICA_KEY] = engine
    replica_sessions = db_engine.make_sessionmaker(engine)
    app.extensions[READ_ROUTE_KEY] = lambda: _route(replica_sessions)

    @app.after_request
    def _record_write(response: Response) -> Response:
        _remember_write(response)
        return response


def replica_engine(app: Flask) -> Engine | None:
    return app.extensions.get(REPLICA_KEY)


def _route(replica_sessions: sessionmaker[Session]) -> sessionmaker[Session]:
    primary_sessions: sessionmaker[Session] = current_app.extensions[SESSIONMAKER_KEY]
    if request.method not in READ_METHODS:
        return primary_sessions
    database, reason = _where_to_read()
    READS.labels(database=database, reason=reason).inc()
    g.tally_read_database = database
    return replica_sessions if database == "replica" else primary_sessions


def _where_to_read() -> tuple[str, str]:
    primary: Engine = current_app.extensions[ENGINE_KEY]
    try:
        position = replica.last_write(primary, caller_name())
    except SQLAlchemyError:
        # Whether the caller wrote cannot be told: the primary answers (or fails the
        # usual way), never a replica that might lack the caller's write.
        return "primary", "unreachable"
    try:
        # Asked even for a caller that never wrote: the question is the replica's
        # health check too, so a replica that is down costs no read.
        replayed = replica.has_replayed(current_app.extensions[REPLICA_KEY],
                                        position or replica.ORIGIN)
    except SQLAlchemyError as exc:
        LOG.warning("read replica unreachable, reading from the primary: %s",
                    type(exc).__name__)
        return "primary", "unreachable"
    if replayed is None:
        return "primary", "not_a_standby"
    if position is None:
        return "replica", "no_writes"
    return ("replica", "replayed") if replayed else ("primary", "behind")


def _remember_write(response: Response) -> None:
    if request.method in READ_METHODS or response.status_code in (401, 403):
        return
    if current_caller() is None:  # nobody to remember it for
        return
    try:
        replica.record_write(current_app.extensions[ENGINE_KEY], caller_name(), utcnow())
    except SQLAlchemyError as exc:
        # The write itself is done; without its position this caller's next reads go
        # to the replica as before its write, so say so.
        LOG.warning("could not record the write position of %s: %s", caller_name(),
                    type(exc).__name__)
