"""Billing's write-seam operations answer on both backends: no caller branches on the
dialect or falls back (SQLite rates and freezes in Python, PostgreSQL set-based)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import frozen, periods, rating, statements, versions
from reporting.db import writes
from reporting.db.billing_models import ClosedStatement
from tests.functional.billing.history import PRICES, october, seed

NOW = dt.datetime(2026, 12, 15)


def test_subtotals_and_freezing_through_the_seam(session_factory: sessionmaker[Session]) -> None:
    with session_factory() as session:
        for document in PRICES:
            versions.add(session, "default", document, "test", NOW)
        session.commit()
    seed(session_factory, october())
    start, end = periods.parse("2026-10")
    with session_factory() as session:
        seam = writes.of(session)
        timeline = versions.timeline(session, "c1")
        subtotals = seam.project_subtotals(session, "c1", timeline, start, end, NOW, None, 10)
        assert subtotals == statements.python_subtotals(session, "c1", timeline, start, end,
                                                        NOW, None, 10)
        assert subtotals["p1"] == (Decimal("1.90"), 0) and subtotals["p-free"][0] == 0
        assert seam.project_totals(session, "c1", timeline, start, end, NOW, None, 10) == (
            subtotals, statements.tier_lines(session, "c1", timeline, start, end, NOW))
        totals, tier_lines = seam.freeze_lines(session, "c1", "2026-10", timeline, NOW)
        assert totals == {project: value for project, value in subtotals.items()}
        assert tier_lines == statements.tier_lines(session, "c1", timeline, start, end, NOW)
        row = session.get(ClosedStatement, ("c1", "2026-10", "p1"))
        assert row is not None
        assert [(line.resource_id, line.amount) for line in frozen.lines(session, row)] == [
            (line.resource_id, line.amount) for line in rating.rate_intervals(
                statements.intervals(session, "c1", start, end, "p1"), timeline, start, end,
                NOW)]
        session.rollback()
        assert session.execute(sa.select(sa.func.count()).select_from(ClosedStatement)
                               ).scalar() == 0
