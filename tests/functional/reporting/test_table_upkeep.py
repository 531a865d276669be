"""Table upkeep off the request path: the 0008, 0011 and 0012 migrations' settings on
PostgreSQL, and fold statements that stay sound whatever the planner statistics say.

Without fresh statistics (autovacuum off, or its first round not yet come) the
planner may serve a by-key lookup from an index leading with cloud and read every
row of the cloud; the seam probes each id alone on an index leading with
resource_id (0013), and its updates find each row by the ctid read under the same
locks, so no statement of the fold reads another key's rows.
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
    """Each upkept table's storage settings: a plain table's own, or those every
    partition of a partitioned one holds (migration 0032; they must all agree)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found: dict[str, set[tuple[str, ...]]] = {}
            for name, options in conn.execute(sa.text(
                    "SELECT coalesce(p.relname, c.relname), c.reloptions FROM pg_class c "
                    "LEFT JOIN pg_inherits i ON i.inhrelid = c.oid "
                    "LEFT JOIN pg_class p ON p.oid = i.inhparent "
                    "WHERE coalesce(p.relname, c.relname) = ANY(:names) AND c.relkind = 'r'"),
                    {"names": sorted(UPKEPT)}):
                found.setdefault(name, set()).add(tuple(sorted(options or [])))
    finally:
        engine.dispose()
    assert all(len(options) == 1 for options in found.values()), found
    return {name: list(next(iter(options))) for name, options in found.items()}


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


