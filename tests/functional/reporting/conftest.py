"""Fixtures of the reporting functional tests (see fixtures.py)."""

from tests.unit.reporting.fixtures import *  # noqa: F403
