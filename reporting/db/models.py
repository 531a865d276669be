"""Typed SQLAlchemy 2 models of the reporting database.

The Alembic chain in ``alembic/versions`` creates exactly these tables; a test
compares the two (``alembic check`` style) on SQLite and PostgreSQL.

All instants are stored as naive UTC ``DateTime`` with microseconds: both SQLite
(ISO text) and PostgreSQL (``timestamp without time zone``) then order them the
same way, and the API renders them with ``mapping.event.format_timestamp``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Index,
    String,
    Text,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.functions import FunctionElement

# Billing's tables live beside their feature; importing them here registers them on
# Base.metadata, which the migrations and the drift test compare.
from reporting.db import account_models as account_models
from reporting.db import billing_models as billing_models
from reporting.db import handoff_models as handoff_models
from reporting.db.base import Base, BigIntId


class Event(Base):
    """One stored canonical event.  ``seq`` is the receipt order (docs/reporting-api.md)."""

    __tablename__ = "events"

    seq: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(String(255), unique=True)
    event_type: Mapped[str] = mapped_column(String(255))
    platform: Mapped[str] = mapped_column(String(64))
    cloud: Mapped[str] = mapped_column(String(255))
    resource_type: Mapped[str] = mapped_column(String(64))
    resource_id: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255))
    timestamp: Mapped[dt.datetime] = mapped_column(DateTime())
    source: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime())

    __table_args__ = (
        # One resource's history in (timestamp, seq) order.  resource_id leads: the
        # fold probes it alone (reporting/db/writes/pg_lookup.py), so no index that
        # leads with cloud can ever look like a probe to the planner.
        Index(
            "ix_events_resource_order",
            "resource_id", "timestamp", "seq", "platform", "cloud", "resource_type",
        ),
        Index("ix_events_cloud_received", "cloud", "received_at"),
    )


# On PostgreSQL the history is range partitioned by month (migration 0032,
# docs/operations.md "Partitioning and retention"): a unique constraint there must
# hold the partition key, so event_id's uniqueness across every partition is the
# primary key of ``tally_history.event_ids`` (written by the same ingest statement),
# and ``events`` indexes event_id without the constraint.  The drift test expects
# exactly these differences there, as (operation, name) of the comparison:
POSTGRESQL_ONLY_DRIFT = {("add_constraint", "uq_events_event_id"),
                         ("remove_index", "ix_events_event_id")}


class _CalendarMonth(FunctionElement[Any]):
    """The calendar month of a timestamp column, spelt per dialect as the write seam's
    ``month_of`` spells it in the query (so the planner matches the index)."""

    inherit_cache = True


@compiles(_CalendarMonth, "postgresql")
def _month_on_postgresql(element: _CalendarMonth, compiler: Any, **kw: Any) -> str:
    return f"date_trunc('month', {compiler.process(element.clauses, **kw)})"


@compiles(_CalendarMonth, "sqlite")
def _month_on_sqlite(element: _CalendarMonth, compiler: Any, **kw: Any) -> str:
    return f"substr({compiler.process(element.clauses, **kw)}, 1, 7)"


# Late facts (reporting.billing.adjustments): the events of a cloud dated in a month and
# received after a receipt number, one index range per month.  One Index object: two
# of one name (one per dialect) made the metadata's comparison with a database pick
# either of them at random.
Index("ix_events_cloud_month_seq", Event.cloud, _CalendarMonth(Event.timestamp), Event.seq)


class CurrentResource(Base):
    """The projection: the fold of one resource's whole history (docs/reporting-api.md)."""

    __tablename__ = "current_resources"

    platform: Mapped[str] = mapped_column(String(64), primary_key=True)
    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255))
    state: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    live: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[dt.datetime | None] = mapped_column(DateTime())
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime())
    last_event_at: Mapped[dt.datetime] = mapped_column(DateTime())
    last_event_id: Mapped[str] = mapped_column(String(255))
    # seq of the newest event in fold order: lets an in-order event be folded
    # incrementally and a late one trigger a replay.
    last_event_seq: Mapped[int] = mapped_column(BigInteger)
    # The instant of the oldest event (None: not known, e.g. its history was pruned):
    # with last_event_at it bounds the resource's events and intervals, so a read by
    # key reads the monthly partitions of that span only (migration 0033).
    first_event_at: Mapped[dt.datetime | None] = mapped_column(DateTime())

    __table_args__ = (
        # The inventory of a cloud and type in key order.  No mutable column but
        # project_id is indexed, so a row rewrite (a delete included) stays HOT.
        Index("ix_current_resources_cloud_type_key",
              "cloud", "resource_type", "platform", "resource_id"),
        Index("ix_current_resources_project", "project_id"),
        # What the fold probes (reporting/db/writes/pg_lookup.py).
        Index("ix_current_resources_resource_id", "resource_id"),
    )