def sequence(url: str, table: str, column: str) -> tuple[int, int]:
    """(increment, cache) of the sequence behind ``table.column``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            increment, cache = conn.execute(sa.text(
                "SELECT seqincrement, seqcache FROM pg_sequence WHERE seqrelid = "
                "CAST(pg_get_serial_sequence(:t, :c) AS regclass)"), {"t": table, "c": column}).one()
            return int(increment), int(cache)
    finally:
        engine.dispose()


def sequence_step(url: str) -> int:
    return sequence(url, "events", "seq")[0]


@postgresql_only
def test_the_events_sequence_steps_by_a_batch_and_steps_back_past_every_number(
        db_url: str, factory: sessionmaker[Session]) -> None:
    assert sequence_step(db_url) == 1000  # 0016
    assert sequence(db_url, "resource_intervals", "id") == (1, 1000)
    items = [collector_create("instance", f"vm-{n}", T0 + dt.timedelta(seconds=n))
             for n in range(3)]
    assert {r.status for r in ingest(factory, items, require_size_schema=False)} == {
        "stored"}
    with factory() as session:
        drawn = session.execute(sa.text("SELECT seq FROM events ORDER BY seq")).scalars().all()
    assert drawn == list(range(drawn[0], drawn[0] + 3))  # one block, numbered in item order
    migrations.downgrade(db_url, "0015_frozen_lines_late_facts")
    assert sequence_step(db_url) == 1
    assert sequence(db_url, "resource_intervals", "id") == (1, 1)
    engine = make_engine(db_url)  # a process started after the downgrade
    try:
        # Its insert of events (the fold reads columns of later migrations).
        later = {**collector_create("instance", "vm-later", T0), "timestamp": T0,
                 "received_at": T0}
        with make_sessionmaker(engine).begin() as session:
            assert list(writes.of(session).insert_events(session, [later])) == [
                later["event_id"]]
        with engine.connect() as conn:
            newest = conn.execute(sa.text("SELECT max(seq) FROM events")).scalar_one()
    finally:
        engine.dispose()
    assert newest > drawn[0] + 999  # past the whole block the batch drew
    migrations.upgrade(db_url)
    assert sequence_step(db_url) == 1000


def ingest_instances(factory: sessionmaker[Session], first: int, count: int) -> None:
    for start in range(first, first + count, 1000):
        items = [collector_create("instance", f"vm-{n}", T0 + dt.timedelta(seconds=n))
                 for n in range(start, min(first + count, start + 1000))]
        assert {r.status for r in ingest(factory, items, require_size_schema=False)} == {
            "stored"}


def walks(plan: list[str]) -> list[str]:
    """The scans of a plan on the fold's tables (or their partitions, migration 0032)
    that are not a probe of one key: a TID scan, a primary-key or unique lookup, the
    open intervals' lookup by id, or an index scan on ``resource_id = k.id``
    (``pg_lookup``'s probe of each id) are; anything else reads rows of other keys,
    an index scan without an index condition (the whole index) included."""
    found = []
    for n, line in enumerate(plan):
        scan = re.search(r"(\S+(?: \S+)*? Scan)(?: Backward)?(?: using (\S+))? on "
                         r"(events|current_resources|resource_intervals)"
                         r"(?:_default|_y\d{4}m\d{2})?\b", line)
        if scan is None or scan.group(1).endswith("Bitmap Heap Scan"):
            continue  # a bitmap heap scan reads what its index scan (checked) found
        kind, index = scan.group(1), scan.group(2) or ""
        detail = " ".join(plan[n + 1:n + 3])
        # The key alone, or the key and its history's span (``HistorySpan``).
        probe = re.search(r"Index Cond: \(+\(resource_id\)::text = \(k\.id\)::text\)",
                          detail) is not None
        looked_up = "Index Cond:" in detail
        by_id = index == "ix_resource_intervals_open_id" and "Index Cond: (id = ANY" in detail
        # An empty partition (no page: the planner knows it from the file's size,
        # statistics or none) costs nothing to scan whatever its plan.
        empty = "(cost=0.00..0.00 " in line
        if (kind.endswith("Tid Scan") or (index.startswith(("pk_", "uq_")) and looked_up)
                or probe or by_id or empty):
            continue
        found.append(line.strip())
    return found


def test_walks_tells_a_probe_from_a_walk() -> None:
    probe = ["->  Index Scan using ix_current_resources_resource_id on current_resources  (c)",
             "      Index Cond: ((resource_id)::text = (k.id)::text)",
             "->  Index Scan Backward using ix_resource_intervals_resource on resource_intervals",
             "      Index Cond: ((resource_id)::text = (k.id)::text)",
             "->  Tid Scan on resource_intervals  (cost=0.01..40.11 rows=10 width=6)",
             "->  Bitmap Heap Scan on events  (cost=8.45..30.77 rows=6 width=2404)",
             "      ->  Bitmap Index Scan on ix_events_resource_order  (cost=0.00..8.45)",
             "            Index Cond: ((resource_id)::text = (k.id)::text)"]
    probe.extend(["->  Index Scan using ix_resource_intervals_open_id on resource_intervals_default",
                  "      Index Cond: (id = ANY ('{1}'::bigint[]))"])
    walk = ["->  Index Scan using ix_current_resources_cloud_type_key on current_resources",
            "      Index Cond: (((cloud)::text = 'sim'::text) AND ((resource_type)::text = 'i'))",
            "      Filter: ((resource_id)::text = ANY ('{vm-0,vm-24}'::text[]))",
            "->  Index Scan Backward using ix_resource_intervals_cloud_start on resource_intervals",
            "      Index Cond: ((cloud)::text = 'sim'::text)",
            "->  Seq Scan on events  (cost=0.00..1.00 rows=1 width=4)",
            "->  Seq Scan on events_y2026m01 events_1  (cost=0.00..1.00 rows=1 width=4)",
            "->  Seq Scan on resource_intervals_default resource_intervals_2  (cost=0.00..1.00)",
            # The whole open intervals' index, each entry's row tested against the
            # batch's locators (an UPDATE joined to rows the planner took for 10).
            "->  Index Scan using ix_resource_intervals_open_id on resource_intervals_default t",
            "      Filter: ((\"end\" IS NULL) AND (ctid = ANY ('{\"(0,1)\"}'::tid[])))"]
    probe.append("->  Seq Scan on events_y2027m01 events_2  (cost=0.00..0.00 rows=1 width=2404)")
    probe.extend(["->  Index Scan using events_y2027m01_resource_id_idx on events_y2027m01 e_1",
                  "      Index Cond: (((resource_id)::text = (k.id)::text) AND "
                  "(\"timestamp\" >= k.first) AND (\"timestamp\" <= k.last))"])
    assert walks(probe) == []
    assert [line.split(" on ")[1].split()[0] for line in walks(walk)] == [
        "current_resources", "resource_intervals", "events", "events_y2026m01",
        "resource_intervals_default", "resource_intervals_default"]


@postgresql_only
@pytest.mark.parametrize("statistics", ["of a trickle", "none"])
def test_fold_statements_probe_each_key_whatever_the_statistics(
        factory: sessionmaker[Session], statistics: str) -> None:
    ingest_instances(factory, 0, 1)
    if statistics == "of a trickle":  # as autovacuum does for a trickle
        with factory.begin() as session:
            session.execute(sa.text("ANALYZE"))
    # No ANALYZE since: the statistics say 1 row, or there are none at all.
    ingest_instances(factory, 1, 24_000)
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
            assert walks(plan) == [], "\n".join(plan)


@postgresql_only
def test_no_statement_keeps_a_generic_plan_made_for_statistics_of_its_time(
        db_url: str) -> None:
    # psycopg prepares a statement on its fifth run on a connection and PostgreSQL may
    # then keep one generic plan for it: the fold's probes, planned while the open
    # intervals' partition was empty, kept a sequential scan of it per key.  One
    # pooled connection: every batch below runs on the same one.
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    factory = make_sessionmaker(engine)
    try:
        for start in range(8):  # a create and its delete per batch: nothing stays open
            at = T0 + dt.timedelta(minutes=start)
            gone = {**collector_create("instance", f"gone-{start}", at + dt.timedelta(seconds=1)),
                    "event_id": f"gone-{start}-delete",
                    "event_type": "compute.instance.delete.end"}
            results = ingest(factory, [collector_create("instance", f"gone-{start}", at), gone],
                             require_size_schema=False)
            assert {r.status for r in results} == {"stored"}
        ingest_instances(factory, 0, 3000)
        with factory() as session:
            prepared = session.execute(sa.text(
                "SELECT statement FROM pg_prepared_statements")).scalars().all()
        assert prepared == []
    finally:
        engine.dispose()


@postgresql_only
def test_an_ingest_transaction_compiles_nothing_and_leaves_the_pool_as_it_was(
        db_url: str) -> None:
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    factory = make_sessionmaker(engine)
    jit = sa.text("SHOW jit")
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda _c, _cur, statement, *_: statements.append(statement))
    try:
        with factory() as session:
            before = session.execute(jit).scalar_one()
        ingest_instances(factory, 0, 10)
        # Set before the first read of the transaction (the schemas' read).
        ingest_statements = statements[statements.index("SHOW jit") + 1:]
        assert "set_config('jit', 'off', true)" in ingest_statements[0]
        with factory() as session, session.begin():
            writes.of(session).begin_ingest(session)
            assert session.execute(jit).scalar_one() == "off"
        with factory() as session:  # the same connection, back from the pool
            assert session.execute(jit).scalar_one() == before
    finally:
        engine.dispose()
