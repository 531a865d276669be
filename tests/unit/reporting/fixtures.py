"""Backend fixtures of the reporting suites, shared by tests/unit/reporting and
tests/functional/reporting (both conftests import everything from here).

Every test that asks for ``db_url`` (or ``conf``, ``app``, ``client``) runs twice:
once on a fresh SQLite file, once on a fresh PostgreSQL database (``pg_database``),
each migrated with the project's Alembic chain.
"""

from __future__ import annotations

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
from reporting.db import migrations
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY

BACKENDS = ("sqlite", "postgresql")

# One bearer token per role; ``auth(role)`` builds the header.
TOKENS = {"ingest": "tok-ingest", "read": "tok-read", "admin": "tok-admin"}


def auth(role: str) -> dict[str, str]:
    """Authorization header of the test token holding ``role``."""
    return {"Authorization": f"Bearer {TOKENS[role]}"}


@pytest.fixture
def tokens_file(tmp_path: Path) -> str:
    """A tokens file granting TOKENS."""
    path = tmp_path / "tokens.yaml"
    path.write_text(yaml.safe_dump({token: role for role, token in TOKENS.items()}))
    return str(path)


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
def db_url(empty_db_url: str) -> str:
    """A fresh database of the parametrised backend, migrated to head."""
    migrations.upgrade(empty_db_url)
    return empty_db_url


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


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def session_factory(app: Flask) -> sessionmaker[Session]:
    """The app's own sessionmaker, for arranging and inspecting rows."""
    return app.extensions[SESSIONMAKER_KEY]  # type: ignore[no-any-return]
