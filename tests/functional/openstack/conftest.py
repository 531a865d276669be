"""Fixtures of the OpenStack-access tests: the reporting backends (db_url on SQLite and
PostgreSQL) of tests/unit/reporting/fixtures.py."""

from tests.unit.reporting.fixtures import *  # noqa: F403
