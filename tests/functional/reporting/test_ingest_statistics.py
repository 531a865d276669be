"""reporting.planner_statistics: the fold's by-key lookups and planner statistics.

Without statistics PostgreSQL may serve the lookup of ``current_resources`` rows by
their key from the (cloud, type, live) index, walking every row of the type per key;
ingest analyses the lookup tables once they outgrow their statistics.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting import pg_batch, planner_statistics
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.db.models import CurrentResource
from reporting.ingest import ingest_events
from tests.functional.sync.conftest import collector_create

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LOOKUP_TABLES = sorted(planner_statistics.LOOKUP_TABLES)
KEY = ["platform", "cloud", "resource_type", "resource_id"]


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def pass_check_interval(self) -> None:
        self.now += planner_statistics.CHECK_INTERVAL_S + 0.01


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(planner_statistics, "_clock", fake)
    return fake


@pytest.fixture
def factory(engine: sa.Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


def ingest_instances(factory: sessionmaker[Session], count: int, first: int = 0) -> None:
    for start in range(first, first + count, 1000):
        items = [collector_create("instance", f"vm-{n}", T0 + dt.timedelta(seconds=n))
                 for n in range(start, min(first + count, start + 1000))]
        results = ingest_events(factory, items, require_size_schema=False)
        assert {r.status for r in results} == {"stored"}


def analysed_tables(factory: sessionmaker[Session]) -> set[str]:
    with factory() as session:
        return set(session.execute(sa.text(
            "SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = current_schema()"
        )).scalars())


def lookup_plan(factory: sessionmaker[Session], cloud: str) -> str:
    """EXPLAIN of the fold's lookup of 1000 current_resources rows by their key."""
    keys = [{"platform": "openstack", "cloud": cloud, "resource_type": "instance",
             "resource_id": f"vm-new-{n}"} for n in range(1000)]
    join = " AND ".join(f't."{c}" = r."{c}"' for c in KEY)
    statement = ("EXPLAIN SELECT t.* FROM current_resources AS t JOIN "  # noqa: S608
                 + pg_batch.recordset(CurrentResource.__table__, KEY) + f" ON {join}")
    with factory() as session:
        rows = session.execute(sa.text(statement), {"batch": pg_batch.dumps(keys)})
        return "\n".join(row[0] for row in rows)


def test_the_first_stored_batch_analyses_the_fresh_lookup_tables(
        backend: str, factory: sessionmaker[Session], clock: FakeClock):
    if backend != "postgresql":
        ingest_instances(factory, 50)
        assert planner_statistics.after_stored(factory) == []
        return
    assert not set(LOOKUP_TABLES) & analysed_tables(factory)
    ingest_instances(factory, 50)  # ingest calls after_stored itself
    assert set(LOOKUP_TABLES) <= analysed_tables(factory)
    with factory.begin() as session:
        assert planner_statistics.analyze_outgrown(session) == []  # statistics stand


# Planner statistics are PostgreSQL's: SQLite is covered by the first test.
postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


@postgresql_only
def test_a_flood_after_a_trickle_is_planned_through_the_primary_key(
        factory: sessionmaker[Session], clock: FakeClock):
    ingest_instances(factory, 1)
    with factory.begin() as session:  # as autovacuum does for a trickle
        session.execute(sa.text("ANALYZE"))
    for start in range(1, 24001, 1000):  # (the wrong index wins from about 20,000 rows)
        clock.pass_check_interval()
        ingest_instances(factory, 1000, first=start)
    with factory() as session:
        cloud = session.execute(sa.text("SELECT min(cloud) FROM current_resources")).scalar()
    plan = lookup_plan(factory, str(cloud))
    assert "pk_current_resources" in plan, plan  # not a walk of the (cloud, type) per key


@postgresql_only
def test_the_check_runs_at_most_once_a_second(
        factory: sessionmaker[Session], clock: FakeClock):
    ingest_instances(factory, 10)  # the first check: analyses
    ingest_instances(factory, 2000, first=10)  # outgrown, but within the interval
    assert planner_statistics.after_stored(factory) == []
    clock.pass_check_interval()
    assert planner_statistics.after_stored(factory) == LOOKUP_TABLES
    assert planner_statistics.after_stored(factory) == []
