"""Typed models of billing accounts: an account and the dated memberships that put a
cloud's project in it (``docs/statements.md``, "Billing accounts").

Neither is ever edited or removed: a project moves to another account by a later
membership, which takes effect from its instant on (as a price version does).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from reporting.db.base import Base


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
