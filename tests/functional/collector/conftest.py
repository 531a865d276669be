"""Fixtures of the collector functional tests: a real tally-reporting, unique names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.functional.collector.harness import ReportingServer, delete_queues


@dataclass
class Names:
    """Unique per test, so suites sharing the RabbitMQ never see each other's traffic."""

    uid: str
    cloud: str
    topic: str
    pool: str


@pytest.fixture
def names() -> Names:
    uid = uuid.uuid4().hex[:10]
    return Names(uid, f"os-func-{uid}", f"notifications-{uid}", f"tally-test-{uid}")


@pytest.fixture
def rabbit_queues(rabbit_url: str, names: Names) -> Iterator[None]:
    yield
    delete_queues(rabbit_url, [names.pool, f"{names.topic}.info"])


@pytest.fixture
def reporting(pg_migrated_database: str, tmp_path: Path) -> Iterator[ReportingServer]:
    workdir = tmp_path / "reporting"
    workdir.mkdir()
    server = ReportingServer(workdir, pg_migrated_database)
    server.start()
    try:
        yield server
    finally:
        server.close()
