"""Reconciliation sightings: the last instant a completed run saw each resource alive.

A delete booked by absence is dated at the poll that found it; the sighting it
records beside that instant bounds when the resource really went.

Revision ID: 0007_sync_sightings
Revises: 0006_seed_loadbalancer_type
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0007_sync_sightings"
down_revision = "0006_seed_loadbalancer_type"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sync_sightings",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "cloud", "resource_type", "resource_id", name="pk_sync_sightings"
        ),
    )


def downgrade() -> None:
    op.drop_table("sync_sightings")
