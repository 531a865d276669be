"""Fixtures of the billing functional tests (backends from tests/unit/reporting)."""

from tests.functional.reporting.fixtures import *  # noqa: F403
