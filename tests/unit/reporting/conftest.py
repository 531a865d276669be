"""Fixtures of the reporting unit tests (see fixtures.py)."""

from tests.unit.reporting.fixtures import *  # noqa: F403
