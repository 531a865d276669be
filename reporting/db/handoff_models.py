"""Typed models of the hand-off on close: the webhook deliveries a close writes in
its own transaction (an outbox) and every attempt to deliver one
(``docs/statements.md``, "Hand-off on close").

A delivery's ``body`` is the exact text signed and sent on every attempt; it is never
changed.  ``lease_until``/``leased_by`` say which delivery worker holds the row while
it posts it, so that several reporting processes sharing the database never post
one row at once.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from reporting.db.base import Base, BigIntId


class WebhookDelivery(Base):
    """One notice to the invoicing system (``event``: ``period.closed``)."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    cloud: Mapped[str] = mapped_column(String(255))
    period: Mapped[str] = mapped_column(String(7))
    event: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)  # the exact JSON text signed and posted
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    status: Mapped[str] = mapped_column(String(16))  # pending, delivered, failed
    attempts: Mapped[int] = mapped_column(Integer)
    # The attempts made before the current round: a redeliver starts a new round of
    # [handoff] max_attempts with the backoff from its start.
    retry_from: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(DateTime())
    # The worker posting it now (a random token per claim) and until when at most.
    lease_until: Mapped[dt.datetime | None] = mapped_column(DateTime())
    leased_by: Mapped[str | None] = mapped_column(String(64))
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime())

    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_period", "cloud", "period"),
    )


class WebhookAttempt(Base):
    """One POST of a delivery: when, and the HTTP status it answered or the error."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(BigIntId)
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, … per delivery
    attempted_at: Mapped[dt.datetime] = mapped_column(DateTime())
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("uq_webhook_attempts_delivery_number", "delivery_id", "number", unique=True),
    )
