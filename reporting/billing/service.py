"""Statements as the API answers them: frozen for a closed period, computed for an
open one, and the per-project summaries of a period."""

from __future__ import annotations

import collections
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import (
    adjustments,
    billing_metrics,
    currencies,
    frozen,
    money,
    observed,
    periods,
    statements,
    tiers,
)
from reporting.billing.versions import timeline
from reporting.db import writes
from reporting.db.billing_models import BillingPeriod, ClosedStatement


def require_billable(session: Session, cloud: str, period: str) -> None:
    """Raise ``observed.BeforeHistory`` for an open period wholly before the cloud's
    first observation: its statement would bill only the survivors.  A closed period
    is answered as frozen, whatever it was closed with."""
    if period not in statements.closed_periods(session, cloud):
        observed.require_observed(session, cloud, period, periods.parse(period)[1])


def _empty_closed(cloud: str, project_id: str, period: str, closed: BillingPeriod) -> str:
    """A project without usage in a closed period: its empty statement, from what the
    close recorded only (its currency and instant), so it never changes either."""
    document = statements.document(
        cloud=cloud, project_id=project_id, period=period, currency_code=closed.currency,
        closed=True, computed_at=closed.closed_at, lines=[], adjustments=[],
        places=closed.minor_units,
    )
    return statements.text(document)


def statement_text(session: Session, cloud: str, project_id: str, period: str,
                   now: dt.datetime) -> str:
    """The statement's JSON text: stored bytes when closed, computed when open."""
    closed = statements.closed_periods(session, cloud)
    if period in closed:
        row = session.get(ClosedStatement, (cloud, period, project_id))
        if row is not None:
            return frozen.text(session, row, closed[period].minor_units)
        return _empty_closed(cloud, project_id, period, closed[period])
    start, end = periods.parse(period)
    versions = timeline(session, cloud)
    # Where the database can, one set-based query rates the project's lines, and each
    # is rendered from its kind (``line_texts``): the text the pure rating renders.
    lines = writes.of(session).project_lines(session, cloud, project_id, versions, start,
                                             end, now)
    found = adjustments.pending(session, cloud, period, closed, versions, now, project_id)
    billing_metrics.statement_computed(cloud, "project", 1, known=bool(lines.texts or found))
    rendered, at = statements.envelope(statements.document(
        cloud=cloud, project_id=project_id, period=period,
        currency_code=statements.currency(versions, end), closed=False, computed_at=now,
        lines=[], adjustments=found, frozen=(lines.subtotal, lines.unrated),
        tier_lines=lines.tier_lines,
    ))
    return rendered[:at] + ",".join(lines.texts) + rendered[at:]


def project_summaries(session: Session, cloud: str, period: str, projects: frozenset[str],
                      after: str | None, limit: int, now: dt.datetime
                      ) -> tuple[list[dict[str, Any]], bool]:
    """The summaries of ``projects`` only (a project reader's list): each from the
    project's statement, listed when it has a line or an adjustment, as ``summaries``
    lists it."""
    items: list[dict[str, Any]] = []
    closed = period in statements.closed_periods(session, cloud)
    for project in sorted(p for p in projects if after is None or p > after):
        document = json.loads(statement_text(session, cloud, project, period, now))
        if document["lines"] or document["adjustments"]:
            item = statements.summary(document)
            if closed:
                row = session.get(ClosedStatement, (cloud, period, project))
                item["number"] = row.number if row is not None else None
            items.append(item)
            if len(items) > limit:
                break
    return items[:limit], len(items) > limit


def summaries(session: Session, cloud: str, period: str, after: str | None, limit: int,
              now: dt.datetime) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` project summaries after project ``after``, and whether more follow."""
    closed = statements.closed_periods(session, cloud)
    if period in closed:
        return _closed_summaries(session, cloud, period, after, limit,
                                 closed[period].minor_units)
    start, end = periods.parse(period)
    versions = timeline(session, cloud)
    places = currencies.places(statements.currency(versions, end))
    pending = adjustments.pending(session, cloud, period, closed, versions, now)
    extra = sorted({a.project_id for a in pending if after is None or a.project_id > after})
    # Where the database can, one set-based query rates the page's projects, finds them
    # and sums their tier groups (only when a version has tiers).
    totals, found_tiers = writes.of(session).project_totals(
        session, cloud, versions, start, end, now, after, limit + 1)
    page = sorted(set(totals) | set(extra))[:limit + 1]
    more = len(page) > limit
    page = page[:limit]
    tiered = tiers.by_project(found_tiers)
    totals = {project: (money.add(subtotal, tiers.total(tiered[project])), unrated)
              if project in tiered else (subtotal, unrated)
              for project, (subtotal, unrated) in totals.items()}
    found: dict[str, Decimal] = collections.defaultdict(lambda: money.ZERO)
    for adjustment in pending:
        found[adjustment.project_id] = money.add(found[adjustment.project_id], adjustment.amount)
    items = []
    for project in page:
        subtotal, unrated = totals.get(project, (Decimal("0.00"), 0))
        items.append({
            "project_id": project, "subtotal": money.money(subtotal, places),
            "adjustments_total": money.money(found[project], places),
            "total": money.money(money.add(subtotal, found[project]), places),
            "unrated_lines": unrated, "number": None,
        })
    billing_metrics.statement_computed(cloud, "summary", len(items), known=bool(items))
    return items, more


def _closed_summaries(session: Session, cloud: str, period: str, after: str | None,
                      limit: int, places: int) -> tuple[list[dict[str, Any]], bool]:
    model = ClosedStatement
    query = (
        sa.select(model.project_id, model.subtotal, model.adjustments_total, model.total,
                  model.unrated_lines, model.number)
        .where(model.cloud == cloud, model.period == period)
        .order_by(model.project_id).limit(limit + 1)
    )
    if after is not None:
        query = query.where(model.project_id > after)
    rows = session.execute(query).all()
    items = [
        {"project_id": r.project_id, "subtotal": money.money(r.subtotal, places),
         "adjustments_total": money.money(r.adjustments_total, places),
         "total": money.money(r.total, places), "unrated_lines": r.unrated_lines,
         "number": r.number}
        for r in rows[:limit]
    ]
    return items, len(rows) > limit
