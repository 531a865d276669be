"""The dead letter: items that failed the event or the size schema.

Revision ID: 0003_rejected_events
Revises: 0002_projection
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_rejected_events"
down_revision = "0002_projection"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "rejected_events",
        sa.Column("id", BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=True),
        sa.Column("event_id", sa.String(255), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("raw", sa.JSON(), nullable=False),
        sa.Column("replayed_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_rejected_events"),
    )
    op.create_index(
        "ix_rejected_events_cloud_received", "rejected_events", ["cloud", "received_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_rejected_events_cloud_received", table_name="rejected_events")
    op.drop_table("rejected_events")
