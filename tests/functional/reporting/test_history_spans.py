"""A resource's reads by key name its span (``current_resources.first_event_at`` to
``last_event_at``, migration 0033): a late event's replay, its history and its
lifecycle read the same rows as unbounded reads, on a history of many months, and on
PostgreSQL (monthly partitions, migration 0032) only the partitions of the months the
resource's history covers.

Runs on SQLite and PostgreSQL (the ``db_url`` fixture); the plans on PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting import fold
from reporting.db import partitions, writes
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.db.models import CurrentResource, Event, ResourceInterval
from reporting.db.writes.base import HistorySpan
from reporting.ingest import ingest
from reporting.queries import resources

# Years away from the clock: no partition the migration made ahead holds these months.
JANUARY = dt.datetime(2032, 1, 1)
MONTHS = 12
KINDS = {"create": "compute.instance.create.end", "resize": "compute.instance.resize.confirm.end",
         "delete": "compute.instance.delete.end"}


def month(index: int) -> dt.datetime:
    return dt.datetime(JANUARY.year + index // 12, index % 12 + 1, 1)


def key(resource_id: str) -> tuple[str, str, str, str]:
    return ("openstack", "c1", "instance", resource_id)


def item(resource_id: str, event_id: str, kind: str, at: dt.datetime, vcpus: int
         ) -> dict[str, Any]:
    return {"event_id": event_id, "event_type": KINDS[kind], "platform": "openstack",
            "cloud": "c1", "resource_type": "instance", "resource_id": resource_id,
            "project_id": "p1", "timestamp": at.isoformat() + "Z", "source": "collector",
            "payload": {"state": "active", "size": {"vcpus": vcpus, "ram_gb": 2 * vcpus,
                                                    "disk_gb": 10, "flavor": f"f{vcpus}"}}}


def lifetime(resource_id: str, first: int, last: int | None) -> list[dict[str, Any]]:
    """Created on the 3rd of month ``first``, resized on the 17th of it and on the 3rd of
    every month up to ``last`` (None: the last month, still live), deleted then."""
    events = [item(resource_id, f"{resource_id}-c", "create", month(first) + dt.timedelta(days=2), 1),
              item(resource_id, f"{resource_id}-r", "resize", month(first) + dt.timedelta(days=16), 2)]
    for index in range(first + 1, (MONTHS - 1 if last is None else last) + 1):
        events.append(item(resource_id, f"{resource_id}-r{index}", "resize",
                           month(index) + dt.timedelta(days=2), 1 + index % 4))
    if last is not None:
        events.append(item(resource_id, f"{resource_id}-d", "delete",
                           month(last) + dt.timedelta(days=20), 1))
    return events


# vm-long's events span months 2 to 9; vm-live's go on to the last month, still live;
# every month holds some resource's events, so every month has its partitions.
HISTORY = {"vm-long": lifetime("vm-long", 2, 9), "vm-live": lifetime("vm-live", 8, None),
           **{f"vm-{m}": lifetime(f"vm-{m}", m, m) for m in range(MONTHS)}}


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(db_url)
    partitions.ensure(engine, 0, month(MONTHS - 1), since=JANUARY)
    yield engine
    engine.dispose()


@pytest.fixture
def factory(engine: sa.Engine) -> sessionmaker[Session]:
    factory = make_sessionmaker(engine)
    for events in HISTORY.values():
        assert store(factory, events) == ["stored"] * len(events)
    return factory


def store(factory: sessionmaker[Session], items: list[dict[str, Any]]) -> list[str]:
    return [r.status for r in ingest(factory, items, require_size_schema=False)]


def unbounded_events(session: Session, resource_id: str) -> list[Event]:
    return list(session.scalars(sa.select(Event).where(Event.resource_id == resource_id)
                                .order_by(Event.timestamp, Event.seq)))


def unbounded_intervals(session: Session, resource_id: str) -> list[ResourceInterval]:
    return list(session.scalars(
        sa.select(ResourceInterval).where(ResourceInterval.resource_id == resource_id)
        .order_by(ResourceInterval.start, ResourceInterval.id)))


def interval_tuple(i: Any) -> tuple[Any, ...]:
    return (i.start, i.end, i.project_id, i.state, i.size, i.event_id)


def assert_reads_agree(factory: sessionmaker[Session], resource_id: str) -> None:
    """The projection is the pure fold of the resource's stored events, its row's span
    covers them, and every bounded read gives the rows of the unbounded one."""
    with factory() as session:
        events = unbounded_events(session, resource_id)
        state, lifecycle = fold.fold(
            fold.FoldEvent(e.event_id, e.event_type, e.project_id, e.timestamp, e.payload, e.seq)
            for e in events)
        row = session.get(CurrentResource, key(resource_id))
        assert row is not None and state is not None
        assert row.first_event_at == events[0].timestamp == state.first_event_at
        assert row.last_event_at == events[-1].timestamp == state.last_event_at
        assert (row.project_id, row.size, row.live, row.created_at, row.deleted_at,
                row.last_event_id) == (state.project_id, state.size, state.live,
                                       state.created_at, state.deleted_at, state.last_event_id)
        intervals = unbounded_intervals(session, resource_id)
        assert [interval_tuple(i) for i in intervals] == [interval_tuple(i) for i in lifecycle]
        # The API's reads: the lifecycle, and the history in pages of 3.
        assert resources.resource_lifecycle(session, key(resource_id)) == intervals
        paged: list[Event] = []
        while True:
            after = None if not paged else (paged[-1].timestamp, paged[-1].seq)
            page = resources.resource_events(session, key(resource_id), after, 3)
            paged.extend(page)
            if len(page) < 3:
                break
        assert paged == events
        # The fold's read of the history within the span, as a late event makes it.
        seam = writes.of(session)
        span = HistorySpan(row.first_event_at, row.last_event_at)
        within = seam.histories(session, [key(resource_id)], {key(resource_id): span})
        assert within == seam.histories(session, [key(resource_id)])
        assert [e.event_id for e in within[key(resource_id)]] == [e.event_id for e in events]


def test_late_events_anywhere_in_a_history_of_many_months_fold_as_a_replay_of_all(
        factory: sessionmaker[Session]) -> None:
    for resource_id in HISTORY:
        assert_reads_agree(factory, resource_id)
    # Late events: in the middle of vm-long's months, before everything the history
    # holds (a month without its partition on PostgreSQL: the DEFAULT), and one the
    # same batch carries for two resources, vm-live's after its newest event.
    before_all = JANUARY - dt.timedelta(days=40)
    batches = [
        [item("vm-long", "late-mid", "resize", month(5) + dt.timedelta(days=9), 3)],
        [item("vm-long", "late-first", "resize", before_all, 4)],
        [item("vm-3", "late-3", "resize", month(3) + dt.timedelta(days=9), 2),
         item("vm-live", "late-live", "resize", month(9) + dt.timedelta(days=1), 3),
         item("vm-live", "after-live", "resize", month(MONTHS - 1) + dt.timedelta(days=9), 4)],
        [item("vm-long", "recreated", "create", month(10), 2)],  # after its delete
    ]
    for batch in batches:
        assert store(factory, batch) == ["stored"] * len(batch)
        for resource_id in {i["resource_id"] for i in batch}:
            assert_reads_agree(factory, resource_id)
    with factory() as session:
        row = session.get(CurrentResource, key("vm-long"))
        assert row is not None and row.first_event_at == before_all and row.live


def test_a_row_without_first_event_at_reads_unbounded_below(
        factory: sessionmaker[Session]) -> None:
    """A row migration 0033 found no events for (a pruned history) has no first event:
    its reads are bounded above only, and a replay learns the first event again."""
    with factory.begin() as session:
        session.execute(sa.update(CurrentResource).where(CurrentResource.resource_id == "vm-long")
                        .values(first_event_at=None))
    with factory() as session:
        assert len(resources.resource_lifecycle(session, key("vm-long"))) == len(
            unbounded_intervals(session, "vm-long"))
    late = item("vm-long", "late-mid", "resize", month(4) + dt.timedelta(days=9), 3)
    assert store(factory, [late]) == ["stored"]
    assert_reads_agree(factory, "vm-long")


def test_a_span_that_widened_since_it_was_read_is_read_again(
        factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch) -> None:
    """The span read first may be older than the read's snapshot (a fold committed in
    between widened it): the read, which reads the row's span again, runs again."""
    with factory() as session:
        intervals = [interval_tuple(i) for i in unbounded_intervals(session, "vm-long")]
        events = [e.event_id for e in unbounded_events(session, "vm-long")]
    span_of = resources._span

    def stale(session: Session, key: tuple[str, str, str, str]) -> Any:
        first, last = span_of(session, key)
        return first + dt.timedelta(days=40), last - dt.timedelta(days=40)

    monkeypatch.setattr(resources, "_span", stale)
    with factory() as session:
        assert [interval_tuple(i) for i in resources.resource_lifecycle(
            session, key("vm-long"))] == intervals
        assert [e.event_id for e in resources.resource_events(
            session, key("vm-long"), None, 100)] == events


