"""The Alembic chain of the reporting database, driven from Python.

The chain lives in the repository's ``alembic/`` directory beside the packages (a
checkout or an editable install) and is installed to ``sys.prefix/share/tally/alembic``
by a regular install (setup.cfg ``data_files``).  ``tally-manage db ...`` and the
tests use these functions; ``/readyz`` uses ``is_at_head``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from oslo_config import cfg
from sqlalchemy.engine import Engine


class MigrationError(RuntimeError):
    """The chain cannot be found or a migration failed."""


def script_location() -> Path:
    """The directory holding ``env.py`` and ``versions/``."""
    candidates = (
        Path(__file__).resolve().parents[2] / "alembic",
        Path(sys.prefix) / "share" / "tally" / "alembic",
    )
    for candidate in candidates:
        if (candidate / "env.py").is_file() and (candidate / "versions").is_dir():
            return candidate
    raise MigrationError(
        "the migration chain was not found in " + " or ".join(str(c) for c in candidates)
    )


def _url(conf_or_url: cfg.ConfigOpts | str) -> str:
    if isinstance(conf_or_url, str):
        return conf_or_url
    return str(conf_or_url.database.connection)


def alembic_config(conf_or_url: cfg.ConfigOpts | str, output: TextIO | None = None) -> Config:
    config = Config(stdout=output or sys.stdout)
    config.set_main_option("script_location", str(script_location()))
    # ConfigParser interpolation would choke on a '%' in a password.
    config.set_main_option("sqlalchemy.url", _url(conf_or_url).replace("%", "%%"))
    return config


def upgrade(conf_or_url: cfg.ConfigOpts | str, rev: str = "head") -> None:
    command.upgrade(alembic_config(conf_or_url), rev)


def downgrade(conf_or_url: cfg.ConfigOpts | str, rev: str) -> None:
    command.downgrade(alembic_config(conf_or_url), rev)


def current(conf_or_url: cfg.ConfigOpts | str) -> tuple[str, ...]:
    """The revisions the database is at (empty before the first upgrade)."""
    engine = sa.create_engine(_url(conf_or_url), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return tuple(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()


def heads() -> tuple[str, ...]:
    """The head revisions of the chain on disk."""
    return tuple(ScriptDirectory(str(script_location())).get_heads())


def revisions() -> list[str]:
    """Every revision of the chain, oldest first."""
    script = ScriptDirectory(str(script_location()))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def is_at_head(engine: Engine) -> bool:
    """True when the database behind ``engine`` is migrated to the chain's head.

    Alembic logs its context ("Context impl ...", "Will assume transactional DDL")
    at INFO each time; a readiness probe is no migration, so those lines are kept out
    of the service's log."""
    quiet = logging.getLogger("alembic")
    level = quiet.level
    quiet.setLevel(max(level, logging.WARNING))
    try:
        with engine.connect() as conn:
            at = set(MigrationContext.configure(conn).get_current_heads())
        return at == set(heads())
    finally:
        quiet.setLevel(level)
