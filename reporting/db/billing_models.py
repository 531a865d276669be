"""Typed models of billing: price list versions, closed periods, frozen statements
and booked adjustments (``docs/statements.md``).

Money is unbounded ``NUMERIC`` on PostgreSQL (exact, and never capped: any amount a
valid price list can produce is stored) and decimal text on SQLite (which enforces
no declared length); SQLAlchemy hands back ``Decimal`` on both.  A closed statement's document is kept as the
exact text it was served as, so it is answered byte for byte forever.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import ARRAY, JSON, BigInteger, DateTime, Index, Integer, Numeric, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from reporting.db.base import Base, BigIntId


class _ExactNumeric(TypeDecorator[Decimal]):
    """Unbounded ``NUMERIC``, exact on PostgreSQL (``0013_billing_unbounded_money``)."""

    impl = Numeric()
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else Decimal(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


class _DecimalText(TypeDecorator[Decimal]):
    """SQLite: the decimal text (a NUMERIC affinity would keep a binary float); SQLite
    ignores the declared length, so any amount's text is kept whole."""

    impl = String(32)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else format(Decimal(value), "f")

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


# Exact money; SQLAlchemy picks the SQLite variant by itself.
MONEY = _ExactNumeric().with_variant(_DecimalText(), "sqlite")


def _list_of(item: Any) -> Any:
    """A list column: an array on PostgreSQL, a JSON list on SQLite."""
    return ARRAY(item).with_variant(JSON(), "sqlite")


class PriceListVersion(Base):
    """One version of a price list; ``name`` is a cloud or ``default``.  Never edited."""

    __tablename__ = "price_list_versions"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    effective_from: Mapped[dt.datetime] = mapped_column(DateTime())
    currency: Mapped[str] = mapped_column(String(3))
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime())
    created_by: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        Index("ix_price_list_versions_effective", "name", "effective_from", unique=True),
    )


class BillingPeriod(Base):
    """A closed period of one cloud; a period without a row is open.  The primary key
    makes a close happen once however many replicas are asked to close it."""

    __tablename__ = "billing_periods"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)  # YYYY-MM
    status: Mapped[str] = mapped_column(String(16))  # closed
    closed_at: Mapped[dt.datetime] = mapped_column(DateTime())
    closed_by: Mapped[str] = mapped_column(String(255))
    # The last receipt (events.seq) the close included; 0 when no event existed.
    cutoff_seq: Mapped[int] = mapped_column(BigInteger)
    cutoff_received_at: Mapped[dt.datetime | None] = mapped_column(DateTime())
    # The currency the close billed in (null: no price version priced the cloud); the
    # empty statement of a project without lines is rendered from it.
    currency: Mapped[str | None] = mapped_column(String(3))
    # The decimals its amounts were rounded to (the currency's ISO 4217 minor units;
    # 2 for periods closed before revision 0020): its frozen lines are rendered so.
    minor_units: Mapped[int] = mapped_column(Integer)
    # What ``closed_by`` accepted explicitly (revision 0021; NULL: nothing to accept):
    # the unrated lines the close froze unbilled, and the first observation of a cloud
    # whose history began inside the period.
    accepted_unrated_lines: Mapped[int | None] = mapped_column(Integer)
    accepted_partial_history_from: Mapped[dt.datetime | None] = mapped_column(DateTime())


class ClosedStatement(Base):
    """The frozen statement of one project in a closed period.

    ``body`` is the exact JSON text served.  A close since revision 0015 stores it
    without its lines (``lines_at`` says where they go) and freezes the lines as
    columns, one list entry per line, each priced by a ``closed_kinds`` row of the
    period, which also names its resource type (``reporting.billing.frozen`` renders
    them).  ``lines_at`` NULL: ``body`` is the whole text (closes before 0015, and a
    statement of adjustments only)."""

    __tablename__ = "closed_statements"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    body: Mapped[str] = mapped_column(Text)  # the exact JSON text served (or its envelope)
    subtotal: Mapped[Decimal] = mapped_column(MONEY)
    adjustments_total: Mapped[Decimal] = mapped_column(MONEY)
    total: Mapped[Decimal] = mapped_column(MONEY)
    unrated_lines: Mapped[int] = mapped_column(Integer)
    lines_at: Mapped[int | None] = mapped_column(Integer)
    line_resource_ids: Mapped[list[str] | None] = mapped_column(_list_of(Text()))
    # microseconds from the period's start to each line's start, and each line's length
    line_starts: Mapped[list[int] | None] = mapped_column(_list_of(BigInteger()))
    line_lengths: Mapped[list[int] | None] = mapped_column(_list_of(BigInteger()))
    line_event_ids: Mapped[list[str] | None] = mapped_column(_list_of(Text()))
    # 2 x the line's closed_kinds row, plus 1 when it is zero-rated
    line_kinds: Mapped[list[int] | None] = mapped_column(_list_of(Integer()))
    # The statement's number in its cloud (1, 2, …, gapless, in close order), given in
    # the close's transaction and never changed (revision 0025 numbered earlier ones).
    number: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("uq_closed_statements_cloud_number", "cloud", "number", unique=True),
    )


class ClosedKind(Base):
    """How a close priced one (version, type, state, size) of its period: everything a
    frozen line renders beyond its own instants, ids and length."""

    __tablename__ = "closed_kinds"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)
    kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(64))
    state: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[str] = mapped_column(Text)  # the size's JSON text as lines render it
    price_list_version: Mapped[str | None] = mapped_column(String(255))
    unit: Mapped[str | None] = mapped_column(String(16))
    # decimal texts: the rate and modifier as shown, the quantity per hour (GB for
    # gb_hour types) and the exact price per hour; NULL where the rating has none
    rate: Mapped[str | None] = mapped_column(Text)
    modifier: Mapped[str | None] = mapped_column(Text)
    factor: Mapped[str | None] = mapped_column(Text)
    per_hour: Mapped[str | None] = mapped_column(Text)
    unrated: Mapped[str | None] = mapped_column(Text)  # why its lines are unrated


class ClosedResourceAmount(Base):
    """What a statement closed before revision 0015 billed for one resource: the base
    later adjustments are measured against (found by resource,
    ``ix_closed_resource_amounts_resource``).  Later closes freeze the lines themselves
    (``ClosedStatement``), the base of their adjustments."""

    __tablename__ = "closed_resource_amounts"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    amount: Mapped[Decimal] = mapped_column(MONEY)

    __table_args__ = (
        Index("ix_closed_resource_amounts_resource", "cloud", "period", "resource_type",
              "resource_id"),
    )


class BookedAdjustment(Base):
    """A correction of a closed period (``source_period``) booked on the statement of
    the period whose close froze it (``period``)."""

    __tablename__ = "billing_adjustments"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    cloud: Mapped[str] = mapped_column(String(255))
    period: Mapped[str] = mapped_column(String(7))
    source_period: Mapped[str] = mapped_column(String(7))
    project_id: Mapped[str] = mapped_column(String(255))
    resource_type: Mapped[str] = mapped_column(String(64))
    resource_id: Mapped[str] = mapped_column(String(255))
    amount: Mapped[Decimal] = mapped_column(MONEY)
    event_ids: Mapped[list[str]] = mapped_column(JSON)
    # The cutoff of the close that booked it: later events are the next adjustment's.
    cutoff_seq: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_billing_adjustments_source", "cloud", "source_period", "resource_type",
              "resource_id"),
        Index("ix_billing_adjustments_period", "cloud", "period", "project_id"),
    )
