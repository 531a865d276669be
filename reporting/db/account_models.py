"""Typed models of billing accounts: an account and the dated memberships that put a
cloud's project in it (``docs/statements.md``, "Billing accounts"), the credits
and charges an admin books on it by hand ("Credits and charges"), its dated
minimum commitments ("Minimum commitments") and its dated percentage discounts
("Discounts").

None is ever edited or removed: a project moves to another account by a later
membership, which takes effect from its instant on (as a price version does); a
commitment or a discount is replaced by a later one the same way.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from reporting.db.base import Base
from reporting.db.billing_models import MONEY


class BillingAccount(Base):
    """An account: a name an admin chose, what it is for, who added it and when."""

    __tablename__ = "billing_accounts"

    account_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))


class AccountMembership(Base):
    """From ``effective_from`` on (until the project's next membership), project
    ``project_id`` of ``cloud`` belongs to ``account_id``.  ``number`` counts the
    project's memberships from 1."""

    __tablename__ = "account_memberships"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[str] = mapped_column(String(255))
    effective_from: Mapped[dt.datetime] = mapped_column(DateTime())
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        Index("ix_account_memberships_effective", "cloud", "project_id", "effective_from",
              unique=True),
        Index("ix_account_memberships_account", "account_id"),
    )


class AccountLine(Base):
    """A credit or charge an admin booked by hand on an account's open period of a
    cloud (``docs/statements.md``, "Credits and charges").  ``number`` counts the
    account's lines from 1; ``amount`` is positive, ``kind`` says its sign (a credit
    reduces the total).  Never edited or removed: a mistake is undone by a reversal,
    a later line naming it in ``reverses`` (unique: a line is reversed once)."""

    __tablename__ = "account_lines"

    account_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    cloud: Mapped[str] = mapped_column(String(255))
    period: Mapped[str] = mapped_column(String(7))
    project_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(MONEY)
    currency: Mapped[str] = mapped_column(String(3))
    minor_units: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text)
    effective_at: Mapped[dt.datetime] = mapped_column(DateTime())
    reverses: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        Index("ix_account_lines_period", "account_id", "cloud", "period"),
        Index("ix_account_lines_reverses", "account_id", "reverses", unique=True),
    )


class AccountCommitment(Base):
    """From ``effective_from`` (a month's start) on, until the account's next
    commitment, each of the account's periods bills at least ``minimum`` in
    ``currency`` (``docs/statements.md``, "Minimum commitments"); a minimum of zero
    ends the commitment.  Never edited or removed."""

    __tablename__ = "account_commitments"

    account_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    effective_from: Mapped[dt.datetime] = mapped_column(DateTime(), primary_key=True)
    currency: Mapped[str] = mapped_column(String(3))
    minimum: Mapped[Decimal] = mapped_column(MONEY)
    minor_units: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))


class AccountDiscount(Base):
    """From ``effective_from`` (a month's start) on, until the account's next
    discount, each of the account's periods is discounted by ``percent`` (0 to 100,
    hundredths) of its usage (``docs/statements.md``, "Discounts"); a percent of zero
    ends the discount.  Never edited or removed."""

    __tablename__ = "account_discounts"

    account_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    effective_from: Mapped[dt.datetime] = mapped_column(DateTime(), primary_key=True)
    percent: Mapped[Decimal] = mapped_column(MONEY)
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))
