"""Credits and charges an admin books by hand on an account (``docs/statements.md``,
"Credits and charges").

A line is booked on an account's period of one cloud: billing periods are per cloud
and an account may span clouds, so the cloud says which period (and currency) the
line belongs to.  It may name one project of the account there; it is the account's
line either way, shown on the account's statement, never on a project's: project
statements, their closes and their adjustments stay the facts of the history alone.

A line is never edited or removed.  A mistake is undone by a reversal: a later line
of the opposite kind and the same amount naming the line it reverses; a line is
reversed once, and a reversal is never reversed (book a new line instead).  A line
is booked only on an open, billable period; a close and a booking exclude each other
(the caller holds the lock closes hold), so the lines of a closed period are settled
from its close on, as its frozen statements are.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, aliased

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.billing import accounts, currencies, locks, money, observed, periods, statements
from reporting.billing.versions import timeline
from reporting.db import writes
from reporting.db.account_models import AccountLine
from reporting.db.billing_models import BillingPeriod

KINDS = ("credit", "charge")
REASON_LIMIT = 1000
# Line numbers are a 32-bit column: a larger number names no line (and SQLite's driver
# cannot even bind one past 64 bits).
LINE_MAX = 2**31 - 1
# An amount on the wire: a positive decimal string; its decimals are checked against
# the currency's minor unit once the period's currency is known.
_AMOUNT = re.compile(r"^[0-9]{1,18}(\.[0-9]{1,18})?\Z")
_LINE_MEMBERS = {"kind", "cloud", "period", "project_id", "amount", "reason", "effective_at"}
_REVERSAL_MEMBERS = {"reverses", "reason", "period", "effective_at"}


class LineError(ValueError):
    """An invalid line document (400)."""


class LineRefused(ValueError):
    """A valid document that cannot be booked given what is stored (409); ``code``
    says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def signed(row: AccountLine) -> Decimal:
    """The line's effect on a total: a charge adds its amount, a credit subtracts it."""
    return row.amount if row.kind == "charge" else money.subtract(money.ZERO, row.amount)


def render(row: AccountLine) -> dict[str, Any]:
    """A line as a statement shows it (fixed once booked: nothing here ever changes)."""
    return {"line": row.number, "cloud": row.cloud, "period": row.period,
            "project_id": row.project_id, "kind": row.kind,
            "amount": money.money(signed(row), row.minor_units), "currency": row.currency,
            "reason": row.reason, "effective_at": format_timestamp(row.effective_at),
            "reverses": row.reverses, "created_at": format_timestamp(row.created_at),
            "created_by": row.created_by}


def render_listed(row: AccountLine, reversed_by: int | None) -> dict[str, Any]:
    """A line as the listing shows it: with the line reversing it, if any."""
    return {"account_id": row.account_id, **render(row), "reversed_by": reversed_by}


