"""Fixtures shared by every test package.

Services: the functional tests use the real PostgreSQL and RabbitMQ named by
TALLY_TEST_PG_URL and TALLY_TEST_RABBIT_URL (tox sets both to the loopback
defaults).  An unreachable service FAILS the test that needs it: a CI run that
cannot reach its database must never pass by skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests import ast_guard

ast_guard.install()

REPO_ROOT = Path(__file__).resolve().parents[1]


# Captured notifications and API samples, with their provenance in INDEX.md there.
FIXTURES_DIR = REPO_ROOT / "tests" / "fixtures"

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_RABBIT_URL = "rabbit://guest:guest@127.0.0.1:5672/"


def load_fixture(relative: str) -> Any:
    """A JSON file below tests/fixtures, e.g. 'notifications/volume.retype_searchlight.json'."""
    return json.loads((FIXTURES_DIR / relative).read_text())


def _require_tcp(url: str, default_port: int, what: str) -> None:
    parts = urlsplit(url.replace("postgresql+psycopg", "postgresql"))
    host = parts.hostname or "127.0.0.1"
    port = parts.port or default_port
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        pytest.fail(f"{what} at {host}:{port} is unreachable ({exc}); start it, tests never skip it")


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """URL of the real PostgreSQL server's maintenance database."""
    url = os.environ.get("TALLY_TEST_PG_URL", DEFAULT_PG_URL)
    _require_tcp(url, 5432, "PostgreSQL")
    return url


@contextmanager
def created_pg_database(admin_url: str, template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (a copy of ``template`` when given), dropped on exit."""
    import sqlalchemy as sa

    name = f"tally_test_{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
    base = sa.engine.make_url(admin_url)
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_database(pg_admin_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    with created_pg_database(pg_admin_url) as url:
        yield url


@pytest.fixture(scope="session")
def pg_migrated_template(pg_admin_url: str) -> Iterator[str]:
    """Name of a PostgreSQL database migrated to head once per test session.

    Tests copy it (``CREATE DATABASE ... TEMPLATE``) instead of running the whole
    Alembic chain each time; nothing may stay connected to it.
    """
    import sqlalchemy as sa

    from reporting.db import migrations

    with created_pg_database(pg_admin_url) as url:
        migrations.upgrade(url)
        yield str(sa.engine.make_url(url).database)


@pytest.fixture
def pg_migrated_database(pg_admin_url: str, pg_migrated_template: str) -> Iterator[str]:
    """A fresh PostgreSQL database at the chain's head for one test; dropped afterwards."""
    with created_pg_database(pg_admin_url, template=pg_migrated_template) as url:
        yield url


def migrated_database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of ``backend`` ("sqlite" or "postgresql") at the chain's head,
    copied from the session's migrated template; for fixtures parametrised by backend."""
    if backend == "sqlite":
        return sqlite_copy(request.getfixturevalue("sqlite_migrated_template"),
                           tmp_path / "tally.sqlite")
    return str(request.getfixturevalue("pg_migrated_database"))


def sqlite_copy(template: Path, path: Path) -> str:
    """URL of a new SQLite file at ``path``, a copy of the migrated ``template``."""
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def sqlite_migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once per test session; tests copy it."""
    from reporting.db import migrations

    path = tmp_path_factory.mktemp("template") / "tally.sqlite"
    migrations.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def rabbit_url() -> str:
    """transport_url of the real RabbitMQ."""
    url = os.environ.get("TALLY_TEST_RABBIT_URL", DEFAULT_RABBIT_URL)
    _require_tcp(url.replace("rabbit://", "amqp://"), 5672, "RabbitMQ")
    return url


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """A command's main() run in the test process sets up oslo.log (tally_common.logs): its
    handler writes to the stream the test captured, and it replaces sys.excepthook.
    Undone after each test, so a later test's records never reach a closed stream."""
    import logging
    import sys

    root = logging.getLogger()
    handlers, level, excepthook = list(root.handlers), root.level, sys.excepthook
    yield
    for handler in list(root.handlers):
        # pytest's own capture handlers come and go with each phase of the test.
        if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
    sys.excepthook = excepthook
