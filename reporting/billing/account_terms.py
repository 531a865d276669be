"""What an account's dated terms share (a minimum commitment,
``reporting.billing.commitments``; a discount, ``reporting.billing.discounts``): each
takes effect at a month's start, applies to whole periods from there until the
account's next term of its kind, and may not take effect where it would change an
account statement that is closed (``docs/statements.md``, "Minimum commitments",
"Discounts")."""

from __future__ import annotations

import datetime as dt
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.billing import accounts, manual_lines, observed, periods
from reporting.db.account_models import (
    AccountCommitment,
    AccountDiscount,
    AccountLine,
    AccountMembership,
)
from reporting.db.billing_models import BillingPeriod

# A kind of dated term: its rows hold the account and the instant they take effect.
Term = TypeVar("Term", AccountCommitment, AccountDiscount)


def of_account(session: Session, kind: type[Term], account: str) -> list[Term]:
    """``account``'s terms of ``kind``, by ``effective_from``."""
    return listed(session, kind, account, None, None)


def listed(session: Session, kind: type[Term], account: str, after: dt.datetime | None,
           limit: int | None) -> list[Term]:
    """A page of ``account``'s terms of ``kind`` by ``effective_from``, after ``after``
    (None: from the first; ``limit`` None: all)."""
    query = (sa.select(kind).where(kind.account_id == account)
             .order_by(kind.effective_from).limit(limit))
    if after is not None:
        query = query.where(kind.effective_from > after)
    return list(session.execute(query).scalars())


def latest(session: Session, kind: type[Term], account: str, at: dt.datetime) -> Term | None:
    """``account``'s term of ``kind`` that took effect last at or before ``at``."""
    query = (sa.select(kind)
             .where(kind.account_id == account, kind.effective_from <= at)
             .order_by(kind.effective_from.desc()).limit(1))
    return session.execute(query).scalars().first()


class TermRefused(ValueError):
    """A valid term that cannot be stored given what is stored (409); ``code`` says
    why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class MonthStartError(ValueError):
    """An ``effective_from`` that is not an instant at a month's start."""


def month_start(value: object, noun: str) -> dt.datetime:
    """``value`` (RFC 3339 with an offset) as a naive UTC instant at 00:00 on the 1st;
    ``noun`` ("a commitment") names what the message is about."""
    try:
        moment = parse_timestamp(value)  # type: ignore[arg-type]
    except (TimestampError, TypeError):
        raise MonthStartError("effective_from must be an RFC 3339 timestamp with an offset, "
                              "a month's start, e.g. 2026-11-01T00:00:00Z") from None
    moment = moment.replace(tzinfo=None)
    if (moment.day, moment.time()) != (1, dt.time()):
        raise MonthStartError(f"effective_from {format_timestamp(moment)} is not a month's "
                              f"start (00:00Z on the 1st): {noun} applies to whole periods")
    return moment


def _account_clouds(session: Session, account: str) -> set[str]:
    """Every cloud a membership naming ``account`` or a line of it is of."""
    members = sa.select(AccountMembership.cloud).where(AccountMembership.account_id == account)
    lines = sa.select(AccountLine.cloud).where(AccountLine.account_id == account)
    return set(session.execute(members).scalars()) | set(session.execute(lines).scalars())


def statement_closed(session: Session, account: str, period: str) -> bool:
    """Whether ``account``'s statement of ``period`` is ``closed``: the rule of
    ``account_statements.document``, every cloud of its sections and of its credits
    and charges closed (and at least one); a cloud whose period is not billable has no
    section."""
    start, end = periods.parse(period)
    clouds = {s.cloud for s in accounts.stretches(session, account, start, end)}
    clouds = {cloud for cloud in clouds if observed.not_billable(session, cloud, period) is None}
    clouds |= {line.cloud for line in manual_lines.of_period(session, account, period)}
    return bool(clouds) and all(
        session.get(BillingPeriod, (cloud, period)) is not None for cloud in clouds)


def closed_in(session: Session, account: str, start: dt.datetime,
              end: dt.datetime | None) -> str | None:
    """The earliest period starting in ``[start, end)`` whose account statement is
    closed, if any (only a period closed for one of the account's clouds can be)."""
    clouds = _account_clouds(session, account)
    if not clouds:
        return None
    query = (sa.select(BillingPeriod.period).where(BillingPeriod.cloud.in_(sorted(clouds)))
             .distinct())
    for period in sorted(session.execute(query).scalars()):
        period_start = periods.parse(period)[0]
        if period_start >= start and (end is None or period_start < end) and (
                statement_closed(session, account, period)):
            return period
    return None


def closed_by(session: Session, account: str, effective_from: dt.datetime,
              existing: list[dt.datetime]) -> str | None:
    """The first closed period of ``account`` a term of one kind from ``effective_from``
    would be in force at the start of, given the instants ``existing`` of that kind's
    terms (the next one ends it); None when it changes no closed statement."""
    later = [instant for instant in existing if instant > effective_from]
    return closed_in(session, account, effective_from, min(later, default=None))
