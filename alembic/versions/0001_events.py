"""The event store: one row per canonical event, deduplicated on event_id.

Revision ID: 0001_events
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_events"
down_revision = None
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("seq", BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(255), nullable=False),
        sa.Column("event_type", sa.String(255), nullable=False),
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("timestamp", sa.DateTime(), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_events"),
        sa.UniqueConstraint("event_id", name="uq_events_event_id"),
    )
    op.create_index(
        "ix_events_resource_order",
        "events",
        ["platform", "cloud", "resource_type", "resource_id", "timestamp", "seq"],
    )
    op.create_index("ix_events_cloud_received", "events", ["cloud", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_events_cloud_received", table_name="events")
    op.drop_index("ix_events_resource_order", table_name="events")
    op.drop_table("events")
