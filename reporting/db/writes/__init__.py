"""The write seam (``reporting.db.writes.base.Writes``): one object per engine,
chosen here, once, from the engine's dialect; nowhere else looks at the dialect.

``create_engine`` builds an engine as its dialect needs it and attaches the seam;
``of(session)`` finds it; ``missing_database`` says whether a URL names a database
that does not exist yet where opening it would create it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db.writes.base import Writes
from reporting.db.writes.postgresql import PostgresWrites
from reporting.db.writes.sqlite import SqliteWrites

__all__ = ["Writes", "attach", "create_engine", "driver_problem", "missing_database", "of",
           "private_to_process"]

_BY_DIALECT: dict[str, type[Writes]] = {"postgresql": PostgresWrites, "sqlite": SqliteWrites}


# What a PostgreSQL URL must say: Tally installs psycopg 3, which SQLAlchemy does not
# pick for postgres:// (no such dialect) nor, before 2.1, for postgresql://.
POSTGRES_HINT = "write postgresql+psycopg://USER:PASSWORD@HOST/DBNAME"


def _kind(name: str) -> type[Writes]:
    kind = _BY_DIALECT.get(name)
    if kind is None:
        # Tally supports SQLite and PostgreSQL only; any other URL is a configuration
        # error.
        hint = f": {POSTGRES_HINT}" if name == "postgres" else " (SQLite or PostgreSQL)"
        raise ValueError(f"unsupported database dialect {name!r}{hint}")
    return kind


def create_engine(url: str, *, pool_size: int, max_overflow: int, **options: Any
                  ) -> sa.Engine:
    """The engine of ``url``, built as its dialect needs it (``Writes.create_engine``),
    with its seam attached; ``options`` go to every dialect's engine."""
    problem = driver_problem(url)
    if problem is not None:
        raise ValueError(problem)
    kind = _kind(sa.engine.make_url(url).get_backend_name())
    engine = kind.create_engine(url, pool_size=pool_size, max_overflow=max_overflow, **options)
    attach(engine)
    return engine


def driver_problem(url: str) -> str | None:
    """Why ``url`` cannot open a database Tally supports (its dialect, or a PostgreSQL
    driver that cannot be loaded: postgresql+psycopg2://, or postgresql:// under
    SQLAlchemy 2.0, which picks psycopg2), in one line; None when it can."""
    parsed = sa.engine.make_url(url)
    try:
        _kind(parsed.get_backend_name())
    except ValueError as exc:
        return str(exc)
    if parsed.get_backend_name() == "postgresql":
        try:
            parsed.get_dialect().import_dbapi()
        except (ImportError, sa.exc.NoSuchModuleError) as exc:
            return (f"the database driver of {parsed.drivername}:// cannot be loaded "
                    f"({exc}): {POSTGRES_HINT}")
    return None


def missing_database(url: str) -> str | None:
    """Why ``url`` names no database yet, where opening it would create an empty one;
    None when it names one (or its server decides)."""
    parsed = sa.engine.make_url(url)
    return _kind(parsed.get_backend_name()).missing_database(parsed)
_ATTACHED: weakref.WeakKeyDictionary[sa.Engine, Writes] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def is_postgresql(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (ArgumentError when no URL at all)."""
    return sa.engine.make_url(url).get_backend_name() == "postgresql"


def private_to_process(url: str) -> bool:
    """Whether ``url`` is a database no other process can open (SQLite in memory)."""
    parsed = sa.engine.make_url(url)
    return _kind(parsed.get_backend_name()).private_to_process(parsed)


def attach(engine: sa.Engine) -> Writes:
    """The seam of ``engine``'s dialect, chosen once per engine."""
    with _lock:
        found = _ATTACHED.get(engine)
        if found is None:
            found = _ATTACHED[engine] = _kind(engine.dialect.name)()
        return found


def of(session: Session) -> Writes:
    """The seam of the engine ``session`` is bound to."""
    bind = session.get_bind()
    engine = bind if isinstance(bind, sa.Engine) else bind.engine
    found = _ATTACHED.get(engine)
    return found if found is not None else attach(engine)
