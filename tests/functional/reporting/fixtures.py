"""Backend fixtures of the functional reporting suites (tests/functional/reporting and
tests/functional/openstack import everything from here), on top of the database-free
helpers of tests/unit/reporting/fixtures.py, which this module re-exports.

Every test that asks for ``db_url`` (or ``conf``, ``app``, ``client``) runs twice:
once on a fresh SQLite file, once on a fresh PostgreSQL database, each a copy of a
database the session migrated once with the project's Alembic chain.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from reporting import opts
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from tests.conftest import migrated_database_url
from tests.unit.reporting.fixtures import (
    TOKENS,
    RunningServer,
    auth,
    start_server,
    tokens_file,
    write_config,
)

__all__ = [
    "BACKENDS", "TOKENS", "ConfFactory", "RunningServer", "app", "auth", "backend", "client",
    "conf", "db_url", "empty_db_url", "make_conf", "project_readers_app", "reporting_server",
    "session_factory", "start_server", "tokens_file", "write_config",
]

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def empty_db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, unmigrated database of the parametrised backend."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'tally.sqlite'}"
    return str(request.getfixturevalue("pg_database"))


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of the parametrised backend, at the chain's head: a copy of
    the session's migrated template (see tests/conftest.py)."""
    return migrated_database_url(backend, request, tmp_path)


ConfFactory = Callable[..., cfg.ConfigOpts]


@pytest.fixture
def make_conf(tokens_file: str) -> ConfFactory:
    """``make_conf(db_url, api={"auth_strategy": "noauth"}, ingest={...})``: a parsed
    ConfigOpts with every reporting option registered (token auth with TOKENS by
    default) and the given overrides."""

    def factory(url: str, **groups: dict[str, Any]) -> cfg.ConfigOpts:
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], project="tally", default_config_files=[], default_config_dirs=[])
        conf.set_override("connection", url, group="database")
        conf.set_override("auth_strategy", "token", group="api")
        conf.set_override("tokens_file", tokens_file, group="api")
        for group, values in groups.items():
            for name, value in values.items():
                conf.set_override(name, value, group=group)
        return conf

    return factory


@pytest.fixture
def conf(make_conf: ConfFactory, db_url: str) -> cfg.ConfigOpts:
    return make_conf(db_url)


@pytest.fixture
def app(conf: cfg.ConfigOpts) -> Iterator[Flask]:
    application = create_app(conf)
    application.config["TESTING"] = True
    yield application
    application.extensions[ENGINE_KEY].dispose()


@contextlib.contextmanager
def project_readers_app(make_conf: ConfFactory, db_url: str, tmp_path: Path,
                        projects: tuple[str, ...], accounts: tuple[str, ...] = ()
                        ) -> Iterator[Flask]:
    """An app whose tokens file holds TOKENS and, for each P of ``projects``, the
    bearer token ``tok-P`` of a project reader bound to P; for each A of ``accounts``,
    ``tok-account-A`` of an account reader of A."""
    path = tmp_path / "scoped-tokens.yaml"
    tokens: dict[str, Any] = {token: role for role, token in TOKENS.items()}
    for project in projects:
        tokens[f"tok-{project}"] = {"role": "project_reader", "project_id": project}
    for account in accounts:
        tokens[f"tok-account-{account}"] = {"role": "account_reader", "account_id": account}
    path.write_text(yaml.safe_dump(tokens))
    application = create_app(make_conf(db_url, api={"tokens_file": str(path)}))
    try:
        yield application
    finally:
        application.extensions[ENGINE_KEY].dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def session_factory(app: Flask) -> sessionmaker[Session]:
    """The app's own sessionmaker, for arranging and inspecting rows."""
    return app.extensions[SESSIONMAKER_KEY]  # type: ignore[no-any-return]


@pytest.fixture
def reporting_server(db_url: str, tokens_file: str, tmp_path: Path) -> Iterator[RunningServer]:
    """A running tally-reporting (2 workers) on the parametrised, migrated backend."""
    server = start_server(write_config(tmp_path / "reporting.conf", db_url, tokens_file),
                          tmp_path / "reporting.log")
    yield server
    server.stop()
