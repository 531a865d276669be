"""Pages of the current inventory: every filter and marker gives the rows after the
marker in key order (both backends), and on PostgreSQL a page of one type starts
its index scan at the marker instead of walking the type's rows up to it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.engine import make_engine, make_sessionmaker
from reporting.db.models import CurrentResource
from reporting.queries import resources
from reporting.queries.resources import InventoryFilter

AT = dt.datetime(2031, 5, 1)
CLOUDS = ("c1", "c2")
TYPES = ("instance", "volume")
PLATFORMS = ("openstack", "other")


def row(platform: str, cloud: str, resource_type: str, resource_id: str,
        live: bool) -> dict[str, object]:
    return {"platform": platform, "cloud": cloud, "resource_type": resource_type,
            "resource_id": resource_id, "project_id": f"p-{resource_id[-1]}", "state": "active",
            "size": None, "live": live, "created_at": AT, "deleted_at": None if live else AT,
            "last_event_at": AT, "last_event_id": f"e-{resource_id}", "last_event_seq": 1,
            "first_event_at": AT}


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    rows = [row(p, c, t, f"r{n:02d}", n % 3 != 0)
            for p, c, t in itertools.product(PLATFORMS, CLOUDS, TYPES) for n in range(12)]
    with engine.begin() as conn:
        conn.execute(sa.insert(CurrentResource), rows)
    yield make_sessionmaker(engine)
    engine.dispose()


FILTERS = [InventoryFilter(), InventoryFilter(cloud="c1"),
           InventoryFilter(cloud="c2", resource_type="volume"),
           InventoryFilter(resource_type="instance"),
           InventoryFilter(cloud="c1", resource_type="instance", live=True),
           InventoryFilter(cloud="c1", resource_type="instance", project_id="p-1")]
# Markers of the filter's own cloud and type, of others (a client's own marker), and
# between two platforms.
MARKERS = [("openstack", "c1", "instance", "r05"), ("openstack", "c2", "volume", "r11"),
           ("other", "c1", "instance", "r00"), ("openstack", "c1", "volume", "r03"),
           ("openstack", "c3", "instance", "r07"), ("openstack", "c0", "volume", "r07"),
           ("aaa", "c1", "instance", "zz"), ("zzz", "c1", "instance", "")]


def expected(session: Session, filters: InventoryFilter,
             after: tuple[str, str, str, str]) -> list[tuple[str, str, str, str]]:
    everything = [r.key for r in resources.current_inventory(session, filters, None, 1000)]
    return [key for key in everything if key > after]


@pytest.mark.parametrize("filters", FILTERS)
def test_a_page_after_any_marker_is_the_keys_after_it(
        factory: sessionmaker[Session], filters: InventoryFilter) -> None:
    with factory() as session:
        everything = [r.key for r in resources.current_inventory(session, filters, None, 1000)]
        assert everything == sorted(everything) and everything
        for after in MARKERS + everything[::5]:
            page = resources.current_inventory(session, filters, after, 7)
            assert [r.key for r in page] == expected(session, filters, after)[:7], after


def test_paging_with_the_last_rows_key_lists_every_row_once(
        factory: sessionmaker[Session]) -> None:
    filters = InventoryFilter(cloud="c2", resource_type="instance")
    with factory() as session:
        seen: list[tuple[str, str, str, str]] = []
        after = None
        while page := resources.current_inventory(session, filters, after, 5):
            seen.extend(r.key for r in page)
            after = page[-1].key
        assert seen == [(p, "c2", "instance", f"r{n:02d}") for p in PLATFORMS for n in range(12)]


# --- the plan, on PostgreSQL ---------------------------------------------------------------

TYPE_ROWS = 30_000


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_page_of_one_type_reads_the_pages_after_its_marker_only(db_url: str) -> None:
    """30,000 rows of one type; a page of 10 after the marker in their middle. Walking
    the type's index entries up to the marker read 93 buffers; starting the
    scan at the marker reads the index's depth and the page's rows."""
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO current_resources (platform, cloud, resource_type, resource_id, "
                "project_id, live, last_event_at, last_event_id, last_event_seq) "
                "SELECT 'openstack', 'c1', 'instance', 'vm-' || lpad(n::text, 6, '0'), 'p', "
                "true, now(), 'e' || n, n FROM generate_series(1, :n) AS n"), {"n": TYPE_ROWS})
            conn.execute(sa.text("ANALYZE current_resources"))
        statements: list[tuple[str, object]] = []

        def record(_conn: object, _cursor: object, statement: str, parameters: object,
                   _context: object, _many: bool) -> None:
            statements.append((statement, parameters))

        factory = make_sessionmaker(engine)
        sa.event.listen(engine, "before_cursor_execute", record)
        with factory() as session:
            page = resources.current_inventory(
                session, InventoryFilter(cloud="c1", resource_type="instance"),
                ("openstack", "c1", "instance", f"vm-{TYPE_ROWS // 2:06d}"), 10)
        sa.event.remove(engine, "before_cursor_execute", record)
        assert [r.resource_id for r in page] == [
            f"vm-{n:06d}" for n in range(TYPE_ROWS // 2 + 1, TYPE_ROWS // 2 + 11)]
        (statement, parameters), = statements
        with engine.connect() as conn:
            cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}", parameters)
            plan = cursor.fetchone()[0]
            conn.rollback()
        if isinstance(plan, str):
            plan = json.loads(plan)
        top = plan[0]["Plan"]
        buffers = top["Shared Hit Blocks"] + top["Shared Read Blocks"]
        assert buffers < 25, json.dumps(plan, indent=1)
    finally:
        engine.dispose()
