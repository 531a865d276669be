"""Fixtures of the reporting functional tests (see fixtures.py)."""

from tests.functional.reporting.fixtures import *  # noqa: F403
