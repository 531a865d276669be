"""A PostgreSQL database of its own for one benchmark run, dropped when the run ends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa


@contextmanager
def scratch_database(admin_url: str, prefix: str = "tally_bench", *,
                     keep: bool = False) -> Iterator[str]:
    """The URL of a new, empty database on the server of ``admin_url``; dropped on
    exit (even while connections to it remain), unless ``keep``."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT",
                             poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(admin_url).set(database=name).render_as_string(
            hide_password=False)
    finally:
        if keep:
            print(f"database kept: {name}")
        else:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
