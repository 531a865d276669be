"""Closing a period: freeze every project's statement at an ingestion cutoff.

The cutoff is the last receipt (``events.seq``) the close's snapshot holds, and the
snapshot holds exactly the events with ``seq <= cutoff`` (``reporting.billing.locks``
says why no smaller receipt can commit later).  The projection is written in the
ingest transaction of its events, so the intervals in the snapshot are the fold of
those events: a closed statement is the statement of the facts received up to the
cutoff, and anyone can recompute it from the history.

What is frozen (``reporting.billing.frozen``): per project the statement's text
around its lines and the lines as rows, and per resource the amount later
adjustments compare against; the write seam computes the lines set-based where the
database can (``freeze_lines``).  The close also books the adjustments of earlier
closed periods that belong on this period's statement.

A close refuses (``CloseRefused``, 409) a period with unrated lines, or whose history
began inside it (``reporting.billing.observed``), unless the admin accepts it
explicitly (``Acceptance``); what was accepted is recorded on the period.  A period
wholly before the cloud's first observation is never closed (``BeforeHistory``).  A second close of the same period (any replica) finds the row and changes
nothing.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import format_timestamp
from reporting.billing import (
    adjustments,
    billing_metrics,
    currencies,
    frozen,
    locks,
    money,
    observed,
    periods,
    statements,
    tiers,
)
from reporting.billing.observed import BeforeHistory
from reporting.billing.versions import timeline
from reporting.db import writes
from reporting.db.billing_models import BillingPeriod, BookedAdjustment, ClosedStatement
from reporting.db.models import Event


class PeriodNotEnded(ValueError):
    """Only a period that has ended can be closed (409)."""


class CloseRefused(ValueError):
    """A close the admin has not accepted explicitly (409); ``code`` says what."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclasses.dataclass(frozen=True)
class Acceptance:
    """What the admin closing a period accepts explicitly."""

    unrated_lines: bool = False  # lines no price version rates, never billed once closed
    partial_history: bool = False  # the cloud's history began inside the period


@dataclasses.dataclass(frozen=True)
class Closed:
    period: BillingPeriod
    created: bool
    frozen: int = 0
    adjustments: Sequence[statements.Adjustment] = ()
    billed: Decimal = Decimal("0.00")  # the sum of the frozen statements' totals
    currency: str | None = None


def close(factory: sessionmaker[Session], cloud: str, period: str, who: str,
          now: dt.datetime, accept: Acceptance = Acceptance(),
          notice: Callable[[Session, BillingPeriod], None] | None = None) -> Closed:
    """Close ``period`` of ``cloud``; idempotent (a second close returns the row, whatever
    it accepts).  ``notice`` writes, in the close's transaction, what tells others
    of it (``reporting.billing.handoff.outbox``).  Raises PeriodNotEnded, BeforeHistory
    or CloseRefused."""
    _start, end = periods.parse(period)
    if end > now:
        raise PeriodNotEnded(f"period {period} has not ended yet (it ends at {end:%Y-%m-%d})")
    with factory() as probe:
        seam = writes.of(probe)
    with seam.serialised(factory, [locks.period_key(cloud, period), locks.PRICES_KEY]) as guard:
        existing = _existing(guard, cloud, period)
        if existing is not None:
            return Closed(existing, created=False)
        with seam.snapshot(factory, guard, locks.INGEST_KEY, _cutoff) as (session, cutoff):
            result = _close_in(session, cloud, period, who, now, cutoff, accept)
            if notice is not None and result.created:
                notice(session, result.period)
            session.commit()
    if result.created:
        billing_metrics.record_close(cloud, result.frozen, result.adjustments, result.billed,
                                    result.currency)
    return result


def _existing(session: Session, cloud: str, period: str) -> BillingPeriod | None:
    query = sa.select(BillingPeriod).where(
        BillingPeriod.cloud == cloud, BillingPeriod.period == period
    )
    return session.execute(query).scalar()


def _cutoff(session: Session) -> tuple[int, dt.datetime | None]:
    row = session.execute(
        sa.select(Event.seq, Event.received_at).order_by(Event.seq.desc()).limit(1)
    ).first()
    return (int(row.seq), row.received_at) if row is not None else (0, None)


def _partial_history(session: Session, cloud: str, period: str, accept: Acceptance
                     ) -> dt.datetime | None:
    """The first observation when it falls inside ``period`` (accepted), else None;
    raises BeforeHistory or CloseRefused."""
    start, end = periods.parse(period)
    # Every close but a cloud's first: observed before the period, which one existence
    # test says, without the cloud's earliest event (a scan of its history where no
    # sync run completed).
    if observed.observed_before(session, cloud, start):
        return None
    first = observed.first_observation(session, cloud)
    if first is None or first[0] >= end:
        raise BeforeHistory(observed.before_history_reason(cloud, period, first))
    if first[0] <= start:
        return None
    if not accept.partial_history:
        raise CloseRefused("partial_history", (
            f"the history of {cloud} begins at {format_timestamp(first[0])} ({first[1]}), "
            f"inside period {period}: before it only the resources that survived are known; "
            "close with accept_partial_history to bill the partial month"))
    return first[0]


