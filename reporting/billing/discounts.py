"""Percentage discounts of billing accounts (``docs/statements.md``, "Discounts").

A discount says that from ``effective_from`` (a month's start) on, until the
account's next discount, each period of the account is discounted by ``percent`` of
its usage: the account statement of a period applies the discount in force at the
period's start (the rule of minimum commitments), to the usage of every currency
(``subtotal + adjustments_total``), rounded once to the currency's minor unit.  It
comes before the commitment, which tops up the discounted usage, and before the
credits and charges.  A discount is never edited or removed; a later one replaces it
from its instant on, and a percent of zero ends it.  Like a commitment, one may not
take effect where it would change an account statement that is closed; adding one
and closing a period exclude each other (the caller holds the lock closes hold).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import account_terms, accounts, locks, manual_lines, money
from reporting.db import writes
from reporting.db.account_models import AccountDiscount

_MEMBERS = {"effective_from", "percent", "reason"}
# A percent on the wire: a non-negative decimal string (zero ends a discount); its
# bound and its decimals are checked on the value.
_PERCENT = re.compile(r"^[0-9]{1,18}(\.[0-9]{1,18})?\Z")
PERCENT_PLACES = 2
_HUNDRED = Decimal(100)


class DiscountError(ValueError):
    """An invalid discount document (400)."""


class DiscountRefused(account_terms.TermRefused):
    """A valid document that cannot be stored given what is stored (409)."""


@dataclasses.dataclass(frozen=True)
class Applied:
    """A discount applied to the usage of one currency of a statement: ``amount`` is
    negative (or zero) for usage above zero."""

    discount: AccountDiscount
    amount: Decimal


def percent_text(value: Decimal) -> str:
    """A percent as the API answers it: its digits, no trailing zeros (``"12.5"``,
    ``"100"``, ``"0"``)."""
    return money.display(Fraction(value))


def render(row: AccountDiscount) -> dict[str, Any]:
    return {"account_id": row.account_id,
            "effective_from": format_timestamp(row.effective_from),
            "percent": percent_text(row.percent), "reason": row.reason,
            "created_at": format_timestamp(row.created_at), "created_by": row.created_by}


def _percent(value: object) -> Decimal:
    if not isinstance(value, str) or not _PERCENT.match(value):
        raise DiscountError(f"percent must be a decimal string from 0 to 100 such as "
                            f"\"12.5\" (got {value!r}); \"0\" ends a discount, and JSON "
                            "numbers are refused because they are binary floats")
    percent = Decimal(value)
    if percent > _HUNDRED:
        raise DiscountError(f"percent {value} is above 100")
    exponent = percent.normalize(context=money.EXACT).as_tuple().exponent
    if isinstance(exponent, int) and -exponent > PERCENT_PLACES:
        raise DiscountError(f"percent {value} has more than {PERCENT_PLACES} decimals")
    return percent.quantize(Decimal(1).scaleb(-PERCENT_PLACES), context=money.EXACT)


def _reason(value: object) -> str:
    limit = manual_lines.REASON_LIMIT
    if not isinstance(value, str) or not value.strip() or len(value) > limit or (
            not manual_lines.storable(value)):
        raise DiscountError(f"reason is required: 1 to {limit} storable characters, "
                            "not only blanks")
    return value


def of_account(session: Session, account: str) -> list[AccountDiscount]:
    """``account``'s discounts, by ``effective_from``."""
    return account_terms.of_account(session, AccountDiscount, account)


def listed(session: Session, account: str, after: dt.datetime | None, limit: int
           ) -> list[AccountDiscount]:
    """A page of ``account``'s discounts by ``effective_from``, after ``after``."""
    return account_terms.listed(session, AccountDiscount, account, after, limit)


def in_force(session: Session, account: str, at: dt.datetime) -> AccountDiscount | None:
    """The discount of ``account`` in force at ``at``; None when there is none or the
    one in force has a percent of zero (it ended the one before)."""
    row = account_terms.latest(session, AccountDiscount, account, at)
    return None if row is None or row.percent == 0 else row


def apply(row: AccountDiscount, usage: Decimal, places: int) -> Applied:
    """``-usage × percent / 100``, exactly, then rounded once, half-even, to ``places``
    (the currency's minor unit): usage below zero (adjustments refunding more than the
    period's usage) gives a positive amount, the discount of what is refunded."""
    exact = -Fraction(usage) * Fraction(row.percent) / 100
    return Applied(row, money.round_half_even(exact, places))


def render_applied(applied: Applied, places: int) -> dict[str, Any]:
    """A discount as the statement's total of a currency shows it."""
    return {"effective_from": format_timestamp(applied.discount.effective_from),
            "percent": percent_text(applied.discount.percent),
            "amount": money.money(applied.amount, places)}


def add(session: Session, account: str, document: dict[str, Any], who: str,
        now: dt.datetime) -> AccountDiscount:
    """Store ``document``'s discount on ``account`` (the caller holds the close lock,
    ``add_excluding_closes``, and commits).  Raises accounts.UnknownAccount,
    DiscountError or DiscountRefused; stores nothing then."""
    accounts.get(session, account)
    unknown = sorted(set(document) - _MEMBERS)
    if unknown:
        raise DiscountError(f"a discount has unknown member(s): {', '.join(unknown)} "
                            f"(it takes {', '.join(sorted(_MEMBERS))})")
    try:
        effective_from = account_terms.month_start(document.get("effective_from"),
                                                   "a discount")
    except account_terms.MonthStartError as exc:
        raise DiscountError(str(exc)) from None
    percent = _percent(document.get("percent"))
    reason = _reason(document.get("reason"))
    existing = of_account(session, account)
    if any(row.effective_from == effective_from for row in existing):
        raise DiscountRefused(
            "conflict", f"account {account} has a discount taking effect at "
            f"{format_timestamp(effective_from)} already; discounts are never edited (a "
            "later one replaces it)")
    closed = account_terms.closed_by(session, account, effective_from,
                                     [row.effective_from for row in existing])
    if closed is not None:
        raise DiscountRefused(
            "period_closed", f"the statement of account {account} for period {closed} is "
            f"closed, and a discount from {format_timestamp(effective_from)} would change "
            "it; a closed statement never changes")
    row = AccountDiscount(account_id=account, effective_from=effective_from, percent=percent,
                          reason=reason, created_at=now, created_by=who)
    session.add(row)
    session.flush()
    return row


def add_excluding_closes(session: Session, account: str, document: dict[str, Any],
                         who: str, now: dt.datetime) -> AccountDiscount:
    """``add`` in a transaction that first takes the lock every close holds from
    before its snapshot until it commits: a discount is in before a close, or checked
    against it after; never lost between the two."""
    seam = writes.of(session)
    seam.begin_write(session)
    seam.xact_lock(session, locks.PRICES_KEY)
    return add(session, account, document, who, now)