def _only(document: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise LineError(f"{what} has unknown member(s): {', '.join(unknown)} "
                        f"(it takes {', '.join(sorted(allowed))})")


def storable(value: str) -> bool:
    """Whether a text column keeps ``value`` (no NUL, no lone surrogate)."""
    return "\x00" not in value and not any("\ud800" <= c <= "\udfff" for c in value)


def _text(document: dict[str, Any], member: str, limit: int) -> str:
    value = document.get(member)
    if not isinstance(value, str) or not value.strip() or len(value) > limit or (
            not storable(value)):
        raise LineError(f"{member} is required: 1 to {limit} storable characters, "
                        "not only blanks")
    return value


def _period(document: dict[str, Any]) -> str:
    value = document.get("period")
    try:
        periods.parse(value)
    except periods.PeriodError as exc:
        raise LineError(str(exc)) from None
    assert isinstance(value, str)
    return value


def _amount(value: object) -> Decimal:
    if not isinstance(value, str) or not _AMOUNT.match(value):
        raise LineError(f"amount must be a positive decimal string such as \"12.50\" (got "
                        f"{value!r}); its kind says whether it is a credit or a charge, and "
                        "JSON numbers are refused because they are binary floats")
    amount = Decimal(value)
    if amount == 0:
        raise LineError("amount must be more than zero")
    return amount


def _instant(value: object, member: str) -> dt.datetime:
    try:
        moment = parse_timestamp(value)  # type: ignore[arg-type]
    except (TimestampError, TypeError, ValueError):
        raise LineError(f"{member} must be an RFC 3339 timestamp with an offset, e.g. "
                        "2026-10-15T00:00:00Z") from None
    return moment.replace(tzinfo=None)


def _within(moment: dt.datetime, period: str) -> dt.datetime:
    start, end = periods.parse(period)
    if not start <= moment < end:
        raise LineError(f"effective_at {format_timestamp(moment)} is outside period "
                        f"{period} ({format_timestamp(start)} to {format_timestamp(end)})")
    return moment


def _billable(session: Session, cloud: str, period: str, now: dt.datetime) -> tuple[str, int]:
    """The currency and minor units of ``cloud``'s open, billable ``period``; raises
    LineRefused when no line may be booked on it."""
    start, end = periods.parse(period)
    if start > now:
        raise LineRefused("period_not_started",
                          f"period {period} has not started yet; a line is booked on a "
                          "period that has begun")
    closed = session.get(BillingPeriod, (cloud, period))
    if closed is not None:
        raise LineRefused("period_closed",
                          f"period {period} of cloud {cloud} is closed "
                          f"({format_timestamp(closed.closed_at)}); a closed statement never "
                          "changes: book the line on an open period")
    first = observed.first_observation(session, cloud)
    if first is None or first[0] >= end:
        raise LineRefused("before_history", observed.before_history_reason(cloud, period, first))
    code = statements.currency(timeline(session, cloud), end)
    if code is None:
        raise LineRefused("no_currency",
                          f"no price version prices cloud {cloud} in period {period}, so the "
                          "period has no currency to book a line in; add a price list first")
    return code, currencies.places(code)


def in_minor_units(amount: Decimal, code: str, places: int) -> Decimal:
    """``amount`` with ``places`` decimals (``1.5`` EUR is ``1.50``; trailing zeros
    are no precision: ``1.500`` is ``1.50`` too); LineError when it is finer than the
    currency's minor unit (``1.005`` EUR, ``1.5`` JPY)."""
    exponent = amount.normalize(context=money.EXACT).as_tuple().exponent
    if isinstance(exponent, int) and -exponent > places:
        raise LineError(f"amount {money.text(amount)} has more decimals than {code}'s minor "
                        f"unit ({places})")
    return amount.quantize(Decimal(1).scaleb(-places), context=money.EXACT)


def _next_number(session: Session, account: str) -> int:
    last = session.execute(sa.select(sa.func.max(AccountLine.number)).where(
        AccountLine.account_id == account)).scalar()
    return (last or 0) + 1


def _member(session: Session, account: str, cloud: str, project_id: str, period: str) -> None:
    start, end = periods.parse(period)
    if not any(s.cloud == cloud and s.project_id == project_id
               for s in accounts.stretches(session, account, start, end)):
        raise LineRefused("not_a_member",
                          f"project {project_id} of cloud {cloud} does not belong to account "
                          f"{account} at any time in period {period}")


def book(session: Session, account: str, document: dict[str, Any], who: str,
         now: dt.datetime) -> AccountLine:
    """Book ``document`` (a credit or charge, or a reversal naming ``reverses``) on
    ``account`` (the caller holds the close lock, ``book_excluding_closes``, and commits).  Raises
    accounts.UnknownAccount, LineError or LineRefused; stores nothing then."""
    accounts.get(session, account)
    if "reverses" in document:
        return _reverse(session, account, document, who, now)
    _only(document, _LINE_MEMBERS, "a line")
    kind = document.get("kind")
    if kind not in KINDS:
        raise LineError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    cloud = _text(document, "cloud", 255)
    period = _period(document)
    amount = _amount(document.get("amount"))
    reason = _text(document, "reason", REASON_LIMIT)
    effective_at = _within(_instant(document.get("effective_at"), "effective_at"), period)
    project_id = document.get("project_id")
    if project_id is not None:
        project_id = _text(document, "project_id", 255)
    code, places = _billable(session, cloud, period, now)
    amount = in_minor_units(amount, code, places)
    if project_id is not None:
        _member(session, account, cloud, project_id, period)
    return _store(session, AccountLine(
        account_id=account, number=_next_number(session, account), cloud=cloud, period=period,
        project_id=project_id, kind=kind, amount=amount, currency=code, minor_units=places,
        reason=reason, effective_at=effective_at, reverses=None, created_at=now,
        created_by=who))


def book_excluding_closes(session: Session, account: str, document: dict[str, Any],
                          who: str, now: dt.datetime) -> AccountLine:
    """``book`` in a transaction that first takes the lock every close holds from
    before its snapshot until it commits: a line is booked before a close of its
    period, or refused after it; never lost between the two.  The line numbers are
    drawn under it too."""
    seam = writes.of(session)
    seam.begin_write(session)
    seam.xact_lock(session, locks.PRICES_KEY)
    return book(session, account, document, who, now)


def _reverse(session: Session, account: str, document: dict[str, Any], who: str,
             now: dt.datetime) -> AccountLine:
    _only(document, _REVERSAL_MEMBERS, "a reversal (its kind, amount, cloud and project are "
          "those of the line it reverses)")
    number = document["reverses"]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= LINE_MAX:
        raise LineError(f"reverses must be a line number (an integer from 1 to {LINE_MAX}, "
                        f"got {number!r})")
    reason = _text(document, "reason", REASON_LIMIT)
    original = session.get(AccountLine, (account, number))
    if original is None:
        raise LineRefused("unknown_line", f"account {account} has no line {number}")
    if original.reverses is not None:
        raise LineRefused("reversal_of_reversal",
                          f"line {number} reverses line {original.reverses}; a reversal is "
                          "never reversed (book a new line instead)")
    done = session.execute(sa.select(AccountLine.number).where(
        AccountLine.account_id == account, AccountLine.reverses == number)).scalar()
    if done is not None:
        raise LineRefused("already_reversed",
                          f"line {number} is reversed already, by line {done}")
    period = _period(document) if "period" in document else original.period
    if period < original.period:
        raise LineError(f"period {period} is before line {number}'s period "
                        f"{original.period}; a reversal is booked on its period or a later one")
    if "effective_at" in document:
        effective_at = _within(_instant(document["effective_at"], "effective_at"), period)
    elif period == original.period:
        effective_at = original.effective_at
    else:
        raise LineError(f"effective_at is required: the reversal is booked on {period}, "
                        f"not on line {number}'s period {original.period}")
    code, _places = _billable(session, original.cloud, period, now)
    if code != original.currency:
        raise LineRefused("currency_differs",
                          f"period {period} of cloud {original.cloud} is billed in {code}, "
                          f"line {number} in {original.currency}; a reversal is in its "
                          "line's currency")
    return _store(session, AccountLine(
        account_id=account, number=_next_number(session, account), cloud=original.cloud,
        period=period, project_id=original.project_id,
        kind="charge" if original.kind == "credit" else "credit", amount=original.amount,
        currency=original.currency, minor_units=original.minor_units, reason=reason,
        effective_at=effective_at, reverses=number, created_at=now, created_by=who))


def _store(session: Session, row: AccountLine) -> AccountLine:
    session.add(row)
    session.flush()
    return row


def of_period(session: Session, account: str, period: str) -> list[AccountLine]:
    """The lines booked on ``account``'s ``period`` of every cloud, by number."""
    query = (sa.select(AccountLine)
             .where(AccountLine.account_id == account, AccountLine.period == period)
             .order_by(AccountLine.number))
    return list(session.execute(query).scalars())


def listed(session: Session, account: str, *, cloud: str | None, period: str | None,
           after: int | None, limit: int) -> list[tuple[AccountLine, int | None]]:
    """``account``'s lines by number (after ``after``), each with the line reversing it."""
    reversal = aliased(AccountLine)
    query = (sa.select(AccountLine, reversal.number)
             .outerjoin(reversal, sa.and_(reversal.account_id == AccountLine.account_id,
                                          reversal.reverses == AccountLine.number))
             .where(AccountLine.account_id == account)
             .order_by(AccountLine.number).limit(limit))
    if cloud is not None:
        query = query.where(AccountLine.cloud == cloud)
    if period is not None:
        query = query.where(AccountLine.period == period)
    if after is not None:
        query = query.where(AccountLine.number > after)
    return [(row, by) for row, by in session.execute(query)]
