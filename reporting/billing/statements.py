"""Statements of one cloud, project and period, computed from the lifecycle intervals.

An open period's statement is computed on request (``provisional``); a closed one is
the text frozen by its close (``reporting.billing.closing``), answered as stored.
Both carry the adjustments of earlier closed periods (``reporting.billing.adjustments``).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
from collections.abc import Collection, Iterable, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import currencies, money, periods, rating, tiers
from reporting.billing.pricelist import PriceVersion
from reporting.db.billing_models import BillingPeriod
from reporting.db.models import ResourceInterval
from reporting.fold import Interval

ResourceRef = tuple[str, str]  # (resource_type, resource_id)
_CHUNK = 400
# Plain rows, not ORM entities: a close reads every interval of a month.
_COLUMNS = (ResourceInterval.resource_type, ResourceInterval.resource_id,
            ResourceInterval.start, ResourceInterval.end, ResourceInterval.project_id,
            ResourceInterval.state, ResourceInterval.size, ResourceInterval.event_id)


@dataclasses.dataclass(frozen=True)
class Adjustment:
    """A correction of closed period ``source_period`` for one resource of a project."""

    source_period: str
    project_id: str
    resource_type: str
    resource_id: str
    amount: Decimal
    event_ids: list[str]

    def as_dict(self, places: int = money.MINOR_PLACES) -> dict[str, Any]:
        return {
            "period": self.source_period,
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "amount": money.money(self.amount, places),
            "event_ids": self.event_ids,
        }


def closed_periods(session: Session, cloud: str) -> dict[str, BillingPeriod]:
    query = sa.select(BillingPeriod).where(BillingPeriod.cloud == cloud)
    return {row.period: row for row in session.execute(query).scalars()}


def _overlapping(start: dt.datetime, end: dt.datetime) -> list[sa.ColumnElement[bool]]:
    model = ResourceInterval
    return [model.start < end, sa.or_(model.end.is_(None), model.end > start)]


def _rated(rows: Iterable[Any]) -> list[rating.RatedInterval]:
    return [
        rating.RatedInterval(
            row.resource_type, row.resource_id,
            Interval(row.start, row.end, row.project_id, row.state, row.size, row.event_id),
        )
        for row in rows
    ]


def intervals(
    session: Session, cloud: str, start: dt.datetime, end: dt.datetime,
    project_id: str | None = None, projects: tuple[str, str] | None = None,
    types: Collection[str] | None = None,
) -> list[rating.RatedInterval]:
    """The intervals of ``cloud`` overlapping ``[start, end)``, of one project or of the
    projects in the range ``projects`` (first, last) if given, of ``types`` only if
    given."""
    model = ResourceInterval
    query = sa.select(*_COLUMNS).where(model.cloud == cloud, *_overlapping(start, end))
    if project_id is not None:
        query = query.where(model.project_id == project_id)
    if projects is not None:
        query = query.where(model.project_id >= projects[0], model.project_id <= projects[1])
    if types is not None:
        query = query.where(model.resource_type.in_(sorted(types)))
    return _rated(session.execute(query))


def intervals_of(
    session: Session, cloud: str, start: dt.datetime, end: dt.datetime,
    resources: Sequence[tuple[str, str, str]],
) -> list[rating.RatedInterval]:
    """The intervals overlapping ``[start, end)`` of the given resources, each
    ``(platform, resource_type, resource_id)`` (found by ``ix_resource_intervals_resource``)."""
    model = ResourceInterval
    found: list[rating.RatedInterval] = []
    for index in range(0, len(resources), _CHUNK):
        chunk = list(resources[index:index + _CHUNK])
        query = sa.select(*_COLUMNS).where(
            model.cloud == cloud, *_overlapping(start, end),
            sa.tuple_(model.platform, model.resource_type, model.resource_id).in_(chunk),
        )
        found.extend(_rated(session.execute(query)))
    return found


def python_subtotals(session: Session, cloud: str, versions: list[PriceVersion],
                     start: dt.datetime, end: dt.datetime, now: dt.datetime,
                     after: str | None, limit: int) -> dict[str, tuple[Decimal, int]]:
    """Subtotal and unrated lines of the first ``limit`` projects after ``after``, by
    the pure rating (the write seam's ``project_subtotals`` on SQLite; PostgreSQL runs
    ``sql_rating``, and tests keep the two equal)."""
    model = ResourceInterval
    query = (
        sa.select(model.project_id).distinct()
        .where(model.cloud == cloud, *_overlapping(start, min(end, now)))
        .order_by(model.project_id).limit(limit)
    )
    if after is not None:
        query = query.where(model.project_id > after)
    projects = list(session.execute(query).scalars())
    if not projects:
        return {}
    by_project: dict[str, list[rating.Line]] = collections.defaultdict(list)
    rows = intervals(session, cloud, start, min(end, now), projects=(projects[0], projects[-1]))
    for line in rating.rate_intervals(rows, versions, start, end, now):
        by_project[line.project_id].append(line)
    return {
        project: (rating.subtotal(lines), sum(1 for x in lines if x.unrated is not None))
        for project, lines in by_project.items()
    }


@dataclasses.dataclass(frozen=True)
class ProjectLines:
    """One project's lines of a period as its statement answers them: their texts in
    statement order, their subtotal and unrated count, and its tier lines."""

    texts: list[str]
    subtotal: Decimal
    unrated: int
    tier_lines: list[tiers.TierLine]


def python_project_lines(session: Session, cloud: str, project_id: str,
                         versions: list[PriceVersion], start: dt.datetime, end: dt.datetime,
                         now: dt.datetime) -> ProjectLines:
    """``project_id``'s lines of the period by the pure rating (the write seam's
    ``project_lines`` on SQLite; PostgreSQL runs ``sql_rating.project_lines``, and
    tests keep the two equal)."""
    lines = rating.rate_intervals(intervals(session, cloud, start, min(end, now), project_id),
                                  versions, start, end, now)
    return ProjectLines([text(line.as_dict()) for line in lines], rating.subtotal(lines),
                        sum(1 for line in lines if line.unrated is not None),
                        tiers.tier_lines(lines, versions))


def tiered_lines(session: Session, cloud: str, versions: list[PriceVersion],
                 start: dt.datetime, end: dt.datetime, now: dt.datetime,
                 places: int | None = None, project_id: str | None = None,
                 projects: tuple[str, str] | None = None,
                 only: Collection[str] | None = None) -> list[rating.Line]:
    """The lines of the period ``[start, end)`` of the types some version prices with
    tiers (of one project, or the range ``projects``, of the types ``only``, if
    given), rated as a statement rates them; none read when no version has tiers."""
    types = tiers.tiered_types(v for v in versions if v.effective_from < end)
    if only is not None:
        types &= set(only)
    if not types:
        return []
    rows = intervals(session, cloud, start, min(end, now), project_id, projects, types)
    return rating.rate_intervals(rows, versions, start, end, now, places)


def tier_lines(session: Session, cloud: str, versions: list[PriceVersion],
               start: dt.datetime, end: dt.datetime, now: dt.datetime,
               places: int | None = None, projects: tuple[str, str] | None = None
               ) -> list[tiers.TierLine]:
    """The tier lines of the period (of the range ``projects`` if given): those of
    ``tiered_lines``."""
    return tiers.tier_lines(tiered_lines(session, cloud, versions, start, end, now, places,
                                         projects=projects), versions, places)


def currency(versions: Sequence[PriceVersion], period_end: dt.datetime) -> str | None:
    """The currency of the version in effect at the end of the period."""
    in_force = [v for v in versions if v.effective_from < period_end]
    return in_force[-1].currency if in_force else (versions[0].currency if versions else None)


def document(
    *, cloud: str, project_id: str, period: str, currency_code: str | None, closed: bool,
    computed_at: dt.datetime, lines: Sequence[rating.Line], adjustments: Sequence[Adjustment],
    frozen: tuple[Decimal, int] | None = None, places: int | None = None,
    tier_lines: Sequence[tiers.TierLine] = (),
) -> dict[str, Any]:
    """The statement as answered (field order fixed).  ``frozen``: the subtotal and
    unrated count of lines left out of ``lines`` (a frozen statement's envelope,
    ``envelope``).  Amounts have ``places`` decimals: the minor units of the
    currency (None: of ``currency_code``), or those a close recorded.  ``tier_lines``
    (``tiers``) follow the lines, only when there are some, and count in the subtotal."""
    if places is None:
        places = currencies.places(currency_code)
    subtotal = rating.subtotal(lines) if frozen is None else frozen[0]
    if tier_lines:
        subtotal = money.add(subtotal, tiers.total(tier_lines))
    adjustments_total = money.total(a.amount for a in adjustments)
    return {
        "cloud": cloud,
        "project_id": project_id,
        "period": period,
        "currency": currency_code,
        "status": "closed" if closed else "open",
        "provisional": not closed,
        "computed_at": format_timestamp(computed_at),
        "lines": [line.as_dict() for line in lines],
        **({"tiers": [tier.as_dict() for tier in tier_lines]} if tier_lines else {}),
        "adjustments": [a.as_dict(places) for a in adjustments],
        "subtotal": money.money(subtotal, places),
        "adjustments_total": money.money(adjustments_total, places),
        "total": money.money(money.add(subtotal, adjustments_total), places),
        "unrated_lines": (sum(1 for line in lines if line.unrated is not None)
                          if frozen is None else frozen[1]),
    }


def text(statement: dict[str, Any]) -> str:
    """The one JSON text of a statement (a closed one is stored and served as this)."""
    return json.dumps(statement, separators=(",", ":"), ensure_ascii=False)


_LINES = '"lines":['


def envelope(statement: dict[str, Any]) -> tuple[str, int]:
    """``text(statement)`` of a statement without lines, and the offset in it where its
    lines' texts go, comma-separated: the rest of a frozen statement
    (``reporting.billing.frozen``).  The key is the first ``"lines":[`` of the text:
    a string value before it cannot hold an unescaped quote."""
    if statement["lines"]:
        raise ValueError("an envelope has no lines")
    rendered = text(statement)
    return rendered, rendered.index(_LINES) + len(_LINES)


def summary(statement: dict[str, Any]) -> dict[str, Any]:
    return {
        "project_id": statement["project_id"],
        "subtotal": statement["subtotal"],
        "adjustments_total": statement["adjustments_total"],
        "total": statement["total"],
        "unrated_lines": statement["unrated_lines"],
        "number": None,  # a computed statement; the closed ones are listed from storage
    }


def period_bounds(name: str) -> tuple[dt.datetime, dt.datetime]:
    return periods.parse(name)
