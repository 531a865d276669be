"""Fixtures of the billing functional tests (backends from tests/unit/reporting)."""

from tests.unit.reporting.fixtures import *  # noqa: F403