class ResourceInterval(Base):
    """The materialised lifecycle of a resource (``reporting.fold.Interval`` rows).

    Rewritten with the row whenever the resource is folded, so ``as_of`` inventory
    and usage are range queries instead of replays.
    """

    __tablename__ = "resource_intervals"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    platform: Mapped[str] = mapped_column(String(64))
    cloud: Mapped[str] = mapped_column(String(255))
    resource_type: Mapped[str] = mapped_column(String(64))
    resource_id: Mapped[str] = mapped_column(String(255))
    start: Mapped[dt.datetime] = mapped_column(DateTime())
    end: Mapped[dt.datetime | None] = mapped_column(DateTime())
    project_id: Mapped[str] = mapped_column(String(255))
    state: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    event_id: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        # One resource's lifecycle in start order; resource_id leads (see events).
        Index(
            "ix_resource_intervals_resource",
            "resource_id", "start", "platform", "cloud", "resource_type",
        ),
        Index("ix_resource_intervals_cloud_start", "cloud", "start"),
        Index("ix_resource_intervals_project_start", "project_id", "start"),
    )


class RejectedEvent(Base):
    """The dead letter: an item that failed the event or size schema (docs/reporting-api.md)."""

    __tablename__ = "rejected_events"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime())
    cloud: Mapped[str | None] = mapped_column(String(255))
    event_id: Mapped[str | None] = mapped_column(String(255))
    reason: Mapped[str] = mapped_column(Text)
    # ``raw`` has NUL and lone surrogates replaced (PostgreSQL's json holds neither);
    # ``raw_json`` is the item exactly as it arrived, as ASCII JSON text (None on rows
    # filed before revision 0009).  The listing and replay read ``raw_json``.
    raw: Mapped[Any] = mapped_column(JSON)
    raw_json: Mapped[str | None] = mapped_column(Text)
    # Set when a replay ingested the row; replayed rows stay for the audit trail.
    replayed_at: Mapped[dt.datetime | None] = mapped_column(DateTime())
    # The collector's key of an item it parked and filed (POST /v1/rejected-events):
    # a retry of the same item files nothing new.  None on rows ingest refused.
    filed_key: Mapped[str | None] = mapped_column(String(255))

    __table_args__ = (
        Index("ix_rejected_events_cloud_received", "cloud", "received_at"),
        Index("uq_rejected_events_filed_key", "filed_key", unique=True),
    )


class ResourceType(Base):
    """A registered size schema per (platform, resource_type) (docs/reporting-api.md)."""

    __tablename__ = "resource_types"

    platform: Mapped[str] = mapped_column(String(64), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    size_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime())


class SizeName(Base):
    """A platform id that ingest replaces by its name, e.g. a cinder volume type."""

    __tablename__ = "size_names"

    platform: Mapped[str] = mapped_column(String(64), primary_key=True)
    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)  # e.g. "volume_type"
    size_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime())


class SyncRun(Base):
    """One reconciliation run of one cloud (docs/reconciliation.md)."""

    __tablename__ = "sync_runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    cloud: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))  # running, completed, failed
    # full (every resource listed, absence pass) or incremental (changes only).
    kind: Mapped[str] = mapped_column(String(16), server_default="full")
    started_at: Mapped[dt.datetime] = mapped_column(DateTime())
    completed_at: Mapped[dt.datetime | None] = mapped_column(DateTime())
    stats: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (Index("ix_sync_runs_cloud_status_started", "cloud", "status", "started_at"),)


class SyncLock(Base):
    """The per-cloud run lock: a lease row, so it holds across replicas and a dead
    holder's lease simply expires."""

    __tablename__ = "sync_locks"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(36))
    holder: Mapped[str] = mapped_column(String(255))
    acquired_at: Mapped[dt.datetime] = mapped_column(DateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime())


class SyncSighting(Base):
    """Which completed runs listed a resource alive: every one from ``first_seen_at``
    on, up to ``seen_until`` (the last that did) once a completed run did not.

    Recorded in a delete booked by absence, beside the poll instant it is dated at.
    """

    __tablename__ = "sync_sightings"

    cloud: Mapped[str] = mapped_column(String(255), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    first_seen_at: Mapped[dt.datetime] = mapped_column(DateTime())
    seen_until: Mapped[dt.datetime | None] = mapped_column(DateTime())


class WritePosition(Base):
    """Where the primary's write-ahead log stood after a caller's last write request,
    recorded only while a read replica is configured: that caller's reads go to the
    replica once it has replayed this far, to the primary until then
    (``reporting.api.replica_reads``)."""

    __tablename__ = "write_positions"

    caller: Mapped[str] = mapped_column(String(255), primary_key=True)
    position: Mapped[str] = mapped_column(String(32))  # a pg_lsn as text, e.g. "0/3000060"
    written_at: Mapped[dt.datetime] = mapped_column(DateTime())
