"""The write seam (``reporting.db.writes.base.Writes``): one object per engine,
chosen here, once, from the engine's dialect; nowhere else looks at the dialect.

``reporting.db.engine.make_engine`` attaches it; ``of(session)`` finds it.
"""

from __future__ import annotations

import threading
import weakref

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db.writes.base import Writes
from reporting.db.writes.postgresql import PostgresWrites
from reporting.db.writes.sqlite import SqliteWrites

__all__ = ["Writes", "attach", "of"]

_BY_DIALECT: dict[str, type[Writes]] = {"postgresql": PostgresWrites, "sqlite": SqliteWrites}
_ATTACHED: weakref.WeakKeyDictionary[sa.Engine, Writes] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def attach(engine: sa.Engine) -> Writes:
    """The seam of ``engine``'s dialect, chosen once per engine."""
    with _lock:
        found = _ATTACHED.get(engine)
        if found is None:
            kind = _BY_DIALECT.get(engine.dialect.name)
            if kind is None:
                # Tally supports SQLite and PostgreSQL only; any other URL is a
                # configuration error.
                raise ValueError(f"unsupported database dialect {engine.dialect.name!r} "
                                 "(SQLite or PostgreSQL)")
            found = _ATTACHED[engine] = kind()
        return found


def of(session: Session) -> Writes:
    """The seam of the engine ``session`` is bound to."""
    bind = session.get_bind()
    engine = bind if isinstance(bind, sa.Engine) else bind.engine
    found = _ATTACHED.get(engine)
    return found if found is not None else attach(engine)
