"""A usage page is two statements (its groups, then their sums); on PostgreSQL each
sees what was committed when it started, so a resource ingested between them must not
break the page (it was a KeyError, a 500, under bench/read_load.py's probes)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.engine import make_engine, make_sessionmaker
from reporting.ingest import ingest
from reporting.queries import usage_store
from reporting.queries.usage import UsageFilter

pytestmark = [pytest.mark.postgres]

SIZE = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
START = dt.datetime(2026, 10, 1)
END = dt.datetime(2026, 11, 1)


def _create(resource_id: str) -> dict[str, Any]:
    return {
        "event_id": f"ev-{resource_id}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "c1", "resource_type": "instance",
        "resource_id": resource_id, "project_id": "p1",
        "timestamp": "2026-10-02T00:00:00Z", "source": "collector",
        "payload": {"state": "active", "size": SIZE},
    }


@pytest.fixture
def factory(pg_migrated_database: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(pg_migrated_database)
    try:
        yield make_sessionmaker(engine)
    finally:
        engine.dispose()


def test_a_resource_ingested_between_the_pages_two_statements(
        factory: sessionmaker[Session]) -> None:
    stored = ingest(factory, [_create("vm-a"), _create("vm-c")], require_size_schema=False)
    assert [r.status for r in stored] == ["stored", "stored"]
    engine = factory.kw["bind"]
    sums_started = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def between(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # The sums statement is about to start: vm-b, between the page's first and
        # last group, is committed by another session after the groups were read.
        if "sum(" in statement.lower() and not sums_started:
            sums_started.append(statement)
            assert ingest(factory, [_create("vm-b")], require_size_schema=False)[0].status \
                == "stored"

    try:
        with factory() as session:
            groups, counts, more = usage_store.usage_page(
                session, UsageFilter(), "resource", START, END, None, 100)
    finally:
        sa.event.remove(engine, "before_cursor_execute", between)
    assert sums_started
    keys = [group.key[3] for group in groups]
    # The page answers the groups its first statement saw; vm-b is in a later listing.
    assert keys == ["vm-a", "vm-c"] and not more
    assert set(counts.values()) == {1}
