"""The reporting database: options, the engine (one per app) and sessions."""

from __future__ import annotations

import json
from typing import Any

import orjson
import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from reporting.db import writes

database_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "connection",
        default="sqlite:///tally.sqlite",
        secret=True,
        help="SQLAlchemy URL of the reporting database: "
        "postgresql+psycopg://user:password@host/dbname in production. Must be set: "
        "tally-reporting and tally-manage refuse to start rather than use this default "
        "(an SQLite file in the working directory); to run on SQLite, name the file "
        "(sqlite:////var/lib/tally/tally.sqlite).",
    ),
    cfg.IntOpt("pool_size", default=5, min=1, help="Connections kept per process (PostgreSQL)."),
    cfg.IntOpt("max_overflow", default=10, min=0, help="Extra connections under load (PostgreSQL)."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(database_opts, group="database")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    # WAL lets readers run beside the single writer; busy_timeout makes concurrent
    # writers (several gunicorn workers) wait instead of failing.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _json_loads(text: str | bytes) -> Any:
    """JSON columns as read back: orjson (the fold reads a size per row), the
    standard library for what orjson refuses (an integer beyond 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """Build the engine for ``url`` and attach its write seam
    (``reporting.db.writes``); SQLite gets WAL and a busy timeout."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(url, connect_args={"check_same_thread": False},
                                  json_deserializer=_json_loads)
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = sa.create_engine(
            url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True,
            json_deserializer=_json_loads,
        )
    writes.attach(engine)
    return engine


def engine_from_conf(conf: cfg.ConfigOpts) -> Engine:
    return make_engine(
        conf.database.connection,
        pool_size=conf.database.pool_size,
        max_overflow=conf.database.max_overflow,
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)
