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

__all__ = ["Writes", "attach", "create_engine", "missing_database", "of", "private_to_process"]

_BY_DIALECT: dict[str, type[Writes]] = {"postgresql": PostgresWrites, "sqlite": SqliteWrites}


def _kind(name: str) -> type[Writes]:
    kind = _BY_DIALECT.get(name)
    if kind is None:
        # Tally supports SQLite and PostgreSQL only; any other URL is a configuration
        # error.
        raise ValueError(f"unsupported database dialect {name!r} (SQLite or PostgreSQL)")
    return kind


def create_engine(url: str, *, pool_size: int, max_overflow: int, **options: Any
                  ) -> sa.Engine:
    """The engine of ``url``, built as its dialect needs it (``Writes.create_engine``),
    with its seam attached; ``options`` go to every dialect's engine."""
    kind = _kind(sa.engine.make_url(url).get_backend_name())
    engine = kind.create_engine(url, pool_size=pool_size, max_overflow=max_overflow, **options)
    attach(engine)
    return engine


def missing_database(url: str) -> str | None:
    """Why ``url`` names no database yet, where opening it would create an empty one;
    None when it names one (or its server decides)."""
    parsed = sa.engine.make_url(url)
    return _kind(parsed.get_backend_name()).missing_database(parsed)
_ATTACHED: weakref.WeakKeyDictionary[sa.Engine, Writes] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


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
