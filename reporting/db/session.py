"""A database session per request, closed on teardown (one engine per app)."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

ENGINE_KEY = "tally.engine"
SESSIONMAKER_KEY = "tally.sessionmaker"


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
        g.tally_db_session = current_app.extensions[SESSIONMAKER_KEY]()
    return g.tally_db_session


def app_engine() -> Engine:
    return current_app.extensions[ENGINE_KEY]


def app_sessionmaker() -> sessionmaker[Session]:
    return current_app.extensions[SESSIONMAKER_KEY]
