"""Alembic environment of the reporting database (the one migration chain).

Run through ``tally-manage db ...`` (``reporting.db.migrations``), which hands the
database URL in through the Alembic config; ``alembic -x url=...`` works as well.
Each migration runs in its own transaction (``transaction_per_migration``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context
from sqlalchemy.engine import Connection

from reporting.db.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise RuntimeError("no database URL: pass -x url=... or use tally-manage")
    return url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        transaction_per_migration=True,
        # SQLite cannot ALTER most things in place; batch mode recreates the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = sa.create_engine(_url(), poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
