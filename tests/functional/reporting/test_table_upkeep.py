"""Table upkeep off the request path: the 0008 and 0011 migrations' per-table settings on
PostgreSQL, and fold statements that stay sound whatever the planner statistics say.

Without fresh statistics (autovacuum off, or its first round not yet come) the
planner may serve a by-key lookup from the (cloud, type, ...) indexes; the seam's
lookups are single flat statements, so a wrong index costs one walk of the type's
rows, never one per key, and its updates find each row by the ctid read under the
same locks.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.db import migrations, writes
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.ingest import ingest
from tests.functional.sync.conftest import collector_create

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
UPKEPT = {"current_resources", "resource_intervals", "events"}

postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def reloptions(url: str) -> dict[str, list[str]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return {name: sorted(options or []) for name, options in conn.execute(sa.text(
                "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(:names) "
                "AND relkind = 'r'"), {"names": sorted(UPKEPT)})}
    finally:
        engine.dispose()


@postgresql_only
def test_the_migration_sets_fillfactor_and_analyze_thresholds_and_resets_them(
        db_url: str) -> None:
    options = reloptions(db_url)
    assert set(options) == UPKEPT
    # 0011 leaves room for a new version of every row (HOT updates).
    assert "fillfactor=50" in options["current_resources"]
    assert "fillfactor=50" in options["resource_intervals"]
    for table in UPKEPT:
        assert "autovacuum_analyze_threshold=2000" in options[table]
        assert "autovacuum_analyze_scale_factor=0.02" in options[table]
    migrations.downgrade(db_url, "0010_price_lists_statements")
    assert "fillfactor=70" in reloptions(db_url)["current_resources"]
    assert "fillfactor=85" in reloptions(db_url)["resource_intervals"]
    migrations.downgrade(db_url, "0007_sync_sightings")
    assert reloptions(db_url) == {table: [] for table in UPKEPT}
    migrations.upgrade(db_url)
    assert reloptions(db_url)["current_resources"] == options["current_resources"]


def ingest_instances(factory: sessionmaker[Session], first: int, count: int) -> None:
    for start in range(first, first + count, 1000):
        items = [collector_create("instance", f"vm-{n}", T0 + dt.timedelta(seconds=n))
                 for n in range(start, min(first + count, start + 1000))]
        assert {r.status for r in ingest(factory, items, require_size_schema=False)} == {
            "stored"}


@postgresql_only
def test_fold_statements_never_walk_per_key_with_the_statistics_of_a_trickle(
        factory: sessionmaker[Session]) -> None:
    ingest_instances(factory, 0, 1)
    with factory.begin() as session:  # as autovacuum does for a trickle
        session.execute(sa.text("ANALYZE"))
    ingest_instances(factory, 1, 24_000)  # no ANALYZE since: the statistics say 1 row
    statements: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().startswith(("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")):
            statements.append((statement, parameters))

    with factory() as session:
        cloud = session.execute(sa.text("SELECT min(cloud) FROM current_resources")).scalar()
        keys = [("openstack", str(cloud), "instance", f"vm-{n}") for n in range(0, 24_000, 24)]
        seam = writes.of(session)
        engine = session.get_bind()
        sa.event.listen(engine, "before_cursor_execute", capture)
        try:
            held = seam.held_resources(session, keys)
            histories = seam.histories(session, keys)
            assert len(held) == len(histories) == 1000
            assert all(h.open_interval is not None for h in held.values())
            # A batch of late updates of the same instances: every write of the fold.
            late = [{**collector_create("instance", k[3], T0), "event_id": f"late-{k[3]}",
                     "event_type": "compute.instance.power_off", "payload": {"state": "x"}}
                    for k in keys]
            assert {r.status for r in ingest(factory, late, require_size_schema=False)
                    } == {"stored"}
        finally:
            sa.event.remove(engine, "before_cursor_execute", capture)
        # The fold's writes are one statement of data-modifying CTEs on PostgreSQL.
        assert any("UPDATE current_resources" in s for s, _ in statements)
        cursor = session.connection().connection.cursor()
        for statement, parameters in statements:
            cursor.execute("EXPLAIN " + statement, parameters)
            plan = [line for (line,) in cursor.fetchall()]
            if any("Nested Loop" in line for line in plan):
                # Per row of the batch: only a TID scan or a primary-key probe.
                scans = [line for line in plan if re.search(r"Scan .*on (events|current_"
                                                            r"resources|resource_intervals)", line)]
                assert all("Tid Scan" in line or "using pk_" in line for line in scans), plan
