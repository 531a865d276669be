"""The unit tests run without PostgreSQL or RabbitMQ (tests/functional has those).

A unit test that asks for either service fails here with the reason, so the unit
suite stays runnable on a laptop with neither.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    pytest.fail("a unit test asked for PostgreSQL: it belongs in tests/functional")


@pytest.fixture(scope="session")
def rabbit_url() -> str:
    pytest.fail("a unit test asked for RabbitMQ: it belongs in tests/functional")
