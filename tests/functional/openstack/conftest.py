"""Fixtures of the OpenStack-access tests: the reporting backends (db_url on SQLite and
PostgreSQL) of tests/functional/reporting/fixtures.py, and one keystone cloud per module."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import sqlite_copy
from tests.functional.openstack.cloud import KeystoneCloud, keystone_cloud
from tests.functional.reporting.fixtures import *  # noqa: F403


@pytest.fixture(scope="module")
def sqlite_cloud(tmp_path_factory: pytest.TempPathFactory,
                 sqlite_migrated_template: Path) -> Iterator[KeystoneCloud]:
    """One keystone cloud and tally-reporting (SQLite) for a module's client tests."""
    workdir = tmp_path_factory.mktemp("keystone-cloud")
    url = sqlite_copy(sqlite_migrated_template, workdir / "tally.sqlite")
    with keystone_cloud(url, workdir) as cloud:
        yield cloud
