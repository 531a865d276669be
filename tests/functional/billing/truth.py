"""The truth a closed period must keep: statements recomputed from the stored history
with the pure fold and rating (no projection tables involved)."""

from __future__ import annotations

import collections
import datetime as dt
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting import fold
from reporting.billing import periods, rating, tiers
from reporting.billing.frozen import text as frozen_text
from reporting.billing.versions import timeline
from reporting.db.billing_models import BookedAdjustment, ClosedStatement
from reporting.db.models import Event


def recomputed(session: Session, cloud: str, period: str, now: dt.datetime,
               max_seq: int | None = None) -> dict[str, Decimal]:
    """Subtotal per project of ``period`` from the events (received up to ``max_seq``)."""
    query = sa.select(Event).where(Event.cloud == cloud)
    if max_seq is not None:
        query = query.where(Event.seq <= max_seq)
    histories: dict[tuple[str, str], list[fold.FoldEvent]] = collections.defaultdict(list)
    for row in session.execute(query).scalars():
        histories[(row.resource_type, row.resource_id)].append(fold.FoldEvent(
            row.event_id, row.event_type, row.project_id, row.timestamp, row.payload, row.seq))
    items = [
        rating.RatedInterval(rtype, rid, interval)
        for (rtype, rid), events in histories.items()
        for interval in fold.fold(events)[1]
    ]
    start, end = periods.parse(period)
    totals: dict[str, Decimal] = collections.defaultdict(lambda: Decimal("0.00"))
    prices = timeline(session, cloud)
    lines = rating.rate_intervals(items, prices, start, end, now)
    for line in lines:
        totals[line.project_id] += line.amount or Decimal(0)
    for tier in tiers.tier_lines(lines, prices):  # a project's period quantity's tiers
        totals[tier.project_id] += tier.amount
    return {project: total for project, total in totals.items()}


def frozen(session: Session, cloud: str, period: str) -> dict[str, tuple[Decimal, str]]:
    """(subtotal, the text it is answered as) per project of a closed period."""
    query = sa.select(ClosedStatement).where(ClosedStatement.cloud == cloud,
                                             ClosedStatement.period == period)
    return {row.project_id: (row.subtotal, frozen_text(session, row))
            for row in session.execute(query).scalars()}


def booked(session: Session, cloud: str, source: str) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = collections.defaultdict(lambda: Decimal("0.00"))
    query = sa.select(BookedAdjustment).where(BookedAdjustment.cloud == cloud,
                                              BookedAdjustment.source_period == source)
    for row in session.execute(query).scalars():
        totals[row.project_id] += row.amount
    return totals


def nonzero(totals: dict[str, Decimal]) -> dict[str, Decimal]:
    return {project: amount for project, amount in totals.items() if amount != 0}
