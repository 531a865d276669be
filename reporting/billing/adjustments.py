"""Adjustments: what later facts changed in closed periods.

A closed period Q froze, per project and resource, the amount its statement billed
(``closed_resource_amounts``) at its ingestion cutoff.  A fact received after that
cutoff and dated before Q's end may change what Q computes now.  Per project and
resource: ``amount = recomputed(Q) - frozen(Q) - adjustments already booked for Q``,
with the ids of the events received after the last booking that caused it.  It
belongs on the statement of the first open period after Q; that period's close books
it (``billing_adjustments``), and a still later fact makes the next adjustment.

Only resources with such late events can differ (the fold is causal in time and
closed periods' price versions never change), so this costs the late facts, not the
month: there is no lookback limit.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import money, periods, rating
from reporting.billing.pricelist import PriceVersion
from reporting.billing.statements import Adjustment, ResourceRef, intervals_of
from reporting.db.billing_models import BillingPeriod, BookedAdjustment, ClosedResourceAmount
from reporting.db.models import Event

_CHUNK = 400
_ZERO = Decimal("0.00")


def first_open_after(period: str, closed: Mapping[str, object]) -> str:
    """The first period after ``period`` that is not closed."""
    following = periods.following(period)
    while following in closed:
        following = periods.following(following)
    return following


def sources(target: str, closed: Mapping[str, BillingPeriod]) -> list[BillingPeriod]:
    """The closed periods whose adjustments belong on ``target``'s statement."""
    return [
        closed[name] for name in sorted(closed)
        if name < target and first_open_after(name, closed) == target
    ]


def _late_events(session: Session, cloud: str, source: BillingPeriod
                 ) -> dict[ResourceRef, list[tuple[int, str]]]:
    """Events received after ``source``'s cutoff and dated before its end."""
    _start, end = periods.parse(source.period)
    query = (
        sa.select(Event.resource_type, Event.resource_id, Event.seq, Event.event_id)
        .where(Event.cloud == cloud, Event.seq > source.cutoff_seq, Event.timestamp < end)
        .order_by(Event.seq)
    )
    found: dict[ResourceRef, list[tuple[int, str]]] = collections.defaultdict(list)
    for row in session.execute(query):
        found[(row.resource_type, row.resource_id)].append((row.seq, row.event_id))
    return found


def _by_resource(session: Session, model: Any, cloud: str, source: str, column: str,
                 refs: list[ResourceRef]) -> list[Any]:
    rows: list[Any] = []
    for index in range(0, len(refs), _CHUNK):
        chunk = refs[index:index + _CHUNK]
        query: Any = sa.select(model).where(
            model.cloud == cloud,
            getattr(model, column) == source,
            sa.tuple_(model.resource_type, model.resource_id).in_(chunk),
        )
        rows.extend(session.execute(query).scalars())
    return rows


def for_source(
    session: Session, cloud: str, source: BillingPeriod, versions: list[PriceVersion],
    now: dt.datetime, project_id: str | None = None,
) -> list[Adjustment]:
    """The adjustments closed period ``source`` needs now (of one project, if given)."""
    late = _late_events(session, cloud, source)
    if not late:
        return []
    refs = sorted(late)
    start, end = periods.parse(source.period)
    recomputed: dict[tuple[str, ResourceRef], Decimal] = collections.defaultdict(lambda: _ZERO)
    for line in rating.rate_intervals(intervals_of(session, cloud, start, end, refs),
                                      versions, start, end, now):
        if line.amount is not None:
            key = (line.project_id, (line.resource_type, line.resource_id))
            recomputed[key] = money.add(recomputed[key], line.amount)
    base: dict[tuple[str, ResourceRef], Decimal] = collections.defaultdict(lambda: _ZERO)
    for frozen in _by_resource(session, ClosedResourceAmount, cloud, source.period, "period",
                               refs):
        key = (frozen.project_id, (frozen.resource_type, frozen.resource_id))
        base[key] = money.add(base[key], frozen.amount)
    booked_until: dict[ResourceRef, int] = {}
    for booked in _by_resource(session, BookedAdjustment, cloud, source.period,
                               "source_period", refs):
        ref = (booked.resource_type, booked.resource_id)
        base[(booked.project_id, ref)] = money.add(base[(booked.project_id, ref)], booked.amount)
        booked_until[ref] = max(booked_until.get(ref, 0), booked.cutoff_seq)
    result: list[Adjustment] = []
    for project, ref in sorted(set(recomputed) | set(base)):
        if project_id is not None and project != project_id:
            continue
        amount = money.subtract(recomputed[(project, ref)], base[(project, ref)])
        if amount == 0:
            continue
        since = booked_until.get(ref, source.cutoff_seq)
        causes = [event_id for seq, event_id in late[ref] if seq > since] or [
            event_id for _seq, event_id in late[ref]
        ]
        result.append(Adjustment(source.period, project, ref[0], ref[1], amount, causes))
    return result


def pending(
    session: Session, cloud: str, target: str, closed: Mapping[str, BillingPeriod],
    versions: list[PriceVersion], now: dt.datetime, project_id: str | None = None,
) -> list[Adjustment]:
    """Every adjustment the statement of open period ``target`` carries now."""
    found: list[Adjustment] = []
    for source in sources(target, closed):
        found.extend(for_source(session, cloud, source, versions, now, project_id))
    return found
