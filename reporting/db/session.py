"""A database session per request, closed on teardown (one engine per app, and one
for its read replica when ``[database] slave_connection`` names one)."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask, current_app, g
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

ENGINE_KEY = "tally.engine"
SESSIONMAKER_KEY = "tally.sessionmaker"
# Which sessionmaker answers the current request (``reporting.api.replica_reads``);
# absent without a replica: the primary's.
READ_ROUTE_KEY = "tally.read_route"


def init_app(app: Flask, engine: Engine, factory: sessionmaker[Session]) -> None:
    app.extensions[ENGINE_KEY] = engine
    app.extensions[SESSIONMAKER_KEY] = factory

    @app.teardown_appcontext
    def _close_session(_exc: BaseException | None) -> None:
        session = g.pop("tally_db_session", None)
        if session is not None:
            session.close()


def db_session() -> Session:
    """The session of the current request, opened on first use."""
    if "tally_db_session" not in g:
        route: Callable[[], sessionmaker[Session]] | None = current_app.extensions.get(
            READ_ROUTE_KEY)
        factory = route() if route is not None else current_app.extensions[SESSIONMAKER_KEY]
        g.tally_db_session = factory()
    return g.tally_db_session


def app_engine() -> Engine:
    return current_app.extensions[ENGINE_KEY]


def app_sessionmaker() -> sessionmaker[Session]:
    return current_app.extensions[SESSIONMAKER_KEY]
