"""Late facts across many closed periods (SQLite and PostgreSQL): every closed period's
late facts are found, closes in any order book them once, and frozen + booked +
pending adjustments stay the recomputed truth; the late facts are found through
``ix_events_cloud_month_seq``, one range per month."""

from __future__ import annotations

import collections
import datetime as dt
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import adjustments, closing, periods, statements, versions
from reporting.db import writes
from tests.functional.billing import truth
from tests.functional.billing.history import ACCEPT_ALL, PRICES, SMALL, event, seed

NOW = dt.datetime(2027, 6, 1)


def _create(rid: str, when: str, project: str = "p1") -> dict[str, Any]:
    return event("compute.instance.create.end", rid, when, project_id=project,
                 state="active", size=SMALL)


def _state(rid: str, when: str, state: str, project: str = "p1") -> dict[str, Any]:
    return event("compute.instance.update", rid, when, project_id=project, state=state)


def _reconciles(factory: sessionmaker[Session], target: str) -> dict[str, list[str]]:
    """frozen + booked + pending(target) == truth for every closed period; answers the
    pending adjustments' event ids per source period."""
    causes: dict[str, list[str]] = collections.defaultdict(list)
    with factory() as session:
        closed = statements.closed_periods(session, "c1")
        pending: dict[str, dict[str, Decimal]] = collections.defaultdict(
            lambda: collections.defaultdict(Decimal))
        for found in adjustments.pending(session, "c1", target, closed,
                                         versions.timeline(session, "c1"), NOW):
            pending[found.source_period][found.project_id] += found.amount
            causes[found.source_period].extend(found.event_ids)
        for period in closed:
            if adjustments.first_open_after(period, closed) != target:
                continue
            frozen = {p: s for p, (s, _b) in truth.frozen(session, "c1", period).items()}
            booked = truth.booked(session, "c1", period)
            whole = truth.recomputed(session, "c1", period, NOW)
            projects = set(frozen) | set(booked) | set(whole) | set(pending[period])
            assert truth.nonzero({
                p: frozen.get(p, Decimal(0)) + booked.get(p, Decimal(0)) + pending[period][p]
                for p in projects}) == truth.nonzero(whole), period
    return causes


def test_late_facts_of_many_closed_periods(session_factory: sessionmaker[Session]) -> None:
    with session_factory() as session:
        for document in PRICES:
            versions.add(session, "default", document, "test", NOW)
        session.commit()
    months = ["2026-09", "2026-10", "2026-11", "2026-12", "2027-01", "2027-02"]
    seed(session_factory, [_create(f"r{n}", f"2026-09-0{1 + n}T00:00:00Z", f"p{n % 2}")
                           for n in range(len(months))])
    late_ids: list[str] = []
    # Closed out of order: December first, then September, November while October is
    # open (its close books nothing of September's), October, then January.
    for order, period in enumerate(["2026-12", "2026-09", "2026-11", "2026-10", "2027-01"]):
        closing.close(session_factory, "c1", period, "test", NOW, ACCEPT_ALL)
        # a late power-off and a late move dated in every closed month so far
        late = []
        with session_factory() as session:
            closed = sorted(statements.closed_periods(session, "c1"))
        for number, name in enumerate(closed):
            start, _end = periods.parse(name)
            day = f"{name}-{20 + order}T{number:02d}:00:00Z"
            late.append(_state(f"r{(number + order) % len(months)}", day, "shutoff"))
            late.append(event("compute.instance.update", "r0", day, project_id="p9"))
        seed(session_factory, late)
        late_ids += [item["event_id"] for item in late]
        with session_factory() as session:
            target = adjustments.first_open_after(closed[0], statements.closed_periods(
                session, "c1"))
        causes = _reconciles(session_factory, target)
        # every cause is a late event, none was booked already
        assert {c for found in causes.values() for c in found} <= set(late_ids)
    # The late facts of all five closed months together: one range per month.
    with session_factory() as session:
        closed = statements.closed_periods(session, "c1")
        latest = max(row.cutoff_seq for row in closed.values())
        found = writes.of(session).late_events(session, "c1", dt.datetime(2027, 2, 1), 0)
        assert len(found) == session.execute(sa.text(
            "SELECT count(*) FROM events WHERE cloud = 'c1' "
            "AND timestamp < '2027-02-01'")).scalar()
        # after the last close: exactly the late facts received since (dated before the
        # open month)
        since = writes.of(session).late_events(session, "c1", dt.datetime(2027, 2, 1), latest)
        assert sorted(row.event_id for row in since) == sorted(
            item["event_id"] for item in late)


def test_the_late_facts_query_uses_the_month_index(
    session_factory: sessionmaker[Session], backend: str,
) -> None:
    seed(session_factory, [_create(f"r{n}", f"2026-{1 + n % 12:02d}-03T00:00:00Z")
                           for n in range(60)])
    plans: list[str] = []

    def explain(conn: Any, cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        if "months" in statement:  # the late-facts statement, explained as it is run
            prefix = "EXPLAIN QUERY PLAN " if backend == "sqlite" else "EXPLAIN "
            cursor.execute(prefix + statement, parameters)
            plans.append("\n".join(str(row[-1]) for row in cursor.fetchall()))

    with session_factory() as session:
        session.execute(sa.text("ANALYZE"))
        engine = session.get_bind()
        sa.event.listen(engine, "before_cursor_execute", explain)
        try:
            writes.of(session).late_events(session, "c1", dt.datetime(2026, 12, 1), 10)
        finally:
            sa.event.remove(engine, "before_cursor_execute", explain)
        # On PostgreSQL the index is partitioned with the events (migration 0032): a plan
        # names the index of each partition it scans.
        names = {"ix_events_cloud_month_seq"} | (set() if backend == "sqlite" else set(
            session.execute(sa.text(
                "SELECT CAST(inhrelid AS regclass)::text FROM pg_inherits "
                "WHERE inhparent = CAST('ix_events_cloud_month_seq' AS regclass)")).scalars()))
    assert plans and any(name.split(".")[-1] in plans[0] for name in names), plans
