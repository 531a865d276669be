"""Fixtures of the OpenStack-access tests: the reporting backends (db_url on SQLite and
PostgreSQL) of tests/functional/reporting/fixtures.py, and one keystone cloud per module."""

from collections.abc import Iterator

import pytest

from reporting.db import migrations
from tests.functional.openstack.cloud import KeystoneCloud, keystone_cloud
from tests.functional.reporting.fixtures import *  # noqa: F403


@pytest.fixture(scope="module")
def sqlite_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeystoneCloud]:
    """One keystone cloud and tally-reporting (SQLite) for a module's client tests."""
    workdir = tmp_path_factory.mktemp("keystone-cloud")
    url = f"sqlite:///{workdir / 'tally.sqlite'}"
    migrations.upgrade(url)
    with keystone_cloud(url, workdir) as cloud:
        yield cloud
