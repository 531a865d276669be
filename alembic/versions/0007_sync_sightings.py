"""Reconciliation sightings: which completed runs listed each resource alive.

A resource's sighting is open from the first completed run that listed it and is
closed (``seen_until``, the last completed run that did) by the first completed run
that did not.  A delete booked by absence is dated at the poll that found it; the
last sighting it records beside that instant bounds when the resource really went.

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
        sa.Column("first_seen_at", sa.DateTime(), nullable=False),
        sa.Column("seen_until", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint(
            "cloud", "resource_type", "resource_id", name="pk_sync_sightings"
        ),
    )


def downgrade() -> None:
    op.drop_table("sync_sightings")
