"""projection.analyze_unplanned: the fold's by-key lookups and planner statistics.

Without statistics PostgreSQL may serve the lookup of ``current_resources`` rows by
their key from the (cloud, type, live) index, walking every row of the type per key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting import projection
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.ingest import ingest_events
from tests.functional.sync.conftest import collector_create

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LOOKUP_TABLES = ["current_resources", "resource_intervals", "events"]


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def factory(engine: sa.Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


def ingest_instances(factory: sessionmaker[Session], count: int, first: int = 0) -> None:
    items = [collector_create("instance", f"vm-{n}", T0 + dt.timedelta(seconds=n))
             for n in range(first, first + count)]
    results = ingest_events(factory, items, require_size_schema=False)
    assert {r.status for r in results} == {"stored"}


def analyze(factory: sessionmaker[Session]) -> list[str]:
    with factory.begin() as session:
        return projection.analyze_unplanned(session)


def test_tables_without_statistics_are_analysed_once(
        backend: str, factory: sessionmaker[Session]):
    ingest_instances(factory, 50)
    if backend != "postgresql":
        assert analyze(factory) == []
        return
    assert analyze(factory) == LOOKUP_TABLES
    with factory() as session:
        analysed = set(session.execute(sa.text(
            "SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = current_schema()"
        )).scalars())
    assert set(LOOKUP_TABLES) <= analysed
    assert analyze(factory) == []  # statistics stand: nothing to do
    ingest_instances(factory, 5, first=50)  # ingest still folds as before
    with factory() as session:
        assert session.execute(sa.text("SELECT count(*) FROM current_resources")).scalar() == 55
