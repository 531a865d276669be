"""The reporting database: options, the engine (one per app) and sessions."""

from __future__ import annotations

import json
from typing import Any

import orjson
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


# orjson reads an integer beyond 64 bits as a float (10**30 as 1e+30), silently: a
# column text holding a run of 19 digits or more (such an integer, or only a long
# string of digits) is read by the standard library, which reads every integer
# exactly.  Every digit made "0" and every other byte a space, searched for 19
# zeros: two passes at C speed.
_DIGITS = bytes(ord("0") if ord("0") <= byte <= ord("9") else ord(" ") for byte in range(256))
_LONG_DIGITS = b"0" * 19


def _json_loads(text: str | bytes | float) -> Any:
    """JSON columns as read back (PostgreSQL hands bytes, SQLite str): orjson (the
    fold reads a size per row), the standard library for what orjson could read
    inexactly (an integer beyond 64 bits) or refuses.  SQLite hands a number a JSON
    column's affinity converted (only when the conversion is exact) as that number."""
    if isinstance(text, int | float):
        return text
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if _LONG_DIGITS not in data.translate(_DIGITS):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """Build the engine for ``url`` with its write seam attached: the seam of the URL's
    database builds it (``reporting.db.writes.create_engine``: SQLite gets WAL and a
    busy timeout, PostgreSQL a pinged pool)."""
    return writes.create_engine(url, pool_size=pool_size, max_overflow=max_overflow,
                                json_deserializer=_json_loads)


def engine_from_conf(conf: cfg.ConfigOpts) -> Engine:
    return make_engine(
        conf.database.connection,
        pool_size=conf.database.pool_size,
        max_overflow=conf.database.max_overflow,
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)