def _refuse_unrated(cloud: str, period: str, totals: frozen.Totals, accept: Acceptance
                    ) -> int | None:
    """The unrated lines when there are some (accepted), else None; raises CloseRefused."""
    projects = sorted(p for p, (_subtotal, unrated) in totals.items() if unrated)
    count = sum(unrated for _subtotal, unrated in totals.values())
    if not count:
        return None
    if not accept.unrated_lines:
        shown = ", ".join(projects[:5]) + (", ..." if len(projects) > 5 else "")
        raise CloseRefused("unrated_lines", (
            f"period {period} of {cloud} has {count} unrated line(s) in {len(projects)} "
            f"project(s) ({shown}): once closed they are never billed; add a price version "
            "that rates them, or close with accept_unrated_lines"))
    return count


def _close_in(session: Session, cloud: str, period: str, who: str, now: dt.datetime,
              cutoff: tuple[int, dt.datetime | None] | None = None,
              accept: Acceptance = Acceptance()) -> Closed:
    existing = _existing(session, cloud, period)
    if existing is not None:
        return Closed(existing, created=False)
    history_from = _partial_history(session, cloud, period, accept)
    seq, received_at = cutoff if cutoff is not None else _cutoff(session)
    _start, end = periods.parse(period)
    versions = timeline(session, cloud)
    closed = statements.closed_periods(session, cloud)
    booked: dict[str, list[statements.Adjustment]] = collections.defaultdict(list)
    found = adjustments.pending(session, cloud, period, closed, versions, now)
    for adjustment in found:
        booked[adjustment.project_id].append(adjustment)
    code = statements.currency(versions, end)
    places = currencies.places(code)  # recorded: its frozen lines are rendered with it
    # The lines, per-resource amounts and totals are frozen where the database can rate
    # them set-based; each project's text around its lines is rendered here.
    # The tier lines come from the sums of the lines of the tiered types, summed as they
    # are frozen where the database can; their text is part of the statement's frozen body.
    totals, found_tiers = writes.of(session).freeze_lines(session, cloud, period, versions,
                                                          now, places)
    # Refused after the freeze (its count is the frozen lines'): the caller rolls back.
    unrated = _refuse_unrated(cloud, period, totals, accept)
    tiered = tiers.by_project(found_tiers)
    enveloped: list[dict[str, object]] = []  # the frozen rows, completed
    whole: list[dict[str, object]] = []  # statements of adjustments only
    totals_billed: list[Decimal] = []
    # Numbered in the close's transaction, after the cloud's last closed statement:
    # closes are serialised (every one holds PRICES_KEY) and each snapshot follows the
    # previous close's commit, so the numbers are gapless; the unique index refuses a
    # duplicate, and a close rolled back takes its numbers with it.
    last = session.execute(sa.select(sa.func.max(ClosedStatement.number)).where(
        ClosedStatement.cloud == cloud)).scalar()
    for number, project in enumerate(sorted(set(totals) | set(booked)), start=(last or 0) + 1):
        document = statements.document(
            cloud=cloud, project_id=project, period=period, currency_code=code, closed=True,
            computed_at=now, lines=[], adjustments=booked[project],
            frozen=totals.get(project, (money.ZERO, 0)), places=places,
            tier_lines=tiered.get(project, ()),
        )
        body, lines_at = (statements.envelope(document) if project in totals
                          # adjustments only: no line to freeze, the body is the whole text
                          else (statements.text(document), None))
        row: dict[str, object] = {
            "cloud": cloud, "period": period, "project_id": project, "body": body,
            "lines_at": lines_at, "subtotal": Decimal(document["subtotal"]),
            "adjustments_total": Decimal(document["adjustments_total"]),
            "total": Decimal(document["total"]), "unrated_lines": document["unrated_lines"],
            "number": number,
        }
        totals_billed.append(Decimal(document["total"]))
        (enveloped if project in totals else whole).append(row)
    period_row = BillingPeriod(cloud=cloud, period=period, status="closed", closed_at=now,
                               closed_by=who, cutoff_seq=seq, cutoff_received_at=received_at,
                               currency=code, minor_units=places,
                               accepted_unrated_lines=unrated,
                               accepted_partial_history_from=history_from)
    session.add(period_row)
    if enveloped:
        session.execute(sa.update(ClosedStatement), enveloped)
    if whole:
        session.execute(sa.insert(ClosedStatement), whole)
    if found:
        session.execute(sa.insert(BookedAdjustment), [
            {"cloud": cloud, "period": period, "source_period": a.source_period,
             "project_id": a.project_id, "resource_type": a.resource_type,
             "resource_id": a.resource_id, "amount": a.amount, "event_ids": a.event_ids,
             "cutoff_seq": seq}
            for a in found
        ])
    session.flush()
    return Closed(period_row, created=True, frozen=len(enveloped) + len(whole),
                  adjustments=found, billed=money.total(totals_billed), currency=code)