# --- the plans, on PostgreSQL --------------------------------------------------------------

postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
_SCANNED = re.compile(r" on ((?:events|resource_intervals)_(?:y\d{4}m\d{2}|default))\b")


def partitions_planned(engine: sa.Engine, run: Callable[[], Any]) -> set[str]:
    """The history partitions the plans of every statement ``run()`` executes name
    (EXPLAIN of each, with its parameters, afterwards: plan-time pruning)."""
    executed: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
               many: bool) -> None:
        if not many:
            executed.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        run()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    found: set[str] = set()
    with engine.connect() as conn:
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        for statement, parameters in executed:
            if statement.lstrip().upper().startswith(("SELECT", "WITH", "INSERT", "UPDATE",
                                                      "DELETE")):
                cursor.execute(f"EXPLAIN (COSTS OFF) {statement}", parameters)
                found.update(_SCANNED.findall("\n".join(row[0] for row in cursor.fetchall())))
        conn.rollback()
    return found


def months_of(table: str, *indexes: int) -> set[str]:
    return {f"{table}_y{month(i):%Y}m{month(i):%m}" for i in indexes}


@postgresql_only
def test_a_late_events_fold_and_the_lifecycle_plan_only_the_resources_months(
        engine: sa.Engine, factory: sessionmaker[Session]) -> None:
    with engine.connect() as conn:
        assert len(partitions.months_of(conn, "events")) >= MONTHS
    late = item("vm-long", "late-mid", "resize", month(5) + dt.timedelta(days=9), 3)
    folded = partitions_planned(engine, lambda: store(factory, [late]))
    # vm-long's events and intervals lie in months 2 to 9; its open intervals (none
    # left: deleted) would be in the DEFAULT partition of the intervals.
    assert folded == (months_of("events", *range(2, 10))
                      | months_of("resource_intervals", *range(2, 10))
                      | {"resource_intervals_default"})
    assert_reads_agree(factory, "vm-long")

    def read() -> None:
        with factory() as session:
            resources.resource_lifecycle(session, key("vm-3"))
            resources.resource_events(session, key("vm-3"), None, 100)

    assert partitions_planned(engine, read) == (months_of("events", 3)
                                                | months_of("resource_intervals", 3)
                                                | {"resource_intervals_default"})
