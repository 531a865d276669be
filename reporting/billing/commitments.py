"""Minimum commitments of billing accounts (``docs/statements.md``, "Minimum
commitments").

A commitment says that from ``effective_from`` (a month's start) on, until the
account's next commitment, each period of the account bills at least ``minimum`` in
``currency``: the account statement of a period applies the commitment in force at
the period's start.  A commitment is never edited or removed; a later one replaces it
from its instant on, and a minimum of zero ends it.  Like a membership, one may not
take effect where it would change an account statement that is closed; adding one
and closing a period exclude each other (the caller holds the lock closes hold).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import account_terms, accounts, currencies, locks, money
from reporting.db import writes
from reporting.db.account_models import AccountCommitment

_MEMBERS = {"effective_from", "currency", "minimum"}
# A minimum on the wire: a non-negative decimal string (zero ends a commitment).
_MINIMUM = re.compile(r"^[0-9]{1,18}(\.[0-9]{1,18})?\Z")
_CURRENCY = re.compile(r"^[A-Z]{3}\Z")


class CommitmentError(ValueError):
    """An invalid commitment document (400)."""


class CommitmentRefused(account_terms.TermRefused):
    """A valid document that cannot be stored given what is stored (409)."""


@dataclasses.dataclass(frozen=True)
class Applied:
    """A commitment applied to the usage of one currency of a statement."""

    commitment: AccountCommitment
    shortfall: Decimal


def render(row: AccountCommitment) -> dict[str, Any]:
    return {"account_id": row.account_id,
            "effective_from": format_timestamp(row.effective_from),
            "currency": row.currency, "minimum": money.money(row.minimum, row.minor_units),
            "created_at": format_timestamp(row.created_at), "created_by": row.created_by}


def _effective_from(value: object) -> dt.datetime:
    try:
        return account_terms.month_start(value, "a commitment")
    except account_terms.MonthStartError as exc:
        raise CommitmentError(str(exc)) from None


def _currency(value: object) -> tuple[str, int]:
    if not isinstance(value, str) or not _CURRENCY.match(value):
        raise CommitmentError(f"currency must be an ISO 4217 code such as \"EUR\" "
                              f"(got {value!r})")
    places = currencies.minor_units(value)
    if places is None:
        raise CommitmentError(f"currency {value} is not an ISO 4217 code with a minor unit")
    return value, places


def _minimum(value: object, code: str, places: int) -> Decimal:
    if not isinstance(value, str) or not _MINIMUM.match(value):
        raise CommitmentError(f"minimum must be a non-negative decimal string such as "
                              f"\"100.00\" (got {value!r}); \"0\" ends a commitment, and "
                              "JSON numbers are refused because they are binary floats")
    amount = Decimal(value)
    exponent = amount.normalize(context=money.EXACT).as_tuple().exponent
    if isinstance(exponent, int) and -exponent > places:
        raise CommitmentError(f"minimum {value} has more decimals than {code}'s minor unit "
                              f"({places})")
    return amount.quantize(Decimal(1).scaleb(-places), context=money.EXACT)


def of_account(session: Session, account: str) -> list[AccountCommitment]:
    """``account``'s commitments, by ``effective_from``."""
    return account_terms.of_account(session, AccountCommitment, account)


def listed(session: Session, account: str, after: dt.datetime | None, limit: int
           ) -> list[AccountCommitment]:
    """A page of ``account``'s commitments by ``effective_from``, after ``after``."""
    return account_terms.listed(session, AccountCommitment, account, after, limit)


def in_force(session: Session, account: str, at: dt.datetime) -> AccountCommitment | None:
    """The commitment of ``account`` in force at ``at``; None when there is none or the
    one in force has a minimum of zero (it ended the one before)."""
    row = account_terms.latest(session, AccountCommitment, account, at)
    return None if row is None or row.minimum == 0 else row


def apply(row: AccountCommitment, usage: Decimal) -> Applied:
    """The top-up bringing ``usage`` (subtotal + adjustments of the commitment's
    currency) up to the minimum; zero when usage reaches it."""
    short = money.subtract(row.minimum, usage)
    return Applied(row, short if short > 0 else Decimal(0))


def render_applied(applied: Applied, places: int) -> dict[str, Any]:
    """A commitment as the statement's total of its currency shows it."""
    return {"effective_from": format_timestamp(applied.commitment.effective_from),
            "minimum": money.money(applied.commitment.minimum, places),
            "shortfall": money.money(applied.shortfall, places)}


def add(session: Session, account: str, document: dict[str, Any], who: str,
        now: dt.datetime) -> AccountCommitment:
    """Store ``document``'s commitment on ``account`` (the caller holds the close lock,
    ``add_excluding_closes``, and commits).  Raises accounts.UnknownAccount,
    CommitmentError or CommitmentRefused; stores nothing then."""
    accounts.get(session, account)
    unknown = sorted(set(document) - _MEMBERS)
    if unknown:
        raise CommitmentError(f"a commitment has unknown member(s): {', '.join(unknown)} "
                              f"(it takes {', '.join(sorted(_MEMBERS))})")
    effective_from = _effective_from(document.get("effective_from"))
    code, places = _currency(document.get("currency"))
    minimum = _minimum(document.get("minimum"), code, places)
    existing = of_account(session, account)
    if any(row.effective_from == effective_from for row in existing):
        raise CommitmentRefused(
            "conflict", f"account {account} has a commitment taking effect at "
            f"{format_timestamp(effective_from)} already; commitments are never edited (a "
            "later one replaces it)")
    closed = account_terms.closed_by(session, account, effective_from,
                                     [row.effective_from for row in existing])
    if closed is not None:
        raise CommitmentRefused(
            "period_closed", f"the statement of account {account} for period {closed} is "
            f"closed, and a commitment from {format_timestamp(effective_from)} would change "
            "it; a closed statement never changes")
    row = AccountCommitment(account_id=account, effective_from=effective_from, currency=code,
                            minimum=minimum, minor_units=places, created_at=now,
                            created_by=who)
    session.add(row)
    session.flush()
    return row


def add_excluding_closes(session: Session, account: str, document: dict[str, Any],
                         who: str, now: dt.datetime) -> AccountCommitment:
    """``add`` in a transaction that first takes the lock every close holds from
    before its snapshot until it commits: a commitment is in before a close, or
    checked against it after; never lost between the two."""
    seam = writes.of(session)
    seam.begin_write(session)
    seam.xact_lock(session, locks.PRICES_KEY)
    return add(session, account, document, who, now)
